// SPDX-License-Identifier: MIT
// Device memory (DeviceBuffer, typed DeviceArray): allocation, views, copies and fills. Pinned host memory is in
// host.ts; copies from it are never staged.
import { availableParallelism } from 'node:os';
import type { Device } from './device.js';
import { TYPED_ARRAYS, type TypedArrayConstructor } from './dtype.js';
import { CudaError, assertUsable, isContextLost } from './errors.js';
import { isPinned } from './host.js';
import { INTERNAL, checkInternal, disposedError, unwatch, watch } from './lifetime.js';
import { getNative, type Handle } from './native.js';
import { Stream } from './stream.js';
import { checkOptions, checkSize, isBufferSource, rangeError, typeError } from './validate.js';

/** Options of `device.alloc()` and `device.allocArray()`. */
export interface AllocOptions {
  /** Stream the allocation is ordered on (and freed on). Default: the device's legacy default stream. */
  stream?: Stream;
}

/** Options of `copyFromHost()`, `copyToHost()` and `copyFrom()`. */
export interface CopyOptions {
  /** Where in the device buffer to start: bytes for DeviceBuffer, elements for DeviceArray. Default 0. */
  offset?: number;
  /**
   * Enqueue on this stream (a stream of the buffer's device) instead of copying synchronously. With pinned host
   * memory the copy is then truly asynchronous: do not touch the host array until the stream is synchronized.
   */
  stream?: Stream;
}

/** How `copyFrom()` copied: within one device, between two devices directly, or through host memory. */
export interface DeviceCopy {
  /**
   * 'device': within one device; 'peer': directly from another device (peer access); 'host': from another device
   * through host memory.
   */
  readonly via: 'device' | 'peer' | 'host';
}
const VIA_DEVICE: DeviceCopy = Object.freeze({ via: 'device' });
const VIA_PEER: DeviceCopy = Object.freeze({ via: 'peer' });
const VIA_HOST: DeviceCopy = Object.freeze({ via: 'host' });

interface Allocation {
  readonly ptr: Handle;
  readonly bytes: number;
  readonly device: Device;
  readonly stream: Stream | undefined; // stream-ordered allocations are freed on it
  readonly async: boolean;
  freed: boolean;
}

// Pageable copies at least this large are staged through pinned chunks by native helper threads, which copy faster
// than the driver's own pageable path (bench/RESULTS.md: the core section's copies from and to a TypedArray). The
// chunk size and the thread count (at most six) are what bench/staging.ts found fastest.
const STAGING_MIN_BYTES = 8 << 20;
const STAGING_CHUNK_BYTES = 4 << 20;
const STAGING_THREADS = Math.min(6, Math.max(2, availableParallelism() >> 1));

/**
 * One copy between host memory and device address `devicePtr`: large pageable memory goes through the staged path
 * (pinned chunks, helper threads), pinned or small memory straight to the driver. Arguments are checked by the caller.
 */
function hostCopy(
  ctx: Handle,
  direction: 'toDevice' | 'toHost',
  devicePtr: bigint,
  host: ArrayBufferView | ArrayBuffer,
  stream: Stream | undefined,
): void {
  const n = getNative();
  if (host.byteLength >= STAGING_MIN_BYTES && !isPinned(host)) {
    const view = ArrayBuffer.isView(host) ? host : new Uint8Array(host);
    const s = stream?.handle ?? 0n;
    if (direction === 'toDevice') n.memcpyHtoDStaged(ctx, devicePtr, view, s, STAGING_CHUNK_BYTES, STAGING_THREADS);
    else n.memcpyDtoHStaged(ctx, view, devicePtr, s, STAGING_CHUNK_BYTES, STAGING_THREADS);
  } else if (direction === 'toDevice') {
    if (stream === undefined) n.memcpyHtoD(ctx, devicePtr, host);
    else n.memcpyHtoD(ctx, devicePtr, host, stream.handle);
  } else if (stream === undefined) {
    n.memcpyDtoH(ctx, host, devicePtr);
  } else {
    n.memcpyDtoH(ctx, host, devicePtr, stream.handle);
  }
}

function releaseAllocation(a: Allocation): void {
  if (a.freed) return;
  a.freed = true;
  const n = getNative();
  try {
    if (!a.async) n.memFree(a.ptr);
    else if (a.stream === undefined) n.memFreeAsync(a.ptr, 0n);
    else if (!a.stream.disposed) n.memFreeAsync(a.ptr, a.stream.handle);
    else n.memFree(a.ptr); // its stream is gone: free synchronously
    if (a.async) a.device.poolBytesChanged(-a.bytes);
  } catch (e) {
    // After a sticky error the context is gone and so is the memory; anything else is reported.
    if (!isContextLost(e)) throw e;
  }
}

/** Device memory: `ptr` (a bigint address, for interop) and `byteLength`. */
export class DeviceBuffer implements Disposable {
  /** The device the memory is on. */
  readonly device: Device;
  /** Size in bytes. */
  readonly byteLength: number;
  readonly #ptr: Handle;
  readonly #alloc: Allocation | undefined; // undefined: memory owned elsewhere (fromPointer)
  readonly #root: boolean;
  // A view keeps the buffer it views reachable, so garbage collection never frees memory under a live view.
  readonly #parent: object | undefined;
  #disposed = false;

  /** @internal */
  constructor(
    token: typeof INTERNAL,
    device: Device,
    ptr: Handle,
    byteLength: number,
    alloc: Allocation | undefined,
    root: boolean,
    parent?: object,
  ) {
    checkInternal(token, 'DeviceBuffer', 'device.alloc()');
    this.device = device;
    this.#ptr = ptr;
    this.byteLength = byteLength;
    this.#alloc = alloc;
    this.#root = root;
    this.#parent = parent;
  }

  /**
   * Wraps device memory owned elsewhere (another library, a __device__ global): never freed by cudakit.
   * The caller keeps the memory alive while this buffer is used.
   */
  static fromPointer(ptr: bigint, byteLength: number, device: Device): DeviceBuffer {
    if (typeof ptr !== 'bigint') throw typeError('ptr', 'a bigint device address', ptr);
    if (ptr <= 0n || ptr >= 1n << 64n) throw rangeError('ptr', 'a non-null 64-bit device address', ptr);
    checkSize('byteLength', byteLength);
    return new DeviceBuffer(INTERNAL, device, ptr, byteLength, undefined, false);
  }

  /**
   * The device address (a bigint CUdeviceptr), for native libraries and kernels that take a raw pointer. Throws once
   * the buffer (or the allocation it views) is disposed; the address is valid only while the buffer is not.
   */
  get ptr(): Handle {
    if (this.#disposed || this.#alloc?.freed === true) throw disposedError('DeviceBuffer');
    return this.#ptr;
  }

  /** True once dispose() has run (or the memory was freed with its stream); every use then throws ERR_DISPOSED. */
  get disposed(): boolean {
    return this.#disposed || this.#alloc?.freed === true;
  }

  /** Bytes per element: 1 for a DeviceBuffer. */
  get bytesPerElement(): number {
    return 1;
  }

  /**
   * A view of [begin, end) (in elements; bytes for DeviceBuffer) sharing this memory.
   * Negative indices count from the end.
   */
  subarray(begin = 0, end?: number): this {
    const len = this.byteLength / this.bytesPerElement;
    const b = clampIndex('begin', begin, len);
    const e = end === undefined ? len : clampIndex('end', end, len);
    const count = Math.max(0, e - b);
    return this.view(BigInt(b * this.bytesPerElement), count * this.bytesPerElement);
  }

  /** @internal */
  protected view(byteOffset: bigint, byteLength: number): this {
    return new DeviceBuffer(INTERNAL, this.device, this.ptr + byteOffset, byteLength, this.#alloc, false, this) as this;
  }

  /** @internal */
  protected get allocation(): Allocation | undefined {
    return this.#alloc;
  }

  /** Copies host bytes (a TypedArray, DataView or ArrayBuffer) into this buffer at `offset`. Returns this. */
  copyFromHost(src: ArrayBufferView | ArrayBuffer, options?: CopyOptions): this {
    if (!isBufferSource(src)) throw typeError('src', 'a TypedArray, DataView or ArrayBuffer', src);
    const { byteOffset, stream } = this.copyOptions(options);
    const bytes = src.byteLength;
    if (byteOffset + bytes > this.byteLength) {
      throw rangeError(
        'src.byteLength',
        `at most ${this.byteLength - byteOffset} bytes (the room after offset)`,
        bytes,
      );
    }
    if (bytes === 0) return this;
    assertUsable('cuMemcpyHtoD');
    hostCopy(this.device.ctx, 'toDevice', this.ptr + BigInt(byteOffset), src, stream);
    return this;
  }

  /**
   * Copies this buffer (from `offset` to the end, or as many bytes as `dst` holds) to the host. Without `dst`,
   * returns a new Uint8Array (a typed array for DeviceArray).
   */
  copyToHost<D extends ArrayBufferView | ArrayBuffer = Uint8Array>(dst?: D, options?: CopyOptions): D {
    const { byteOffset, stream } = this.copyOptions(options);
    const out = (dst ?? this.newHostArray(this.byteLength - byteOffset)) as D;
    if (!isBufferSource(out)) throw typeError('dst', 'a TypedArray, DataView or ArrayBuffer', dst);
    const bytes = out.byteLength;
    if (byteOffset + bytes > this.byteLength) {
      throw rangeError(
        'dst.byteLength',
        `at most ${this.byteLength - byteOffset} bytes (what the buffer holds after offset)`,
        bytes,
      );
    }
    if (bytes === 0) return out;
    assertUsable('cuMemcpyDtoH');
    hostCopy(this.device.ctx, 'toHost', this.ptr + BigInt(byteOffset), out, stream);
    return out;
  }

  /**
   * Copies all of `src` (device memory, of this device or another) into this buffer at `offset`, and says how:
   * - `via: 'device'`: both buffers are on one device (cuMemcpyDtoD).
   * - `via: 'peer'`: `src` is on another device whose memory this one may access (after
   *   `this.device.enablePeerAccess(src.device)` in this thread): straight from device to device (cuMemcpyPeer).
   * - `via: 'host'`: `src` is on another device without that access: cudakit copies it into host memory, then from
   *   there into this buffer (the staged path of copyToHost / copyFromHost for large copies).
   *
   * With `stream` (a stream of this buffer's device) the copy is ordered on it: 'device' and 'peer' copies are
   * enqueued there (cuMemcpyDtoDAsync, cuMemcpyPeerAsync). A 'host' copy blocks the caller: it waits for the
   * stream's earlier work (and whatever that waits for, such as `stream.waitEvent(eventOfTheOtherDevice)`), reads
   * `src` into host memory, and writes it on the stream. Without `stream`, the copy is ordered on the legacy default
   * streams (of both devices for 'peer' and 'host' copies), as copyFromHost is.
   */
  copyFrom(src: DeviceBuffer, options?: CopyOptions): DeviceCopy {
    if (!(src instanceof DeviceBuffer)) throw typeError('src', 'a DeviceBuffer', src);
    const { byteOffset, stream } = this.copyOptions(options);
    if (byteOffset + src.byteLength > this.byteLength) {
      throw rangeError(
        'src.byteLength',
        `at most ${this.byteLength - byteOffset} bytes (the room after offset)`,
        src.byteLength,
      );
    }
    const via = src.device === this.device ? VIA_DEVICE : this.device.hasPeerAccess(src.device) ? VIA_PEER : VIA_HOST;
    if (src.byteLength === 0) return via;
    const n = getNative();
    const dst = this.ptr + BigInt(byteOffset);
    if (via === VIA_DEVICE) {
      assertUsable('cuMemcpyDtoD');
      if (stream === undefined) n.memcpyDtoD(this.device.ctx, dst, src.ptr, src.byteLength);
      else n.memcpyDtoD(this.device.ctx, dst, src.ptr, src.byteLength, stream.handle);
    } else if (via === VIA_PEER) {
      assertUsable('cuMemcpyPeer');
      const ctx = this.device.ctx;
      if (stream === undefined) n.memcpyPeer(ctx, dst, src.device.ctx, src.ptr, src.byteLength);
      else n.memcpyPeer(ctx, dst, src.device.ctx, src.ptr, src.byteLength, stream.handle);
    } else {
      assertUsable('cuMemcpyDtoH');
      stream?.synchronize(); // src is read after the stream's earlier work (and what that waits for)
      const staging = new Uint8Array(src.byteLength);
      hostCopy(src.device.ctx, 'toHost', src.ptr, staging, undefined);
      hostCopy(this.device.ctx, 'toDevice', dst, staging, stream);
    }
    return via;
  }

  /**
   * Sets every element to `value` (raw bits) with an 8, 16 or 32-bit memset (`elementBytes`, default 1).
   * Enqueued on `stream` (default: the legacy default stream). Returns this.
   */
  fill(value: number, options?: { elementBytes?: 1 | 2 | 4; stream?: Stream }): this {
    const o = checkOptions('options', options, ['elementBytes', 'stream'] as const);
    const elementBytes = o.elementBytes ?? 1;
    if (elementBytes !== 1 && elementBytes !== 2 && elementBytes !== 4) {
      throw rangeError('options.elementBytes', '1, 2 or 4', elementBytes);
    }
    const max = 2 ** (8 * elementBytes) - 1;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
      throw (typeof value !== 'number' ? typeError : rangeError)('value', `an integer in [0, ${max}]`, value);
    }
    if (this.byteLength % elementBytes !== 0) {
      throw rangeError('options.elementBytes', `a divisor of byteLength ${this.byteLength}`, elementBytes);
    }
    this.memset(value, elementBytes, o.stream as Stream | undefined);
    return this;
  }

  /** @internal */
  protected memset(bits: number, elementBytes: 1 | 2 | 4, stream: Stream | undefined): void {
    if (this.byteLength === 0) return;
    assertUsable('cuMemsetAsync');
    getNative().memsetAsync(
      this.device.ctx,
      this.ptr,
      bits,
      this.byteLength / elementBytes,
      stream?.handle ?? 0n,
      elementBytes,
    );
  }

  /** @internal */
  protected newHostArray(byteLength: number): ArrayBufferView {
    return new Uint8Array(byteLength);
  }

  private copyOptions(options: CopyOptions | undefined): { byteOffset: number; stream: Stream | undefined } {
    const o = checkOptions('options', options, ['offset', 'stream'] as const);
    const offset = o.offset === undefined ? 0 : checkSize('options.offset', o.offset);
    const byteOffset = offset * this.bytesPerElement;
    if (byteOffset > this.byteLength) {
      throw rangeError('options.offset', `at most ${this.byteLength / this.bytesPerElement}`, offset);
    }
    const stream = o.stream;
    if (stream !== undefined) {
      if (!(stream instanceof Stream)) throw typeError('options.stream', 'a Stream', stream);
      if (stream.device !== this.device) {
        throw new TypeError(
          `Expected a stream of device ${this.device.ordinal} (this buffer's) for options.stream ` +
            `but received a stream of device ${stream.device.ordinal}`,
        );
      }
    }
    return { byteOffset, stream };
  }

  /**
   * Frees the memory (on its allocation stream when stream-ordered). Idempotent. Views of this buffer become
   * unusable. Disposing a view only retires the view; memory from fromPointer() is never freed.
   */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    if (this.#root && this.#alloc !== undefined) {
      unwatch(this);
      releaseAllocation(this.#alloc);
    }
  }

  /** dispose(), for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `DeviceBuffer(${this.byteLength} bytes at 0x${this.#ptr.toString(16)})`;
  }
}

/** Typed device memory from device.allocArray(T, length): offsets and lengths count elements of T. */
export class DeviceArray<T extends TypedArrayConstructor> extends DeviceBuffer {
  /** The TypedArray class of its elements, e.g. Float32Array: copyToHost() returns one. */
  readonly type: T;
  /** Number of elements. */
  readonly length: number;

  /** @internal */
  constructor(
    token: typeof INTERNAL,
    device: Device,
    ptr: Handle,
    type: T,
    length: number,
    alloc: Allocation | undefined,
    root: boolean,
    parent?: object,
  ) {
    super(token, device, ptr, length * type.BYTES_PER_ELEMENT, alloc, root, parent);
    this.type = type;
    this.length = length;
  }

  override get bytesPerElement(): number {
    return this.type.BYTES_PER_ELEMENT;
  }

  protected override view(byteOffset: bigint, byteLength: number): this {
    return new DeviceArray(
      INTERNAL,
      this.device,
      this.ptr + byteOffset,
      this.type,
      byteLength / this.bytesPerElement,
      this.allocation,
      false,
      this,
    ) as this;
  }

  protected override newHostArray(byteLength: number): ArrayBufferView {
    return new this.type(byteLength / this.bytesPerElement);
  }

  override copyToHost<D extends ArrayBufferView | ArrayBuffer = InstanceType<T>>(dst?: D, options?: CopyOptions): D {
    return super.copyToHost(dst, options);
  }

  /** Sets every element to `value` (a number, or a bigint for 64-bit integer arrays). */
  override fill(value: number | bigint, options?: { stream?: Stream }): this {
    const o = checkOptions('options', options, ['stream'] as const);
    const probe = new this.type(1);
    try {
      (probe as unknown as (number | bigint)[])[0] = value;
    } catch {
      throw typeError(
        'value',
        probe instanceof BigInt64Array || probe instanceof BigUint64Array ? 'a bigint' : 'a number',
        value,
      );
    }
    if (typeof value !== (probe instanceof BigInt64Array || probe instanceof BigUint64Array ? 'bigint' : 'number')) {
      throw typeError(
        'value',
        typeof (probe as unknown as (number | bigint)[])[0] === 'bigint' ? 'a bigint' : 'a number',
        value,
      );
    }
    const bytes = new Uint8Array(probe.buffer);
    const stream = o.stream as Stream | undefined;
    if (bytes.length <= 4) {
      const bits =
        bytes.length === 1
          ? bytes[0]!
          : bytes.length === 2
            ? new Uint16Array(probe.buffer)[0]!
            : new Uint32Array(probe.buffer)[0]!;
      this.memset(bits, bytes.length as 1 | 2 | 4, stream);
      return this;
    }
    const halves = new Uint32Array(probe.buffer);
    if (halves[0] !== halves[1]) {
      throw rangeError(
        'value',
        'an 8-byte value whose two 32-bit halves are equal (e.g. 0); other patterns need a kernel',
        value,
      );
    }
    this.memset(halves[0]!, 4, stream);
    return this;
  }
}

function clampIndex(name: string, i: number, len: number): number {
  if (typeof i !== 'number' || !Number.isInteger(i)) throw typeError(name, 'an integer', i);
  return i < 0 ? Math.max(0, len + i) : Math.min(i, len);
}

/** @internal */
export function allocDevice(
  device: Device,
  count: number,
  options?: AllocOptions,
  type?: TypedArrayConstructor,
): DeviceBuffer {
  if (type !== undefined && !TYPED_ARRAYS.includes(type)) throw typeError('type', 'a TypedArray constructor', type);
  checkSize(type === undefined ? 'byteLength' : 'length', count);
  const o = checkOptions('options', options, ['stream'] as const);
  const stream = o.stream as Stream | undefined;
  if (stream !== undefined && stream.device !== device) throw new TypeError('options.stream belongs to another device');
  const byteLength = count * (type?.BYTES_PER_ELEMENT ?? 1);
  assertUsable('cuMemAlloc');
  const n = getNative();
  const async = device.usesMemoryPools;
  // Zero bytes still gets a real (1-byte) allocation, so ptr is always a valid, distinct address.
  const bytes = Math.max(byteLength, 1);
  const ptr = async ? allocFromPool(device, bytes, stream) : n.memAlloc(device.ctx, bytes);
  const alloc: Allocation = { ptr, bytes, device, stream, async, freed: false };
  const buf =
    type === undefined
      ? new DeviceBuffer(INTERNAL, device, ptr, byteLength, alloc, true)
      : new DeviceArray(INTERNAL, device, ptr, type, count, alloc, true);
  watch(buf, () => releaseAllocation(alloc));
  return buf;
}

const isOutOfMemory = (e: unknown): e is CudaError => e instanceof CudaError && e.code === 'CUDA_ERROR_OUT_OF_MEMORY';

/**
 * cuMemAllocAsync from the device's pool. Out of memory, the pool's cache (and whatever the failed attempt reserved)
 * goes back to the driver and the allocation is tried once more; a second failure trims again, so a failed
 * allocation never leaves the process holding memory, and throws with the device's free memory in the message.
 */
function allocFromPool(device: Device, bytes: number, stream: Stream | undefined): Handle {
  const n = getNative();
  const s = stream?.handle ?? 0n;
  let ptr: Handle;
  try {
    ptr = n.memAllocAsync(device.ctx, bytes, s);
  } catch (first) {
    if (!isOutOfMemory(first)) throw first;
    device.trimMemory();
    try {
      ptr = n.memAllocAsync(device.ctx, bytes, s);
    } catch (second) {
      if (!isOutOfMemory(second)) throw second;
      device.trimMemory();
      const { freeBytes, totalBytes } = device.memoryInfo();
      throw new CudaError({
        code: second.code,
        api: second.api,
        result: second.result,
        explanation: second.explanation,
        detail:
          `  asked for ${bytes} bytes; ${freeBytes} of ${totalBytes} bytes are free on the device, ` +
          "after returning this process's cached pool memory and retrying once",
      });
    }
  }
  device.poolBytesChanged(bytes);
  return ptr;
}

/** @internal A view of module memory (a __device__ global): never freed here, unusable once `retire` runs. */
export function globalView(
  device: Device,
  ptr: Handle,
  byteLength: number,
  owner: object,
): { buffer: DeviceBuffer; retire: () => void } {
  // `async: false` is never consulted: the view is not a root, so dispose() never frees it.
  const alloc: Allocation = { ptr, bytes: byteLength, device, stream: undefined, async: false, freed: false };
  return {
    buffer: new DeviceBuffer(INTERNAL, device, ptr, byteLength, alloc, false, owner),
    retire: () => (alloc.freed = true),
  };
}
