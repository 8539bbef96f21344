// SPDX-License-Identifier: MIT
// Timing one kernel, or any GPU work (docs/benchmarking.md): bench() warms up, then takes samples until the stopping
// rule says stop ('The stopping rule'), and summarizes them. A kernel's samples are taken by native code through the
// sampler (core/sampler.ts, native/bench.cc) on a stream of its own, with L2 flushed ('The L2 flush') and the stream
// held behind a spin kernel so launch latency is hidden ('Hiding launch latency'); a function target's the same way
// from JavaScript (work.ts; 'Timing modes', function targets). This file picks what to run, rotates inputs, rejects
// throttled samples ('Clock and throttling'), applies the stopping rule and summarizes (stats.ts). Session and
// measure() are shared with compare() (compare.ts).
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  BenchEnvironment,
  BenchMode,
  BenchResult,
  BenchSample,
  BenchTimer,
  DriftReport,
  PeakBandwidthMethod,
  PresetName,
  Summary,
  Throughput,
} from './types.js';
import {
  ActivityTrace,
  durationTick,
  CudaError,
  type ArgsFor,
  Device,
  Event,
  type GraphExec,
  Kernel,
  type LaunchConfig,
  type Signature,
  checkOptions,
  cuptiStatus,
  disableCupti,
  isContextLost,
  nvrtcVersion,
  rangeError,
  sampleDurations,
  typeError,
} from '../core/index.js';
import { type BoundLaunch, type DriftProbe, PROBE_KERNEL, type RawSample, Sampler } from '../core/sampler.js';
import { createRng } from './random.js';
import { type GpuWork, WorkSampler, callWork, isWorkTarget, workTarget } from './work.js';
import {
  PRESETS,
  type PeakEstimate,
  type StoppingRule,
  peakOf,
  percentOf,
  shouldStop,
  summarize,
  throttled,
} from './stats.js';

export type { BenchMode, BenchResult, CompareResult, PresetName } from './types.js';

/**
 * Arguments for every launch, or a generator of input sets (called with 0, 1, 2, ...) for rotation, such as
 * `inputSets(device, io).args` (input-sets.ts; untyped there: each value is still validated when it is bound).
 */
export type BenchArgs<S extends Signature> = ArgsFor<S> | ((set: number) => ArgsFor<S> | readonly unknown[]);

/** Options of bench(): the timing mode, the stopping rule, input rotation, and the bytes and FLOPs for throughput. */
export interface BenchOptions {
  /**
   * 'cold' (default): L2 flushed before every sample; 'hot': no flush; 'graph': N launches per CUDA graph replay
   * (docs/benchmarking.md, 'Timing modes').
   */
  mode?: BenchMode;
  /** Stopping-rule preset (docs/benchmarking.md, 'The stopping rule'). Default 'default'. */
  preset?: PresetName;
  /** Overrides of single stopping-rule fields, e.g. { timeoutMs: 2000 }. */
  rule?: Partial<StoppingRule>;
  /** Input sets drawn from a generator (default 4; at least 4 are used when args is a generator). */
  inputSets?: number;
  /** Bytes the kernel (a function target: one call's work) must move (for GB/s and % of peak). */
  bytes?: number;
  /** Floating-point operations per launch (a function target: per call) (for TFLOP/s). */
  flops?: number;
  /** Label in reports. Default: the kernel's name (a function target's: the function's, or 'work'). */
  name?: string;
  /**
   * The device whose harness stream a function target is given. Default: device 0, or in compare() the device of
   * the kernel target beside it. A kernel target runs on its own device: give none, or that one.
   */
  device?: Device;
  /**
   * Where each sample's GPU time comes from: 'cupti' (default where CUPTI loads), the kernels' own start and end
   * timestamps from CUPTI's activity records, as Nsight Compute measures them; 'events', an event pair around the
   * kernel, which also holds the pair's own cost and the gaps beside the kernel (docs/benchmarking.md, 'Timers').
   * Without CUPTI, or when a tool holds it, samples are timed by events and `env.cupti.reason` says why.
   */
  timer?: BenchTimer;
  /** Called after every batch of samples (the CLI draws its progress line with it). */
  onProgress?: (p: { samples: number; rejected: number; elapsedMs: number; relCI: number }) => void;
}

/** Per device: the measured peak bandwidth (once), see peakBandwidth. */
const peaks = new Map<Device, PeakEstimate<PeakBandwidthMethod>>();

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
function peakBandwidth(sampler: Sampler): PeakEstimate<PeakBandwidthMethod> {
  const device = sampler.device;
  const known = peaks.get(device);
  if (known !== undefined) return known;
  const stream = sampler.stream;
  const bytes = Math.max(16 << 20, Math.min(1 << 30, Math.floor(device.memoryInfo().freeBytes / 4 / 16) * 16));
  using a = device.alloc(bytes);
  using b = device.alloc(bytes);
  const methods: [PeakBandwidthMethod, number, () => void][] = [
    ['memcpy', 2 * bytes, () => b.copyFrom(a, { stream })],
    ['copy kernel', 2 * bytes, () => sampler.copyByKernel(a, b, bytes)],
    ['read stream', bytes, () => sampler.readByKernel(a, bytes)],
  ];
  const rates: Partial<Record<PeakBandwidthMethod, number[]>> = {};
  const e0 = stream.record();
  let e1: Event | undefined;
  let failed = true;
  try {
    e1 = stream.record();
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
  const peak = peakOf(rates as Record<PeakBandwidthMethod, number[]>);
  peaks.set(device, peak);
  return peak;
}

/**
 * @internal Cleanup that never hides the first error: while one is on its way out (`failing`), or once the context
 * is lost (nothing is left to release then), a failure to release is dropped.
 */
export function release(failing: boolean, f: () => void): void {
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

let cudakitVersion: string | undefined;
function environment(sampler: Sampler): BenchEnvironment {
  cudakitVersion ??= (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
  const device = sampler.device;
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
    driverVersion: sampler.driverVersion,
    nvrtcVersion: nvrtc,
    cudakitVersion,
    node: process.version,
    eventOverheadMs: sampler.eventOverheadMs(),
    cupti: cuptiEnvironment(),
  };
}

function cuptiEnvironment(): BenchEnvironment['cupti'] {
  const c = cuptiStatus();
  return c.available ? { available: true, path: c.path, version: c.version } : { available: false, reason: c.reason };
}

/** @internal The preset's stopping rule with the overrides applied. */
export function resolveRule(preset: PresetName, overrides: Partial<StoppingRule> | undefined): StoppingRule {
  const base = PRESETS[preset];
  if (base === undefined) throw typeError('options.preset', "'quick', 'default' or 'rigorous'", preset);
  return { ...base, ...(overrides ?? {}) };
}

/** @internal One measurement's samples and how it ended. */
export interface Run {
  samples: BenchSample[];
  accepted: number[];
  rejected: number;
  warmupRuns: number;
  wallMs: number;
  converged: boolean;
  stopReason: string;
  launchesPerSample: number;
  /** The timer of every sample in `accepted` ('events' once the session fell back from CUPTI: all of them). */
  timer: BenchTimer;
  /** CUPTI's tick in a sample's unit (ms per launch), as the traces told it; 0 when unknown or timed by events. */
  tickMs: number;
  /** The drift probe around the run (measure() sets it). */
  drift?: DriftReport;
  warnings: string[];
}

/**
 * @internal The run with every sample timed by its events: compare() puts both sides on one timer when one side's
 * CUPTI trace failed.
 */
export function onEvents(run: Run): Run {
  if (run.timer === 'events') return run;
  return { ...run, accepted: toEventTimes(run.samples), timer: 'events', tickMs: 0 };
}

/** Puts every sample on its event time (gpuMs = eventMs) and returns the accepted samples' times. */
function toEventTimes(samples: BenchSample[]): number[] {
  for (const x of samples) x.gpuMs = x.eventMs;
  return samples.filter((x) => !x.rejected).map((x) => x.gpuMs);
}

/**
 * @internal What a Session times: a kernel's launch with its arguments (or their generator), or a function target
 * on a device.
 */
export type SessionTarget = { kernel: Kernel; config: LaunchConfig; args: unknown } | { work: GpuWork; device: Device };

/**
 * @internal A prepared measurement, ready to take samples: a bound launch for every input set of a kernel target,
 * or a function target with the harness that calls it between the events.
 */
export class Session {
  readonly sampler: Sampler;
  readonly mode: BenchMode;
  /** A kernel target's bound launches, one per input set (none for a function target). */
  readonly launches: BoundLaunch[] = [];
  /** A function target's work and its harness. */
  readonly #work: { work: GpuWork; sampler: WorkSampler } | undefined;
  /** Graph mode: the graph of `launches` launches (a function target: calls) replayed per sample. */
  graph: { exec: GraphExec; launches: number } | undefined;
  readonly rng = createRng(0x5eed);
  maxClockSeen = 0;
  /**
   * Set when the spin kernel timed out (a profiler or sanitizer serializes kernels, or the work waited for its
   * stream): samples are then taken unheld.
   */
  noBlock = false;
  readonly warnings: string[] = [];
  /** Where samples' GPU times come from; 'events' from the start without CUPTI, or after a trace failed. */
  timer: BenchTimer;
  /** The tick of CUPTI's timestamps, ns, once a trace has told it (durationTick: 0 for none); undefined until then. */
  tickNs: number | undefined;

  constructor(target: SessionTarget, mode: BenchMode, inputSets: number, timer: BenchTimer) {
    this.mode = mode;
    this.timer = 'events';
    if (timer === 'cupti') {
      const c = cuptiStatus();
      if (c.available) this.timer = 'cupti';
      else this.warnings.push(`timed by events: ${c.reason.replace(/ \(tried: [^]*$/, '')}`); // env.cupti has it all
    }
    if ('work' in target) {
      this.sampler = Sampler.for(target.device);
      this.#work = { work: target.work, sampler: WorkSampler.for(this.sampler) };
      return;
    }
    const { kernel, config, args } = target;
    this.sampler = Sampler.for(kernel.device);
    this.#work = undefined;
    const sets = typeof args === 'function' ? Math.max(4, inputSets) : 1;
    try {
      for (let i = 0; i < sets; i++) {
        const a = typeof args === 'function' ? (args as (set: number) => unknown[])(i) : (args as unknown[]);
        if (!Array.isArray(a)) throw typeError('args', 'an array of kernel arguments (or a function returning one)', a);
        // Exactly the launch kernel.launch(config, ...a) makes (cooperative and clusterDim included), on the
        // sampler's stream: what check() verified is what is timed.
        this.launches.push(this.sampler.bind(kernel, config, a));
      }
    } catch (e) {
      this.dispose(true);
      throw e;
    }
  }

  /**
   * Plain launches (one call of the work) first: lazily loaded kernels load now, and a library's first call sets
   * itself up, never while the stream is held by the spin kernel.
   */
  prime(): void {
    if (this.#work !== undefined) callWork(this.#work.work, this.sampler.stream);
    for (const b of this.launches) b.launch();
    this.sampler.stream.synchronize();
  }

  /** Graph mode: `launches` launches (rotating input sets), or calls of the work, captured into one graph. */
  buildGraph(launches: number): void {
    const w = this.#work;
    const exec = w !== undefined ? w.sampler.capture(w.work, launches) : this.sampler.capture(this.launches, launches);
    this.graph = { exec, launches };
  }

  /** Drops the graph (compare() builds a new one in every round). */
  dropGraph(): void {
    this.graph?.exec.dispose();
    this.graph = undefined;
  }

  /** Takes `count` samples (natively, but a function target's calls); returns them in order. */
  take(count: number, flush: boolean): BenchSample[] {
    try {
      return this.takeOnce(count, flush);
    } catch (e) {
      if ((e as { code?: string }).code !== 'CUDAKIT_BENCH_TIMEOUT' || this.noBlock) throw e;
      // Something serializes kernels (ncu, compute-sanitizer, nsys), or the work waits for its stream: a held stream
      // cannot work, so time unheld.
      this.noBlock = true;
      this.warnings.push(
        this.#work === undefined
          ? 'the stream could not be held behind the spin kernel (a profiler or sanitizer serializes kernels?): ' +
              'samples include launch latency'
          : 'the stream could not be held behind the spin kernel (the work waited for its stream, or a profiler ' +
              'or sanitizer serializes kernels?): samples include the time the function takes to enqueue its work',
      );
      return this.takeOnce(count, flush);
    }
  }

  private takeOnce(count: number, flush: boolean): BenchSample[] {
    const order: number[] = [];
    const rotate = this.graph === undefined && this.#work === undefined;
    for (let i = 0; i < count; i++) order.push(rotate ? Math.floor(this.rng() * this.launches.length) : 0);
    const graph = this.graph;
    const w = this.#work;
    const trace = this.timer === 'cupti' ? this.#startTrace() : undefined;
    let raw: RawSample[];
    try {
      // A function target's calls run JavaScript between the events (work.ts); its graph replays, like kernels, not.
      raw =
        w !== undefined && graph === undefined
          ? w.sampler.take(w.work, count, flush, !this.noBlock)
          : this.sampler.take({
              launches: this.launches,
              order,
              flushL2: flush,
              hold: !this.noBlock,
              ...(graph !== undefined ? { graph: graph.exec } : {}),
            });
    } catch (e) {
      if (trace !== undefined) release(true, () => trace.stop());
      throw e;
    }
    const cuptiMs = trace !== undefined ? this.#durations(trace, count) : undefined;
    const per = graph?.launches ?? 1;
    return raw.map((x, i) => ({
      gpuMs: (cuptiMs?.[i] ?? x.gpuMs) / per,
      eventMs: x.gpuMs / per,
      launchUs: x.launchUs,
      clockMHz: x.clockMHz,
      inputSet: order[i]!,
      rejected: false,
    }));
  }

  /** A CUPTI trace for one batch, or none (and events from now on) when CUPTI refuses to trace. */
  #startTrace(): ActivityTrace | undefined {
    try {
      return ActivityTrace.start();
    } catch (e) {
      const reason = `CUPTI could not trace (${(e as Error).message})`;
      disableCupti(reason); // a tool holds it, or the driver is older than the library: so for every later run too
      this.#fallBack(reason);
      return undefined;
    }
  }

  /**
   * The batch's CUPTI durations, one per sample (a kernel target's kernels summed, a function target's work from its
   * first start to its last end: sampleDurations), or none (and events from now on) when the records do not fit.
   */
  #durations(trace: ActivityTrace, count: number): number[] | undefined {
    try {
      const { records, dropped } = trace.stop();
      if (dropped > 0) throw new Error(`CUPTI dropped ${dropped} records`);
      this.tickNs ??= durationTick(records); // searched once per session, not per batch
      return sampleDurations(records, PROBE_KERNEL, count, this.#work !== undefined ? 'span' : 'sum');
    } catch (e) {
      this.#fallBack(`CUPTI's records could not be used (${(e as Error).message})`);
      return undefined;
    }
  }

  #fallBack(reason: string): void {
    this.timer = 'events';
    this.warnings.push(`timed by events from here on: ${reason}`);
  }

  /** Releases the graph and the bound launches; `failing`: an error is on its way out, no cleanup error may hide it. */
  dispose(failing = false): void {
    const graph = this.graph;
    this.graph = undefined;
    if (graph !== undefined) release(failing, () => graph.exec.dispose());
    for (const b of this.launches) release(failing, () => b.release());
  }
}

/**
 * @internal Warm-up, then samples until the stopping rule says stop. A CudaError (a kernel that faults, say) is
 * rethrown naming `label` and the phase: '<label>: warm-up' or '<label>: timing'.
 */
export async function measure(
  s: Session,
  rule: StoppingRule,
  onProgress: BenchOptions['onProgress'],
  label: string,
  retakeOnDrift = false,
): Promise<Run> {
  const at = { phase: 'calibration' };
  try {
    for (let retaken = 0; ; retaken++) {
      const { run, before } = await takeSamples(s, rule, onProgress, at);
      at.phase = 'calibration';
      const drift = driftOf(before, s.sampler.driftProbe(), run.accepted, retaken);
      if (!drift.significant || !retakeOnDrift || retaken >= MAX_RETAKES) {
        if (drift.significant) run.warnings.push(driftWarning(drift, retakeOnDrift));
        return { ...run, drift };
      }
      await settle(s.sampler);
      s.dropGraph(); // the next run builds its own
    }
  } catch (e) {
    throw named(e, `${label}: ${at.phase}`);
  }
}

/**
 * The drift probe bench() takes before and after every run, on `device` (default device 0): replays of a graph of 100
 * launches of an empty kernel, queued behind the harness's spin kernel as samples are, a few ms in all. A reading that
 * moved between two calls says the GPU changed state (docs/benchmarking.md, 'Drift').
 */
export function driftProbe(device?: Device): DriftProbe {
  if (device !== undefined && !(device instanceof Device)) throw typeError('device', 'a Device', device);
  return Sampler.for(device ?? Device.get(0)).driftProbe();
}

/**
 * The least change of the drift probe that counts: its replays are timed by events on a coarse tick, so 20 of them
 * can all read the same and claim no noise at all, while probes of an unchanged GPU differ by up to a few tenths of a
 * percent (bench/drift.ts); the slow state moves it by 20 % and more.
 */
const PROBE_FLOOR = 0.01;

/** Runs taken again after a drift, at most (preset 'rigorous'). */
const MAX_RETAKES = 2;

/**
 * @internal The drift probe before and after a run against the run's own precision: a change beyond the largest of
 * the run's 95 % interval (relative half-width), the probe's own and 1 % is significant.
 */
export function driftOf(before: DriftProbe, after: DriftProbe, accepted: number[], retaken: number): DriftReport {
  const stats = accepted.length > 0 ? summarize(accepted) : undefined;
  const runCI = stats !== undefined && stats.median > 0 ? (stats.ciHigh - stats.ciLow) / 2 / stats.median : 0;
  const change = after.usPerLaunch / before.usPerLaunch - 1;
  const limit = Math.max(runCI, before.relCI, after.relCI, PROBE_FLOOR);
  return {
    beforeUs: before.usPerLaunch,
    afterUs: after.usPerLaunch,
    change,
    limit,
    significant: Math.abs(change) > limit,
    retaken,
  };
}

function driftWarning(d: DriftReport, retook: boolean): string {
  const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)} %`;
  return (
    `the GPU changed during the run: a fixed probe (an empty kernel's launches) read ${d.beforeUs.toFixed(3)} → ` +
    `${d.afterUs.toFixed(3)} µs per launch (${pct(d.change)}), beyond the run's ±${(100 * d.limit).toFixed(1)} %` +
    (retook
      ? ` after ${d.retaken} retakes`
      : "; preset 'rigorous' takes such a run again once the GPU settles (docs/benchmarking.md, 'Drift')")
  );
}

/** Waits until two drift probes 100 ms apart agree within their own noise (at most 2 s): the GPU has settled. */
async function settle(sampler: Sampler): Promise<void> {
  let last = sampler.driftProbe();
  for (let waited = 0; waited < 2000; waited += 100) {
    await sleep(100);
    const now = sampler.driftProbe();
    if (Math.abs(now.usPerLaunch / last.usPerLaunch - 1) <= Math.max(now.relCI, last.relCI)) return;
    last = now;
  }
}

/** Warm-up, then samples until the stopping rule says stop; `at.phase` follows along ('warm-up', then 'timing'). */
async function takeSamples(
  s: Session,
  rule: StoppingRule,
  onProgress: BenchOptions['onProgress'],
  at: { phase: string },
): Promise<{ run: Run; before: DriftProbe }> {
  at.phase = 'warm-up';
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
    // Enough launches per replay that a replay lasts ~10 ms, at most 1000 (docs/benchmarking.md, 'Timing modes').
    const launches = Math.max(1, Math.min(1000, Math.round(10 / Math.max(estimateMs, 1e-4))));
    s.buildGraph(launches);
    s.take(2, false); // warm the graph
  }
  // The drift probe, right before the first timed sample (after the warm-up, which may itself change the GPU's state).
  at.phase = 'calibration';
  const before = s.sampler.driftProbe();
  at.phase = 'timing';
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
    const timerBefore = s.timer;
    const batch = s.take(count, flush);
    if (s.timer !== timerBefore) {
      // CUPTI failed in this batch (timed by its events): the run's earlier samples go on the events' times too.
      accepted.length = 0;
      for (const ms of toEventTimes(samples)) accepted.push(ms); // (not spread: a run can hold 50,000 samples)
      accumulatedMs = accepted.reduce((t, ms) => t + ms, 0) * (s.graph?.launches ?? 1);
    }
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
    decision =
      accepted.length > 0
        ? shouldStop(accepted, accumulatedMs, wall, rule, history)
        : { stop: wall >= rule.timeoutMs, converged: false, reason: 'timeout' };
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
    warnings.push(
      `every sample was taken below ${Math.round(rule.throttleRatio * 100)} % of the highest clock seen; ` +
        'kept them all (the GPU may be power- or thermally-limited)',
    );
  } else if (rejected > 0.1 * samples.length) {
    warnings.push(`${rejected} of ${samples.length} samples were rejected as throttled`);
  }
  if (!decision.converged) warnings.push(`stopped by '${decision.reason}' before the precision target was met`);
  const run: Run = {
    samples,
    accepted,
    rejected,
    warmupRuns: warmRuns,
    wallMs: performance.now() - t0,
    converged: decision.converged,
    stopReason: decision.reason,
    launchesPerSample: s.graph?.launches ?? 1,
    timer: s.timer,
    tickMs: s.timer === 'cupti' ? (s.tickNs ?? 0) / 1e6 / (s.graph?.launches ?? 1) : 0,
    warnings: [...warnings],
  };
  return { run, before };
}

/**
 * GB/s, TFLOP/s and the percentage of the measured peak bandwidth, with that percentage's interval: the kernel's
 * rate over the 95 % CI of its median time, against the peak's interval (stats.ts percentOf).
 */
function throughputOf(
  sampler: Sampler,
  stats: Summary,
  bytes: number | undefined,
  flops: number | undefined,
): Throughput | undefined {
  if (bytes === undefined && flops === undefined) return undefined;
  const t: Throughput = {};
  const perS = (amount: number, ms: number): number => amount / (ms * 1e-3);
  if (bytes !== undefined) {
    t.gbPerS = perS(bytes, stats.median) / 1e9;
    const peak = peakBandwidth(sampler);
    const rate = { value: t.gbPerS, low: perS(bytes, stats.ciHigh) / 1e9, high: perS(bytes, stats.ciLow) / 1e9 };
    const pct = percentOf(rate, peak);
    t.percentOfPeakBandwidth = pct.percent;
    t.percentOfPeakBandwidthLow = pct.low;
    t.percentOfPeakBandwidthHigh = pct.high;
    t.peakBandwidth = {
      gbPerS: peak.value,
      lowGbPerS: peak.low,
      highGbPerS: peak.high,
      method: peak.method,
      repetitions: peak.n,
    };
  }
  if (flops !== undefined) t.tflopsPerS = perS(flops, stats.median) / 1e12;
  return t;
}

/** @internal Validated bench options with their defaults. */
export function checkBenchOptions(
  options: BenchOptions | undefined,
): Required<Pick<BenchOptions, 'mode' | 'preset' | 'inputSets' | 'timer'>> & BenchOptions {
  const o = checkOptions('options', options, [
    'mode',
    'preset',
    'rule',
    'inputSets',
    'bytes',
    'flops',
    'name',
    'onProgress',
    'device',
    'timer',
  ] as const) as BenchOptions;
  if (o.device !== undefined && !(o.device instanceof Device))
    throw typeError('options.device', 'a Device (Device.get(ordinal))', o.device);
  const mode = o.mode ?? 'cold';
  if (mode !== 'cold' && mode !== 'hot' && mode !== 'graph')
    throw typeError('options.mode', "'cold', 'hot' or 'graph'", mode);
  for (const key of ['bytes', 'flops'] as const) {
    const v = o[key];
    if (v !== undefined && (typeof v !== 'number' || !(v > 0)))
      throw rangeError(`options.${key}`, 'a positive number', v);
  }
  const timer = o.timer ?? 'cupti';
  if (timer !== 'cupti' && timer !== 'events') throw typeError('options.timer', "'cupti' or 'events'", timer);
  const inputSets = o.inputSets ?? 4;
  if (!Number.isInteger(inputSets) || inputSets < 1 || inputSets > 64)
    throw rangeError('options.inputSets', 'an integer in [1, 64]', inputSets);
  return { ...o, mode, preset: o.preset ?? 'default', inputSets, timer };
}

/**
 * @internal The result of a run. Its own GPU work (the event overhead, the peak bandwidth) fails as '<label>:
 * calibration'.
 */
export function result(
  name: string,
  o: ReturnType<typeof checkBenchOptions>,
  s: Session,
  run: Run,
  label: string,
): BenchResult {
  try {
    return resultOf(name, o, s, run);
  } catch (e) {
    throw named(e, `${label}: calibration`);
  }
}

function resultOf(name: string, o: ReturnType<typeof checkBenchOptions>, s: Session, run: Run): BenchResult {
  const stats = summarize(run.accepted);
  const clocks = run.samples
    .filter((x) => !x.rejected && x.clockMHz > 0)
    .map((x) => x.clockMHz)
    .sort((a, b) => a - b);
  const r: BenchResult = {
    name,
    mode: o.mode,
    preset: o.preset,
    timer: run.timer,
    samples: run.samples,
    stats,
    rejected: run.rejected,
    warmupRuns: run.warmupRuns,
    wallMs: run.wallMs,
    converged: run.converged,
    stopReason: run.stopReason,
    clockMHz: clocks.length > 0 ? clocks[clocks.length >> 1]! : 0,
    env: { ...environment(s.sampler), ...(run.drift !== undefined ? { drift: run.drift } : {}) },
    warnings: run.warnings,
  };
  const t = throughputOf(s.sampler, stats, o.bytes, o.flops);
  if (t !== undefined) r.throughput = t;
  return r;
}

/** @internal A target of bench() or compare(), validated, with its label: a kernel target or a function target. */
export type Target =
  { kernel: Kernel; config: LaunchConfig; args: unknown; name: string } | { work: GpuWork; name: string };

const TARGET =
  'a kernel target { kernel, config, args, name? }, a function target { work, name? } or a function (stream) => void';

/**
 * @internal `value` as a target (compare()'s `a` or `b`: a kernel target, `{ work, name? }` or a function), checked
 * before any GPU work: a TypeError for anything else, a RangeError for a kernel on another device than
 * `options.device`. Its launch configuration and arguments are checked when they are bound.
 */
export function targetOf(label: string, value: unknown, o: ReturnType<typeof checkBenchOptions>): Target {
  if (isWorkTarget(value)) return workTarget(label, value);
  if (typeof value !== 'object' || value === null) throw typeError(label, TARGET, value);
  const t = value as { kernel?: unknown; config: LaunchConfig; args: unknown; name?: unknown };
  const kernel = kernelOf(`${label}.kernel`, t.kernel, o);
  if (t.name !== undefined && typeof t.name !== 'string') throw typeError(`${label}.name`, 'a string', t.name);
  return { kernel, config: t.config, args: t.args, name: t.name ?? kernel.name };
}

/** A kernel target's kernel: a Kernel, on `options.device` when that is given. */
function kernelOf(label: string, kernel: unknown, o: ReturnType<typeof checkBenchOptions>): Kernel {
  if (!(kernel instanceof Kernel)) {
    throw typeError(label, 'a Kernel (module.getKernel()), or a function target in its place', kernel);
  }
  if (o.device !== undefined && o.device !== kernel.device) {
    throw new RangeError(
      `Expected device ${kernel.device.ordinal} (the kernel's own) or none for options.device but received device ` +
        `${o.device.ordinal}: a kernel runs on the device its module is loaded on`,
    );
  }
  return kernel;
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
  kernel: Kernel<S>,
  config: LaunchConfig,
  args: BenchArgs<S>,
  options?: BenchOptions,
): Promise<BenchResult>;
/**
 * Times any GPU work: a function that enqueues it on the stream it is given (a kernel sequence, a graph replay, a
 * native library's call), in the same modes, with the same stopping rule, statistics and result as a kernel. A
 * sample is one call between an event pair, the stream held while the function enqueues, so its host time stays
 * outside the events (it is recorded as `launchUs`); cold mode flushes L2 before every call, and graph mode captures
 * N calls into one graph and times its replays (docs/benchmarking.md, 'Timing modes', function targets). The work
 * runs on `options.device`, device 0 by default. Check what it computes yourself: check() takes kernel targets only.
 *
 * @example
 * const r = await bench((stream) => {
 *   scale.launch({ grid, block, stream }, x, n);
 *   shift.launch({ grid, block, stream }, x, n);
 * }, { name: 'scale + shift' });
 *
 * @throws TypeError / RangeError for a `work` that is not a synchronous function, or bad options, before any GPU
 *   work; whatever the work throws; a CudaError named by phase, as for a kernel ('bench(): timing' ...).
 */
export async function bench(work: GpuWork, options?: BenchOptions): Promise<BenchResult>;
export async function bench(what: Kernel | GpuWork, ...rest: unknown[]): Promise<BenchResult> {
  let target: Target;
  let o: ReturnType<typeof checkBenchOptions>;
  if (isWorkTarget(what)) {
    if (rest.length > 1) {
      throw new TypeError(
        `Expected bench(work, options) for a function target but received ${rest.length + 1} arguments: ` +
          'a function encloses its own buffers and launch configurations',
      );
    }
    target = workTarget('work', what);
    o = checkBenchOptions(rest[0] as BenchOptions | undefined);
  } else {
    const [config, args, options] = rest;
    o = checkBenchOptions(options as BenchOptions | undefined);
    const kernel = kernelOf('kernel', what, o);
    target = { kernel, config: config as LaunchConfig, args, name: kernel.name };
  }
  const rule = resolveRule(o.preset, o.rule);
  const s = session('bench()', target, o, undefined);
  let failing = true;
  try {
    const run = await measure(s, rule, o.onProgress, 'bench()', o.preset === 'rigorous');
    const r = result(o.name ?? target.name, o, s, run, 'bench()');
    failing = false;
    return r;
  } finally {
    s.dispose(failing);
  }
}

/**
 * @internal A Session for `target`, its CudaErrors named '<label>: setup' (finding the device, compiling the harness,
 * its buffers, binding the arguments). A function target runs on `options.device`, else on `beside` (the device of
 * the kernel target it is compared with), else on device 0.
 */
export function session(
  label: string,
  target: Target,
  o: ReturnType<typeof checkBenchOptions>,
  beside: Device | undefined,
): Session {
  try {
    const what = 'work' in target ? { work: target.work, device: o.device ?? beside ?? Device.get(0) } : target;
    return new Session(what, o.mode, o.inputSets, o.timer);
  } catch (e) {
    throw named(e, `${label}: setup`);
  }
}
