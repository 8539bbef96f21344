// SPDX-License-Identifier: MIT
// validateJob(): everything wrong with an EvalJob at once, each problem in the library's one message format
// (Expected <what> for <path> but received <value> of type <type>), and the job in its canonical form. prepareJob()
// also returns what the pipeline runs on: the parsed argument specs (validate-args.ts), the decoded literal bytes.
import type { Signature } from '../core/index.js';
import {
  COMPILE_OPTION_KEYS,
  DTYPES,
  DTYPE_INFO,
  describe,
  isArch,
  isDType,
  nextCode,
  typeError,
} from '../core/index.js';
import { CHECK_OPTION_KEYS, type InitSpec, PRESETS, matchReferenceIo, signatureOf } from '../measure/index.js';
import type { EvalCheckOptions, EvalData, EvalExpected, EvalJob, EvalKernelRef, EvalTimingOptions } from './job.js';
import { type FaultNotes, type JobProblem, type PreparedArg, args, decodeData } from './validate-args.js';

export type { FaultNotes, JobProblem, PreparedArg } from './validate-args.js';

/** 'Invalid <what>: <the one problem>', or 'Invalid <what> (<n> problems):' and one indented line each. */
export function listProblems(what: string, problems: readonly JobProblem[]): string {
  const n = problems.length;
  const list = problems.map((p) => `  ${p.message}`).join('\n');
  return n === 1 ? `Invalid ${what}: ${problems[0]!.message}` : `Invalid ${what} (${n} problems):\n${list}`;
}

/**
 * A job with problems: every one of them in `problems`, and in the message one per line. A TypeError (the job as a
 * whole is an argument of the wrong shape) also when some problems are RangeErrors; each problem says which.
 */
export class InvalidJobError extends TypeError {
  /** Always 'ERR_INVALID_JOB' (until the next minor release, then 'ERR_CUDAKIT_INVALID_JOB'). */
  readonly code = 'ERR_INVALID_JOB';
  /** Always 'ERR_CUDAKIT_INVALID_JOB', the code by the rule of docs/errors.md, which `code` becomes next. */
  readonly codeNext = nextCode(this.code);
  /** Every problem found. */
  readonly problems: readonly JobProblem[];

  /** An error listing `problems` (at least one), as validateJob() throws it. */
  constructor(problems: readonly JobProblem[]) {
    super(listProblems('job', problems));
    this.name = 'InvalidJobError';
    this.problems = Object.freeze([...problems]);
  }
}

class Problems {
  readonly list: JobProblem[] = [];

  type(path: string, expected: string, value: unknown): void {
    this.list.push({ path, type: 'TypeError', message: typeError(path, expected, value).message });
  }

  range(path: string, expected: string, value: unknown): void {
    const message = `Expected ${expected} for ${path} but received ${describe(value)}`;
    this.list.push({ path, type: 'RangeError', message });
  }

  /** Unknown keys of an object: one problem each, naming the known ones (as checkOptions words it). */
  keys(path: string, value: Record<string, unknown>, known: readonly string[]): void {
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) {
        const message = `Unknown field ${path}.${key}; known fields: ${known.join(', ')}`;
        this.list.push({ path: `${path}.${key}`, type: 'TypeError', message });
      }
    }
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const JOB_KEYS = [
  'name',
  'source',
  'kernel',
  'headers',
  'compile',
  'grid',
  'block',
  'sharedMemBytes',
  'cooperative',
  'clusterDim',
  'signature',
  'args',
  'reference',
  'compare',
  'check',
  'timing',
  'zeroOnFree',
  'mode',
  'preset',
  'bytes',
  'flops',
] as const;
const KERNEL_REF_KEYS = [
  'source',
  'kernel',
  'name',
  'headers',
  'compile',
  'grid',
  'block',
  'sharedMemBytes',
  'args',
] as const;
/**
 * A job's check options: check()'s but zeroOnFree, which a job sets for all its phases at once (EvalJob.zeroOnFree),
 * and the job's own skip and withoutReference.
 */
const CHECK_KEYS = [...CHECK_OPTION_KEYS.filter((k) => k !== 'zeroOnFree'), 'skip', 'withoutReference'] as const;
const TIMING_KEYS = [
  'skip',
  'mode',
  'preset',
  'timer',
  'rule',
  'precision',
  'inputSets',
  'rounds',
  'bytes',
  'flops',
] as const;
/** The stopping rule's fields a job may override: the presets', and the GPU-time cap. */
const RULE_KEYS = [...Object.keys(PRESETS.default), 'maxGpuMs'];
const MODES = ['cold', 'hot', 'graph'] as const;
const quoted = (list: readonly string[]): string => list.map((s) => `'${s}'`).join(', ');

function source(p: Problems, path: string, v: unknown): void {
  if (typeof v === 'string') return;
  if (isObject(v)) {
    const which = typeof v.file === 'string' ? 'file' : typeof v.text === 'string' ? 'text' : undefined;
    if (which !== undefined && !(typeof v.file === 'string' && typeof v.text === 'string')) {
      p.keys(path, v, [which, 'name']);
      if (v.name !== undefined && typeof v.name !== 'string') p.type(`${path}.name`, 'a string', v.name);
      return;
    }
  }
  p.type(path, "CUDA source text, { file: 'path.cu' } or { text, name }", v);
}

function dim3(p: Problems, path: string, v: unknown): void {
  const ok = (x: unknown): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 1;
  if (typeof v === 'number') {
    if (!ok(v)) p.range(path, 'a positive integer', v);
  } else if (Array.isArray(v) && v.length >= 1 && v.length <= 3 && v.every((x) => typeof x === 'number')) {
    if (!v.every(ok)) p.range(path, '1 to 3 positive integers', v);
  } else {
    p.type(path, 'a positive integer or [x, y?, z?]', v);
  }
}

function nonNegativeInt(p: Problems, path: string, v: unknown, max = Number.MAX_SAFE_INTEGER): void {
  if (typeof v !== 'number') p.type(path, 'a non-negative integer', v);
  else if (!Number.isSafeInteger(v) || v < 0 || v > max) {
    p.range(path, max === Number.MAX_SAFE_INTEGER ? 'a non-negative integer' : `an integer in [0, ${max}]`, v);
  }
}

function intIn(p: Problems, path: string, v: unknown, min: number, max: number): void {
  if (typeof v !== 'number') p.type(path, `an integer in [${min}, ${max}]`, v);
  else if (!Number.isInteger(v) || v < min || v > max) p.range(path, `an integer in [${min}, ${max}]`, v);
}

function positive(p: Problems, path: string, v: unknown): void {
  if (typeof v !== 'number') p.type(path, 'a positive number', v);
  else if (!(v > 0) || !Number.isFinite(v)) p.range(path, 'a positive number', v);
}

function bool(p: Problems, path: string, v: unknown): void {
  if (typeof v !== 'boolean') p.type(path, 'a boolean', v);
}

function oneOf(p: Problems, path: string, v: unknown, allowed: readonly string[]): void {
  if (typeof v !== 'string' || !allowed.includes(v)) p.type(path, `one of ${quoted(allowed)}`, v);
}

function stringList(p: Problems, path: string, v: unknown): void {
  if (!Array.isArray(v)) p.type(path, 'an array of strings', v);
  else v.forEach((s, i) => typeof s !== 'string' && p.type(`${path}[${i}]`, 'a string', s));
}

function stringRecord(p: Problems, path: string, v: unknown): void {
  if (!isObject(v)) return p.type(path, "an object of strings such as { 'my.h': '...' }", v);
  for (const [k, s] of Object.entries(v)) if (typeof s !== 'string') p.type(`${path}['${k}']`, 'a string', s);
}

function compileOptions(p: Problems, path: string, v: unknown): void {
  if (!isObject(v)) return p.type(path, 'compile options { arch, std, defines, ... }', v);
  p.keys(path, v, COMPILE_OPTION_KEYS);
  if (v.target !== undefined) oneOf(p, `${path}.target`, v.target, ['cubin', 'ptx']);
  if (v.arch !== undefined && !isArch(v.arch)) {
    p.type(`${path}.arch`, "an architecture such as 'sm_90' or 'compute_90'", v.arch);
  }
  if (v.std !== undefined) oneOf(p, `${path}.std`, v.std, ['c++03', 'c++11', 'c++14', 'c++17', 'c++20']);
  const d = v.defines;
  if (Array.isArray(d)) {
    d.forEach((x, i) => {
      if (typeof x !== 'string' || !/^[A-Za-z_]\w*(=.*)?$/s.test(x)) {
        p.type(`${path}.defines[${i}]`, "'NAME' or 'NAME=value'", x);
      }
    });
  } else if (isObject(d)) {
    for (const [k, x] of Object.entries(d)) {
      if (!/^[A-Za-z_]\w*$/.test(k)) p.type(`${path}.defines`, 'macro names as keys', k);
      if (!['string', 'number', 'boolean'].includes(typeof x)) {
        p.type(`${path}.defines.${k}`, 'a string, number or boolean', x);
      }
    }
  } else if (d !== undefined) {
    p.type(`${path}.defines`, "{ NAME: value } or ['NAME=value']", d);
  }
  for (const key of ['includePaths', 'extraFlags', 'nameExpressions'] as const) {
    if (v[key] !== undefined) stringList(p, `${path}.${key}`, v[key]);
  }
  for (const key of ['fastMath', 'lineInfo', 'debug', 'cudaIncludes'] as const) {
    if (v[key] !== undefined) bool(p, `${path}.${key}`, v[key]);
  }
  if (v.maxRegisters !== undefined) intIn(p, `${path}.maxRegisters`, v.maxRegisters, 1, 255);
  const c = v.cache;
  if (c !== undefined && typeof c !== 'boolean') {
    if (!isObject(c)) p.type(`${path}.cache`, 'a boolean or { memory, disk, dir }', c);
    else p.keys(`${path}.cache`, c, ['memory', 'disk', 'dir']);
  }
}

function kernelRef(p: Problems, path: string, v: unknown): PreparedArg[] | undefined {
  if (!isObject(v)) return void p.type(path, '{ source, kernel, grid?, block?, ... }', v);
  p.keys(path, v, KERNEL_REF_KEYS);
  source(p, `${path}.source`, v.source);
  if (typeof v.kernel !== 'string' || v.kernel === '') {
    p.type(`${path}.kernel`, 'the kernel name, a non-empty string', v.kernel);
  }
  if (v.name !== undefined && typeof v.name !== 'string') p.type(`${path}.name`, 'a string', v.name);
  if (v.headers !== undefined) stringRecord(p, `${path}.headers`, v.headers);
  if (v.compile !== undefined) compileOptions(p, `${path}.compile`, v.compile);
  for (const key of ['grid', 'block'] as const) if (v[key] !== undefined) dim3(p, `${path}.${key}`, v[key]);
  if (v.sharedMemBytes !== undefined) nonNegativeInt(p, `${path}.sharedMemBytes`, v.sharedMemBytes);
  return v.args === undefined ? undefined : args(p, `${path}.args`, v.args);
}

/** @internal Notes what is wrong with `v` as tolerances by element type ({ f32: { atol?, rtol? } }). */
export function tolerances(p: FaultNotes, path: string, v: unknown): void {
  if (!isObject(v)) return p.type(path, 'tolerances by element type, such as { f32: { rtol: 1e-5 } }', v);
  for (const [dtype, t] of Object.entries(v)) {
    const at = `${path}.${dtype}`;
    if (!isDType(dtype)) p.type(at, `an element type (${DTYPES.join(', ')})`, dtype);
    if (!isObject(t)) {
      p.type(at, '{ atol?, rtol? }', t);
      continue;
    }
    p.keys(at, t, ['atol', 'rtol']);
    for (const k of ['atol', 'rtol'] as const) {
      const x = t[k];
      if (x !== undefined && (typeof x !== 'number' || !(x >= 0) || !Number.isFinite(x))) {
        p.range(`${at}.${k}`, 'a non-negative number', x);
      }
    }
  }
}

function checkOptions(p: Problems, path: string, v: unknown): void {
  if (!isObject(v)) return p.type(path, 'check options { trials, seed, atol, rtol, ... }', v);
  p.keys(path, v, CHECK_KEYS);
  if (v.trials !== undefined) intIn(p, `${path}.trials`, v.trials, 1, 1000);
  if (v.seed !== undefined) nonNegativeInt(p, `${path}.seed`, v.seed);
  for (const key of ['atol', 'rtol'] as const) {
    const x = v[key];
    if (x === undefined) continue;
    if (typeof x !== 'number') p.type(`${path}.${key}`, 'a non-negative number', x);
    else if (!(x >= 0) || !Number.isFinite(x)) p.range(`${path}.${key}`, 'a non-negative number', x);
  }
  if (v.tolerances !== undefined) tolerances(p, `${path}.tolerances`, v.tolerances);
  for (const key of ['determinism', 'requireDeterminism', 'skip'] as const) {
    if (v[key] !== undefined) bool(p, `${path}.${key}`, v[key]);
  }
  if (v.guardBytes !== undefined) {
    nonNegativeInt(p, `${path}.guardBytes`, v.guardBytes);
    if (typeof v.guardBytes === 'number' && v.guardBytes % 256 !== 0) {
      p.range(`${path}.guardBytes`, 'a multiple of 256', v.guardBytes);
    }
  }
  if (v.withoutReference !== undefined) {
    oneOf(p, `${path}.withoutReference`, v.withoutReference, ['reference-free', 'skip']);
  }
  if (v.precision !== undefined) {
    if (!isObject(v.precision)) p.type(`${path}.precision`, '{ reference, factor? }', v.precision);
    else {
      p.keys(`${path}.precision`, v.precision, ['reference', 'factor']);
      const f = v.precision.factor;
      if (f !== undefined && (typeof f !== 'number' || !Number.isFinite(f) || f < 1)) {
        p.range(`${path}.precision.factor`, 'a finite number, at least 1', f);
      }
    }
  }
}

function timingOptions(p: Problems, path: string, v: Record<string, unknown>): void {
  if (v.skip !== undefined) bool(p, `${path}.skip`, v.skip);
  if (v.mode !== undefined) oneOf(p, `${path}.mode`, v.mode, MODES);
  if (v.preset !== undefined) oneOf(p, `${path}.preset`, v.preset, Object.keys(PRESETS));
  if (v.timer !== undefined) oneOf(p, `${path}.timer`, v.timer, ['cupti', 'events']);
  if (v.rule !== undefined) {
    if (!isObject(v.rule)) p.type(`${path}.rule`, 'stopping-rule fields such as { timeoutMs: 2000 }', v.rule);
    else {
      p.keys(`${path}.rule`, v.rule, RULE_KEYS);
      for (const [k, x] of Object.entries(v.rule)) {
        if (typeof x !== 'number' || !(x >= 0)) p.type(`${path}.rule.${k}`, 'a non-negative number', x);
      }
    }
  }
  if (v.precision !== undefined) {
    const x = v.precision;
    if (typeof x !== 'number' || !(x >= 0.0025 && x <= 0.05)) {
      p.range(`${path}.precision`, 'a relative half-width from 0.0025 (±0.25 %) to 0.05 (±5 %)', x);
    }
  }
  if (v.inputSets !== undefined) intIn(p, `${path}.inputSets`, v.inputSets, 1, 64);
  if (v.rounds !== undefined) intIn(p, `${path}.rounds`, v.rounds, 1, 50);
  for (const key of ['bytes', 'flops'] as const) if (v[key] !== undefined) positive(p, `${path}.${key}`, v[key]);
}

/** What the pipeline runs on: the job in canonical form and its parsed parts. */
export interface PreparedJob {
  /** The job as evaluate() runs it: BenchSpec's old top-level timing fields moved into timing, its name set. */
  job: EvalJob;
  /** The candidate's arguments, in order. */
  args: PreparedArg[];
  /** The reference kernel's own arguments, when it has them (matched to the candidate's: matchReferenceIo). */
  referenceArgs: PreparedArg[] | undefined;
  /** The precise reference's own arguments (check.precision.reference.args), matched with f64 outputs allowed. */
  preciseArgs: PreparedArg[] | undefined;
  /** Expected outputs given literally: argument index → bytes. */
  expected: Map<number, Uint8Array> | undefined;
  /** The kernel's parameter types: job.signature, else the ones the arguments imply. */
  signature: Signature;
}

const RANDOM_INITS = new Set(['uniform', 'normal', 'randint']);

/**
 * Checks `value` as an EvalJob and returns it with its parts parsed, or the problems found (all of them: every field
 * is checked, and an argument list is checked element by element). validateJob() is the same check, throwing.
 *
 * @example const r = prepareJob(job); if (!Array.isArray(r)) check(candidate, null, r.args.map((a) => a.spec));
 */
export function prepareJob(value: unknown): PreparedJob | JobProblem[] {
  const p = new Problems();
  if (!isObject(value)) {
    p.type('job', 'a job object { source, kernel, grid, block, args, ... }', value);
    return p.list;
  }
  const v = value;
  p.keys('job', v, JOB_KEYS);
  if (v.name !== undefined && typeof v.name !== 'string') p.type('job.name', 'a string', v.name);
  source(p, 'job.source', v.source);
  if (typeof v.kernel !== 'string' || v.kernel === '') {
    p.type('job.kernel', 'the kernel name, a non-empty string', v.kernel);
  }
  if (v.headers !== undefined) stringRecord(p, 'job.headers', v.headers);
  if (v.compile !== undefined) compileOptions(p, 'job.compile', v.compile);
  dim3(p, 'job.grid', v.grid);
  dim3(p, 'job.block', v.block);
  if (v.sharedMemBytes !== undefined) nonNegativeInt(p, 'job.sharedMemBytes', v.sharedMemBytes);
  if (v.cooperative !== undefined) bool(p, 'job.cooperative', v.cooperative);
  if (v.clusterDim !== undefined) dim3(p, 'job.clusterDim', v.clusterDim);
  if (v.zeroOnFree !== undefined) bool(p, 'job.zeroOnFree', v.zeroOnFree);
  const prepared = args(p, 'job.args', v.args);
  if (v.signature !== undefined) {
    if (!Array.isArray(v.signature) || !v.signature.every((t) => typeof t === 'string' || isObject(t))) {
      p.type('job.signature', "an array of parameter types such as ['f32', 'ptr', 'i32']", v.signature);
    } else if (Array.isArray(v.args) && v.signature.length !== v.args.length) {
      p.range('job.signature', `${v.args.length} parameter types, one per argument`, v.signature);
    }
  }

  // Timing: BenchSpec's top-level fields are timing's, moved there.
  const timing: Record<string, unknown> = {};
  if (v.timing !== undefined) {
    if (!isObject(v.timing)) p.type('job.timing', 'timing options { mode, preset, bytes, ... }', v.timing);
    else {
      p.keys('job.timing', v.timing, TIMING_KEYS);
      Object.assign(timing, v.timing);
    }
  }
  for (const key of ['mode', 'preset', 'bytes', 'flops'] as const) {
    if (v[key] === undefined) continue;
    if (timing[key] === undefined) timing[key] = v[key];
    else p.type(`job.${key}`, `one place for ${key}: job.timing.${key} (job.${key} is its old name)`, v[key]);
  }
  timingOptions(p, 'job.timing', timing);
  if (v.check !== undefined) checkOptions(p, 'job.check', v.check);
  const check = (isObject(v.check) ? v.check : {}) as EvalCheckOptions;

  let referenceArgs: PreparedArg[] | undefined;
  let expected: Map<number, Uint8Array> | undefined;
  const r = v.reference;
  if (typeof r === 'function') {
    const what =
      'a kernel { source, kernel } or { expected } ' + '(pass a JavaScript reference as evaluate(job, { reference }))';
    p.type('job.reference', what, r);
  } else if (isObject(r) && 'expected' in r) {
    p.keys('job.reference', r, ['expected']);
    expected = expectedOutputs(p, r as unknown as EvalExpected, prepared);
  } else if (r !== undefined) {
    referenceArgs = kernelRef(p, 'job.reference', r);
    if (referenceArgs !== undefined && prepared !== undefined) {
      try {
        matchReferenceIo(
          prepared.map((a) => a.spec),
          referenceArgs.map((a) => a.spec),
        );
      } catch (e) {
        const what = `arguments that match the candidate's (${(e as Error).message})`;
        p.type('job.reference.args', what, (r as EvalKernelRef).args);
      }
    }
  }
  const preciseArgs = preciseRef(p, check, r === undefined ? v.compare : r, prepared);
  if (v.compare !== undefined) {
    const compareArgs = kernelRef(p, 'job.compare', v.compare);
    if (compareArgs !== undefined) {
      const what = "no argument list (a baseline takes the candidate's)";
      p.type('job.compare.args', what, (v.compare as EvalKernelRef).args);
    }
  }

  // An output to compare, unless nothing will be checked (check() says so too, but only once a GPU is there).
  const referenced = r !== undefined || v.compare !== undefined;
  const checks = check.skip !== true && (referenced || check.withoutReference !== 'skip');
  if (prepared !== undefined && checks && !prepared.some((a) => a.spec.kind === 'buffer' && a.spec.role === 'out')) {
    p.type('job.args', "an output buffer to check (mark one with :out, e.g. 'ptr:f32[N]:out'), or check.skip", v.args);
  }
  if (p.list.length > 0 || prepared === undefined) return p.list;

  const job = { ...v } as unknown as EvalJob & Record<string, unknown>;
  for (const key of ['mode', 'preset', 'bytes', 'flops'] as const) delete job[key];
  if (Object.keys(timing).length > 0) job.timing = timing as EvalTimingOptions;
  job.name = (v.name as string | undefined) ?? (v.kernel as string);
  return {
    job,
    args: prepared,
    referenceArgs,
    preciseArgs,
    expected,
    signature: (v.signature as Signature | undefined) ?? signatureOf(prepared.map((a) => a.spec)),
  };
}

/**
 * check.precision.reference: a kernel whose own arguments match the candidate's with f64 outputs allowed. The check
 * measures an honest kernel's error on its reference (`reference`: job.reference, else the compare baseline), which
 * must then be a kernel. Returns the precise kernel's own arguments.
 */
function preciseRef(
  p: Problems,
  check: EvalCheckOptions,
  reference: unknown,
  prepared: PreparedArg[] | undefined,
): PreparedArg[] | undefined {
  const precision = check.precision as unknown;
  if (!isObject(precision) || precision.reference === undefined) {
    if (isObject(precision)) p.type('job.check.precision.reference', 'a kernel { source, kernel, args? }', undefined);
    return undefined;
  }
  if (!isObject(reference) || 'expected' in reference) {
    const what = 'a reference kernel (or a compare baseline) that computes in the declared precision, as ';
    p.type('job.reference', `${what}job.check.precision needs,`, reference);
  }
  const own = kernelRef(p, 'job.check.precision.reference', precision.reference);
  if (prepared === undefined) return own;
  try {
    matchReferenceIo(
      prepared.map((a) => a.spec),
      (own ?? prepared).map((a) => a.spec),
      true,
    );
  } catch (e) {
    const what = `arguments that match the candidate's, f64 for float outputs (${(e as Error).message})`;
    p.type('job.check.precision.reference.args', what, (precision.reference as EvalKernelRef).args);
  }
  return own;
}

/** Expected outputs: each key an output buffer (by name or index) whose inputs are the same in every trial. */
function expectedOutputs(
  p: Problems,
  r: EvalExpected,
  prepared: PreparedArg[] | undefined,
): Map<number, Uint8Array> | undefined {
  if (!isObject(r.expected) || Object.keys(r.expected).length === 0) {
    return void p.type('job.reference.expected', "an object of expected outputs { 'y': { base64 } }", r.expected);
  }
  if (prepared === undefined) return undefined;
  const out = new Map<number, Uint8Array>();
  for (const [key, data] of Object.entries(r.expected)) {
    const path = `job.reference.expected['${key}']`;
    const i = /^\d+$/.test(key) ? Number(key) : prepared.findIndex((a) => a.name === key);
    const a = prepared[i];
    if (a === undefined || a.spec.kind !== 'buffer' || a.spec.role !== 'out') {
      p.type(path, 'an output buffer of the job, by its name or index', key);
      continue;
    }
    const { length, dtype } = a.spec;
    const bytes = decodeData(p, path, data as EvalData, length * DTYPE_INFO[dtype].bytes, `${length} × ${dtype}`);
    if (bytes !== undefined) out.set(i, bytes);
  }
  // Random fills draw new values every trial (a seeded one too: its generator starts from the trial's seed).
  prepared.forEach((a, i) => {
    const s = a.spec;
    if (s.kind !== 'buffer' || (s.role === 'out' && s.init === undefined)) return;
    const init: InitSpec | undefined = s.init;
    if (init === undefined || RANDOM_INITS.has(init.kind)) {
      const what =
        'an input that is the same in every trial (data, const, zeros, ones, arange or seq) ' + 'with expected outputs';
      p.type(`job.args[${i}]`, what, init?.kind ?? 'random');
    }
  });
  return out;
}

/**
 * Checks a job and returns it in canonical form: BenchSpec's top-level mode / preset / bytes / flops moved under
 * `timing`, `name` filled from the kernel. Defaults that belong to the layers below (5 trials, seed 42, the 'default'
 * preset, 'cold' mode ...) are left to them and not written in.
 *
 * @throws InvalidJobError (a TypeError) listing every problem, each in the one format: `Expected <what> for
 *   job.<path> but received <value> of type <type>`, or `Unknown field job.<key>; known fields: ...`.
 * @example validateJob(JSON.parse(body)) // throws on { kernel: 5 } naming job.source, job.kernel, job.grid, ...
 */
export function validateJob(value: unknown): EvalJob {
  const r = prepareJob(value);
  if (Array.isArray(r)) throw new InvalidJobError(r);
  return r.job;
}
