// SPDX-License-Identifier: MIT
// Renders benchmark results for people (mitata-style text: `median (min … max)`, p75/p99, scaled units, a ▁▂▃▄▅▆▇█
// histogram, `summary … N× faster than …`) and for scripts (JSON). Pure: no CUDA import, tested without a GPU.
import type { BenchResult, CompareResult, Summary, Throughput, Verdict } from './types.js';
import type { CheckResult } from './check-result.js';
import {
  checkBoolean,
  checkOptions,
  checkPositiveInt,
  checkSize,
  checkString,
  rangeError,
  typeError,
} from '../core/index.js';

/**
 * Options of the text formatters.
 * @inline
 */
export interface FormatOptions {
  /** Use ANSI colours. Default false; the CLI passes process.stdout.isTTY. */
  color?: boolean;
}

// Milliseconds per unit, smallest first (GPU times arrive in ms).
const UNITS = [
  ['ns', 1e-6],
  ['µs', 1e-3],
  ['ms', 1],
  ['s', 1e3],
] as const;

/**
 * A duration in ms as text in the unit that gives 3-4 significant digits: ns with 3 significant digits (sub-ns
 * digits mean nothing to an event timer), µs/ms/s with 2 decimals below 100 and 1 decimal from 100 up.
 * NaN is 'n/a'.
 *
 * @example formatDuration(0.0000123) // '12.3 ns'
 * @example formatDuration(0.01234) // '12.34 µs'
 * @example formatDuration(1.5) // '1.50 ms'
 * @example formatDuration(2500) // '2.50 s'
 * @throws TypeError when ms is not a number.
 */
export function formatDuration(ms: number): string {
  if (typeof ms !== 'number') throw typeError('ms', 'a number', ms);
  if (Number.isNaN(ms)) return 'n/a';
  const sign = ms < 0 ? '-' : '';
  const abs = Math.abs(ms);
  if (abs === Infinity) return `${sign}∞`;
  if (abs === 0) return '0 ns';
  // Largest unit in which the value is at least 1; step up again when rounding reaches 1000 (999.96 µs → 1.00 ms).
  let i = 0;
  while (i + 1 < UNITS.length && abs >= UNITS[i + 1]![1]) i++;
  for (; ; i++) {
    const [unit, scale] = UNITS[i]!;
    const text = digits(abs / scale, unit === 'ns');
    if (Number(text) < 1000 || i === UNITS.length - 1) return `${sign}${text} ${unit}`;
  }
}

function digits(v: number, nanoseconds: boolean): string {
  if (nanoseconds) return v >= 1 ? v.toPrecision(3) : v.toFixed(3);
  const two = v.toFixed(2);
  return Number(two) < 100 ? two : v.toFixed(1);
}

const BARS = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'] as const;

/**
 * A sparkline of the distribution: `bins` characters, bin i covering an equal slice of [min, q] where q is the
 * clipQuantile of the values (the slow tail beyond it is left out, as mitata does, so one outlier does not squash
 * the shape). Bar height is proportional to the bin's count, the fullest bin being '█'. Empty bins are ' ', so a
 * bin with a few samples ('▁') stays distinguishable from a bin with none. Non-finite values are ignored; no values
 * give all spaces; all-equal values put everything in the first bin.
 *
 * @throws TypeError / RangeError for a non-array, a bins count that is not a positive integer, or a clipQuantile
 *   outside (0, 1].
 */
export function histogram(values: readonly number[], bins = 20, clipQuantile = 0.99): string {
  if (!Array.isArray(values)) throw typeError('values', 'an array of numbers', values);
  checkPositiveInt('bins', bins, 10_000);
  if (typeof clipQuantile !== 'number') throw typeError('clipQuantile', 'a number in (0, 1]', clipQuantile);
  if (!(clipQuantile > 0 && clipQuantile <= 1)) throw rangeError('clipQuantile', 'a number in (0, 1]', clipQuantile);
  const sorted = values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((x, y) => x - y);
  const lo = sorted[0];
  if (lo === undefined) return ' '.repeat(bins);
  // Nearest-rank quantile: with 100 values and 0.99 the largest one is clipped.
  const hi = sorted[Math.max(0, Math.ceil(clipQuantile * sorted.length) - 1)] ?? lo;
  const counts = new Array<number>(bins).fill(0);
  for (const v of sorted) {
    if (v > hi) break;
    const bin = hi > lo ? Math.min(bins - 1, Math.floor(((v - lo) / (hi - lo)) * bins)) : 0;
    counts[bin] = (counts[bin] ?? 0) + 1;
  }
  const peak = Math.max(...counts);
  return counts.map((c) => (c === 0 ? ' ' : BARS[Math.max(0, Math.ceil((c / peak) * BARS.length) - 1)])).join('');
}

/** @internal `text` in the ANSI colour `code` when `on` (the one implementation; the CLI uses it too). */
export const paint = (on: boolean, code: string, text: string): string => (on ? `\x1b[${code}m${text}\x1b[0m` : text);
type Paint = (code: string, text: string) => string;
const painter =
  (on: boolean): Paint =>
  (code, text) =>
    paint(on, code, text);
const BOLD = '1';
const DIM = '2';
const RED = '31';
const GREEN = '32';
const YELLOW = '33';
const CYAN = '36';

function colorOption(options: unknown): boolean {
  const o = checkOptions('options', options, ['color'] as const);
  return o.color === undefined ? false : checkBoolean('options.color', o.color);
}

/** 2 decimals below 100, 1 from 100 up: 1.23, 45.67, 228.5. */
function fmtNumber(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'n/a' : '∞';
  return Math.abs(x) < 100 ? x.toFixed(2) : x.toFixed(1);
}

/** The 95 % CI of the median as ± percent of the median: the larger of its two halves (the CI is asymmetric). */
function ciPercent(s: Summary): string {
  const half = Math.max(s.median - s.ciLow, s.ciHigh - s.median);
  const pct = (half / s.median) * 100;
  if (!(s.median > 0) || !Number.isFinite(pct)) return '±n/a';
  return `±${pct < 10 ? pct.toFixed(2) : pct.toFixed(1)}%`;
}

const LABEL_WIDTH = 24;
/** @internal A report row: two spaces, the label padded to `width`, the value (the CLI's rows too). */
export const row = (label: string, value: string, width = LABEL_WIDTH): string => `  ${label.padEnd(width)}${value}`;

/**
 * A mitata-style text block for one result, for example:
 *
 * ```text
 * saxpy (hot, default)
 *   median ±CI (min … max)  12.34 µs ±0.52%  (11.90 µs … 15.02 µs)
 *   p75 · p99               12.50 µs · 14.80 µs
 *   histogram (min … p99)   ▁▂▃▅█▇▅▃▂▁
 *   samples                 200 accepted · 3 rejected · 12 warmup · stopped: precision · 1.20 s wall
 *   clock                   1980 MHz (max 1980)
 *   throughput              228.5 GB/s · 1.23 TFLOP/s · 76.2% of peak bandwidth
 *   device                  NVIDIA H100 80GB HBM3 (sm_90)
 *   ⚠ 3 samples rejected (clock throttled)
 * ```
 *
 * ± is the 95 % confidence interval of the median, as a percentage of it. The histogram covers accepted samples.
 * A share of the peak bandwidth above 100 % is never printed bare: it reads "at the measured peak bandwidth
 * (100.2% ± 0.5%)" when within the peak's uncertainty, "above the measured peak bandwidth (108.0% ± 0.4%): check the
 * bytes per launch, or whether L2 served part of the data" when clearly beyond it. No trailing newline.
 *
 * @throws TypeError for unknown options or a non-boolean color.
 */
export function formatResult(r: BenchResult, options?: FormatOptions): string {
  const paint = painter(colorOption(options));
  const s = r.stats;
  const lines = [
    `${paint(BOLD, r.name)} ${paint(DIM, `(${r.mode}, ${r.preset}, ${r.timer === 'cupti' ? 'CUPTI' : 'events'})`)}`,
    row(
      'median ±CI (min … max)',
      `${paint(CYAN, formatDuration(s.median))} ${ciPercent(s)}  ` +
        paint(DIM, `(${formatDuration(s.min)} … ${formatDuration(s.max)})`),
    ),
    row('p75 · p99', `${formatDuration(s.p75)} · ${formatDuration(s.p99)}`),
  ];
  const accepted = r.samples.filter((x) => !x.rejected).map((x) => x.gpuMs);
  const hist = accepted.length > 0 ? paint(CYAN, histogram(accepted)) : '(no accepted samples)';
  lines.push(row('histogram (min … p99)', hist));
  const stop = `stopped: ${r.stopReason}${r.converged ? '' : ' (not converged)'}`;
  lines.push(
    row(
      'samples',
      `${s.n} accepted · ${r.rejected} rejected · ${r.warmupRuns} warmup · ${stop} · ${formatDuration(r.wallMs)} wall`,
    ),
  );
  const maxClock = r.env.maxClockMHz > 0 ? ` (max ${Math.round(r.env.maxClockMHz)})` : '';
  lines.push(row('clock', r.clockMHz > 0 ? `${Math.round(r.clockMHz)} MHz${maxClock}` : 'not measured'));
  const t = r.throughput;
  const through: string[] = [];
  if (t?.gbPerS !== undefined) through.push(`${fmtNumber(t.gbPerS)} GB/s`);
  if (t?.tflopsPerS !== undefined) through.push(`${fmtNumber(t.tflopsPerS)} TFLOP/s`);
  if (t?.percentOfPeakBandwidth !== undefined) through.push(percentOfPeak(t));
  if (through.length > 0) lines.push(row('throughput', through.join(' · ')));
  lines.push(row('device', `${r.env.device} (${r.env.arch})`));
  for (const w of r.warnings) lines.push(`  ${paint(YELLOW, `⚠ ${w}`)}`);
  return lines.join('\n');
}

/**
 * The share of the measured peak bandwidth. Up to 100 % it is a plain percentage; above it, a bare figure would
 * read as a kernel faster than the hardware, so it says where the kernel stands against the peak's uncertainty
 * (percentOfPeakBandwidthLow/High): within it, "at the measured peak bandwidth (100.2% ± 0.5%)"; clearly above it,
 * "above the measured peak bandwidth (108.0% ± 0.4%): check the bytes per launch, or whether L2 served part of the
 * data" (a byte count that is too high, or writes still in L2 when the kernel ends, are the usual causes). ± is the
 * wider half of the interval.
 */
function percentOfPeak(t: Throughput): string {
  const p = t.percentOfPeakBandwidth!;
  if (!(p > 100)) return `${p.toFixed(1)}% of peak bandwidth`;
  const low = t.percentOfPeakBandwidthLow;
  const high = t.percentOfPeakBandwidthHigh;
  const half = low !== undefined && high !== undefined ? Math.max(p - low, high - p) : undefined;
  const pm = half === undefined || !Number.isFinite(half) ? '' : half < 0.05 ? ' ± <0.1%' : ` ± ${half.toFixed(1)}%`;
  const figure = `${p.toFixed(1)}%${pm}`;
  // Without an interval nothing says it is within the uncertainty: then it is above the peak as measured.
  if (low !== undefined && low <= 100) return `at the measured peak bandwidth (${figure})`;
  return (
    `above the measured peak bandwidth (${figure}): ` +
    'check the bytes per launch, or whether L2 served part of the data'
  );
}

/** Ratios: 2 decimals below 10, 1 below 1000, none above. */
function fmtRatio(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'n/a' : '∞';
  if (x < 10) return x.toFixed(2);
  return x < 1000 ? x.toFixed(1) : x.toFixed(0);
}

const VERDICT_COLOR: Record<Verdict, string> = { FASTER: GREEN, SLOWER: RED, SAME: DIM, UNCERTAIN: YELLOW };

/**
 * The mitata-style summary of an A/B comparison, naming a.name (reference) and b.name (candidate):
 *
 * ```text
 * summary
 *   saxpy_v2 is 1.84× faster than saxpy (95% CI 1.82 … 1.86) → FASTER
 *   median 12.34 µs → 6.70 µs · 10 ABBA rounds
 * ```
 *
 * Below 1 the speedup is turned into 'N× slower' with its interval inverted; SAME reads 'is about as fast as'. When
 * both names are equal they become 'name (A)' and 'name (B)'. Print formatResult(c.a) and formatResult(c.b) for
 * the details. No trailing newline.
 *
 * @throws TypeError for unknown options or a non-boolean color.
 */
export function formatComparison(c: CompareResult, options?: FormatOptions): string {
  const paint = painter(colorOption(options));
  const same = c.a.name === c.b.name;
  const a = paint(BOLD, same ? `${c.a.name} (A)` : c.a.name);
  const b = paint(BOLD, same ? `${c.b.name} (B)` : c.b.name);
  const ci = `(95% CI ${fmtRatio(c.speedupLow)} … ${fmtRatio(c.speedupHigh)})`;
  let sentence: string;
  if (!(c.speedup > 0) || !Number.isFinite(c.speedup)) {
    sentence = `${b} vs ${a}: speedup n/a`;
  } else if (c.verdict === 'SAME') {
    sentence = `${b} is about as fast as ${a}: ${fmtRatio(c.speedup)}× ${ci}`;
  } else if (c.speedup >= 1) {
    sentence = `${b} is ${fmtRatio(c.speedup)}× faster than ${a} ${ci}`;
  } else {
    // B slower: report A/B inverted so the factor reads above 1; the interval's ends swap.
    const lo = fmtRatio(1 / c.speedupHigh);
    const hi = fmtRatio(1 / c.speedupLow);
    sentence = `${b} is ${fmtRatio(1 / c.speedup)}× slower than ${a} (95% CI ${lo} … ${hi})`;
  }
  const medians = `median ${formatDuration(c.a.stats.median)} → ${formatDuration(c.b.stats.median)}`;
  return [
    paint(BOLD, 'summary'),
    `  ${sentence} → ${paint(VERDICT_COLOR[c.verdict], c.verdict)}`,
    `  ${paint(DIM, `${medians} · ${c.rounds} ABBA rounds`)}`,
  ].join('\n');
}

/**
 * Pretty JSON (2-space indent) with object keys sorted at every level, so the same result always gives the same
 * text. Samples are included. NaN and Infinity become null and undefined fields are left out, as JSON.stringify does;
 * bigints (64-bit integer values in a CheckResult's mismatches) become decimal strings.
 *
 * @throws TypeError when value is not an object.
 */
export function formatJson(value: BenchResult | CompareResult | CheckResult | Record<string, unknown>): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw typeError('value', 'a BenchResult, CompareResult or CheckResult', value);
  }
  return JSON.stringify(
    value,
    (_key, v: unknown) => {
      if (typeof v === 'bigint') return v.toString();
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
      const sorted: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
      return sorted;
    },
    2,
  );
}

const PROGRESS_WIDTH = 20;

/**
 * One line of progress for stderr: `label [██████░░░░░░░░░░░░░░]  42/100  42%`, or `label  42` when the total is
 * unknown. No ANSI codes and no newline: the caller writes '\r' before it (and clears the line when a label gets
 * shorter). With a known total the line keeps its length as done grows. Control characters in the label become
 * spaces so the line stays one line.
 *
 * @throws TypeError / RangeError when done or total is not a non-negative integer or label is not a string.
 */
export function progressLine(done: number, total: number | undefined, label: string): string {
  checkSize('done', done);
  if (total !== undefined) checkSize('total', total);
  const name = checkString('label', label).replace(/[\x00-\x1f\x7f]/g, ' ');
  if (total === undefined) return `${name}  ${done}`;
  const frac = total === 0 ? 1 : Math.min(done, total) / total;
  const filled = Math.floor(frac * PROGRESS_WIDTH);
  const bar = '█'.repeat(filled) + '░'.repeat(PROGRESS_WIDTH - filled);
  const count = `${String(done).padStart(String(total).length)}/${total}`;
  return `${name} [${bar}]  ${count}  ${String(Math.floor(frac * 100)).padStart(3)}%`;
}
