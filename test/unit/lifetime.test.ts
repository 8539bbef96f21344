// SPDX-License-Identifier: MIT
// The handle-owning base class every driver object (Stream, Event, Graph, GraphExec, Module) stands on.
import { describe, expect, it } from 'vitest';
import { HandleOwner, disposedError } from '../../lib/lifetime.js';

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
    expect(() => t.handle).toThrow(/Thing has been disposed/);
    try {
      void t.handle;
    } catch (e) {
      expect((e as { code?: string }).code).toBe('ERR_DISPOSED');
    }
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
