// SPDX-License-Identifier: MIT
// Limits on Promise waits, with a stand-in for the native wait (no GPU needed): the limit applies, the native wait
// is let go of, and options are validated before anything waits.
import { describe, expect, it } from 'vitest';
import { AbortError, TimeoutError } from '../../lib/core/errors.js';
import { waitWithLimit } from '../../lib/core/wait.js';

const never = (): Promise<void> => new Promise<void>(() => {});

describe('waitWithLimit', () => {
  it('without limits it is the native wait itself, and gets no wait id', async () => {
    const ids: (number | undefined)[] = [];
    const done = Promise.resolve();
    expect(waitWithLimit('w', undefined, (id) => (ids.push(id), done))).toBe(done);
    await waitWithLimit('w', {}, (id) => (ids.push(id), Promise.resolve()));
    expect(ids).toEqual([undefined, undefined]);
  });

  it('rejects with a TimeoutError that says the GPU work goes on, and passes a wait id to abandon', async () => {
    let id: number | undefined;
    const err = await waitWithLimit(
      'stream.synchronizeAsync()',
      { timeoutMs: 5 },
      (waitId) => ((id = waitId), never()),
    ).catch((e: unknown) => e);
    expect(id).toBeGreaterThan(0);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).code).toBe('ERR_CUDA_WAIT_TIMEOUT');
    expect((err as Error).message).toBe(
      'stream.synchronizeAsync() did not finish within 5 ms. ' +
        'The GPU work keeps running: a kernel cannot be stopped from the host, only by ending the process ' +
        '(a server runs untrusted kernels in a child process it can kill).',
    );
  });

  it('resolves or rejects with the native outcome when it comes first', async () => {
    await expect(waitWithLimit('w', { timeoutMs: 1000 }, () => Promise.resolve())).resolves.toBeUndefined();
    await expect(waitWithLimit('w', { timeoutMs: 1000 }, () => Promise.reject(new Error('sticky')))).rejects.toThrow(
      'sticky',
    );
  });

  it(
    'an abort rejects with an AbortError whose cause is the reason; ' + 'an aborted signal never starts the wait',
    async () => {
      const ac = new AbortController();
      const p = waitWithLimit('w', { signal: ac.signal }, () => never());
      ac.abort('stop');
      const err = await p.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AbortError);
      expect((err as Error & { cause: unknown }).cause).toBe('stop');
      let started = false;
      await expect(
        waitWithLimit('w', { signal: AbortSignal.abort() }, () => ((started = true), never())),
      ).rejects.toBeInstanceOf(AbortError);
      expect(started).toBe(false);
    },
  );

  it('uses distinct wait ids', () => {
    const ids = new Set<number>();
    for (let i = 0; i < 100; i++)
      void waitWithLimit('w', { timeoutMs: 60_000 }, (id) => (ids.add(id!), Promise.resolve()));
    expect(ids.size).toBe(100);
  });

  it('validates options before waiting', () => {
    const start = (): Promise<void> => Promise.reject(new Error('must not start'));
    expect(() => waitWithLimit('w', { timeoutMs: -1 }, start)).toThrow(
      /Expected a number of milliseconds in \[0, 2147483647\] for options.timeoutMs but received -1/,
    );
    expect(() => waitWithLimit('w', { timeoutMs: Number.NaN }, start)).toThrow(RangeError);
    expect(() => waitWithLimit('w', { timeoutMs: '1' as never }, start)).toThrow(TypeError);
    expect(() => waitWithLimit('w', { signal: 'x' as never }, start)).toThrow(
      /Expected an AbortSignal for options.signal/,
    );
    expect(() => waitWithLimit('w', { timeout: 1 } as never, start)).toThrow(
      /Unknown option options.timeout; known options: timeoutMs, signal/,
    );
  });
});
