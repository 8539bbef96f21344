// SPDX-License-Identifier: MIT
// The slots large request bodies are read with (BodySlots) and the sizes that make a body large: a body over
// LARGE_BODY_BYTES takes one slot per LARGE_BODY_SLOT_BYTES it may reach, of a few per process, so that the bodies
// read at once bound the memory they take. The others wait their turn a bounded time, then are answered 503 with
// Retry-After. body.ts takes them for a request in its preParsing hook.
import { ServiceError } from '../errors.js';

/** A body over this many bytes is large: it needs slots to be read. */
export const LARGE_BODY_BYTES = 2 ** 20;
/** A large body takes one slot per this many bytes it may reach (begun). */
export const LARGE_BODY_SLOT_BYTES = 32 * 2 ** 20;
/** Slots per process unless configured otherwise: two large bodies of up to 32 MiB at once, or one larger. */
export const DEFAULT_LARGE_BODIES = 2;
/** How long a large body waits for its slots before it is answered 503. */
export const LARGE_BODY_WAIT_MS = 10_000;
/** Large bodies that may wait for slots at once; beyond, 503 at once. */
export const LARGE_BODY_MAX_WAITING = 16;
/** What a 503 for a large body asks the client to wait. */
const LARGE_BODY_RETRY_AFTER_SECONDS = 5;

interface Waiter {
  slots: number;
  grant: () => void;
}

/**
 * Gives out `slots` slots to read large bodies with, several to a body that needs several (never more than there
 * are). First come, first served: a body that needs two is not passed by later ones that need one. A request waits
 * at most `waitMs`, and at most `maxWaiting` wait.
 */
export class BodySlots {
  readonly slots: number;
  readonly #waitMs: number;
  readonly #maxWaiting: number;
  #free: number;
  readonly #waiting: Waiter[] = [];

  constructor(slots: number, waitMs = LARGE_BODY_WAIT_MS, maxWaiting = LARGE_BODY_MAX_WAITING) {
    if (!Number.isInteger(slots) || slots < 1) {
      throw new RangeError(`Expected an integer of at least 1 for slots but received ${String(slots)}`);
    }
    this.slots = slots;
    this.#free = slots;
    this.#waitMs = waitMs;
    this.#maxWaiting = maxWaiting;
  }

  /** Slots in use. */
  get inUse(): number {
    return this.slots - this.#free;
  }

  /** Requests waiting for slots. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** The slots a body that may reach `bytes` takes. */
  slotsFor(bytes: number): number {
    return Math.min(this.slots, Math.max(1, Math.ceil(bytes / LARGE_BODY_SLOT_BYTES)));
  }

  /**
   * `count` slots, as the function that gives them back (once; later calls do nothing).
   *
   * @throws ServiceError 503 with Retry-After when they are not free within the wait, or too many wait already; the
   *   signal's reason when it aborts first (the client left).
   */
  async acquire(count: number, signal?: AbortSignal): Promise<() => void> {
    const n = Math.min(this.slots, Math.max(1, count));
    if (this.#waiting.length === 0 && this.#free >= n) {
      this.#free -= n;
      return this.#releaser(n);
    }
    if (this.#waiting.length >= this.#maxWaiting) throw this.#busy();
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        slots: n,
        grant: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const leave = (error: unknown): void => {
        const i = this.#waiting.indexOf(waiter);
        if (i >= 0) this.#waiting.splice(i, 1);
        signal?.removeEventListener('abort', onAbort);
        clearTimeout(timer);
        reject(error);
        // The first in line left: those behind it may fit now.
        if (i === 0) this.#grant();
      };
      const onAbort = (): void => leave(signal?.reason);
      const timer = setTimeout(() => leave(this.#busy()), this.#waitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
    });
    return this.#releaser(n);
  }

  /** Hands free slots to the first in line while they fit. */
  #grant(): void {
    for (let next = this.#waiting[0]; next !== undefined && next.slots <= this.#free; next = this.#waiting[0]) {
      this.#waiting.shift();
      this.#free -= next.slots;
      next.grant();
    }
  }

  #releaser(n: number): () => void {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#free += n;
      this.#grant();
    };
  }

  #busy(): ServiceError {
    const message =
      `The server is reading as many request bodies over ${LARGE_BODY_BYTES} bytes as it reads at once, and ` +
      `more wait; retry in ${LARGE_BODY_RETRY_AFTER_SECONDS} s`;
    return new ServiceError('TOO_MANY_LARGE_BODIES', message, LARGE_BODY_RETRY_AFTER_SECONDS);
  }
}
