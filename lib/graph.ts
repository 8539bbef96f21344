// SPDX-License-Identifier: MIT
// CUDA graphs captured from a stream: capture once, instantiate, replay with one launch call.
import type { Device } from './device.js';
import { assertUsable } from './errors.js';
import { INTERNAL, checkInternal, disposedError, unwatch, watch } from './lifetime.js';
import { getNative, type Handle } from './native.js';
import type { Stream } from './stream.js';

export class Graph implements Disposable {
  readonly device: Device;
  #handle: Handle | undefined;

  /** @internal */
  constructor(token: typeof INTERNAL, device: Device, handle: Handle) {
    checkInternal(token, 'Graph', 'stream.endCapture()');
    this.device = device;
    this.#handle = handle;
  }

  get handle(): Handle {
    if (this.#handle === undefined) throw disposedError('Graph');
    return this.#handle;
  }

  /** Number of nodes (kernels, copies, memsets ...) captured. */
  get nodeCount(): number {
    return getNative().graphGetNodeCount(this.device.ctx, this.handle);
  }

  /** Makes an executable graph; the Graph itself may be disposed afterwards. */
  instantiate(): GraphExec {
    assertUsable('cuGraphInstantiate');
    const n = getNative();
    const h = n.graphInstantiate(this.device.ctx, this.handle);
    const exec = new GraphExec(INTERNAL, this.device, h);
    watch(exec, () => n.graphExecDestroy(h));
    return exec;
  }

  dispose(): void {
    const h = this.#handle;
    if (h === undefined) return;
    this.#handle = undefined;
    unwatch(this);
    getNative().graphDestroy(h);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

export class GraphExec implements Disposable {
  readonly device: Device;
  #handle: Handle | undefined;

  /** @internal */
  constructor(token: typeof INTERNAL, device: Device, handle: Handle) {
    checkInternal(token, 'GraphExec', 'graph.instantiate()');
    this.device = device;
    this.#handle = handle;
  }

  get handle(): Handle {
    if (this.#handle === undefined) throw disposedError('GraphExec');
    return this.#handle;
  }

  /** Enqueues one replay of the whole graph on `stream` (default: the device's default stream). */
  launch(stream?: Stream): void {
    assertUsable('cuGraphLaunch');
    getNative().graphLaunch(this.device.ctx, this.handle, (stream ?? this.device.defaultStream).handle);
  }

  dispose(): void {
    const h = this.#handle;
    if (h === undefined) return;
    this.#handle = undefined;
    unwatch(this);
    getNative().graphExecDestroy(h);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** @internal */
export function createGraph(device: Device, handle: Handle): Graph {
  const g = new Graph(INTERNAL, device, handle);
  watch(g, () => getNative().graphDestroy(handle));
  return g;
}
