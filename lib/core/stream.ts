// SPDX-License-Identifier: MIT
// Streams: ordered queues of GPU work. Enqueue calls return at once; synchronize() blocks, synchronizeAsync()
// resolves without blocking the event loop (one native waiter thread for all pending waits).
import type { Device } from './device.js';
import { advanceLaunchEpoch } from './epoch.js';
import { assertUsable } from './errors.js';
import { Event, type RecordOptions, recordEvent } from './event.js';
import { Graph, createGraph } from './graph.js';
import { HandleOwner, INTERNAL, checkInternal } from './lifetime.js';
import { getNative, type Handle } from './native.js';
import { checkBoolean, checkInt, checkOptions, typeError } from './validate.js';
import { type WaitOptions, waitWithLimit } from './wait.js';

/** Options of `device.createStream(options)`. */
export interface StreamOptions {
  /** Do not synchronize with the legacy default stream (CU_STREAM_NON_BLOCKING). Default false. */
  nonBlocking?: boolean;
  /** Lower is higher priority; see device.streamPriorityRange(). Default 0. */
  priority?: number;
}

/**
 * How a stream capture interacts with other threads' CUDA calls (CUstreamCaptureMode): 'global' (the default) forbids
 * unsafe calls in any thread, 'threadLocal' only in this thread, 'relaxed' nowhere.
 */
export type CaptureMode = 'global' | 'threadLocal' | 'relaxed';
const CAPTURE_MODES: Record<CaptureMode, number> = { global: 0, threadLocal: 1, relaxed: 2 };

/**
 * A stream: an ordered queue of GPU work (launches, copies, fills, event records). Work on one stream runs in the
 * order it was enqueued; work on different streams may overlap. Made by `device.createStream(options)`; every
 * device also has its legacy default stream (`device.defaultStream`, handle 0), which launches and copies use when
 * no stream is given. Enqueueing returns at once: `synchronize()` blocks until the queue is done,
 * `synchronizeAsync()` resolves then, and `record()` marks a point in it (an Event) for timing or for another stream
 * to wait on. A stream can also record its work into a Graph instead of running it (`beginCapture`/`endCapture`).
 * Dispose it when done; work already queued still runs.
 */
export class Stream extends HandleOwner {
  /** The device the stream belongs to. */
  readonly device: Device;
  /** Whether the stream runs independently of the legacy default stream (StreamOptions.nonBlocking). */
  readonly nonBlocking: boolean;
  /** The stream's priority (StreamOptions.priority): lower numbers are higher priority. */
  readonly priority: number;

  /** @internal */
  constructor(
    token: typeof INTERNAL,
    device: Device,
    handle: Handle,
    owned: boolean,
    nonBlocking: boolean,
    priority: number,
  ) {
    checkInternal(token, 'Stream', 'device.createStream()');
    // The legacy default stream (0n) is borrowed: never destroyed.
    super('Stream', handle, owned ? getNative().streamDestroy : undefined);
    this.device = device;
    this.nonBlocking = nonBlocking;
    this.priority = priority;
  }

  /**
   * The raw CUstream (a bigint; 0n for the legacy default stream), for native libraries that enqueue work on it:
   * `cublasSetStream(handle, stream.handle)`, say. Borrowed: valid until this stream is disposed; never destroy it.
   */
  override get handle(): Handle {
    return super.handle;
  }

  /** Blocks until all work queued on this stream has finished. */
  synchronize(): void {
    assertUsable('cuStreamSynchronize');
    getNative().streamSynchronize(this.device.ctx, this.handle);
  }

  /**
   * Resolves when all work queued so far has finished; never blocks the event loop or a libuv pool thread.
   * `timeoutMs` / `signal` reject with a TimeoutError / AbortError instead; the work keeps running.
   */
  synchronizeAsync(options?: WaitOptions): Promise<void> {
    assertUsable('cuStreamSynchronize');
    const ctx = this.device.ctx;
    const handle = this.handle;
    return waitWithLimit('stream.synchronizeAsync()', options, (waitId) =>
      getNative().streamSynchronizeAsync(ctx, handle, waitId),
    );
  }

  /** True when all queued work has finished. */
  query(): boolean {
    assertUsable('cuStreamQuery');
    return getNative().streamQuery(this.device.ctx, this.handle);
  }

  /**
   * Later work on this stream waits until `event` has completed (on the GPU; the host does not block). The event
   * may belong to another device: this device's work then waits for that device's (cuStreamWaitEvent).
   */
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
    if (this.handle === 0n) {
      throw new TypeError('The legacy default stream cannot be captured; use device.createStream()');
    }
    getNative().streamBeginCapture(this.device.ctx, this.handle, CAPTURE_MODES[mode as CaptureMode]);
  }

  /** Ends the capture and returns the captured work as a Graph. */
  endCapture(): Graph {
    return createGraph(this.device, getNative().streamEndCapture(this.device.ctx, this.handle));
  }

  /** Destroys the stream; work already queued still runs. Idempotent. The default stream is never destroyed. */
  override dispose(): void {
    const live = !this.disposed;
    try {
      super.dispose();
    } finally {
      // A kernel that keeps a launch config naming this stream must check it again; also when destroying it threw
      // (the handle is gone either way), and not for the default stream, which is never released.
      if (live && this.disposed) advanceLaunchEpoch();
    }
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
  return new Stream(INTERNAL, device, h, true, nonBlocking, priority);
}

/** @internal */
export function defaultStream(device: Device): Stream {
  return new Stream(INTERNAL, device, 0n, false, false, 0);
}
