// SPDX-License-Identifier: MIT
// Loads the addon (no CUDA needed for that) and types every native export. This is also the raw layer:
// `import { native } from 'cudakit'` gives one-to-one CUDA calls with bigint handles and no policy.
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ErrorFactory, codedError, errorFromNative, withCodeNext } from './errors.js';

/** A CUDA handle (context, stream, event, module, function, graph) or a device address. */
export type Handle = bigint;

/** Whether libcuda or libnvrtc loaded, from where, and why not (driverStatus(), nvrtcStatus()). */
export interface LibraryStatus {
  loaded: boolean;
  path: string;
  code: string;
  message: string;
  version: number;
  initResult: number;
  initError?: string;
  tried: string[];
}

export interface CompileSpec {
  source: string;
  name: string;
  target: 'ptx' | 'cubin';
  headerNames: string[];
  headerSources: string[];
  options: string[];
  nameExpressions: string[];
}

export interface CompileOutput {
  result: number;
  resultName: string;
  failedCall: string;
  log: string;
  /** Wall time of the NVRTC calls (create to destroy), measured natively. */
  elapsedMs: number;
  /** The code (a Buffer at run time; typed by its base class so the package's types need no @types/node). */
  code?: Uint8Array;
  loweredNames?: string[];
}

/** One batch of benchmark samples (native/bench.cc; core/sampler.ts builds it). */
export interface BenchSpec {
  ctx: Handle;
  stream: Handle;
  slots: number[];
  order: number[];
  flush: boolean;
  /** Nothing between the events (measures the event pair itself). */
  empty?: boolean;
  /** Do not hold the stream behind the spin kernel (launch latency is then not hidden). */
  noBlock?: boolean;
  graph: Handle;
  flushPtr: Handle;
  flushVectors: number;
  flushFn: Handle;
  flushBlocks: number;
  sinkPtr: Handle;
  blockFn: Handle;
  probeFn: Handle;
  probeBlocks: number;
  probeOut: Handle;
  flagDev: Handle;
  timeoutNs: number;
  /** Per input set (one per slot): launches run before each of its samples, outside the timed interval. */
  refresh?: number[][];
  /** The u32 the refresh launches read: epochBase + the sample's index. */
  epochPtr?: Handle;
  epochBase?: number;
  /**
   * After sample `sample` has run, outside the timed interval, each copy [src, dst, bytes] runs device to device on
   * the stream: what that sample wrote, kept for a check after the batch.
   */
  snapshots?: { sample: number; copies: [src: Handle, dst: Handle, bytes: number][] }[];
}

/**
 * Live resources the addon holds for this thread (the main thread or a worker), as `native().stats()` reports them: for
 * leak tests and diagnostics.
 */
export interface NativeStats {
  /** Device allocations not yet freed. */
  deviceAllocations: number;
  /** Their size in bytes. */
  deviceBytes: number;
  /** Pinned host allocations (memHostAlloc) not yet freed. */
  hostAllocations: number;
  /** Their size in bytes. */
  hostBytes: number;
  /** Host memory registrations (memHostRegister) not yet unregistered. */
  hostRegistrations: number;
  /** Loaded modules. */
  modules: number;
  /** Streams not yet destroyed. */
  streams: number;
  /** Events not yet destroyed. */
  events: number;
  /** Captured graphs not yet destroyed. */
  graphs: number;
  /** Executable graphs not yet destroyed. */
  graphExecs: number;
  /** Launch slots (one per Kernel) not yet destroyed. */
  kernelSlots: number;
}

/** What cuptiLoad() reports: the library loaded (and its CUPTI API version), or every candidate and why it failed. */
export interface CuptiLoadStatus {
  /** Whether a candidate loaded. */
  loaded: boolean;
  /** The file it was loaded from ('' when none). */
  path: string;
  /** Its CUPTI API version (cuptiGetVersion; 0 when none loaded). */
  version: number;
  /** Each candidate that failed: 'path: why'. */
  tried: string[];
}

/** What cuptiActivityStop() returns. */
export interface CuptiRecords {
  /** Six numbers per record: kind, streamId, correlationId, name index or -1, start ns, end ns. */
  records: Float64Array;
  /** Kernel names, by the records' name index. */
  names: string[];
  /** Records CUPTI dropped (no buffer to write them to). */
  dropped: number;
}

/** Every native export; names copy the CUDA symbol without its prefix. */
export interface Native {
  /** Registers how the addon builds its errors (cudakit's own error classes do this at load). */
  setErrorFactory(fn: ErrorFactory): void;
  /** Loads libcuda (once) and reports whether it loaded, from where, and why not; never throws. */
  driverStatus(): LibraryStatus;
  /** Loads libnvrtc (once) and reports whether it loaded, from where, and why not; never throws. */
  nvrtcStatus(): LibraryStatus;
  /** cuGetErrorName: 'CUDA_ERROR_OUT_OF_MEMORY' for 2. */
  getErrorName(result: number): string;
  /** cuGetErrorString: the driver's description of a CUresult. */
  getErrorString(result: number): string;
  /** Live resources the addon holds for this thread. */
  stats(): NativeStats;
  /** Does nothing: the cost of one N-API call, for benchmarks. */
  nop(): void;
  // device.cc
  /** cuDriverGetVersion: the driver's CUDA version, 1000 × major + 10 × minor (13000 for 13.0). */
  driverGetVersion(): number;
  /** cuDeviceGetCount: the number of CUDA devices. */
  deviceGetCount(): number;
  /** cuDeviceGet: the CUdevice of an ordinal. */
  deviceGet(ordinal: number): number;
  /** cuDeviceGetName: the product name. */
  deviceGetName(device: number): string;
  /** cuDeviceGetUuid, as nvidia-smi spells it: 'GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'. */
  deviceGetUuid(device: number): string;
  /** cuDeviceGetPCIBusId: '0000:19:00.0'. */
  deviceGetPCIBusId(device: number): string;
  /** cuDeviceGetAttribute, by CUdevice_attribute number. */
  deviceGetAttribute(device: number, attribute: number): number;
  /** cuDeviceTotalMem: total device memory in bytes. */
  deviceTotalMem(device: number): number;
  /** cuDeviceCanAccessPeer: whether `device` can access `peerDevice`'s memory directly. */
  deviceCanAccessPeer(device: number, peerDevice: number): boolean;
  /** cuDevicePrimaryCtxRetain: the device's primary context, retained once per thread and released at its exit. */
  devicePrimaryCtxRetain(device: number): Handle;
  /** cuDevicePrimaryCtxRetain on a libuv pool thread, so creating the context overlaps other work. */
  devicePrimaryCtxRetainAsync(device: number): Promise<Handle>;
  /** cuCtxSynchronize, with `ctx` bound first. */
  ctxSynchronize(ctx: Handle): void;
  /** cuMemGetInfo: [freeBytes, totalBytes]. */
  memGetInfo(ctx: Handle): [number, number];
  /** cuCtxSetLimit, by CUlimit number. */
  ctxSetLimit(ctx: Handle, limit: number, value: number | bigint): void;
  /** cuCtxGetLimit, by CUlimit number. */
  ctxGetLimit(ctx: Handle, limit: number): number;
  /** cuCtxResetPersistingL2Cache: returns persisting L2 cache lines to normal. */
  ctxResetPersistingL2Cache(ctx: Handle): void;
  /** cuCtxGetStreamPriorityRange: [least, greatest]. */
  ctxGetStreamPriorityRange(ctx: Handle): [number, number];
  /** cuCtxEnablePeerAccess with `ctx` current: `ctx` may then access memory allocated in `peerCtx`. */
  ctxEnablePeerAccess(ctx: Handle, peerCtx: Handle): void;
  /** cuDeviceGetDefaultMemPool: the device's default memory pool. */
  deviceGetDefaultMemPool(device: number): Handle;
  /** 64-bit attributes (RELEASE_THRESHOLD = 4 and the byte counters after it) take and return bigint. */
  memPoolSetAttribute(pool: Handle, attribute: number, value: number | bigint): void;
  /** cuMemPoolGetAttribute: a bigint for the 64-bit attributes (RELEASE_THRESHOLD = 4 on), else a number. */
  memPoolGetAttribute(pool: Handle, attribute: number): number | bigint;
  /** cuMemPoolTrimTo: returns cached memory beyond `minBytesToKeep` to the driver. */
  memPoolTrimTo(pool: Handle, minBytesToKeep: number | bigint): void;
  /** cuMemPoolSetAccess with one descriptor: `device`'s access to the pool's allocations (0 none, 1 read, 3 rw). */
  memPoolSetAccess(pool: Handle, device: number, flags: number): void;
  // memory.cc
  /**
   * cuTensorMapEncodeTiled (CUDA 12.0): the 128-byte CUtensorMap of a tiled region of global memory. The rank is
   * globalDim's length (1 to 5); globalStrides has one entry less. Enum values as CUDA's. No context is needed.
   */
  tensorMapEncodeTiled(
    dataType: number,
    globalAddress: Handle,
    globalDim: readonly (number | bigint)[],
    globalStrides: readonly (number | bigint)[],
    boxDim: readonly number[],
    elementStrides: readonly number[],
    interleave: number,
    swizzle: number,
    l2Promotion: number,
    oobFill: number,
  ): ArrayBuffer;
  /** cuMemAlloc: a device address. */
  memAlloc(ctx: Handle, bytes: number): Handle;
  /** cuMemAllocAsync: a device address, from the pool, ordered on `stream`. */
  memAllocAsync(ctx: Handle, bytes: number, stream: Handle): Handle;
  /** cuMemFree. Only memory this thread allocated; a second free is an error, never a crash. */
  memFree(ptr: Handle): void;
  /** cuMemFreeAsync: frees pool memory, ordered on `stream`. */
  memFreeAsync(ptr: Handle, stream: Handle): void;
  /** cuMemcpyHtoD, or cuMemcpyHtoDAsync on `stream`: all of `src` to `dst`. */
  memcpyHtoD(ctx: Handle, dst: Handle, src: ArrayBufferView | ArrayBuffer, stream?: Handle): void;
  /** cuMemcpyDtoH, or cuMemcpyDtoHAsync on `stream`: fills all of `dst` from `src`. */
  memcpyDtoH(ctx: Handle, dst: ArrayBufferView | ArrayBuffer, src: Handle, stream?: Handle): void;
  /** cuMemcpyDtoD, or cuMemcpyDtoDAsync on `stream`. */
  memcpyDtoD(ctx: Handle, dst: Handle, src: Handle, bytes: number, stream?: Handle): void;
  /** cuMemcpyPeer, or cuMemcpyPeerAsync on `stream` (a stream of dstCtx); dstCtx is bound first. */
  memcpyPeer(dstCtx: Handle, dst: Handle, srcCtx: Handle, src: Handle, bytes: number, stream?: Handle): void;
  /** cuMemsetD8Async, cuMemsetD16Async or cuMemsetD32Async, by `elementBytes`: `count` elements set to `value`. */
  memsetAsync(ctx: Handle, dst: Handle, value: number, count: number, stream: Handle, elementBytes: 1 | 2 | 4): void;
  /** cuMemHostAlloc: an ArrayBuffer over page-locked host memory. */
  memHostAlloc(ctx: Handle, bytes: number, flags: number): ArrayBuffer;
  /** cuMemFreeHost; detaches the ArrayBuffer first, so no view can reach freed memory. */
  memFreeHost(buffer: ArrayBuffer): void;
  /** cuMemHostRegister: pins memory JavaScript already owns. */
  memHostRegister(ctx: Handle, view: ArrayBufferView | ArrayBuffer): void;
  /** cuMemHostGetDevicePointer: the device address of mapped pinned host memory. */
  memHostGetDevicePointer(ctx: Handle, buffer: ArrayBuffer | ArrayBufferView): Handle;
  /** cuMemHostUnregister: unpins memory pinned with memHostRegister. */
  memHostUnregister(ctx: Handle, view: ArrayBufferView | ArrayBuffer): void;
  /**
   * A host-to-device copy of pageable memory through pinned staging buffers, `chunkBytes` at a time on `threads`
   * threads (more than one CUDA call).
   */
  memcpyHtoDStaged(
    ctx: Handle,
    dst: Handle,
    src: ArrayBufferView,
    stream: Handle,
    chunkBytes: number,
    threads: number,
  ): void;
  /**
   * A device-to-host copy into pageable memory through pinned staging buffers, `chunkBytes` at a time on `threads`
   * threads (more than one CUDA call).
   */
  memcpyDtoHStaged(
    ctx: Handle,
    dst: ArrayBufferView,
    src: Handle,
    stream: Handle,
    chunkBytes: number,
    threads: number,
  ): void;
  // program.cc
  /** nvrtcVersion: [major, minor]. */
  nvrtcVersion(): [number, number];
  /**
   * nvrtcGetSupportedArchs: the architectures this NVRTC compiles for (90 for sm_90); empty when it predates the call.
   */
  nvrtcGetSupportedArchs(): number[];
  /**
   * A whole NVRTC compile (create, add name expressions, compile, get the code, the log and the lowered names,
   * destroy); an NVRTC failure is reported in the result, not thrown.
   */
  compileProgram(spec: CompileSpec): CompileOutput;
  /** compileProgram on a libuv pool thread. */
  compileProgramAsync(spec: CompileSpec): Promise<CompileOutput>;
  // module.cc
  /** cuModuleLoadDataEx with [CUjit_option, value] pairs: [module, the JIT's info log]. */
  moduleLoadData(ctx: Handle, image: ArrayBufferView, jitOptions: [number, number][]): [Handle, string];
  /** cuModuleUnload. */
  moduleUnload(module: Handle): void;
  /** cuModuleGetFunction: the kernel of that (lowered) name. */
  moduleGetFunction(ctx: Handle, module: Handle, name: string): Handle;
  /** cuModuleGetGlobal: [address, bytes] of a `__device__` or `__constant__` variable. */
  moduleGetGlobal(ctx: Handle, module: Handle, name: string): [Handle, number];
  /** cuFuncGetAttribute, by CUfunction_attribute number. */
  funcGetAttribute(ctx: Handle, fn: Handle, attribute: number): number;
  /** cuFuncSetAttribute, by CUfunction_attribute number. */
  funcSetAttribute(ctx: Handle, fn: Handle, attribute: number, value: number): void;
  /** cuFuncGetParamInfo for parameters 0 to count - 1: [offset, size] each, or null where the driver lacks the call. */
  funcGetParamInfo(ctx: Handle, fn: Handle, count: number): [number, number][] | null;
  /** cuOccupancyMaxActiveBlocksPerMultiprocessor. */
  occupancyMaxActiveBlocksPerMultiprocessor(ctx: Handle, fn: Handle, blockSize: number, smemBytes: number): number;
  /** cuOccupancyMaxPotentialBlockSize: [minGridSize, blockSize]. */
  occupancyMaxPotentialBlockSize(ctx: Handle, fn: Handle, smemBytes: number, blockSizeLimit: number): [number, number];
  // kernel.cc
  /**
   * A launch slot for `fn`: its parameters are read from `buffer` at `paramOffsets` at every launch (layout:
   * native/common.h). Returns the slot's id.
   */
  kernelSlotCreate(ctx: Handle, fn: Handle, buffer: ArrayBuffer, paramOffsets: number[]): number;
  /** Releases a launch slot. */
  kernelSlotDestroy(slot: number): void;
  /**
   * The slot's launch as its header says (layout: native/common.h): cuLaunchKernel, or cuLaunchKernelEx when the
   * header carries launch attributes (cooperative, cluster dimensions).
   */
  launchKernel(slot: number): void;
  /** cuLaunchKernelEx with these launch attributes instead of the header's. */
  launchKernelEx(slot: number, cooperative: boolean, clusterX: number, clusterY: number, clusterZ: number): void;
  // bench.cc
  /** Takes one batch of benchmark samples (more than one CUDA call): [gpuMs, launchUs, clockMHz] per sample. */
  benchSamples(spec: BenchSpec, flagHost: Int32Array): Float64Array;
  // cupti.cc
  /** Loads CUPTI from the first of `candidates` that opens and has the activity API (once); never throws. */
  cuptiLoad(candidates: string[]): CuptiLoadStatus;
  /**
   * Enables these CUpti_ActivityKind values (registering the buffer callbacks once), dropping records left from an
   * earlier trace. Throws an Error with code 'CUDAKIT_CUPTI' naming the CUPTI call and result.
   */
  cuptiActivityStart(kinds: number[]): void;
  /**
   * Flushes every activity buffer (forced), disables the kinds and returns the records since start: six numbers
   * each (kind, streamId, correlationId, name index or -1, start ns, end ns; times after the earliest start).
   */
  cuptiActivityStop(kinds: number[]): CuptiRecords;
  // stream.cc
  /** cuStreamCreateWithPriority. */
  streamCreate(ctx: Handle, flags: number, priority: number): Handle;
  /** cuStreamDestroy. */
  streamDestroy(stream: Handle): void;
  /** cuStreamSynchronize. */
  streamSynchronize(ctx: Handle, stream: Handle): void;
  /** cuStreamQuery: true when all work is done, false while some is pending. */
  streamQuery(ctx: Handle, stream: Handle): boolean;
  /** cuStreamWaitEvent. */
  streamWaitEvent(ctx: Handle, stream: Handle, event: Handle): void;
  /** cuStreamBeginCapture, by CUstreamCaptureMode number. */
  streamBeginCapture(ctx: Handle, stream: Handle, mode: number): void;
  /** cuStreamEndCapture: the captured graph. */
  streamEndCapture(ctx: Handle, stream: Handle): Handle;
  // event.cc
  /** cuEventCreate, by CUevent_flags. */
  eventCreate(ctx: Handle, flags: number): Handle;
  /** cuEventDestroy. */
  eventDestroy(event: Handle): void;
  /** cuEventRecord. */
  eventRecord(ctx: Handle, event: Handle, stream: Handle): void;
  /** cuEventSynchronize. */
  eventSynchronize(ctx: Handle, event: Handle): void;
  /** cuEventQuery: true when the event has completed. */
  eventQuery(ctx: Handle, event: Handle): boolean;
  /** cuEventElapsedTime: milliseconds between two recorded events. */
  eventElapsedTime(ctx: Handle, start: Handle, end: Handle): number;
  /**
   * Promise waits never block a libuv pool thread. With a `waitId` (a positive integer of the caller's, unique
   * among its waits in flight), `waitAbandon(waitId)` lets the wait go: its promise then resolves unobserved
   * whenever the GPU gets there, and no longer keeps the process alive.
   */
  eventWaitAsync(ctx: Handle, event: Handle, waitId?: number): Promise<void>;
  /**
   * Resolves when all work queued on `stream` so far is done (an event recorded on it, waited for like eventWaitAsync).
   */
  streamSynchronizeAsync(ctx: Handle, stream: Handle, waitId?: number): Promise<void>;
  /** cuCtxSynchronize on a thread of cudakit's own (one per thread that uses cudakit), not a libuv pool thread. */
  ctxSynchronizeAsync(ctx: Handle, waitId?: number): Promise<void>;
  /** Lets a wait go (see eventWaitAsync): true when it was still in flight. */
  waitAbandon(waitId: number): boolean;
  // graph.cc
  /** cuGraphInstantiateWithFlags: an executable graph. */
  graphInstantiate(ctx: Handle, graph: Handle): Handle;
  /** cuGraphLaunch. */
  graphLaunch(ctx: Handle, exec: Handle, stream: Handle): void;
  /** cuGraphGetNodes: the number of nodes. */
  graphGetNodeCount(ctx: Handle, graph: Handle): number;
  /** cuGraphDestroy. */
  graphDestroy(graph: Handle): void;
  /** cuGraphExecDestroy. */
  graphExecDestroy(exec: Handle): void;
}

const packageRoot = fileURLToPath(new URL('../..', import.meta.url));
let loaded: Native | undefined;
let loadFailure: Error | undefined;

/**
 * Why the addon itself (not CUDA) could not be loaded: where node-gyp-build looked, why it failed, and what to
 * install.
 */
function addonError(cause: unknown): Error {
  const reason = cause instanceof Error ? cause.message : String(cause);
  const platform = `${process.platform}-${process.arch}`;
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  const glibc = report?.header?.glibcVersionRuntime;
  const prebuilds = join(packageRoot, 'prebuilds');
  const shipped = existsSync(prebuilds) ? readdirSync(prebuilds).filter((d) => !d.startsWith('.')) : [];
  return codedError(
    `cudakit: the native addon could not be loaded (${platform}, ${glibc ? `glibc ${glibc}, ` : ''}` +
      `Node ${process.version}).\n` +
      `  Tried: ${join(packageRoot, 'build', 'Release')} (a build from source), then ` +
      `${join(prebuilds, platform)} (the prebuild).\n` +
      `  Failed: ${reason.split('\n')[0]}\n` +
      '  Remedy: with a C++17 compiler, make and python3 on PATH, run `npm rebuild cudakit` (it compiles the addon;\n' +
      '  no CUDA toolkit is needed), or `npm run build:native` in its folder. This package has prebuilds for: ' +
      `${shipped.length > 0 ? shipped.join(', ') : 'none'} (glibc 2.28 or newer).`,
    'ADDON_NOT_LOADED',
    { cause },
  );
}

/** The raw addon. Loading it needs no CUDA; a missing build throws an Error with code ADDON_NOT_LOADED. */
export function getNative(): Native {
  if (loaded !== undefined) return loaded;
  if (loadFailure !== undefined) throw loadFailure;
  try {
    const require = createRequire(import.meta.url);
    const load = require('node-gyp-build') as (dir: string) => Native;
    // A copy: V8 keeps the addon's exports (about 90 functions, set one by one) as a hash table, so every native
    // call would look its method up by hashing; a spread copy has fast properties, which inline caches read directly.
    const n: Native = { ...load(packageRoot) };
    // Every error the addon raises is built by errors.ts from here on, so it is a CudaError or a CompileError.
    n.setErrorFactory(errorFromNative);
    // These two throw plain coded Errors of their own (a CUPTI refusal, the bench hold's time-out): they gain
    // codeNext here, so that the raw layer's errors carry it as the classes' do.
    const benchSamples = n.benchSamples;
    const cuptiActivityStart = n.cuptiActivityStart;
    n.benchSamples = (spec, flagHost) => {
      try {
        return benchSamples(spec, flagHost);
      } catch (e) {
        throw withCodeNext(e);
      }
    };
    n.cuptiActivityStart = (kinds) => {
      try {
        cuptiActivityStart(kinds);
      } catch (e) {
        throw withCodeNext(e);
      }
    };
    loaded = n;
    return loaded;
  } catch (e) {
    loadFailure = addonError(e);
    throw loadFailure;
  }
}
