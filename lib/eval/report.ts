// SPDX-License-Identifier: MIT
// EvalReport: what evaluate() resolves to, for every job, passed or not: the phase that failed and why, the compile
// facts of every kernel, the check, the timing or comparison, warnings. Plain data (serialise it with formatJson:
// 64-bit mismatch values are bigints), so a service can store and send it as it is.
import { CompileError, CudaError, type Diagnostic, isContextLost } from '../core/index.js';
import type { BenchResult, CompareResult, Defence } from '../measure/index.js';
import type { EvalCheck, EvalKernelRole, EvalPhase } from './job.js';
import { InvalidJobError, type JobProblem } from './validate.js';

/** Every value of EvalError's `kind`, in the order the README lists them. */
export const EVAL_ERROR_KINDS = ['invalid-job', 'compile', 'cuda', 'verdict', 'aborted', 'exception'] as const;

/**
 * Why a phase failed. `kind` says what sort of failure it is:
 * - 'invalid-job': validateJob's problems (phase 'validate');
 * - 'compile': NVRTC rejected a kernel (diagnostics, log and flags below);
 * - 'cuda': a driver error: no usable GPU (`CUDA_DRIVER_NOT_FOUND`, `CUDA_ERROR_NO_DEVICE`; in phase 'compile' when
 *   the job has no compile.arch to compile for without one), a module that does not load, a kernel fault (in the check
 *   it is also the check's verdict, `defence: 'fault'`), a fault while timing; `sticky` when it cost the CUDA context;
 * - 'verdict': the check or the re-check failed on the values (`defence` says which defence fired);
 * - 'aborted': EvalOptions.signal was aborted before the phase;
 * - 'exception': anything else: a JavaScript reference that threw, an unreadable source file, a launch configuration
 *   the kernel refuses (a TypeError or RangeError from the layers below).
 */
export interface EvalError {
  /** What sort of failure it is (see above). */
  kind: (typeof EVAL_ERROR_KINDS)[number];
  /**
   * 'CUDA_ERROR_ILLEGAL_ADDRESS', 'NVRTC_ERROR_COMPILATION', 'ERR_INVALID_JOB', 'ABORT_ERR', the defence of a
   * verdict ('mismatch'), a system error's code ('ENOENT'), or the error's class name ('TypeError').
   */
  code: string;
  /** The whole message: the error's own (several lines for a CudaError or CompileError), a verdict's summary. */
  message: string;
  /** The kernel it concerns (compile, load, a fault). */
  kernel?: EvalKernelRole;
  /** 'cuda' and 'compile': the call that failed ('cuLaunchKernel', 'nvrtcCompileProgram' ...). */
  api?: string;
  /** 'cuda' and 'compile': the CUresult or nvrtcResult number. */
  result?: number;
  /** 'cuda': whether the CUDA context is lost (the worker must restart to use the GPU again). */
  sticky?: boolean;
  /** 'cuda' from bench() / compare(): where, e.g. 'bench(): warm-up'. */
  where?: string;
  /** 'verdict', and a 'cuda' fault in the check: the defence that fired. */
  defence?: Defence;
  /** 'compile': the source's name in the diagnostics. */
  source?: string;
  /** 'compile': the parsed diagnostics. */
  diagnostics?: Diagnostic[];
  /** 'compile': NVRTC's whole log. */
  log?: string;
  /** 'compile': the exact NVRTC flags. */
  flags?: string[];
  /** 'invalid-job': every problem (see validateJob). */
  problems?: JobProblem[];
  /**
   * 'cuda' and 'compile': what to do about it, as the error's `remedy` says (also the message's last line); absent
   * where there is no advice.
   */
  remedy?: string;
  /** 'compile': what cudakit adds to NVRTC's log (CompileError.note), e.g. where a missing #include was looked for. */
  note?: string;
}

/** What compiling and loading a kernel told: for people, and for tools (ncu -k needs the mangled name). */
export interface EvalCompileFacts {
  /** The kernel as the job names it. */
  kernel: string;
  /** Its symbol in the module: the mangled name of a C++ kernel or template instance, else the name itself. */
  loweredName: string;
  /** The source's name in diagnostics. */
  source: string;
  /** What NVRTC produced: PTX (the driver's JIT compiles it at load) or CUBIN. */
  target: 'ptx' | 'cubin';
  /** The architecture compiled for, 'sm_90'; undefined when NVRTC chose (PTX without an arch). */
  arch: string | undefined;
  /** NVRTC's version, e.g. '12.8'. */
  nvrtcVersion: string;
  /** NVRTC's time, ms; undefined when the code came from the cache. */
  compileMs: number | undefined;
  /** 'memory' or 'disk' when the code came from the compile cache, else false. */
  cached: 'memory' | 'disk' | false;
  /** The exact NVRTC flags. */
  flags: string[];
  /** NVRTC's log (warnings). */
  log: string;
  /** The log's diagnostics, parsed. */
  diagnostics: Diagnostic[];
  /** From the loaded kernel (absent when loading failed). */
  registers?: number;
  /** Local memory per thread, bytes: register spills (and local arrays). */
  spillBytes?: number;
  /** Static shared memory per block, bytes. */
  sharedSizeBytes?: number;
  /** User `__constant__` memory, bytes. */
  constSizeBytes?: number;
  /** The most threads per block a launch of this kernel may have. */
  maxThreadsPerBlock?: number;
}

/**
 * What evaluate() resolves to, for every job, passed or not: the phase that failed and why, every kernel's compile
 * facts, the check, the timing or comparison, and warnings. Plain data: serialize it with formatJson() (64-bit
 * mismatch values are bigints); the evaluation service stores and sends it as it is.
 */
export interface EvalReport {
  /** The job's label: its name, or the kernel's. */
  name: string;
  /** Every phase that ran passed (a skipped check or timing does not fail a job). */
  passed: boolean;
  /** The phase that failed; undefined when passed. */
  phase: EvalPhase | undefined;
  /** Why it failed; undefined when passed. */
  error: EvalError | undefined;
  /** The phases that ran, in order, with their wall time. */
  phases: {
    /** The phase. */
    phase: EvalPhase;
    /** Its wall time, ms. */
    ms: number;
  }[];
  /** Per kernel, as far as the pipeline got. */
  compile: Partial<Record<EvalKernelRole, EvalCompileFacts>>;
  /** The check before timing and the re-check after it; undefined when the pipeline stopped before checking. */
  check: EvalCheck | undefined;
  /** bench()'s result (a job without compare). */
  timing: BenchResult | undefined;
  /** compare()'s result (a job with compare). */
  comparison: CompareResult | undefined;
  /** For the reader: compile warnings, a check skipped for want of a reference ... */
  warnings: string[];
}

/**
 * A report before any phase ran: the shape to fill for a kernel evaluated outside evaluate() (the evaluation service's
 * Python candidates).
 */
export function emptyReport(name: string): EvalReport {
  return {
    name,
    passed: false,
    phase: undefined,
    error: undefined,
    phases: [],
    compile: {},
    check: undefined,
    timing: undefined,
    comparison: undefined,
    warnings: [],
  };
}

/** The EvalError for an exception caught in a phase (the package root's evalErrorOf), blamed on `kernel`. */
export function errorOf(e: unknown, kernel?: EvalKernelRole): EvalError {
  const role = kernel === undefined ? {} : { kernel };
  if (e instanceof InvalidJobError) {
    return { kind: 'invalid-job', code: 'ERR_INVALID_JOB', message: e.message, problems: [...e.problems] };
  }
  if (e instanceof CompileError) {
    return {
      kind: 'compile',
      code: e.code,
      message: e.message,
      ...role,
      api: e.api,
      result: e.result,
      diagnostics: [...e.diagnostics],
      log: e.log,
      flags: [...e.options],
      remedy: e.remedy,
      ...(e.note === undefined ? {} : { note: e.note }),
    };
  }
  if (e instanceof CudaError) {
    const where = e.phase === undefined ? {} : { where: e.phase };
    return {
      kind: 'cuda',
      code: e.code,
      message: e.message,
      ...role,
      api: e.api,
      result: e.result,
      sticky: isContextLost(e),
      ...where,
      ...(e.remedy === '' ? {} : { remedy: e.remedy }),
    };
  }
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    return { kind: 'exception', code: typeof code === 'string' ? code : e.name, message: e.message, ...role };
  }
  return { kind: 'exception', code: 'Error', message: String(e), ...role };
}
