// SPDX-License-Identifier: MIT
// Correctness checking (docs/benchmarking.md, 'Correctness defences'): a candidate kernel against a reference
// (another kernel or a JavaScript function on host arrays), or against no reference at all, over seeded trials, with
// the defences that catch the known ways a kernel can look right while being wrong, one function each below:
//   poisoned outputs (NaN / 0xDEADBEEF) before every launch      → an unwritten element fails ('unwritten')
//   inputs compared byte for byte after every launch             → a kernel that writes its inputs fails
//                                                                   ('input-modified')
//   64 KiB random guard zones before and after every buffer      → out-of-bounds writes fail ('out-of-bounds')
//   NaN/Inf must match the reference's exactly                   → ('non-finite')
//   an all-zero output where the reference is not                → ('all-zero')
//   per-dtype tolerance |a - b| <= atol + rtol |ref|, every element → ('mismatch')
//   the same inputs twice                                        → a difference beyond the tolerance fails
//                                                                   ('nondeterministic', ahead of a wrong value it
//                                                                   explains); one within it is reported, and fails
//                                                                   too with requireDeterminism (bit-exact)
// A kernel that faults (illegal address, __trap(), device assert, a refused launch) is a verdict too: 'fault' for the
// candidate, 'reference-fault' for a reference kernel, with the driver error. After a sticky fault nothing more
// touches the GPU: the context is lost, and only a new process can use it again. Inputs, poison and guard zones are
// made by inputs.ts; references are run (and their arguments matched to the candidate's) by reference.ts.
import {
  CudaError,
  DTYPE_INFO,
  type Kernel,
  type LaunchConfig,
  checkOptions,
  fromDeviceBytes,
  isContextLost,
  rangeError,
  typeError,
} from '../core/index.js';
import { type ArgSpec, type BufferDType, checkArgSpecs, roleOf } from './argspec.js';
import { type GuardedBuffer, prepareInputs, releaseBuffers, startBytes, uploadGuarded } from './inputs.js';
import { createRng, splitmix64 } from './random.js';
import { type Reference, checkIoFits, checkReference, launchAndWait, referenceOutputs } from './reference.js';
import {
  type RunComparison,
  compareRuns,
  determinismFailure,
  determinismNote,
  newRunComparison,
} from './determinism.js';
import { refuseWorkCandidate } from './work.js';

/** Options of check(): trials, seeds, tolerances, the determinism run, guard zones. */
export interface CheckOptions {
  /** Seeded trials with fresh inputs. Default 5. */
  trials?: number;
  /** Base seed; trial k uses splitmix64(seed + k). Default 42. */
  seed?: number;
  /** Override the per-dtype absolute / relative tolerance. */
  atol?: number;
  /**
   * Relative tolerance, overriding the dtype's default: an element passes when |actual − expected| ≤ atol +
   * rtol·|expected|.
   */
  rtol?: number;
  /**
   * Run the candidate twice on the same inputs (first trial). A difference beyond the tolerance (atol + rtol·|first
   * run|) fails ('nondeterministic': an output that depends on a race is not a result); one within it, such as
   * float atomics adding in another order, is reported in nondeterministicElements. Default true.
   */
  determinism?: boolean;
  /** Fail on any bitwise difference between the two runs, within tolerance or not. Default false. */
  requireDeterminism?: boolean;
  /** Guard zone before and after every buffer, bytes. Default 65536. */
  guardBytes?: number;
  /**
   * Set every device buffer (the candidate's, guard zones included, and a reference kernel's) to zero before it is
   * freed, so no data of this check can be read from reused memory by whatever runs next. Default false.
   */
  zeroOnFree?: boolean;
}

/**
 * Which defence fired. 'fault': the candidate raised a driver error (a fault in the kernel, or a refused launch);
 * 'reference-fault': the reference kernel did, the candidate did not; 'nondeterministic': two runs of the candidate
 * on the same inputs differed beyond the tolerance (or at all, with requireDeterminism).
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
  | 'nondeterministic';

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
  /** One line for people. */
  summary: string;
}

// ---------------------------------------------------------------------------------------------------------------
// The defences, one function each

/**
 * 'out-of-bounds': whether the guard zones around a buffer (`whole`: guard, buffer, guard, read back after the
 * launch) still hold `guard`. Returns where the first stray write landed ('12 bytes before'), or undefined.
 */
export function outOfBoundsWrite(whole: Uint8Array, guard: Uint8Array): string | undefined {
  const end = whole.length - guard.length;
  for (let k = 0; k < guard.length; k++) {
    if (whole[k] !== guard[k]) return `${guard.length - k} bytes before`;
    if (whole[end + k] !== guard[k]) return `${k} bytes after`;
  }
  return undefined;
}

/** 'input-modified': the first element of an input whose bytes differ from what it held before the launch, or -1. */
export function modifiedInputElement(dtype: BufferDType, body: Uint8Array, before: Uint8Array): number {
  const k = body.findIndex((b, j) => b !== before[j]);
  return k < 0 ? -1 : Math.floor(k / DTYPE_INFO[dtype].bytes);
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

/** 'fault': the verdict's record of a driver error. */
export function faultOf(e: CudaError): CheckFault {
  return { code: e.code, api: e.api, result: e.result, sticky: e.sticky || isContextLost(e) };
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

/**
 * @internal The defences that need no reference, on one output that was poisoned before the launch (it has no
 * initial value): 'unwritten' for an element that held the poison after the first launch and the poison's
 * complement after a second launch with the complement as poison (`confirm`, undefined when no element held the
 * poison), so a kernel that writes the poison's value is not blamed; then 'non-finite' for a float element that
 * holds NaN or ±Infinity (a value computed from unwritten memory, into which the NaN poison propagates, shows so).
 */
export function checkWritten(
  arg: number,
  label: string,
  dtype: BufferDType,
  got: Uint8Array,
  confirm: Uint8Array | undefined,
  c: Comparison,
): void {
  const values = fromDeviceBytes(dtype, got);
  let unwritten = 0;
  let nonFinite = 0;
  let first: { defence: Defence; index: number } | undefined;
  for (let i = 0; i < values.length; i++) {
    let defence: Defence | undefined;
    const v = values[i]!;
    if (confirm !== undefined && holdsPoison(dtype, got, i) && holdsPoison(dtype, confirm, i, true)) {
      defence = 'unwritten';
      unwritten++;
    } else if (typeof v === 'number' && !Number.isFinite(v)) {
      defence = 'non-finite';
      nonFinite++;
    }
    c.total++;
    if (defence === undefined) {
      c.matched++;
      continue;
    }
    if (first === undefined || (first.defence === 'non-finite' && defence === 'unwritten'))
      first = { defence, index: i };
    if (c.mismatches.length < 8) c.mismatches.push({ arg, index: i, expected: Number.NaN, actual: v });
  }
  if (first === undefined || c.defence === 'unwritten' || (c.defence !== undefined && first.defence !== 'unwritten'))
    return;
  c.defence = first.defence;
  const count = first.defence === 'unwritten' ? unwritten : nonFinite;
  const what = first.defence === 'unwritten' ? 'never written' : 'NaN or infinite';
  const shown = first.defence === 'unwritten' ? '' : ` = ${String(values[first.index])}`;
  c.detail =
    `${label}: ${count} of ${values.length} element${values.length === 1 ? '' : 's'} ${what} ` +
    `(first: element ${first.index}${shown})`;
}

// ---------------------------------------------------------------------------------------------------------------
// The result

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
  return {
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

/** The one-line summary: PASS with the error figures and the determinism note, or FAIL naming the defence and why. */
function summaryOf(r: CheckResult): string {
  const failed = r.trials.find((t) => !t.passed);
  if (failed === undefined) {
    if (r.referenceFree) {
      return (
        `PASS without a reference: ${r.trials.length} trials; outputs fully written and finite, inputs ` +
        `unchanged, no writes outside the buffers${determinismNote(r.nondeterministicElements)}`
      );
    }
    return `PASS: ${r.trials.length} trials, ${errorFigures(r)}${determinismNote(r.nondeterministicElements)}`;
  }
  const m = failed.mismatches[0];
  // A nondeterministic or reference-free verdict's detail already names the element.
  const showFirst = m !== undefined && failed.defence !== 'nondeterministic' && !r.referenceFree;
  return (
    `FAIL (${failed.defence}) in trial ${failed.trial}` +
    (failed.detail ? `: ${failed.detail}` : '') +
    (showFirst ? `; first: argument ${m.arg}[${m.index}] = ${String(m.actual)}, expected ${String(m.expected)}` : '') +
    (failed.error?.sticky ? '; the CUDA context is lost: restart the process to use the GPU again' : '')
  );
}

/** @internal The error figures of a passing result, for its summary. */
export function errorFigures(r: CheckResult): string {
  // Two decimals below 1 % (a small share would otherwise read 0 %).
  const percent = (100 * r.toleranceUsed).toFixed(r.toleranceUsed < 0.01 && r.toleranceUsed > 0 ? 2 : 0);
  return (
    `worst element at ${percent}% of its tolerance ` +
    `(max abs error ${r.maxAbsError.toExponential(2)}, max rel error ${r.maxRelError.toExponential(2)})`
  );
}

// ---------------------------------------------------------------------------------------------------------------
// check()

type ResolvedOptions = Required<Omit<CheckOptions, 'atol' | 'rtol'>> & Pick<CheckOptions, 'atol' | 'rtol'>;

function checkCheckOptions(options: CheckOptions | undefined): ResolvedOptions {
  const keys = [
    'trials',
    'seed',
    'atol',
    'rtol',
    'determinism',
    'requireDeterminism',
    'guardBytes',
    'zeroOnFree',
  ] as const;
  const o = checkOptions('options', options, keys) as CheckOptions;
  const trials = o.trials ?? 5;
  if (!Number.isInteger(trials) || trials < 1 || trials > 1000)
    throw rangeError('options.trials', 'an integer in [1, 1000]', trials);
  const guardBytes = o.guardBytes ?? 65536;
  if (!Number.isInteger(guardBytes) || guardBytes < 0 || guardBytes % 256 !== 0) {
    throw rangeError('options.guardBytes', 'a non-negative multiple of 256', guardBytes);
  }
  for (const k of ['atol', 'rtol'] as const) {
    const v = o[k];
    if (v !== undefined && (typeof v !== 'number' || !(v >= 0)))
      throw rangeError(`options.${k}`, 'a non-negative number', v);
  }
  if (o.zeroOnFree !== undefined && typeof o.zeroOnFree !== 'boolean')
    throw typeError('options.zeroOnFree', 'a boolean', o.zeroOnFree);
  return {
    ...o,
    trials,
    guardBytes,
    seed: o.seed ?? 42,
    determinism: o.determinism ?? true,
    requireDeterminism: o.requireDeterminism ?? false,
    zeroOnFree: o.zeroOnFree ?? false,
  };
}

/** The candidate's io: valid specs that fit its kernel, with at least one output. */
function checkCandidateIo(io: readonly ArgSpec[], kernel: Kernel): void {
  if (!Array.isArray(io)) throw typeError('io', 'an array of argument specs (see parseArgSpec)', io);
  checkIoFits(io, kernel);
  checkArgSpecs(io);
  if (!io.some((a) => a.kind === 'buffer' && roleOf(a) !== 'in')) {
    throw new TypeError('io declares no output buffer: mark one with :out (ptr:f32[N]:out)');
  }
}

const firstLine = (text: string): string => text.split('\n')[0] ?? '';

/** Defences about the values alone, which a race between two runs explains. */
const VALUE_DEFENCES: ReadonlySet<Defence> = new Set(['mismatch', 'unwritten', 'non-finite', 'all-zero']);

/**
 * Checks `candidate` against `reference` over seeded trials with the defences above. `io` declares every kernel
 * argument in order (parseArgSpec syntax: inputs with how to fill them, outputs with `:out`, scalars as values).
 * An output with an initial value (`ptr:f32[N]=uniform(-1,1):out`, e.g. saxpy's y) is read-write: it starts from
 * that value instead of the poison, so an unwritten element shows as a plain mismatch there.
 *
 * A reference kernel whose parameter list differs from the candidate's declares its own arguments
 * (`{ kernel, config, io }`): its buffers are matched to the candidate's by name where both sides name them, else
 * by order (see matchReferenceIo in reference.ts).
 *
 * Without a reference (`null` or `undefined`), only the defences that need none run: outputs poisoned before every
 * launch must be fully written ('unwritten', confirmed by a second launch with the poison's complement) and hold no
 * NaN or infinity ('non-finite'); inputs must be unchanged ('input-modified'); guard zones intact ('out-of-bounds');
 * two runs on the same inputs agree ('nondeterministic', with `determinism`). The result has `referenceFree: true`.
 *
 * A kernel that faults resolves to a verdict, not a rejection: `{ passed: false, defence: 'fault', error: { code,
 * api, result, sticky } }` for the candidate (a fault inside it, or a launch the driver refused, such as
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), 'reference-fault' for a reference kernel. After a sticky fault nothing more
 * touches the GPU and later trials do not run: the context is lost, and the process must restart to use the GPU.
 *
 * @throws TypeError / RangeError for bad options or io (a reference io that cannot be matched included), or from the
 *   launch's argument validation; whatever a JavaScript reference throws; a CudaError from the harness's own work
 *   (allocating and filling the buffers).
 */
export async function check(
  candidate: { kernel: Kernel; config: LaunchConfig },
  reference: Reference | null | undefined,
  io: readonly ArgSpec[],
  options?: CheckOptions,
): Promise<CheckResult> {
  refuseWorkCandidate(candidate);
  const o = checkCheckOptions(options);
  checkCandidateIo(io, candidate.kernel);
  if (reference !== null && reference !== undefined) checkReference(reference, io);
  const trials: TrialResult[] = [];
  const runs: { comparison: RunComparison | undefined } = { comparison: undefined };
  for (let t = 0; t < o.trials; t++) {
    const trial = await runTrial(candidate, reference ?? undefined, io, o, t, runs);
    trials.push(trial);
    // A fault ends the check: after a sticky one the context is gone, and a refused launch would be refused again.
    if (trial.error !== undefined) break;
  }
  const result = buildCheckResult(trials, runs.comparison);
  if (reference === null || reference === undefined) result.referenceFree = true;
  result.summary = summaryOf(result);
  return result;
}

/** One trial: fresh inputs, the launch, then every defence in order; the determinism runs on the first trial. */
async function runTrial(
  candidate: { kernel: Kernel; config: LaunchConfig },
  reference: Reference | undefined,
  io: readonly ArgSpec[],
  o: ResolvedOptions,
  t: number,
  runs: { comparison: RunComparison | undefined },
): Promise<TrialResult> {
  const device = candidate.kernel.device;
  const seed = splitmix64(BigInt(o.seed) + BigInt(t));
  const inputs = prepareInputs(io, seed);
  const rng = createRng(seed ^ 0x9e3779b97f4a7c15n);
  const tolerance = (dtype: BufferDType): [number, number] => [
    o.atol ?? DTYPE_INFO[dtype].atol,
    o.rtol ?? DTYPE_INFO[dtype].rtol,
  ];
  const buffers: GuardedBuffer[] = [];
  const c = newComparison();
  let detail: string | undefined;
  let error: CheckFault | undefined;
  /** A driver error from a kernel: the verdict; after it nothing more of this trial runs. */
  const fault = (defence: 'fault' | 'reference-fault', e: CudaError, where: string): void => {
    c.defence = defence;
    error = faultOf(e);
    detail = `${where}${firstLine(e.message)}`;
  };
  /** Fills every buffer for another launch on the same inputs (pure outputs poisoned again) and launches. */
  const launchAgain = (alternatePoison: boolean): CudaError | undefined => {
    const args = io.map((a, i) => {
      if (a.kind === 'scalar') return a.value;
      buffers[i]!.view.copyFromHost(startBytes(a, inputs, i, alternatePoison));
      return buffers[i]!.view;
    });
    return launchAndWait(candidate, args);
  };
  try {
    const failure = launchAndWait(candidate, uploadGuarded(device, io, inputs, o.guardBytes, rng, buffers));
    if (failure !== undefined) {
      fault('fault', failure, '');
      return trialResult(t, `0x${seed.toString(16)}`, c, detail, error);
    }
    const after = io.map((a, i) => (a.kind === 'buffer' ? buffers[i]!.base.copyToHost() : undefined));
    const body = (i: number): Uint8Array => after[i]!.subarray(o.guardBytes, after[i]!.length - o.guardBytes);
    // Guards first: an out-of-bounds write explains whatever else looks wrong.
    for (const [i, a] of io.entries()) {
      if (a.kind !== 'buffer') continue;
      const where = outOfBoundsWrite(after[i]!, buffers[i]!.guard);
      if (where !== undefined) {
        c.defence = 'out-of-bounds';
        detail = `argument ${i}: a write ${where} its buffer`;
        break;
      }
    }
    if (c.defence === undefined) {
      for (const [i, a] of io.entries()) {
        if (a.kind !== 'buffer' || roleOf(a) !== 'in') continue;
        const k = modifiedInputElement(a.dtype, body(i), inputs.bytes[i]!);
        if (k >= 0) {
          c.defence = 'input-modified';
          detail = `argument ${i} (an input) changed at element ${k}`;
          break;
        }
      }
    }
    if (c.defence === undefined && reference !== undefined) {
      const ref = await referenceOutputs(reference, device, io, inputs, o.zeroOnFree);
      if ('fault' in ref) {
        fault('reference-fault', ref.fault, 'the reference kernel failed: ');
      } else {
        io.forEach((a, i) => {
          if (a.kind !== 'buffer' || roleOf(a) === 'in') return;
          compareOutput(i, a.dtype, body(i), ref.outputs[i]!, ...tolerance(a.dtype), c);
        });
      }
    } else if (c.defence === undefined) {
      // No reference: every poisoned output element must be written. Elements that still hold the poison are
      // confirmed by a second launch poisoned with its complement (a kernel may write the poison's value itself).
      const pure = io.flatMap((a, i) => (a.kind === 'buffer' && roleOf(a) === 'out' ? [{ a, i }] : []));
      const suspects = pure.some(({ a, i }) => poisonedAnywhere(a.dtype, body(i)));
      let confirm: (Uint8Array | undefined)[] = [];
      if (suspects) {
        const again = launchAgain(true);
        if (again !== undefined) {
          fault('fault', again, 'on the second run, which confirms unwritten elements: ');
        } else {
          confirm = io.map((a, i) => (a.kind === 'buffer' ? buffers[i]!.view.copyToHost<Uint8Array>() : undefined));
        }
      }
      if (error === undefined) {
        for (const { a, i } of pure) checkWritten(i, `argument ${i}`, a.dtype, body(i), confirm[i], c);
        detail = c.detail;
      }
    }
    // Also after a wrong value: a race explains a mismatch, as a stray write explains everything else.
    if (t === 0 && o.determinism && error === undefined && (c.defence === undefined || VALUE_DEFENCES.has(c.defence))) {
      // The same inputs again, outputs re-poisoned, compared with the first run (see compareRuns).
      const again = launchAgain(false);
      if (again !== undefined) {
        fault('fault', again, 'on the second run on the same inputs: ');
      } else {
        const r = newRunComparison();
        io.forEach((a, i) => {
          if (a.kind !== 'buffer' || roleOf(a) === 'in') return;
          compareRuns(i, a.dtype, body(i), buffers[i]!.view.copyToHost(), ...tolerance(a.dtype), r);
        });
        runs.comparison = r;
        const failure2 = determinismFailure(r, o.requireDeterminism);
        if (failure2 !== undefined) {
          const also = c.defence === undefined ? '' : `; its first run also failed (${c.defence})`;
          c.defence = 'nondeterministic';
          detail = failure2.detail + also;
          c.mismatches = failure2.mismatches;
        }
      }
    }
  } finally {
    // Silent after a sticky error: the memory went with the context.
    releaseBuffers(
      buffers.map((b) => b?.base),
      o.zeroOnFree,
    );
  }
  return trialResult(t, `0x${seed.toString(16)}`, c, detail, error);
}

/** Whether any element of an output's bytes holds the dtype's poison. */
function poisonedAnywhere(dtype: BufferDType, got: Uint8Array): boolean {
  const n = got.length / DTYPE_INFO[dtype].bytes;
  for (let i = 0; i < n; i++) if (holdsPoison(dtype, got, i)) return true;
  return false;
}
