// SPDX-License-Identifier: MIT
// Pinned (page-locked) host memory: allocHost arrays and freeHost, registration of memory JavaScript already owns,
// and isPinned, which device copies (memory.ts) consult: pinned memory is copied directly, never staged.
import type { Device } from './device.js';
import { TYPED_ARRAYS, type TypedArrayConstructor } from './dtype.js';
import { assertUsable, isContextLost } from './errors.js';
import { INTERNAL, checkInternal, unwatch, watch } from './lifetime.js';
import { getNative } from './native.js';
import { checkSize, rangeError, typeError } from './validate.js';

/** ArrayBuffers whose memory is page-locked (allocHost / registerHost): copied directly, never staged. */
const pinned = new WeakSet<ArrayBuffer | SharedArrayBuffer>();
/** ArrayBuffers from allocHost, live or freed (freeHost of a freed one is a no-op). */
const hostAllocated = new WeakSet<ArrayBuffer | SharedArrayBuffer>();

const CU_MEMHOSTALLOC_PORTABLE = 1;

/** @internal */
export function allocHostArray<T extends TypedArrayConstructor>(
  device: Device,
  type: T,
  length: number,
): InstanceType<T> {
  if (!TYPED_ARRAYS.includes(type)) throw typeError('type', 'a TypedArray constructor', type);
  checkSize('length', length);
  assertUsable('cuMemHostAlloc');
  const ab = getNative().memHostAlloc(device.ctx, length * type.BYTES_PER_ELEMENT, CU_MEMHOSTALLOC_PORTABLE);
  pinned.add(ab);
  hostAllocated.add(ab);
  return new type(ab) as InstanceType<T>;
}

/**
 * Frees pinned memory from device.allocHost now (instead of at garbage collection); the array is detached, never
 * dangling. Freeing it again is a no-op, and so is freeing after a sticky error (the memory went with the context).
 */
export function freeHost(array: ArrayBufferView): void {
  if (!ArrayBuffer.isView(array)) throw typeError('array', 'a TypedArray from device.allocHost()', array);
  const ab = array.buffer;
  if (!hostAllocated.has(ab)) throw typeError('array', 'a TypedArray from device.allocHost()', array);
  if (!pinned.has(ab)) return; // freed already
  pinned.delete(ab);
  try {
    getNative().memFreeHost(ab as ArrayBuffer);
  } catch (e) {
    if (!isContextLost(e)) throw e;
  }
}

/** True when the array's memory is page-locked (allocHost or registerHost). */
export function isPinned(array: ArrayBufferView | ArrayBuffer): boolean {
  return pinned.has(ArrayBuffer.isView(array) ? array.buffer : array);
}

/**
 * Host memory pinned by `device.registerHost(buffer)`: copies between it and the device run at full bus speed.
 * `unregister()` (or dispose) unpins it; the memory stays JavaScript's.
 */
export class HostRegistration implements Disposable {
  /** The pinned memory (the ArrayBuffer under the view that was registered). */
  readonly buffer: ArrayBuffer;
  readonly #device: Device;
  #active = true;

  /** @internal */
  constructor(token: typeof INTERNAL, device: Device, buffer: ArrayBuffer) {
    checkInternal(token, 'HostRegistration', 'device.registerHost()');
    this.#device = device;
    this.buffer = buffer;
  }

  /** True until unregister() (or dispose()) unpins the memory. */
  get active(): boolean {
    return this.#active;
  }

  /** Unpins the memory; idempotent, and silent after a sticky error. */
  unregister(): void {
    if (!this.#active) return;
    this.#active = false;
    unwatch(this);
    pinned.delete(this.buffer);
    try {
      getNative().memHostUnregister(this.#device.ctx, this.buffer);
    } catch (e) {
      if (!isContextLost(e)) throw e;
    }
  }

  /** unregister(). */
  dispose(): void {
    this.unregister();
  }

  /** unregister(), for `using`. */
  [Symbol.dispose](): void {
    this.unregister();
  }
}

/** @internal */
export function registerHostMemory(device: Device, buffer: ArrayBuffer | ArrayBufferView): HostRegistration {
  const ab = ArrayBuffer.isView(buffer) ? buffer.buffer : buffer;
  if (!(ab instanceof ArrayBuffer)) throw typeError('buffer', 'an ArrayBuffer or a view of one', buffer);
  if (ab.byteLength === 0) throw rangeError('buffer.byteLength', 'a positive size', 0);
  if (pinned.has(ab)) throw new TypeError('This ArrayBuffer is already pinned (allocHost or registerHost)');
  assertUsable('cuMemHostRegister');
  const n = getNative();
  n.memHostRegister(device.ctx, ab);
  pinned.add(ab);
  const reg = new HostRegistration(INTERNAL, device, ab);
  const ctx = device.ctx;
  watch(reg, () => n.memHostUnregister(ctx, ab));
  return reg;
}
