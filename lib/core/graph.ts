// SPDX-License-Identifier: MIT
// CUDA graphs captured from a stream: capture once, instantiate, replay with one launch call.
import type { Device } from './device.js';
import { assertUsable } from './errors.js';
import { HandleOwner, INTERNAL, checkInternal } from './lifetime.js';
import { getNative, type Handle } from './native.js';
import type { Stream } from './stream.js';

/**
 * A CUDA graph: work captured from a stream (kernels, copies, fills) as a fixed description, not yet runnable.
 * Made by `stream.beginCapture()`, then enqueueing the work on that stream, then `stream.endCapture()`.
 * `instantiate()` makes a GraphExec that replays it; the Graph may then be disposed.
 */
export class Graph extends HandleOwner {
  /** The device the graph belongs to. */
  readonly device: Device;

  /** @internal */
  constructor(token: typeof INTERNAL, device: Device, handle: Handle) {
    checkInternal(token, 'Graph', 'stream.endCapture()');
    super('Graph', handle, getNative().graphDestroy);
    this.device = device;
  }

  /** Number of nodes (kernels, copies, memsets ...) captured. */
  get nodeCount(): number {
    return getNative().graphGetNodeCount(this.device.ctx, this.handle);
  }

  /** Makes an executable graph; the Graph itself may be disposed afterwards. */
  instantiate(): GraphExec {
    assertUsable('cuGraphInstantiate');
    return new GraphExec(INTERNAL, this.device, getNative().graphInstantiate(this.device.ctx, this.handle));
  }
}

/**
 * An executable graph, made by `graph.instantiate()`: `launch(stream)` replays all the captured work with one call,
 * much cheaper than enqueueing each piece again. The arguments and buffers are those captured: replays see the
 * buffers' current contents.
 */
export class GraphExec extends HandleOwner {
  /** The device the executable graph runs on. */
  readonly device: Device;

  /** @internal */
  constructor(token: typeof INTERNAL, device: Device, handle: Handle) {
    checkInternal(token, 'GraphExec', 'graph.instantiate()');
    super('GraphExec', handle, getNative().graphExecDestroy);
    this.device = device;
  }

  /** Enqueues one replay of the whole graph on `stream` (default: the device's default stream). */
  launch(stream?: Stream): void {
    assertUsable('cuGraphLaunch');
    getNative().graphLaunch(this.device.ctx, this.handle, (stream ?? this.device.defaultStream).handle);
  }
}

/** @internal */
export function createGraph(device: Device, handle: Handle): Graph {
  return new Graph(INTERNAL, device, handle);
}
