// SPDX-License-Identifier: MIT
// Problems with cases: one task (its arguments, reference and tolerances) over named dimensions, and a list of cases
// that give the dimensions values, some public and some hidden. A submission gives its kernel and its launch as
// dimension expressions (dims.ts); caseJob() makes the EvalJob of one case, which evaluate() runs as any other job,
// and evaluateProblem() (evaluate-problem.ts) runs them all and scores them (score.ts).
//
// Where a problem says a size, it may say it over its dimensions: a buffer's length or shape (`x@ptr:f32[n]`,
// `a@ptr:f32[m, k]`, `{ kind: 'buffer', shape: ['m', 'k'] }`), an integer scalar's value (`n@i32=n`), a launch
// (`grid: 'cdiv(n, 256)'`), the bytes and flops of the roofline (`'8 * n'`). Everything else is an EvalJob's.
// Problems come from operators and, inline in a job, from strangers: every field is checked before a case is made,
// and every case's job by validateJob(), so that a problem with a mistake fails as a whole, before any GPU work.
import { type DimExpr, parseDimExpr } from './dims.js';
import { caseJob, caseName, splitArgSpec, usesName } from './problem-case.js';
import type { EvalProblem, ProblemDim, ProblemSubmission } from './problem-types.js';
import { InvalidJobError, type JobProblem, listProblems, tolerances, validateJob } from './validate.js';

/** The most dimensions and cases a problem may have: bounds on what a stranger's inline problem costs to run. */
export const PROBLEM_LIMITS = Object.freeze({
  /** Named dimensions. */
  maxDims: 16,
  /** Cases. */
  maxCases: 64,
  /** Arguments of a kernel. */
  maxArgs: 64,
});

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const DIM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;
const DIM_MAX_DEFAULT = 2 ** 31 - 1;
const PROBLEM_KEYS = [
  'name',
  'description',
  'dims',
  'args',
  'reference',
  'baseline',
  'headers',
  'compile',
  'check',
  'timing',
  'cases',
] as const;
const CASE_KEYS = ['name', 'dims', 'visibility', 'expected'] as const;
const CHECK_KEYS = [
  'trials',
  'seed',
  'determinism',
  'requireDeterminism',
  'guardBytes',
  'tolerances',
  'precision',
] as const;
const TIMING_KEYS = ['mode', 'preset', 'timer', 'rule', 'precision', 'inputSets', 'rounds', 'bytes', 'flops'] as const;
const DIM_KEYS = ['min', 'max', 'description'] as const;
const SUBMISSION_KEYS = ['name', 'source', 'kernel', 'headers', 'compile', 'grid', 'block', 'sharedMemBytes'] as const;
const KERNEL_KEYS = ['source', 'kernel', 'name', 'headers', 'compile', 'grid', 'block', 'sharedMemBytes', 'args'];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A problem whose fields, cases or cases' jobs are wrong: every problem found, in the library's one format
 * ('Expected <what> for <path> but received <value>'), the path from the problem ('problem.cases[2].dims.n') or from
 * a case's job ("case 'n=1000' job.args[1]").
 */
export class InvalidProblemError extends TypeError {
  /** Always 'ERR_CUDAKIT_INVALID_PROBLEM'. */
  readonly code = 'ERR_CUDAKIT_INVALID_PROBLEM';
  /** Every problem found. */
  readonly problems: readonly JobProblem[];

  /** An error listing `problems` (at least one), as validateProblem() throws it. */
  constructor(problems: readonly JobProblem[]) {
    super(listProblems('problem', problems));
    this.name = 'InvalidProblemError';
    this.problems = Object.freeze([...problems]);
  }
}

/** Collects what is wrong, in validateJob()'s format. */
class Faults {
  readonly list: JobProblem[] = [];

  type(path: string, expected: string, value: unknown): void {
    this.list.push({
      path,
      type: 'TypeError',
      message: `Expected ${expected} for ${path} but received ${show(value)}`,
    });
  }

  range(path: string, expected: string, value: unknown): void {
    this.list.push({
      path,
      type: 'RangeError',
      message: `Expected ${expected} for ${path} but received ${show(value)}`,
    });
  }

  error(path: string, e: unknown): void {
    if (e instanceof InvalidJobError || e instanceof InvalidProblemError) {
      for (const p of e.problems) this.list.push({ ...p, path: `${path} ${p.path}`, message: `${path}: ${p.message}` });
    } else if (e instanceof RangeError || e instanceof TypeError) {
      const type = e instanceof RangeError ? 'RangeError' : 'TypeError';
      // A dimension expression's own messages name it already (its label is the path).
      const message = e.message.includes(`for ${path}`) ? e.message : `${path}: ${e.message}`;
      this.list.push({ path, type, message });
    } else {
      throw e;
    }
  }

  keys(path: string, value: Record<string, unknown>, known: readonly string[]): void {
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) {
        const message = `Unknown field ${path}.${key}; known fields: ${known.join(', ')}`;
        this.list.push({ path: `${path}.${key}`, type: 'TypeError', message });
      }
    }
  }
}

/** describe() without the library's import: a short, bounded rendering of a hostile value. */
function show(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'string') return `'${value.length > 64 ? `${value.slice(0, 64)}…` : value}' of type string`;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return `${String(value)} of type ${typeof value}`;
  }
  return Array.isArray(value) ? 'an array' : `a value of type ${typeof value}`;
}

/** The dimensions' bounds, by name, in declaration order; undefined where `dims` is malformed (a fault is noted). */
function dimsOf(f: Faults, v: unknown): Map<string, Required<Omit<ProblemDim, 'description'>>> | undefined {
  const out = new Map<string, { min: number; max: number }>();
  const entries: [string, unknown][] = Array.isArray(v)
    ? v.map((name, i) => (typeof name === 'string' ? [name, {}] : [`[${i}]`, name]))
    : isObject(v)
      ? Object.entries(v)
      : [];
  if (!Array.isArray(v) && !isObject(v)) {
    f.type('problem.dims', "the dimensions' names and bounds, such as { n: { min: 1 } } or ['n']", v);
    return undefined;
  }
  if (entries.length === 0) f.range('problem.dims', 'at least one dimension', v);
  if (entries.length > PROBLEM_LIMITS.maxDims) {
    f.range('problem.dims', `at most ${PROBLEM_LIMITS.maxDims} dimensions`, entries.length);
  }
  for (const [name, bounds] of entries.slice(0, PROBLEM_LIMITS.maxDims)) {
    const path = `problem.dims.${name}`;
    if (!DIM_NAME.test(name) || ['ceil', 'floor', 'min', 'max', 'cdiv'].includes(name)) {
      f.type(path, 'a dimension name of letters, digits and _ (not a function name such as ceil)', name);
      continue;
    }
    if (!isObject(bounds)) {
      f.type(path, '{ min?, max?, description? }', bounds);
      continue;
    }
    f.keys(path, bounds, DIM_KEYS);
    const min = bounds.min ?? 1;
    const max = bounds.max ?? DIM_MAX_DEFAULT;
    if (typeof min !== 'number' || !Number.isSafeInteger(min)) f.type(`${path}.min`, 'a safe integer', min);
    if (typeof max !== 'number' || !Number.isSafeInteger(max)) f.type(`${path}.max`, 'a safe integer', max);
    if (bounds.description !== undefined && typeof bounds.description !== 'string') {
      f.type(`${path}.description`, 'a string', bounds.description);
    }
    if (typeof min === 'number' && typeof max === 'number' && min > max) f.range(`${path}.max`, `at least ${min}`, max);
    out.set(name, { min: Number(min), max: Number(max) });
  }
  return out;
}

/**
 * Everything wrong with a problem (and, given, a submission to it) at once: its fields, every dimension expression
 * (parsed, its names declared), every case (its dimensions within their bounds), and every case's job as
 * validateJob() sees it. Returns the problem as it is when there is nothing wrong.
 *
 * @throws InvalidProblemError listing every problem found.
 */
export function validateProblem(problem: unknown, submission?: unknown): EvalProblem {
  const f = new Faults();
  if (!isObject(problem)) {
    f.type('problem', 'a problem { name, dims, args, reference?, cases, ... }', problem);
    throw new InvalidProblemError(f.list);
  }
  f.keys('problem', problem, PROBLEM_KEYS);
  if (typeof problem.name !== 'string' || !NAME.test(problem.name)) {
    f.type('problem.name', "a name of letters, digits, '_', '.' and '-' (up to 64)", problem.name);
  }
  if (problem.description !== undefined && typeof problem.description !== 'string') {
    f.type('problem.description', 'a string', problem.description);
  }
  const dims = dimsOf(f, problem.dims);
  const names = dims === undefined ? undefined : [...dims.keys()];
  if (!Array.isArray(problem.args)) f.type('problem.args', 'an array of arguments', problem.args);
  else if (problem.args.length > PROBLEM_LIMITS.maxArgs) {
    f.range('problem.args', `at most ${PROBLEM_LIMITS.maxArgs} arguments`, problem.args.length);
  }
  for (const key of ['reference', 'baseline'] as const) {
    const ref = problem[key];
    if (ref === undefined) continue;
    if (!isObject(ref)) f.type(`problem.${key}`, 'a kernel { source, kernel, grid?, block?, ... }', ref);
    else f.keys(`problem.${key}`, ref, KERNEL_KEYS);
  }
  const timing = problem.timing;
  if (timing !== undefined && !isObject(timing)) f.type('problem.timing', 'timing options', timing);
  // No skip, no reference-free check: a problem's score stands on every case checked and timed.
  if (isObject(timing)) f.keys('problem.timing', timing, TIMING_KEYS);
  const check = problem.check;
  if (check !== undefined && !isObject(check)) f.type('problem.check', 'check options', check);
  if (isObject(check)) f.keys('problem.check', check, CHECK_KEYS);
  if (isObject(check) && check.tolerances !== undefined) tolerances(f, 'problem.check.tolerances', check.tolerances);
  if (isObject(check) && check.precision !== undefined) precision(f, check.precision, problem);
  const cases = problem.cases;
  if (!Array.isArray(cases) || cases.length === 0) {
    f.type('problem.cases', 'an array of at least one case { dims, name?, visibility? }', cases);
  } else if (cases.length > PROBLEM_LIMITS.maxCases) {
    f.range('problem.cases', `at most ${PROBLEM_LIMITS.maxCases} cases`, cases.length);
  }
  if (names !== undefined) expressions(f, problem, names);
  if (submission !== undefined) checkSubmission(f, submission, names);
  if (f.list.length > 0 || dims === undefined || !Array.isArray(cases)) throw new InvalidProblemError(f.list);

  const seen = new Set<string>();
  cases.forEach((c: unknown, i) => {
    const path = `problem.cases[${i}]`;
    if (!isObject(c)) return f.type(path, 'a case { dims, name?, visibility? }', c);
    f.keys(path, c, CASE_KEYS);
    if (c.name !== undefined && (typeof c.name !== 'string' || c.name.length === 0 || c.name.length > 64)) {
      f.type(`${path}.name`, 'a name of 1 to 64 characters', c.name);
    }
    if (c.visibility !== undefined && c.visibility !== 'public' && c.visibility !== 'hidden') {
      f.type(`${path}.visibility`, "'public' or 'hidden'", c.visibility);
    }
    if (c.expected !== undefined && !isObject(c.expected)) f.type(`${path}.expected`, 'expected outputs', c.expected);
    if (!isObject(c.dims)) return f.type(`${path}.dims`, 'a value for every dimension', c.dims);
    for (const key of Object.keys(c.dims)) {
      if (!dims.has(key)) f.type(`${path}.dims.${key}`, `a dimension of the problem (${names!.join(', ')})`, key);
    }
    for (const [name, { min, max }] of dims) {
      const v = c.dims[name];
      if (v === undefined) f.type(`${path}.dims.${name}`, 'a safe integer', v);
      else if (typeof v !== 'number' || !Number.isSafeInteger(v)) f.type(`${path}.dims.${name}`, 'a safe integer', v);
      else if (v < min || v > max) f.range(`${path}.dims.${name}`, `an integer in [${min}, ${max}]`, v);
    }
    const label = typeof c.name === 'string' ? c.name : caseName({ dims: c.dims as Record<string, number> });
    if (seen.has(label)) f.type(`${path}.name`, `a name no other case has ('${label}' is taken)`, c.name);
    seen.add(label);
  });
  if (f.list.length > 0) throw new InvalidProblemError(f.list);

  // Each case's job: the problem's fields an EvalJob has (args, tolerances, kernels) checked where they are used.
  const p = problem as unknown as EvalProblem;
  const probe: ProblemSubmission = isObject(submission)
    ? (submission as unknown as ProblemSubmission)
    : { source: 'extern "C" __global__ void k() {}', kernel: 'k', grid: 1, block: 1 };
  p.cases.forEach((c, i) => {
    try {
      validateJob(caseJob(p, probe, c));
    } catch (e) {
      f.error(`case '${caseName(c)}' (problem.cases[${i}])`, e);
    }
  });
  if (f.list.length > 0) throw new InvalidProblemError(f.list);
  return p;
}

/** Parses `v` as a dimension expression over `names`; notes a fault and returns undefined where it is not one. */
function expression(f: Faults, path: string, v: unknown, names: readonly string[]): DimExpr | undefined {
  if (typeof v !== 'number' && typeof v !== 'string') {
    f.type(path, "an integer or a dimension expression such as 'cdiv(n, 256)'", v);
    return undefined;
  }
  try {
    const e = parseDimExpr(v, path);
    const unknown = e.names.filter((n) => !names.includes(n));
    if (unknown.length > 0) {
      f.type(
        path,
        `an expression over the problem's dimensions (${names.join(', ')})`,
        `${e.text}' uses '${unknown[0]}`,
      );
      return undefined;
    }
    return e;
  } catch (e) {
    f.error(path, e);
    return undefined;
  }
}

/** problem.check.precision: { reference: a kernel, factor? }, and a kernel reference to check against. */
function precision(f: Faults, p: unknown, problem: Record<string, unknown>): void {
  const path = 'problem.check.precision';
  if (!isObject(p)) return f.type(path, '{ reference, factor? }', p);
  f.keys(path, p, ['reference', 'factor']);
  if (!isObject(p.reference)) f.type(`${path}.reference`, 'a kernel { source, kernel, args?, ... }', p.reference);
  else f.keys(`${path}.reference`, p.reference, KERNEL_KEYS);
  const factor = p.factor;
  if (factor !== undefined && (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1)) {
    f.range(`${path}.factor`, 'a finite number, at least 1', factor);
  }
  if (problem.reference === undefined) {
    const what = 'a reference kernel that computes in the declared precision, as problem.check.precision needs,';
    f.type('problem.reference', what, problem.reference);
  }
}

/** The problem's kernels besides the submission, by path: its reference, baseline and precise reference. */
function kernelsOf(problem: Record<string, unknown>): [string, Record<string, unknown>][] {
  const check = isObject(problem.check) ? problem.check : {};
  const precise = isObject(check.precision) ? check.precision.reference : undefined;
  const all: [string, unknown][] = [
    ['problem.reference', problem.reference],
    ['problem.baseline', problem.baseline],
    ['problem.check.precision.reference', precise],
  ];
  return all.filter((e): e is [string, Record<string, unknown>] => isObject(e[1]));
}

function launch(f: Faults, path: string, v: unknown, names: readonly string[]): void {
  if (Array.isArray(v) && v.length >= 1 && v.length <= 3) v.forEach((x, i) => expression(f, `${path}[${i}]`, x, names));
  else expression(f, path, v, names);
}

/** Every expression of the problem's own fields parses and names only declared dimensions. */
function expressions(f: Faults, problem: Record<string, unknown>, names: readonly string[]): void {
  if (Array.isArray(problem.args)) problem.args.forEach((a, i) => argExpressions(f, `problem.args[${i}]`, a, names));
  for (const [path, ref] of kernelsOf(problem)) {
    for (const d of ['grid', 'block'] as const) if (ref[d] !== undefined) launch(f, `${path}.${d}`, ref[d], names);
    if (ref.sharedMemBytes !== undefined) expression(f, `${path}.sharedMemBytes`, ref.sharedMemBytes, names);
    if (Array.isArray(ref.args)) ref.args.forEach((a, i) => argExpressions(f, `${path}.args[${i}]`, a, names));
  }
  const timing = problem.timing;
  if (isObject(timing)) {
    for (const k of ['bytes', 'flops'] as const)
      if (timing[k] !== undefined) expression(f, `problem.timing.${k}`, timing[k], names);
  }
}

function argExpressions(f: Faults, path: string, arg: unknown, names: readonly string[]): void {
  if (typeof arg === 'string') {
    const parts = splitArgSpec(arg);
    for (const e of parts.exprs) expression(f, path, e, names);
    // 4k is argspec's 4096 even where k is a dimension: say so rather than read it one way silently.
    for (const literal of parts.literals) {
      const suffix = (literal.match(/\d([kKM])/g) ?? []).map((m) => m[1]!).find((c) => names.includes(c));
      if (suffix !== undefined) {
        f.type(path, `a size without the suffix ${suffix}, which is also a dimension (write 4 * ${suffix})`, literal);
      }
    }
  } else if (isObject(arg)) {
    if (arg.kind === 'buffer') {
      if (typeof arg.length === 'string') expression(f, `${path}.length`, arg.length, names);
      if (Array.isArray(arg.shape)) {
        arg.shape.forEach((d, i) => typeof d === 'string' && expression(f, `${path}.shape[${i}]`, d, names));
      }
    } else if (arg.kind === 'scalar' && typeof arg.value === 'string' && usesName(arg.value, names)) {
      expression(f, `${path}.value`, arg.value, names);
    }
  }
}

function checkSubmission(f: Faults, s: unknown, names: readonly string[] | undefined): void {
  if (!isObject(s)) return f.type('submission', 'a submission { source, kernel, grid, block, ... }', s);
  f.keys('submission', s, SUBMISSION_KEYS);
  for (const k of ['grid', 'block'] as const) {
    if (s[k] === undefined)
      f.type(`submission.${k}`, "an integer or a dimension expression such as 'cdiv(n, 256)'", s[k]);
    else if (names !== undefined) launch(f, `submission.${k}`, s[k], names);
  }
  if (s.sharedMemBytes !== undefined && names !== undefined) {
    expression(f, 'submission.sharedMemBytes', s.sharedMemBytes, names);
  }
}
