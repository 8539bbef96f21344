// SPDX-License-Identifier: MIT
// Correctness checking (benchmarking.md §8.2): a candidate kernel against a reference (another kernel or a
// JavaScript function on host arrays), over seeded trials, with the defences that catch the known ways a kernel
// can look right while being wrong:
//   poisoned outputs (NaN / 0xDEADBEEF) before every launch      → an unwritten element fails ('unwritten')
//   inputs compared byte for byte after every launch             → a kernel that writes its inputs fails ('input-modified')
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
// touches the GPU: the context is lost, and only a new process can use it again.
import {
  CudaError, type Device, type DeviceBuffer, type Kernel, type LaunchConfig, checkOptions, isContextLost, rangeError,
  toBf16Bits, toHalfBits, typeError,
} from '../core/index.js';
import type { ArgSpec, BufferArgSpec, BufferDType, InitSpec } from './argspec.js';
import { createRng, splitmix64 } from './stats.js';

export interface CheckOptions {
  /** Seeded trials with fresh inputs. Default 5. */
  trials?: number;
  /** Base seed; trial k uses splitmix64(seed + k). Default 42. */
  seed?: number;
  /** Override the per-dtype absolute / relative tolerance. */
  atol?: number;
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
}

/** Values the JavaScript reference receives: logical host arrays (f16/bf16 as Float32Array) and scalars. */
export type HostValue = ArrayBufferView | number | bigint | boolean;
/**
 * A reference kernel with its launch, or a JavaScript function that writes the expected outputs into host copies of
 * the arguments. A function that throws rejects check() with its own error: that is a bug in the reference, not a
 * verdict on the kernel.
 */
export type Reference = { kernel: Kernel; config: LaunchConfig } | ((args: HostValue[]) => void | Promise<void>);

/**
 * Which defence fired. 'fault': the candidate raised a driver error (a fault in the kernel, or a refused launch);
 * 'reference-fault': the reference kernel did, the candidate did not; 'nondeterministic': two runs of the candidate
 * on the same inputs differed beyond the tolerance (or at all, with requireDeterminism).
 */
export type Defence =
  | 'fault' | 'reference-fault' | 'out-of-bounds' | 'input-modified' | 'unwritten' | 'non-finite' | 'all-zero'
  | 'mismatch' | 'nondeterministic';

export interface Mismatch {
  /** Argument index of the output buffer. */
  arg: number;
  index: number;
  /** The reference's value; for 'nondeterministic', the candidate's first run. */
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

/** How far outputs are from the reference: per trial, and the worst over trials in a CheckResult. */
export interface ErrorFigures {
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

export interface TrialResult extends ErrorFigures {
  trial: number;
  seed: string;
  passed: boolean;
  defence: Defence | undefined;
  mismatches: Mismatch[];
  detail: string | undefined;
  /** The driver error, for 'fault' and 'reference-fault'. */
  error: CheckFault | undefined;
}

export interface CheckResult extends ErrorFigures {
  passed: boolean;
  /** The first defence that fired, if any. */
  defence: Defence | undefined;
  trials: TrialResult[];
  /** Up to 8 mismatching elements, from the first failing trial. */
  mismatches: Mismatch[];
  /** The driver error of the first failing trial, for 'fault' and 'reference-fault'. */
  error: CheckFault | undefined;
  /** Elements that differed bitwise between two runs on the same inputs (undefined: not run). */
  nondeterministicElements: number | undefined;
  /** Of those, the elements that differed by more than the tolerance (undefined: not run). */
  nondeterministicBeyondTolerance: number | undefined;
  /** One line for people. */
  summary: string;
}

interface DType {
  bytes: number;
  float: boolean;
  /** Logical host array type (what the JS reference sees). */
  host: new (n: number) => ArrayBufferView & ArrayLike<number | bigint>;
  atol: number;
  rtol: number;
  /** Poison bits, one element's worth, little-endian. */
  poison: number[];
}

const F = { atol: 1e-4, rtol: 1e-4 };
const DTYPES: Record<BufferDType, DType> = {
  i8: { bytes: 1, float: false, host: Int8Array, atol: 0, rtol: 0, poison: [0xef] },
  u8: { bytes: 1, float: false, host: Uint8Array, atol: 0, rtol: 0, poison: [0xef] },
  i16: { bytes: 2, float: false, host: Int16Array, atol: 0, rtol: 0, poison: [0xef, 0xbe] },
  u16: { bytes: 2, float: false, host: Uint16Array, atol: 0, rtol: 0, poison: [0xef, 0xbe] },
  i32: { bytes: 4, float: false, host: Int32Array, atol: 0, rtol: 0, poison: [0xef, 0xbe, 0xad, 0xde] },
  u32: { bytes: 4, float: false, host: Uint32Array, atol: 0, rtol: 0, poison: [0xef, 0xbe, 0xad, 0xde] },
  i64: { bytes: 8, float: false, host: BigInt64Array, atol: 0, rtol: 0, poison: [0xef, 0xbe, 0xad, 0xde, 0xef, 0xbe, 0xad, 0xde] },
  u64: { bytes: 8, float: false, host: BigUint64Array, atol: 0, rtol: 0, poison: [0xef, 0xbe, 0xad, 0xde, 0xef, 0xbe, 0xad, 0xde] },
  f16: { bytes: 2, float: true, host: Float32Array, atol: 1e-2, rtol: 1e-2, poison: [0x00, 0x7e] },
  bf16: { bytes: 2, float: true, host: Float32Array, atol: 1e-2, rtol: 1e-2, poison: [0xc0, 0x7f] },
  f32: { bytes: 4, float: true, host: Float32Array, ...F, poison: [0x00, 0x00, 0xc0, 0x7f] },
  f64: { bytes: 8, float: true, host: Float64Array, atol: 1e-8, rtol: 1e-8, poison: [0, 0, 0, 0, 0, 0, 0xf8, 0x7f] },
};

function fromHalfBits(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? Number.NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);
function fromBf16Bits(h: number): number {
  U32[0] = h << 16;
  return F32[0]!;
}

/** @internal Logical values (what the reference sees) → device bytes. */
export function encode(dtype: BufferDType, logical: ArrayLike<number | bigint>): Uint8Array {
  const d = DTYPES[dtype];
  const n = logical.length;
  if (dtype === 'f16' || dtype === 'bf16') {
    const bits = new Uint16Array(n);
    for (let i = 0; i < n; i++) bits[i] = (dtype === 'f16' ? toHalfBits : toBf16Bits)(logical[i] as number);
    return new Uint8Array(bits.buffer);
  }
  const arr = new d.host(n) as unknown as { [i: number]: number | bigint; buffer: ArrayBuffer };
  for (let i = 0; i < n; i++) arr[i] = logical[i]!;
  return new Uint8Array(arr.buffer);
}

/** @internal Device bytes → logical values. */
export function decode(dtype: BufferDType, bytes: Uint8Array): ArrayLike<number | bigint> & ArrayBufferView {
  const d = DTYPES[dtype];
  const n = bytes.byteLength / d.bytes;
  const aligned = new Uint8Array(bytes); // own, aligned copy
  if (dtype === 'f16' || dtype === 'bf16') {
    const bits = new Uint16Array(aligned.buffer);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = dtype === 'f16' ? fromHalfBits(bits[i]!) : fromBf16Bits(bits[i]!);
    return out;
  }
  return new (d.host as unknown as new (b: ArrayBuffer) => ArrayLike<number | bigint> & ArrayBufferView)(aligned.buffer);
}

function normal(rng: () => number): number {
  // Box–Muller; 1 - u keeps log away from 0
  return Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
}

function defaultInit(dtype: BufferDType): InitSpec {
  if (DTYPES[dtype].float) return { kind: 'uniform', lo: -1, hi: 1 };
  return dtype.startsWith('u') ? { kind: 'randint', lo: 0, hi: 100 } : { kind: 'randint', lo: -100, hi: 100 };
}

/** Host values for one buffer, from its init spec and a seeded generator. */
function generate(spec: BufferArgSpec, init: InitSpec, rng: () => number): ArrayLike<number | bigint> {
  const d = DTYPES[spec.dtype];
  const big = spec.dtype === 'i64' || spec.dtype === 'u64';
  const out = d.float ? new Float64Array(spec.length) : big ? new Array<bigint>(spec.length) : new Float64Array(spec.length);
  for (let i = 0; i < spec.length; i++) {
    let v: number;
    switch (init.kind) {
      case 'uniform': v = init.lo + (init.hi - init.lo) * rng(); break;
      case 'normal': v = init.mean + init.std * normal(rng); break;
      case 'randint': v = init.lo + Math.floor((init.hi - init.lo) * rng()); break;
      case 'const': v = init.value; break;
      case 'zeros': v = 0; break;
      case 'ones': v = 1; break;
      case 'arange': v = i; break;
      case 'seq': v = init.start + i * init.step; break;
    }
    (out as (number | bigint)[])[i] = big ? BigInt(Math.trunc(v)) : v;
  }
  // Round through the device type, so the reference sees exactly what the kernel reads.
  return decode(spec.dtype, encode(spec.dtype, out));
}

type Role = 'in' | 'inout' | 'out';
const roleOf = (s: BufferArgSpec): Role => (s.role === 'in' ? 'in' : s.init !== undefined ? 'inout' : 'out');

interface Prepared {
  /** Logical initial contents per buffer arg (undefined for scalars and pure outputs). */
  initial: (ArrayLike<number | bigint> | undefined)[];
}

function prepareTrial(io: readonly ArgSpec[], seed: bigint): Prepared {
  const rng = createRng(seed);
  return {
    initial: io.map((a) => (a.kind === 'buffer' && roleOf(a) !== 'out' ? generate(a, a.init ?? defaultInit(a.dtype), rng) : undefined)),
  };
}

/** @internal What an output holds before every launch: NaN for floats, 0xDEADBEEF (or its low bytes) for integers. */
export function poisonBytes(dtype: BufferDType, length: number): Uint8Array {
  const p = DTYPES[dtype].poison;
  const out = new Uint8Array(length * p.length);
  for (let i = 0; i < out.length; i++) out[i] = p[i % p.length]!;
  return out;
}

interface Guarded {
  base: DeviceBuffer;
  view: DeviceBuffer;
  guard: Uint8Array;
}

/** Device buffers (with guard zones) for `io`, filled for one trial; returns the launch arguments. */
function upload(device: Device, io: readonly ArgSpec[], prep: Prepared, guardBytes: number, rng: () => number, bufs: Guarded[]): unknown[] {
  return io.map((a, i) => {
    if (a.kind === 'scalar') return a.value;
    const bytes = a.length * DTYPES[a.dtype].bytes;
    const guard = new Uint8Array(guardBytes);
    for (let k = 0; k < guardBytes; k++) guard[k] = Math.floor(rng() * 256);
    const base = device.alloc(2 * guardBytes + bytes);
    const init = prep.initial[i];
    const body = init !== undefined ? encode(a.dtype, init) : poisonBytes(a.dtype, a.length);
    const whole = new Uint8Array(2 * guardBytes + bytes);
    whole.set(guard, 0);
    whole.set(body, guardBytes);
    whole.set(guard, guardBytes + bytes);
    base.copyFromHost(whole);
    const view = base.subarray(guardBytes, guardBytes + bytes);
    bufs[i] = { base, view, guard };
    return view;
  });
}

type Outputs = (ArrayLike<number | bigint> | undefined)[];

/**
 * The reference's outputs, or the driver error its kernel raised. A JavaScript reference that throws rejects: its
 * error is the caller's bug, not a verdict on any kernel.
 */
async function referenceOutputs(
  reference: Reference, device: Device, io: readonly ArgSpec[], prep: Prepared,
): Promise<{ outputs: Outputs } | { fault: CudaError }> {
  if (typeof reference === 'function') {
    const args: HostValue[] = io.map((a, i) => {
      if (a.kind === 'scalar') return a.value;
      const init = prep.initial[i];
      const arr = new DTYPES[a.dtype].host(a.length) as unknown as { set(x: ArrayLike<number | bigint>): void } & ArrayBufferView;
      if (init !== undefined) arr.set(init);
      return arr;
    });
    await reference(args);
    const written = (a: ArgSpec, i: number) => (a.kind === 'buffer' && roleOf(a) !== 'in' ? (args[i] as unknown as ArrayLike<number | bigint>) : undefined);
    return { outputs: io.map(written) };
  }
  const owned: DeviceBuffer[] = [];
  try {
    const args = io.map((a, i) => {
      if (a.kind === 'scalar') return a.value;
      const buf = device.alloc(a.length * DTYPES[a.dtype].bytes);
      owned.push(buf);
      const init = prep.initial[i];
      if (init !== undefined) buf.copyFromHost(encode(a.dtype, init));
      else buf.fill(0);
      return buf;
    });
    const fault = launchAndWait(reference, args);
    if (fault !== undefined) return { fault };
    const read = (a: ArgSpec, i: number) => (a.kind === 'buffer' && roleOf(a) !== 'in' ? decode(a.dtype, (args[i] as DeviceBuffer).copyToHost()) : undefined);
    return { outputs: io.map(read) };
  } finally {
    for (const b of owned) b.dispose(); // silent after a sticky error: the memory went with the context
  }
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
}

/** @internal */
export function newComparison(): Comparison {
  return { defence: undefined, maxAbs: 0, maxRel: 0, tolUsed: 0, normDiff2: 0, normRef2: 0, matched: 0, total: 0, mismatches: [] };
}

/** @internal Compares one output's device bytes with the reference's logical values, element by element. */
export function compareOutput(arg: number, dtype: BufferDType, got: Uint8Array, expected: ArrayLike<number | bigint>, atol: number, rtol: number, c: Comparison): void {
  const actual = decode(dtype, got);
  const d = DTYPES[dtype];
  const poison = new Uint8Array(d.poison);
  const n = expected.length;
  let allZero = true;
  let refNonZero = false;
  for (let i = 0; i < n; i++) {
    const e = expected[i]!;
    const a = actual[i]!;
    if (a !== 0 && a !== 0n) allZero = false;
    if (e !== 0 && e !== 0n) refNonZero = true;
    let ok: boolean;
    let defence: Defence = 'mismatch';
    if (typeof e === 'bigint' || typeof a === 'bigint') {
      ok = e === a;
    } else if (!Number.isFinite(e) || !Number.isFinite(a)) {
      ok = Object.is(e, a) || (Number.isNaN(e) && Number.isNaN(a)); // NaN must meet NaN, ±Inf the same Inf
      if (!ok) defence = 'non-finite';
    } else {
      const diff = Math.abs(a - e);
      const tol = atol + rtol * Math.abs(e);
      ok = diff <= tol;
      c.maxAbs = Math.max(c.maxAbs, diff);
      c.tolUsed = Math.max(c.tolUsed, tol > 0 ? diff / tol : diff > 0 ? Infinity : 0);
      if (e !== 0) c.maxRel = Math.max(c.maxRel, diff / Math.abs(e));
      c.normDiff2 += diff * diff;
      c.normRef2 += e * e;
    }
    if (!ok) {
      const at = i * d.bytes;
      if (d.poison.every((b, k) => got[at + k] === poison[k])) defence = 'unwritten';
      if (c.mismatches.length < 8) c.mismatches.push({ arg, index: i, expected: e, actual: a });
      if (c.defence === undefined || (c.defence === 'mismatch' && defence !== 'mismatch')) c.defence = defence;
    } else {
      c.matched++;
    }
    c.total++;
  }
  if (allZero && refNonZero && c.defence === undefined) c.defence = 'all-zero';
  else if (allZero && refNonZero && c.defence === 'mismatch') c.defence = 'all-zero';
}

function trialResult(
  trial: number, seed: string, c: Comparison, detail: string | undefined, error: CheckFault | undefined = undefined,
): TrialResult {
  return {
    trial, seed, passed: c.defence === undefined, defence: c.defence,
    maxAbsError: c.maxAbs, maxRelError: c.maxRel, toleranceUsed: c.tolUsed,
    relNormError: c.normRef2 > 0 ? Math.sqrt(c.normDiff2 / c.normRef2) : Math.sqrt(c.normDiff2),
    matchedRatio: c.total > 0 ? c.matched / c.total : 1,
    mismatches: c.mismatches, detail, error,
  };
}

/** Worst figures over the trials; the first failing trial decides defence and mismatches. Summary left to the caller. */
function checkResult(trials: TrialResult[], runs: RunComparison | undefined): CheckResult {
  const failed = trials.find((t) => !t.passed);
  const worst = (f: (t: TrialResult) => number): number => Math.max(0, ...trials.map(f));
  return {
    passed: failed === undefined, defence: failed?.defence, trials,
    maxAbsError: worst((t) => t.maxAbsError), maxRelError: worst((t) => t.maxRelError), toleranceUsed: worst((t) => t.toleranceUsed),
    relNormError: worst((t) => t.relNormError), matchedRatio: Math.min(1, ...trials.map((t) => t.matchedRatio)),
    mismatches: failed?.mismatches ?? [], error: failed?.error,
    nondeterministicElements: runs?.differing, nondeterministicBeyondTolerance: runs?.beyondTolerance, summary: '',
  };
}

/** The one-line summary: PASS with the error figures and the determinism note, or FAIL naming the defence and why. */
function summaryOf(r: CheckResult): string {
  const failed = r.trials.find((t) => !t.passed);
  if (failed === undefined) {
    return `PASS: ${r.trials.length} trials, ${errorFigures(r)}${determinismNote(r.nondeterministicElements)}`;
  }
  const m = failed.mismatches[0];
  const showFirst = m !== undefined && failed.defence !== 'nondeterministic'; // its detail already names the element
  return `FAIL (${failed.defence}) in trial ${failed.trial}` +
    (failed.detail ? `: ${failed.detail}` : '') +
    (showFirst ? `; first: argument ${m.arg}[${m.index}] = ${String(m.actual)}, expected ${String(m.expected)}` : '') +
    (failed.error?.sticky ? '; the CUDA context is lost: restart the process to use the GPU again' : '');
}

function errorFigures(r: CheckResult): string {
  return `worst element at ${(100 * r.toleranceUsed).toFixed(r.toleranceUsed < 0.01 && r.toleranceUsed > 0 ? 2 : 0)}% of its tolerance ` +
    `(max abs error ${r.maxAbsError.toExponential(2)}, max rel error ${r.maxRelError.toExponential(2)})`;
}

function checkCheckOptions(options: CheckOptions | undefined): Required<Omit<CheckOptions, 'atol' | 'rtol'>> & Pick<CheckOptions, 'atol' | 'rtol'> {
  const o = checkOptions('options', options, ['trials', 'seed', 'atol', 'rtol', 'determinism', 'requireDeterminism', 'guardBytes'] as const) as CheckOptions;
  const trials = o.trials ?? 5;
  if (!Number.isInteger(trials) || trials < 1 || trials > 1000) throw rangeError('options.trials', 'an integer in [1, 1000]', trials);
  const guardBytes = o.guardBytes ?? 65536;
  if (!Number.isInteger(guardBytes) || guardBytes < 0 || guardBytes % 256 !== 0) {
    throw rangeError('options.guardBytes', 'a non-negative multiple of 256', guardBytes);
  }
  for (const k of ['atol', 'rtol'] as const) {
    const v = o[k];
    if (v !== undefined && (typeof v !== 'number' || !(v >= 0))) throw rangeError(`options.${k}`, 'a non-negative number', v);
  }
  return {
    ...o, trials, guardBytes, seed: o.seed ?? 42, determinism: o.determinism ?? true, requireDeterminism: o.requireDeterminism ?? false,
  };
}

function checkIo(io: readonly ArgSpec[], kernel: Kernel): void {
  if (!Array.isArray(io)) throw typeError('io', 'an array of argument specs (see parseArgSpec)', io);
  if (io.length !== kernel.signature.length) {
    throw new TypeError(`io declares ${io.length} arguments but kernel '${kernel.name}' takes ${kernel.signature.length}`);
  }
  io.forEach((a, i) => {
    const p = kernel.signature[i];
    if (a.kind === 'buffer' ? p !== 'ptr' : p !== a.type) {
      throw new TypeError(`io[${i}] is ${a.kind === 'buffer' ? 'a buffer' : a.type} but parameter ${i} of '${kernel.name}' is ${String(p)}`);
    }
  });
  if (!io.some((a) => a.kind === 'buffer' && roleOf(a) !== 'in')) {
    throw new TypeError('io declares no output buffer: mark one with :out (ptr:f32[N]:out)');
  }
}

/**
 * Launches `target` and waits for it. A driver error (a fault inside the kernel, which shows at the wait, or a launch
 * the driver refused) is returned, as the verdict's material; anything else (TypeError / RangeError from argument
 * validation, a disposed kernel) is the caller's mistake and is thrown.
 */
function launchAndWait(target: { kernel: Kernel; config: LaunchConfig }, args: unknown[]): CudaError | undefined {
  try {
    (target.kernel.launch as (c: LaunchConfig, ...x: unknown[]) => void)(target.config, ...args);
    target.kernel.device.synchronize();
    return undefined;
  } catch (e) {
    if (e instanceof CudaError) return e;
    throw e;
  }
}

function faultOf(e: CudaError): CheckFault {
  return { code: e.code, api: e.api, result: e.result, sticky: e.sticky || isContextLost(e) };
}

const firstLine = (text: string): string => text.split('\n')[0] ?? '';

/** Defences about the values alone, which a race between two runs explains. */
const VALUE_DEFENCES: ReadonlySet<Defence> = new Set(['mismatch', 'unwritten', 'non-finite', 'all-zero']);

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
 * @internal Compares one output of two runs on the same inputs. An element whose bits differ counts as differing;
 * it is also beyond tolerance when |second − first| > atol + rtol·|first| (the first run plays the reference), when
 * one is NaN and the other is not, when infinities differ, or for 64-bit integers when they differ at all. NaNs
 * with different payloads and ±0 differ bitwise but not beyond tolerance.
 */
export function compareRuns(
  arg: number, dtype: BufferDType, first: Uint8Array, second: Uint8Array, atol: number, rtol: number, r: RunComparison,
): void {
  const w = DTYPES[dtype].bytes;
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
    a ??= decode(dtype, first);
    b ??= decode(dtype, second);
    const x = a[e]!;
    const y = b[e]!;
    let beyond: boolean;
    if (typeof x === 'bigint' || typeof y === 'bigint') {
      beyond = x !== y;
    } else if (!Number.isFinite(x) || !Number.isFinite(y)) {
      beyond = !(Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y)));
    } else {
      const diff = Math.abs(y - x);
      r.maxAbsDifference = Math.max(r.maxAbsDifference, diff);
      beyond = diff > atol + rtol * Math.abs(x);
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
 * @internal The determinism rule: with requireDeterminism any bitwise difference fails, otherwise only one beyond
 * the tolerance. Returns undefined when the runs pass, else the detail for the verdict and the elements to show.
 */
export function determinismFailure(
  r: RunComparison, requireDeterminism: boolean,
): { detail: string; mismatches: Mismatch[] } | undefined {
  const fails = requireDeterminism ? r.differing > 0 : r.beyondTolerance > 0;
  if (!fails) return undefined;
  const shown = r.firstBeyond.length > 0 ? r.firstBeyond : r.firstDiffering;
  const m = shown[0]!;
  const within = r.beyondTolerance === 0 ? 'all within tolerance' : `${r.beyondTolerance} beyond tolerance`;
  const how = requireDeterminism ? 'differed bitwise' : 'differed';
  const rule = requireDeterminism ? ' (requireDeterminism)' : '';
  return {
    detail: `${r.differing} element${r.differing === 1 ? '' : 's'} ${how} between two runs on the same inputs` +
      `${rule}, ${within}; first: argument ${m.arg}[${m.index}] = ${String(m.expected)} in one run, ` +
      `${String(m.actual)} in the other`,
    mismatches: shown,
  };
}

/** @internal The note a passing check adds about its two runs on the same inputs ('' when they were identical). */
export function determinismNote(differing: number | undefined): string {
  if (!differing) return '';
  return `; ${differing} element${differing === 1 ? '' : 's'} differed between two runs on the same inputs, ` +
    'all within tolerance (allowed unless requireDeterminism)';
}

/**
 * Checks `candidate` against `reference` over seeded trials with the defences above. `io` declares every kernel
 * argument in order (parseArgSpec syntax: inputs with how to fill them, outputs with `:out`, scalars as values).
 * An output with an initial value (`ptr:f32[N]=uniform(-1,1):out`, e.g. saxpy's y) is read-write: it starts from
 * that value instead of the poison, so an unwritten element shows as a plain mismatch there.
 *
 * A kernel that faults resolves to a verdict, not a rejection: `{ passed: false, defence: 'fault', error: { code,
 * api, result, sticky } }` for the candidate (a fault inside it, or a launch the driver refused, such as
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), 'reference-fault' for a reference kernel. After a sticky fault nothing more
 * touches the GPU and later trials do not run: the context is lost, and the process must restart to use the GPU.
 *
 * @throws TypeError / RangeError for bad options or io, or from the launch's argument validation; whatever a
 *   JavaScript reference throws; a CudaError from the harness's own work (allocating and filling the buffers).
 */
export async function check(
  candidate: { kernel: Kernel; config: LaunchConfig }, reference: Reference, io: readonly ArgSpec[], options?: CheckOptions,
): Promise<CheckResult> {
  const o = checkCheckOptions(options);
  checkIo(io, candidate.kernel);
  if (typeof reference !== 'function') checkIo(io, reference.kernel);
  const device = candidate.kernel.device;
  const trials: TrialResult[] = [];
  let runs: RunComparison | undefined;
  const tolerance = (a: BufferArgSpec): [number, number] => [
    o.atol ?? DTYPES[a.dtype].atol, o.rtol ?? DTYPES[a.dtype].rtol,
  ];
  for (let t = 0; t < o.trials; t++) {
    const seed = splitmix64(BigInt(o.seed) + BigInt(t));
    const prep = prepareTrial(io, seed);
    const rng = createRng(seed ^ 0x9e3779b97f4a7c15n);
    const bufs: Guarded[] = [];
    const c = newComparison();
    let detail: string | undefined;
    let error: CheckFault | undefined;
    /** A driver error from a kernel: the verdict; after it nothing more of this trial runs. */
    const fault = (defence: 'fault' | 'reference-fault', e: CudaError, where: string): void => {
      c.defence = defence;
      error = faultOf(e);
      detail = `${where}${firstLine(e.message)}`;
    };
    try {
      const args = upload(device, io, prep, o.guardBytes, rng, bufs);
      const failure = launchAndWait(candidate, args);
      if (failure !== undefined) {
        fault('fault', failure, '');
      } else {
        const after = io.map((a, i) => (a.kind === 'buffer' ? bufs[i]!.base.copyToHost() : undefined));
        const body = (i: number): Uint8Array => after[i]!.subarray(o.guardBytes, after[i]!.length - o.guardBytes);
        // Guards first: an out-of-bounds write explains whatever else looks wrong.
        io.forEach((a, i) => {
          if (a.kind !== 'buffer' || c.defence !== undefined) return;
          const whole = after[i]!;
          const { guard } = bufs[i]!;
          const end = whole.length - guard.length;
          for (let k = 0; k < guard.length; k++) {
            if (whole[k] !== guard[k] || whole[end + k] !== guard[k]) {
              c.defence = 'out-of-bounds';
              detail = `argument ${i}: a write ${whole[k] !== guard[k] ? `${guard.length - k} bytes before` : `${k} bytes after`} its buffer`;
              return;
            }
          }
        });
        if (c.defence === undefined) {
          io.forEach((a, i) => {
            if (a.kind !== 'buffer' || roleOf(a) !== 'in' || c.defence !== undefined) return;
            const expected = encode(a.dtype, prep.initial[i]!);
            const k = body(i).findIndex((b, j) => b !== expected[j]);
            if (k >= 0) {
              c.defence = 'input-modified';
              detail = `argument ${i} (an input) changed at element ${Math.floor(k / DTYPES[a.dtype].bytes)}`;
            }
          });
        }
        if (c.defence === undefined) {
          const ref = await referenceOutputs(reference, device, io, prep);
          if ('fault' in ref) {
            fault('reference-fault', ref.fault, 'the reference kernel failed: ');
          } else {
            io.forEach((a, i) => {
              if (a.kind !== 'buffer' || roleOf(a) === 'in') return;
              compareOutput(i, a.dtype, body(i), ref.outputs[i]!, ...tolerance(a), c);
            });
          }
        }
        // Also after a wrong value: a race explains a mismatch, as a stray write explains everything else.
        if (t === 0 && o.determinism && (c.defence === undefined || VALUE_DEFENCES.has(c.defence))) {
          // The same inputs again, outputs re-poisoned, compared with the first run (see compareRuns).
          const args2 = io.map((a, i) => {
            if (a.kind === 'scalar') return a.value;
            const init = prep.initial[i];
            bufs[i]!.view.copyFromHost(init !== undefined ? encode(a.dtype, init) : poisonBytes(a.dtype, a.length));
            return bufs[i]!.view;
          });
          const again = launchAndWait(candidate, args2);
          if (again !== undefined) {
            fault('fault', again, 'on the second run on the same inputs: ');
          } else {
            const r = newRunComparison();
            io.forEach((a, i) => {
              if (a.kind !== 'buffer' || roleOf(a) === 'in') return;
              compareRuns(i, a.dtype, body(i), bufs[i]!.view.copyToHost(), ...tolerance(a), r);
            });
            runs = r;
            const failure2 = determinismFailure(r, o.requireDeterminism);
            if (failure2 !== undefined) {
              const also = c.defence === undefined ? '' : `; its first run also failed (${c.defence})`;
              c.defence = 'nondeterministic';
              detail = failure2.detail + also;
              c.mismatches = failure2.mismatches;
            }
          }
        }
      }
    } finally {
      for (const b of bufs) b?.base.dispose(); // silent after a sticky error: the memory went with the context
    }
    trials.push(trialResult(t, `0x${seed.toString(16)}`, c, detail, error));
    // A fault ends the check: after a sticky one the context is gone, and a refused launch would be refused again.
    if (error !== undefined) break;
  }
  const result = checkResult(trials, runs);
  result.summary = summaryOf(result);
  return result;
}

/**
 * Device argument sets built from `io` (inputs filled, seeded per set; outputs poisoned), for bench()'s input
 * rotation. `verify(reference)` re-checks every set's outputs after timing against the reference.
 */
export function inputSets(device: Device, io: readonly ArgSpec[], seed = 42): {
  args: (set: number) => unknown[];
  verify: (reference: Reference, options?: Pick<CheckOptions, 'atol' | 'rtol'>) => Promise<CheckResult>;
  dispose: () => void;
} {
  const sets: { prep: Prepared; bufs: Guarded[]; args: unknown[] }[] = [];
  return {
    args: (set: number) => {
      const prep = prepareTrial(io, splitmix64(BigInt(seed) + 1000n + BigInt(set)));
      const bufs: Guarded[] = [];
      const args = upload(device, io, prep, 0, () => 0, bufs);
      sets.push({ prep, bufs, args });
      return args;
    },
    verify: async (reference, options) => {
      const trials: TrialResult[] = [];
      try {
        for (const [k, s] of sets.entries()) {
          const c = newComparison();
          const ref = await referenceOutputs(reference, device, io, s.prep);
          if ('fault' in ref) throw ref.fault;
          io.forEach((a, i) => {
            if (a.kind !== 'buffer' || roleOf(a) !== 'out') return; // in-place outputs changed with every timed launch
            const d = DTYPES[a.dtype];
            const [atol, rtol] = [options?.atol ?? d.atol, options?.rtol ?? d.rtol];
            compareOutput(i, a.dtype, s.bufs[i]!.view.copyToHost(), ref.outputs[i]!, atol, rtol, c);
          });
          trials.push(trialResult(k, '', c, undefined));
        }
      } catch (e) {
        // A fault here (the reference's, or one the timed launches left behind) names this phase.
        throw e instanceof CudaError ? CudaError.inPhase(e, 'inputSets().verify(): re-check after timing') : e;
      }
      const result = checkResult(trials, undefined);
      const failed = trials.find((t) => !t.passed);
      result.summary = failed === undefined
        ? `PASS after timing: ${trials.length} input sets re-checked, ${errorFigures(result)}`
        : `FAIL after timing (${failed.defence}) in input set ${failed.trial}`;
      return result;
    },
    dispose: () => {
      for (const s of sets) for (const b of s.bufs) b?.base.dispose();
      sets.length = 0;
    },
  };
}
