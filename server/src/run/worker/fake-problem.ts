// SPDX-License-Identifier: MIT
// What the fake GPU worker (fake.ts) answers a submission to a problem with cases, and the tests' fake pool too: the
// progress and the ProblemReport evaluateProblem() would give, every case with what the library puts in it (its name,
// dimensions, timings and report, a warning naming it), so that a test can show none of a hidden case's reaches a
// client. No cudakit value is imported (the fake worker loads none).
import type {
  EvalError,
  EvalProblem,
  EvalReport,
  ProblemCaseReport,
  ProblemProgress,
  ProblemReport,
  ProblemSubmission,
} from 'cudakit';

/** How the submission does: every case passes, the second public case fails, or the first hidden one does. */
export type FakeProblemOutcome = 'pass' | 'public-fail' | 'hidden-fail';

/** A case's report: passed, or failed with `error` in the check. */
export type FakeCaseReport = (name: string, error: EvalError | undefined) => EvalReport;

/** The library's name of a case (caseName()): its own, else its dimensions. */
function nameOf(c: EvalProblem['cases'][number]): string {
  return (
    c.name ??
    Object.entries(c.dims)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')
  );
}

/** The cases in the order evaluateProblem() runs them (public first), and whether each runs and fails. */
function plan(problem: EvalProblem, outcome: FakeProblemOutcome): { index: number; runs: boolean; fails: boolean }[] {
  const order = problem.cases
    .map((c, index) => ({ index, hidden: c.visibility === 'hidden' }))
    .sort((a, b) => Number(a.hidden) - Number(b.hidden) || a.index - b.index);
  const publics = order.filter((c) => !c.hidden);
  const failing =
    outcome === 'public-fail'
      ? (publics[1] ?? publics[0])?.index
      : outcome === 'hidden-fail'
        ? order.find((c) => c.hidden)?.index
        : undefined;
  let stopped = false;
  return order.map(({ index, hidden }) => {
    // A failing public case keeps the hidden ones from running; a failing hidden one, the hidden ones after it.
    const runs = !stopped && !(hidden && outcome === 'public-fail');
    const fails = index === failing;
    if (fails && hidden) stopped = true;
    return { index, runs, fails };
  });
}

/** The label of the submission in reports: its name, else its kernel's. */
const labelOf = (s: ProblemSubmission): string => s.name ?? s.kernel;

/** The progress evaluateProblem() sends beside the phases: each case's start, then its samples, in run order. */
export function fakeProblemProgress(
  problem: EvalProblem,
  submission: ProblemSubmission,
  outcome: FakeProblemOutcome,
): ProblemProgress[] {
  return plan(problem, outcome)
    .filter((p) => p.runs)
    .flatMap(({ index }) => {
      const c = problem.cases[index]!;
      const name = nameOf(c);
      const visibility = c.visibility ?? 'public';
      const samples = { kind: 'samples', name: `${labelOf(submission)} [${name}]`, mode: 'cold' } as const;
      return [
        { kind: 'case', index, name, visibility },
        { ...samples, samples: 20, rejected: 0, elapsedMs: 1, relCI: 0.01, caseIndex: index },
      ];
    });
}

/** The ProblemReport of `outcome`: timings made up (speedup 2), the score where every case passed. */
export function fakeProblemReport(
  problem: EvalProblem,
  submission: ProblemSubmission,
  outcome: FakeProblemOutcome,
  caseReport: FakeCaseReport,
): ProblemReport {
  const label = labelOf(submission);
  const steps = new Map(plan(problem, outcome).map((p) => [p.index, p]));
  const cases = problem.cases.map((c, index): ProblemCaseReport => {
    const { runs, fails } = steps.get(index)!;
    const name = nameOf(c);
    const n = Object.values(c.dims).reduce((a, b) => a * b, 1);
    const error: EvalError | undefined = fails
      ? { kind: 'verdict', code: 'mismatch', defence: 'mismatch', message: `3 of ${n} elements differ (${name})` }
      : undefined;
    return {
      index,
      name,
      visibility: c.visibility ?? 'public',
      dims: { ...c.dims },
      ran: runs,
      passed: runs && !fails,
      ...(runs ? { baselineUs: 20, candidateUs: 10, speedup: 2, speedupLow: 1.9, speedupHigh: 2.1 } : {}),
      report: runs ? caseReport(`${label} [${name}]`, error) : undefined,
    };
  });
  const passed = cases.every((c) => c.passed);
  if (passed) for (const c of cases) c.scored = { speedup: 2, speedupLow: 1.9, speedupHigh: 2.1, floored: false };
  return {
    problem: problem.name,
    name: label,
    passed,
    error: undefined,
    score: passed ? 2 : undefined,
    scoreLow: passed ? 1.9 : undefined,
    scoreHigh: passed ? 2.1 : undefined,
    device: { name: 'NVIDIA H200', arch: 'sm_90' },
    cases,
    warnings: cases.map((c) => `case '${c.name}' ran on a fake GPU`),
  };
}
