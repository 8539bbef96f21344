// SPDX-License-Identifier: MIT
// EvalJob: one evaluation as plain JSON (the CLI's flags, a spec file's default export and an evaluation service's
// request all become one), and the options that JSON cannot carry. Pure types; validateJob() is in validate.ts.
import type { AbortSignalLike, CompileOptions, Device, Dim3, Signature } from '../core/index.js';
import type {
  ArgSpec,
  BenchMode,
  BenchTimer,
  BufferDType,
  CheckOptions,
  CheckResult,
  HostValue,
  InitSpec,
  PresetName,
  StoppingRule,
} from '../measure/index.js';

/**
 * CUDA source: the text itself, a file, or text with the name diagnostics and reports give it. A relative `file` is
 * read from EvalOptions.baseDir; its own directory is searched first for `#include "..."` (baseDir for text).
 * `name` defaults to the path as given, and for text to 'candidate.cu', 'reference.cu', 'baseline.cu' or 'precise.cu'.
 */
export type EvalSource =
  | string
  | {
      /** A path to a .cu file, relative to EvalOptions.baseDir. */
      file: string;
      /** The name diagnostics and reports give it. Default: the path as given. */
      name?: string;
    }
  | {
      /** The CUDA source itself. */
      text: string;
      /** The name diagnostics and reports give it. Default: the role's ('candidate.cu', 'reference.cu' ...). */
      name?: string;
    };

/** By-value scalar types of an argument (argspec's `i32=1024`). */
export type EvalScalarType = Extract<ArgSpec, { kind: 'scalar' }>['type'];

/**
 * Literal bytes in JSON: base64 of the device bytes (little-endian, C order, fp8/f16/bf16 as their bit patterns),
 * optionally zlib-compressed. validateJob checks that it decodes to exactly the buffer's size.
 */
export interface EvalData {
  /** The bytes, base64-encoded (zlib-deflated first with `compress: 'zlib'`). */
  base64: string;
  /** 'zlib': base64 of zlib-deflated bytes. Default 'none'. */
  compress?: 'none' | 'zlib';
}

/**
 * How to fill a buffer: argspec's fills as objects (`{ kind: 'uniform', lo: -1, hi: 1, seed?: 7 }`,
 * `{ kind: 'seq', start: 0, step: 1, along: 'last' }` ...; a random fill with a `seed` draws from a generator of its
 * own, so its values depend on no other buffer), or `{ kind: 'data', base64 }`: exact bytes, the same in every trial
 * and input set (the original server's `data_b64`).
 */
export type EvalInit = Exclude<InitSpec, { kind: 'data' }> | ({ kind: 'data' } & EvalData);

/** An argument as an object: the JSON form of an argspec, with what the string form cannot say. */
export type EvalArgObject = EvalScalarArg | EvalBufferArg;

/** A by-value scalar argument as an object: `{ kind: 'scalar', type: 'i32', value: 1024 }`. */
export interface EvalScalarArg {
  /** Selects this form. */
  kind: 'scalar';
  /** The C type: 'i32', 'f32', 'bool' ... */
  type: EvalScalarType;
  /** A number; i64 / u64 beyond 2^53 as a decimal string ('9007199254740993'); bool as true / false. */
  value: number | string | boolean;
  /** A C identifier, for matching a reference kernel's arguments by name (text: `n@i32=1024`). */
  name?: string;
}

/**
 * A device buffer argument as an object: `{ kind: 'buffer', dtype: 'f32', length: 1048576, init: { kind: 'uniform', lo:
 * -1, hi: 1 } }`.
 */
export interface EvalBufferArg {
  /** Selects this form. */
  kind: 'buffer';
  /** The element type: 'f32', 'i32', 'u8' ... */
  dtype: BufferDType;
  /** Elements (not bytes). Give this or shape. */
  length?: number;
  /** Dimensions, outermost first (row-major); the length is their product. */
  shape?: readonly number[];
  /** 'in': filled before every launch; 'out': written by the kernel. Default 'in' with an init, 'out' without. */
  role?: 'in' | 'out';
  /**
   * How to fill the buffer before the launch. Default: none (an input then holds uniform(-1,1) for floats or randint
   * over ±100; an output is poisoned).
   */
  init?: EvalInit;
  /** A C identifier, for matching a reference kernel's arguments and expected outputs by name (text: `x@ptr:...`). */
  name?: string;
}

/**
 * One kernel argument: an argspec string (`'f32=2.5'`, `'ptr:f32[16M]=uniform(-1,1):out'`, `'x@ptr:f32[1M]'` with a
 * name) or an object.
 */
export type EvalArg = string | EvalArgObject;

/**
 * Another kernel: the correctness reference, or the baseline of a comparison. Its launch defaults to the job's
 * (a float4 kernel needs a quarter of the threads of a scalar one: give grid / block). Its compile options are the
 * job's, with its own added.
 */
export interface EvalKernelRef {
  /** Its CUDA source. */
  source: EvalSource;
  /** extern "C" name, or a C++ kernel / template instance. */
  kernel: string;
  /** Label in reports. Default: the kernel's name. */
  name?: string;
  /** In-memory headers for #include "name". Default: the job's. */
  headers?: Readonly<Record<string, string>>;
  /** Compile options added to the job's (where both set one, its own). */
  compile?: CompileOptions;
  /** Its grid. Default: the job's. */
  grid?: Dim3;
  /** Its block. Default: the job's. */
  block?: Dim3;
  /** Its dynamic shared memory per block. Default: the job's. */
  sharedMemBytes?: number;
  /**
   * A reference kernel whose parameters differ from the candidate's (another order, other scalars, scratch space):
   * its own argument list. Its buffers are matched to the candidate's by name where both sides name them all, else
   * by order: its inputs read the candidate's initial values, its outputs are compared with the candidate's; its
   * scalars are its own (measure's matchReferenceIo, checked by validateJob). Default: the candidate's arguments.
   */
  args?: readonly EvalArg[];
}

/** Expected outputs given literally: no reference code at all. The inputs must then be the same in every trial. */
export interface EvalExpected {
  /** Output buffer (its argument name, or its index as a string) → its exact expected contents. */
  expected: Readonly<Record<string, EvalData>>;
}

/**
 * The precision policy of a job (check()'s `precision`): a kernel that computes the outputs in higher precision, its
 * float outputs f64 in its own `args` (`c@ptr:f64[m, n]:out`); job.reference is the honest kernel of the declared
 * precision whose error sets the bound.
 */
export interface EvalPrecision {
  /** The precise reference kernel, its launch defaulting to the job's. */
  reference: EvalKernelRef;
  /** The bound, as a multiple of job.reference's rms error against it (at least 1). Default 32. */
  factor?: number;
}

/** Correctness check options: check()'s (zeroOnFree is the job's), and how to treat a job without a reference. */
export interface EvalCheckOptions extends Omit<CheckOptions, 'zeroOnFree' | 'precision'> {
  /**
   * The precision policy: the candidate's rms error against a precise (f64) reference kernel may be at most `factor`
   * times job.reference's. A kernel computing in less precision than declared fails ('precision').
   */
  precision?: EvalPrecision;
  /** Do not check (the CLI's --no-check). Timing still runs. Default false. */
  skip?: boolean;
  /**
   * A job without a reference (none in the job, no JavaScript reference, no compare baseline): 'reference-free'
   * checks what can be checked without one (outputs fully written and finite, inputs unchanged, no stray writes,
   * two runs agreeing), with no re-check after timing; 'skip' reports the check as skipped. Default 'reference-free'.
   */
  withoutReference?: 'reference-free' | 'skip';
}

/** Timing options: bench()'s and compare()'s. */
export interface EvalTimingOptions {
  /** Check only, no timing. Default false. */
  skip?: boolean;
  /** 'cold' (default): L2 flushed before every sample; 'hot': not flushed; 'graph': CUDA graph replays. */
  mode?: BenchMode;
  /** How long to sample. Default 'default'. */
  preset?: PresetName;
  /** 'cupti' (default where CUPTI loads): kernel timestamps; 'events': an event pair around each sample. */
  timer?: BenchTimer;
  /** Overrides of single stopping-rule fields, e.g. { timeoutMs: 2000 } or a GPU-time cap { maxGpuMs: 250 }. */
  rule?: Partial<StoppingRule>;
  /**
   * The precision to time to: the 95 % interval's half-width relative to the median, from 0.0025 (±0.25 %) to 0.05
   * (±5 %); the rule's targetRelCI, which it overrides. Default: the preset's.
   */
  precision?: number;
  /** Rotating input sets. Default 4. */
  inputSets?: number;
  /** ABBA rounds of a comparison. Default 5. */
  rounds?: number;
  /** Bytes moved per launch (GB/s, % of peak bandwidth). */
  bytes?: number;
  /** Floating-point operations per launch (TFLOP/s). */
  flops?: number;
}

/**
 * One evaluation: compile the kernel, check it against a reference, time it (or compare it with a baseline),
 * re-check the timed launches' outputs. Plain JSON, so the command line, a spec file and a service request share
 * it; evaluate() runs it and validateJob() says everything wrong with one.
 *
 * @example
 * const job: EvalJob = {
 *   source: { file: 'saxpy.cu' }, kernel: 'saxpy', grid: 65536, block: 256,
 *   args: ['f32=2.5', 'ptr:f32[16M]=uniform(-1,1)', 'ptr:f32[16M]=uniform(-1,1):out', 'i32=16777216'],
 *   reference: { source: { file: 'saxpy_ref.cu' }, kernel: 'saxpy' },
 *   timing: { preset: 'quick', bytes: 12 * 16 * 2 ** 20 },
 * };
 */
export interface EvalJob {
  /** Label in reports. Default: the kernel's name. */
  name?: string;
  /** The kernel's CUDA source. */
  source: EvalSource;
  /** extern "C" name, or a C++ kernel / template instance such as 'scale<float>' (compiled as a name expression). */
  kernel: string;
  /** In-memory headers for #include "name". */
  headers?: Readonly<Record<string, string>>;
  /** Compile options for every kernel of the job. arch defaults to the device's. */
  compile?: CompileOptions;
  /** Blocks in the grid. */
  grid: Dim3;
  /** Threads per block. */
  block: Dim3;
  /** Dynamic shared memory per block. Default 0. */
  sharedMemBytes?: number;
  /** Cooperative launch (grid-wide sync). Default false. */
  cooperative?: boolean;
  /** Thread block cluster dimensions (sm_90 and later). */
  clusterDim?: Dim3;
  /** Parameter types. Default: from args (scalars by their type, buffers 'ptr'). */
  signature?: Signature;
  /** One per kernel parameter, in order. */
  args: readonly EvalArg[];
  /** The correctness reference: another kernel, or the expected outputs. A JavaScript one goes in EvalOptions. */
  reference?: EvalKernelRef | EvalExpected;
  /** A kernel to time this one against: it is A (the baseline), the job's kernel B. Also the check's reference. */
  compare?: EvalKernelRef;
  /** How to check correctness (check()'s options, plus skip and withoutReference). */
  check?: EvalCheckOptions;
  /** How to time (bench()'s and compare()'s options, plus skip). */
  timing?: EvalTimingOptions;
  /**
   * Set every device buffer to zero before it is freed (the check's, the timing's input sets, a reference kernel's),
   * so nothing of this job can be read from reused memory by whatever runs next (a warm worker). Default false.
   */
  zeroOnFree?: boolean;
  /** @deprecated BenchSpec's place of timing.mode (validateJob moves it there). */
  mode?: BenchMode;
  /** @deprecated BenchSpec's place of timing.preset. */
  preset?: PresetName;
  /** @deprecated BenchSpec's place of timing.bytes. */
  bytes?: number;
  /** @deprecated BenchSpec's place of timing.flops. */
  flops?: number;
}

/**
 * A JavaScript reference: given host copies of the arguments (typed arrays for buffers, fp8/f16/bf16 as Float32Array;
 * numbers, bigints or booleans for scalars), it writes the expected outputs into them in place.
 */
export type JsReference = (args: HostValue[]) => void | Promise<void>;

/**
 * What `cudakit bench spec.ts` read before EvalJob: a default export whose `reference` may be a JavaScript function
 * and whose mode / preset / bytes / flops sit at the top level. Such spec files still work.
 *
 * @deprecated Default-export an EvalJob (`satisfies EvalJob`) and export the JavaScript reference beside it:
 *   `export const reference: JsReference = (args) => { ... }`.
 */
export type BenchSpec = Omit<EvalJob, 'reference'> & {
  /** The job's reference, or a JavaScript one. */
  reference?: EvalJob['reference'] | JsReference;
};

/** Progress of evaluate(), in order: each phase as it starts, the check's outcome, timing progress. */
export type EvalProgress =
  | {
      /** A phase starts. */
      kind: 'phase';
      /** The phase. */
      phase: EvalPhase;
    }
  /** The check before timing is done (or skipped); the report has it too. */
  | {
      /** The check before timing is done. */
      kind: 'checked';
      /** Its outcome, as the report gives it. */
      check: EvalCheck;
    }
  /** bench(): after every batch of samples. */
  | {
      /** bench() took a batch of samples. */
      kind: 'samples';
      /** The label of what is timed. */
      name: string;
      /** The timing mode. */
      mode: BenchMode;
      /** Accepted samples so far. */
      samples: number;
      /** Rejected samples so far (clock throttled). */
      rejected: number;
      /** Time spent sampling so far, ms. */
      elapsedMs: number;
      /** Half-width of the median's confidence interval, relative to the median, so far. */
      relCI: number;
    }
  /** compare(): after every ABBA round, naming A and B as the report does. */
  | {
      /** compare() finished a round. */
      kind: 'rounds';
      /** A's label (the baseline). */
      a: string;
      /** B's label (the job's kernel). */
      b: string;
      /** The round just finished, from 1. */
      round: number;
      /** Rounds in all. */
      rounds: number;
    };

/**
 * Options of evaluate() that JSON cannot carry: a JavaScript reference, a progress callback, an AbortSignal, the base
 * directory and the device.
 */
export interface EvalOptions {
  /** A JavaScript reference (see JsReference); takes the place of the job's reference. */
  reference?: JsReference;
  /** Called as the evaluation goes: each phase as it starts, the check's outcome, timing progress. */
  onProgress?: (progress: EvalProgress) => void;
  /** Stops the evaluation between phases (a running kernel cannot be stopped: see docs/errors.md). */
  signal?: AbortSignalLike;
  /**
   * Where relative source files are read from (default: the working directory), and where an inline source's
   * #include "..." looks first (default: nowhere but compile.includePaths and in-memory headers).
   */
  baseDir?: string;
  /** The device to run on. Default: Device.get(0). Its arch is the default compile arch. */
  device?: Device;
  /**
   * Awaited once, after the compile phase and before the load phase, the job's first work on the GPU: a caller that
   * shares one GPU among several jobs resolves it when this job may use the GPU (the service's per-GPU lease), so
   * that another job's timing never runs beside this one's GPU work. A rejection fails the load phase with its error.
   * The time spent waiting is in no phase.
   */
  waitForGpu?: () => Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------------
// The report's vocabulary, used by EvalProgress too (the report itself is in report.ts).

/** The pipeline's phases, in order. */
export type EvalPhase = 'validate' | 'compile' | 'load' | 'check' | 'time' | 'recheck';

/** Which kernel of the job: the candidate, the reference kernel, or the compare baseline. */
export type EvalKernelRole = 'candidate' | 'reference' | 'baseline' | 'precise';

/**
 * The correctness part of a report (and of `cudakit bench --json`): the check before timing and the re-check of the
 * timed launches' outputs (afterTiming; `passed` is then the re-check's), whether two runs on the same inputs had
 * to agree bit for bit, and what was checked against — or why nothing was.
 */
export type EvalCheck =
  | {
      /**
       * 'the JavaScript reference', 'saxpy in ref.cu', 'the expected outputs', 'no reference (reference-free check)'.
       */
      reference: string;
      /** Whether the check passed: the re-check's verdict when there was one, else the check before timing's. */
      passed: boolean;
      /** Whether two runs on the same inputs had to agree bit for bit (check.requireDeterminism). */
      requireDeterminism: boolean;
      /** The check before timing. */
      before: CheckResult;
      /** The re-check of the timed launches' outputs, when timing ran. */
      afterTiming?: CheckResult;
    }
  | {
      /** 'not checked (check.skip)' or 'not checked (no reference)'. */
      skipped: string;
    };
