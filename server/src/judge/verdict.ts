// SPDX-License-Identifier: MIT
// The kernel's verdict, separate from the job's status (did the service finish). Mapped from cudakit's EvalReport:
// the phase that failed, its error kind and the defence that fired; the supervisor adds TIMEOUT and CRASHED, and a
// problem with cases HIDDEN_CASE_FAILED (problem-report.ts: a hidden case failed, and what happened there is not said).
import type { EvalReport } from 'cudakit';

export const VERDICTS = [
  'PASSED',
  'COMPILE_ERROR',
  'SIGNATURE_MISMATCH',
  'INCORRECT',
  'UNWRITTEN',
  'OUT_OF_BOUNDS',
  'INPUT_MODIFIED',
  'NON_FINITE',
  'ALL_ZERO',
  'NONDETERMINISTIC',
  'IMPRECISE',
  'RUNTIME_ERROR',
  'TIMEOUT',
  'CRASHED',
  'INVALID_REFERENCE',
  'SUSPICIOUS',
  'HIDDEN_CASE_FAILED',
] as const;
export type Verdict = (typeof VERDICTS)[number];

const BY_DEFENCE: Record<string, Verdict> = {
  mismatch: 'INCORRECT',
  unwritten: 'UNWRITTEN',
  'out-of-bounds': 'OUT_OF_BOUNDS',
  'input-modified': 'INPUT_MODIFIED',
  'non-finite': 'NON_FINITE',
  'all-zero': 'ALL_ZERO',
  nondeterministic: 'NONDETERMINISTIC',
  precision: 'IMPRECISE',
  fault: 'RUNTIME_ERROR',
  'reference-fault': 'INVALID_REFERENCE',
};

/**
 * The verdict of a report that came back from a worker. A report that passed is PASSED here; whether it is
 * SUSPICIOUS (faster than physics allows) is decided by the caller, which knows the device's peaks.
 */
export function verdictOf(report: EvalReport): Verdict {
  if (report.passed) return 'PASSED';
  const e = report.error;
  if (e === undefined) return 'RUNTIME_ERROR';
  if (e.kind === 'compile')
    return e.kernel === 'candidate' || e.kernel === undefined ? 'COMPILE_ERROR' : 'INVALID_REFERENCE';
  if (e.defence !== undefined && BY_DEFENCE[e.defence] !== undefined) return BY_DEFENCE[e.defence]!;
  if (e.kind === 'cuda')
    return e.kernel === 'reference' || e.kernel === 'precise' ? 'INVALID_REFERENCE' : 'RUNTIME_ERROR';
  if (e.kind === 'exception' && /signature|parameter/i.test(e.message)) return 'SIGNATURE_MISMATCH';
  return 'RUNTIME_ERROR';
}
