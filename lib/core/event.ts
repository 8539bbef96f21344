// SPDX-License-Identifier: MIT
// Events: markers in a stream, for dependencies between streams and for GPU-side timing.
import { assertUsable } from './errors.js';
import { HandleOwner, INTERNAL, checkInternal } from './lifetime.js';
import { getNative, type Handle } from './native.js';
import type { Stream } from './stream.js';
import { checkBoolean, checkOptions, typeError } from './validate.js';
import { type WaitOptions, waitWithLimit } from './wait.js';

const CU_EVENT_DISABLE_TIMING = 2;

/** Options of `stream.record(options)`. */
export interface RecordOptions {
  /** Record a timestamp, so Event.elapsedMs works. Default true. Without timing, events are cheaper to wait on. */
  timing?: boolean;
}

/**
 * An event: a point in a stream's work, made by `stream.record(options)` and recorded again with `event.record()`.
 * The GPU passes it when all work queued before it on that stream has finished: `isDone`, `synchronize()` and
 * `synchronizeAsync()` ask or wait for that, `otherStream.waitEvent(event)` makes another stream wait for it on the
 * GPU, and `Event.elapsedMs(start, end)` gives the GPU time between two events recorded with timing (the default).
 *
 * @example
 * const start = stream.record();
 * kernel.launch({ grid, block, stream }, ...args);
 * const end = stream.record();
 * console.log(Event.elapsedMs(start, end), 'ms');
 */
export class Event extends HandleOwner {
  /** The stream that made the event (`stream.record()`), and the default stream of `event.record()`. */
  readonly stream: Stream;
  /** Whether the event records a timestamp (RecordOptions.timing), which Event.elapsedMs needs. */
  readonly timing: boolean;

  /** @internal */
  constructor(token: typeof INTERNAL, stream: Stream, handle: Handle, timing: boolean) {
    checkInternal(token, 'Event', 'stream.record()');
    super('Event', handle, getNative().eventDestroy);
    this.stream = stream;
    this.timing = timing;
  }

  /** True once the GPU has passed this point of the stream. */
  get isDone(): boolean {
    assertUsable('cuEventQuery');
    return getNative().eventQuery(this.stream.device.ctx, this.handle);
  }

  /** Blocks until the GPU has passed this point. */
  synchronize(): void {
    assertUsable('cuEventSynchronize');
    getNative().eventSynchronize(this.stream.device.ctx, this.handle);
  }

  /**
   * Resolves when the GPU has passed this point; never blocks the event loop or a libuv pool thread.
   * `timeoutMs` / `signal` reject with a TimeoutError / AbortError instead; the work keeps running.
   */
  synchronizeAsync(options?: WaitOptions): Promise<void> {
    assertUsable('cuEventSynchronize');
    const ctx = this.stream.device.ctx;
    const handle = this.handle;
    return waitWithLimit('event.synchronizeAsync()', options, (waitId) =>
      getNative().eventWaitAsync(ctx, handle, waitId),
    );
  }

  /** Records this event again, at the current end of `stream` (default: the stream it was made on). */
  record(stream: Stream = this.stream): void {
    getNative().eventRecord(this.stream.device.ctx, this.handle, stream.handle);
  }

  /** Milliseconds of GPU time between two recorded events (about 0.5 µs resolution); waits for `end`. */
  static elapsedMs(start: Event, end: Event): number {
    if (!(start instanceof Event)) throw typeError('start', 'an Event', start);
    if (!(end instanceof Event)) throw typeError('end', 'an Event', end);
    if (!start.timing || !end.timing) {
      throw new TypeError('Event.elapsedMs needs events recorded with timing (stream.record({ timing: true }))');
    }
    assertUsable('cuEventElapsedTime');
    const n = getNative();
    n.eventSynchronize(end.stream.device.ctx, end.handle);
    return n.eventElapsedTime(start.stream.device.ctx, start.handle, end.handle);
  }
}

/** @internal */
export function recordEvent(stream: Stream, options?: RecordOptions): Event {
  const o = checkOptions('options', options, ['timing'] as const);
  const timing = o.timing === undefined ? true : checkBoolean('options.timing', o.timing);
  assertUsable('cuEventRecord');
  const n = getNative();
  const ctx = stream.device.ctx;
  const h = n.eventCreate(ctx, timing ? 0 : CU_EVENT_DISABLE_TIMING);
  try {
    n.eventRecord(ctx, h, stream.handle);
  } catch (e) {
    n.eventDestroy(h);
    throw e;
  }
  return new Event(INTERNAL, stream, h, timing);
}
