// SPDX-License-Identifier: MIT
// Correctness checking (docs/benchmarking.md, 'Correctness defences'): a candidate kernel against a reference
// (another kernel or a JavaScript function on host arrays), or against no reference at all, over seeded trials, with
// the defences that catch the known ways a kernel can look right while being wrong, one function each (the value
// defences on an output's elements in compare-output.ts, the others below):
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
//   with `precision`, a precise (f64) reference too              → an rms error beyond factor × the declared
//                                                                   reference's fails ('precision', precision.ts)
// A reference kernel runs after the candidate in even trials and before it in odd ones (its buffers then zeroed as
// they are freed, so nothing of its outputs is left in memory the candidate is given): each reads its inputs from the
// host's copy, so neither order lets one kernel's writes reach the other, and a candidate is checked both right after
// another kernel ran and on a GPU that ran nothing since its last launch.
// A kernel that faults (illegal address, __trap(), device assert, a refused launch) is a verdict too: 'fault' for the
// candidate, 'reference-fault' for a reference kernel, with the driver error. After a sticky fault nothing more
// touches the GPU: the context is lost, and only a new process can use it again. Inputs, poison and guard zones are
// made by inputs.ts; references are run (and their arguments matched to the candidate's) by reference.ts; the result
// is assembled by check-result.ts.
import {
  CudaError,
  DTYPES,
  DTYPE_INFO,
  type Kernel,
  type LaunchConfig,
  type HostArray,
  checkOptions,
  fromDeviceBytes,
  isContextLost,
  isDType,
  rangeError,
  toDeviceBytes,
  typeError,
} from '../core/index.js';
import type { Device } from '../core/index.js';
import { type ArgSpec, type BufferDType, checkArgSpecs, roleOf } from './argspec.js';
import {
  type CheckFault,
  type CheckResult,
  type TrialResult,
  buildCheckResult,
  errorFigures,
  trialResult,
} from './check-result.js';
import {
  type Comparison,
  type Defence,
  type TolerancesByDtype,
  compareOutput,
  holdsPoison,
  newComparison,
  toleranceFor,
} from './compare-output.js';
import {
  type RunComparison,
  compareRuns,
  determinismFailure,
  determinismNote,
  newRunComparison,
} from './determinism.js';
import {
  type GuardedBuffer,
  type TrialInputs,
  prepareInputs,
  releaseBuffers,
  startBytes,
  uploadGuarded,
} from './inputs.js';
import { createRng, splitmix64 } from './random.js';
import { PRECISION_FACTOR, checkPreciseAgrees, precisionDetail, precisionFigures } from './precision.js';
import {
  type HostValue,
  type Reference,
  checkIoFits,
  checkReference,
  launchAndWait,
  referenceOutputs,
} from './reference.js';
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
   * Tolerances by the outputs' element type (`{ f32: { atol: 1e-5 }, bf16: { rtol: 2e-2 } }`): an output's own type's
   * entry wins over `atol` / `rtol`, which win over the type's default; each of atol and rtol on its own.
   */
  tolerances?: TolerancesByDtype;
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
  /**
   * The precision policy: `reference` computes the outputs in higher precision (a kernel whose float outputs are f64
   * in its own `io`, or a JavaScript function, which then gets Float64Arrays for its float outputs). In every trial
   * the candidate's rms error against it, per float output, may be at most `factor` (default 32) times the larger of
   * the check's reference's rms error against it (an honest kernel of the declared precision: give a reference that
   * computes in it, such as an f32 kernel) and one rounding to the output's type; beyond, the trial fails
   * ('precision'): a kernel that computes in less precision than it declares, such as fp16 accumulation in an f32
   * problem, fails even inside a loose tolerance. Needs a reference.
   */
  precision?: CheckPrecision;
}

/** CheckOptions.precision: a precise reference, and how far past the declared precision's error a candidate may go. */
export interface CheckPrecision {
  /** The outputs in higher precision: a kernel with f64 outputs in its `io`, or a JavaScript function. */
  reference: Reference;
  /** The bound, as a multiple of an honest kernel's rms error (at least 1). Default 32. */
  factor?: number;
}

/**
 * A candidate computed outside cudakit's launches (another runtime's kernel, a process of its own, the host): check()
 * calls `host` with each trial's arguments as a JavaScript reference gets them, in `io`'s order (scalars as their
 * values, buffers as typed arrays of logical values: fp8, f16 and bf16 widened to Float32Array, i64 and u64 as
 * bigints), inputs holding the trial's values and pure outputs the poison; `host` writes its outputs into those
 * arrays. It is checked with the defences that apply off the GPU (see check()).
 */
export interface HostCandidate {
  /** Computes the outputs into `args`' output arrays; may return a promise. */
  host: (args: HostValue[]) => void | Promise<void>;
}

/** Whether a candidate is a HostCandidate. */
function isHostCandidate(candidate: unknown): candidate is HostCandidate {
  return (
    typeof candidate === 'object' && candidate !== null && typeof (candidate as { host?: unknown }).host === 'function'
  );
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

/** 'fault': the verdict's record of a driver error. */
export function faultOf(e: CudaError): CheckFault {
  return { code: e.code, api: e.api, result: e.result, sticky: e.sticky || isContextLost(e) };
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
// The summary

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

// ---------------------------------------------------------------------------------------------------------------
// check()

type ResolvedOptions = Required<Omit<CheckOptions, 'atol' | 'rtol' | 'tolerances' | 'precision'>> &
  Pick<CheckOptions, 'atol' | 'rtol' | 'tolerances'> & { precision: Required<CheckPrecision> | undefined };

/** @internal The keys of CheckOptions, as check() accepts them (a job's check options in eval/ derive from them). */
export const CHECK_OPTION_KEYS = [
  'trials',
  'seed',
  'atol',
  'rtol',
  'tolerances',
  'determinism',
  'requireDeterminism',
  'guardBytes',
  'zeroOnFree',
  'precision',
] as const satisfies readonly (keyof CheckOptions)[];

function checkCheckOptions(options: CheckOptions | undefined): ResolvedOptions {
  const o = checkOptions('options', options, CHECK_OPTION_KEYS) as CheckOptions;
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
  if (o.tolerances !== undefined) checkTolerances(o.tolerances);
  if (o.zeroOnFree !== undefined && typeof o.zeroOnFree !== 'boolean')
    throw typeError('options.zeroOnFree', 'a boolean', o.zeroOnFree);
  let precision: Required<CheckPrecision> | undefined;
  if (o.precision !== undefined) {
    const p = checkOptions('options.precision', o.precision, ['reference', 'factor']) as CheckPrecision;
    const factor = p.factor ?? PRECISION_FACTOR;
    if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1)
      throw rangeError('options.precision.factor', 'a finite number, at least 1', factor);
    if (p.reference === undefined || p.reference === null)
      throw typeError('options.precision.reference', 'a reference { kernel, config, io? } or a function', p.reference);
    precision = { reference: p.reference, factor };
  }
  return {
    ...o,
    precision,
    trials,
    guardBytes,
    seed: o.seed ?? 42,
    determinism: o.determinism ?? true,
    requireDeterminism: o.requireDeterminism ?? false,
    zeroOnFree: o.zeroOnFree ?? false,
  };
}

/** @throws TypeError / RangeError naming the first entry of `tolerances` that is not a type's { atol?, rtol? }. */
function checkTolerances(tolerances: unknown): void {
  if (typeof tolerances !== 'object' || tolerances === null || Array.isArray(tolerances)) {
    throw typeError('options.tolerances', 'tolerances by element type, such as { f32: { rtol: 1e-5 } }', tolerances);
  }
  for (const [dtype, t] of Object.entries(tolerances)) {
    const path = `options.tolerances.${dtype}`;
    if (!isDType(dtype)) throw typeError(path, `an element type (${DTYPES.join(', ')})`, dtype);
    checkOptions(path, t, ['atol', 'rtol']);
    for (const k of ['atol', 'rtol'] as const) {
      const v = (t as Record<string, unknown>)[k];
      if (v !== undefined && (typeof v !== 'number' || !(v >= 0) || !Number.isFinite(v)))
        throw rangeError(`${path}.${k}`, 'a non-negative number', v);
    }
  }
}

/** The candidate's io: valid specs that fit its kernel (a kernel target's), with at least one output. */
function checkCandidateIo(io: readonly ArgSpec[], kernel: Kernel | undefined): void {
  if (!Array.isArray(io)) throw typeError('io', 'an array of argument specs (see parseArgSpec)', io);
  if (kernel !== undefined) checkIoFits(io, kernel);
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
 * A HostCandidate (`{ host }`) is called where a kernel would be launched, on host arrays: every defence runs but the
 * guard zones, which only device buffers have ('out-of-bounds'); an input array it changed fails ('input-modified').
 * Inputs are generated on the reference kernel's device where there is one (the same bytes either way). Whatever
 * `host` throws rejects, as a JavaScript reference's error does: the caller decides what it means.
 *
 * @throws TypeError / RangeError for bad options or io (a reference io that cannot be matched included), or from the
 *   launch's argument validation; whatever a JavaScript reference or a HostCandidate throws; a CudaError from the
 *   harness's own work (allocating and filling the buffers).
 */
export async function check(
  candidate: { kernel: Kernel; config: LaunchConfig } | HostCandidate,
  reference: Reference | null | undefined,
  io: readonly ArgSpec[],
  options?: CheckOptions,
): Promise<CheckResult> {
  const host = isHostCandidate(candidate);
  if (!host) refuseWorkCandidate(candidate);
  const o = checkCheckOptions(options);
  checkCandidateIo(io, host ? undefined : candidate.kernel);
  if (reference !== null && reference !== undefined) checkReference(reference, io);
  if (o.precision !== undefined) {
    if (reference === null || reference === undefined) {
      throw new TypeError(
        "options.precision needs a reference: the error an honest kernel makes is measured on the check's " +
          'reference, computed in the declared precision',
      );
    }
    checkReference(o.precision.reference, io, true, 'options.precision.reference');
  }
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

/** The bytes of every buffer argument after a run, by argument index; or the driver error a kernel raised. */
type RunBytes = { bytes: (Uint8Array | undefined)[] } | { fault: CudaError };

/** The device a host candidate's trial uses: a reference kernel's (for its own buffers and the inputs), if any. */
function hostTrialDevice(reference: Reference | undefined, o: ResolvedOptions): Device | undefined {
  for (const r of [reference, o.precision?.reference])
    if (r !== undefined && typeof r !== 'function') return r.kernel.device;
  return undefined;
}

/**
 * One run of a host candidate on the trial's inputs (pure outputs poisoned, with `alternatePoison` the complement):
 * it gets arrays of its own each run, and what they hold afterwards is read back as device bytes.
 */
async function runHost(
  candidate: HostCandidate,
  io: readonly ArgSpec[],
  inputs: TrialInputs,
  alternatePoison: boolean,
): Promise<RunBytes> {
  const arrays = io.map((a, i) =>
    a.kind === 'scalar' ? a.value : fromDeviceBytes(a.dtype, startBytes(a, inputs, i, alternatePoison)),
  );
  // A copy of the list: what counts is what the candidate wrote into the arrays, not what it put in the list.
  await candidate.host([...arrays]);
  return {
    bytes: io.map((a, i) => {
      if (a.kind !== 'buffer') return undefined;
      const arr = arrays[i] as HostArray;
      // fp8, f16 and bf16 are held widened (Float32Array): back to their own bytes.
      if (arr.byteLength !== arr.length * DTYPE_INFO[a.dtype].bytes) return toDeviceBytes(a.dtype, arr as Float32Array);
      return new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
    }),
  };
}

/** One trial: fresh inputs, the launch, then every defence in order; the determinism runs on the first trial. */
async function runTrial(
  candidate: { kernel: Kernel; config: LaunchConfig } | HostCandidate,
  reference: Reference | undefined,
  io: readonly ArgSpec[],
  o: ResolvedOptions,
  t: number,
  runs: { comparison: RunComparison | undefined },
): Promise<TrialResult> {
  const host = isHostCandidate(candidate) ? candidate : undefined;
  const device = host === undefined ? (candidate as { kernel: Kernel }).kernel.device : hostTrialDevice(reference, o);
  const seed = splitmix64(BigInt(o.seed) + BigInt(t));
  const inputs = prepareInputs(io, seed, device);
  const rng = createRng(seed ^ 0x9e3779b97f4a7c15n);
  const tolerance = (dtype: BufferDType): [number, number] => toleranceFor(o, dtype);
  const buffers: GuardedBuffer[] = [];
  const c = newComparison();
  let detail: string | undefined;
  let error: CheckFault | undefined;
  /** The precision policy's worst share of its bound over the outputs, where it ran. */
  let precisionUsed: number | undefined;
  /** A driver error from a kernel: the verdict; after it nothing more of this trial runs. */
  const fault = (defence: 'fault' | 'reference-fault', e: CudaError, where: string): void => {
    c.defence = defence;
    error = faultOf(e);
    detail = `${where}${firstLine(e.message)}`;
  };
  /** Another run on the same inputs (pure outputs poisoned again): the buffers' bytes after it. */
  const runAgain = async (alternatePoison: boolean): Promise<RunBytes> => {
    if (host !== undefined) return runHost(host, io, inputs, alternatePoison);
    const args = io.map((a, i) => {
      if (a.kind === 'scalar') return a.value;
      buffers[i]!.view.copyFromHost(startBytes(a, inputs, i, alternatePoison));
      return buffers[i]!.view;
    });
    const failure = launchAndWait(candidate as { kernel: Kernel; config: LaunchConfig }, args);
    if (failure !== undefined) return { fault: failure };
    return { bytes: io.map((a, i) => (a.kind === 'buffer' ? buffers[i]!.view.copyToHost<Uint8Array>() : undefined)) };
  };
  try {
    // Odd trials run a reference kernel first (see the top of the file); a JavaScript one runs on the host either way.
    const referenceFirst = t % 2 === 1 && reference !== undefined && typeof reference !== 'function';
    const early = referenceFirst ? await referenceOutputs(reference, device, io, inputs, true) : undefined;
    if (early !== undefined && 'fault' in early) {
      fault('reference-fault', early.fault, 'the reference kernel failed: ');
      return trialResult(t, `0x${seed.toString(16)}`, c, detail, error);
    }
    let body: (i: number) => Uint8Array;
    if (host !== undefined) {
      const first = (await runHost(host, io, inputs, false)) as { bytes: Uint8Array[] };
      body = (i) => first.bytes[i]!;
    } else {
      const kernelCandidate = candidate as { kernel: Kernel; config: LaunchConfig };
      const args = uploadGuarded(kernelCandidate.kernel.device, io, inputs, o.guardBytes, rng, buffers);
      const failure = launchAndWait(kernelCandidate, args);
      if (failure !== undefined) {
        fault('fault', failure, '');
        return trialResult(t, `0x${seed.toString(16)}`, c, detail, error);
      }
      const after = io.map((a, i) => (a.kind === 'buffer' ? buffers[i]!.base.copyToHost() : undefined));
      body = (i) => after[i]!.subarray(o.guardBytes, after[i]!.length - o.guardBytes);
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
      const ref = early ?? (await referenceOutputs(reference, device, io, inputs, o.zeroOnFree));
      if ('fault' in ref) {
        fault('reference-fault', ref.fault, 'the reference kernel failed: ');
      } else {
        io.forEach((a, i) => {
          if (a.kind !== 'buffer' || roleOf(a) === 'in') return;
          compareOutput(i, a.dtype, body(i), ref.outputs[i]!, ...tolerance(a.dtype), c);
        });
        if (c.defence === undefined && o.precision !== undefined) {
          const { reference: preciseRef, factor } = o.precision;
          const p = await referenceOutputs(preciseRef, device, io, inputs, o.zeroOnFree, true);
          if ('fault' in p) {
            fault('reference-fault', p.fault, 'the precise reference kernel failed: ');
          } else {
            precisionUsed = 0;
            for (const [i, a] of io.entries()) {
              if (a.kind !== 'buffer' || roleOf(a) === 'in' || !DTYPE_INFO[a.dtype].float) continue;
              checkPreciseAgrees(i, ref.outputs[i]!, p.outputs[i]!, ...tolerance(a.dtype));
              const got = fromDeviceBytes(a.dtype, body(i));
              const f = precisionFigures(a.dtype, got, ref.outputs[i]!, p.outputs[i]!, factor);
              precisionUsed = Math.max(precisionUsed, f.used);
              if (f.used > 1 && c.defence === undefined) {
                c.defence = 'precision';
                detail = precisionDetail(i, f, factor);
              }
            }
          }
        }
      }
    } else if (c.defence === undefined) {
      // No reference: every poisoned output element must be written. Elements that still hold the poison are
      // confirmed by a second launch poisoned with its complement (a kernel may write the poison's value itself).
      const pure = io.flatMap((a, i) => (a.kind === 'buffer' && roleOf(a) === 'out' ? [{ a, i }] : []));
      const suspects = pure.some(({ a, i }) => poisonedAnywhere(a.dtype, body(i)));
      let confirm: (Uint8Array | undefined)[] = [];
      if (suspects) {
        const again = await runAgain(true);
        if ('fault' in again) fault('fault', again.fault, 'on the second run, which confirms unwritten elements: ');
        else confirm = again.bytes;
      }
      if (error === undefined) {
        for (const { a, i } of pure) checkWritten(i, `argument ${i}`, a.dtype, body(i), confirm[i], c);
        detail = c.detail;
      }
    }
    // Also after a wrong value: a race explains a mismatch, as a stray write explains everything else.
    if (t === 0 && o.determinism && error === undefined && (c.defence === undefined || VALUE_DEFENCES.has(c.defence))) {
      // The same inputs again, outputs re-poisoned, compared with the first run (see compareRuns).
      const again = await runAgain(false);
      if ('fault' in again) {
        fault('fault', again.fault, 'on the second run on the same inputs: ');
      } else {
        const r = newRunComparison();
        io.forEach((a, i) => {
          if (a.kind !== 'buffer' || roleOf(a) === 'in') return;
          compareRuns(i, a.dtype, body(i), again.bytes[i]!, ...tolerance(a.dtype), r);
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
  const r = trialResult(t, `0x${seed.toString(16)}`, c, detail, error);
  return precisionUsed === undefined ? r : { ...r, precisionUsed };
}

/** Whether any element of an output's bytes holds the dtype's poison. */
function poisonedAnywhere(dtype: BufferDType, got: Uint8Array): boolean {
  const n = got.length / DTYPE_INFO[dtype].bytes;
  for (let i = 0; i < n; i++) if (holdsPoison(dtype, got, i)) return true;
  return false;
}
