// SPDX-License-Identifier: MIT
// Loads the addon (no CUDA needed for that) and types every native export. This is also the raw layer:
// `import { native } from 'cudakit'` gives one-to-one CUDA calls with bigint handles and no policy.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** A CUDA handle (context, stream, event, module, function, graph) or a device address. */
export type Handle = bigint;

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
  code?: Buffer;
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
}

export interface NativeStats {
  deviceAllocations: number;
  deviceBytes: number;
  hostAllocations: number;
  hostBytes: number;
  hostRegistrations: number;
  modules: number;
  streams: number;
  events: number;
  graphs: number;
  graphExecs: number;
  kernelSlots: number;
}

type ErrorFactory = (
  kind: 'cuda' | 'nvrtc' | 'loader',
  code: string,
  api: string,
  result: number,
  message: string,
  extra: unknown,
) => Error;

/** Every native export; names copy the CUDA symbol without its prefix. */
export interface Native {
  setErrorFactory(fn: ErrorFactory): void;
  driverStatus(): LibraryStatus;
  nvrtcStatus(): LibraryStatus;
  getErrorName(result: number): string;
  getErrorString(result: number): string;
  stats(): NativeStats;
  /** Does nothing: the cost of one N-API call, for benchmarks. */
  nop(): void;
  // device.cc
  driverGetVersion(): number;
  deviceGetCount(): number;
  deviceGet(ordinal: number): number;
  deviceGetName(device: number): string;
  deviceGetUuid(device: number): string;
  deviceGetPCIBusId(device: number): string;
  deviceGetAttribute(device: number, attribute: number): number;
  deviceTotalMem(device: number): number;
  /** cuDeviceCanAccessPeer: whether `device` can access `peerDevice`'s memory directly. */
  deviceCanAccessPeer(device: number, peerDevice: number): boolean;
  devicePrimaryCtxRetain(device: number): Handle;
  devicePrimaryCtxRetainAsync(device: number): Promise<Handle>;
  ctxSynchronize(ctx: Handle): void;
  memGetInfo(ctx: Handle): [number, number];
  ctxSetLimit(ctx: Handle, limit: number, value: number | bigint): void;
  ctxGetLimit(ctx: Handle, limit: number): number;
  ctxResetPersistingL2Cache(ctx: Handle): void;
  ctxGetStreamPriorityRange(ctx: Handle): [number, number];
  /** cuCtxEnablePeerAccess with `ctx` current: `ctx` may then access memory allocated in `peerCtx`. */
  ctxEnablePeerAccess(ctx: Handle, peerCtx: Handle): void;
  deviceGetDefaultMemPool(device: number): Handle;
  /** 64-bit attributes (RELEASE_THRESHOLD = 4 and the byte counters after it) take and return bigint. */
  memPoolSetAttribute(pool: Handle, attribute: number, value: number | bigint): void;
  memPoolGetAttribute(pool: Handle, attribute: number): number | bigint;
  memPoolTrimTo(pool: Handle, minBytesToKeep: number | bigint): void;
  /** cuMemPoolSetAccess with one descriptor: `device`'s access to the pool's allocations (0 none, 1 read, 3 rw). */
  memPoolSetAccess(pool: Handle, device: number, flags: number): void;
  // memory.cc
  memAlloc(ctx: Handle, bytes: number): Handle;
  memAllocAsync(ctx: Handle, bytes: number, stream: Handle): Handle;
  memFree(ptr: Handle): void;
  memFreeAsync(ptr: Handle, stream: Handle): void;
  memcpyHtoD(ctx: Handle, dst: Handle, src: ArrayBufferView | ArrayBuffer, stream?: Handle): void;
  memcpyDtoH(ctx: Handle, dst: ArrayBufferView | ArrayBuffer, src: Handle, stream?: Handle): void;
  memcpyDtoD(ctx: Handle, dst: Handle, src: Handle, bytes: number, stream?: Handle): void;
  /** cuMemcpyPeer, or cuMemcpyPeerAsync on `stream` (a stream of dstCtx); dstCtx is bound first. */
  memcpyPeer(dstCtx: Handle, dst: Handle, srcCtx: Handle, src: Handle, bytes: number, stream?: Handle): void;
  memsetAsync(ctx: Handle, dst: Handle, value: number, count: number, stream: Handle, elementBytes: 1 | 2 | 4): void;
  memHostAlloc(ctx: Handle, bytes: number, flags: number): ArrayBuffer;
  memFreeHost(buffer: ArrayBuffer): void;
  memHostRegister(ctx: Handle, view: ArrayBufferView | ArrayBuffer): void;
  memHostGetDevicePointer(ctx: Handle, buffer: ArrayBuffer | ArrayBufferView): Handle;
  memHostUnregister(ctx: Handle, view: ArrayBufferView | ArrayBuffer): void;
  memcpyHtoDStaged(
    ctx: Handle,
    dst: Handle,
    src: ArrayBufferView,
    stream: Handle,
    chunkBytes: number,
    threads: number,
  ): void;
  memcpyDtoHStaged(
    ctx: Handle,
    dst: ArrayBufferView,
    src: Handle,
    stream: Handle,
    chunkBytes: number,
    threads: number,
  ): void;
  // program.cc
  nvrtcVersion(): [number, number];
  nvrtcGetSupportedArchs(): number[];
  compileProgram(spec: CompileSpec): CompileOutput;
  compileProgramAsync(spec: CompileSpec): Promise<CompileOutput>;
  // module.cc
  moduleLoadData(ctx: Handle, image: ArrayBufferView, jitOptions: [number, number][]): [Handle, string];
  moduleUnload(module: Handle): void;
  moduleGetFunction(ctx: Handle, module: Handle, name: string): Handle;
  moduleGetGlobal(ctx: Handle, module: Handle, name: string): [Handle, number];
  funcGetAttribute(ctx: Handle, fn: Handle, attribute: number): number;
  funcSetAttribute(ctx: Handle, fn: Handle, attribute: number, value: number): void;
  funcGetParamInfo(ctx: Handle, fn: Handle, count: number): [number, number][] | null;
  occupancyMaxActiveBlocksPerMultiprocessor(ctx: Handle, fn: Handle, blockSize: number, smemBytes: number): number;
  occupancyMaxPotentialBlockSize(ctx: Handle, fn: Handle, smemBytes: number, blockSizeLimit: number): [number, number];
  // kernel.cc
  kernelSlotCreate(ctx: Handle, fn: Handle, buffer: ArrayBuffer, paramOffsets: number[]): number;
  kernelSlotDestroy(slot: number): void;
  /**
   * The slot's launch as its header says (layout: native/common.h): cuLaunchKernel, or cuLaunchKernelEx when the
   * header carries launch attributes (cooperative, cluster dimensions).
   */
  launchKernel(slot: number): void;
  /** cuLaunchKernelEx with these launch attributes instead of the header's. */
  launchKernelEx(slot: number, cooperative: boolean, clusterX: number, clusterY: number, clusterZ: number): void;
  // bench.cc
  benchSamples(spec: BenchSpec, flagHost: Int32Array): Float64Array;
  // stream.cc
  streamCreate(ctx: Handle, flags: number, priority: number): Handle;
  streamDestroy(stream: Handle): void;
  streamSynchronize(ctx: Handle, stream: Handle): void;
  streamQuery(ctx: Handle, stream: Handle): boolean;
  streamWaitEvent(ctx: Handle, stream: Handle, event: Handle): void;
  streamBeginCapture(ctx: Handle, stream: Handle, mode: number): void;
  streamEndCapture(ctx: Handle, stream: Handle): Handle;
  // event.cc
  eventCreate(ctx: Handle, flags: number): Handle;
  eventDestroy(event: Handle): void;
  eventRecord(ctx: Handle, event: Handle, stream: Handle): void;
  eventSynchronize(ctx: Handle, event: Handle): void;
  eventQuery(ctx: Handle, event: Handle): boolean;
  eventElapsedTime(ctx: Handle, start: Handle, end: Handle): number;
  /**
   * Promise waits never block a libuv pool thread. With a `waitId` (a positive integer of the caller's, unique
   * among its waits in flight), `waitAbandon(waitId)` lets the wait go: its promise then resolves unobserved
   * whenever the GPU gets there, and no longer keeps the process alive.
   */
  eventWaitAsync(ctx: Handle, event: Handle, waitId?: number): Promise<void>;
  streamSynchronizeAsync(ctx: Handle, stream: Handle, waitId?: number): Promise<void>;
  /** cuCtxSynchronize on a thread of cudakit's own (one per thread that uses cudakit), not a libuv pool thread. */
  ctxSynchronizeAsync(ctx: Handle, waitId?: number): Promise<void>;
  waitAbandon(waitId: number): boolean;
  // graph.cc
  graphInstantiate(ctx: Handle, graph: Handle): Handle;
  graphLaunch(ctx: Handle, exec: Handle, stream: Handle): void;
  graphGetNodeCount(ctx: Handle, graph: Handle): number;
  graphDestroy(graph: Handle): void;
  graphExecDestroy(exec: Handle): void;
}

const packageRoot = fileURLToPath(new URL('../..', import.meta.url));
let loaded: Native | undefined;
let loadFailure: Error | undefined;

/** Why the addon itself (not CUDA) could not be loaded, with what to do about it. */
function addonError(cause: unknown): Error {
  const reason = cause instanceof Error ? cause.message : String(cause);
  const err = new Error(
    `cudakit: the native addon could not be loaded (${process.platform}-${process.arch}, Node ${process.version}).\n` +
      `  ${reason.split('\n')[0]}\n` +
      '  Remedy: build it from source with `npm run build:native` in the cudakit folder (needs a C++17 compiler and\n' +
      '  Node headers; no CUDA toolkit), or install a cudakit package that ships prebuilds for this platform.',
    { cause },
  );
  (err as Error & { code: string }).code = 'ADDON_NOT_LOADED';
  return err;
}

/** The raw addon. Loading it needs no CUDA; a missing build throws an Error with code ADDON_NOT_LOADED. */
export function getNative(): Native {
  if (loaded !== undefined) return loaded;
  if (loadFailure !== undefined) throw loadFailure;
  try {
    const require = createRequire(import.meta.url);
    const load = require('node-gyp-build') as (dir: string) => Native;
    loaded = load(packageRoot);
    onLoad(loaded);
    return loaded;
  } catch (e) {
    loadFailure = addonError(e);
    throw loadFailure;
  }
}

const loadHooks: ((n: Native) => void)[] = [];
function onLoad(n: Native): void {
  for (const hook of loadHooks) hook(n);
}
/** Runs `hook` once the addon is loaded (errors.ts registers its factory this way, without an import cycle). */
export function whenLoaded(hook: (n: Native) => void): void {
  loadHooks.push(hook);
  if (loaded !== undefined) hook(loaded);
}
