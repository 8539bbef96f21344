// SPDX-License-Identifier: MIT
import { describe, expect, it } from 'vitest';
import type { BenchResult, BenchSample, CompareResult } from '../../lib/measure/types.js';
import {
  formatComparison,
  formatDuration,
  formatJson,
  formatResult,
  histogram,
  progressLine,
} from '../../lib/measure/format.js';

const ANSI = /\x1b\[/;
const BARS = '▁▂▃▄▅▆▇█';

/** Heights 0..8 of a sparkline (0 for an empty bin). */
const heights = (line: string): number[] => [...line].map((ch) => BARS.indexOf(ch) + 1);

function sample(gpuMs: number, rejected = false): BenchSample {
  return { gpuMs, eventMs: 2 * gpuMs, launchUs: 3.2, clockMHz: rejected ? 1200 : 1980, inputSet: 0, rejected };
}

/** A hand-built result: 20 accepted samples around 12.3 µs and one rejected, throttled 80 µs sample. */
function result(overrides: Partial<BenchResult> = {}): BenchResult {
  const accepted = Array.from({ length: 20 }, (_, i) => 0.0119 + (i % 10) * 0.0001 + (i === 19 ? 0.00312 : 0));
  return {
    name: 'saxpy',
    mode: 'hot',
    preset: 'default',
    timer: 'cupti',
    samples: [...accepted.map((ms) => sample(ms)), sample(0.08, true)],
    stats: {
      n: 200,
      min: 0.0119,
      max: 0.01502,
      mean: 0.01241,
      median: 0.01234,
      p10: 0.012,
      p25: 0.0122,
      p75: 0.0125,
      p90: 0.0131,
      p99: 0.0148,
      stdev: 0.0004,
      relStdev: 0.0322,
      iqr: 0.0003,
      mad: 0.0001,
      ciLow: 0.01228,
      ciHigh: 0.0124,
    },
    rejected: 3,
    warmupRuns: 12,
    wallMs: 1200,
    converged: true,
    stopReason: 'precision',
    clockMHz: 1980,
    throughput: { gbPerS: 228.46, tflopsPerS: 1.234, percentOfPeakBandwidth: 76.24 },
    env: {
      device: 'NVIDIA H100 80GB HBM3',
      arch: 'sm_90',
      smCount: 132,
      l2Bytes: 52428800,
      eventOverheadMs: 0.0016,
      maxClockMHz: 1980,
      driverVersion: '13.0',
      nvrtcVersion: '13.0',
      cudakitVersion: '0.1.0',
      node: 'v20.19.0',
      cupti: { available: true, path: '/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13', version: 130001 },
    },
    warnings: ['3 samples rejected (clock throttled)'],
    ...overrides,
  };
}

function comparison(overrides: Partial<CompareResult> = {}): CompareResult {
  const a = result();
  const b = result({ name: 'saxpy_v2', stats: { ...a.stats, median: 0.0067 } });
  return { a, b, speedup: 1.8418, speedupLow: 1.82, speedupHigh: 1.86, verdict: 'FASTER', rounds: 10, ...overrides };
}

describe('formatDuration', () => {
  it('scales to ns, µs, ms and s with 3-4 significant digits', () => {
    expect(formatDuration(0.0000123)).toBe('12.3 ns');
    expect(formatDuration(0.01234)).toBe('12.34 µs');
    expect(formatDuration(1.5)).toBe('1.50 ms');
    expect(formatDuration(2500)).toBe('2.50 s');
    expect(formatDuration(0.000001234)).toBe('1.23 ns');
    expect(formatDuration(0.000123)).toBe('123 ns');
    expect(formatDuration(0.123456)).toBe('123.5 µs');
    expect(formatDuration(123.456)).toBe('123.5 ms');
    expect(formatDuration(45.678)).toBe('45.68 ms');
  });

  it('switches unit exactly at each power of 1000', () => {
    expect(formatDuration(0.000999)).toBe('999 ns');
    expect(formatDuration(0.001)).toBe('1.00 µs');
    expect(formatDuration(0.999)).toBe('999.0 µs');
    expect(formatDuration(1)).toBe('1.00 ms');
    expect(formatDuration(999)).toBe('999.0 ms');
    expect(formatDuration(1000)).toBe('1.00 s');
  });

  it('moves up a unit when rounding reaches 1000, and drops a decimal when it reaches 100', () => {
    expect(formatDuration(0.0009996)).toBe('1.00 µs'); // 999.6 ns
    expect(formatDuration(0.99996)).toBe('1.00 ms'); // 999.96 µs
    expect(formatDuration(999.96)).toBe('1.00 s');
    expect(formatDuration(0.099996)).toBe('100.0 µs'); // 99.996 µs
  });

  it('handles sub-ns, zero, negative, huge and non-finite values', () => {
    expect(formatDuration(1e-7)).toBe('0.100 ns');
    expect(formatDuration(0)).toBe('0 ns');
    expect(formatDuration(-1.5)).toBe('-1.50 ms');
    expect(formatDuration(1234567)).toBe('1234.6 s'); // no unit above s
    expect(formatDuration(NaN)).toBe('n/a');
    expect(formatDuration(Infinity)).toBe('∞');
    expect(() => formatDuration('1' as unknown as number)).toThrow(
      new TypeError("Expected a number for ms but received '1' of type string"),
    );
  });
});

describe('histogram', () => {
  it('draws bar heights proportional to bin counts', () => {
    // Value k appears k + 1 times (k = 0..7): eight bins with counts 1..8.
    const values = Array.from({ length: 8 }, (_, k) => Array<number>(k + 1).fill(k)).flat();
    expect(histogram(values, 8, 1)).toBe('▁▂▃▄▅▆▇█');
    expect(
      histogram(
        [...values].reverse().map((v) => 7 - v),
        8,
        1,
      ),
    ).toBe('█▇▆▅▄▃▂▁');
  });

  it('has one character per bin', () => {
    const values = Array.from({ length: 500 }, (_, i) => Math.sin(i) + 2);
    for (const bins of [1, 5, 20, 64]) expect([...histogram(values, bins)]).toHaveLength(bins);
    expect([...histogram(values)]).toHaveLength(20);
    expect(histogram([], 7)).toBe('       ');
  });

  it('follows the shape of a known distribution', () => {
    const u = Array.from({ length: 1000 }, (_, i) => (i + 0.5) / 1000);
    // u² has a density falling from 0 to 1; √u has one rising.
    const falling = heights(
      histogram(
        u.map((x) => x * x),
        20,
        1,
      ),
    );
    const rising = heights(
      histogram(
        u.map((x) => Math.sqrt(x)),
        20,
        1,
      ),
    );
    expect(falling[0]).toBe(8);
    expect(rising[19]).toBe(8);
    for (let i = 1; i < 20; i++) {
      expect(falling[i]).toBeLessThanOrEqual(falling[i - 1]!);
      expect(rising[i]).toBeGreaterThanOrEqual(rising[i - 1]!);
    }
    expect(falling[19]).toBeLessThan(falling[0]!);
    expect(rising[0]).toBeLessThan(rising[19]!);
  });

  it('leaves empty bins blank', () => {
    expect(histogram([0, 10], 5, 1)).toBe('█   █');
    expect(histogram([0, 0, 0, 10], 5, 1)).toBe('█   ▃');
  });

  it('clips the tail beyond clipQuantile', () => {
    const values = [...Array.from({ length: 99 }, (_, i) => 1 + i / 98), 1000];
    expect(histogram(values, 10, 1)).toBe('█        ▁'); // the outlier squashes everything into bin 0
    const clipped = histogram(values, 10); // 0.99: the outlier is left out
    expect(clipped).toBe('██████████');
  });

  it('puts equal values in the first bin and ignores non-finite values', () => {
    expect(histogram([5, 5, 5], 4)).toBe('█   ');
    expect(histogram([NaN, Infinity, 1, 2], 2, 1)).toBe('██');
  });

  it('validates its arguments', () => {
    expect(() => histogram([1], 0)).toThrow(
      new RangeError('Expected an integer in [1, 10000] for bins but received 0 of type number'),
    );
    expect(() => histogram([1], 1.5)).toThrow(RangeError);
    expect(() => histogram([1], 20, 0)).toThrow(
      new RangeError('Expected a number in (0, 1] for clipQuantile but received 0 of type number'),
    );
    expect(() => histogram([1], 20, 1.5)).toThrow(RangeError);
    expect(() => histogram([1], 20, '0.5' as unknown as number)).toThrow(TypeError);
    expect(() => histogram('1,2' as unknown as number[])).toThrow(TypeError);
  });
});

describe('formatResult', () => {
  it('renders the mitata-style block', () => {
    const r = result();
    const accepted = r.samples.filter((s) => !s.rejected).map((s) => s.gpuMs);
    const lines = formatResult(r).split('\n');
    expect(lines).toEqual([
      'saxpy (hot, default, CUPTI)',
      '  median ±CI (min … max)  12.34 µs ±0.49%  (11.90 µs … 15.02 µs)',
      '  p75 · p99               12.50 µs · 14.80 µs',
      `  histogram (min … p99)   ${histogram(accepted)}`,
      '  samples                 200 accepted · 3 rejected · 12 warmup · stopped: precision · 1.20 s wall',
      '  clock                   1980 MHz (max 1980)',
      '  throughput              228.5 GB/s · 1.23 TFLOP/s · 76.2% of peak bandwidth',
      '  device                  NVIDIA H100 80GB HBM3 (sm_90)',
      '  ⚠ 3 samples rejected (clock throttled)',
    ]);
  });

  it('draws the histogram from accepted samples only', () => {
    const r = result();
    const accepted = histogram(r.samples.filter((s) => !s.rejected).map((s) => s.gpuMs));
    const all = histogram(r.samples.map((s) => s.gpuMs));
    expect(accepted).not.toBe(all);
    expect(formatResult(r)).toContain(accepted);
    expect(formatResult(r)).not.toContain(all);
    const none = formatResult(result({ samples: [sample(1, true)] }));
    expect(none).toContain('histogram (min … p99)   (no accepted samples)');
  });

  it('shows only the throughput figures present', () => {
    const gb = formatResult(result({ throughput: { gbPerS: 3352.07 } }));
    expect(gb).toContain('  throughput              3352.1 GB/s\n');
    const tflops = formatResult(result({ throughput: { tflopsPerS: 45.678 } }));
    expect(tflops).toContain('  throughput              45.68 TFLOP/s\n');
    const { throughput: _, ...none } = result();
    expect(formatResult(none)).not.toContain('throughput');
  });

  it('never prints a bare percentage of peak bandwidth above 100', () => {
    const line = (t: NonNullable<BenchResult['throughput']>): string =>
      formatResult(result({ throughput: t }))
        .split('\n')
        .find((l) => l.startsWith('  throughput'))!;
    // Within the peak's uncertainty: at the peak. ± is the wider half of the interval (100.7 - 100.2).
    expect(
      line({
        gbPerS: 4810,
        percentOfPeakBandwidth: 100.2,
        percentOfPeakBandwidthLow: 99.8,
        percentOfPeakBandwidthHigh: 100.7,
      }),
    ).toBe('  throughput              4810.0 GB/s · at the measured peak bandwidth (100.2% ± 0.5%)');
    // Clearly above it: said so, with what to check.
    expect(
      line({
        gbPerS: 5184,
        percentOfPeakBandwidth: 108,
        percentOfPeakBandwidthLow: 107.6,
        percentOfPeakBandwidthHigh: 108.4,
      }),
    ).toBe(
      '  throughput              5184.0 GB/s · above the measured peak bandwidth (108.0% ± 0.4%): ' +
        'check the bytes per launch, or whether L2 served part of the data',
    );
    // No interval (a result from elsewhere): nothing says it is within the uncertainty.
    expect(line({ percentOfPeakBandwidth: 100.3 })).toBe(
      '  throughput              above the measured peak bandwidth (100.3%): ' +
        'check the bytes per launch, or whether L2 served part of the data',
    );
    expect(
      line({ percentOfPeakBandwidth: 100.01, percentOfPeakBandwidthLow: 99.99, percentOfPeakBandwidthHigh: 100.03 }),
    ).toBe('  throughput              at the measured peak bandwidth (100.0% ± <0.1%)');
    // Up to 100 it stays a plain percentage, interval or not.
    expect(
      line({ percentOfPeakBandwidth: 100, percentOfPeakBandwidthLow: 99.5, percentOfPeakBandwidthHigh: 100.5 }),
    ).toBe('  throughput              100.0% of peak bandwidth');
    expect(line({ percentOfPeakBandwidth: 99.96 })).toBe('  throughput              100.0% of peak bandwidth');
    // A sweep: every figure printed as "N% of peak bandwidth" is at most 100.
    for (let p = 95; p <= 112; p += 0.05) {
      for (const half of [0, 0.3, 2]) {
        const text = line({
          percentOfPeakBandwidth: p,
          percentOfPeakBandwidthLow: p - half,
          percentOfPeakBandwidthHigh: p + half,
        });
        const bare = /([\d.]+)% of peak bandwidth/.exec(text);
        if (bare !== null) expect(Number(bare[1])).toBeLessThanOrEqual(100);
        else
          expect(text).toMatch(
            p - half <= 100 ? /at the measured peak bandwidth/ : /above the measured peak bandwidth/,
          );
      }
    }
  });

  it('keeps the raw percentage and the peak in the JSON', () => {
    const throughput = {
      gbPerS: 4810,
      percentOfPeakBandwidth: 100.2,
      percentOfPeakBandwidthLow: 99.8,
      percentOfPeakBandwidthHigh: 100.7,
      peakBandwidth: {
        gbPerS: 4800,
        lowGbPerS: 4790,
        highGbPerS: 4810,
        method: 'copy kernel' as const,
        repetitions: 20,
      },
    };
    const json = JSON.parse(formatJson(result({ throughput }))) as BenchResult;
    expect(json.throughput).toEqual(throughput);
  });

  it('says when the clock was not measured, sampling did not converge, and there is nothing to warn about', () => {
    const r = result({ clockMHz: 0, converged: false, stopReason: 'timeout', warnings: [] });
    const text = formatResult(r);
    expect(text).toContain('  clock                   not measured\n');
    expect(text).toContain('stopped: timeout (not converged)');
    expect(text).not.toContain('⚠');
    expect(text.endsWith('(sm_90)')).toBe(true);
  });

  it('uses the wider half of an asymmetric CI and copes with a median of 0 or NaN', () => {
    const base = result().stats;
    expect(formatResult(result({ stats: { ...base, median: 0.01, ciLow: 0.0099, ciHigh: 0.0112 } }))).toContain(
      '10.00 µs ±12.0%',
    );
    expect(formatResult(result({ stats: { ...base, median: NaN } }))).toContain('n/a ±n/a');
    expect(formatResult(result({ stats: { ...base, median: 0, ciLow: 0, ciHigh: 0 } }))).toContain('0 ns ±n/a');
  });

  it('emits ANSI colours only when color is true', () => {
    expect(formatResult(result())).not.toMatch(ANSI);
    expect(formatResult(result(), {})).not.toMatch(ANSI);
    expect(formatResult(result(), { color: false })).not.toMatch(ANSI);
    const colored = formatResult(result(), { color: true });
    expect(colored).toMatch(ANSI);
    expect(colored.startsWith('\x1b[1msaxpy\x1b[0m')).toBe(true);
    expect(colored).toContain('\x1b[33m⚠ 3 samples rejected (clock throttled)\x1b[0m');
    expect(colored.replace(/\x1b\[\d+m/g, '')).toBe(formatResult(result()));
  });

  it('rejects unknown or mistyped options', () => {
    expect(() => formatResult(result(), { colour: true } as unknown as { color: boolean })).toThrow(
      new TypeError('Unknown option options.colour; known options: color'),
    );
    expect(() => formatResult(result(), { color: 'yes' } as unknown as { color: boolean })).toThrow(
      new TypeError("Expected a boolean for options.color but received 'yes' of type string"),
    );
  });
});

describe('formatComparison', () => {
  it('names both results and states how much faster B is', () => {
    expect(formatComparison(comparison())).toBe(
      [
        'summary',
        '  saxpy_v2 is 1.84× faster than saxpy (95% CI 1.82 … 1.86) → FASTER',
        '  median 12.34 µs → 6.70 µs · 10 ABBA rounds',
      ].join('\n'),
    );
  });

  it('turns a speedup below 1 into N× slower with the interval inverted', () => {
    const text = formatComparison(comparison({ speedup: 0.5, speedupLow: 0.48, speedupHigh: 0.52, verdict: 'SLOWER' }));
    expect(text).toContain('  saxpy_v2 is 2.00× slower than saxpy (95% CI 1.92 … 2.08) → SLOWER');
  });

  it('phrases SAME and UNCERTAIN verdicts', () => {
    const same = comparison({ speedup: 1.003, speedupLow: 0.991, speedupHigh: 1.012, verdict: 'SAME' });
    expect(formatComparison(same)).toContain('  saxpy_v2 is about as fast as saxpy: 1.00× (95% CI 0.99 … 1.01) → SAME');
    const up = comparison({ speedup: 1.05, speedupLow: 0.97, speedupHigh: 1.14, verdict: 'UNCERTAIN' });
    expect(formatComparison(up)).toContain('  saxpy_v2 is 1.05× faster than saxpy (95% CI 0.97 … 1.14) → UNCERTAIN');
    const down = comparison({ speedup: 0.8, speedupLow: 0.5, speedupHigh: 1.25, verdict: 'UNCERTAIN' });
    expect(formatComparison(down)).toContain('  saxpy_v2 is 1.25× slower than saxpy (95% CI 0.80 … 2.00) → UNCERTAIN');
  });

  it('scales large ratios, labels equal names A and B, and survives an undefined speedup', () => {
    expect(formatComparison(comparison({ speedup: 12.5, speedupLow: 11.94, speedupHigh: 13.06 }))).toContain(
      'is 12.5× faster than saxpy (95% CI 11.9 … 13.1)',
    );
    const same = comparison();
    same.b = { ...same.b, name: 'saxpy' };
    expect(formatComparison(same)).toContain('  saxpy (B) is 1.84× faster than saxpy (A) (95% CI');
    expect(formatComparison(comparison({ speedup: NaN, verdict: 'UNCERTAIN' }))).toContain(
      '  saxpy_v2 vs saxpy: speedup n/a → UNCERTAIN',
    );
  });

  it('emits ANSI colours only when color is true', () => {
    expect(formatComparison(comparison())).not.toMatch(ANSI);
    const colored = formatComparison(comparison(), { color: true });
    expect(colored).toContain('\x1b[32mFASTER\x1b[0m');
    const slower = formatComparison(comparison({ speedup: 0.5, verdict: 'SLOWER' }), { color: true });
    expect(slower).toContain('\x1b[31mSLOWER\x1b[0m');
    expect(colored.replace(/\x1b\[\d+m/g, '')).toBe(formatComparison(comparison()));
  });
});

describe('formatJson', () => {
  it('round-trips a BenchResult with every sample', () => {
    const r = result();
    const text = formatJson(r);
    const back = JSON.parse(text) as BenchResult;
    expect(back).toEqual(r);
    expect(back.samples).toHaveLength(21);
    expect(back.samples[20]).toEqual({
      gpuMs: 0.08,
      eventMs: 0.16,
      launchUs: 3.2,
      clockMHz: 1200,
      inputSet: 0,
      rejected: true,
    });
  });

  it('round-trips a CompareResult', () => {
    const c = comparison();
    expect(JSON.parse(formatJson(c))).toEqual(c);
  });

  it('writes 64-bit integers (a CheckResult mismatch of an i64 output) as decimal strings', () => {
    const text = formatJson({ check: { mismatches: [{ arg: 1, index: 3, expected: 2n ** 63n - 1n, actual: -5n }] } });
    expect(JSON.parse(text).check.mismatches[0]).toEqual({
      actual: '-5',
      arg: 1,
      expected: '9223372036854775807',
      index: 3,
    });
  });

  it('indents by 2 spaces and sorts keys so equal values give equal text', () => {
    const r = result();
    const text = formatJson(r);
    const head = '{\n  "clockMHz": 1980,\n  "converged": true,\n  "env": {\n    "arch": "sm_90",\n    "cudakitVersion"';
    expect(text.startsWith(head)).toBe(true);
    const shuffled = Object.fromEntries(Object.entries(r).reverse()) as unknown as BenchResult;
    expect(formatJson(shuffled)).toBe(text);
    expect(text).toContain('\n    {\n      "clockMHz": 1980,\n      "eventMs": 0.0238,\n      "gpuMs": 0.0119,');
    expect(text.endsWith('\n}')).toBe(true);
  });

  it('writes null for non-finite numbers, leaves out undefined fields and rejects non-objects', () => {
    const r = result({ stats: { ...result().stats, median: NaN } });
    r.env.nvrtcVersion = undefined;
    const back = JSON.parse(formatJson(r)) as { stats: { median: unknown }; env: Record<string, unknown> };
    expect(back.stats.median).toBeNull();
    expect('nvrtcVersion' in back.env).toBe(false);
    expect(() => formatJson(null as unknown as BenchResult)).toThrow(TypeError);
    expect(() => formatJson([] as unknown as BenchResult)).toThrow(TypeError);
  });
});

describe('progressLine', () => {
  it('draws a bar, the count and the percentage for a known total', () => {
    expect(progressLine(42, 100, 'saxpy')).toBe('saxpy [████████░░░░░░░░░░░░]   42/100   42%');
    expect(progressLine(0, 100, 'saxpy')).toBe('saxpy [░░░░░░░░░░░░░░░░░░░░]    0/100    0%');
    expect(progressLine(100, 100, 'saxpy')).toBe('saxpy [████████████████████]  100/100  100%');
    expect(progressLine(0, 0, 'x')).toBe('x [████████████████████]  0/0  100%');
    expect(progressLine(150, 100, 'x')).toContain('[████████████████████]  150/100  100%');
  });

  it('keeps one length as done grows, so a \\r rewrite leaves nothing behind', () => {
    const lengths = new Set([0, 1, 9, 10, 99, 500, 999, 1000].map((d) => progressLine(d, 1000, 'bench').length));
    expect(lengths.size).toBe(1);
  });

  it('shows a bare count when the total is unknown', () => {
    expect(progressLine(42, undefined, 'saxpy samples')).toBe('saxpy samples  42');
  });

  it('contains no ANSI codes or line breaks, even from the label', () => {
    const line = progressLine(3, 10, 'a\x1b[31mb\nc\r');
    expect(line).not.toMatch(ANSI);
    expect(line).not.toMatch(/[\r\n]/);
    expect(line.startsWith('a [31mb c  [')).toBe(true);
  });

  it('validates its arguments', () => {
    expect(() => progressLine(-1, 10, 'x')).toThrow(
      new RangeError('Expected a non-negative integer for done but received -1 of type number'),
    );
    expect(() => progressLine(1.5, 10, 'x')).toThrow(RangeError);
    expect(() => progressLine(1, '10' as unknown as number, 'x')).toThrow(TypeError);
    expect(() => progressLine(1, 10, 5 as unknown as string)).toThrow(
      new TypeError('Expected a string for label but received 5 of type number'),
    );
  });
});
