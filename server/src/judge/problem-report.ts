// SPDX-License-Identifier: MIT
// What a submitter to a problem with cases may learn of its hidden cases: whether each ran and passed, and once every
// case passed its part of the score; never its name, dimensions, timings, report, error or outputs. A hidden case is
// there to catch a kernel fitted to the shapes it was shown, and anything more of it is something to fit to. Every
// path from a worker's ProblemReport to a client goes through here: the stored report (redactProblemReport), the
// job's verdict and error (problemVerdictOf), its progress and phase events (problemEventFilter) and the faults a
// submission is refused for (redactFaults). A hidden case is named 'hidden #k', k counting the hidden cases from 1.
import type {
  CaseVisibility,
  EvalError,
  EvalReport,
  JobProblem,
  ProblemCaseReport,
  ProblemProgress,
  ProblemReport,
} from 'cudakit';
import { type Verdict, verdictOf } from './verdict.js';

/** A hidden case as a submitter sees it. */
export interface HiddenCaseView {
  /** Its index in the problem's cases. */
  index: number;
  visibility: 'hidden';
  ran: boolean;
  passed: boolean;
  /** Its part of the score, once every case passed. */
  scored?: { speedup: number };
}

/** A ProblemReport as a submitter sees it: the public cases as the library gives them, the hidden ones redacted. */
export interface ProblemReportView extends Omit<ProblemReport, 'cases'> {
  cases: (ProblemCaseReport | HiddenCaseView)[];
}

/** The error of a job that failed in a hidden case: the same words whatever went wrong there. */
export const HIDDEN_CASE_FAILED = {
  code: 'HIDDEN_CASE_FAILED',
  message: 'a hidden case failed: its dimensions and what went wrong there are not shown',
} as const;

/** What identifies a case: its index, name (where known) and visibility. */
interface CaseRef {
  index: number;
  name?: string;
  visibility?: CaseVisibility;
}

/** How a hidden case is named where a submitter sees it: 'hidden #k', k counting the hidden cases from 1. */
export function hiddenLabel(k: number): string {
  return `hidden #${k}`;
}

/** Each hidden case's index, mapped to its k (from 1), in the problem's order. */
function hiddenOrdinals(cases: readonly CaseRef[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const c of cases) if (c.visibility === 'hidden') out.set(c.index, out.size + 1);
  return out;
}

/** Cases (a problem's, in order) with their index. */
export function caseRefs(cases: readonly { name?: string; visibility?: CaseVisibility }[]): CaseRef[] {
  return cases.map((c, index) => ({ index, ...c }));
}

/**
 * `faults` with every one that concerns a hidden case (the library labels a case's faults "case '<name>'
 * (problem.cases[i])") replaced by one line per hidden case that says only that it fails: a submission's message may
 * not carry a hidden case's name or dimensions. `cases` must carry every case's name as the library gives it.
 */
export function redactFaults(faults: readonly JobProblem[], cases: readonly CaseRef[]): JobProblem[] {
  const ordinals = hiddenOrdinals(cases);
  const hidden = cases.filter((c) => ordinals.has(c.index));
  const out: JobProblem[] = [];
  const said = new Set<number>();
  for (const f of faults) {
    const c = hidden.find(
      (h) =>
        f.path.includes(`(problem.cases[${h.index}])`) || (h.name !== undefined && f.message.includes(`'${h.name}'`)),
    );
    if (c === undefined) {
      out.push(f);
      continue;
    }
    if (said.has(c.index)) continue;
    said.add(c.index);
    const label = hiddenLabel(ordinals.get(c.index)!);
    out.push({
      path: 'job',
      type: f.type,
      message:
        `Expected a submission that works in every case for job but it fails in ${label} ` +
        '(what a hidden case holds is not shown)',
    });
  }
  return out;
}

/** An EvalError with its problems' hidden faults redacted (redactFaults), its message rebuilt from them. */
function redactError(error: EvalError, cases: readonly CaseRef[]): EvalError {
  const problems = error.problems ?? [];
  const names = cases.filter((c) => c.visibility === 'hidden' && c.name !== undefined).map((c) => c.name!);
  const redacted = redactFaults(problems, cases);
  const untouched = redacted.every((p, i) => p === problems[i]);
  if (untouched && redacted.length === problems.length && !names.some((n) => error.message.includes(`'${n}'`))) {
    return error;
  }
  const message = redacted.length === 0 ? HIDDEN_CASE_FAILED.message : redacted.map((p) => p.message).join('\n');
  return { kind: error.kind, code: error.code, message, problems: redacted };
}

/**
 * The report a submitter sees (and the service stores): each hidden case reduced to { index, visibility, ran,
 * passed } and, once every case passed, { scored: { speedup } }; the warnings that name a hidden case left out; the
 * score only where the job passed. Public cases are the library's, whole.
 */
export function redactProblemReport(report: ProblemReport): ProblemReportView {
  const hiddenNames = report.cases.filter((c) => c.visibility === 'hidden').map((c) => c.name);
  const cases = report.cases.map((c): ProblemCaseReport | HiddenCaseView => {
    if (c.visibility !== 'hidden') return structuredClone(c);
    const view: HiddenCaseView = { index: c.index, visibility: 'hidden', ran: c.ran, passed: c.passed };
    if (report.passed && c.scored !== undefined) view.scored = { speedup: c.scored.speedup };
    return view;
  });
  const passed = report.passed;
  return {
    problem: report.problem,
    name: report.name,
    passed,
    error: report.error === undefined ? undefined : redactError(report.error, report.cases),
    score: passed ? report.score : undefined,
    scoreLow: passed ? report.scoreLow : undefined,
    scoreHigh: passed ? report.scoreHigh : undefined,
    device: report.device === undefined ? undefined : { ...report.device },
    cases,
    // The library's warnings name a case as case '<name>'.
    warnings: report.warnings.filter((w) => !hiddenNames.some((n) => w.includes(`'${n}'`))),
  };
}

/** A problem job's verdict, its error (the client's to read), and the phase it names. */
export interface ProblemVerdict {
  verdict: Verdict;
  phase: EvalReport['phase'];
  error: { code: string; message: string; phase?: string } | undefined;
}

/**
 * The verdict of a problem job's report: PASSED when every case passed (SUSPICIOUS where a case's median read below
 * its roofline floor, which the score counts instead); else the verdict of the first public case that failed, with
 * its error; else, for a hidden case, HIDDEN_CASE_FAILED with the same words whatever happened there, and no phase.
 */
export function problemVerdictOf(report: ProblemReport): ProblemVerdict {
  const ordinals = hiddenOrdinals(report.cases);
  if (report.passed) {
    const floored = report.cases.filter((c) => c.scored?.floored === true);
    if (floored.length === 0) return { verdict: 'PASSED', phase: undefined, error: undefined };
    const which = floored.map((c) =>
      c.visibility === 'hidden' ? hiddenLabel(ordinals.get(c.index)!) : `case '${c.name}'`,
    );
    const message =
      `${which.join(', ')}: the median read below what the GPU's peaks allow (the roofline floor); ` +
      'the score counts the floor';
    return { verdict: 'SUSPICIOUS', phase: undefined, error: { code: 'SUSPICIOUS', message } };
  }
  if (report.error !== undefined) {
    const error = redactError(report.error, report.cases);
    const verdict = verdictOf({ passed: false, error } as EvalReport);
    return { verdict, phase: undefined, error: { code: error.code, message: error.message } };
  }
  const failed = report.cases.filter((c) => c.ran && !c.passed);
  const first = failed.find((c) => c.visibility !== 'hidden');
  if (first?.report !== undefined) {
    const e = first.report.error;
    const phase = first.report.phase;
    const verdict = verdictOf(first.report);
    const message = `case '${first.name}': ${e?.message ?? verdict}`;
    return { verdict, phase, error: { code: e?.code ?? verdict, message, ...(phase === undefined ? {} : { phase }) } };
  }
  if (failed.length > 0) return { verdict: 'HIDDEN_CASE_FAILED', phase: undefined, error: { ...HIDDEN_CASE_FAILED } };
  const message = 'no case of the problem ran';
  return { verdict: 'RUNTIME_ERROR', phase: undefined, error: { code: 'RUNTIME_ERROR', message } };
}

/** What a problem job's events may say: its progress, and whether a phase is shown. */
export interface ProblemEventFilter {
  /** The progress as a submitter sees it, or undefined to drop it. */
  progress(p: ProblemProgress): ProblemProgress | undefined;
  /** Whether a phase that begins now is shown (not while a hidden case runs). */
  showsPhase(): boolean;
}

/**
 * A filter of a problem job's progress, in the order the worker sends it: a hidden case's start named 'hidden #k'
 * (its dimensions left out), and nothing else of it (its check, samples and rounds, and its phases); a public case's
 * progress as it is.
 */
export function problemEventFilter(cases: readonly { visibility?: CaseVisibility }[]): ProblemEventFilter {
  const ordinals = hiddenOrdinals(caseRefs(cases));
  const publicIndexes = new Set(
    caseRefs(cases)
      .filter((c) => !ordinals.has(c.index))
      .map((c) => c.index),
  );
  let inHidden = false;
  return {
    progress(p) {
      if (p.kind === 'case') {
        const k = ordinals.get(p.index);
        inHidden = k !== undefined;
        return k === undefined ? p : { kind: 'case', index: p.index, name: hiddenLabel(k), visibility: 'hidden' };
      }
      return publicIndexes.has(p.caseIndex) ? p : undefined;
    },
    showsPhase: () => !inHidden,
  };
}
