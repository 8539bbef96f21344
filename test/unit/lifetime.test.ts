// SPDX-License-Identifier: MIT
// The handle-owning base class every driver object (Stream, Event, Graph, GraphExec, Module) stands on.
import { describe, expect, it } from 'vitest';
import { HandleOwner, disposedError } from '../../lib/core/lifetime.js';
import { runScript } from '../child.js';

class Thing extends HandleOwner {
  constructor(handle: bigint, release: ((h: bigint) => void) | undefined) {
    super('Thing', handle, release);
  }
}

describe('HandleOwner', () => {
  it('releases its handle exactly once, however often dispose is called', () => {
    const released: bigint[] = [];
    const t = new Thing(42n, (h) => released.push(h));
    expect(t.handle).toBe(42n);
    expect(t.disposed).toBe(false);
    t.dispose();
    t.dispose();
    t[Symbol.dispose]();
    expect(released).toEqual([42n]);
    expect(t.disposed).toBe(true);
  });

  it('throws a catchable ERR_DISPOSED error naming the class on use after dispose', () => {
    const t = new Thing(7n, () => {});
    t.dispose();
    expect(() => t.handle).toThrow(
      expect.objectContaining({ code: 'ERR_DISPOSED', message: expect.stringMatching(/Thing has been disposed/) }),
    );
    expect(disposedError('X').message).toBe('X has been disposed and can no longer be used');
  });

  it('never releases a borrowed handle (the legacy default stream)', () => {
    const t = new Thing(0n, undefined);
    t.dispose();
    expect(t.handle).toBe(0n);
    expect(t.disposed).toBe(false);
  });

  it('works with `using`: released at the end of the block', () => {
    const released: bigint[] = [];
    {
      using t = new Thing(9n, (h) => released.push(h));
      expect(t.handle).toBe(9n);
    }
    expect(released).toEqual([9n]);
  });

  it('lets a subclass retire dependants before the handle goes', () => {
    const order: string[] = [];
    class Parent extends HandleOwner {
      constructor() {
        super('Parent', 1n, () => order.push('release'));
      }
      override dispose(): void {
        if (this.disposed) return;
        order.push('children');
        super.dispose();
      }
    }
    const p = new Parent();
    p.dispose();
    p.dispose();
    expect(order).toEqual(['children', 'release']);
  });
});

describe('cleanup never throws', () => {
  it('a release failure while the context is fine surfaces from dispose()', () => {
    const broken = new Thing(2n, () => {
      throw new Error('not a live stream');
    });
    expect(() => broken.dispose()).toThrow(/not a live stream/);
    expect(broken.disposed).toBe(true);
  });

  it('dispose() after a sticky error is silent', () => {
    // In a child process: the first sticky CudaError marks the whole process's context as lost.
    const r = runScript(`
      import { CudaError } from './lib/core/errors.ts';
      import { HandleOwner } from './lib/core/lifetime.ts';
      class Thing extends HandleOwner { constructor(release) { super('Thing', 1n, release); } }
      const lost = new CudaError({
        code: 'CUDA_ERROR_LAUNCH_FAILED',
        api: 'cuCtxSynchronize',
        result: 719,
        explanation: 'x',
      });
      const t = new Thing(() => {
        throw new CudaError({
          code: 'CUDA_ERROR_LAUNCH_FAILED',
          api: 'cuStreamDestroy',
          result: 719,
          explanation: 'x',
        });
      });
      const u = new Thing(() => { throw new Error('anything, once the context is gone'); });
      t.dispose();
      u.dispose();
      console.log(lost.sticky, t.disposed, u.disposed);
    `);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('true true true');
  });

  it('finalizers of forgotten objects warn once per process, however many fail', () => {
    // In a child process: the warning flag is per process, and a sticky CudaError here would mark it lost.
    const r = runScript(
      `
      import { watch } from './lib/core/lifetime.ts';
      const warnings = [];
      process.on('warning', (w) => warnings.push(w.message));
      (() => { for (let i = 0; i < 40; i++) watch({}, () => { throw new Error('release ' + i + ' failed'); }); })();
      globalThis.gc();
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 20));
      console.log(JSON.stringify(warnings));
    `,
      { nodeFlags: ['--expose-gc'] },
    );
    expect(r.status, r.stderr).toBe(0);
    const warnings = JSON.parse(r.stdout.trim()) as string[];
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      new RegExp(
        /^cudakit: releasing a garbage-collected resource failed: release \d+ failed /.source +
          /\(later failures of this kind are not reported\)$/.source,
      ),
    );
  });
});
