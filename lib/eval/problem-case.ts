// SPDX-License-Identifier: MIT
// One case of a problem as an EvalJob (caseJob()): every size, launch and roofline figure the problem and the
// submission give over the dimensions, evaluated with the case's values. The argspec text is cut where its sizes are
// (splitArgSpec), so a problem's arguments keep the text form people write; everything else of the grammar stays
// argspec's own, checked by validateJob() on the job made here.
import type { Dim3 } from '../core/index.js';
import { DTYPES, DTYPE_INFO } from '../core/index.js';
import { parseArgSpec } from '../measure/index.js';
import { evalDimExpr } from './dims.js';
import type { EvalArg, EvalCheckOptions, EvalJob, EvalKernelRef, EvalTimingOptions } from './job.js';
import type {
  DimValue,
  EvalProblem,
  LaunchDim,
  ProblemArg,
  ProblemCase,
  ProblemKernelRef,
  ProblemSubmission,
} from './problem-types.js';

/** Integer scalar types, whose value may be a dimension expression. */
const INT_TYPES: ReadonlySet<string> = new Set(DTYPES.filter((t) => DTYPE_INFO[t].range !== undefined));

/** The name of a case, from its dimensions where it has none. */
export function caseName(c: Pick<ProblemCase, 'name' | 'dims'>): string {
  return (
    c.name ??
    Object.entries(c.dims)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')
  );
}

/** Whether `text` uses one of `names` as a word: a scalar's value that is an expression, not a literal. */
export function usesName(text: string, names: readonly string[]): boolean {
  return (text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []).some((w) => names.includes(w));
}

/**
 * An argspec string cut where its sizes are: the buffer's dimensions between the brackets (split at top-level
 * commas, so that 'min(a, b)' stays whole), or an integer scalar's value; `join` puts values back.
 */
export function splitArgSpec(text: string): {
  exprs: string[];
  literals: string[];
  join: (values: readonly string[]) => string;
} {
  const at = text.indexOf('@');
  const head = at >= 0 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(text.slice(0, at)) ? text.slice(0, at + 1) : '';
  const body = text.slice(head.length);
  const buffer = /^(\s*ptr\s*:\s*[a-z0-9]+\s*)\[/.exec(body);
  if (buffer !== null) {
    const open = buffer[1]!.length;
    let depth = 0;
    let close = -1;
    const cuts: number[] = [];
    for (let i = open + 1; i < body.length && close < 0; i++) {
      const ch = body[i];
      if (ch === '(') depth++;
      else if (ch === ')') depth--;
      else if (ch === ',' && depth === 0) cuts.push(i);
      else if (ch === ']' && depth === 0) close = i;
    }
    if (close < 0) return { exprs: [], literals: [], join: () => text };
    const bounds = [open, ...cuts, close];
    const exprs = bounds.slice(0, -1).map((b, i) => body.slice(b + 1, bounds[i + 1]).trim());
    // Sizes the argspec grammar reads itself (1M, 16k, 1024*1024: each factor digits and a suffix) are left to it;
    // 'k' alone, or 2*k, is the dimension k.
    const own = exprs.map((e) => /^\d+[kKM]?(\s*\*\s*\d+[kKM]?)*$/.test(e) && !/^\d+$/.test(e));
    return {
      exprs: exprs.filter((_, i) => !own[i]),
      literals: exprs.filter((_, i) => own[i]),
      join: (values) => {
        let k = 0;
        const dimsText = exprs.map((e, i) => (own[i] ? e : values[k++]!)).join(',');
        return `${head}${body.slice(0, open)}[${dimsText}]${body.slice(close + 1)}`;
      },
    };
  }
  const scalar = /^(\s*([a-z0-9]+)\s*=)(.*)$/s.exec(body);
  if (
    scalar !== null &&
    INT_TYPES.has(scalar[2]!) &&
    /[A-Za-z_(]/.test(scalar[3]!) &&
    !/^\s*[+-]?0[xX]/.test(scalar[3]!)
  ) {
    return { exprs: [scalar[3]!.trim()], literals: [], join: (values) => `${head}${scalar[1]}${values[0]}` };
  }
  return { exprs: [], literals: [], join: () => text };
}

/** `v` evaluated for one case (already parsed by validateProblem(), so only value errors remain). */
function valueOf(v: DimValue, dims: Readonly<Record<string, number>>, label: string, min: number): number {
  return typeof v === 'number' ? v : evalDimExpr(v, dims, { label, min });
}

function dim3Of(v: LaunchDim, dims: Readonly<Record<string, number>>, label: string): Dim3 {
  if (Array.isArray(v)) return v.map((x, i) => valueOf(x as DimValue, dims, `${label}[${i}]`, 1)) as unknown as Dim3;
  return valueOf(v as DimValue, dims, label, 1);
}

function argOf(arg: ProblemArg, dims: Readonly<Record<string, number>>, label: string): EvalArg {
  if (typeof arg === 'string') {
    const parts = splitArgSpec(arg);
    if (parts.exprs.length === 0) return arg;
    return parts.join(parts.exprs.map((e) => String(evalDimExpr(e, dims, { label, min: 0 }))));
  }
  if (arg.kind === 'buffer') {
    const out = { ...arg } as Record<string, unknown>;
    if (typeof arg.length === 'string')
      out.length = evalDimExpr(arg.length, dims, { label: `${label}.length`, min: 0 });
    if (Array.isArray(arg.shape)) {
      out.shape = arg.shape.map((d: unknown, i) =>
        typeof d === 'string' ? evalDimExpr(d, dims, { label: `${label}.shape[${i}]`, min: 0 }) : d,
      );
    }
    return out as unknown as EvalArg;
  }
  if (typeof arg.value === 'string' && usesName(arg.value, Object.keys(dims))) {
    return { ...arg, value: evalDimExpr(arg.value, dims, { label: `${label}.value` }) };
  }
  return arg;
}

function kernelOf(
  ref: ProblemKernelRef,
  dims: Readonly<Record<string, number>>,
  label: string,
  problem: EvalProblem,
): EvalKernelRef {
  const out: EvalKernelRef = { source: ref.source, kernel: ref.kernel };
  if (ref.name !== undefined) out.name = ref.name;
  const headers = { ...problem.headers, ...ref.headers };
  if (Object.keys(headers).length > 0) out.headers = headers;
  if (ref.compile !== undefined) out.compile = ref.compile;
  if (ref.grid !== undefined) out.grid = dim3Of(ref.grid, dims, `${label}.grid`);
  if (ref.block !== undefined) out.block = dim3Of(ref.block, dims, `${label}.block`);
  if (ref.sharedMemBytes !== undefined) {
    out.sharedMemBytes = valueOf(ref.sharedMemBytes, dims, `${label}.sharedMemBytes`, 0);
  }
  if (ref.args !== undefined) out.args = ref.args.map((a, i) => argOf(a, dims, `${label}.args[${i}]`));
  return out;
}

/** What one launch of a case must do at least: the two sides of its roofline. */
export interface CaseWork {
  /** Bytes read plus bytes written. */
  bytes?: number;
  /** Floating-point operations. */
  flops?: number;
}

/** The bytes and flops of a case's launch (its roofline), from the problem's timing expressions. */
export function caseWork(problem: EvalProblem, c: ProblemCase): CaseWork {
  const out: CaseWork = {};
  for (const k of ['bytes', 'flops'] as const) {
    const v = problem.timing?.[k];
    if (v !== undefined) out[k] = valueOf(v, c.dims, `problem.timing.${k}`, 0);
  }
  return out;
}

/**
 * The EvalJob of one case: the submission's kernel and launch and the problem's arguments, every size evaluated
 * with the case's dimensions; the reference kernel as the comparison's baseline (so the check and the score use
 * it), or the problem's baseline with the case's expected outputs or a JavaScript reference as the check's.
 *
 * @throws RangeError or TypeError where an expression has no value for the case (a division by zero, a grid of 0).
 */
export function caseJob(problem: EvalProblem, submission: ProblemSubmission, c: ProblemCase): EvalJob {
  const dims = c.dims;
  const args = problem.args.map((a, i) => argOf(a, dims, `problem.args[${i}]`));
  const { preset, mode, timer, rule, precision: target, inputSets, rounds } = problem.timing ?? {};
  const timing: EvalTimingOptions = { ...caseWork(problem, c) };
  Object.assign(timing, defined({ preset, mode, timer, rule, precision: target, inputSets, rounds }));
  // The problem's tolerances by element type, as check() takes them: each output is held to its own type's.
  const { precision, ...own } = problem.check ?? {};
  const check: EvalCheckOptions = { ...own };
  if (precision !== undefined) {
    const reference = kernelOf(precision.reference, dims, 'problem.check.precision.reference', problem);
    check.precision = { reference, ...(precision.factor !== undefined ? { factor: precision.factor } : {}) };
  }
  const headers = { ...problem.headers, ...submission.headers };
  const job: EvalJob = {
    name: `${submission.name ?? submission.kernel} [${caseName(c)}]`,
    source: submission.source,
    kernel: submission.kernel,
    grid: dim3Of(submission.grid, dims, 'submission.grid'),
    block: dim3Of(submission.block, dims, 'submission.block'),
    args,
    check,
    timing,
  };
  if (Object.keys(headers).length > 0) job.headers = headers;
  const compile = { ...problem.compile, ...submission.compile };
  if (Object.keys(compile).length > 0) job.compile = compile;
  if (submission.sharedMemBytes !== undefined) {
    job.sharedMemBytes = valueOf(submission.sharedMemBytes, dims, 'submission.sharedMemBytes', 0);
  }
  const baseline = problem.baseline ?? problem.reference;
  if (baseline !== undefined) {
    job.compare = kernelOf(baseline, dims, problem.baseline ? 'problem.baseline' : 'problem.reference', problem);
  }
  if (c.expected !== undefined) job.reference = { expected: c.expected };
  else if (problem.baseline !== undefined && problem.reference !== undefined) {
    job.reference = kernelOf(problem.reference, dims, 'problem.reference', problem);
  }
  return job;
}

function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Bytes of a job's output buffers (role 'out', with an initial value or without): what a kernel writes, which may
 * still sit in the L2 when it ends. Arguments that do not parse count nothing here; validateJob() says what is
 * wrong with them.
 */
export function outputBytes(job: Pick<EvalJob, 'args'>): number {
  let total = 0;
  for (const a of job.args) {
    try {
      if (typeof a === 'string') {
        const spec = parseArgSpec(a);
        if (spec.kind === 'buffer' && spec.role === 'out') total += spec.length * DTYPE_INFO[spec.dtype].bytes;
      } else if (a.kind === 'buffer' && (a.role ?? (a.init === undefined ? 'out' : 'in')) === 'out') {
        const length = a.length ?? (a.shape ?? []).reduce((x, y) => x * y, 1);
        total += length * DTYPE_INFO[a.dtype].bytes;
      }
    } catch {
      // Not this function's to report.
    }
  }
  return total;
}
