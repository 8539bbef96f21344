// SPDX-License-Identifier: MIT
// A problem's score: the geometric mean over its cases of reference time / candidate time, each candidate time
// floored at the case's roofline minimum on the GPU, so that no case, however fast it claims to be, can carry the
// aggregate (gpu-mode reference-kernels #162: one shape's time driven toward zero took a geomean to rank 1). Pure
// arithmetic, tested without a GPU.

/** One case's timing, as a comparison of the baseline (A) and the candidate (B) gives it. */
export interface CaseTiming {
  /** The baseline's median, µs. */
  baselineUs: number;
  /** The candidate's median, µs. */
  candidateUs: number;
  /** baseline / candidate, and its 95 % interval (compare()'s). */
  speedup: number;
  /** Lower end of the speedup's 95 % interval. */
  speedupLow: number;
  /** Upper end of the speedup's 95 % interval. */
  speedupHigh: number;
  /** The least time physics allows this case's launch on the GPU, µs; undefined where unknown. */
  floorUs: number | undefined;
}

/** A case's part of the score. */
export interface CaseScore {
  /** The speedup counted: baseline / max(candidate, floor). */
  speedup: number;
  /** Lower end of its 95 % interval, floored alike. */
  speedupLow: number;
  /** Upper end of its 95 % interval, floored alike. */
  speedupHigh: number;
  /** Whether the candidate's median read below the floor (the floor was counted instead; physics says it cannot be). */
  floored: boolean;
}

/** The aggregate: the geometric mean of the cases' speedups and its 95 % interval. */
export interface ProblemScore {
  /** The geometric mean over the cases of their floored speedups. */
  score: number;
  /** Lower end of its 95 % interval. */
  scoreLow: number;
  /** Upper end of its 95 % interval. */
  scoreHigh: number;
  /** Each case's part, in order. */
  cases: CaseScore[];
}

/** z of a two-sided 95 % normal interval. */
const Z95 = 1.959963984540054;

/** One case's floored speedup and interval. */
export function caseScore(t: CaseTiming): CaseScore {
  for (const k of ['baselineUs', 'candidateUs', 'speedup', 'speedupLow', 'speedupHigh'] as const) {
    if (!(t[k] > 0) || !Number.isFinite(t[k]))
      throw new RangeError(`Expected a positive number for ${k} but received ${t[k]}`);
  }
  if (t.floorUs !== undefined && !(t.floorUs >= 0)) {
    throw new RangeError(`Expected a non-negative number for floorUs but received ${t.floorUs}`);
  }
  // The most a case may count: the baseline against a candidate running exactly at the floor.
  const cap = t.floorUs === undefined || t.floorUs === 0 ? Infinity : t.baselineUs / t.floorUs;
  return {
    speedup: Math.min(t.speedup, cap),
    speedupLow: Math.min(t.speedupLow, cap),
    speedupHigh: Math.min(t.speedupHigh, cap),
    floored: t.candidateUs < (t.floorUs ?? 0),
  };
}

/**
 * The score of cases that all passed: the geometric mean of their floored speedups, with a 95 % interval from the
 * cases' own intervals in log space (each case's half-width as a normal standard error, the cases independent: the
 * mean of k logs has the root of the summed variances over k).
 *
 * @throws RangeError for no cases, or a timing that is not positive and finite.
 */
export function problemScore(timings: readonly CaseTiming[]): ProblemScore {
  if (timings.length === 0) throw new RangeError('Expected at least one case for timings but received none');
  const cases = timings.map(caseScore);
  const k = cases.length;
  const logMean = cases.reduce((s, c) => s + Math.log(c.speedup), 0) / k;
  const variance = cases.reduce((s, c) => s + ((Math.log(c.speedupHigh) - Math.log(c.speedupLow)) / (2 * Z95)) ** 2, 0);
  const se = Math.sqrt(variance) / k;
  return {
    score: Math.exp(logMean),
    scoreLow: Math.exp(logMean - Z95 * se),
    scoreHigh: Math.exp(logMean + Z95 * se),
    cases,
  };
}
