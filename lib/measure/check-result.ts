// SPDX-License-Identifier: MIT
// What check() and inputSets().verify() resolve to: the result types, one trial's result from its comparison
// (compare-output.ts), and the verdict over all trials with its error figures.
import type { Comparison, Defence, Mismatch } from './compare-output.js';
import type { RunComparison } from './determinism.js';

/** The driver error behind a 'fault' or 'reference-fault' verdict (its message's first line is the trial's detail). */
export interface CheckFault {
  /** 'CUDA_ERROR_ILLEGAL_ADDRESS', 'CUDA_ERROR_ASSERT', 'CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES' ... */
  code: string;
  /** The call that reported it: a synchronize for a fault inside the kernel, 'cuLaunchKernel' for a refused launch. */
  api: string;
  /** The CUresult number. */
  result: number;
  /**
   * True when the fault cost the CUDA context: nothing more ran on the GPU (no reads, no reference, no later
   * trials), and only a new process can use the GPU again.
   */
  sticky: boolean;
}

/**
 * How far outputs are from the reference: per trial, and the worst over trials in a CheckResult. Without a
 * reference the distances are 0 and matchedRatio is the fraction of output elements that passed the defences.
 */
export interface ErrorFigures {
  /** Largest |out − ref| over all output elements. */
  maxAbsError: number;
  /** Largest |out − ref| / |ref| over elements with ref ≠ 0 (large near zero, where atol governs). */
  maxRelError: number;
  /** Largest |out − ref| / (atol + rtol·|ref|): the worst element's share of its tolerance, ≤ 1 when all pass. */
  toleranceUsed: number;
  /** ‖out − ref‖₂ / ‖ref‖₂ over all outputs. */
  relNormError: number;
  /** Fraction of output elements within tolerance (the smallest over trials in a CheckResult). */
  matchedRatio: number;
}

/** One trial of check(): its seed, whether it passed, the defence that fired and the worst elements. */
export interface TrialResult extends ErrorFigures {
  /** The trial's number, from 0. */
  trial: number;
  /** The trial's seed, in hexadecimal ('0x…'): splitmix64(seed + trial). */
  seed: string;
  /** Whether every defence held. */
  passed: boolean;
  /** The defence that fired, if any. */
  defence: Defence | undefined;
  /** Up to 8 failing elements. */
  mismatches: Mismatch[];
  /** What the defence that fired found, in words: 'argument 2 (an input) changed at element 7'. */
  detail: string | undefined;
  /** The driver error, for 'fault' and 'reference-fault'. */
  error: CheckFault | undefined;
  /**
   * With the precision policy (CheckOptions.precision), where it ran: the worst output's rms error against the
   * precise reference as a share of its bound (≤ 1 passes).
   */
  precisionUsed?: number;
}

/**
 * What check() returns: the verdict over all trials (the worst error figures over trials), the first defence that fired
 * and each trial's result. Plain data: it serializes to JSON.
 */
export interface CheckResult extends ErrorFigures {
  /** Whether every trial passed. */
  passed: boolean;
  /** The first defence that fired, if any. */
  defence: Defence | undefined;
  /** Each trial's result, in order. */
  trials: TrialResult[];
  /** Up to 8 mismatching elements, from the first failing trial. */
  mismatches: Mismatch[];
  /** The driver error of the first failing trial, for 'fault' and 'reference-fault'. */
  error: CheckFault | undefined;
  /** Elements that differed bitwise between two runs on the same inputs (undefined: not run). */
  nondeterministicElements: number | undefined;
  /** Of those, the elements that differed by more than the tolerance (undefined: not run). */
  nondeterministicBeyondTolerance: number | undefined;
  /** True for a check without a reference (only the defences that need none ran); absent otherwise. */
  referenceFree?: true;
  /** With the precision policy: the worst trial's TrialResult.precisionUsed; absent where it did not run. */
  precisionUsed?: number;
  /** One line for people. */
  summary: string;
}

/** @internal One trial's result from its comparison. */
export function trialResult(
  trial: number,
  seed: string,
  c: Comparison,
  detail: string | undefined,
  error: CheckFault | undefined = undefined,
): TrialResult {
  return {
    trial,
    seed,
    passed: c.defence === undefined,
    defence: c.defence,
    maxAbsError: c.maxAbs,
    maxRelError: c.maxRel,
    toleranceUsed: c.tolUsed,
    relNormError: c.normRef2 > 0 ? Math.sqrt(c.normDiff2 / c.normRef2) : Math.sqrt(c.normDiff2),
    matchedRatio: c.total > 0 ? c.matched / c.total : 1,
    mismatches: c.mismatches,
    detail,
    error,
  };
}

/**
 * Builds a CheckResult from its trials: the worst figures over them; the first failing trial decides the defence,
 * the mismatches and the error. `runs`: the two runs on the same inputs, when they were compared. The summary is
 * left empty for the caller.
 */
export function buildCheckResult(trials: TrialResult[], runs: RunComparison | undefined): CheckResult {
  const failed = trials.find((t) => !t.passed);
  const worst = (f: (t: TrialResult) => number): number => Math.max(0, ...trials.map(f));
  const precision = trials.flatMap((t) => (t.precisionUsed === undefined ? [] : [t.precisionUsed]));
  return {
    ...(precision.length > 0 ? { precisionUsed: Math.max(...precision) } : {}),
    passed: failed === undefined,
    defence: failed?.defence,
    trials,
    maxAbsError: worst((t) => t.maxAbsError),
    maxRelError: worst((t) => t.maxRelError),
    toleranceUsed: worst((t) => t.toleranceUsed),
    relNormError: worst((t) => t.relNormError),
    matchedRatio: Math.min(1, ...trials.map((t) => t.matchedRatio)),
    mismatches: failed?.mismatches ?? [],
    error: failed?.error,
    nondeterministicElements: runs?.differing,
    nondeterministicBeyondTolerance: runs?.beyondTolerance,
    summary: '',
  };
}

/** @internal The error figures of a passing result, for its summary. */
export function errorFigures(r: CheckResult): string {
  // Two decimals below 1 % (a small share would otherwise read 0 %).
  const percent = (100 * r.toleranceUsed).toFixed(r.toleranceUsed < 0.01 && r.toleranceUsed > 0 ? 2 : 0);
  const precision =
    r.precisionUsed === undefined
      ? ''
      : `; rms error at ${(100 * r.precisionUsed).toFixed(r.precisionUsed < 0.01 ? 2 : 0)}% of the precision bound`;
  return (
    `worst element at ${percent}% of its tolerance ` +
    `(max abs error ${r.maxAbsError.toExponential(2)}, max rel error ${r.maxRelError.toExponential(2)})${precision}`
  );
}
