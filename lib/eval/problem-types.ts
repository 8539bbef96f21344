// SPDX-License-Identifier: MIT
// The JSON of problems with cases: the problem (named dimensions, arguments, reference and tolerances over them, the
// cases) and a submission to it (a kernel and its launch over the dimensions). Pure types; validateProblem() is in
// problem.ts, a case's EvalJob in problem-case.ts.
import type { CompileOptions } from '../core/index.js';
import type {
  EvalArg,
  EvalBufferArg,
  EvalCheckOptions,
  EvalData,
  EvalKernelRef,
  EvalScalarArg,
  EvalSource,
  EvalTimingOptions,
} from './job.js';

/** A size over a problem's dimensions: an integer, or a dimension expression such as 'cdiv(n, 256)'. */
export type DimValue = number | string;

/** A launch dimension over a problem's dimensions: x, or [x, y?, z?], each a DimValue. */
export type LaunchDim = DimValue | readonly DimValue[];

/** A buffer argument of a problem: EvalBufferArg, its length or shape over the dimensions. */
export interface ProblemBufferArg extends Omit<EvalBufferArg, 'length' | 'shape'> {
  /** Elements, over the dimensions: 'n', 'm * k'. Give this or shape. */
  length?: DimValue;
  /** Dimensions, outermost first, each over the problem's: ['m', 'k']. */
  shape?: readonly DimValue[];
}

/**
 * An argument of a problem: an argspec string whose sizes may be over the dimensions (`x@ptr:f32[m, k]`,
 * `n@i32=n`), a scalar object whose integer value may be an expression (`{ kind: 'scalar', type: 'i32', value:
 * 'm * k' }`), or a buffer object with its length or shape over them.
 */
export type ProblemArg = string | EvalScalarArg | ProblemBufferArg;

/** A named dimension's bounds: every case's value must lie within them. */
export interface ProblemDim {
  /** The least value a case may give it. Default 1. */
  min?: number;
  /** The greatest value a case may give it. Default 2^31 - 1. */
  max?: number;
  /** What it is, for people ('rows', 'the reduction length'). */
  description?: string;
}

/** Who sees a case: its inputs, outputs and timings ('public'), or only its pass/fail and its part of the score. */
export type CaseVisibility = 'public' | 'hidden';

/** One case of a problem: a value for every dimension. */
export interface ProblemCase {
  /** Its label in reports. Default: the dimensions, 'm=4096 n=4096 k=4096'. */
  name?: string;
  /** A safe integer for every dimension of the problem. */
  dims: Readonly<Record<string, number>>;
  /** Default 'public'. */
  visibility?: CaseVisibility;
  /** Literal expected outputs for this case (instead of a reference kernel): EvalExpected's `expected`. */
  expected?: Readonly<Record<string, EvalData>>;
}

/** A kernel of the problem (its reference or its timing baseline), its launch over the dimensions. */
export interface ProblemKernelRef extends Omit<EvalKernelRef, 'grid' | 'block' | 'sharedMemBytes' | 'args'> {
  /** Its grid over the dimensions. Default: the submission's. */
  grid?: LaunchDim;
  /** Its block over the dimensions. Default: the submission's. */
  block?: LaunchDim;
  /** Its dynamic shared memory per block over the dimensions. Default: the submission's. */
  sharedMemBytes?: DimValue;
  /** Its own arguments, sizes over the dimensions (EvalKernelRef.args). Default: the problem's. */
  args?: readonly ProblemArg[];
}

/** Tolerances of the check for outputs of one element type. */
export interface Tolerance {
  /** Absolute tolerance. */
  atol?: number;
  /** Relative tolerance. */
  rtol?: number;
}

/** A problem's precision policy: EvalPrecision, its kernel's launch and arguments over the dimensions. */
export interface ProblemPrecision {
  /** The precise reference kernel (float outputs f64 in its own `args`), its launch defaulting to the submission's. */
  reference: ProblemKernelRef;
  /** The bound, as a multiple of the reference kernel's rms error against it (at least 1). Default 32. */
  factor?: number;
}

/** A problem's check: a job's check options, and tolerances per output element type. */
export interface ProblemCheckOptions extends Omit<
  EvalCheckOptions,
  'skip' | 'atol' | 'rtol' | 'tolerances' | 'precision'
> {
  /**
   * The precision policy (EvalCheckOptions.precision): a case's candidate may err against the precise reference at
   * most `factor` times as much as the problem's reference kernel does, which must compute in the declared precision.
   */
  precision?: ProblemPrecision;
  /**
   * Tolerances by the outputs' element type ({ f32: { atol: 1e-5, rtol: 1e-5 }, bf16: { rtol: 2e-2 } }): each output
   * is held to its own type's; a type not listed gets the check's default for it.
   */
  tolerances?: Readonly<Partial<Record<string, Tolerance>>>;
}

/** A problem's timing: a job's timing options, its bytes and flops over the dimensions. */
export interface ProblemTimingOptions extends Omit<EvalTimingOptions, 'skip' | 'bytes' | 'flops'> {
  /** Bytes a launch must move at least (its roofline's memory side), over the dimensions: '12 * n'. */
  bytes?: DimValue;
  /** Floating-point operations a launch must do at least, over the dimensions: '2 * m * n * k'. */
  flops?: DimValue;
}

/**
 * A problem: named dimensions, the kernel's arguments and reference over them, and cases. Plain JSON: a
 * problem.json, a problem inline in a service request.
 *
 * @example
 * const problem: EvalProblem = {
 *   name: 'vector-add',
 *   dims: { n: { min: 1, max: 1 << 28 } },
 *   args: ['a@ptr:f32[n]=normal(0,1)', 'b@ptr:f32[n]=normal(0,1)', 'c@ptr:f32[n]:out', 'n@i32=n'],
 *   reference: { source: { file: 'reference.cu' }, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 },
 *   timing: { bytes: '12 * n', flops: 'n' },
 *   cases: [{ dims: { n: 1 << 20 } }, { dims: { n: 1 << 24 } }, { dims: { n: 12_345_679 }, visibility: 'hidden' }],
 * };
 */
export interface EvalProblem {
  /** Its name: letters, digits, '_', '.', '-'. */
  name: string;
  /** What it computes, for people. */
  description?: string;
  /** The dimensions' names and bounds ({ n: {} } or ['n'] for the default bounds). */
  dims: Readonly<Record<string, ProblemDim>> | readonly string[];
  /** The kernel's arguments, one per parameter, sizes over the dimensions. */
  args: readonly ProblemArg[];
  /**
   * The trusted reference kernel: the check's reference, and the baseline the score is relative to. Absent when every
   * case has `expected` outputs or a JavaScript reference is given (EvalOptions.reference).
   */
  reference?: ProblemKernelRef;
  /** The kernel the score is relative to, when it is not the reference (a JavaScript or literal reference). */
  baseline?: ProblemKernelRef;
  /** In-memory headers for every kernel of the problem. */
  headers?: Readonly<Record<string, string>>;
  /** Compile options for every kernel of the problem (a submission's are added). */
  compile?: CompileOptions;
  /** How to check. */
  check?: ProblemCheckOptions;
  /** How to time, and the bytes and flops of a launch. */
  timing?: ProblemTimingOptions;
  /** At least one. */
  cases: readonly ProblemCase[];
}

/** A submission to a problem: the kernel, and its launch over the problem's dimensions. */
export interface ProblemSubmission {
  /** Label in reports. Default: the kernel's name. */
  name?: string;
  /** The kernel's CUDA source. */
  source: EvalSource;
  /** extern "C" name, or a C++ kernel / template instance. */
  kernel: string;
  /** In-memory headers (added to the problem's). */
  headers?: Readonly<Record<string, string>>;
  /** Compile options, added to the problem's (where both set one, the submission's). */
  compile?: CompileOptions;
  /** Blocks in the grid, over the dimensions: 'cdiv(n, 256)', ['cdiv(n, 32)', 'cdiv(m, 32)']. */
  grid: LaunchDim;
  /** Threads per block, over the dimensions. */
  block: LaunchDim;
  /** Dynamic shared memory per block, over the dimensions. Default 0. */
  sharedMemBytes?: DimValue;
}
