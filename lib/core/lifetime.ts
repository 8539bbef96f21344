// SPDX-License-Identifier: MIT
// Resource lifetimes: explicit dispose() first, a FinalizationRegistry as the safety net for forgotten objects,
// and native env cleanup for whatever is left at worker or process exit.
import { codedError, isContextLost } from './errors.js';
import type { Handle } from './native.js';

/** Passed by factories to constructors, so objects are only made by their parent (device.createStream() ...). */
export const INTERNAL: unique symbol = Symbol('cudakit.internal');

export function checkInternal(token: unknown, what: string, factory: string): void {
  if (token !== INTERNAL) {
    throw new TypeError(`${what} objects cannot be constructed directly; use ${factory}`);
  }
}

let warned = false;
const registry = new FinalizationRegistry<() => void>((release) => {
  try {
    release();
  } catch (e) {
    // Cleanup never throws: a leak is better than a crash in a finalizer. After a sticky error there is nothing
    // to release (the context and all it held are gone); anything else is worth one warning, not one per object.
    if (isContextLost(e) || warned) return;
    warned = true;
    process.emitWarning(
      `cudakit: releasing a garbage-collected resource failed: ${(e as Error).message.split('\n')[0]} ` +
        '(later failures of this kind are not reported)',
      'CudaWarning',
    );
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
  return codedError(`${what} has been disposed and can no longer be used`, 'ERR_DISPOSED');
}

/**
 * A JS object that owns one driver handle: `handle` throws once disposed, dispose() releases it exactly once,
 * and the finalization registry releases it if the object is forgotten. `release: undefined` means borrowed
 * (the legacy default stream): never released.
 */
export abstract class HandleOwner implements Disposable {
  #handle: Handle | undefined;
  readonly #what: string;
  readonly #release: ((handle: Handle) => void) | undefined;

  protected constructor(what: string, handle: Handle, release: ((handle: Handle) => void) | undefined) {
    this.#what = what;
    this.#handle = handle;
    this.#release = release;
    // The closure holds the handle and the function, never `this`, or the object could not be collected.
    if (release !== undefined) watch(this, () => release(handle));
  }

  /** The raw driver handle. Borrowed: do not destroy it. */
  get handle(): Handle {
    if (this.#handle === undefined) throw disposedError(this.#what);
    return this.#handle;
  }

  /** True once dispose() has run (or the object was given back another way); every use then throws ERR_DISPOSED. */
  get disposed(): boolean {
    return this.#handle === undefined;
  }

  /**
   * Releases the handle; idempotent, and silent after a sticky error (the context is gone, and all it held with
   * it). Subclasses retire what depends on it first, then call super.dispose().
   */
  dispose(): void {
    const h = this.#handle;
    if (h === undefined || this.#release === undefined) return;
    this.#handle = undefined;
    unwatch(this);
    try {
      this.#release(h);
    } catch (e) {
      if (!isContextLost(e)) throw e;
    }
  }

  /** dispose(), for `using`: the resource is released when the block that declared it ends. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}
