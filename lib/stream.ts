// SPDX-License-Identifier: MIT
// Streams: ordered queues of GPU work. Enqueue calls return at once; synchronize() blocks, synchronizeAsync()
// resolves without blocking the event loop (one native waiter thread for all pending waits).
import type { Device } from './device.js';
import { assertUsable } from './errors.js';
import { Event, type RecordOptions, recordEvent } from './event.js';
import { Graph, createGraph } from './graph.js';
import { INTERNAL, checkInternal, disposedError, unwatch, watch } from './lifetime.js';
import { getNative, type Handle } from './native.js';
import { checkBoolean, checkInt, checkOptions, typeError } from './validate.js';

export interface StreamOptions {
  /** Do not synchronize with the legacy default stream (CU_STREAM_NON_BLOCKING). Default false. */
  nonBlocking?: boolean;
  /** Lower is higher priority; see device.streamPriorityRange(). Default 0. */
  priority?: number;
}

export type CaptureMode = 'global' | 'threadLocal' | 'relaxed';
const CAPTURE_MODES: Record<CaptureMode, number> = { global: 0, threadLocal: 1, relaxed: 2 };

export class Stream implements Disposable {
  readonly device: Device;
  readonly nonBlocking: boolean;
  readonly priority: number;
  #handle: Handle | undefined;
  readonly #owned: boolean;

  /** @internal */
  constructor(token: typeof INTERNAL, device: Device, handle: Handle, owned: boolean, nonBlocking: boolean, priority: number) {
    checkInternal(token, 'Stream', 'device.createStream()');
    this.device = device;
    this.#handle = handle;
    this.#owned = owned;
    this.nonBlocking = nonBlocking;
    this.priority = priority;
  }

  /** The raw CUstream (0n for the legacy default stream). Borrowed: do not destroy it. */
  get handle(): Handle {
    if (this.#handle === undefined) throw disposedError('Stream');
    return this.#handle;
  }

  get disposed(): boolean {
    return this.#handle === undefined;
  }

  /** Blocks until all work queued on this stream has finished. */
  synchronize(): void {
    assertUsable('cuStreamSynchronize');
    getNative().streamSynchronize(this.device.ctx, this.handle);
  }

  /** Resolves when all work queued so far has finished; never blocks the event loop or a libuv pool thread. */
  synchronizeAsync(): Promise<void> {
    assertUsable('cuStreamSynchronize');
    return getNative().streamSynchronizeAsync(this.device.ctx, this.handle);
  }

  /** True when all queued work has finished. */
  query(): boolean {
    assertUsable('cuStreamQuery');
    return getNative().streamQuery(this.device.ctx, this.handle);
  }

  /** Later work on this stream waits until `event` has completed (on the GPU; the host does not block). */
  waitEvent(event: Event): void {
    if (!(event instanceof Event)) throw typeError('event', 'an Event', event);
    getNative().streamWaitEvent(this.device.ctx, this.handle, event.handle);
  }

  /** Records an event at this point of the stream. `timing: true` (default) makes it usable with Event.elapsedMs. */
  record(options?: RecordOptions): Event {
    return recordEvent(this, options);
  }

  /** Starts capturing the work enqueued on this stream into a graph, instead of running it. */
  beginCapture(options?: { mode?: CaptureMode }): void {
    const o = checkOptions('options', options, ['mode'] as const);
    const mode = o.mode ?? 'global';
    if (typeof mode !== 'string' || !(mode in CAPTURE_MODES)) {
      throw typeError('options.mode', "'global', 'threadLocal' or 'relaxed'", mode);
    }
    if (this.#handle === 0n) {
      throw new TypeError('The legacy default stream cannot be captured; use device.createStream()');
    }
    getNative().streamBeginCapture(this.device.ctx, this.handle, CAPTURE_MODES[mode as CaptureMode]);
  }

  /** Ends the capture and returns the captured work as a Graph. */
  endCapture(): Graph {
    return createGraph(this.device, getNative().streamEndCapture(this.device.ctx, this.handle));
  }

  /** Destroys the stream; work already queued still runs. Idempotent. The default stream is never destroyed. */
  dispose(): void {
    const h = this.#handle;
    if (h === undefined || !this.#owned) return;
    this.#handle = undefined;
    unwatch(this);
    getNative().streamDestroy(h);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** @internal */
export function createStream(device: Device, options?: StreamOptions): Stream {
  const o = checkOptions('options', options, ['nonBlocking', 'priority'] as const);
  const nonBlocking = o.nonBlocking === undefined ? false : checkBoolean('options.nonBlocking', o.nonBlocking);
  let priority = 0;
  if (o.priority !== undefined) {
    const { least, greatest } = device.streamPriorityRange();
    priority = checkInt('options.priority', o.priority, greatest, least);
  }
  assertUsable('cuStreamCreate');
  const h = getNative().streamCreate(device.ctx, nonBlocking ? 1 : 0, priority);
  const s = new Stream(INTERNAL, device, h, true, nonBlocking, priority);
  watch(s, () => getNative().streamDestroy(h));
  return s;
}

/** @internal */
export function defaultStream(device: Device): Stream {
  return new Stream(INTERNAL, device, 0n, false, false, 0);
}
