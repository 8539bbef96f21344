// SPDX-License-Identifier: MIT
// The nondeterminism defence (docs/benchmarking.md, 'Correctness defences'): check() runs the candidate twice on the
// same inputs; this compares the two runs and applies the rule. A difference beyond the tolerance fails (an output
// that depends on a race is not a result); one within it is a note (float atomics adding in another order are
// legitimate); requireDeterminism wants the bits equal.
import { DTYPE_INFO, fromDeviceBytes } from '../core/index.js';
import type { BufferDType } from './argspec.js';
import { type Mismatch, nonFiniteAgrees, withinTolerance } from './compare-output.js';

/** @internal Two runs of the candidate on the same inputs, compared output by output (see compareRuns). */
export interface RunComparison {
  /** Elements whose bits differ. */
  differing: number;
  /** Of those, elements further apart than atol + rtol·|first run| (NaN against a number, unequal infinities). */
  beyondTolerance: number;
  /** Largest |second − first| over finite elements. */
  maxAbsDifference: number;
  /** Up to 8 differing elements, in order (expected: the first run, actual: the second). */
  firstDiffering: Mismatch[];
  /** Up to 8 elements beyond tolerance, in order. */
  firstBeyond: Mismatch[];
}

/** @internal */
export function newRunComparison(): RunComparison {
  return { differing: 0, beyondTolerance: 0, maxAbsDifference: 0, firstDiffering: [], firstBeyond: [] };
}

/**
 * @internal 'nondeterministic', its material: compares one output of two runs on the same inputs. An element whose
 * bits differ counts as differing; it is also beyond tolerance when |second − first| > atol + rtol·|first| (the
 * first run plays the reference), when one is NaN and the other is not, when infinities differ, or for 64-bit
 * integers when they differ at all. NaNs with different payloads and ±0 differ bitwise but not beyond tolerance.
 */
export function compareRuns(
  arg: number,
  dtype: BufferDType,
  first: Uint8Array,
  second: Uint8Array,
  atol: number,
  rtol: number,
  r: RunComparison,
): void {
  const w = DTYPE_INFO[dtype].bytes;
  const n = Math.min(first.length, second.length) / w;
  let a: ArrayLike<number | bigint> | undefined;
  let b: ArrayLike<number | bigint> | undefined;
  for (let e = 0; e < n; e++) {
    let same = true;
    for (let k = e * w; k < (e + 1) * w; k++) {
      if (first[k] !== second[k]) {
        same = false;
        break;
      }
    }
    if (same) continue;
    a ??= fromDeviceBytes(dtype, first);
    b ??= fromDeviceBytes(dtype, second);
    const x = a[e]!;
    const y = b[e]!;
    let beyond: boolean;
    if (typeof x === 'bigint' || typeof y === 'bigint') {
      beyond = x !== y;
    } else if (!Number.isFinite(x) || !Number.isFinite(y)) {
      beyond = !nonFiniteAgrees(x, y);
    } else {
      r.maxAbsDifference = Math.max(r.maxAbsDifference, Math.abs(y - x));
      beyond = !withinTolerance(x, y, atol, rtol);
    }
    const m: Mismatch = { arg, index: e, expected: x, actual: y };
    r.differing++;
    if (r.firstDiffering.length < 8) r.firstDiffering.push(m);
    if (beyond) {
      r.beyondTolerance++;
      if (r.firstBeyond.length < 8) r.firstBeyond.push(m);
    }
  }
}

/**
 * @internal 'nondeterministic', the rule: with requireDeterminism any bitwise difference fails, otherwise only one
 * beyond the tolerance. Returns undefined when the runs pass, else the detail for the verdict and the elements to show.
 */
export function determinismFailure(
  r: RunComparison,
  requireDeterminism: boolean,
): { detail: string; mismatches: Mismatch[] } | undefined {
  const fails = requireDeterminism ? r.differing > 0 : r.beyondTolerance > 0;
  if (!fails) return undefined;
  const shown = r.firstBeyond.length > 0 ? r.firstBeyond : r.firstDiffering;
  const m = shown[0]!;
  const within = r.beyondTolerance === 0 ? 'all within tolerance' : `${r.beyondTolerance} beyond tolerance`;
  const how = requireDeterminism ? 'differed bitwise' : 'differed';
  const rule = requireDeterminism ? ' (requireDeterminism)' : '';
  return {
    detail:
      `${r.differing} element${r.differing === 1 ? '' : 's'} ${how} between two runs on the same inputs` +
      `${rule}, ${within}; first: argument ${m.arg}[${m.index}] = ${String(m.expected)} in one run, ` +
      `${String(m.actual)} in the other`,
    mismatches: shown,
  };
}

/** @internal The note a passing check adds about its two runs on the same inputs ('' when they were identical). */
export function determinismNote(differing: number | undefined): string {
  if (!differing) return '';
  return (
    `; ${differing} element${differing === 1 ? '' : 's'} differed between two runs on the same inputs, ` +
    'all within tolerance (allowed unless requireDeterminism)'
  );
}
