// SPDX-License-Identifier: MIT
// A submission to a problem with cases, checked before it is queued: `{ problem: '<name>', source, kernel, grid,
// block, sharedMemBytes?, compile?, headers?, name? }` beside the service's fields. Every field is a stranger's: the
// admission checks a job gets (the size caps, the #include and compile-option rules, names on one line), then the
// library's validateProblem(problem, submission) (every expression parsed and evaluated in every case, each case's job
// through validateJob), then each case's launch against the GPUs' limits. A fault in a hidden case is said without its
// name or dimensions (judge/problem-report.ts). Nothing here loads CUDA.
import {
  type EvalJob,
  type EvalProblem,
  InvalidJobError,
  InvalidProblemError,
  type JobProblem,
  type ProblemSubmission,
  caseJob,
  caseName,
  validateProblem,
} from 'cudakit';
import { caseRefs, redactFaults } from '../judge/problem-report.js';
import type { ProblemJob, ServiceOptions } from '../store/store.js';
import { type AdmissionLimits, DEFAULT_LAUNCH_LIMITS, admissionProblems, launchProblems } from './admission.js';
import type { ProblemRegistry } from './problems.js';

/** A submission that passed: the job to store, the problem it names, and the job of its first case (compile checks). */
export interface CheckedProblemJob {
  job: ProblemJob;
  problem: EvalProblem;
  firstCase: EvalJob;
}

const fault = (path: string, message: string, type: JobProblem['type'] = 'TypeError'): JobProblem => ({
  path,
  message,
  type,
});

/** The library's path from the submission ('submission.grid') as a path from the job ('job.grid'). */
const fromJob = (p: JobProblem): JobProblem => ({ ...p, path: p.path.replace(/^submission\b/, 'job') });

/**
 * Checks `body` (the request without the service's fields) as a submission to the problem it names.
 * @throws InvalidJobError with every fault found at the first stage that has some.
 */
export function checkProblemSubmission(
  body: Record<string, unknown>,
  options: ServiceOptions,
  problems: ProblemRegistry,
  limits: AdmissionLimits,
): CheckedProblemJob {
  const { problem: name, ...submission } = body;
  const problem = typeof name === 'string' ? problems.withCases(name) : undefined;
  if (typeof name !== 'string' || problem === undefined) throw new InvalidJobError([unknownProblem(name, problems)]);
  if (options.deviceMetrics) {
    const message =
      'Expected no deviceMetrics for job.deviceMetrics (a problem with cases is timed case by case; device ' +
      'metrics are for a single job) but received true';
    throw new InvalidJobError([fault('job.deviceMetrics', message)]);
  }
  const admitted = admissionProblems(submission, limits);
  if (admitted.length > 0) throw new InvalidJobError(admitted);
  const named = caseRefs(problem.cases.map((c) => ({ ...c, name: caseName(c) })));
  try {
    validateProblem(problem, submission);
  } catch (e) {
    if (!(e instanceof InvalidProblemError)) throw e;
    throw new InvalidJobError(redactFaults(e.problems.map(fromJob), named));
  }
  // Each case's launch within the GPUs' limits, each fault labelled as the library labels a case's.
  const s = submission as unknown as ProblemSubmission;
  const launch = limits.launch ?? DEFAULT_LAUNCH_LIMITS;
  const launches = problem.cases.flatMap((c, i) => {
    const label = `case '${caseName(c)}' (problem.cases[${i}])`;
    const job = caseJob(problem, s, c) as unknown as Record<string, unknown>;
    return launchProblems('job', job, launch).map((p) => ({
      ...p,
      path: `${label} ${p.path}`,
      message: `${label}: ${p.message}`,
    }));
  });
  // Over a limit in a hidden case: said by its number (its launch's values would tell its dimensions).
  if (launches.length > 0) throw new InvalidJobError(redactFaults(launches, named));
  // The compile check's case: a public one, since what it answers is not redacted (every problem has one unless an
  // operator installs only hidden cases; then the first, whose faults were said above by number only).
  const shown = problem.cases.find((c) => (c.visibility ?? 'public') === 'public') ?? problem.cases[0]!;
  return { job: { ...s, problem: name }, problem, firstCase: caseJob(problem, s, shown) };
}

/** The fault of a name that is no problem with cases here, with the names that are (and a single-shape one's way). */
function unknownProblem(name: unknown, problems: ProblemRegistry): JobProblem {
  const known = problems.namesWithCases();
  const shown = typeof name === 'string' ? `'${name.slice(0, 80)}'` : String(name);
  const installed =
    known.length === 0
      ? 'no problem with cases is installed on this server'
      : `installed: ${known.slice(0, 20).join(', ')}${known.length > 20 ? ', ...' : ''}`;
  const single =
    typeof name === 'string' && problems.list().some((p) => p.name === name)
      ? `; '${name}' is a single-shape problem: name it as reference: { problem: '${name}' } in a job`
      : '';
  const message =
    'Expected the name of an installed problem with cases for job.problem ' +
    `but received ${shown} (${installed}${single})`;
  return fault('job.problem', message, 'RangeError');
}
