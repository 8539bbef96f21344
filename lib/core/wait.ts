// SPDX-License-Identifier: MIT
// Promise waits with a limit ({ timeoutMs, signal }). The GPU work itself cannot be stopped from the host: a wait
// that gives up lets go of its native wait (waitAbandon), so it holds no thread and no longer keeps the process
// alive, and rejects with a TimeoutError or AbortError that says the work goes on.
import { AbortError, TimeoutError } from './errors.js';
import { getNative } from './native.js';
import { checkOptions, rangeError, typeError } from './validate.js';

/**
 * An AbortSignal (`new AbortController().signal`, `AbortSignal.timeout(ms)`), by the members cudakit uses: the
 * package's types name no global that only @types/node or the DOM library declares. At run time it must be an
 * AbortSignal (a TypeError otherwise).
 */
export interface AbortSignalLike {
  /** True once the signal has aborted. */
  readonly aborted: boolean;
  /** Why it aborted (AbortController.abort's argument); the AbortError's `cause`. */
  readonly reason: unknown;
  /** Calls `listener` when the signal aborts (a wait listens once, and stops listening when it settles). */
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  /** Stops calling `listener`. */
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** Options of the `synchronizeAsync()` waits (stream, event, device): a time limit and an AbortSignal. */
export interface WaitOptions {
  /** Reject with a TimeoutError after this many milliseconds. The GPU work keeps running. */
  timeoutMs?: number;
  /** Reject with an AbortError (its `cause` is the signal's reason) when the signal aborts. The work keeps running. */
  signal?: AbortSignalLike;
}

const MAX_TIMEOUT_MS = 2 ** 31 - 1; // setTimeout's limit
let nextWaitId = 1;

/**
 * Starts a native wait and applies the limits in `options`. `start` receives a wait id when the wait may have to
 * be abandoned, and nothing otherwise (the fast path: no timer, no listener).
 */
export function waitWithLimit(
  what: string,
  options: WaitOptions | undefined,
  start: (waitId?: number) => Promise<void>,
): Promise<void> {
  if (options === undefined) return start();
  const o = checkOptions('options', options, ['timeoutMs', 'signal'] as const);
  const { timeoutMs, signal } = o;
  if (timeoutMs !== undefined) {
    if (typeof timeoutMs !== 'number')
      throw typeError('options.timeoutMs', `a number of milliseconds in [0, ${MAX_TIMEOUT_MS}]`, timeoutMs);
    if (!(timeoutMs >= 0 && timeoutMs <= MAX_TIMEOUT_MS)) {
      throw rangeError('options.timeoutMs', `a number of milliseconds in [0, ${MAX_TIMEOUT_MS}]`, timeoutMs);
    }
  }
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw typeError('options.signal', 'an AbortSignal', signal);
  if (timeoutMs === undefined && signal === undefined) return start();
  const abortSignal = signal as AbortSignalLike | undefined;
  if (abortSignal?.aborted === true) return Promise.reject(new AbortError(what, abortSignal.reason));
  const waitId = nextWaitId;
  nextWaitId = nextWaitId >= 0x7fffffff ? 1 : nextWaitId + 1;
  const native = start(waitId);
  return new Promise<void>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const settle = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      abortSignal?.removeEventListener('abort', onAbort);
    };
    const giveUp = (error: Error): void => {
      settle();
      getNative().waitAbandon(waitId);
      reject(error);
    };
    const onAbort = (): void => giveUp(new AbortError(what, abortSignal!.reason));
    if (timeoutMs !== undefined)
      timer = setTimeout(() => giveUp(new TimeoutError(what, timeoutMs as number)), timeoutMs as number);
    abortSignal?.addEventListener('abort', onAbort, { once: true });
    native.then(
      () => {
        settle();
        resolve();
      },
      (e: unknown) => {
        settle();
        reject(e as Error);
      },
    );
  });
}
