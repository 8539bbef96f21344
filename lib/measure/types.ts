// SPDX-License-Identifier: MIT
// The shapes of benchmark and comparison results, shared by measure/bench.ts (measures), measure/stats.ts (computes),
// measure/format.ts (renders) and the CLI. Pure types: no CUDA import.

/**
 * Statistics over one set of samples (measure/stats.ts `summarize`). Times are in the samples' unit (ms for GPU time).
 */
export interface Summary {
  n: number;
  min: number;
  max: number;
  mean: number;
  /** The headline figure. */
  median: number;
  p10: number;
  p25: number;
  p75: number;
  p90: number;
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
  ciHigh: number;
}

export type BenchMode = 'cold' | 'hot' | 'graph';
export type PresetName = 'quick' | 'default' | 'rigorous';

/** One timed sample. */
export interface BenchSample {
  /** GPU time of one kernel launch, ms (graph mode: one replay / launches per replay). */
  gpuMs: number;
  /** Host time of the launch call(s), µs. */
  launchUs: number;
  /** Measured SM clock during the sample, MHz (0 when not measured). */
  clockMHz: number;
  /** Which rotating input set the sample used. */
  inputSet: number;
  /** True when rejected (clock below the throttle threshold); rejected samples are kept but not summarized. */
  rejected: boolean;
}

/** How a peak bandwidth was reached: a copy-engine device-to-device copy, a copy kernel or a read-only stream. */
export type PeakBandwidthMethod = 'memcpy' | 'copy kernel' | 'read stream';

/** The device's measured peak memory bandwidth (bytes read + written per second): a measurement, with its interval. */
export interface PeakBandwidth {
  /** GB/s (10^9): the median of the fastest method's repetitions. */
  gbPerS: number;
  /** 95 % confidence interval of that median (distribution-free), GB/s. */
  lowGbPerS: number;
  highGbPerS: number;
  /** The method that was fastest. */
  method: PeakBandwidthMethod;
  /** Timed repetitions of each method. */
  repetitions: number;
}

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
  percentOfPeakBandwidthHigh?: number;
  /** The peak the percentage is against. */
  peakBandwidth?: PeakBandwidth;
}

export interface BenchEnvironment {
  device: string;
  arch: string;
  smCount: number;
  l2Bytes: number;
  maxClockMHz: number;
  driverVersion: string;
  nvrtcVersion: string | undefined;
  cudakitVersion: string;
  node: string;
  /**
   * GPU time of an empty start/stop event pair queued the same way (median, ms): the floor under every sample.
   * Nsight Compute's kernel duration excludes it, so subtract it to compare short kernels with ncu.
   */
  eventOverheadMs: number;
}

export interface BenchResult {
  name: string;
  mode: BenchMode;
  preset: PresetName;
  /** Every sample, accepted and rejected, in the order taken. */
  samples: BenchSample[];
  /** Over accepted samples' gpuMs. */
  stats: Summary;
  rejected: number;
  warmupRuns: number;
  /** Wall time the measurement took, ms. */
  wallMs: number;
  /** Whether the stopping rule's precision target was met (false: stopped by timeout or stability). */
  converged: boolean;
  /** Why sampling stopped, in words: 'precision', 'stable', 'timeout', 'max samples'. */
  stopReason: string;
  /** Median SM clock over accepted samples, MHz. */
  clockMHz: number;
  throughput?: Throughput;
  env: BenchEnvironment;
  /** Warnings for the reader (many rejected samples, no convergence ...). */
  warnings: string[];
}

export type Verdict = 'FASTER' | 'SLOWER' | 'SAME' | 'UNCERTAIN';

export interface CompareResult {
  /** The reference (A) and the candidate (B). */
  a: BenchResult;
  b: BenchResult;
  /** median(A) / median(B): above 1 means B is faster. */
  speedup: number;
  /** 95 % bootstrap interval of the speedup. */
  speedupLow: number;
  speedupHigh: number;
  verdict: Verdict;
  /** Interleaved ABBA rounds run. */
  rounds: number;
}
