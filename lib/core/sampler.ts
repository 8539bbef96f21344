// SPDX-License-Identifier: MIT
// The sampler: the TypeScript side of native/bench.cc, and everything timing needs from the native layer and the
// core's internals, behind a small API for the measure layer (bench(), compare()). One Sampler per device holds the
// harness: its own non-blocking stream, helper kernels (the spin kernel that holds the stream, the L2 flush, the
// clock probe, a copy kernel), the L2 flush buffer and a host-mapped flag. The measure layer decides what to time
// and when to stop; the sampler binds launches and takes samples.
//
//   const sampler = Sampler.for(device);
//   const bound = sampler.bind(kernel, config, args);        // exactly kernel.launch(config, ...args), on its stream
//   bound.launch();                                           // once, untimed: lazily loaded code loads now
//   const samples = sampler.take({ launches: [bound], order: [0, 0, 0], flushL2: true });
//   bound.release();
//
// Method: docs/benchmarking.md ('Timing modes', 'The L2 flush', 'Hiding launch latency', 'Clock and throttling').
import type { Device } from './device.js';
import type { GraphExec } from './graph.js';
import type { Kernel, LaunchConfig } from './kernel.js';
import type { DeviceBuffer } from './memory.js';
import { type BenchSpec, getNative } from './native.js';
import { Program } from './program.js';
import type { Stream } from './stream.js';
import { typeError } from './validate.js';

/** @internal The harness's helper kernels (compiled once per device; test/nvrtc/sampler.test.ts compiles it too). */
export const SAMPLER_SOURCE = `
extern "C" __global__ void cudakit_block(volatile int* flag, unsigned long long timeoutNs) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (flag[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeoutNs) { flag[1] = 1; return; }
  }
}
extern "C" __global__ void cudakit_flush(const int4* p, long long n, int* sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    int4 v = p[i];
    acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
  }
  if ((acc.x & acc.y & acc.z & acc.w) == 0x7fffffff) *sink = acc.x; // never true for a zeroed buffer; keeps the loads
}
extern "C" __global__ void cudakit_copy(const int4* __restrict__ src, int4* __restrict__ dst, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
extern "C" __global__ void cudakit_idle(int* unused) {}
extern "C" __global__ void cudakit_clock_probe(unsigned long long* out) {
  unsigned int smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (smid == 0 && threadIdx.x == 0) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    out[0] = t;
    out[1] = clock64();
  }
}`;

/** @internal The helper kernels' signatures, as getKernel checks them against the compiled parameters. */
export const SAMPLER_KERNELS = {
  block: ['cudakit_block', ['ptr', 'u64']],
  probe: ['cudakit_clock_probe', ['ptr']],
  flush: ['cudakit_flush', ['ptr', 'i64', 'ptr']],
  copy: ['cudakit_copy', ['ptr', 'ptr', 'i64']],
  idle: ['cudakit_idle', ['ptr']],
} as const;

/** @internal The clock probe's name: it runs right before each sample's start event and after its stop event. */
export const PROBE_KERNEL = SAMPLER_KERNELS.probe[0];

const CU_MEMHOSTALLOC_PORTABLE_DEVICEMAP = 3;
const CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 6;
/** How long the spin kernel holds the stream at most before it gives up (and the batch fails as a timeout). */
const BLOCK_TIMEOUT_NS = 5e9;
/** Empty event pairs measured for eventOverheadMs(). */
const OVERHEAD_SAMPLES = 200;
/** The drift probe: replays of a graph of DRIFT_LAUNCHES launches of the idle kernel (a few ms in all). */
const DRIFT_REPLAYS = 20;
const DRIFT_LAUNCHES = 100;

/** What one drift probe read (Sampler.driftProbe). */
export interface DriftProbe {
  /** GPU time per launch of the idle kernel, µs: the median over the replays. */
  usPerLaunch: number;
  /** The 95 % confidence interval of that median, relative to it (the probe's own noise). */
  relCI: number;
}

/**
 * A launch bound for timing, made by `sampler.bind()`: a launch slot of its own holding the configuration and the
 * arguments, launched by native code between the events exactly as kernel.launch() would launch it (cooperative and
 * clusterDim included), on the sampler's stream.
 */
export class BoundLaunch {
  readonly kernel: Kernel;
  /** @internal The native launch slot. */
  readonly slot: number;
  /** @internal */
  readonly sampler: Sampler;
  readonly #release: () => void;

  /** @internal */
  constructor(sampler: Sampler, kernel: Kernel, bound: { slot: number; release: () => void }) {
    this.sampler = sampler;
    this.kernel = kernel;
    this.slot = bound.slot;
    this.#release = bound.release;
  }

  /** Enqueues it once, untimed, on the sampler's stream (a warm-up launch, or a launch inside a graph capture). */
  launch(): void {
    getNative().launchKernel(this.slot);
  }

  /** Frees its launch slot; idempotent. */
  release(): void {
    this.#release();
  }
}

/** One sample as native/bench.cc measured it. */
export interface RawSample {
  /** GPU time between the start and the stop event, milliseconds (a graph replay: all its launches). */
  gpuMs: number;
  /** Host time of the launch call (cuLaunchKernel, cuLaunchKernelEx or cuGraphLaunch), microseconds. */
  launchUs: number;
  /** The SM clock over the sample (clock64 over %globaltimer on SM 0), MHz; 0 when it could not be measured. */
  clockMHz: number;
  /** The epoch the sample's refresh launches read (SampleRequest.refresh); undefined without them. */
  epoch?: number;
}

/**
 * What sampler.take() runs between the events of each sample. With neither launches nor a graph, nothing: the
 * samples then measure the event pair's own cost.
 */
export interface SampleRequest {
  /** Bound launches of this sampler; sample i launches `launches[order[i]]`. */
  launches?: readonly BoundLaunch[];
  /** A graph replayed once per sample instead (launches and order's values are then ignored). */
  graph?: GraphExec;
  /** One entry per sample: which bound launch it times. Its length is the number of samples. */
  order: readonly number[];
  /** Before every sample: reset persisting L2 lines and flush L2 by reading 2 × L2 of other data ('cold' timing). */
  flushL2: boolean;
  /**
   * Hold the stream behind the spin kernel while the sample is queued, so launch latency is hidden (default true).
   * Off where something serializes kernels (profilers, sanitizers): samples then include launch latency.
   */
  hold?: boolean;
  /**
   * Per bound launch (input set): launches run before each of its samples, outside the timed interval, after the
   * sample's epoch (see Sampler.epochPtr) is written; they regenerate that set's inputs. Ignored with a graph.
   */
  refresh?: readonly (readonly BoundLaunch[])[];
  /**
   * Samples whose outputs to keep: after sample `sample` has run (its events and probes done, outside the timed
   * interval), each copy runs device to device on the sampler's stream, before anything of the next sample.
   */
  snapshots?: readonly SampleSnapshot[];
}

/** SampleRequest.snapshots: a sample, and the device copies that keep what it wrote. */
export interface SampleSnapshot {
  /** Its index in the request's order. */
  sample: number;
  /** Device to device copies: from the sample's output buffers into buffers of the caller's. */
  copies: readonly { from: bigint; to: bigint; bytes: number }[];
}

/**
 * @internal What `enqueue` enqueues on `stream`, captured (thread-local mode) into a graph and instantiated; the graph
 * itself is disposed. When `enqueue` throws, the capture it broke is ended (its own failure to end, which a capture the
 * work invalidated may have, dropped) and the error rethrown. Dispose the GraphExec when done.
 */
export function captureExec(stream: Stream, enqueue: () => void): GraphExec {
  stream.beginCapture({ mode: 'threadLocal' });
  try {
    enqueue();
  } catch (e) {
    try {
      stream.endCapture().dispose();
    } catch {
      // a capture the work invalidated may not end cleanly: the work's failure is what to report
    }
    throw e;
  }
  const g = stream.endCapture();
  try {
    return g.instantiate();
  } finally {
    g.dispose();
  }
}

const samplers = new Map<Device, Sampler>();

/** A device's timing harness; `Sampler.for(device)` makes it on first use and returns the same one after. */
export class Sampler {
  readonly device: Device;
  /** The sampler's own non-blocking stream: bound launches, helper kernels and samples run on it. */
  readonly stream: Stream;
  readonly #spec: BenchSpec;
  readonly #flagHost: Int32Array;
  readonly #flushKernel: Kernel<readonly ['ptr', 'i64', 'ptr']>;
  readonly #copyKernel: Kernel<readonly ['ptr', 'ptr', 'i64']>;
  readonly #sinkPtr: bigint;
  readonly #flushBuffer: DeviceBuffer;
  readonly #idleKernel: Kernel<readonly ['ptr']>;
  #driftGraph: GraphExec | undefined;
  /** Whether the drift probe holds its stream: not where a CUDA tool is injected (it serializes kernels). */
  #driftHold = !process.env.CUDA_INJECTION64_PATH;
  #eventOverheadMs: number | undefined;
  /** The next sample's epoch (SampleRequest.refresh). */
  #epoch = 1;
  /** @internal Device address of the u32 epoch the refresh launches of a sample read. */
  readonly epochPtr: bigint;
  // Owners of the handles in #spec: kept reachable for the life of the process.
  readonly #keep: unknown[];

  /** The device's sampler, made on first use (compiling the helper kernels, allocating 2 × L2 and the flag). */
  static for(device: Device): Sampler {
    let s = samplers.get(device);
    if (s === undefined) {
      s = new Sampler(device);
      samplers.set(device, s);
    }
    return s;
  }

  private constructor(device: Device) {
    const n = getNative();
    const code = new Program(SAMPLER_SOURCE, { name: 'cudakit_bench.cu' }).compile({ cudaIncludes: false });
    const module = device.loadModule(code);
    const block = module.getKernel(...SAMPLER_KERNELS.block);
    const probe = module.getKernel(...SAMPLER_KERNELS.probe);
    this.#flushKernel = module.getKernel(...SAMPLER_KERNELS.flush);
    this.#copyKernel = module.getKernel(...SAMPLER_KERNELS.copy);
    this.#idleKernel = module.getKernel(...SAMPLER_KERNELS.idle);
    this.device = device;
    this.stream = device.createStream({ nonBlocking: true });
    // 2 × L2: a margin, since the cache's replacement order is not documented (docs/benchmarking.md, 'The L2 flush').
    const flush = device.alloc(2 * device.l2CacheBytes).fill(0);
    const probeOut = device.alloc(48); // [0..32) probes, [32..36) the flush kernel's sink, [40..44) the epoch
    const flagBuffer = n.memHostAlloc(device.ctx, 8, CU_MEMHOSTALLOC_PORTABLE_DEVICEMAP);
    try {
      n.ctxSetLimit(device.ctx, CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0); // no persisting lines survive a flush
    } catch {
      // devices without persisting L2 (before Ampere) have nothing to reset
    }
    this.#flagHost = new Int32Array(flagBuffer);
    this.#sinkPtr = probeOut.ptr + 32n;
    this.epochPtr = probeOut.ptr + 40n;
    this.#flushBuffer = flush;
    this.#spec = {
      ctx: device.ctx,
      stream: this.stream.handle,
      slots: [],
      order: [],
      flush: false,
      graph: 0n,
      flushPtr: flush.ptr,
      flushVectors: flush.byteLength / 16,
      flushFn: this.#flushKernel.handle,
      flushBlocks: 4 * device.multiprocessorCount,
      sinkPtr: this.#sinkPtr,
      blockFn: block.handle,
      probeFn: probe.handle,
      probeBlocks: device.multiprocessorCount,
      probeOut: probeOut.ptr,
      flagDev: n.memHostGetDevicePointer(device.ctx, flagBuffer),
      timeoutNs: BLOCK_TIMEOUT_NS,
    };
    this.#keep = [module, block, probe, flush, probeOut, flagBuffer];
  }

  /**
   * Binds `kernel.launch(config, ...args)` for timing: validated by the same rules as launch() (TypeError /
   * RangeError), on the sampler's stream whatever `config.stream` says, with its launch attributes (cooperative,
   * clusterDim). Release it when done.
   */
  bind(kernel: Kernel, config: LaunchConfig, args: readonly unknown[]): BoundLaunch {
    if (!Array.isArray(args)) throw typeError('args', 'an array of kernel arguments', args);
    return new BoundLaunch(this, kernel, kernel.bindLaunch({ ...config, stream: this.stream }, args));
  }

  /**
   * Captures `count` launches, rotating through `launches`, into one graph on the sampler's stream and
   * instantiates it ('graph' timing: one replay per sample). Dispose the GraphExec when done.
   */
  capture(launches: readonly BoundLaunch[], count: number): GraphExec {
    this.#own(launches);
    const s = this.stream;
    return captureExec(s, () => {
      for (let i = 0; i < count; i++) launches[i % launches.length]!.launch();
    });
  }

  /**
   * Takes one sample per entry of `request.order`, natively: no JavaScript runs between a start and a stop event.
   * Throws a CudaError naming the failed call (a kernel that faults, a launch the driver refuses), and an Error with
   * code 'CUDAKIT_BENCH_TIMEOUT' when the spin kernel timed out because something serialized the stream (a
   * profiler or sanitizer: take the samples again with `hold: false`).
   */
  take(request: SampleRequest): RawSample[] {
    const launches = request.launches ?? [];
    this.#own(launches);
    const graph = request.graph?.handle ?? 0n;
    const refresh = graph === 0n && launches.length > 0 ? request.refresh : undefined;
    if (refresh !== undefined) {
      if (refresh.length !== launches.length) {
        throw new RangeError(
          `Expected refresh launches for each of the ${launches.length} launches but received ${refresh.length}`,
        );
      }
      for (const r of refresh) this.#own(r);
    }
    const count = request.order.length;
    // Epochs from 1 (0 reads as 'no epoch' in the fill kernel), wrapping within u32.
    if (refresh !== undefined && this.#epoch + count > 0xffffffff) this.#epoch = 1;
    const epochBase = this.#epoch;
    const raw = getNative().benchSamples(
      {
        ...this.#spec,
        slots: launches.map((b) => b.slot),
        order: [...request.order],
        flush: request.flushL2,
        graph,
        empty: launches.length === 0 && graph === 0n,
        noBlock: request.hold === false,
        ...(refresh !== undefined
          ? { refresh: refresh.map((r) => r.map((b) => b.slot)), epochPtr: this.epochPtr, epochBase }
          : {}),
        ...(request.snapshots !== undefined && request.snapshots.length > 0
          ? {
              snapshots: request.snapshots.map((x) => ({
                sample: x.sample,
                copies: x.copies.map((c): [bigint, bigint, number] => [c.from, c.to, c.bytes]),
              })),
            }
          : {}),
      },
      this.#flagHost,
    );
    if (refresh !== undefined) this.#epoch += count;
    const out: RawSample[] = [];
    for (let i = 0; i < count; i++) {
      const sample: RawSample = { gpuMs: raw[i * 3]!, launchUs: raw[i * 3 + 1]!, clockMHz: raw[i * 3 + 2]! };
      if (refresh !== undefined) sample.epoch = epochBase + i;
      out.push(sample);
    }
    return out;
  }

  /** The GPU time of an empty event pair (median of 200), measured once: what every sample holds besides the kernel. */
  eventOverheadMs(): number {
    if (this.#eventOverheadMs === undefined) {
      const ms = this.take({ order: new Array<number>(OVERHEAD_SAMPLES).fill(0), flushL2: false })
        .map((s) => s.gpuMs)
        .sort((a, b) => a - b);
      this.#eventOverheadMs = ms[OVERHEAD_SAMPLES / 2]!;
    }
    return this.#eventOverheadMs;
  }

  /**
   * Cold timing's L2 flush outside a sample, as the native loop does it before each one: persisting lines reset, 2 ×
   * L2 of other data read by the flush kernel, the stream synchronized (a function target's samples, work.ts).
   */
  flushL2(): void {
    try {
      getNative().ctxResetPersistingL2Cache(this.device.ctx);
    } catch {
      // devices without persisting L2 (before Ampere) have nothing to reset
    }
    this.readByKernel(this.#flushBuffer, this.#flushBuffer.byteLength);
    this.stream.synchronize();
  }

  /**
   * A fixed tiny probe of the GPU's state: replays of one graph of 100 launches of an empty kernel, timed as samples
   * are (held stream, events), a few ms in all. What it reads is the GPU's launch rate, which is what changes when the
   * GPU drifts into a slower state (docs/benchmarking.md, 'Drift'); bench() takes it before and after each run.
   */
  driftProbe(): DriftProbe {
    if (this.#driftGraph === undefined) {
      const s = this.stream;
      this.#driftGraph = captureExec(s, () => {
        for (let i = 0; i < DRIFT_LAUNCHES; i++) this.#idleKernel.launch({ grid: 1, block: 32, stream: s }, 0n);
      });
      this.#driftGraph.launch(s); // the first replay uploads the graph: not part of any probe
      s.synchronize();
    }
    const graph = this.#driftGraph;
    const order = new Array<number>(DRIFT_REPLAYS).fill(0);
    let raw: RawSample[];
    try {
      raw = this.take({ graph, order, flushL2: false, hold: this.#driftHold });
    } catch (e) {
      if ((e as { code?: string }).code !== 'CUDAKIT_BENCH_TIMEOUT' || !this.#driftHold) throw e;
      this.#driftHold = false; // something serializes kernels: probe unheld from now on
      raw = this.take({ graph, order, flushL2: false, hold: false });
    }
    const us = raw.map((x) => (x.gpuMs * 1000) / DRIFT_LAUNCHES).sort((a, b) => a - b);
    const at = (q: number): number => us[Math.min(us.length - 1, Math.floor(q * us.length))]!;
    const median = at(0.5);
    // The median's 95 % interval from the interquartile range (normal approximation): 1.57 × IQR / √n.
    return { usPerLaunch: median, relCI: (1.57 * (at(0.75) - at(0.25))) / Math.sqrt(us.length) / median };
  }

  /** Enqueues a 16-byte-vector copy kernel over `bytes` (a multiple of 16) from `src` to `dst`, on the stream. */
  copyByKernel(src: DeviceBuffer, dst: DeviceBuffer, bytes: number): void {
    this.#copyKernel.launch(this.#helperConfig(), src.ptr, dst.ptr, BigInt(bytes / 16));
  }

  /** Enqueues a 16-byte-vector read of `bytes` (a multiple of 16) of `src` (the flush kernel), on the stream. */
  readByKernel(src: DeviceBuffer, bytes: number): void {
    this.#flushKernel.launch(this.#helperConfig(), src.ptr, BigInt(bytes / 16), this.#sinkPtr);
  }

  /** The driver's CUDA version, e.g. '12.8'. */
  get driverVersion(): string {
    const v = getNative().driverGetVersion();
    return `${Math.floor(v / 1000)}.${(v % 1000) / 10}`;
  }

  #helperConfig(): LaunchConfig {
    return { grid: 8 * this.device.multiprocessorCount, block: 256, stream: this.stream };
  }

  #own(launches: readonly BoundLaunch[]): void {
    for (const b of launches) {
      if (!(b instanceof BoundLaunch) || b.sampler !== this) {
        throw typeError('launches[]', "launches bound by this device's sampler", b);
      }
    }
  }
}
