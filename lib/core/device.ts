// SPDX-License-Identifier: MIT
// Devices: properties, attributes, memory info, synchronization, and the factories for everything that lives in
// the device's primary context (streams, buffers, pinned host memory, modules).
import { DEVICE_ATTRIBUTES, type DeviceAttributeName, smArch } from './attributes.js';
import { CudaError, assertUsable } from './errors.js';
import { INTERNAL, checkInternal } from './lifetime.js';
import type { TypedArrayConstructor } from './dtype.js';
import { type HostRegistration, allocHostArray, registerHostMemory } from './host.js';
import { DeviceArray, DeviceBuffer, type AllocOptions, allocDevice } from './memory.js';
import { Module, type LoadModuleOptions, loadModule } from './module.js';
import { getNative, type Handle } from './native.js';
import type { ObjectCode, SmArch } from './program.js';
import { Stream, type StreamOptions, createStream, defaultStream } from './stream.js';
import { checkSize, rangeError, typeError } from './validate.js';
import { type WaitOptions, waitWithLimit } from './wait.js';

/** A device's compute capability, 9.0 for an H100 or H200: `{ major: 9, minor: 0 }`. */
export interface ComputeCapability {
  /** The major version: 9 for Hopper, 8 for Ampere and Ada, 10 and 12 for Blackwell. */
  major: number;
  /** The minor version. */
  minor: number;
}

/** What `device.memoryInfo()` reports: the device's free and total memory, and this process's memory pool. */
export interface MemoryInfo {
  /** Free on the device, for every process (cuMemGetInfo). */
  freeBytes: number;
  /** Total memory of the device (cuMemGetInfo). */
  totalBytes: number;
  /** Held by this process's memory pool for the device: in use plus cached. 0 without memory pools. */
  poolReservedBytes: number;
  /** In live allocations from the pool. `poolReservedBytes - poolUsedBytes` is the cache trimMemory() gives back. */
  poolUsedBytes: number;
}

/**
 * Freed memory the stream-ordered pool may keep cached across synchronizations, beyond what is live, instead of
 * returning it to the driver. An alloc / fill / free / synchronize cycle of up to this size then costs what it costs
 * with an unbounded cache, a fraction of its cost when every synchronize returns the memory (bench/RESULTS.md,
 * 'Device memory', from `npm run bench:memory`); larger buffers go back to the driver, so another process (the next
 * job on the GPU) can use them.
 */
export const DEFAULT_POOL_CACHE_LIMIT_BYTES = 64 << 20;

// CUmemPool_attribute
const POOL_RELEASE_THRESHOLD = 4;
const POOL_RESERVED_MEM_CURRENT = 5;
const POOL_USED_MEM_CURRENT = 7;
// CUmemAccess_flags
const MEM_ACCESS_READ_WRITE = 3;

/** Launch limits, read once per device; used to validate launches before the driver sees them. */
export interface LaunchLimits {
  /** Most threads a block may have (MAX_THREADS_PER_BLOCK), 1024 on current GPUs. */
  maxThreadsPerBlock: number;
  /** Most threads a block may have along x, y and z (MAX_BLOCK_DIM_X/Y/Z). */
  maxBlockDim: readonly [number, number, number];
  /** Most blocks a grid may have along x, y and z (MAX_GRID_DIM_X/Y/Z). */
  maxGridDim: readonly [number, number, number];
  /** Most shared memory a block may use once the kernel opts in (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN). */
  maxSharedMemoryPerBlockOptinBytes: number;
}

const devices = new Map<number, Device>();

/** A CUDA device and its primary context. Get one with `Device.get(ordinal)`. */
export class Device {
  /** The device's ordinal, as `Device.get(ordinal)` takes it: 0 for the first device. */
  readonly ordinal: number;
  readonly #cuDevice: number;
  #ctx: Handle | undefined;
  #name: string | undefined;
  #limits: LaunchLimits | undefined;
  #pools: boolean | undefined;
  #pool: Handle | undefined;
  #poolCacheLimitBytes = DEFAULT_POOL_CACHE_LIMIT_BYTES;
  #poolLiveBytes = 0; // in live allocations this thread made from the pool
  #poolThresholdBytes = -1; // the release threshold last given to the driver
  #defaultStream: Stream | undefined;
  readonly #attributeCache = new Map<number, number>();
  readonly #canAccessPeer = new Map<Device, boolean>();
  readonly #peerAccess = new Set<Device>(); // devices whose memory this one may access (enablePeerAccess)

  /** @internal */
  constructor(token: typeof INTERNAL, ordinal: number, cuDevice: number) {
    checkInternal(token, 'Device', 'Device.get(ordinal)');
    this.ordinal = ordinal;
    this.#cuDevice = cuDevice;
  }

  /** Number of CUDA devices. Throws CudaError (CUDA_DRIVER_NOT_FOUND ...) when there is no usable driver. */
  static count(): number {
    return getNative().deviceGetCount();
  }

  /** The device with this ordinal (0 by default); the same object on every call. */
  static get(ordinal = 0): Device {
    const cached = devices.get(ordinal);
    if (cached !== undefined) return cached;
    const n = getNative();
    const count = n.deviceGetCount();
    if (typeof ordinal !== 'number' || !Number.isInteger(ordinal)) throw typeError('ordinal', 'an integer', ordinal);
    if (ordinal < 0 || ordinal >= count) {
      throw rangeError(
        'ordinal',
        count === 0 ? 'a device, but none is present' : `an integer in [0, ${count - 1}]`,
        ordinal,
      );
    }
    const d = new Device(INTERNAL, ordinal, n.deviceGet(ordinal));
    devices.set(ordinal, d);
    return d;
  }

  /** Every device, in ordinal order. */
  static all(): Device[] {
    const count = Device.count();
    return Array.from({ length: count }, (_, i) => Device.get(i));
  }

  /** @internal The retained primary context (retained on first use, released at env exit); public as contextHandle. */
  get ctx(): Handle {
    if (this.#ctx === undefined) this.#ctx = getNative().devicePrimaryCtxRetain(this.#cuDevice);
    return this.#ctx;
  }

  /**
   * The raw CUcontext, for native libraries that take one: the device's primary context, created (retained) on
   * first use. It is the context the CUDA runtime uses for this device too, so runtime-based libraries (cuBLAS,
   * cuFFT ...) share cudakit's memory and streams. Borrowed: never destroy or pop it. Pass it with `stream.handle`
   * and `buffer.ptr` (bigints, like every handle).
   */
  get contextHandle(): Handle {
    return this.ctx;
  }

  /**
   * Creates the device's primary context on a libuv pool thread and resolves when it exists (at once if it does).
   * The first GPU call otherwise creates it on the calling thread, with the event loop blocked meanwhile: start this
   * early to overlap it with other work, such as compiling. A GPU call made meanwhile waits for
   * the same context. Rejects with CudaError where the context cannot be created.
   */
  async createContextAsync(): Promise<void> {
    if (this.#ctx !== undefined) return;
    const ctx = await getNative().devicePrimaryCtxRetainAsync(this.#cuDevice);
    this.#ctx ??= ctx;
  }

  /** The product name, e.g. 'NVIDIA H200' (cuDeviceGetName). */
  get name(): string {
    this.#name ??= getNative().deviceGetName(this.#cuDevice);
    return this.#name;
  }

  /** 'GPU-xxxxxxxx-xxxx-...', as nvidia-smi prints it. */
  get uuid(): string {
    return getNative().deviceGetUuid(this.#cuDevice);
  }

  /** The PCI bus id, '0000:19:00.0', as nvidia-smi prints it (cuDeviceGetPCIBusId). */
  get pciBusId(): string {
    return getNative().deviceGetPCIBusId(this.#cuDevice);
  }

  /** The compute capability: `{ major: 9, minor: 0 }` on an H100 or H200. */
  get computeCapability(): ComputeCapability {
    return { major: this.attribute('COMPUTE_CAPABILITY_MAJOR'), minor: this.attribute('COMPUTE_CAPABILITY_MINOR') };
  }

  /** 'sm_90' for compute capability 9.0: what NVRTC's arch option expects. */
  get arch(): SmArch {
    const { major, minor } = this.computeCapability;
    return smArch(major, minor);
  }

  /** Number of streaming multiprocessors (SMs). */
  get multiprocessorCount(): number {
    return this.attribute('MULTIPROCESSOR_COUNT');
  }

  /** Total device memory in bytes (cuDeviceTotalMem). */
  get totalMemoryBytes(): number {
    return getNative().deviceTotalMem(this.#cuDevice);
  }

  /** Size of the L2 cache in bytes. */
  get l2CacheBytes(): number {
    return this.attribute('L2_CACHE_SIZE');
  }

  /** Most threads a block may have, 1024 on current GPUs. */
  get maxThreadsPerBlock(): number {
    return this.attribute('MAX_THREADS_PER_BLOCK');
  }

  /** Static shared memory per block without opt-in (48 KiB); kernels may opt into more (setMaxDynamicSharedMemory). */
  get maxSharedMemoryPerBlockBytes(): number {
    return this.attribute('MAX_SHARED_MEMORY_PER_BLOCK');
  }

  /** Threads per warp (32). */
  get warpSize(): number {
    return this.attribute('WARP_SIZE');
  }

  /** The SM clock's peak rate in kHz, as the driver reports it. */
  get clockRateKHz(): number {
    return this.attribute('CLOCK_RATE');
  }

  /** Any CUdevice_attribute by name, e.g. `device.attribute('MAX_BLOCK_DIM_X')`. Values are cached. */
  attribute(name: DeviceAttributeName): number {
    const id = (DEVICE_ATTRIBUTES as Record<string, number>)[name];
    if (id === undefined) {
      throw rangeError('attribute', 'a CUdevice_attribute name such as MAX_BLOCK_DIM_X', name);
    }
    let v = this.#attributeCache.get(id);
    if (v === undefined) {
      v = getNative().deviceGetAttribute(this.#cuDevice, id);
      this.#attributeCache.set(id, v);
    }
    return v;
  }

  /** @internal */
  get limits(): LaunchLimits {
    this.#limits ??= {
      maxThreadsPerBlock: this.attribute('MAX_THREADS_PER_BLOCK'),
      maxBlockDim: [
        this.attribute('MAX_BLOCK_DIM_X'),
        this.attribute('MAX_BLOCK_DIM_Y'),
        this.attribute('MAX_BLOCK_DIM_Z'),
      ],
      maxGridDim: [
        this.attribute('MAX_GRID_DIM_X'),
        this.attribute('MAX_GRID_DIM_Y'),
        this.attribute('MAX_GRID_DIM_Z'),
      ],
      maxSharedMemoryPerBlockOptinBytes: this.attribute('MAX_SHARED_MEMORY_PER_BLOCK_OPTIN'),
    };
    return this.#limits;
  }

  /** @internal Whether stream-ordered allocation is used; the pool's release threshold is set on first use. */
  get usesMemoryPools(): boolean {
    if (this.#pools === undefined) {
      const supported = this.attribute('MEMORY_POOLS_SUPPORTED') === 1;
      if (supported) this.#pool = getNative().deviceGetDefaultMemPool(this.#cuDevice);
      this.#pools = supported;
      if (supported) this.poolBytesChanged(0);
    }
    return this.#pools;
  }

  /**
   * @internal Called with every allocation from the pool and every free. The driver's release threshold bounds what
   * the pool holds in all, live allocations included; keeping it at live bytes + the cache limit bounds the cache
   * itself, however much is live. The threshold is moved only when the cache would exceed the limit or fall below
   * half of it, so a steady alloc / free loop makes no extra driver call.
   */
  poolBytesChanged(deltaBytes: number): void {
    this.#poolLiveBytes += deltaBytes;
    const cache = this.#poolThresholdBytes - this.#poolLiveBytes;
    if (cache > this.#poolCacheLimitBytes || cache < this.#poolCacheLimitBytes / 2) {
      this.#poolThresholdBytes = this.#poolLiveBytes + this.#poolCacheLimitBytes;
      getNative().memPoolSetAttribute(this.#pool!, POOL_RELEASE_THRESHOLD, BigInt(this.#poolThresholdBytes));
    }
  }

  /** Bytes of freed memory the pool may keep cached across synchronizations (default 64 MiB). */
  get poolCacheLimitBytes(): number {
    return this.#poolCacheLimitBytes;
  }

  /**
   * Sets how much freed memory the stream-ordered pool may keep cached across synchronizations, beyond what is live:
   * more makes alloc / free loops of larger buffers cheaper, less leaves more to other processes.
   */
  setPoolCacheLimit(bytes: number): void {
    checkSize('bytes', bytes);
    this.#poolCacheLimitBytes = bytes;
    if (this.#pools === true) {
      this.#poolThresholdBytes = -1; // moves it now
      this.poolBytesChanged(0);
    }
  }

  /**
   * Returns the pool's whole cache to the driver now (cuMemPoolTrimTo). Memory freed on a stream whose work has not
   * reached the free yet is not included: synchronize() first to include it.
   */
  trimMemory(): void {
    if (!this.usesMemoryPools) return;
    assertUsable('cuMemPoolTrimTo');
    getNative().memPoolTrimTo(this.#pool!, 0);
  }

  /** Free and total memory of the device, and what this process's pool holds. */
  memoryInfo(): MemoryInfo {
    assertUsable('cuMemGetInfo');
    const n = getNative();
    const [freeBytes, totalBytes] = n.memGetInfo(this.ctx);
    let poolReservedBytes = 0;
    let poolUsedBytes = 0;
    if (this.usesMemoryPools) {
      poolReservedBytes = Number(n.memPoolGetAttribute(this.#pool!, POOL_RESERVED_MEM_CURRENT));
      poolUsedBytes = Number(n.memPoolGetAttribute(this.#pool!, POOL_USED_MEM_CURRENT));
    }
    return { freeBytes, totalBytes, poolReservedBytes, poolUsedBytes };
  }

  /** Blocks until all work on the device has finished; freed memory above the pool's threshold goes back then. */
  synchronize(): void {
    assertUsable('cuCtxSynchronize');
    getNative().ctxSynchronize(this.ctx);
  }

  /**
   * Resolves when all work on the device has finished, without blocking the event loop or a libuv pool thread.
   * `timeoutMs` / `signal` reject with a TimeoutError / AbortError instead; the work keeps running.
   */
  synchronizeAsync(options?: WaitOptions): Promise<void> {
    assertUsable('cuCtxSynchronize');
    const ctx = this.ctx;
    return waitWithLimit('device.synchronizeAsync()', options, (waitId) =>
      getNative().ctxSynchronizeAsync(ctx, waitId),
    );
  }

  /** The legacy default stream (handle 0): ordered with every blocking stream of the context. */
  get defaultStream(): Stream {
    this.#defaultStream ??= defaultStream(this);
    return this.#defaultStream;
  }

  /**
   * A new stream on this device: `{ nonBlocking: true }` for one not ordered with the legacy default stream, `priority`
   * for its scheduling priority (streamPriorityRange()).
   */
  createStream(options?: StreamOptions): Stream {
    return createStream(this, options);
  }

  /** Device memory, uninitialized. Stream-ordered (cuMemAllocAsync) where the device supports memory pools. */
  alloc(byteLength: number, options?: AllocOptions): DeviceBuffer {
    return allocDevice(this, byteLength, options);
  }

  /** Typed device memory: `device.allocArray(Float32Array, n)`; copyToHost() then returns a Float32Array. */
  allocArray<T extends TypedArrayConstructor>(type: T, length: number, options?: AllocOptions): DeviceArray<T> {
    return allocDevice(this, length, options, type) as DeviceArray<T>;
  }

  /**
   * Page-locked host memory as a TypedArray, for copies at full bus speed. Free it with `freeHost(array)` (or let
   * it be garbage-collected); after that the array is detached (length 0), never dangling.
   */
  allocHost<T extends TypedArrayConstructor>(type: T, length: number): InstanceType<T> {
    return allocHostArray(this, type, length);
  }

  /** Pins memory JS already owns (an ArrayBuffer or a view of one); `unregister()` on the result unpins it. */
  registerHost(buffer: ArrayBuffer | ArrayBufferView): HostRegistration {
    return registerHostMemory(this, buffer);
  }

  /** Loads PTX, CUBIN or a fatbin (an ObjectCode from Program.compile, or raw bytes, e.g. from nvcc or Triton). */
  loadModule(code: ObjectCode | Uint8Array | ArrayBuffer | string, options?: LoadModuleOptions): Module {
    return loadModule(this, code, options);
  }

  /**
   * Whether this device can access `other`'s memory directly (over NVLink or PCIe), which `enablePeerAccess(other)`
   * needs. Read once per pair (cuDeviceCanAccessPeer); `cudakit info` prints it for every pair.
   */
  canAccessPeer(other: Device): boolean {
    checkPeer(this, other);
    let can = this.#canAccessPeer.get(other);
    if (can === undefined) {
      can = getNative().deviceCanAccessPeer(this.#cuDevice, other.#cuDevice);
      this.#canAccessPeer.set(other, can);
    }
    return can;
  }

  /**
   * Lets this device access `other`'s memory directly: kernels running here may then read and write `other`'s
   * buffers, and `copyFrom()` into this device's buffers from `other`'s goes device to device (`via: 'peer'`)
   * instead of through host memory. One direction only: `other.enablePeerAccess(this)` for the other one.
   * It covers both plain and stream-ordered (memory pool) allocations of `other`: cuCtxEnablePeerAccess, then
   * cuMemPoolSetAccess on `other`'s pool, because pool memory does not follow the context's peer access.
   * Idempotent, also when another thread or library of the process enabled it already
   * (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED counts as done). Access is process-wide, but cudakit records it per
   * thread: a worker that wants peer copies calls enablePeerAccess itself (cheap when already enabled).
   * Throws a CudaError (CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) where `canAccessPeer(other)` is false.
   */
  enablePeerAccess(other: Device): void {
    checkPeer(this, other);
    if (this.#peerAccess.has(other)) return;
    assertUsable('cuCtxEnablePeerAccess');
    const n = getNative();
    try {
      n.ctxEnablePeerAccess(this.ctx, other.ctx);
    } catch (e) {
      if (!(e instanceof CudaError && e.code === 'CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED')) throw e;
    }
    if (other.usesMemoryPools) n.memPoolSetAccess(other.#pool!, this.ordinal, MEM_ACCESS_READ_WRITE);
    this.#peerAccess.add(other);
  }

  /** @internal Whether this thread enabled this device's access to `other`'s memory (enablePeerAccess). */
  hasPeerAccess(other: Device): boolean {
    return this.#peerAccess.has(other);
  }

  /** Stream priorities this device accepts: lower numbers are higher priority. */
  streamPriorityRange(): {
    /** The lowest priority, the default (0). */
    least: number;
    /** The highest priority: numerically the smallest (lower numbers are higher priority). */
    greatest: number;
  } {
    const [least, greatest] = getNative().ctxGetStreamPriorityRange(this.ctx);
    return { least, greatest };
  }

  /** 'Device(0: NVIDIA H200, sm_90)'. */
  toString(): string {
    return `Device(${this.ordinal}: ${this.name}, ${this.arch})`;
  }
}

/** `other` is a Device and not `self`: peer access is between two devices. Checked before any driver call. */
function checkPeer(self: Device, other: unknown): asserts other is Device {
  if (!(other instanceof Device)) throw typeError('other', 'a Device', other);
  if (other.ordinal === self.ordinal) {
    throw rangeError('other', `a device other than device ${self.ordinal} (peer access is between two devices)`, other);
  }
}
