// SPDX-License-Identifier: MIT
// evaluateProblem(): a submission through every case of a problem (problem.ts makes each case's EvalJob, evaluate()
// runs it), and the score over them (score.ts). The public cases run first, all of them, so that a failing kernel
// learns of every public case it fails; the hidden ones run only after every public one passed, and stop at the
// first that fails: a hidden case's job is to catch a kernel fitted to the shapes it was shown.
import { Device, checkOptions, typeError } from '../core/index.js';
import {
  type BenchResult,
  PRESETS,
  type PresetName,
  type StoppingRule,
  devicePeakOf,
  rooflineFloorMs,
} from '../measure/index.js';
import type { EvalOptions, EvalProgress, EvalTimingOptions } from './job.js';
import { evaluate, ruleOf } from './pipeline.js';
import { InvalidProblemError, validateProblem } from './problem.js';
import type { CaseVisibility, EvalProblem, ProblemSubmission } from './problem-types.js';
import { caseJob, caseName, caseWork, outputBytes } from './problem-case.js';
import type { EvalError, EvalReport } from './report.js';
import { type CaseScore, type CaseTiming, problemScore } from './score.js';

/** Progress of evaluateProblem(): each case as it starts, then its job's own progress. */
export type ProblemProgress =
  | {
      /** A case starts. */
      kind: 'case';
      /** Its index in the problem's cases. */
      index: number;
      /** Its name. */
      name: string;
      /** Whether it is public or hidden. */
      visibility: CaseVisibility;
    }
  | (EvalProgress & {
      /** The index of the case whose job this is. */
      caseIndex: number;
    });

/** Options of evaluateProblem(): evaluate()'s, progress per case, and which cases to run. */
export interface ProblemEvalOptions extends Omit<EvalOptions, 'onProgress'> {
  /** Called as the evaluation goes: each case as it starts, then its job's progress. */
  onProgress?: (progress: ProblemProgress) => void;
  /** 'all' (default), or 'public': the public cases only (feedback while writing a kernel), with no score. */
  cases?: 'all' | 'public';
  /** How long to sample each case, in place of the problem's preset: 'quick' while writing a kernel. */
  preset?: PresetName;
}

/** One case's outcome. */
export interface ProblemCaseReport {
  /** Its index in the problem's cases. */
  index: number;
  /** Its name. */
  name: string;
  /** Whether it is public or hidden. */
  visibility: CaseVisibility;
  /** Its dimensions' values. */
  dims: Record<string, number>;
  /** Whether it ran: a hidden case does not when a public one failed, nor after a hidden one failed. */
  ran: boolean;
  /** Whether its job passed. */
  passed: boolean;
  /** The baseline's median, µs, where the case was compared with one. */
  baselineUs?: number;
  /** The candidate's median, µs. */
  candidateUs?: number;
  /** baseline / candidate, and its 95 % interval, as measured (the score floors them: `scored`). */
  speedup?: number;
  /** Lower end of the speedup's 95 % interval. */
  speedupLow?: number;
  /** Upper end of the speedup's 95 % interval. */
  speedupHigh?: number;
  /** Bytes and flops of the launch (the problem's expressions for this case). */
  bytes?: number;
  /** Floating-point operations of the launch. */
  flops?: number;
  /** The least time physics allows the launch on this GPU, µs (undefined without bytes, flops or a known GPU). */
  floorUs?: number;
  /** The speedup the score counts: baseline / max(candidate, floor), and its interval. */
  scored?: CaseScore;
  /** The case's evaluate() report; undefined when it did not run. */
  report: EvalReport | undefined;
}

/** What evaluateProblem() resolves to. */
export interface ProblemReport {
  /** The problem's name. */
  problem: string;
  /** The submission's label: its name, or the kernel's. */
  name: string;
  /** Every case ran and passed (with cases: 'public', every public one). */
  passed: boolean;
  /** Why the problem could not be evaluated at all (an invalid problem or submission); undefined otherwise. */
  error: EvalError | undefined;
  /**
   * The geometric mean over the cases of baseline / candidate time, each candidate floored at its roofline: where
   * every case passed and was compared with the baseline (and not with cases: 'public').
   */
  score: number | undefined;
  /** Lower end of the score's 95 % interval. */
  scoreLow: number | undefined;
  /** Upper end of the score's 95 % interval. */
  scoreHigh: number | undefined;
  /** The GPU the cases ran on, as the driver names it, and its arch. */
  device:
    | {
        /** The driver's name for it ('NVIDIA H100 80GB HBM3'). */
        name: string;
        /** Its architecture, 'sm_90'. */
        arch: string;
      }
    | undefined;
  /** Every case, in the problem's order. */
  cases: ProblemCaseReport[];
  /** For the reader: a case below its floor, a case without a baseline ... */
  warnings: string[];
}

const OPTION_KEYS = [
  'reference',
  'onProgress',
  'signal',
  'baseDir',
  'device',
  'cases',
  'preset',
  'waitForGpu',
] as const;

/**
 * Evaluates `submission` on every case of `problem`: each case's job (caseJob()) through evaluate() on one device,
 * the public cases first, the hidden ones once the public ones passed; then the score. Never rejects for what is
 * wrong with the problem, the submission or the kernel: the report says it (`error`, or the failing case's report).
 *
 * @throws TypeError for options of the wrong type (as evaluate()).
 * @example
 * const report = await evaluateProblem(problem, {
 *   source: { file: 'add.cu' }, kernel: 'add', grid: 'cdiv(n, 256)', block: 256,
 * }, { baseDir: 'problems/vector-add' });
 * console.log(report.passed, report.score, report.scoreLow, report.scoreHigh);
 */
export async function evaluateProblem(
  problem: EvalProblem,
  submission: ProblemSubmission,
  options?: ProblemEvalOptions,
): Promise<ProblemReport> {
  const o = checkOptions('options', options, OPTION_KEYS) as ProblemEvalOptions;
  if (o.cases !== undefined && o.cases !== 'all' && o.cases !== 'public') {
    throw typeError('options.cases', "'all' or 'public'", o.cases);
  }
  if (o.preset !== undefined && !Object.hasOwn(PRESETS, o.preset)) {
    throw typeError('options.preset', `one of ${Object.keys(PRESETS).join(', ')}`, o.preset);
  }
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') {
    throw typeError('options.onProgress', 'a function', o.onProgress);
  }
  if (o.waitForGpu !== undefined && typeof o.waitForGpu !== 'function') {
    throw typeError('options.waitForGpu', 'a function', o.waitForGpu);
  }
  // Waited for once: every case after the first has the GPU already.
  let waited: Promise<void> | undefined;
  const waitForGpu = o.waitForGpu === undefined ? undefined : () => (waited ??= o.waitForGpu!());
  const label =
    typeof submission === 'object' && submission !== null && typeof submission.kernel === 'string'
      ? (submission.name ?? submission.kernel)
      : 'submission';
  const report: ProblemReport = {
    problem: typeof problem?.name === 'string' ? problem.name : 'problem',
    name: label,
    passed: false,
    error: undefined,
    score: undefined,
    scoreLow: undefined,
    scoreHigh: undefined,
    device: undefined,
    cases: [],
    warnings: [],
  };
  let p: EvalProblem;
  try {
    p = validateProblem(problem, submission);
  } catch (e) {
    if (!(e instanceof InvalidProblemError)) throw e;
    report.error = { kind: 'invalid-job', code: e.code, message: e.message, problems: [...e.problems] };
    return report;
  }
  report.cases = p.cases.map((c, index) => ({
    index,
    name: caseName(c),
    visibility: c.visibility ?? 'public',
    dims: { ...c.dims },
    ran: false,
    passed: false,
    ...caseWork(p, c),
    report: undefined,
  }));

  // One device for every case; where there is none, each case's evaluate() says why in its own report.
  let device = o.device;
  if (device === undefined) {
    try {
      device = Device.get(0);
    } catch {
      device = undefined;
    }
  }
  if (device !== undefined) report.device = { name: device.name, arch: device.arch };
  const peak = device === undefined ? undefined : devicePeakOf({ name: device.name, arch: device.arch });

  const order = [...report.cases].sort((a, b) => rank(a.visibility) - rank(b.visibility) || a.index - b.index);
  const planned = order.filter((c) => o.cases !== 'public' || c.visibility === 'public').length;
  let publicFailed = false;
  let first = true;
  for (const entry of order) {
    if (entry.visibility === 'hidden' && (o.cases === 'public' || publicFailed)) continue;
    o.onProgress?.({ kind: 'case', index: entry.index, name: entry.name, visibility: entry.visibility });
    const job = caseJob(p, submission, p.cases[entry.index]!);
    if (o.preset !== undefined) job.timing = { ...job.timing, preset: o.preset };
    // The case's share of the rule holds the problem's precision target, widened: it replaces timing.precision.
    const { precision: _, ...timing } = job.timing ?? {};
    job.timing = { ...timing, rule: caseShare(job.timing ?? {}, planned, first) };
    first = false;
    const caseOptions: EvalOptions = {};
    if (o.reference !== undefined) caseOptions.reference = o.reference;
    if (o.signal !== undefined) caseOptions.signal = o.signal;
    if (o.baseDir !== undefined) caseOptions.baseDir = o.baseDir;
    if (device !== undefined) caseOptions.device = device;
    if (waitForGpu !== undefined) caseOptions.waitForGpu = waitForGpu;
    const onProgress = o.onProgress;
    if (onProgress !== undefined) caseOptions.onProgress = (e) => onProgress({ ...e, caseIndex: entry.index });
    const r = await evaluate(job, caseOptions);
    entry.ran = true;
    entry.passed = r.passed;
    entry.report = r;
    timingOf(entry, r, peak, outputBytes(job));
    if (!r.passed) {
      publicFailed = true;
      // A hidden case that fails ends the run: the rest cannot change the verdict.
      if (entry.visibility === 'hidden') break;
      // A kernel that does not compile fails every case alike; without a GPU (or with a lost context) no later case
      // can run either.
      if (r.error?.kind === 'compile') break;
      if (r.error?.kind === 'cuda' && (r.phase === 'load' || r.phase === 'compile' || r.error.sticky === true)) break;
    }
  }

  const wanted = report.cases.filter((c) => o.cases !== 'public' || c.visibility === 'public');
  report.passed = wanted.length > 0 && wanted.every((c) => c.ran && c.passed);
  if (report.passed && o.cases !== 'public') score(report, wanted);
  return report;
}

const rank = (v: CaseVisibility): number => (v === 'public' ? 0 : 1);

/**
 * @internal A case's share of the stopping rule: the preset's sampling budget (minimum and maximum time, sample
 * counts) is the whole problem's, split among its `k` cases, and each case's precision target is √k times the
 * preset's, so that the score (a mean of k logarithms) is as precise as one job's timing and costs about as much.
 * The clock ramps in the first case: the later ones keep the minimum warm-up runs but a k-th of its time.
 */
export function caseShare(timing: EvalTimingOptions, k: number, first: boolean): Partial<StoppingRule> {
  const own = ruleOf(timing);
  const full: StoppingRule = { ...PRESETS[timing.preset ?? 'default'], ...own };
  if (k <= 1) return own;
  const share: Partial<StoppingRule> = {
    ...own,
    minSamples: Math.max(10, Math.ceil(full.minSamples / k)),
    minTimeMs: full.minTimeMs / k,
    timeoutMs: full.timeoutMs / k,
    maxSamples: Math.max(20, Math.ceil(full.maxSamples / k)),
    targetRelCI: full.targetRelCI * Math.sqrt(k),
    ...(full.maxGpuMs !== undefined ? { maxGpuMs: full.maxGpuMs / k } : {}),
  };
  if (!first) {
    share.warmupMinMs = full.warmupMinMs / k;
    share.warmupMaxMs = full.warmupMaxMs / k;
  }
  return share;
}

/** A case's medians, speedup and floor from its report. */
function timingOf(
  entry: ProblemCaseReport,
  r: EvalReport,
  peak: ReturnType<typeof devicePeakOf>,
  writtenBytes: number,
): void {
  const c = r.comparison;
  const candidate: BenchResult | undefined = c?.b ?? r.timing;
  if (candidate === undefined) return;
  entry.candidateUs = candidate.stats.median * 1e3;
  if (c !== undefined) {
    entry.baselineUs = c.a.stats.median * 1e3;
    entry.speedup = c.speedup;
    entry.speedupLow = c.speedupLow;
    entry.speedupHigh = c.speedupHigh;
  }
  if (peak !== undefined) {
    // Cold, the L2 is flushed before each sample: the inputs come from DRAM, but what the kernel writes may stay in
    // the L2 when it ends, so only that much of the traffic (at most the L2's size) is left out of the floor. Hot,
    // the inputs may be in the L2 too.
    const l2 = candidate.env.l2Bytes;
    const spared = candidate.mode === 'cold' ? Math.min(l2, writtenBytes) : l2;
    const floorMs = rooflineFloorMs({ bytes: entry.bytes, flops: entry.flops }, peak, spared);
    if (floorMs !== undefined) entry.floorUs = floorMs * 1e3;
  }
}

function score(report: ProblemReport, cases: ProblemCaseReport[]): void {
  const timings: CaseTiming[] = [];
  for (const c of cases) {
    if (c.baselineUs === undefined || c.speedup === undefined) {
      report.warnings.push(`case '${c.name}' has no baseline to compare with: the problem has no score`);
      return;
    }
    timings.push({
      baselineUs: c.baselineUs,
      candidateUs: c.candidateUs!,
      speedup: c.speedup,
      speedupLow: c.speedupLow!,
      speedupHigh: c.speedupHigh!,
      floorUs: c.floorUs,
    });
  }
  let s: ReturnType<typeof problemScore>;
  try {
    s = problemScore(timings);
  } catch (e) {
    // An interval widened to zero or below (a timer tick as wide as the time) has no logarithm: no score then.
    report.warnings.push(`no score: ${(e as Error).message}`);
    return;
  }
  cases.forEach((c, i) => {
    c.scored = s.cases[i]!;
    if (s.cases[i]!.floored) {
      report.warnings.push(
        `case '${c.name}': the candidate's median (${c.candidateUs!.toFixed(3)} µs) is below what the GPU's peaks ` +
          `allow (${c.floorUs!.toFixed(3)} µs): the score counts the floor`,
      );
    }
  });
  report.score = s.score;
  report.scoreLow = s.scoreLow;
  report.scoreHigh = s.scoreHigh;
}
