// SPDX-License-Identifier: MIT
// The shapes of benchmark and comparison results, shared by measure/bench.ts (measures), measure/stats.ts (computes),
// measure/format.ts (renders) and the CLI. Pure types: no CUDA import.
import type { CuptiStatus } from '../core/index.js';

/**
 * Statistics over one set of samples (measure/stats.ts `summarize`). Times are in the samples' unit (ms for GPU time).
 */
export interface Summary {
  /** Number of samples. */
  n: number;
  /** The smallest sample. */
  min: number;
  /** The largest sample. */
  max: number;
  /** The arithmetic mean. */
  mean: number;
  /** The headline figure. */
  median: number;
  /** 10th percentile (type-7 quantile, like every percentile here). */
  p10: number;
  /** 25th percentile (first quartile). */
  p25: number;
  /** 75th percentile (third quartile). */
  p75: number;
  /** 90th percentile. */
  p90: number;
  /** 99th percentile. */
  p99: number;
  /** Sample standard deviation (Bessel). */
  stdev: number;
  /** stdev / mean. */
  relStdev: number;
  /** p75 - p25. */
  iqr: number;
  /** Median absolute deviation from the median (unscaled). */
  mad: number;
  /** 95 % confidence interval of the median (distribution-free, from order statistics). */
  ciLow: number;
  /** Upper bound of that interval (`ciLow` is the lower one). */
  ciHigh: number;
}

/**
 * How bench() times a kernel (or a function target): 'cold' flushes L2 before every sample, 'hot' does not, 'graph'
 * replays N launches (N calls of the function) as one CUDA graph (docs/benchmarking.md, 'Timing modes').
 */
export type BenchMode = 'cold' | 'hot' | 'graph';
/** A stopping-rule preset: how long bench() samples and how precise the median must get (PRESETS has their rules). */
export type PresetName = 'quick' | 'default' | 'rigorous';

/** One timed sample. */
export interface BenchSample {
  /**
   * GPU time of one kernel launch, ms (a function target: of one call's work; graph mode: one replay / launches per
   * replay), by the result's timer: CUPTI's kernel timestamps (a function target: its first operation's start to its
   * last's end), or the event pair's time.
   */
  gpuMs: number;
  /** The same sample's time between its event pair, ms (equal to gpuMs when the timer is 'events'). */
  eventMs: number;
  /** Host time of the launch call(s), µs (a function target: of the function's call; graph mode: cuGraphLaunch's). */
  launchUs: number;
  /** Measured SM clock during the sample, MHz (0 when not measured). */
  clockMHz: number;
  /** Which rotating input set the sample used. */
  inputSet: number;
  /** True when rejected (clock below the throttle threshold); rejected samples are kept but not summarized. */
  rejected: boolean;
}

/** Where samples' GPU times come from: CUPTI's kernel timestamps, or an event pair around each sample. */
export type BenchTimer = 'cupti' | 'events';

/** How a peak bandwidth was reached: a copy-engine device-to-device copy, a copy kernel or a read-only stream. */
export type PeakBandwidthMethod = 'memcpy' | 'copy kernel' | 'read stream';

/** The device's measured peak memory bandwidth (bytes read + written per second): a measurement, with its interval. */
export interface PeakBandwidth {
  /** GB/s (10^9): the median of the fastest method's repetitions. */
  gbPerS: number;
  /** 95 % confidence interval of that median (distribution-free), GB/s. */
  lowGbPerS: number;
  /** Upper bound of that interval, GB/s (`lowGbPerS` is the lower one). */
  highGbPerS: number;
  /** The method that was fastest. */
  method: PeakBandwidthMethod;
  /** Timed repetitions of each method. */
  repetitions: number;
}

/** The rates a benchmark reached, from the `bytes` and `flops` options of bench(). */
export interface Throughput {
  /** Bytes moved per second, GB/s (10^9), from the `bytes` option. */
  gbPerS?: number;
  /** FLOP/s in TFLOP/s (10^12), from the `flops` option. */
  tflopsPerS?: number;
  /**
   * gbPerS as a percentage of peakBandwidth.gbPerS, as measured: above 100 when the kernel ran at the peak (within
   * the interval below) or when `bytes` counts more than the kernel moves. formatResult says which.
   */
  percentOfPeakBandwidth?: number;
  /**
   * Interval of percentOfPeakBandwidth: the kernel's rate over the 95 % CI of its median time against the peak's
   * 95 % interval, taken at their worst pairing (low: the slowest rate against the highest peak).
   */
  percentOfPeakBandwidthLow?: number;
  /** Upper bound of that interval (the fastest rate against the lowest peak). */
  percentOfPeakBandwidthHigh?: number;
  /** The peak the percentage is against. */
  peakBandwidth?: PeakBandwidth;
}

/** Where a benchmark ran: the device, the driver, NVRTC, cudakit and Node versions. */
export interface BenchEnvironment {
  /** The device's name, e.g. 'NVIDIA H200'. */
  device: string;
  /** Its architecture, e.g. 'sm_90'. */
  arch: string;
  /** Its number of streaming multiprocessors. */
  smCount: number;
  /** Its L2 cache size in bytes (what cold mode flushes). */
  l2Bytes: number;
  /** Its SM clock's peak rate, MHz. */
  maxClockMHz: number;
  /** The driver's CUDA version, e.g. '13.0'. */
  driverVersion: string;
  /** NVRTC's version, e.g. '12.8'; undefined without NVRTC. */
  nvrtcVersion: string | undefined;
  /** The cudakit version that took the measurement. */
  cudakitVersion: string;
  /** Node's version, as `process.version` gives it ('v20.19.5'). */
  node: string;
  /**
   * GPU time of an empty start/stop event pair queued the same way (median, ms): the floor under every sample timed
   * by events. Nsight Compute's kernel duration excludes it, as CUPTI's timestamps do.
   */
  eventOverheadMs: number;
  /** CUPTI, which the 'cupti' timer needs: the library and its API version, or why it cannot be used here. */
  cupti: CuptiStatus;
  /**
   * The drift probe before and after the run (a compare(): its round that changed most): whether the GPU changed
   * under the measurement (docs/benchmarking.md, 'Drift').
   */
  drift?: DriftReport;
}

/**
 * A fixed tiny probe (replays of 100 launches of an empty kernel) timed before and after a run: when its reading
 * changed by more than the run's own precision, the GPU changed state during the run.
 */
export interface DriftReport {
  /** GPU time per launch of the empty kernel before the run, µs. */
  beforeUs: number;
  /** The same after the run, µs. */
  afterUs: number;
  /** afterUs / beforeUs − 1. */
  change: number;
  /** The largest change within noise: the run's 95 % interval (relative half-width), the probe's, or 1 %. */
  limit: number;
  /** |change| > limit: the GPU changed under the run (a warning says so). */
  significant: boolean;
  /** Times the run was taken again after the GPU settled (preset 'rigorous', at most 2). */
  retaken: number;
}

/**
 * What bench() returns: every sample, their statistics, how sampling stopped, the throughput and the environment. Plain
 * data: it serializes to JSON as it is (formatJson()).
 */
export interface BenchResult {
  /** The label in reports: BenchOptions.name, or the kernel's name (a function target's: the function's, or 'work'). */
  name: string;
  /** The timing mode it ran in. */
  mode: BenchMode;
  /** The stopping-rule preset it ran under. */
  preset: PresetName;
  /** Every sample, accepted and rejected, in the order taken. */
  /**
   * Where the samples' gpuMs come from: 'cupti' (kernel timestamps) or 'events' (asked for, CUPTI unavailable — see
   * env.cupti — or a CUPTI trace that failed, said in warnings).
   */
  timer: BenchTimer;
  /** Every sample, accepted and rejected, in the order taken. */
  samples: BenchSample[];
  /** Over accepted samples' gpuMs. */
  stats: Summary;
  /** Number of rejected samples (clock below the throttle threshold). */
  rejected: number;
  /** Launches (a function target: calls) run to warm up before the first sample. */
  warmupRuns: number;
  /** Wall time the measurement took, ms. */
  wallMs: number;
  /** Whether the stopping rule's precision target was met (false: stopped by timeout or stability). */
  converged: boolean;
  /** Why sampling stopped, in words: 'precision', 'gpu time', 'stable', 'timeout', 'max samples'. */
  stopReason: string;
  /** Median SM clock over accepted samples, MHz. */
  clockMHz: number;
  /** GB/s, TFLOP/s and percentage of peak bandwidth, when `bytes` or `flops` was given. */
  throughput?: Throughput;
  /** The device and versions it ran on. */
  env: BenchEnvironment;
  /** Warnings for the reader (many rejected samples, no convergence ...). */
  warnings: string[];
}

/**
 * The call on a comparison: B (the candidate) is 'FASTER' or 'SLOWER' than A, the 'SAME' (within ±2 % by default),
 * or 'UNCERTAIN' when the interval is too wide to decide (verdict() has the rules).
 */
export type Verdict = 'FASTER' | 'SLOWER' | 'SAME' | 'UNCERTAIN';

/**
 * What compare() returns: both kernels' results from interleaved ABBA rounds, the speedup with its bootstrap interval,
 * and the verdict.
 */
export interface CompareResult {
  /** The reference (A)'s result. */
  a: BenchResult;
  /** The candidate (B)'s result. */
  b: BenchResult;
  /** median(A) / median(B): above 1 means B is faster. */
  speedup: number;
  /** 95 % bootstrap interval of the speedup. */
  speedupLow: number;
  /** Upper bound of that interval (`speedupLow` is the lower one). */
  speedupHigh: number;
  /** FASTER, SLOWER, SAME or UNCERTAIN, from the interval (verdict()). */
  verdict: Verdict;
  /** Interleaved ABBA rounds run. */
  rounds: number;
}
