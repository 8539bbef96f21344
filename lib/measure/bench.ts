// SPDX-License-Identifier: MIT
// Timing kernels (benchmarking.md §8): bench() measures one kernel, compare() two in interleaved ABBA rounds.
// The samples are taken by native code (native/bench.cc) on a stream of the harness's own, with L2 flushed and the
// stream held behind a spin kernel so launch latency is hidden; this file picks what to run, rotates inputs,
// rejects throttled samples, applies the stopping rule and summarizes (lib/stats.ts).
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  BenchEnvironment, BenchMode, BenchResult, BenchSample, CompareResult, PeakBandwidthMethod, PresetName, Summary,
  Throughput,
} from './types.js';
import type { Device } from '../core/device.js';
import { CudaError, isContextLost } from '../core/errors.js';
import { Event } from '../core/event.js';
import type { ArgsFor, Kernel, LaunchConfig, Signature } from '../core/kernel.js';
import { type BenchSpec, getNative, type Handle } from '../core/native.js';
import { Program, nvrtcVersion } from '../core/program.js';
import {
  PRESETS, type PeakEstimate, type StoppingRule, bootstrapRatio, createRng, peakOf, percentOf, shouldStop, summarize,
  throttled, verdict,
} from './stats.js';
import type { Stream } from '../core/stream.js';
import { checkOptions, rangeError, typeError } from '../core/validate.js';

export type { BenchMode, BenchResult, CompareResult, PresetName } from './types.js';

/**
 * Arguments for every launch, or a generator of input sets (called with 0, 1, 2, ...) for rotation, such as
 * `inputSets(device, io).args` from lib/check.ts (untyped there: each value is still validated at bind time).
 */
export type BenchArgs<S extends Signature> = ArgsFor<S> | ((set: number) => ArgsFor<S> | readonly unknown[]);

export interface BenchOptions {
  /** 'cold' (default): L2 flushed before every sample; 'hot': no flush; 'graph': N launches per CUDA graph replay. */
  mode?: BenchMode;
  /** Stopping-rule preset (benchmarking.md §8.4). Default 'default'. */
  preset?: PresetName;
  /** Overrides of single stopping-rule fields, e.g. { timeoutMs: 2000 }. */
  rule?: Partial<StoppingRule>;
  /** Input sets drawn from a generator (default 4; at least 4 are used when args is a generator). */
  inputSets?: number;
  /** Bytes the kernel must move (for GB/s and % of peak). */
  bytes?: number;
  /** Floating-point operations per launch (for TFLOP/s). */
  flops?: number;
  /** Label in reports. Default: the kernel's name. */
  name?: string;
  /** Called after every batch of samples (the CLI draws its progress line with it). */
  onProgress?: (p: { samples: number; rejected: number; elapsedMs: number; relCI: number }) => void;
}

const SOURCE = `
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
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) dst[i] = src[i];
}
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

const CU_MEMHOSTALLOC_PORTABLE_DEVICEMAP = 3;
const CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 6;
const BLOCK_TIMEOUT_NS = 5e9;

interface Harness {
  device: Device;
  stream: Stream;
  blockFn: Handle;
  probeFn: Handle;
  flushFn: Handle;
  flushKernel: Kernel<readonly ['ptr', 'i64', 'ptr']>;
  copyKernel: Kernel<readonly ['ptr', 'ptr', 'i64']>;
  flushPtr: Handle;
  flushVectors: number;
  sinkPtr: Handle;
  flagHost: Int32Array;
  flagDev: Handle;
  probeOut: Handle;
  peak: PeakEstimate<PeakBandwidthMethod> | undefined;
  eventOverheadMs: number | undefined;
  keep: unknown[]; // owners of the handles above
}

const harnesses = new Map<Device, Harness>();

/** Per-device harness: helper kernels, its own non-blocking stream, the L2 flush buffer and the mapped flag. */
function harness(device: Device): Harness {
  const existing = harnesses.get(device);
  if (existing !== undefined) return existing;
  const n = getNative();
  const module = device.loadModule(new Program(SOURCE, { name: 'cudakit_bench.cu' }).compile({ cudaIncludes: false }));
  const block = module.getKernel('cudakit_block', ['ptr', 'u64']);
  const probe = module.getKernel('cudakit_clock_probe', ['ptr']);
  const flushKernel = module.getKernel('cudakit_flush', ['ptr', 'i64', 'ptr']);
  const copyKernel = module.getKernel('cudakit_copy', ['ptr', 'ptr', 'i64']);
  const stream = device.createStream({ nonBlocking: true });
  const flush = device.alloc(2 * device.l2CacheBytes).fill(0); // 2 × L2 (§8.3: 1 × suffices on H200, 2 × is insurance)
  const probeOut = device.alloc(48); // [0..32) probes, [32..36) the flush kernel's sink
  const flagBuffer = n.memHostAlloc(device.ctx, 8, CU_MEMHOSTALLOC_PORTABLE_DEVICEMAP);
  try {
    n.ctxSetLimit(device.ctx, CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0); // no persisting lines survive a flush
  } catch {
    // devices without persisting L2 (before Ampere) have nothing to reset
  }
  const h: Harness = {
    device,
    stream,
    blockFn: block.handle,
    probeFn: probe.handle,
    flushFn: flushKernel.handle,
    flushKernel,
    copyKernel,
    flushPtr: flush.ptr,
    flushVectors: flush.byteLength / 16,
    sinkPtr: probeOut.ptr + 32n,
    flagHost: new Int32Array(flagBuffer),
    flagDev: n.memHostGetDevicePointer(device.ctx, flagBuffer),
    probeOut: probeOut.ptr,
    peak: undefined,
    eventOverheadMs: undefined,
    keep: [module, block, probe, flushKernel, flush, probeOut, flagBuffer],
  };
  harnesses.set(device, h);
  return h;
}

/** Timed repetitions of each peak-bandwidth method (after two untimed runs). */
const PEAK_REPETITIONS = 20;

/**
 * The device's measured peak memory bandwidth (GB/s, bytes read + written), once per device: the best of a
 * copy-engine device-to-device copy, a 16-byte-vector copy kernel and a 16-byte-vector read-only stream, each over up
 * to 1 GiB (a quarter of free memory; far beyond L2). One memcpy alone is beaten by well-vectorized kernels; the best
 * of the three is what a kernel can realistically reach. The peak is a measurement too: each method runs
 * PEAK_REPETITIONS times, and the peak is the fastest method's median with the 95 % confidence interval of that
 * median, so a kernel at the peak can be told from one above it (see percentOf).
 */
function peakBandwidth(h: Harness): PeakEstimate<PeakBandwidthMethod> {
  if (h.peak !== undefined) return h.peak;
  const bytes = Math.max(16 << 20, Math.min(1 << 30, Math.floor(h.device.memoryInfo().freeBytes / 4 / 16) * 16));
  using a = h.device.alloc(bytes);
  using b = h.device.alloc(bytes);
  const vectors = BigInt(bytes / 16);
  const grid = { grid: 8 * h.device.multiprocessorCount, block: 256, stream: h.stream };
  const methods: [PeakBandwidthMethod, number, () => void][] = [
    ['memcpy', 2 * bytes, () => b.copyFrom(a, { stream: h.stream })],
    ['copy kernel', 2 * bytes, () => h.copyKernel.launch(grid, a.ptr, b.ptr, vectors)],
    ['read stream', bytes, () => h.flushKernel.launch(grid, a.ptr, vectors, h.sinkPtr)],
  ];
  const rates: Partial<Record<PeakBandwidthMethod, number[]>> = {};
  const e0 = h.stream.record();
  let e1: Event | undefined;
  let failed = true;
  try {
    e1 = h.stream.record();
    // One method at a time: interleaved, a read stream after a copy pays for the copy's dirty L2 lines (-7 % on an
    // H200). The first two runs of each warm clocks and TLBs.
    for (const [method, moved, enqueue] of methods) {
      const list: number[] = (rates[method] = []);
      for (let run = -2; run < PEAK_REPETITIONS; run++) {
        e0.record();
        enqueue();
        e1.record();
        const ms = Event.elapsedMs(e0, e1);
        if (run >= 0) list.push(moved / (ms * 1e-3) / 1e9);
      }
    }
    failed = false;
  } finally {
    release(failed, () => e0.dispose());
    release(failed, () => e1?.dispose());
  }
  h.peak = peakOf(rates as Record<PeakBandwidthMethod, number[]>);
  return h.peak;
}

/**
 * Cleanup that never hides the first error: while one is on its way out (`failing`), or once the context is lost
 * (nothing is left to release then), a failure to release is dropped.
 */
function release(failing: boolean, f: () => void): void {
  try {
    f();
  } catch (e) {
    if (!failing && !isContextLost(e)) throw e;
  }
}

/** A CudaError as the same error naming `phase` (CudaError.inPhase); anything else as it is. */
function named(e: unknown, phase: string): unknown {
  return e instanceof CudaError && e.phase === undefined ? CudaError.inPhase(e, phase) : e;
}

function samplesSpec(h: Harness, order: number[], flush: boolean): BenchSpec {
  return {
    ctx: h.device.ctx,
    stream: h.stream.handle,
    slots: [],
    order,
    flush,
    graph: 0n,
    flushPtr: h.flushPtr,
    flushVectors: h.flushVectors,
    flushFn: h.flushFn,
    flushBlocks: 4 * h.device.multiprocessorCount,
    sinkPtr: h.sinkPtr,
    blockFn: h.blockFn,
    probeFn: h.probeFn,
    probeBlocks: h.device.multiprocessorCount,
    probeOut: h.probeOut,
    flagDev: h.flagDev,
    timeoutNs: BLOCK_TIMEOUT_NS,
  };
}

/** The empty event pair's GPU time, measured once per device (median of 200). */
function eventOverhead(h: Harness): number {
  if (h.eventOverheadMs === undefined) {
    const raw = getNative().benchSamples({ ...samplesSpec(h, new Array<number>(200).fill(0), false), empty: true }, h.flagHost);
    const ms = Array.from({ length: 200 }, (_, i) => raw[i * 3]!).sort((a, b) => a - b);
    h.eventOverheadMs = ms[100]!;
  }
  return h.eventOverheadMs;
}

let cudakitVersion: string | undefined;
function environment(device: Device): BenchEnvironment {
  cudakitVersion ??= (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
  const v = getNative().driverGetVersion();
  let nvrtc: string | undefined;
  try {
    nvrtc = nvrtcVersion();
  } catch {
    nvrtc = undefined;
  }
  return {
    device: device.name,
    arch: device.arch,
    smCount: device.multiprocessorCount,
    l2Bytes: device.l2CacheBytes,
    maxClockMHz: device.clockRateKHz / 1000,
    driverVersion: `${Math.floor(v / 1000)}.${(v % 1000) / 10}`,
    nvrtcVersion: nvrtc,
    cudakitVersion,
    node: process.version,
    eventOverheadMs: eventOverhead(harness(device)),
  };
}

function resolveRule(preset: PresetName, overrides: Partial<StoppingRule> | undefined): StoppingRule {
  const base = PRESETS[preset];
  if (base === undefined) throw typeError('options.preset', "'quick', 'default' or 'rigorous'", preset);
  return { ...base, ...(overrides ?? {}) };
}

interface Run {
  samples: BenchSample[];
  accepted: number[];
  rejected: number;
  warmupRuns: number;
  wallMs: number;
  converged: boolean;
  stopReason: string;
  launchesPerSample: number;
  warnings: string[];
}

/** A prepared measurement: bound launch slots for every input set, ready to take samples. */
class Session {
  readonly h: Harness;
  readonly kernel: Kernel;
  readonly mode: BenchMode;
  readonly slots: { slot: number; release: () => void }[];
  graph: { exec: { handle: Handle; dispose(): void }; launches: number } | undefined;
  readonly rng = createRng(0x5eed);
  maxClockSeen = 0;
  /** Set when the spin kernel timed out (a profiler or sanitizer serializes kernels): samples are then taken unheld. */
  noBlock = false;
  readonly warnings: string[] = [];

  constructor(kernel: Kernel, config: LaunchConfig, args: unknown, mode: BenchMode, inputSets: number) {
    this.h = harness(kernel.device);
    this.kernel = kernel;
    this.mode = mode;
    const sets = typeof args === 'function' ? Math.max(4, inputSets) : 1;
    const cfg = { ...config, stream: this.h.stream };
    delete (cfg as { cooperative?: boolean }).cooperative;
    this.slots = [];
    try {
      for (let i = 0; i < sets; i++) {
        const a = typeof args === 'function' ? (args as (set: number) => unknown[])(i) : (args as unknown[]);
        if (!Array.isArray(a)) throw typeError('args', 'an array of kernel arguments (or a function returning one)', a);
        this.slots.push(kernel.bindLaunch(cfg, a));
      }
    } catch (e) {
      this.dispose(true);
      throw e;
    }
  }

  /** Plain launches first: lazily loaded kernels load now, never while the stream is held by the spin kernel. */
  prime(): void {
    const n = getNative();
    for (const s of this.slots) n.launchKernel(s.slot);
    this.h.stream.synchronize();
  }

  /** Graph mode: `launches` launches (rotating input sets) captured into one graph. */
  buildGraph(launches: number): void {
    const n = getNative();
    const s = this.h.stream;
    s.beginCapture({ mode: 'threadLocal' });
    try {
      for (let i = 0; i < launches; i++) n.launchKernel(this.slots[i % this.slots.length]!.slot);
    } finally {
      const g = s.endCapture();
      this.graph = { exec: g.instantiate(), launches };
      g.dispose();
    }
  }

  /** Takes `count` samples natively; returns them in order. */
  take(count: number, flush: boolean): BenchSample[] {
    try {
      return this.takeOnce(count, flush);
    } catch (e) {
      if ((e as { code?: string }).code !== 'CUDAKIT_BENCH_TIMEOUT' || this.noBlock) throw e;
      // Something serializes kernels (ncu, compute-sanitizer, nsys): a held stream cannot work, so time unheld.
      this.noBlock = true;
      this.warnings.push(
        'the stream could not be held behind the spin kernel (a profiler or sanitizer serializes kernels?): ' +
          'samples include launch latency',
      );
      return this.takeOnce(count, flush);
    }
  }

  private takeOnce(count: number, flush: boolean): BenchSample[] {
    const order: number[] = [];
    for (let i = 0; i < count; i++) order.push(this.graph !== undefined ? 0 : Math.floor(this.rng() * this.slots.length));
    const h = this.h;
    const raw = getNative().benchSamples(
      { ...samplesSpec(h, order, flush), slots: this.slots.map((s) => s.slot), graph: this.graph?.exec.handle ?? 0n, noBlock: this.noBlock },
      h.flagHost,
    );
    const per = this.graph?.launches ?? 1;
    const out: BenchSample[] = [];
    for (let i = 0; i < count; i++) {
      const clockMHz = raw[i * 3 + 2]!;
      out.push({ gpuMs: raw[i * 3]! / per, launchUs: raw[i * 3 + 1]!, clockMHz, inputSet: order[i]!, rejected: false });
    }
    return out;
  }

  /** Releases the graph and the launch slots; `failing`: an error is on its way out, no cleanup error may hide it. */
  dispose(failing = false): void {
    const graph = this.graph;
    this.graph = undefined;
    if (graph !== undefined) release(failing, () => graph.exec.dispose());
    for (const s of this.slots) release(failing, s.release);
  }
}

/**
 * Warm-up, then samples until the stopping rule says stop. A CudaError (a kernel that faults, say) is rethrown
 * naming `label` and the phase: '<label>: warm-up' or '<label>: timing'.
 */
async function measure(
  s: Session, rule: StoppingRule, onProgress: BenchOptions['onProgress'], label: string,
): Promise<Run> {
  const at = { phase: 'warm-up' };
  try {
    return await takeSamples(s, rule, onProgress, at);
  } catch (e) {
    throw named(e, `${label}: ${at.phase}`);
  }
}

/** Warm-up, then samples until the stopping rule says stop; `at.phase` follows along ('warm-up', then 'timing'). */
async function takeSamples(
  s: Session, rule: StoppingRule, onProgress: BenchOptions['onProgress'], at: { phase: string },
): Promise<Run> {
  const t0 = performance.now();
  const flush = s.mode === 'cold';
  const warnings = s.warnings;
  s.prime();
  // Warm-up: ≥ warmupMinRuns runs and ≥ warmupMinMs of GPU time, and until the clock has ramped (≥ 90 % of the
  // highest seen), capped at warmupMaxMs.
  let warmRuns = 0;
  let warmMs = 0;
  let estimateMs = 0;
  for (;;) {
    const batch = s.take(Math.max(1, Math.min(16, rule.warmupMinRuns)), flush);
    for (const x of batch) {
      warmRuns++;
      warmMs += x.gpuMs;
      estimateMs = x.gpuMs;
      s.maxClockSeen = Math.max(s.maxClockSeen, x.clockMHz);
    }
    const ramped = batch.every((x) => x.clockMHz === 0 || x.clockMHz >= 0.9 * s.maxClockSeen);
    const elapsed = performance.now() - t0;
    if ((warmRuns >= rule.warmupMinRuns && warmMs >= rule.warmupMinMs && ramped) || elapsed >= rule.warmupMaxMs) break;
  }
  at.phase = 'timing';
  if (s.mode === 'graph') {
    // Enough launches per replay that a replay lasts ~10 ms, at most 1000 (§8.3).
    const launches = Math.max(1, Math.min(1000, Math.round(10 / Math.max(estimateMs, 1e-4))));
    s.buildGraph(launches);
    s.take(2, false); // warm the graph
  }
  const samples: BenchSample[] = [];
  const accepted: number[] = [];
  const history: number[] = [];
  let rejected = 0;
  let accumulatedMs = 0;
  let recoveryMs = 50;
  let decision = { stop: false, converged: false, reason: '' as string };
  const start = performance.now();
  while (!decision.stop) {
    const perSampleMs = Math.max(estimateMs * (s.graph?.launches ?? 1), 0.02) + 0.05;
    const count = Math.max(1, Math.min(64, Math.floor(25 / perSampleMs)));
    const batch = s.take(count, flush);
    let rejectedNow = 0;
    for (const x of batch) {
      s.maxClockSeen = Math.max(s.maxClockSeen, x.clockMHz);
      x.rejected = throttled(x.clockMHz, s.maxClockSeen, rule.throttleRatio);
      samples.push(x);
      if (x.rejected) {
        rejected++;
        rejectedNow++;
      } else {
        accepted.push(x.gpuMs);
        accumulatedMs += x.gpuMs * (s.graph?.launches ?? 1);
      }
    }
    if (rejectedNow > 0) {
      await sleep(recoveryMs); // let the clock recover, waiting longer each time (nvbench's rule)
      recoveryMs = Math.min(recoveryMs + Math.min(1.5 * recoveryMs, 500), 2000);
    } else {
      recoveryMs = 50;
    }
    const wall = performance.now() - start;
    decision = accepted.length > 0 ? shouldStop(accepted, accumulatedMs, wall, rule, history) : { stop: wall >= rule.timeoutMs, converged: false, reason: 'timeout' };
    if (onProgress !== undefined) {
      const last = history[history.length - 1] ?? Number.NaN;
      onProgress({ samples: accepted.length, rejected, elapsedMs: performance.now() - t0, relCI: last });
    }
    await new Promise((r) => setImmediate(r)); // between batches only: never between a start and a stop event
  }
  if (accepted.length === 0) {
    // Never return zero samples silently: take every sample and say why they were all rejected.
    for (const x of samples) {
      x.rejected = false;
      accepted.push(x.gpuMs);
    }
    rejected = 0;
    warnings.push(`every sample was taken below ${Math.round(rule.throttleRatio * 100)} % of the highest clock seen; kept them all (the GPU may be power- or thermally-limited)`);
  } else if (rejected > 0.1 * samples.length) {
    warnings.push(`${rejected} of ${samples.length} samples were rejected as throttled`);
  }
  if (!decision.converged) warnings.push(`stopped by '${decision.reason}' before the precision target was met`);
  return {
    samples, accepted, rejected, warmupRuns: warmRuns, wallMs: performance.now() - t0, converged: decision.converged,
    stopReason: decision.reason, launchesPerSample: s.graph?.launches ?? 1, warnings: [...warnings],
  };
}

/**
 * GB/s, TFLOP/s and the percentage of the measured peak bandwidth, with that percentage's interval: the kernel's
 * rate over the 95 % CI of its median time, against the peak's interval (stats.ts percentOf).
 */
function throughputOf(
  h: Harness, stats: Summary, bytes: number | undefined, flops: number | undefined,
): Throughput | undefined {
  if (bytes === undefined && flops === undefined) return undefined;
  const t: Throughput = {};
  const perS = (amount: number, ms: number): number => amount / (ms * 1e-3);
  if (bytes !== undefined) {
    t.gbPerS = perS(bytes, stats.median) / 1e9;
    const peak = peakBandwidth(h);
    const rate = { value: t.gbPerS, low: perS(bytes, stats.ciHigh) / 1e9, high: perS(bytes, stats.ciLow) / 1e9 };
    const pct = percentOf(rate, peak);
    t.percentOfPeakBandwidth = pct.percent;
    t.percentOfPeakBandwidthLow = pct.low;
    t.percentOfPeakBandwidthHigh = pct.high;
    t.peakBandwidth = {
      gbPerS: peak.value, lowGbPerS: peak.low, highGbPerS: peak.high, method: peak.method, repetitions: peak.n,
    };
  }
  if (flops !== undefined) t.tflopsPerS = perS(flops, stats.median) / 1e12;
  return t;
}

function checkBenchOptions(options: BenchOptions | undefined): Required<Pick<BenchOptions, 'mode' | 'preset' | 'inputSets'>> & BenchOptions {
  const o = checkOptions('options', options, ['mode', 'preset', 'rule', 'inputSets', 'bytes', 'flops', 'name', 'onProgress'] as const) as BenchOptions;
  const mode = o.mode ?? 'cold';
  if (mode !== 'cold' && mode !== 'hot' && mode !== 'graph') throw typeError('options.mode', "'cold', 'hot' or 'graph'", mode);
  for (const key of ['bytes', 'flops'] as const) {
    const v = o[key];
    if (v !== undefined && (typeof v !== 'number' || !(v > 0))) throw rangeError(`options.${key}`, 'a positive number', v);
  }
  const inputSets = o.inputSets ?? 4;
  if (!Number.isInteger(inputSets) || inputSets < 1 || inputSets > 64) throw rangeError('options.inputSets', 'an integer in [1, 64]', inputSets);
  return { ...o, mode, preset: o.preset ?? 'default', inputSets };
}

/** The result of a run. Its own GPU work (the event overhead, the peak bandwidth) fails as '<label>: calibration'. */
function result(
  name: string, o: ReturnType<typeof checkBenchOptions>, s: Session, run: Run, label: string,
): BenchResult {
  try {
    return resultOf(name, o, s, run);
  } catch (e) {
    throw named(e, `${label}: calibration`);
  }
}

function resultOf(name: string, o: ReturnType<typeof checkBenchOptions>, s: Session, run: Run): BenchResult {
  const stats = summarize(run.accepted);
  const clocks = run.samples.filter((x) => !x.rejected && x.clockMHz > 0).map((x) => x.clockMHz).sort((a, b) => a - b);
  const r: BenchResult = {
    name,
    mode: o.mode,
    preset: o.preset,
    samples: run.samples,
    stats,
    rejected: run.rejected,
    warmupRuns: run.warmupRuns,
    wallMs: run.wallMs,
    converged: run.converged,
    stopReason: run.stopReason,
    clockMHz: clocks.length > 0 ? clocks[clocks.length >> 1]! : 0,
    env: environment(s.kernel.device),
    warnings: run.warnings,
  };
  const t = throughputOf(s.h, stats, o.bytes, o.flops);
  if (t !== undefined) r.throughput = t;
  return r;
}

/**
 * Times one kernel: warm-up, then samples until the 95 % confidence interval of the median is within the preset's
 * target (or stops shrinking, or the timeout). `args` is the argument list, or a generator of input sets for
 * rotation (called with 0 … inputSets-1). Resolves to every raw sample and the statistics.
 *
 * @throws TypeError / RangeError for bad options or arguments. A CudaError (a kernel that faults, a launch the driver
 *   refuses) names the phase it happened in, in its message and its `phase`: 'bench(): setup', 'bench(): warm-up',
 *   'bench(): timing' or 'bench(): calibration' (the event-overhead and peak-bandwidth measurements). Cleanup after
 *   it never replaces it.
 */
export async function bench<S extends Signature>(
  kernel: Kernel<S>, config: LaunchConfig, args: BenchArgs<S>, options?: BenchOptions,
): Promise<BenchResult> {
  const o = checkBenchOptions(options);
  const rule = resolveRule(o.preset, o.rule);
  const s = session('bench()', kernel as unknown as Kernel, config, args, o);
  let failing = true;
  try {
    const run = await measure(s, rule, o.onProgress, 'bench()');
    const r = result(o.name ?? kernel.name, o, s, run, 'bench()');
    failing = false;
    return r;
  } finally {
    s.dispose(failing);
  }
}

/** A Session, its CudaErrors named '<label>: setup' (compiling the harness, its buffers, binding the arguments). */
function session(
  label: string, kernel: Kernel, config: LaunchConfig, args: unknown, o: ReturnType<typeof checkBenchOptions>,
): Session {
  try {
    return new Session(kernel, config, args, o.mode, o.inputSets);
  } catch (e) {
    throw named(e, `${label}: setup`);
  }
}

export interface CompareTarget<S extends Signature = Signature> {
  kernel: Kernel<S>;
  config: LaunchConfig;
  args: BenchArgs<S>;
  name?: string;
}

export interface CompareOptions extends Omit<BenchOptions, 'name' | 'onProgress'> {
  /** ABBA rounds (default 5); each runs the stopping rule with 1/rounds of the preset's budget. */
  rounds?: number;
  onProgress?: (p: { round: number; rounds: number }) => void;
}

/**
 * Times a reference (A) and a candidate (B) in interleaved ABBA rounds so drift and thermal state hit both alike.
 * speedup = median(A) / median(B) with a 95 % bootstrap interval; verdict FASTER / SLOWER / SAME / UNCERTAIN.
 *
 * @throws as bench() does; a CudaError's phase also names the side and its label, e.g. 'compare(): B (saxpy_v2):
 *   warm-up'.
 */
export async function compare(a: CompareTarget, b: CompareTarget, options?: CompareOptions): Promise<CompareResult> {
  const { rounds: roundsOpt, onProgress, ...rest } = options ?? {};
  const o = checkBenchOptions(rest);
  const rounds = roundsOpt ?? 5;
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 50) throw rangeError('options.rounds', 'an integer in [1, 50]', rounds);
  const full = resolveRule(o.preset, o.rule);
  const part: StoppingRule = {
    ...full,
    minSamples: Math.max(5, Math.ceil(full.minSamples / rounds)),
    minTimeMs: full.minTimeMs / rounds,
    timeoutMs: full.timeoutMs / rounds,
    maxSamples: Math.max(10, Math.ceil(full.maxSamples / rounds)),
  };
  const labelA = `compare(): A (${a.name ?? a.kernel.name})`;
  const labelB = `compare(): B (${b.name ?? b.kernel.name})`;
  const sa = session(labelA, a.kernel, a.config, a.args, o);
  let sb: Session | undefined;
  let failing = true;
  try {
    sb = session(labelB, b.kernel, b.config, b.args, o);
    const runs: Run[][] = [[], []];
    for (let r = 0; r < rounds; r++) {
      const order: [Session, number, string][] =
        r % 2 === 0 ? [[sa, 0, labelA], [sb, 1, labelB]] : [[sb, 1, labelB], [sa, 0, labelA]];
      for (const [s, side, label] of order) {
        s.graph?.exec.dispose();
        s.graph = undefined;
        runs[side]!.push(await measure(s, part, undefined, label));
      }
      onProgress?.({ round: r + 1, rounds });
    }
    const merge = (rs: Run[]): Run => ({
      samples: rs.flatMap((x) => x.samples),
      accepted: rs.flatMap((x) => x.accepted),
      rejected: rs.reduce((t, x) => t + x.rejected, 0),
      warmupRuns: rs.reduce((t, x) => t + x.warmupRuns, 0),
      wallMs: rs.reduce((t, x) => t + x.wallMs, 0),
      converged: rs.every((x) => x.converged),
      stopReason: [...new Set(rs.map((x) => x.stopReason))].join(', '),
      launchesPerSample: rs[0]!.launchesPerSample,
      warnings: [...new Set(rs.flatMap((x) => x.warnings))],
    });
    const ra = result(a.name ?? a.kernel.name, o, sa, merge(runs[0]!), labelA);
    const rb = result(b.name ?? b.kernel.name, o, sb, merge(runs[1]!), labelB);
    const ci = bootstrapRatio(runs[0]!.flatMap((x) => x.accepted), runs[1]!.flatMap((x) => x.accepted));
    failing = false;
    return { a: ra, b: rb, speedup: ci.ratio, speedupLow: ci.low, speedupHigh: ci.high, verdict: verdict(ci), rounds };
  } finally {
    sa.dispose(failing);
    sb?.dispose(failing);
  }
}
