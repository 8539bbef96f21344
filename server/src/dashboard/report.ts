// SPDX-License-Identifier: MIT
// One evaluation's report as page sections: the check (the worst element against its tolerance), the timing (its
// histogram and samples), a comparison (the speedup with its interval), each kernel's compile facts, device metrics
// by group, the phases and warnings, and the sources with the compiler's diagnostics at their lines. A report is read
// as stored JSON: NaN became null and 64-bit values strings (formatJson), a failed job has only what ran, and an
// older worker may have written less; so every field is checked before it is shown, and what is missing is left out.
import type {
  BenchResult,
  CheckResult,
  CompareResult,
  DeviceMetric,
  DeviceMetrics,
  Diagnostic,
  EvalCheck,
  EvalCompileFacts,
  EvalError,
  EvalJob,
  EvalKernelRole,
  EvalReport,
  EvalSource,
} from 'cudakit';
import { formatMs, histogramSvg, samplesSvg, significant, speedupSvg } from './charts.js';
import { type Html, type HtmlValue, joinHtml, markup } from './html.js';
import type { StoredJob } from '../store/store.js';

/**
 * The report as stored: evaluate()'s, with the device metrics the worker adds when asked, and what it says of a
 * Python reference (run/worker/python-reference.ts; read here as stored JSON, every field checked).
 */
export type StoredReport = Partial<EvalReport> & {
  deviceMetrics?: DeviceMetrics | null;
  pythonReference?: unknown;
  pythonCandidate?: unknown;
};

const ROLES: readonly EvalKernelRole[] = ['candidate', 'reference', 'baseline', 'precise'];
const DEFAULT_SOURCE_NAME: Record<EvalKernelRole, string> = {
  candidate: 'candidate.cu',
  reference: 'reference.cu',
  baseline: 'baseline.cu',
  precise: 'precise.cu',
};
/** Nsight Compute's metric groups, in the order cudakit's formatDeviceMetrics prints them. */
const GROUP_TITLES: readonly (readonly [string, string])[] = [
  ['speedOfLight', 'Speed of light'],
  ['memory', 'Memory'],
  ['compute', 'Compute'],
  ['pipeline', 'Pipelines'],
  ['occupancy', 'Occupancy'],
  ['launch', 'Launch'],
  ['stalls', 'Warp stalls'],
  ['scheduler', 'Scheduler'],
  ['accessPattern', 'Access patterns'],
  ['roofline', 'Roofline'],
  ['other', 'Other'],
];
/** Nsight Compute's occupancy figures, shown beside the compile facts. */
const THEORETICAL_OCCUPANCY = 'sm__maximum_warps_per_active_cycle_pct';
const ACHIEVED_OCCUPANCY = 'sm__warps_active.avg.pct_of_peak_sustained_active';

// ---------------------------------------------------------------------------------------------------------------
// Reading stored JSON

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const list = <T>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : []);
/** An object field as stored, or an empty one when it is missing or not an object. */
const part = <T extends object>(v: T | null | undefined): Partial<T> => (isObject(v) ? (v as Partial<T>) : {});

/** The stored report text as an object, or undefined when there is none (or it is not one). */
export function parseReport(stored: string | undefined): StoredReport | undefined {
  if (stored === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(stored);
    return isObject(value) ? (value as StoredReport) : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Numbers

function fixed(v: number | undefined, digits: number, unit = ''): string {
  return v === undefined ? '—' : `${v.toFixed(digits)}${unit}`;
}

/** A share as a percentage: two decimals below 1 % (a small share would otherwise read 0.0 %). */
function percent(share: number): string {
  return fixed(share * 100, share < 0.01 && share > 0 ? 2 : 1, ' %');
}

function exp(v: unknown): string {
  const n = num(v);
  return n === undefined ? '—' : n === 0 ? '0' : n.toExponential(2);
}

function ms(v: unknown): string {
  const n = num(v);
  return n === undefined ? '—' : formatMs(n);
}

function bytes(v: number): string {
  if (v < 1024) return `${v} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let x = v / 1024;
  let i = 0;
  while (x >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return `${significant(x, 3)} ${units[i]}`;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/** A device metric in ncu's unit: 67108864 byte → '67,108,864 byte (64 MiB)'; text as it is. */
export function metricValue(m: Partial<DeviceMetric>): string {
  const v = m.value;
  if (typeof v === 'string') return v === '' ? 'n/a' : v;
  if (num(v) === undefined) return 'n/a';
  const n = v!;
  const digits = Number.isInteger(n) ? 0 : Math.abs(n) >= 0.01 ? 2 : 6;
  const unit = m.unit === undefined || m.unit === '' ? '' : m.unit === '%' ? ' %' : ` ${m.unit}`;
  const size = m.unit === 'byte' && Math.abs(n) >= 1024 ? ` (${bytes(n)})` : '';
  return `${n.toLocaleString('en-US', { maximumFractionDigits: digits })}${unit}${size}`;
}

type Fact = readonly [string, HtmlValue];

/** A list of label → value; rows that are false are left out. */
function facts(rows: readonly (Fact | false)[]): Html {
  const shown = rows.filter((r): r is Fact => r !== false);
  return markup`<dl class="facts">${shown.map(([k, v]) => markup`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`;
}

export function section(id: string, title: string, body: HtmlValue, wide = false): Html {
  return markup`<section class="card${wide ? ' wide' : ''}" id="${id}" aria-labelledby="${id}-h">
<h2 id="${id}-h">${title}</h2>${body}</section>`;
}

const badge = (value: string): Html => markup`<span class="badge" data-value="${value}">${value}</span>`;

function warningList(warnings: readonly unknown[]): Html | '' {
  const shown = warnings.filter((w): w is string => typeof w === 'string');
  return shown.length === 0 ? '' : markup`<ul class="plain small">${shown.map((w) => markup`<li>${w}</li>`)}</ul>`;
}

// ---------------------------------------------------------------------------------------------------------------
// Sections

/** Why a job failed: the service's error, and the report's (its kind, the call, the defence, the whole message). */
export function errorSection(
  error: { code: string; message: string; phase?: string } | undefined,
  reportError: EvalError | undefined,
): Html | '' {
  if (error === undefined && reportError === undefined) return '';
  const e = part(reportError);
  const api = text(e.api);
  const result = num(e.result);
  const problems = list<{ path?: unknown; message?: unknown }>(e.problems);
  const log = text(e.log) ?? '';
  const body = markup`${facts([
    ['Code', markup`<code>${text(e.code) ?? error?.code ?? ''}</code>`],
    text(e.kind) !== undefined && ['Kind', text(e.kind)],
    error?.phase !== undefined && ['Phase', error.phase],
    text(e.kernel) !== undefined && ['Kernel', text(e.kernel)],
    api !== undefined && ['Call', markup`<code>${api}</code>${result === undefined ? '' : ` (${result})`}`],
    text(e.where) !== undefined && ['Where', text(e.where)],
    text(e.defence) !== undefined && ['Defence', text(e.defence)],
    e.sticky === true && ['Context', 'lost (a sticky error: the worker was replaced)'],
  ])}<pre class="message">${text(e.message) ?? error?.message ?? ''}</pre>${
    problems.length === 0
      ? ''
      : markup`<ul class="plain">${problems.map(
          (p) => markup`<li><code>${text(p.path) ?? ''}</code> ${text(p.message) ?? ''}</li>`,
        )}</ul>`
  }${log === '' ? '' : markup`<details><summary>NVRTC log</summary><pre class="message">${log}</pre></details>`}`;
  return section('error', 'Error', body);
}

function mismatchTable(mismatches: readonly Record<string, unknown>[]): Html | '' {
  if (mismatches.length === 0) return '';
  // NaN was stored as null: in a check without a reference there is no expected value.
  const value = (v: unknown): string => (v === null || v === undefined ? 'NaN' : String(v));
  const rows = mismatches.map(
    (m) => markup`<tr><td class="num">${value(m.arg)}</td><td class="num">${value(m.index)}</td>
<td class="num mono">${value(m.expected)}</td><td class="num mono">${value(m.actual)}</td></tr>`,
  );
  return markup`<div class="scroll"><table><caption class="muted small">First failing elements</caption>
<thead><tr><th scope="col" class="num">Argument</th><th scope="col" class="num">Index</th>
<th scope="col" class="num">Expected</th><th scope="col" class="num">Actual</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
}

function checkFigures(r: Partial<CheckResult>, withReference: boolean): Html {
  const used = num(r.toleranceUsed);
  const trials = list<Record<string, unknown>>(r.trials);
  const details = trials.filter((t) => text(t.detail) !== undefined);
  const nondeterministic = num(r.nondeterministicElements);
  const worst =
    !withReference || used === undefined
      ? ''
      : markup`<p><meter min="0" max="1" low="0.5" high="0.9" optimum="0" value="${Math.min(1, used)}"
aria-label="The worst element's share of its tolerance">${percent(used)}</meter>
<strong>${percent(used)}</strong> of its tolerance used by the worst element
<span class="muted small">(|out − ref| ≤ atol + rtol·|ref|; above 100 % fails)</span></p>`;
  return markup`${worst}${facts([
    withReference && ['Max abs error', exp(r.maxAbsError)],
    withReference && ['Max rel error', exp(r.maxRelError)],
    withReference && ['Rel norm error', exp(r.relNormError)],
    num(r.matchedRatio) !== undefined && ['Matched', fixed(num(r.matchedRatio)! * 100, 2, ' %')],
    trials.length > 0 && ['Trials', `${trials.filter((t) => t.passed === true).length} of ${trials.length} passed`],
    nondeterministic !== undefined && [
      'Nondeterministic',
      `${plural(nondeterministic, 'element')} (${num(r.nondeterministicBeyondTolerance) ?? 0} beyond tolerance)`,
    ],
    text(r.defence) !== undefined && ['Defence', badge(text(r.defence)!)],
  ])}${mismatchTable(list<Record<string, unknown>>(r.mismatches))}${
    details.length === 0
      ? ''
      : markup`<ul class="plain small">${details.map(
          (t) => markup`<li>trial ${String(t.trial ?? '')}: ${text(t.detail)}</li>`,
        )}</ul>`
  }`;
}

/** The check before timing and the re-check after it: the verdict, the worst element against its tolerance. */
export function checkSection(check: EvalCheck | undefined, job: StoredJob): Html | '' {
  if (!isObject(check)) return '';
  if ('skipped' in check) {
    return section('check', 'Check', markup`<p class="muted">${text(check.skipped) ?? 'skipped'}</p>`);
  }
  const before = part(check.before);
  const after = isObject(check.afterTiming) ? part(check.afterTiming) : undefined;
  const withReference = before.referenceFree !== true;
  const options = part((job as Partial<EvalJob>).check);
  const tolerance =
    num(options.atol) !== undefined || num(options.rtol) !== undefined
      ? `atol ${num(options.atol) ?? 'the dtype’s'}, rtol ${num(options.rtol) ?? 'the dtype’s'}`
      : 'the dtype’s';
  const determinism = check.requireDeterminism === true ? ' · bitwise determinism required' : '';
  const body = markup`<p>${badge(check.passed === true ? 'PASSED' : 'FAILED')} against ${
    text(check.reference) ?? 'the reference'
  } <span class="muted small">· tolerance: ${tolerance}${determinism}</span></p>
<p class="small">${text(before.summary) ?? ''}</p>${checkFigures(before, withReference)}${
    after === undefined
      ? ''
      : markup`<h3>Re-check of the timed launches</h3><p class="small">${text(after.summary) ?? ''}</p>${
          after.passed === true ? '' : checkFigures(after, withReference)
        }`
  }`;
  return section('check', 'Check', body);
}

function throughputRows(t: Partial<BenchResult>): (Fact | false)[] {
  const tp = part(t.throughput);
  const gbPerS = num(tp.gbPerS);
  const tflopsPerS = num(tp.tflopsPerS);
  const peak = num(tp.percentOfPeakBandwidth);
  const low = num(tp.percentOfPeakBandwidthLow);
  const high = num(tp.percentOfPeakBandwidthHigh);
  const interval = low !== undefined && high !== undefined ? ` (${fixed(low, 1)}–${fixed(high, 1, ' %')})` : '';
  return [
    gbPerS !== undefined && ['Bandwidth', `${significant(gbPerS)} GB/s`],
    tflopsPerS !== undefined && ['Compute', `${significant(tflopsPerS)} TFLOP/s`],
    peak !== undefined && ['Of peak bandwidth', `${fixed(peak, 1, ' %')}${interval}`],
  ];
}

function samplesOf(t: Partial<BenchResult>): { gpuMs: number; rejected: boolean }[] {
  return list<Record<string, unknown>>(t.samples)
    .map((s) => ({ gpuMs: num(s.gpuMs) ?? NaN, rejected: s.rejected === true }))
    .filter((s) => Number.isFinite(s.gpuMs));
}

function histogramOf(t: Partial<BenchResult>, id: string, label: string, series?: 'b'): Html {
  const stats = part(t.stats);
  const accepted = samplesOf(t)
    .filter((s) => !s.rejected)
    .map((s) => s.gpuMs);
  return histogramSvg(accepted, {
    id,
    label,
    median: num(stats.median),
    ciLow: num(stats.ciLow),
    ciHigh: num(stats.ciHigh),
    ...(series === undefined ? {} : { series }),
  });
}

/** bench()'s result: the median with its interval, the spread, how sampling stopped, the histogram and the samples. */
export function timingSection(timing: BenchResult | undefined): Html | '' {
  if (!isObject(timing)) return '';
  const t = part(timing);
  const stats = part(t.stats);
  const env = part(t.env);
  const name = text(t.name) ?? 'the kernel';
  const samples = samplesOf(t);
  const rejected = samples.filter((s) => s.rejected).length;
  const low = num(stats.ciLow);
  const high = num(stats.ciHigh);
  const relStdev = num(stats.relStdev);
  const clockMHz = num(t.clockMHz);
  const maxClockMHz = num(env.maxClockMHz);
  const warmupRuns = num(t.warmupRuns);
  const converged = t.converged === true ? ' (converged)' : t.converged === false ? ' (not converged)' : '';
  const legend =
    rejected > 0
      ? markup` <span class="legend"><span>accepted</span><span class="rej">rejected (clock throttled)</span></span>`
      : '';
  const histogram = histogramOf(t, 'hist', name);
  const body = markup`<p><span class="headline">${ms(stats.median)}</span> median GPU time per launch${
    low !== undefined && high !== undefined
      ? markup` <span class="muted">(95 % interval ${ms(low)} – ${ms(high)})</span>`
      : ''
  }</p>
<div class="charts"><figure><figcaption>Distribution of the accepted samples</figcaption>${histogram}</figure>
<figure><figcaption>Samples over time${legend}</figcaption>
${samplesSvg('samples', [{ label: name, samples }], num(stats.median))}</figure></div>
<div class="grid">${facts([
    ['Samples', `${num(stats.n) ?? samples.length - rejected} accepted${rejected > 0 ? `, ${rejected} rejected` : ''}`],
    ['Range', `${ms(stats.min)} – ${ms(stats.max)}`],
    ['p10 / p90', `${ms(stats.p10)} / ${ms(stats.p90)}`],
    relStdev !== undefined && ['Rel. std. dev.', fixed(relStdev * 100, 2, ' %')],
    ['Mode', `${text(t.mode) ?? '—'}, preset ${text(t.preset) ?? '—'}`],
    ['Stopped', `${text(t.stopReason) ?? '—'}${converged}`],
    ...throughputRows(t),
  ])}${facts([
    text(env.device) !== undefined && [
      'Device',
      `${text(env.device)} (${text(env.arch) ?? '?'}, ${num(env.smCount) ?? '?'} SMs)`,
    ],
    clockMHz !== undefined && ['SM clock', `${clockMHz} MHz${maxClockMHz === undefined ? '' : ` of ${maxClockMHz}`}`],
    warmupRuns !== undefined && ['Warm-up', plural(warmupRuns, 'launch', 'launches')],
    num(t.wallMs) !== undefined && ['Wall time', ms(t.wallMs)],
    text(env.driverVersion) !== undefined && [
      'CUDA / NVRTC',
      `${text(env.driverVersion)} / ${text(env.nvrtcVersion) ?? '—'}`,
    ],
    num(env.eventOverheadMs) !== undefined && ['Event overhead', ms(env.eventOverheadMs)],
  ])}</div>${warningList(list(t.warnings))}`;
  return section('timing', 'Timing', body, true);
}

/** A Python reference (a server with --python): what it was, where it ran, and its timing, or why it was not timed. */
export function pythonReferenceSection(stored: unknown): Html | '' {
  return pythonKernelSection(stored, 'python-reference', 'Python reference');
}

/** A Python candidate (a server with --python): as a Python reference's section, its runner's timing its own. */
export function pythonCandidateSection(stored: unknown): Html | '' {
  return pythonKernelSection(stored, 'python-candidate', 'Python kernel');
}

function pythonKernelSection(stored: unknown, id: string, title: string): Html | '' {
  if (!isObject(stored)) return '';
  const p = stored;
  const runtime = part(p.runtime as Record<string, unknown> | undefined);
  const timing = part(p.timing as Record<string, unknown> | undefined);
  const stats = part(timing.stats as Record<string, unknown> | undefined);
  const low = num(stats.ciLow);
  const high = num(stats.ciHigh);
  const median =
    num(stats.median) === undefined
      ? markup`<p class="muted">${text(p.notTimed) ?? 'not timed'}</p>`
      : markup`<p><span class="headline">${ms(stats.median)}</span> median per call${
          low !== undefined && high !== undefined
            ? markup` <span class="muted">(95 % interval ${ms(low)} – ${ms(high)})</span>`
            : ''
        }</p>`;
  const body = markup`${median}<div class="grid">${facts([
    ['Kernel type', text(p.type) ?? '—'],
    ['Entry point', text(p.entry) ?? '—'],
    num(p.loadMs) !== undefined && ['Load', ms(p.loadMs)],
    (p.builds === 'kept' || p.builds === 'new') && [
      'Builds',
      p.builds === 'kept' ? 'kept from an earlier job (no cold build)' : 'made by this job',
    ],
    text(runtime.python) !== undefined && [
      'Python / torch',
      `${text(runtime.python)} / ${text(runtime.torch) ?? '—'} (${text(runtime.device) ?? '?'})`,
    ],
    num(stats.n) !== undefined && ['Samples', String(num(stats.n))],
    text(timing.stopReason) !== undefined && ['Stopped', text(timing.stopReason)!],
    text(timing.timer) !== undefined && ['Timer', text(timing.timer)!],
  ])}</div>`;
  return section(id, title, body);
}

/** compare()'s result: the speedup of B over A with its bootstrap interval, and both kernels' timings. */
export function comparisonSection(comparison: CompareResult | undefined): Html | '' {
  if (!isObject(comparison)) return '';
  const c = part(comparison);
  const a = part(c.a);
  const b = part(c.b);
  const speedup = num(c.speedup);
  const low = num(c.speedupLow);
  const high = num(c.speedupHigh);
  const aName = text(a.name) ?? 'A';
  const bName = text(b.name) ?? 'B';
  const verdict = text(c.verdict);
  const side = (r: Partial<BenchResult>, name: string, role: string, series?: 'b'): Html => {
    const stats = part(r.stats);
    const histogram = histogramOf(r, `hist-${series ?? 'a'}`, name, series);
    return markup`<figure><figcaption>${role}: ${name} · median ${ms(stats.median)}
(${ms(stats.ciLow)} – ${ms(stats.ciHigh)})</figcaption>${histogram}</figure>`;
  };
  const interval =
    low !== undefined && high !== undefined
      ? markup` <span class="muted">(95 % interval ${significant(low, 3)}× – ${significant(high, 3)}×,
${plural(num(c.rounds) ?? 0, 'ABBA round')})</span>`
      : '';
  const chart =
    speedup !== undefined && low !== undefined && high !== undefined ? speedupSvg('speedup', speedup, low, high) : '';
  const samples = samplesSvg(
    'samples',
    [
      { label: aName, samples: samplesOf(a) },
      { label: bName, samples: samplesOf(b), series: 'b' },
    ],
    undefined,
  );
  const body = markup`<p>${verdict === undefined ? '' : badge(verdict)} <span class="headline">${
    speedup === undefined ? '—' : `${significant(speedup, 3)}×`
  }</span> speedup of <strong>${bName}</strong> over <strong>${aName}</strong>${interval}</p>${chart}
<div class="charts">${side(a, aName, 'A (baseline)')}${side(b, bName, 'B (candidate)', 'b')}
<figure><figcaption>Samples over time <span class="legend"><span>A</span><span class="b">B</span></span></figcaption>
${samples}</figure></div>
${warningList([...list(a.warnings), ...list(b.warnings)])}`;
  return section('comparison', 'Comparison', body, true);
}

function occupancy(metrics: DeviceMetrics | null | undefined): string {
  const all = part(part(metrics ?? undefined).metrics);
  const theoretical = num(all[THEORETICAL_OCCUPANCY]?.value);
  const achieved = num(all[ACHIEVED_OCCUPANCY]?.value);
  if (theoretical === undefined && achieved === undefined) return 'not measured (submit with deviceMetrics: true)';
  return [
    theoretical === undefined ? undefined : `${fixed(theoretical, 1, ' %')} theoretical`,
    achieved === undefined ? undefined : `${fixed(achieved, 1, ' %')} achieved`,
  ]
    .filter((s) => s !== undefined)
    .join(', ');
}

function compileFacts(role: EvalKernelRole, f: Partial<EvalCompileFacts>, report: StoredReport): Html {
  const spills = num(f.spillBytes);
  const compileMs = num(f.compileMs);
  const shared = num(f.sharedSizeBytes);
  const constant = num(f.constSizeBytes);
  const flags = list<string>(f.flags).filter((s) => typeof s === 'string');
  const log = text(f.log) ?? '';
  const compiled =
    f.cached === 'memory' || f.cached === 'disk'
      ? `from the ${f.cached} cache`
      : compileMs === undefined
        ? '—'
        : `in ${ms(compileMs)}`;
  const target = `${text(f.target) ?? '—'} for ${text(f.arch) ?? 'the driver to choose'}`;
  return markup`<h3>${role}: <code>${text(f.kernel) ?? ''}</code></h3>${facts([
    text(f.loweredName) !== undefined &&
      f.loweredName !== f.kernel && ['Symbol', markup`<code>${text(f.loweredName)}</code>`],
    ['Target', `${target} · NVRTC ${text(f.nvrtcVersion) ?? '—'}`],
    ['Compiled', compiled],
    num(f.registers) !== undefined && ['Registers', `${num(f.registers)} per thread`],
    spills !== undefined && [
      'Spills',
      spills === 0 ? 'none' : markup`<span class="badge bad">${bytes(spills)} of local memory per thread</span>`,
    ],
    shared !== undefined && ['Shared memory', `${bytes(shared)} static per block`],
    constant !== undefined && constant > 0 && ['Constant memory', bytes(constant)],
    num(f.maxThreadsPerBlock) !== undefined && ['Max threads/block', String(num(f.maxThreadsPerBlock))],
    role === 'candidate' && ['Occupancy', occupancy(report.deviceMetrics)],
    flags.length > 0 && ['Flags', markup`<code>${joinHtml(flags, ' ')}</code>`],
  ])}${log === '' ? '' : markup`<details><summary>NVRTC log</summary><pre class="message">${log}</pre></details>`}`;
}

/** Each kernel's compile facts: registers, spills, shared and constant memory, limits, occupancy, flags, log. */
export function compileSection(report: StoredReport): Html | '' {
  const compile = part(report.compile);
  const roles = ROLES.filter((r) => isObject(compile[r]));
  if (roles.length === 0) return '';
  return section(
    'compile',
    'Compile',
    roles.map((role) => compileFacts(role, part(compile[role]), report)),
  );
}

/** Nsight Compute's metrics of one launch, by group. */
export function metricsSection(metrics: DeviceMetrics | null | undefined, asked: boolean): Html | '' {
  if (!isObject(metrics)) {
    const none = markup`<p class="muted">None were collected (the warnings say why).</p>`;
    return asked ? section('metrics', 'Device metrics', none) : '';
  }
  const groups: Record<string, unknown> = part(metrics.groups);
  const unavailable = list<string>(metrics.unavailable);
  const wallMs = num(metrics.wallMs);
  const tables = GROUP_TITLES.map(([key, title]) => {
    const group = groups[key];
    if (!isObject(group) || Object.keys(group).length === 0) return '';
    const rows = Object.entries(group).map(
      ([name, m]) =>
        markup`<tr><td class="mono">${name}</td><td class="num">${metricValue(part(m as DeviceMetric))}</td></tr>`,
    );
    const table = markup`<table class="metrics"><tbody>${rows}</tbody></table>`;
    return markup`<div><h3>${title}</h3><div class="scroll">${table}</div></div>`;
  });
  const body = markup`<p class="small muted"><code>${text(metrics.kernel) ?? ''}</code> · ncu ${
    text(metrics.ncuVersion) ?? ''
  } · one launch${wallMs === undefined ? '' : ` · ${ms(wallMs)} under ncu`}</p><div class="grid">${tables}</div>${
    unavailable.length === 0
      ? ''
      : markup`<p class="small muted">Not available on this GPU: ${joinHtml(unavailable, ', ')}</p>`
  }`;
  return section('metrics', 'Device metrics', body, true);
}

/** The phases that ran with their wall times, and the report's warnings. */
export function phasesSection(report: StoredReport): Html | '' {
  const phases = list<Record<string, unknown>>(report.phases);
  const warnings = list(report.warnings);
  if (phases.length === 0 && warnings.length === 0) return '';
  const ran =
    phases.length === 0
      ? ''
      : markup`<ol class="plain">${phases.map(
          (p) => markup`<li>${text(p.phase) ?? '?'} <span class="muted">${ms(p.ms)}</span></li>`,
        )}</ol>`;
  return section(
    'phases',
    'Phases',
    markup`${ran}${warnings.length === 0 ? '' : markup`<h3>Warnings</h3>${warningList(warnings)}`}`,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Sources

interface SourceText {
  role: EvalKernelRole;
  name: string;
  text: string;
}

function sourceText(source: EvalSource | undefined, role: EvalKernelRole): SourceText | undefined {
  if (typeof source === 'string') return { role, name: DEFAULT_SOURCE_NAME[role], text: source };
  if (isObject(source) && 'text' in source && typeof source.text === 'string') {
    return { role, name: text(source.name) ?? DEFAULT_SOURCE_NAME[role], text: source.text };
  }
  return undefined;
}

/** The job's sources (candidate, reference kernel, compare baseline, precise reference) as submitted. */
function sourcesOf(job: StoredJob): SourceText[] {
  // A submission to a problem has its kernel's source only (the problem's kernels are the operator's).
  const { reference, compare, check } = job as Partial<EvalJob>;
  const refs: [EvalKernelRole, unknown][] = [
    ['reference', reference],
    ['baseline', compare],
    ['precise', check?.precision?.reference],
  ];
  const others = refs.map(([role, ref]) =>
    isObject(ref) && 'source' in ref ? sourceText(ref.source as EvalSource, role) : undefined,
  );
  return [sourceText(job.source, 'candidate'), ...others].filter((s): s is SourceText => s !== undefined);
}

/** A kernel's diagnostics (its compile facts' warnings and, when its compile failed, the error's), and its file. */
function diagnosticsOf(report: StoredReport, role: EvalKernelRole): { diagnostics: Diagnostic[]; file?: string } {
  const f = part(part(report.compile)[role]);
  const e = part(report.error);
  const failed = e.kind === 'compile' && (e.kernel ?? 'candidate') === role;
  const all = [...list<Diagnostic>(f.diagnostics), ...(failed ? list<Diagnostic>(e.diagnostics) : [])];
  const seen = new Set<string>();
  const diagnostics = all.filter(isObject).filter((d) => {
    const key = `${String(d.file)}:${String(d.line)}:${String(d.column)}:${String(d.message)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const file = text(f.source) ?? (failed ? text(e.source) : undefined);
  return file === undefined ? { diagnostics } : { diagnostics, file };
}

function diagnostic(d: Diagnostic): Html {
  const column = num(d.column);
  return markup`<span class="diag" role="note" data-severity="${text(d.severity) ?? 'warning'}"><strong>${
    text(d.severity) ?? 'note'
  }</strong> ${column === undefined ? '' : `column ${column}: `}${text(d.message) ?? ''}</span>`;
}

function listing(source: SourceText, report: StoredReport): Html {
  const { diagnostics, file } = diagnosticsOf(report, source.role);
  const name = file ?? source.name;
  const lines = source.text.split(/\r?\n/);
  const atLine = new Map<number, Diagnostic[]>();
  const elsewhere: Diagnostic[] = [];
  for (const d of diagnostics) {
    const line = num(d.line);
    if (d.file === name && line !== undefined && line >= 1 && line <= lines.length) {
      atLine.set(line, [...(atLine.get(line) ?? []), d]);
    } else {
      elsewhere.push(d);
    }
  }
  const id = source.role === 'candidate' ? 'L' : `${source.role}-L`;
  const flagged = [...atLine.keys()].sort((x, y) => x - y);
  const links =
    flagged.length === 0
      ? ''
      : markup`<p class="small">Diagnostics at ${joinHtml(
          flagged.map((n) => markup`<a href="#${id}${n}">line ${n}</a>`),
          ', ',
        )}</p>`;
  const other =
    elsewhere.length === 0
      ? ''
      : markup`<p class="small">${elsewhere.map(
          (d) => markup`<code>${text(d.file) ?? ''}:${num(d.line) ?? ''}</code> ${diagnostic(d)}`,
        )}</p>`;
  const items = lines.map((line, i) => {
    const here = atLine.get(i + 1);
    return here === undefined
      ? markup`<li id="${id}${i + 1}"><code>${line}</code></li>`
      : markup`<li id="${id}${i + 1}" class="flagged"><code>${line}</code>${here.map(diagnostic)}</li>`;
  });
  return markup`<h3>${source.role}: <code>${name}</code></h3>${links}${other}
<ol class="source" aria-label="${source.role} source, ${plural(lines.length, 'line')}">${items}</ol>`;
}

/** The sources as submitted, each line numbered, the compiler's diagnostics under the lines they are about. */
export function sourceSection(job: StoredJob, report: StoredReport): Html | '' {
  const sources = sourcesOf(job);
  if (sources.length === 0) return '';
  return section(
    'source',
    'Source',
    sources.map((s) => listing(s, report)),
    true,
  );
}
