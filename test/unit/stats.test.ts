// SPDX-License-Identifier: MIT
// lib/measure/stats.ts against hand-computed values (arithmetic in the comments) and seeded simulations.
import { describe, expect, it } from 'vitest';
import {
  bootstrapRatio,
  medianCI,
  peakOf,
  percentOf,
  PRESETS,
  quantile,
  shouldStop,
  summarize,
  throttled,
  verdict,
  type StopDecision,
  type StoppingRule,
} from '../../lib/measure/stats.js';
import { createRng } from '../../lib/measure/random.js';

/** n exponential(1) variates (true median ln 2) from a seeded generator. */
function exponentialSamples(n: number, seed: number): number[] {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => -Math.log(1 - rng()));
}

const ascending = (values: readonly number[]): number[] => [...values].sort((x, y) => x - y);

/** Feeds next(i) to shouldStop one sample at a time, wall time = wallMsPerSample per sample, until it stops. */
function runUntilStop(
  next: (index: number) => number,
  rule: StoppingRule,
  wallMsPerSample = 1,
  limit = 200_000,
): { n: number; decision: StopDecision; history: number[]; samples: number[] } {
  const samples: number[] = [];
  const history: number[] = [];
  let accumulatedMs = 0;
  for (let i = 0; i < limit; i++) {
    const sample = next(i);
    samples.push(sample);
    accumulatedMs += sample;
    const decision = shouldStop(samples, accumulatedMs, samples.length * wallMsPerSample, rule, history);
    if (decision.stop) return { n: samples.length, decision, history, samples };
  }
  throw new Error('no stop within the limit');
}

describe('quantile', () => {
  it('interpolates linearly between order statistics (type 7)', () => {
    const x = [10, 20, 30, 40];
    expect(quantile(x, 0)).toBe(10);
    expect(quantile(x, 1)).toBe(40);
    expect(quantile(x, 0.5)).toBe(25); // h = 3·0.5 = 1.5 → 20 + 0.5·(30 - 20)
    expect(quantile(x, 0.25)).toBe(17.5); // h = 0.75 → 10 + 0.75·10
    expect(quantile(x, 0.9)).toBeCloseTo(37, 12); // h = 2.7 → 30 + 0.7·10
    expect(quantile([7], 0.3)).toBe(7); // h = 0
  });

  it('rejects empty input and q outside [0, 1]', () => {
    expect(() => quantile([], 0.5)).toThrow(RangeError);
    expect(() => quantile([1, 2], -0.01)).toThrow(RangeError);
    expect(() => quantile([1, 2], 1.01)).toThrow(RangeError);
    expect(() => quantile([1, 2], Number.NaN)).toThrow(RangeError);
    expect(() => quantile([1, 2], '0.5' as unknown as number)).toThrow(TypeError);
  });
});

describe('summarize', () => {
  it('matches hand-computed statistics for [1, 2, 3, 4, 100]', () => {
    const input = [100, 3, 1, 4, 2]; // unsorted on purpose
    const s = summarize(input);
    expect(input).toEqual([100, 3, 1, 4, 2]); // not mutated
    expect(s.n).toBe(5);
    expect(s.min).toBe(1);
    expect(s.max).toBe(100);
    expect(s.mean).toBe(22); // 110 / 5
    expect(s.median).toBe(3);
    // Type 7, h = 4q: p10 h=0.4 → 1 + 0.4·1; p25 h=1 → 2; p75 h=3 → 4; p90 h=3.6 → 4 + 0.6·96; p99 h=3.96 → 4 + 0.96·96
    expect(s.p10).toBeCloseTo(1.4, 12);
    expect(s.p25).toBe(2);
    expect(s.p75).toBe(4);
    expect(s.p90).toBeCloseTo(61.6, 10);
    expect(s.p99).toBeCloseTo(96.16, 10);
    expect(s.iqr).toBe(2); // 4 - 2
    // |x - 3| = 2, 1, 0, 1, 97 → sorted 0, 1, 1, 2, 97 → median 1
    expect(s.mad).toBe(1);
    // deviations from 22: -21, -20, -19, -18, 78 → squares 441 + 400 + 361 + 324 + 6084 = 7610; 7610 / 4 = 1902.5
    expect(s.stdev).toBeCloseTo(Math.sqrt(1902.5), 12); // 43.6177
    expect(s.relStdev).toBeCloseTo(Math.sqrt(1902.5) / 22, 12); // 1.9826
    // n = 5: the widest interval [x(1), x(5)] covers only 1 - 2/32 = 93.75 % < 95 % → [min, max]
    expect([s.ciLow, s.ciHigh]).toEqual([1, 100]);
  });

  it('averages the middle pair for even n', () => {
    const s = summarize([4, 1, 3, 2]);
    expect(s.median).toBe(2.5); // h = 1.5 → 2 + 0.5·1
    expect(s.mad).toBe(1); // |x - 2.5| = 1.5, 0.5, 0.5, 1.5 → median (0.5 + 1.5) / 2
    expect(s.stdev).toBeCloseTo(Math.sqrt(5 / 3), 12); // squares 2.25 + 0.25 + 0.25 + 2.25 = 5, / (4 - 1)
    expect(s.p25).toBe(1.75); // h = 0.75 → 1 + 0.75·1
    expect(s.iqr).toBe(1.5); // p75: h = 2.25 → 3.25; 3.25 - 1.75
  });

  it('gives zero spread and a point interval for one sample', () => {
    const s = summarize([7]);
    expect(s).toMatchObject({ n: 1, min: 7, max: 7, mean: 7, median: 7, p99: 7, stdev: 0, relStdev: 0, mad: 0 });
    expect([s.ciLow, s.ciHigh]).toEqual([7, 7]);
  });

  it('rejects empty input and non-finite samples', () => {
    expect(() => summarize([])).toThrow(RangeError);
    expect(() => summarize([1, Number.NaN])).toThrow(/samples\[1\]/);
    expect(() => summarize([1, Infinity])).toThrow(RangeError);
    expect(() => summarize([1, '2' as unknown as number])).toThrow(TypeError);
  });
});

describe('medianCI', () => {
  it('uses ranks 2 and 9 for n = 10 (97.85 % coverage)', () => {
    // P(B ≤ 1) = (1 + 10) / 1024 = 1.07 % ≤ 2.5 % → coverage 1 - 2·11/1024 = 97.85 %;
    // P(B ≤ 2) = (1 + 10 + 45) / 1024 = 5.47 % > 2.5 %, so ranks 3 and 8 (89.06 %) are too narrow
    const x = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    expect(medianCI(x)).toEqual([20, 90]);
    // At 80 %: P(B ≤ 2) = 5.47 % ≤ 10 % but P(B ≤ 3) = 176/1024 = 17.2 % > 10 % → ranks 3 and 8
    expect(medianCI(x, 0.8)).toEqual([30, 80]);
  });

  it('handles tiny n: a point for n = 1, [min, max] when no interval reaches the confidence', () => {
    expect(medianCI([5])).toEqual([5, 5]);
    // n = 5: [x(1), x(5)] covers 1 - 2/32 = 93.75 % < 95 % → [min, max] anyway
    expect(medianCI([1, 2, 3, 4, 5])).toEqual([1, 5]);
    // n = 9: P(B ≤ 1) = 10/512 = 1.95 % ≤ 2.5 %, P(B ≤ 2) = 46/512 = 8.98 % → ranks 2 and 8
    expect(medianCI([1, 2, 3, 4, 5, 6, 7, 8, 9])).toEqual([2, 8]);
  });

  it('is exact for large n (no overflow of C(n, i) or underflow of 2^-n)', () => {
    const n = 100_000;
    const ranks = Array.from({ length: n }, (_, i) => i + 1); // value = 1-based rank
    // Normal approximation with continuity correction: j - 1 + 0.5 ≤ n/2 - 1.96·√n/2 = 50000 - 309.9 → j = 49690
    expect(medianCI(ranks)).toEqual([49_690, n + 1 - 49_690]);
  });

  it('covers the true median about 95 % of the time', () => {
    let covered = 0;
    const trials = 400;
    for (let t = 0; t < trials; t++) {
      const [low, high] = medianCI(ascending(exponentialSamples(101, 1000 + t)));
      if (low <= Math.LN2 && Math.LN2 <= high) covered++;
    }
    // The nominal coverage is ≥ 95 %; 400 trials give a binomial standard error of ~1.1 %
    expect(covered / trials).toBeGreaterThan(0.92);
    expect(covered / trials).toBeLessThan(0.99);
  });

  it('contains the true median of a large sample and shrinks like 1/√n', () => {
    // Fixed seeds (each interval misses 5 % of the time by design; the coverage test above checks the rate)
    const small = medianCI(ascending(exponentialSamples(1600, 9)));
    const large = medianCI(ascending(exponentialSamples(25_600, 10)));
    for (const [low, high] of [small, large]) {
      expect(low).toBeLessThan(Math.LN2);
      expect(high).toBeGreaterThan(Math.LN2);
    }
    // 16× the samples → a quarter of the width
    const shrink = (small[1] - small[0]) / (large[1] - large[0]);
    expect(shrink).toBeGreaterThan(3);
    expect(shrink).toBeLessThan(5.3);
  });

  it('rejects empty input and a confidence outside (0, 1)', () => {
    expect(() => medianCI([])).toThrow(RangeError);
    expect(() => medianCI([1], 0)).toThrow(RangeError);
    expect(() => medianCI([1], 1)).toThrow(RangeError);
  });
});

describe('bootstrapRatio', () => {
  const base = (n: number, seed: number) => {
    const rng = createRng(seed);
    return Array.from({ length: n }, () => 1 + 0.05 * (rng() + rng() + rng() - 1.5)); // 1 ± ~3 %
  };

  it('gives ratio 1 and an interval around 1 for identical inputs', () => {
    const a = base(200, 3);
    const r = bootstrapRatio(a, [...a]);
    expect(r.ratio).toBe(1);
    expect(r.low).toBeLessThan(1);
    expect(r.high).toBeGreaterThan(1);
    expect(r.high - r.low).toBeLessThan(0.05); // the medians of 200 samples are known to well under ±2.5 %
  });

  it('excludes 1 for a 20 % shift', () => {
    const b = base(200, 4);
    const a = b.map((x) => x * 1.2); // the reference takes 20 % longer: the candidate is faster
    const r = bootstrapRatio(a, b);
    expect(r.ratio).toBeCloseTo(1.2, 12); // median(1.2·b) / median(b)
    expect(r.low).toBeGreaterThan(1.1);
    expect(r.high).toBeLessThan(1.3);
    expect(verdict(r)).toBe('FASTER');
  });

  it('is reproducible with the same seed and changes with another', () => {
    const a = base(150, 5);
    const b = base(150, 6);
    const first = bootstrapRatio(a, b, { seed: 9, resamples: 500 });
    expect(bootstrapRatio(a, b, { seed: 9, resamples: 500 })).toEqual(first);
    const other = bootstrapRatio(a, b, { seed: 10, resamples: 500 });
    expect(other.ratio).toBe(first.ratio);
    expect([other.low, other.high]).not.toEqual([first.low, first.high]);
  });

  it('matches a naive percentile bootstrap drawn from the same generator', () => {
    const a = base(31, 11); // odd n
    const b = base(40, 12); // even n
    const resamples = 300;
    const rng = createRng(77);
    const sortedA = ascending(a);
    const sortedB = ascending(b);
    const resampledMedian = (sorted: number[]) =>
      quantile(ascending(sorted.map(() => sorted[Math.floor(rng() * sorted.length)]!)), 0.5);
    const ratios: number[] = [];
    for (let r = 0; r < resamples; r++) {
      const medianA = resampledMedian(sortedA);
      ratios.push(medianA / resampledMedian(sortedB));
    }
    const sortedRatios = ascending(ratios);
    const result = bootstrapRatio(a, b, { seed: 77, resamples, confidence: 0.9 });
    expect(result.ratio).toBe(quantile(sortedA, 0.5) / quantile(sortedB, 0.5));
    expect(result.low).toBe(quantile(sortedRatios, 0.05));
    expect(result.high).toBe(quantile(sortedRatios, 0.95));
  });

  it('gives a point interval for constant samples and narrows with lower confidence', () => {
    expect(bootstrapRatio([2, 2, 2], [1, 1])).toEqual({ ratio: 2, low: 2, high: 2 });
    const a = base(100, 13);
    const b = base(100, 14);
    const wide = bootstrapRatio(a, b, { confidence: 0.99 });
    const narrow = bootstrapRatio(a, b, { confidence: 0.5 });
    expect(narrow.high - narrow.low).toBeLessThan((wide.high - wide.low) / 2);
  });

  it('rejects bad inputs and options', () => {
    expect(() => bootstrapRatio([], [1])).toThrow(RangeError);
    expect(() => bootstrapRatio([1], [-1, 2])).toThrow(RangeError);
    expect(() => bootstrapRatio([1], [0, 0, 1])).toThrow(/positive median/);
    expect(() => bootstrapRatio([1], [1], { resamples: 0 })).toThrow(RangeError);
    expect(() => bootstrapRatio([1], [1], { confidence: 1 })).toThrow(RangeError);
    expect(() => bootstrapRatio([1], [1], { resample: 10 } as never)).toThrow(/Unknown option options.resample/);
  });
});

describe('verdict', () => {
  it('returns each of the four outcomes', () => {
    expect(verdict({ ratio: 1.2, low: 1.15, high: 1.25 })).toBe('FASTER'); // 1.15 > 1 + 0.01
    expect(verdict({ ratio: 0.8, low: 0.75, high: 0.85 })).toBe('SLOWER'); // 0.85 < 1 - 0.01
    expect(verdict({ ratio: 1.0, low: 0.985, high: 1.015 })).toBe('SAME'); // within [0.98, 1.02]
    expect(verdict({ ratio: 1.0, low: 0.9, high: 1.1 })).toBe('UNCERTAIN'); // straddles 1, wider than ±2 %
  });

  it('applies the thresholds in order', () => {
    // Tight and beyond 1 + minEffect: FASTER even though inside ±sameWithin
    expect(verdict({ ratio: 1.015, low: 1.012, high: 1.018 })).toBe('FASTER');
    // Inside ±2 % but not clear of 1 ± 1 %: SAME, not SLOWER (0.995 > 0.99)
    expect(verdict({ ratio: 0.99, low: 0.985, high: 0.995 })).toBe('SAME');
    expect(verdict({ ratio: 0.978, low: 0.97, high: 0.985 })).toBe('SLOWER'); // 0.985 < 0.99
    // Clear of 1 but by less than minEffect and past sameWithin: undecided
    expect(verdict({ ratio: 1.02, low: 1.005, high: 1.03 })).toBe('UNCERTAIN');
  });

  it('honours custom thresholds', () => {
    expect(verdict({ ratio: 1.2, low: 1.15, high: 1.25 }, { minEffect: 0.2 })).toBe('UNCERTAIN'); // 1.15 < 1.2
    expect(verdict({ ratio: 1, low: 0.95, high: 1.05 })).toBe('UNCERTAIN');
    expect(verdict({ ratio: 1, low: 0.95, high: 1.05 }, { sameWithin: 0.1 })).toBe('SAME');
  });

  it('rejects NaN bounds and negative thresholds', () => {
    expect(() => verdict({ ratio: 1, low: Number.NaN, high: 1 })).toThrow(RangeError);
    expect(() => verdict({ ratio: 1, low: 1, high: 1 }, { minEffect: -0.1 })).toThrow(RangeError);
  });
});

describe('stopping rule', () => {
  /** The achieved precision: the 95 % CI half-width of the median, relative to the median. */
  const relHalfWidth = (samples: readonly number[]): number => {
    const sorted = ascending(samples);
    const [low, high] = medianCI(sorted);
    return (high - low) / 2 / quantile(sorted, 0.5);
  };

  it('a quicker preset stops sooner, at a looser precision, on the same sample stream', () => {
    // 1 ms samples with ±2.5 % uniform noise, the same stream (seed) for each preset
    const stream = () => {
      const rng = createRng(31);
      return () => 1 + 0.05 * rng();
    };
    const quick = runUntilStop(stream(), PRESETS.quick);
    const dflt = runUntilStop(stream(), PRESETS.default);
    const rigorous = runUntilStop(stream(), PRESETS.rigorous);
    for (const run of [quick, dflt, rigorous]) {
      expect(run.decision).toEqual({ stop: true, converged: true, reason: 'precision' });
    }
    expect(quick.n).toBeLessThan(dflt.n);
    expect(dflt.n).toBeLessThan(rigorous.n);
    // Each met its own target (precision), and the quicker one settled for a wider interval
    const [q, d, r] = [quick, dflt, rigorous].map((run) => relHalfWidth(run.samples)) as [number, number, number];
    expect(q).toBeLessThanOrEqual(PRESETS.quick.targetRelCI);
    expect(d).toBeLessThanOrEqual(PRESETS.default.targetRelCI);
    expect(r).toBeLessThanOrEqual(PRESETS.rigorous.targetRelCI);
    expect(q).toBeGreaterThan(2 * d); // quick stopped where default would have gone on ...
    expect(d).toBeGreaterThan(2 * r); // ... and default where rigorous would have
    // Cut where quick stopped, the stream misses default's target even with default's minimums waived
    const cut = quick.samples;
    const sum = cut.reduce((a, b) => a + b, 0);
    const waived = { ...PRESETS.default, minSamples: 0, minTimeMs: 0 };
    expect(shouldStop(cut, sum, cut.length, waived, []).stop).toBe(false);
    expect(shouldStop(cut, sum, cut.length, PRESETS.quick, [])).toMatchObject({ stop: true, reason: 'precision' });
  });

  it('on a near-constant stream, each preset stops once its minimum time is met: 10, 50 and 500 ms', () => {
    // 1 ms samples (+ ≤ 1 ns noise): precise from the start, so only the minimums hold sampling back
    const stops = (['quick', 'default', 'rigorous'] as const).map((preset) => {
      const rng = createRng(30);
      return runUntilStop(() => 1 + 1e-6 * rng(), PRESETS[preset]);
    });
    expect(stops.map((run) => run.n)).toEqual([10, 50, 500]);
    expect(stops.every((run) => run.decision.reason === 'precision')).toBe(true);
  });

  it('on a stream that never converges, quick gives up first (2 s), then default (10 s), then rigorous', () => {
    // Uniform on [0.1, 10.1) ms, 10 ms of wall time per sample: the CI never gets within any preset's target
    const stops = (['quick', 'default', 'rigorous'] as const).map((preset) => {
      const rng = createRng(31);
      return runUntilStop(() => 0.1 + 10 * rng(), PRESETS[preset], 10);
    });
    const [quick, dflt, rigorous] = stops as [(typeof stops)[0], (typeof stops)[0], (typeof stops)[0]];
    expect(quick.n).toBe(200); // 2 s of wall time
    expect(quick.decision).toEqual({ stop: true, converged: false, reason: 'timeout' });
    expect(dflt.n).toBe(1000); // 10 s, before its stability window (64 estimates, 1024 samples) is full
    expect(dflt.decision).toEqual({ stop: true, converged: false, reason: 'timeout' });
    // rigorous's 60 s would allow 6000 samples; its stability exit ends it once the CI stops shrinking
    expect(rigorous.n).toBeGreaterThan(2048);
    expect(rigorous.n).toBeLessThan(6000);
    expect(rigorous.decision).toEqual({ stop: true, converged: false, reason: 'stable' });
  });

  it('rigorous rejects a sample taken at 80 % of the top clock; quick and default keep it', () => {
    const maxMHz = 1980;
    const at80 = 0.8 * maxMHz;
    expect(throttled(at80, maxMHz, PRESETS.rigorous.throttleRatio)).toBe(true);
    expect(throttled(at80, maxMHz, PRESETS.default.throttleRatio)).toBe(false);
    expect(throttled(at80, maxMHz, PRESETS.quick.throttleRatio)).toBe(false);
    expect(throttled(0.7 * maxMHz, maxMHz, PRESETS.quick.throttleRatio)).toBe(true); // below 75 %: all reject it
  });

  it('the presets are frozen: adjusting one means spreading it', () => {
    expect(() => {
      (PRESETS.default as { minSamples: number }).minSamples = 1;
    }).toThrow(TypeError);
    expect(() => {
      (PRESETS as Record<string, StoppingRule>).default = { ...PRESETS.quick };
    }).toThrow(TypeError);
    const constant = new Array<number>(100).fill(2);
    expect(shouldStop(constant, 200, 1, { ...PRESETS.default, minSamples: 200 }, []).stop).toBe(false);
    expect(shouldStop(constant, 200, 1, PRESETS.default, []).reason).toBe('precision');
  });

  it('converges on precision as soon as the minimums are met for a near-constant series', () => {
    const rng = createRng(21);
    // 1 ms samples (+ ≤ 1 ns noise): minTimeMs = 50 is reached at n = 50, after minSamples = 20
    const ms = runUntilStop(() => 1 + 1e-6 * rng(), PRESETS.default);
    expect(ms.n).toBe(50);
    expect(ms.decision).toEqual({ stop: true, converged: true, reason: 'precision' });
    // 10 ms samples: minTimeMs is reached at n = 5, so minSamples = 20 decides
    const tenMs = runUntilStop(() => 10 + 1e-5 * rng(), PRESETS.default);
    expect(tenMs.n).toBe(20);
    expect(tenMs.decision.reason).toBe('precision');
  });

  it('never stops before the minimums, unless the wall timeout hits', () => {
    const constant = (n: number) => new Array<number>(n).fill(2);
    const rule = PRESETS.default;
    // Zero-width CI, but n = 19 < 20 samples, or 49 ms < 50 ms of GPU time
    expect(shouldStop(constant(19), 1000, 1, rule, []).stop).toBe(false);
    expect(shouldStop(constant(100), 49, 1, rule, []).stop).toBe(false);
    expect(shouldStop(constant(20), 50, 1, rule, [])).toEqual({ stop: true, converged: true, reason: 'precision' });
    expect(shouldStop(constant(3), 6, 10_000, rule, [])).toEqual({ stop: true, converged: false, reason: 'timeout' });
    expect(shouldStop([], 0, 10_000, rule, []).reason).toBe('timeout');
    expect(shouldStop([], 0, 1, rule, []).stop).toBe(false);
  });

  it('stops a very noisy series at the timeout without converging', () => {
    const rng = createRng(22);
    const rule = { ...PRESETS.default, timeoutMs: 100 };
    // Uniform on [0.1, 10.1): at n = 100 the CI spans ranks 40..61, i.e. ~±1 ms around 5 ms, ≫ 0.5 %
    const run = runUntilStop(() => 0.1 + 10 * rng(), rule, 1);
    expect(run.n).toBe(100); // wall time = n · 1 ms
    expect(run.decision).toEqual({ stop: true, converged: false, reason: 'timeout' });
  });

  it("stops 'stable' when the CI has stopped shrinking", () => {
    // Alternating 1, 2: at every even n the CI is [1, 2] around median 1.5 → half-width 0.5 / 1.5 = 1/3, forever
    const run = runUntilStop((i) => (i % 2 === 0 ? 1 : 2), PRESETS.default);
    expect(run.n).toBe(64 * 16); // the 64th estimate (one every 16 samples) completes the window
    expect(run.decision).toEqual({ stop: true, converged: false, reason: 'stable' });
    expect(run.history).toHaveLength(64);
    expect(run.history.every((h) => h === 0.5 / 1.5)).toBe(true);
  });

  it("does not call a still-shrinking CI 'stable' while the window spans a large change", () => {
    const rng = createRng(23);
    const rule = { ...PRESETS.default, targetRelCI: 1e-9, maxSamples: 1e6, timeoutMs: 1e9 };
    // The width falls like 1/√n: over the window of 64·16 = 1024 samples ending at n it changes by √(n/(n - 1008)),
    // which is > 40 % at n = 2048; the window's relative spread drops under 5 % only some thousands of samples later
    const run = runUntilStop(() => 1 + 0.2 * rng(), rule);
    expect(run.decision.reason).toBe('stable');
    expect(run.n).toBeGreaterThan(2048);
    expect(run.n % 16).toBe(0); // decided right after an estimate was recorded
  });

  it('respects maxSamples as a hard cap, even before minTimeMs', () => {
    const rng = createRng(24);
    const noisy = runUntilStop(() => 0.1 + 10 * rng(), { ...PRESETS.default, maxSamples: 30 });
    expect(noisy.n).toBe(30);
    expect(noisy.decision).toEqual({ stop: true, converged: false, reason: 'max samples' });
    // 1 µs samples: 1000 of them are 1 ms of GPU time, far below minTimeMs = 50
    const fast = runUntilStop(() => 0.001, { ...PRESETS.default, maxSamples: 1000 }, 0.01);
    expect(fast.n).toBe(1000);
    expect(fast.decision.reason).toBe('max samples');
    // quick has no stability exit: the alternating series runs into its 1000-sample cap instead
    const quick = runUntilStop((i) => (i % 2 === 0 ? 1 : 2), PRESETS.quick);
    expect(quick.n).toBe(1000);
    expect(quick.decision.reason).toBe('max samples');
  });

  it('records one CI estimate per stabilityCheckEvery samples', () => {
    const history: number[] = [];
    const samples = [4, 1, 3, 2, 5, 9, 7, 6, 8, 10, 12, 11, 14, 13, 16];
    shouldStop(samples, 1, 1, PRESETS.default, history);
    expect(history).toHaveLength(0); // n = 15 < 16
    samples.push(15);
    shouldStop(samples, 1, 1, PRESETS.default, history);
    shouldStop(samples, 1, 1, PRESETS.default, history); // same n again: no duplicate
    // n = 16: P(B ≤ 3) = 697/65536 = 1.06 %, P(B ≤ 4) = 2517/65536 = 3.84 % → ranks 4 and 13 → [4, 13];
    // median 8.5 → half-width 4.5 / 8.5
    expect(history).toEqual([4.5 / 8.5]);
    // A batch that passes the 32 and 48 checkpoints at once records its estimate for both
    const batch = [...samples, ...Array.from({ length: 34 }, (_, i) => 17 + i)]; // 1..50
    shouldStop(batch, 1, 1, PRESETS.default, history);
    expect(history).toHaveLength(3); // ⌊50 / 16⌋
    expect(history[1]).toBe(history[2]);
  });

  it("reaches 'stable' at the same sample count when samples arrive in batches of 64", () => {
    const samples: number[] = [];
    const history: number[] = [];
    let decision: StopDecision = { stop: false, converged: false, reason: '' };
    while (!decision.stop) {
      for (let k = 0; k < 64; k++) samples.push(samples.length % 2 === 0 ? 1 : 2);
      decision = shouldStop(samples, samples.length * 1.5, samples.length, PRESETS.default, history);
    }
    expect(samples.length).toBe(1024); // 16 calls of 64 = 64 estimates
    expect(decision.reason).toBe('stable');
  });

  it('with a GPU-time cap, stops a stream that cannot converge once its samples add up to the cap', () => {
    // Uniform on [0.1, 10.1) ms: never within ±0.5 %; a 250 ms cap stops it after some 50 samples, not at 10 s.
    const rng = createRng(41);
    const capped = runUntilStop(() => 0.1 + 10 * rng(), { ...PRESETS.default, maxGpuMs: 250 });
    expect(capped.decision).toEqual({ stop: true, converged: false, reason: 'gpu time' });
    const sum = capped.samples.reduce((a, b) => a + b, 0);
    expect(sum).toBeGreaterThanOrEqual(250);
    expect(sum - capped.samples.at(-1)!).toBeLessThan(250);
    // Not before the minimums (50 samples, 50 ms of GPU time), and never ahead of a met precision target.
    const early = shouldStop([400, 400], 800, 2, { ...PRESETS.default, maxGpuMs: 250 }, []);
    expect(early.stop).toBe(false);
    const steady = Array.from({ length: 60 }, () => 5);
    expect(shouldStop(steady, 300, 60, { ...PRESETS.default, maxGpuMs: 250 }, []).reason).toBe('precision');
  });

  it('rejects malformed rules and samples', () => {
    expect(() => shouldStop([1], 1, 1, { ...PRESETS.default, maxGpuMs: -1 }, [])).toThrow(RangeError);
    expect(() => shouldStop([1], 1, 1, { ...PRESETS.default, stabilityCheckEvery: 0 }, [])).toThrow(RangeError);
    expect(() => shouldStop([1, Number.NaN], 1, 1, PRESETS.default, [])).toThrow(RangeError);
    expect(() => shouldStop([1], -1, 1, PRESETS.default, [])).toThrow(RangeError);
  });
});

describe('throttled', () => {
  it('flags clocks below the ratio of the highest seen', () => {
    // 0.75 · 1980 MHz = 1485 MHz
    expect(throttled(1400, 1980, 0.75)).toBe(true);
    expect(throttled(1485, 1980, 0.75)).toBe(false); // at the threshold: not below
    expect(throttled(1500, 1980, 0.75)).toBe(false);
    expect(throttled(1600, 1980, 0.85)).toBe(true); // 0.85 · 1980 = 1683
    expect(throttled(0, 1980, 0.75)).toBe(false); // 0: not measured
  });

  it('rejects bad arguments', () => {
    expect(() => throttled(1400, 1980, 1.5)).toThrow(RangeError);
    expect(() => throttled(Number.NaN, 1980, 0.75)).toThrow(RangeError);
  });
});

describe('peakOf', () => {
  it("takes the fastest method's median with the CI of that median (n = 10: ranks 2 and 9)", () => {
    const peak = peakOf({
      memcpy: [4100, 4150, 4120, 4130, 4110, 4140, 4160, 4105, 4125, 4135],
      'copy kernel': [4750, 4720, 4790, 4700, 4760, 4780, 4710, 4770, 4730, 4740], // sorted: 4700 4710 … 4790
      'read stream': [4600, 4610, 4620, 4630, 4640, 4650, 4660, 4670, 4680, 4690],
    });
    // median of 4700 … 4790 in steps of 10: (4740 + 4750) / 2; CI [x(2), x(9)] = [4710, 4780]
    expect(peak).toEqual({ method: 'copy kernel', value: 4745, low: 4710, high: 4780, n: 10 });
  });

  it('ranks methods by median, not by their single fastest run', () => {
    const peak = peakOf({ spiky: [100, 100, 100, 100, 100, 100, 900], steady: [110, 110, 111, 111, 112, 112, 112] });
    expect(peak.method).toBe('steady');
    expect(peak.value).toBe(111);
  });

  it('agrees with medianCI, and is [min, max] below 6 repetitions; the first method wins a tie', () => {
    const rates = Array.from({ length: 20 }, (_, i) => 4000 + 7 * ((i * 13) % 20));
    const [low, high] = medianCI(ascending(rates));
    expect(peakOf({ a: rates })).toMatchObject({ low, high, n: 20 });
    expect(peakOf({ a: [3, 1, 2, 5, 4] })).toEqual({ method: 'a', value: 3, low: 1, high: 5, n: 5 });
    expect(peakOf({ first: [2, 2, 2], second: [1, 2, 3] }).method).toBe('first');
  });

  it('brackets the true peak of noisy repetitions', () => {
    // 20 repetitions with ±0.5 % noise around 4800 GB/s, as the harness takes them
    const rng = createRng(7);
    const noisy = (center: number): number[] => Array.from({ length: 20 }, () => center * (1 + 0.01 * (rng() - 0.5)));
    const peak = peakOf({ memcpy: noisy(4300), 'copy kernel': noisy(4800), 'read stream': noisy(4700) });
    expect(peak.method).toBe('copy kernel');
    expect(peak.low).toBeLessThan(4800);
    expect(peak.high).toBeGreaterThan(4800);
    expect(peak.high - peak.low).toBeLessThan(0.01 * 4800);
  });

  it('rejects no methods, empty or non-positive rates', () => {
    expect(() => peakOf({})).toThrow(RangeError);
    expect(() => peakOf({ a: [] })).toThrow(RangeError);
    expect(() => peakOf({ a: [1, 0] })).toThrow(
      /Expected positive rates for ratesByMethod\['a'\] but received 0 of type number/,
    );
    expect(() => peakOf({ a: [1, Number.NaN] })).toThrow(RangeError);
    expect(() => peakOf([1, 2] as never)).toThrow(TypeError);
  });
});

describe('percentOf', () => {
  it('is 100·rate/peak with the two intervals at their worst pairing', () => {
    const p = percentOf({ value: 4810, low: 4800, high: 4820 }, { value: 4800, low: 4790, high: 4810 });
    expect(p.percent).toBeCloseTo(100.2083, 4); // 4810 / 4800
    expect(p.low).toBeCloseTo(99.7921, 4); // 4800 / 4810: the slowest rate against the highest peak
    expect(p.high).toBeCloseTo(100.6263, 4); // 4820 / 4790
  });

  it('a kernel at the true peak: its interval reaches 100 even when its median reads above', () => {
    // Both measured with ±0.5 % noise around the same true rate, as a plain copy kernel against the copy-kernel peak.
    const rng = createRng(11);
    const noisy = (): number[] => Array.from({ length: 20 }, () => 4800 * (1 + 0.01 * (rng() - 0.5)));
    let above = 0;
    for (let t = 0; t < 50; t++) {
      const peak = peakOf({ 'copy kernel': noisy() });
      const rate = ascending(noisy());
      const [low, high] = medianCI(rate);
      const p = percentOf({ value: quantile(rate, 0.5), low, high }, peak);
      if (p.percent > 100) above++;
      expect(p.low).toBeLessThanOrEqual(100);
      expect(p.high).toBeGreaterThanOrEqual(100);
    }
    expect(above).toBeGreaterThan(0); // it does read above 100 % at times: that is what the interval is for
  });

  it('rejects missing, non-positive or unordered figures', () => {
    const ok = { value: 2, low: 1, high: 3 };
    expect(() => percentOf(ok, { value: 2, low: 0, high: 3 })).toThrow(RangeError);
    expect(() => percentOf({ value: 2, low: 3, high: 4 }, ok)).toThrow(/low ≤ value ≤ high/);
    expect(() => percentOf({ value: '2', low: 1, high: 3 } as never, ok)).toThrow(TypeError);
    expect(() => percentOf(null as never, ok)).toThrow(TypeError);
  });
});
