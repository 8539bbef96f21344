// SPDX-License-Identifier: MIT
// Benchmark statistics (docs/benchmarking.md, 'The stopping rule' and 'Comparing two kernels'): robust summaries,
// the distribution-free CI of the median, the bootstrap speedup interval and its verdict, and the adaptive stopping
// rule. Pure: no CUDA or native import, so it runs and is tested without a GPU. Seeded random numbers: random.ts.
import type { PresetName, Summary, Verdict } from './types.js';
import { createRng } from './random.js';
import { checkOptions, checkPositiveInt, rangeError, typeError } from '../core/index.js';

// ---------------------------------------------------------------------------------------------------------------
// Validation helpers

function checkSampleArray(name: string, samples: unknown): readonly unknown[] {
  if (!Array.isArray(samples)) throw typeError(name, 'an array of numbers', samples);
  return samples;
}

/** Validates and copies samples into a sorted Float64Array (typed-array sort is numeric and much faster). */
function sortedCopy(name: string, samples: unknown, allowEmpty = false): Float64Array {
  const array = checkSampleArray(name, samples);
  if (array.length === 0 && !allowEmpty) throw rangeError(name, 'a non-empty array', samples);
  const copy = new Float64Array(array.length);
  for (let i = 0; i < array.length; i++) {
    const value = array[i];
    if (typeof value !== 'number') throw typeError(`${name}[${i}]`, 'a finite number', value);
    if (!Number.isFinite(value)) throw rangeError(`${name}[${i}]`, 'a finite number', value);
    copy[i] = value;
  }
  return copy.sort();
}

function checkNumber(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number') throw typeError(name, `a number in [${min}, ${max}]`, value);
  if (!(value >= min && value <= max)) throw rangeError(name, `a number in [${min}, ${max}]`, value);
  return value;
}

function checkConfidence(name: string, value: unknown): number {
  if (typeof value !== 'number') throw typeError(name, 'a number in (0, 1)', value);
  if (!(value > 0 && value < 1)) throw rangeError(name, 'a number in (0, 1)', value);
  return value;
}

/** Element access for indices the caller has already bounded (noUncheckedIndexedAccess). */
function at(values: ArrayLike<number>, index: number): number {
  return values[index] as number;
}

// ---------------------------------------------------------------------------------------------------------------
// Quantiles and summaries

/** Type-7 quantile without validation; `sorted` is non-empty and ascending. */
function quantileOf(sorted: ArrayLike<number>, q: number): number {
  const position = (sorted.length - 1) * q;
  const below = Math.floor(position);
  const low = at(sorted, below);
  const high = at(sorted, Math.min(below + 1, sorted.length - 1));
  const fraction = position - below;
  // Both guards keep infinite order statistics (bootstrap ratios over a zero median) from turning into NaN.
  if (fraction === 0 || low === high) return low;
  return low + fraction * (high - low);
}

/**
 * The q-quantile of ascending `sorted`, interpolating linearly between order statistics (Hyndman-Fan type 7, the
 * default of numpy and R): position h = (n - 1)·q, result x[⌊h⌋] + (h - ⌊h⌋)·(x[⌊h⌋ + 1] - x[⌊h⌋]).
 * The input is not checked for order (that would make an O(1) call O(n)).
 * @throws RangeError for an empty array or q outside [0, 1].
 */
export function quantile(sorted: readonly number[], q: number): number {
  checkSampleArray('sorted', sorted);
  if (sorted.length === 0) throw rangeError('sorted', 'a non-empty array', sorted);
  checkNumber('q', q, 0, 1);
  return quantileOf(sorted, q);
}

/**
 * Statistics over `samples` (any unit; the summary keeps it). Quantiles are type 7, stdev uses Bessel's correction
 * (0 for one sample), mad is the unscaled median absolute deviation and [ciLow, ciHigh] the 95 % distribution-free
 * CI of the median from {@link medianCI}. The input is copied, never mutated.
 * @throws RangeError for an empty array or a non-finite sample.
 */
export function summarize(samples: readonly number[]): Summary {
  const sorted = sortedCopy('samples', samples);
  const n = sorted.length;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += at(sorted, i);
  const mean = sum / n;
  // Two passes (mean first) rather than sum of squares: no cancellation when stdev ≪ mean, as with kernel times.
  let squares = 0;
  for (let i = 0; i < n; i++) squares += (at(sorted, i) - mean) ** 2;
  const stdev = n > 1 ? Math.sqrt(squares / (n - 1)) : 0;
  const median = quantileOf(sorted, 0.5);
  const deviations = new Float64Array(n);
  for (let i = 0; i < n; i++) deviations[i] = Math.abs(at(sorted, i) - median);
  deviations.sort();
  const p25 = quantileOf(sorted, 0.25);
  const p75 = quantileOf(sorted, 0.75);
  const [ciLow, ciHigh] = ciOf(sorted, 0.95);
  return {
    n,
    min: at(sorted, 0),
    max: at(sorted, n - 1),
    mean,
    median,
    p10: quantileOf(sorted, 0.1),
    p25,
    p75,
    p90: quantileOf(sorted, 0.9),
    p99: quantileOf(sorted, 0.99),
    stdev,
    // Relative to |mean| so a (non-timing) negative mean does not give a negative spread; 0/0 is 0, not NaN.
    relStdev: stdev === 0 ? 0 : stdev / Math.abs(mean),
    iqr: p75 - p25,
    mad: quantileOf(deviations, 0.5),
    ciLow,
    ciHigh,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Confidence interval of the median

/**
 * 0-based ranks [lo, hi] = [j - 1, n - j] of the order-statistic interval [x(j), x(n+1-j)] (1-based j) for the
 * median. It covers the median with probability 1 - 2·P(B ≤ j - 1), B ~ Binomial(n, 1/2); j is the largest rank
 * whose coverage is still ≥ confidence, and 1 (the full range) when even that falls short.
 *
 * The binomial CDF is summed exactly from i = 0 by the recurrence C(n, i) = C(n, i - 1)·(n - i + 1)/i, in linear
 * space with a running scale factor: 2^-n underflows past n ≈ 1074 and C(n, i) overflows past n ≈ 1030, but the
 * scaled sum does neither. O(j) ≈ O(n/2) multiply-adds, about 0.1 ms at n = 100,000; no normal approximation.
 */
function medianCIRanks(n: number, confidence: number): [number, number] {
  // A relative slack of 1e-9 so a CDF exactly at the boundary (integer sums for small n) is not lost to rounding.
  const tail = ((1 - confidence) / 2) * (1 + 1e-9);
  const RESCALE_AT = 1e250;
  let logScale = 0; // true CDF = cdf · 2^-n · e^logScale
  let threshold = tail * Math.exp(n * Math.LN2 - logScale); // Infinity while 2^n overflows: the sum is then tiny
  let term = 1; // C(n, 0)
  let cdf = 1;
  let i = 0; // ends as the first i with P(B ≤ i) > tail
  while (cdf <= threshold && i < n) {
    i++;
    term = (term * (n - i + 1)) / i; // multiply first: exact integers while they fit in 53 bits
    cdf += term;
    if (term > RESCALE_AT) {
      term /= RESCALE_AT;
      cdf /= RESCALE_AT;
      logScale += Math.log(RESCALE_AT);
      threshold = tail * Math.exp(n * Math.LN2 - logScale);
    }
  }
  const j = Math.max(1, Math.min(i, Math.floor((n + 1) / 2)));
  return [j - 1, n - j];
}

function ciOf(sorted: ArrayLike<number>, confidence: number): [number, number] {
  const [lo, hi] = medianCIRanks(sorted.length, confidence);
  return [at(sorted, lo), at(sorted, hi)];
}

/**
 * Distribution-free confidence interval of the median of ascending `sorted`: the order statistics
 * [x(j), x(n+1-j)] (1-based, symmetric around the median) with the narrowest span whose exact binomial coverage
 * 1 - 2·P(Binomial(n, 1/2) ≤ j - 1) is ≥ `confidence`. Example: n = 10 gives ranks 2 and 9 with coverage
 * 1 - 2·11/1024 = 97.85 % (ranks 3 and 8 would give only 89.06 %). For n ≤ 5 at 95 % no interval reaches the
 * confidence and the result is [min, max]. Exact for any n (see the rank search above).
 * @throws RangeError for an empty array or a confidence outside (0, 1).
 */
export function medianCI(sorted: readonly number[], confidence = 0.95): [number, number] {
  checkSampleArray('sorted', sorted);
  if (sorted.length === 0) throw rangeError('sorted', 'a non-empty array', sorted);
  checkConfidence('confidence', confidence);
  return ciOf(sorted, confidence);
}

// ---------------------------------------------------------------------------------------------------------------
// A/B comparison

/**
 * A ratio of medians with its confidence interval.
 * @inline
 */
export interface RatioInterval {
  /** The ratio of the medians. */
  ratio: number;
  /** Lower bound of its confidence interval. */
  low: number;
  /** Upper bound of its confidence interval. */
  high: number;
}

/**
 * Options of {@link bootstrapRatio}.
 * @inline
 */
export interface BootstrapOptions {
  /** Bootstrap resamples (default 2000; docs/benchmarking.md, 'Comparing two kernels'). */
  resamples?: number;
  /** Interval confidence in (0, 1) (default 0.95). */
  confidence?: number;
  /** PRNG seed (default 1): the same inputs and seed give the same interval. */
  seed?: number;
}

/**
 * Median of a with-replacement resample of ascending `sorted`, in O(n) and without sorting: draw n indices into
 * `sorted`, count them, and walk the counts to the middle rank(s). Even n averages the two middle values like type 7.
 */
function resampledMedian(sorted: Float64Array, counts: Uint32Array, rng: () => number): number {
  const n = sorted.length;
  counts.fill(0);
  for (let k = 0; k < n; k++) {
    const index = Math.floor(rng() * n);
    counts[index] = (counts[index] as number) + 1;
  }
  const lowRank = (n - 1) >> 1;
  const highRank = n >> 1;
  let seen = 0;
  let low = Number.NaN;
  for (let index = 0; index < n; index++) {
    seen += counts[index] as number;
    if (Number.isNaN(low) && seen > lowRank) low = at(sorted, index);
    if (seen > highRank) {
      const high = at(sorted, index);
      return low === high ? low : low + 0.5 * (high - low);
    }
  }
  return low; // unreachable: the counts sum to n > highRank
}

/** a / b for medians of durations; 0/0 (both zero) is 1, "equally fast", rather than NaN, which would break sorting. */
function medianRatio(a: number, b: number): number {
  return a === 0 && b === 0 ? 1 : a / b;
}

/**
 * ratio = median(a) / median(b) with a percentile-bootstrap interval: each of `resamples` rounds resamples a and b
 * independently with replacement (a's n_a draws, then b's n_b draws, from the sorted copies, using
 * cudakit's seeded PRNG), and [low, high] are the type-7 (1 - confidence)/2 and (1 + confidence)/2 quantiles of the
 * resampled ratios. With a = reference and b = candidate, a ratio above 1 means the candidate is faster
 * (docs/benchmarking.md, 'Comparing two kernels').
 * Cost O(resamples·(n_a + n_b)).
 * @throws RangeError for empty inputs, negative or non-finite samples, or median(b) = 0.
 */
export function bootstrapRatio(a: readonly number[], b: readonly number[], options?: BootstrapOptions): RatioInterval {
  const o = checkOptions('options', options, ['resamples', 'confidence', 'seed'] as const);
  const resamples = o.resamples === undefined ? 2000 : checkPositiveInt('options.resamples', o.resamples, 10_000_000);
  const confidence = o.confidence === undefined ? 0.95 : checkConfidence('options.confidence', o.confidence);
  const seedOption = o.seed === undefined ? 1 : o.seed;
  if (typeof seedOption !== 'number') throw typeError('options.seed', 'a safe integer', seedOption);
  if (!Number.isSafeInteger(seedOption)) throw rangeError('options.seed', 'a safe integer', seedOption);
  const sortedA = sortedCopy('a', a);
  const sortedB = sortedCopy('b', b);
  if (at(sortedA, 0) < 0) throw rangeError('a', 'non-negative samples', at(sortedA, 0));
  if (at(sortedB, 0) < 0) throw rangeError('b', 'non-negative samples', at(sortedB, 0));
  const medianB = quantileOf(sortedB, 0.5);
  if (medianB === 0) throw rangeError('b', 'samples with a positive median', medianB);
  const ratio = quantileOf(sortedA, 0.5) / medianB;

  const rng = createRng(seedOption);
  const countsA = new Uint32Array(sortedA.length);
  const countsB = new Uint32Array(sortedB.length);
  const ratios = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    const medianA = resampledMedian(sortedA, countsA, rng);
    ratios[r] = medianRatio(medianA, resampledMedian(sortedB, countsB, rng));
  }
  ratios.sort();
  const tail = (1 - confidence) / 2;
  return { ratio, low: quantileOf(ratios, tail), high: quantileOf(ratios, 1 - tail) };
}

/**
 * The tick of a timer whose samples are whole multiples of it (CUPTI's timestamps: 32 ns on an H100), in the samples'
 * unit: the greatest common divisor of the samples in ns, each sample first multiplied by `per` (a graph mode
 * sample is one replay's time divided by its launches), then divided by `per` again. 0 when the samples are not whole
 * nanoseconds (an event timer's), or fewer than two differ.
 */
export function timerTick(samplesMs: readonly number[], per = 1): number {
  let g = 0;
  const distinct = new Set<number>();
  for (const x of samplesMs) {
    const ns = x * per * 1e6;
    const whole = Math.round(ns);
    if (Math.abs(ns - whole) > 1e-3 || whole <= 0) return 0;
    distinct.add(whole);
    let a = whole;
    let b = g;
    while (b !== 0) [a, b] = [b, a % b];
    g = a;
  }
  return distinct.size < 2 ? 0 : g / 1e6 / per;
}

/**
 * A ratio's interval widened by the timer's tick: each median is known to within half a tick whatever the spread of
 * the samples (samples on whole ticks can all be equal, which leaves a bootstrap interval of zero width), so the
 * interval covers (median(a) ∓ tick/2) / (median(b) ± tick/2). With tick 0, the interval as it was.
 */
export function widenByTick(ci: RatioInterval, medianA: number, medianB: number, tick: number): RatioInterval {
  if (!(tick > 0) || medianB <= tick / 2) return ci;
  return {
    ratio: ci.ratio,
    low: Math.min(ci.low, (medianA - tick / 2) / (medianB + tick / 2)),
    high: Math.max(ci.high, (medianA + tick / 2) / (medianB - tick / 2)),
  };
}

/**
 * Options of {@link verdict}.
 * @inline
 */
export interface VerdictOptions {
  /** Smallest speedup or slowdown worth a FASTER/SLOWER call, relative (default 0.01: 1 %). */
  minEffect?: number;
  /** Half-width of the band around 1 that counts as SAME, relative (default 0.02: ±2 %). */
  sameWithin?: number;
}

/**
 * Verdict on a speedup interval, ratio = median(reference) / median(candidate) (above 1: the candidate is faster).
 * In order:
 * - 'FASTER' when low > 1 + minEffect: the whole interval shows a speedup larger than minEffect (default 1 %);
 * - 'SLOWER' when high < 1 - minEffect: the whole interval shows a slowdown larger than minEffect;
 * - 'SAME' when 1 - sameWithin ≤ low and high ≤ 1 + sameWithin: the whole interval lies within ±sameWithin
 *   (default 2 %), so any difference is too small to matter;
 * - 'UNCERTAIN' otherwise: the interval is too wide (or too close to the thresholds) to decide; measure longer.
 * A tight interval just beyond 1 + minEffect is FASTER even though it also lies within ±sameWithin: a real, resolved
 * effect beats "negligible".
 * @throws RangeError for a NaN bound or negative thresholds.
 */
export function verdict(ratio: RatioInterval, options?: VerdictOptions): Verdict {
  if (typeof ratio !== 'object' || ratio === null) throw typeError('ratio', 'an object { ratio, low, high }', ratio);
  const o = checkOptions('options', options, ['minEffect', 'sameWithin'] as const);
  const minEffect = o.minEffect === undefined ? 0.01 : checkNumber('options.minEffect', o.minEffect, 0, 1);
  const sameWithin = o.sameWithin === undefined ? 0.02 : checkNumber('options.sameWithin', o.sameWithin, 0, 1);
  const { low, high } = ratio;
  if (typeof low !== 'number' || Number.isNaN(low)) throw rangeError('ratio.low', 'a number', low);
  if (typeof high !== 'number' || Number.isNaN(high)) throw rangeError('ratio.high', 'a number', high);
  if (low > 1 + minEffect) return 'FASTER';
  if (high < 1 - minEffect) return 'SLOWER';
  if (low >= 1 - sameWithin && high <= 1 + sameWithin) return 'SAME';
  return 'UNCERTAIN';
}

// ---------------------------------------------------------------------------------------------------------------
// Measured peaks and percentages of them

/** A value with its interval, low ≤ value ≤ high (a median and its confidence interval, say). */
export interface Interval {
  value: number;
  low: number;
  high: number;
}

/** A peak rate measured several ways: the fastest method's median, with the 95 % CI of that median. */
export interface PeakEstimate<M extends string = string> extends Interval {
  /** The method whose median was highest. */
  method: M;
  /** Its repetitions. */
  n: number;
}

/**
 * The peak of several measurement methods, each repeated: the method with the highest median rate (the first one
 * listed on a tie), its median as `value` and the distribution-free confidence interval of that median
 * ({@link medianCI}) as [low, high]. With 6 or more repetitions per method the 95 % interval is narrower than the
 * full range; with fewer it is [min, max].
 *
 * @example peakOf({ memcpy: [4.1, 4.2, 4.2], 'copy kernel': [4.6, 4.7, 4.8] })
 *   // { method: 'copy kernel', value: 4.7, low: 4.6, high: 4.8, n: 3 }
 * @throws TypeError / RangeError for no methods, an empty list, a non-finite or non-positive rate.
 */
export function peakOf<M extends string>(
  ratesByMethod: Readonly<Record<M, readonly number[]>>,
  confidence = 0.95,
): PeakEstimate<M> {
  if (typeof ratesByMethod !== 'object' || ratesByMethod === null || Array.isArray(ratesByMethod)) {
    throw typeError('ratesByMethod', 'an object of { method: rates[] }', ratesByMethod);
  }
  checkConfidence('confidence', confidence);
  let best: PeakEstimate<M> | undefined;
  for (const method of Object.keys(ratesByMethod) as M[]) {
    const sorted = sortedCopy(`ratesByMethod['${method}']`, ratesByMethod[method]);
    if (at(sorted, 0) <= 0) throw rangeError(`ratesByMethod['${method}']`, 'positive rates', at(sorted, 0));
    const value = quantileOf(sorted, 0.5);
    if (best === undefined || value > best.value) {
      const [low, high] = ciOf(sorted, confidence);
      best = { method, value, low, high, n: sorted.length };
    }
  }
  if (best === undefined) throw rangeError('ratesByMethod', 'at least one method', ratesByMethod);
  return best;
}

/**
 * 100·rate/peak with a conservative interval: [100·rate.low/peak.high, 100·rate.high/peak.low], the two intervals
 * at their worst pairing (wider than either, so "within the uncertainty" errs towards yes). A rate above the peak
 * whose interval still reaches 100 ran at the measured peak; one whose low end is above 100 ran faster than the peak
 * allows (usually a byte count that is too high).
 *
 * @example percentOf({ value: 4.81, low: 4.80, high: 4.82 }, { value: 4.8, low: 4.78, high: 4.81 })
 *   // { percent: 100.2, low: 99.8, high: 100.8 } (rounded)
 * @throws TypeError / RangeError unless both are { value, low, high }: positive finite numbers, low ≤ value ≤ high.
 */
export function percentOf(rate: Interval, peak: Interval): { percent: number; low: number; high: number } {
  for (const [name, x] of [
    ['rate', rate],
    ['peak', peak],
  ] as const) {
    if (typeof x !== 'object' || x === null) throw typeError(name, 'an object { value, low, high }', x);
    for (const key of ['value', 'low', 'high'] as const) {
      const v = x[key];
      if (typeof v !== 'number') throw typeError(`${name}.${key}`, 'a positive number', v);
      if (!(v > 0 && Number.isFinite(v))) throw rangeError(`${name}.${key}`, 'a positive number', v);
    }
    if (!(x.low <= x.value && x.value <= x.high)) {
      throw rangeError(name, `low ≤ value ≤ high (${x.low} ≤ ${x.value} ≤ ${x.high})`, x);
    }
  }
  return {
    percent: (100 * rate.value) / peak.value,
    low: (100 * rate.low) / peak.high,
    high: (100 * rate.high) / peak.low,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Stopping rule (docs/benchmarking.md, 'The stopping rule')

/** When to stop sampling one (kernel, configuration). Times in ms; relative quantities as fractions (0.005 = 0.5 %). */
export interface StoppingRule {
  /** Warm-up runs at least this many launches ... */
  warmupMinRuns: number;
  /** ... and at least this much GPU time, ms ... */
  warmupMinMs: number;
  /** ... but stops after this much GPU time, ms, even if the clock has not ramped up. */
  warmupMaxMs: number;
  /** No criterion but the wall timeout (and the maxSamples cap) is consulted before this many samples ... */
  minSamples: number;
  /** ... and this much accumulated GPU time, ms. */
  minTimeMs: number;
  /** Converged when the 95 % CI half-width of the median, relative to the median, is at most this. */
  targetRelCI: number;
  /** Stability exit: how many recorded CI estimates to compare; 0 disables the exit. */
  stabilityWindow: number;
  /** A CI estimate is recorded every this many samples. */
  stabilityCheckEvery: number;
  /** Stable when the window's estimates have a relative standard deviation below this. */
  stabilityRelChange: number;
  /** Hard cap on samples. */
  maxSamples: number;
  /** Wall-clock limit for the whole measurement, ms; overrides every other criterion. */
  timeoutMs: number;
  /** A sample is rejected as throttled when its SM clock is below this fraction of the highest clock seen. */
  throttleRatio: number;
  /**
   * A cap on the accumulated GPU time, ms: once the minimums are met and the samples add up to this, sampling stops
   * ('gpu time') with the precision it reached. Absent in the presets: no cap.
   */
  maxGpuMs?: number;
}

const QUICK: StoppingRule = Object.freeze({
  warmupMinRuns: 2,
  warmupMinMs: 10,
  warmupMaxMs: 500, // the method gives quick no cap; half the default's
  minSamples: 10,
  minTimeMs: 10,
  targetRelCI: 0.02,
  stabilityWindow: 0, // no stability exit for quick (docs/benchmarking.md, 'The stopping rule')
  stabilityCheckEvery: 16,
  stabilityRelChange: 0.05,
  maxSamples: 1000,
  timeoutMs: 2000,
  throttleRatio: 0.75,
});

const DEFAULT: StoppingRule = Object.freeze({
  warmupMinRuns: 3,
  warmupMinMs: 25,
  warmupMaxMs: 1000,
  minSamples: 20,
  minTimeMs: 50,
  targetRelCI: 0.005,
  stabilityWindow: 64,
  stabilityCheckEvery: 16,
  stabilityRelChange: 0.05,
  maxSamples: 10_000,
  timeoutMs: 10_000,
  throttleRatio: 0.75,
});

const RIGOROUS: StoppingRule = Object.freeze({
  warmupMinRuns: 5,
  warmupMinMs: 100,
  warmupMaxMs: 3000,
  minSamples: 50,
  minTimeMs: 500,
  targetRelCI: 0.002,
  stabilityWindow: 64,
  stabilityCheckEvery: 16,
  stabilityRelChange: 0.05,
  maxSamples: 100_000,
  timeoutMs: 60_000,
  throttleRatio: 0.85,
});

/**
 * The three presets of docs/benchmarking.md, 'The stopping rule' (frozen: spread one to adjust it,
 * `{ ...PRESETS.default, timeoutMs: 30_000 }`).
 */
export const PRESETS: Record<PresetName, StoppingRule> = Object.freeze({
  quick: QUICK,
  default: DEFAULT,
  rigorous: RIGOROUS,
});

/** Why the stopping rule stopped: its criteria in shouldStop()'s order of checks; '' while sampling goes on. */
export type StopReason = 'precision' | 'gpu time' | 'stable' | 'timeout' | 'max samples' | '';

/** shouldStop()'s answer after a sample or a batch. */
export interface StopDecision {
  /** Whether to stop sampling now. */
  stop: boolean;
  /** True only when the precision target was met. */
  converged: boolean;
  /** Why sampling stops; '' while it goes on. */
  reason: StopReason;
}

function checkRule(rule: unknown): StoppingRule {
  if (typeof rule !== 'object' || rule === null) throw typeError('rule', 'a StoppingRule object', rule);
  const r = rule as Record<string, unknown>;
  const finite = ['minTimeMs', 'targetRelCI', 'stabilityRelChange', 'timeoutMs'] as const;
  for (const key of finite) checkNumber(`rule.${key}`, r[key], 0, Number.MAX_VALUE);
  checkNumber('rule.minSamples', r.minSamples, 0, Number.MAX_SAFE_INTEGER);
  checkNumber('rule.stabilityWindow', r.stabilityWindow, 0, Number.MAX_SAFE_INTEGER);
  checkNumber('rule.stabilityCheckEvery', r.stabilityCheckEvery, 1, Number.MAX_SAFE_INTEGER);
  checkNumber('rule.maxSamples', r.maxSamples, 1, Number.MAX_SAFE_INTEGER);
  if (r.maxGpuMs !== undefined) checkNumber('rule.maxGpuMs', r.maxGpuMs, 0, Number.MAX_VALUE);
  return rule as StoppingRule;
}

/** Relative standard deviation (Bessel) of the last `window` entries. */
function relativeSpread(values: readonly number[], window: number): number {
  const start = values.length - window;
  let sum = 0;
  for (let i = start; i < values.length; i++) sum += at(values, i);
  const mean = sum / window;
  let squares = 0;
  for (let i = start; i < values.length; i++) squares += (at(values, i) - mean) ** 2;
  const stdev = window > 1 ? Math.sqrt(squares / (window - 1)) : 0;
  return stdev === 0 ? 0 : stdev / Math.abs(mean); // NaN for infinite estimates: never "stable"
}

/**
 * The adaptive stopping rule (docs/benchmarking.md, 'The stopping rule'); call it after every accepted sample or
 * batch of samples. `samples` are the
 * accepted GPU times (ms), `accumulatedMs` their sum (or the GPU time to count), `elapsedWallMs` the wall time since
 * sampling began, and `history` a caller-owned array, empty at the start, to which this function appends the current
 * relative CI half-width ((ciHigh - ciLow)/2/median, 95 %) once for each multiple of rule.stabilityCheckEvery that
 * samples.length has passed (history.length = ⌊n / stabilityCheckEvery⌋ afterwards; repeated calls at the same n
 * add nothing). A call covering several multiples records its estimate for each, so call at least every few
 * multiples: a first call after many samples would fill the window with one value and look stable.
 * Checked in order:
 * 1. 'precision' (converged) once n ≥ minSamples and accumulatedMs ≥ minTimeMs, if the half-width ≤ targetRelCI;
 * 2. 'gpu time' once the minimums are met, when accumulatedMs ≥ maxGpuMs (a rule with that cap);
 * 3. 'timeout' when elapsedWallMs ≥ timeoutMs, whatever the minimums;
 * 4. 'max samples' when n ≥ maxSamples, a hard cap that also overrides the minimums;
 * 5. 'stable' once the minimums are met, when the last stabilityWindow history entries have a relative standard
 *    deviation below stabilityRelChange (nvbench's stdrel stability exit): more samples no longer narrow the CI
 *    appreciably (bimodal or drifting timings), so waiting for the target would only run into the timeout.
 * Only 'precision' sets converged. Cost: one sort of a copy, O(n log n).
 * @throws RangeError for non-finite samples or a malformed rule.
 */
export function shouldStop(
  samples: readonly number[],
  accumulatedMs: number,
  elapsedWallMs: number,
  rule: StoppingRule,
  history: number[],
): StopDecision {
  checkRule(rule);
  checkNumber('accumulatedMs', accumulatedMs, 0, Infinity);
  checkNumber('elapsedWallMs', elapsedWallMs, 0, Infinity);
  if (!Array.isArray(history)) throw typeError('history', 'an array', history);
  const sorted = sortedCopy('samples', samples, true);
  const n = sorted.length;

  let relHalfWidth = Infinity;
  if (n > 0) {
    const [ciLow, ciHigh] = ciOf(sorted, 0.95);
    const halfWidth = (ciHigh - ciLow) / 2;
    relHalfWidth = halfWidth === 0 ? 0 : halfWidth / Math.abs(quantileOf(sorted, 0.5));
  }
  // A call that covers several checkpoints (batched sampling) records the current estimate for each, so the window
  // keeps spanning stabilityWindow·stabilityCheckEvery samples however the caller batches.
  const due = Math.floor(n / rule.stabilityCheckEvery);
  while (history.length < due) history.push(relHalfWidth);

  const minimumsMet = n >= rule.minSamples && accumulatedMs >= rule.minTimeMs;
  if (minimumsMet && relHalfWidth <= rule.targetRelCI) return { stop: true, converged: true, reason: 'precision' };
  if (minimumsMet && rule.maxGpuMs !== undefined && accumulatedMs >= rule.maxGpuMs) {
    return { stop: true, converged: false, reason: 'gpu time' };
  }
  if (elapsedWallMs >= rule.timeoutMs) return { stop: true, converged: false, reason: 'timeout' };
  if (n >= rule.maxSamples) return { stop: true, converged: false, reason: 'max samples' };
  if (
    minimumsMet &&
    rule.stabilityWindow > 0 &&
    history.length >= rule.stabilityWindow &&
    relativeSpread(history, rule.stabilityWindow) < rule.stabilityRelChange
  ) {
    return { stop: true, converged: false, reason: 'stable' };
  }
  return { stop: false, converged: false, reason: '' };
}

/**
 * Whether a sample ran throttled: its SM clock is below `ratio` × the highest clock seen so far (nvbench's 0.75 ×
 * default clock; docs/benchmarking.md, 'Clock and throttling'). A clock of 0 means "not measured" and is never
 * throttled.
 * @throws RangeError for negative or non-finite clocks, or a ratio outside [0, 1].
 */
export function throttled(clockMHz: number, maxSeenMHz: number, ratio: number): boolean {
  checkNumber('clockMHz', clockMHz, 0, Number.MAX_VALUE);
  checkNumber('maxSeenMHz', maxSeenMHz, 0, Number.MAX_VALUE);
  checkNumber('ratio', ratio, 0, 1);
  return clockMHz !== 0 && clockMHz < ratio * maxSeenMHz;
}
