// SPDX-License-Identifier: MIT
// Resource lifetimes: explicit dispose() first, a FinalizationRegistry as the safety net for forgotten objects,
// and native env cleanup for whatever is left at worker or process exit.

/** Passed by factories to constructors, so objects are only made by their parent (device.createStream() ...). */
export const INTERNAL: unique symbol = Symbol('cudakit.internal');

export function checkInternal(token: unknown, what: string, factory: string): void {
  if (token !== INTERNAL) {
    throw new TypeError(`${what} objects cannot be constructed directly; use ${factory}`);
  }
}

const registry = new FinalizationRegistry<() => void>((release) => {
  try {
    release();
  } catch (e) {
    // Cleanup never throws: a leak is better than a crash in a finalizer.
    process.emitWarning(`cudakit: releasing a garbage-collected resource failed: ${(e as Error).message}`, 'CudaWarning');
  }
});

/** Calls `release` if `owner` is garbage-collected without dispose(). `release` must not reference `owner`. */
export function watch(owner: object, release: () => void): void {
  registry.register(owner, release, owner);
}

export function unwatch(owner: object): void {
  registry.unregister(owner);
}

/** The error for any use of a disposed object: clear, catchable, never a crash. */
export function disposedError(what: string): Error {
  const err = new Error(`${what} has been disposed and can no longer be used`);
  (err as Error & { code: string }).code = 'ERR_DISPOSED';
  return err;
}
