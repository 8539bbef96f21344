// SPDX-License-Identifier: MIT
// The output comparison every correctness verdict shares (docs/benchmarking.md, 'Correctness defences'): one output
// against its expected values, element by element, with the value defences ('non-finite', 'mismatch', 'unwritten',
// 'all-zero') and the error figures. check() compares the candidate with the reference, inputSets().verify() the
// timed launches' outputs with it, and determinism.ts two runs of the candidate with the same element rules.
import { DTYPE_INFO, fromDeviceBytes } from '../core/index.js';
import type { BufferDType } from './argspec.js';

/**
 * Which defence fired. 'fault': the candidate raised a driver error (a fault in the kernel, or a refused launch);
 * 'reference-fault': the reference kernel did, the candidate did not; 'nondeterministic': two runs of the candidate
 * on the same inputs differed beyond the tolerance (or at all, with requireDeterminism); 'precision': inside the
 * tolerance, but its error against a precise reference is far beyond an honest kernel's (CheckOptions.precision).
 */
export type Defence =
  | 'fault'
  | 'reference-fault'
  | 'out-of-bounds'
  | 'input-modified'
  | 'unwritten'
  | 'non-finite'
  | 'all-zero'
  | 'mismatch'
  | 'nondeterministic'
  | 'precision';

/** One output element that failed a defence: where it is, what was expected and what the kernel wrote. */
export interface Mismatch {
  /** Argument index of the output buffer. */
  arg: number;
  /** Element index in that buffer. */
  index: number;
  /**
   * The reference's value; for 'nondeterministic', the candidate's first run; NaN in a check without a reference
   * (there is no expected value).
   */
  expected: number | bigint;
  /** The candidate's value; for 'nondeterministic', its second run. */
  actual: number | bigint;
}

/** 'unwritten': whether element `index` of an output's device bytes still holds the dtype's poison (or `alternate`). */
export function holdsPoison(dtype: BufferDType, got: Uint8Array, index: number, alternate = false): boolean {
  const p = DTYPE_INFO[dtype].poison;
  const at = index * p.length;
  for (let k = 0; k < p.length; k++) if (got[at + k] !== (alternate ? ~p[k]! & 0xff : p[k])) return false;
  return true;
}

/** 'non-finite': where either value is NaN or infinite, both must be: NaN meets NaN, ±Infinity the same infinity. */
export function nonFiniteAgrees(expected: number, actual: number): boolean {
  return Object.is(expected, actual) || (Number.isNaN(expected) && Number.isNaN(actual));
}

/** Tolerances by element type: `{ f32: { atol: 1e-5, rtol: 1e-5 }, bf16: { rtol: 2e-2 } }`. */
export type TolerancesByDtype = Readonly<
  Partial<
    Record<
      BufferDType,
      {
        /** Absolute tolerance of this type's outputs. */
        atol?: number;
        /** Relative tolerance of this type's outputs. */
        rtol?: number;
      }
    >
  >
>;

/**
 * The [atol, rtol] an output of `dtype` is held to: its type's entry in `tolerances`, else the options' `atol` /
 * `rtol`, else the type's default (each of the two on its own).
 */
export function toleranceFor(
  o: { atol?: number | undefined; rtol?: number | undefined; tolerances?: TolerancesByDtype | undefined },
  dtype: BufferDType,
): [atol: number, rtol: number] {
  const own = o.tolerances?.[dtype];
  return [own?.atol ?? o.atol ?? DTYPE_INFO[dtype].atol, own?.rtol ?? o.rtol ?? DTYPE_INFO[dtype].rtol];
}

/** 'mismatch': |actual − expected| ≤ atol + rtol·|expected| (finite values). */
export function withinTolerance(expected: number, actual: number, atol: number, rtol: number): boolean {
  return Math.abs(actual - expected) <= atol + rtol * Math.abs(expected);
}

/** 'all-zero': every element of the output is zero while the reference's are not all zero. */
export function degenerateZeros(actual: ArrayLike<number | bigint>, expected: ArrayLike<number | bigint>): boolean {
  const zero = (v: number | bigint): boolean => v === 0 || v === 0n;
  for (let i = 0; i < actual.length; i++) if (!zero(actual[i]!)) return false;
  for (let i = 0; i < expected.length; i++) if (!zero(expected[i]!)) return true;
  return false;
}

/** @internal Running totals of one comparison. */
export interface Comparison {
  defence: Defence | undefined;
  maxAbs: number;
  maxRel: number;
  tolUsed: number;
  normDiff2: number;
  normRef2: number;
  matched: number;
  total: number;
  mismatches: Mismatch[];
  /** The detail the defence that fired gave, if it gave one. */
  detail?: string;
}

/** @internal */
export function newComparison(): Comparison {
  return {
    defence: undefined,
    maxAbs: 0,
    maxRel: 0,
    tolUsed: 0,
    normDiff2: 0,
    normRef2: 0,
    matched: 0,
    total: 0,
    mismatches: [],
  };
}

/**
 * @internal The value defences on one output against the reference's values, element by element: 'non-finite',
 * 'mismatch' (naming an element that still holds the poison 'unwritten' instead) and 'all-zero', with the error
 * figures. The first defence found stands, except that a more specific one replaces 'mismatch'.
 */
export function compareOutput(
  arg: number,
  dtype: BufferDType,
  got: Uint8Array,
  expected: ArrayLike<number | bigint>,
  atol: number,
  rtol: number,
  c: Comparison,
): void {
  const actual = fromDeviceBytes(dtype, got);
  const n = expected.length;
  // Running figures in locals, written back once: this loop runs over every output element of every trial.
  let { maxAbs, maxRel, tolUsed, normDiff2, normRef2, matched } = c;
  for (let i = 0; i < n; i++) {
    const e = expected[i]!;
    const a = actual[i]!;
    let ok: boolean;
    let defence: Defence = 'mismatch';
    if (typeof e === 'bigint' || typeof a === 'bigint') {
      ok = e === a;
    } else if (!Number.isFinite(e) || !Number.isFinite(a)) {
      ok = nonFiniteAgrees(e, a);
      if (!ok) defence = 'non-finite';
    } else {
      const diff = Math.abs(a - e);
      const tol = atol + rtol * Math.abs(e);
      ok = withinTolerance(e, a, atol, rtol);
      maxAbs = Math.max(maxAbs, diff);
      tolUsed = Math.max(tolUsed, tol > 0 ? diff / tol : diff > 0 ? Infinity : 0);
      if (e !== 0) maxRel = Math.max(maxRel, diff / Math.abs(e));
      normDiff2 += diff * diff;
      normRef2 += e * e;
    }
    if (!ok) {
      if (holdsPoison(dtype, got, i)) defence = 'unwritten';
      if (c.mismatches.length < 8) c.mismatches.push({ arg, index: i, expected: e, actual: a });
      if (c.defence === undefined || (c.defence === 'mismatch' && defence !== 'mismatch')) c.defence = defence;
    } else {
      matched++;
    }
  }
  Object.assign(c, { maxAbs, maxRel, tolUsed, normDiff2, normRef2, matched, total: c.total + n });
  if (degenerateZeros(actual, expected) && (c.defence === undefined || c.defence === 'mismatch'))
    c.defence = 'all-zero';
}
