// SPDX-License-Identifier: MIT
// The precision policy (check()'s `precision` option; docs/benchmarking.md, 'Correctness defences'): a tolerance
// loose enough for every honest summation order is also loose enough for a kernel that computes in less precision
// than it declares (fp16 accumulation, TF32 or fp16 products in an f32 problem). So the candidate's error is measured
// against a reference computed in higher precision (f64), and bounded by a multiple of the error an honest kernel of
// the declared precision makes there: the declared reference's own error against the same precise outputs.
import { DTYPE_INFO } from '../core/index.js';
import type { BufferDType } from './argspec.js';

/** check()'s default `precision.factor`. */
export const PRECISION_FACTOR = 32;

/** The precision policy's figures on one output (root mean squares over its finite elements). */
export interface PrecisionFigures {
  /** rms(candidate − precise). */
  candidateRms: number;
  /** rms(reference − precise): the error of an honest kernel of the declared precision. */
  referenceRms: number;
  /** unitRoundoff(dtype) · rms(precise): one rounding to the output's type, the floor of the bound. */
  roundingRms: number;
  /** candidateRms / (factor · max(referenceRms, roundingRms)): at most 1 passes. */
  used: number;
}

/**
 * The precision policy on one float output: the candidate's rms error against the precise outputs, and the share of
 * its bound, `factor` times the larger of the declared reference's rms error and one rounding to `dtype`. Elements
 * where any of the three values is not finite are left out (the value defences judge those).
 */
export function precisionFigures(
  dtype: BufferDType,
  candidate: ArrayLike<number | bigint>,
  reference: ArrayLike<number | bigint>,
  precise: ArrayLike<number | bigint>,
  factor: number,
): PrecisionFigures {
  let c2 = 0;
  let r2 = 0;
  let p2 = 0;
  let n = 0;
  for (let i = 0; i < precise.length; i++) {
    const c = Number(candidate[i]);
    const r = Number(reference[i]);
    const p = Number(precise[i]);
    if (!Number.isFinite(c) || !Number.isFinite(r) || !Number.isFinite(p)) continue;
    c2 += (c - p) ** 2;
    r2 += (r - p) ** 2;
    p2 += p * p;
    n++;
  }
  const rms = (sum: number): number => (n > 0 ? Math.sqrt(sum / n) : 0);
  const candidateRms = rms(c2);
  const referenceRms = rms(r2);
  const roundingRms = (DTYPE_INFO[dtype].unitRoundoff ?? 0) * rms(p2);
  const bound = factor * Math.max(referenceRms, roundingRms);
  const used = bound > 0 ? candidateRms / bound : candidateRms > 0 ? Infinity : 0;
  return { candidateRms, referenceRms, roundingRms, used };
}

/**
 * The precise reference must compute what the reference computes: its outputs within the check's tolerance of the
 * reference's (a precise kernel that reads the wrong inputs, or writes nothing, would make every candidate's error
 * look as small as the reference's).
 *
 * @throws RangeError naming the first element beyond the tolerance: the caller's mistake, not a verdict on a kernel.
 */
export function checkPreciseAgrees(
  arg: number,
  reference: ArrayLike<number | bigint>,
  precise: ArrayLike<number | bigint>,
  atol: number,
  rtol: number,
): void {
  for (let i = 0; i < precise.length; i++) {
    const r = Number(reference[i]);
    const p = Number(precise[i]);
    if (!Number.isFinite(r) || !Number.isFinite(p) || Math.abs(r - p) <= atol + rtol * Math.abs(p)) continue;
    throw new RangeError(
      `options.precision.reference: its output argument ${arg} is ${p} at element ${i}, where the reference's is ` +
        `${r}, beyond the tolerance: a precise reference computes what the reference computes, in higher precision`,
    );
  }
}

/** The detail of a 'precision' verdict on argument `arg`. */
export function precisionDetail(arg: number, f: PrecisionFigures, factor: number): string {
  const base = Math.max(f.referenceRms, f.roundingRms);
  const what = f.referenceRms >= f.roundingRms ? "the declared-precision reference's" : 'one rounding of';
  const times = base > 0 ? `${(f.candidateRms / base).toPrecision(3)} times ${what} ${base.toExponential(2)}` : '';
  return (
    `argument ${arg}: rms error ${f.candidateRms.toExponential(2)} against the precise reference, ${times} ` +
    `(at most ${factor} times): computed in less precision than the reference's?`
  );
}
