// SPDX-License-Identifier: MIT
// The text of the MCP tools' results (http/routes/mcp.ts): a few lines a model reads before the JSON beside them. The
// verdict first, then what it needs to act on it: the first mismatch with its tolerance, the median with its
// confidence interval, the speedup with its interval, the compiler's diagnostics as file:line: message, the
// warnings. Pure: no I/O, every input is a stored record's or an answer's plain data.
import {
  formatComparison,
  formatDuration,
  type BenchResult,
  type CheckResult,
  type CompareResult,
  type EvalJob,
  type EvalReport,
} from 'cudakit';
import type { JobStatus } from '../../store/store.js';
import { hiddenLabel } from '../../judge/problem-report.js';
import type { Verdict } from '../../judge/verdict.js';

/** What the text is made of: a job's state as the record or GET /v1/evaluations/{id} has it. */
export interface Outcome {
  id: string;
  status: JobStatus;
  verdict: Verdict | undefined;
  phase: string | undefined;
  error: { code: string; message: string; phase?: string } | undefined;
  report: EvalReport | undefined;
  /** The validated job: argument names and the check's tolerances. */
  job: EvalJob | undefined;
  /** The GPU's name, once it ran. */
  gpu: string | undefined;
  /** The request mapping's warnings (the compatible requests'), before the report's own. */
  warnings: readonly string[];
}

/** One problem of a request: where (a field or a path) and what. */
export interface Problem {
  where: string;
  message: string;
}

/** Enough lines of a compiler log to fix the first errors; the rest is in the JSON. */
const LOG_LINES_MAX = 20;

const firstLine = (text: string): string => text.split('\n')[0]!.trim();

/** A figure of a stored report: JSON holds NaN and ±Infinity as null, which reads as NaN here ('n/a'). */
const num = (x: number | null): number => x ?? NaN;

/** A mismatching element's value: a 64-bit one is stored as a decimal string; null was not finite. */
const valueText = (v: number | bigint | string | null): string => (v === null ? 'NaN or ±Infinity' : String(v));

/** The job's verdict, or its status while there is none. */
function headline(o: Outcome): string {
  const name = o.report?.name ?? o.job?.name ?? o.job?.kernel;
  const where = [`evaluation ${o.id}`, ...(o.gpu === undefined ? [] : [o.gpu])].join(', ');
  const subject = name === undefined ? `(${where})` : `${name} (${where})`;
  if (o.status === 'queued' || o.status === 'running') {
    const phase = o.status === 'running' && o.phase !== undefined ? `, phase ${o.phase}` : '';
    return `${o.status.toUpperCase()}: ${subject}${phase}; not finished yet`;
  }
  if (o.verdict === undefined) {
    const why = o.error === undefined ? o.status : `${o.error.code}: ${firstLine(o.error.message)}`;
    return `${o.status === 'cancelled' ? 'CANCELLED' : 'FAILED'}: ${subject}: ${why}`;
  }
  return `${o.verdict}: ${subject}`;
}

/** The check that decided: a failing one (the re-check after timing may be it), else the last that ran. */
function decidingCheck(report: EvalReport | undefined): CheckResult | undefined {
  const check = report?.check;
  if (check === undefined || !('before' in check)) return undefined;
  const runs = [check.before, check.afterTiming].filter((c): c is CheckResult => c !== undefined);
  return runs.find((c) => !c.passed) ?? runs[runs.length - 1];
}

/** The argument's name in the job, when it has one ('y'), for 'argument 2 (y)'. */
function argumentName(job: EvalJob | undefined, index: number): string {
  const arg = job?.args?.[index] as unknown;
  const name = typeof arg === 'object' && arg !== null ? (arg as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? `argument ${index} (${name})` : `argument ${index}`;
}

/** The first failing element, with the tolerance it was held to when the job set one. */
function mismatchLine(check: CheckResult, job: EvalJob | undefined): string | undefined {
  const trial = check.trials.find((t) => !t.passed);
  const m = trial?.mismatches[0] ?? check.mismatches[0];
  if (m === undefined) return undefined;
  const got = valueText(m.actual);
  const expected = valueText(m.expected);
  const options = job?.check;
  let tolerance = "the dtype's default tolerance";
  if (options?.atol !== undefined && options.rtol !== undefined && typeof m.expected === 'number') {
    const bound = options.atol + options.rtol * Math.abs(m.expected);
    tolerance = `tolerance ${bound.toPrecision(3)} (atol ${options.atol} + rtol ${options.rtol}·|expected|)`;
  }
  const defence = trial?.defence ?? check.defence;
  return (
    `first mismatch: ${argumentName(job, m.arg)} index ${m.index}: got ${got}, expected ${expected}, ${tolerance}` +
    (defence === undefined ? '' : ` [${defence}${trial === undefined ? '' : `, trial ${trial.trial}`}]`)
  );
}

/** `median 12.34 µs ± 0.12 µs (95% CI 12.22 µs … 12.46 µs)`. */
function medianText(stats: { median: number; ciLow: number; ciHigh: number }): string {
  const [median, low, high] = [num(stats.median), num(stats.ciLow), num(stats.ciHigh)];
  const half = Math.max(median - low, high - median);
  return (
    `median ${formatDuration(median)} ± ${formatDuration(half)} ` +
    `(95% CI ${formatDuration(low)} … ${formatDuration(high)})`
  );
}

/** formatComparison's sentence: 'B is 2.00× faster than A (95% CI 1.90 … 2.10) → FASTER'. */
function speedupText(c: CompareResult): string {
  const withMedian = (r: BenchResult): BenchResult => ({ ...r, stats: { ...r.stats, median: num(r.stats.median) } });
  const figures = { speedup: num(c.speedup), speedupLow: num(c.speedupLow), speedupHigh: num(c.speedupHigh) };
  return formatComparison({ ...c, ...figures, a: withMedian(c.a), b: withMedian(c.b) })
    .split('\n')[1]!
    .trim();
}

/** The compiler's diagnostics as file:line: severity: message, else the head of its log. */
function compileLines(error: NonNullable<EvalReport['error']>): string[] {
  const diagnostics = error.diagnostics ?? [];
  if (diagnostics.length > 0) {
    const lines = diagnostics.slice(0, LOG_LINES_MAX).map((d) => `${d.file}:${d.line}: ${d.severity}: ${d.message}`);
    if (diagnostics.length > LOG_LINES_MAX) lines.push(`… ${diagnostics.length - LOG_LINES_MAX} more diagnostics`);
    return lines;
  }
  const log = (error.log ?? '').trim();
  if (log === '') return [firstLine(error.message)];
  const lines = log.split('\n');
  return lines.length > LOG_LINES_MAX ? [...lines.slice(0, LOG_LINES_MAX), '…'] : lines;
}

/**
 * A job's state as text: the headline (verdict, name, id, GPU), then what explains it. A finished job that passed
 * shows its check and timing; one that failed shows the first mismatch, the compiler's diagnostics or the error;
 * every job shows its warnings.
 */
export function formatOutcome(o: Outcome): string {
  const lines = [headline(o)];
  const report = o.report;
  const e = report?.error;
  if (e?.kind === 'compile') {
    const which = e.kernel === undefined || e.kernel === 'candidate' ? 'the kernel' : `the ${e.kernel} kernel`;
    lines.push(`${which} did not compile (${e.api ?? 'NVRTC'}: ${e.code}):`, ...compileLines(e));
  } else if (e !== undefined && o.verdict !== undefined && o.verdict !== 'PASSED') {
    lines.push(`error in phase ${report?.phase ?? o.phase ?? 'unknown'}: ${e.code}: ${firstLine(e.message)}`);
  } else if (e === undefined && o.verdict !== undefined && o.verdict !== 'PASSED' && o.error !== undefined) {
    // TIMEOUT, CRASHED (the supervisor's verdicts, without a report) and SUSPICIOUS say why in the record's error.
    lines.push(`${o.error.code}: ${firstLine(o.error.message)}`);
  }
  const check = decidingCheck(report);
  if (check !== undefined) {
    lines.push(`check: ${check.summary}`);
    if (!check.passed) {
      const mismatch = mismatchLine(check, o.job);
      if (mismatch !== undefined) lines.push(mismatch);
    }
  } else if (report?.check !== undefined && 'skipped' in report.check) {
    lines.push(`check: ${report.check.skipped}`);
  }
  lines.push(...problemLines(report));
  const timing = report?.timing;
  if (timing !== undefined) {
    const samples = timing.stats.n;
    lines.push(`time: ${medianText(timing.stats)}, ${timing.mode}, ${samples} samples`);
  }
  const comparison = report?.comparison;
  if (comparison !== undefined) {
    lines.push(`time: ${medianText(comparison.b.stats)}, ${comparison.b.mode}, ${comparison.b.stats.n} samples`);
    lines.push(`reference: ${medianText(comparison.a.stats)}`);
    lines.push(`speedup: ${speedupText(comparison)}`);
  }
  for (const w of [...o.warnings, ...(report?.warnings ?? [])]) lines.push(`warning: ${w}`);
  return lines.join('\n');
}

/**
 * A problem with cases' report (stored with its hidden cases redacted) as lines: the score, then a line per case that
 * ran; [] for any other report.
 */
function problemLines(report: unknown): string[] {
  const r = report as { cases?: unknown; score?: unknown; scoreLow?: unknown; scoreHigh?: unknown } | undefined;
  if (!Array.isArray(r?.cases)) return [];
  const lines: string[] = [];
  if (typeof r.score === 'number') {
    const interval =
      typeof r.scoreLow === 'number' ? ` (95% CI ${r.scoreLow.toFixed(3)} … ${Number(r.scoreHigh).toFixed(3)})` : '';
    lines.push(`score: ${r.score.toFixed(3)}${interval}, the geometric mean of the cases' speedups`);
  }
  let hidden = 0;
  for (const c of r.cases as {
    name?: string;
    visibility?: string;
    ran?: boolean;
    passed?: boolean;
    speedup?: number;
    scored?: { speedup?: number };
  }[]) {
    const name = c.visibility === 'hidden' ? hiddenLabel(++hidden) : `case ${c.name}`;
    if (c.ran !== true) continue;
    const speedup = c.scored?.speedup ?? c.speedup;
    const times = typeof speedup === 'number' ? `, ${speedup.toFixed(2)}× the baseline` : '';
    lines.push(`${name}: ${c.passed === true ? 'passed' : 'FAILED'}${times}`);
  }
  return lines;
}

/** A request's problems: the message, then one line per problem. */
export function formatProblems(message: string, problems: readonly Problem[]): string {
  return [message, ...problems.map((p) => `- ${p.where}: ${p.message}`)].join('\n');
}

/** GET /v1/gpus's answer as one line per GPU, and why there is none. */
export function formatGpus(list: {
  gpus: readonly { uuid: string; name: string; arch: string; state: string; jobs: number; lastError: string | null }[];
  reason: string | null;
}): string {
  if (list.gpus.length === 0) return `No GPU${list.reason === null ? '' : `: ${list.reason}`}`;
  const lines = list.gpus.map(
    (g, i) =>
      `${i}: ${g.name} (${g.arch}) ${g.uuid}: ${g.state}, ${g.jobs} jobs` +
      (g.lastError === null ? '' : `; last error: ${firstLine(g.lastError)}`),
  );
  return [`${list.gpus.length} GPU${list.gpus.length === 1 ? '' : 's'}:`, ...lines].join('\n');
}

/** GET /v1/problems's answer: a problem a line or a few (its dimensions, public cases, hidden ones counted). */
export function formatProblemList(list: {
  problems: readonly {
    name: string;
    description: string;
    kind?: 'cases';
    dims?: Record<string, { min: number; max: number }>;
    cases?: readonly { name: string; dims: Record<string, number> }[];
    hiddenCases?: number;
  }[];
}): string {
  if (list.problems.length === 0) return 'No problem is served here';
  const lines = list.problems.flatMap((p) => {
    const head = `${p.name}: ${firstLine(p.description)}`;
    if (p.kind !== 'cases') return [`${head} (one shape: a job names it as reference: { problem })`];
    const dims = Object.entries(p.dims ?? {}).map(([d, b]) => `${d} in [${b.min}, ${b.max}]`);
    const cases = (p.cases ?? []).map((c) => `${c.name} (${flatDims(c.dims)})`);
    return [
      `${head} (with cases: submit with problem: '${p.name}')`,
      `  dims: ${dims.join(', ')}`,
      `  public cases: ${cases.join('; ')}; hidden cases: ${p.hiddenCases ?? 0}`,
    ];
  });
  return [`${list.problems.length} problem${list.problems.length === 1 ? '' : 's'}:`, ...lines].join('\n');
}

const flatDims = (dims: Record<string, number>): string =>
  Object.entries(dims)
    .map(([d, v]) => `${d}=${v}`)
    .join(', ');

/** A leaderboard's answer as one line per entry. */
export function formatLeaderboard(board: {
  problem: string;
  gpuClass: string;
  entries: readonly {
    rank: number;
    displayName: string;
    score: number;
    scoreLow: number;
    scoreHigh: number;
    submittedAt: string;
    status: string;
  }[];
  next: number | null;
}): string {
  const title = `Leaderboard of ${board.problem} on ${board.gpuClass}`;
  if (board.entries.length === 0) return `${title}: no entry yet`;
  const lines = board.entries.map(
    (e) =>
      `${e.rank}. ${e.displayName}: ${e.score.toFixed(3)} [${e.scoreLow.toFixed(3)}, ${e.scoreHigh.toFixed(3)}], ` +
      `${e.submittedAt}, ${e.status}`,
  );
  const more = board.next === null ? [] : [`(more from offset ${board.next})`];
  return [`${title}:`, ...lines, ...more].join('\n');
}
