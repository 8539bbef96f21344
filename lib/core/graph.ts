// SPDX-License-Identifier: MIT
// CUDA graphs captured from a stream: capture once, instantiate, replay with one launch call.
import type { Device } from './device.js';
import { assertUsable } from './errors.js';
import { HandleOwner, INTERNAL, checkInternal } from './lifetime.js';
import { getNative, type Handle } from './native.js';
import type { Stream } from './stream.js';

export class Graph extends HandleOwner {
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

export class GraphExec extends HandleOwner {
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
