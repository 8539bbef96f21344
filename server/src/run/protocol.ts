// SPDX-License-Identifier: MIT
// The messages between a GPU slot's supervisor (the parent) and its worker child, over the fork IPC channel with
// `serialization: 'advanced'`. Every message carries the protocol version `v`; a message of another version, or one
// that is not a message at all, is a protocol error (the child is killed and replaced), never a crash of the parent.
import type {
  EvalJob,
  EvalPhase,
  EvalProblem,
  EvalProgress,
  EvalReport,
  ProblemProgress,
  ProblemReport,
  ProblemSubmission,
} from 'cudakit';
import type { RelayEvent } from './python-relay.js';
import type { PythonArg, PythonKernel } from './python-runner.js';

export const PROTOCOL_VERSION = 1;

/** What a worker knows of its GPU once it has a context (the probe child reports the same for every GPU). */
export interface DeviceFacts {
  ordinal: number;
  uuid: string;
  name: string;
  /** 'sm_90' */
  arch: string;
  totalMemoryBytes: number;
  multiprocessorCount: number;
  /** The driver's CUDA version, '13.0'. */
  driverVersion: string;
  /** NVRTC's version, or undefined when there is none. */
  nvrtcVersion: string | undefined;
  /** What one launch may ask of this GPU (the service refuses a job over them before it is queued). */
  launch: LaunchFacts;
}

/** Blocks a thread block cluster may have on every GPU that launches clusters (CUDA's portable cluster size). */
export const PORTABLE_CLUSTER_BLOCKS = 8;

/**
 * A GPU's launch limits, as cudakit's Device reads them (cuDeviceGetAttribute). A launch over any of them fails with
 * CUDA_ERROR_INVALID_VALUE, so the service refuses such a job at admission rather than spend a worker on it.
 */
export interface LaunchFacts {
  /** Threads a block may have in all (MAX_THREADS_PER_BLOCK): 1024 on every GPU so far. */
  maxThreadsPerBlock: number;
  /** Threads a block may have along x, y and z (MAX_BLOCK_DIM_X/Y/Z): [1024, 1024, 64]. */
  maxBlockDim: [number, number, number];
  /** Blocks a grid may have along x, y and z (MAX_GRID_DIM_X/Y/Z): [2^31 − 1, 65535, 65535]. */
  maxGridDim: [number, number, number];
  /**
   * Dynamic shared memory a block may use once its kernel opts in (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), which cudakit
   * does for a launch over the 48 KiB default: 227 KiB on sm_90, 163 KiB on sm_80.
   */
  maxSharedMemoryPerBlockOptinBytes: number;
  /**
   * Blocks a thread block cluster may have: 8, the portable size, where the GPU launches clusters (sm_90 and later),
   * else 0. Not sm_90's 16: that needs the kernel's non-portable-cluster-size attribute, which cudakit does not set.
   */
  maxClusterBlocks: number;
}

/** Per-phase limits the parent arms; the child never times itself out (a blocked event loop cannot). */
export interface Deadlines {
  /** Whole job, from the lease to the result. */
  jobMs: number;
  /** Per phase of EvalPhase (validate and compile included). */
  phaseMs: Partial<Record<EvalPhase | 'profile', number>>;
}

/** What a job asks of its worker beyond evaluate(job): the service's options that reach the worker. */
export interface JobExtras {
  /** Nsight Compute's metrics of one more launch after the timing (never timed). */
  deviceMetrics?: boolean;
  /** An operator-installed JavaScript reference (the problem registry's module), imported by the worker. */
  referenceModule?: string;
  /**
   * The problem with cases the job is a submission to, from the registry (its kernels' sources read in: no path):
   * the worker runs evaluateProblem(problem, job) in place of evaluate(job).
   */
  problem?: EvalProblem;
  /**
   * A reference or a candidate in Python (cudakit-server --python), each run by a runner of its own, which the slot
   * starts on the worker's request.
   */
  python?: PythonJob;
  /**
   * Whose builds a Python kernel of the job may reuse, and for whom it keeps its own (torch_cuda's extensions,
   * Triton's kernels): a hash of the job's principal. None: nothing is kept.
   */
  buildScope?: string;
}

/** A Python argument and, for a tensor, the job's argument whose bytes it gets (its index in job.args). */
export type PythonJobArg = PythonArg & { from?: number };

/**
 * A Python kernel of a job: the runner loads it; `outputs` are the job's arguments (indices in job.args) that its
 * outputs, in order, stand for (each of the same element type and length as the job's output it stands for).
 */
export type PythonKernelSpec = PythonKernel & { args: PythonJobArg[]; outputs: number[] };

/** Which of a job's Python kernels a runner serves: each has a runner (and a folder) of its own. */
export type PythonRole = 'reference' | 'candidate';

/**
 * A job's Python part: a reference, whose outputs are what the job's outputs must hold; a candidate, the kernel under
 * test in place of the job's CUDA kernel (the job's source and kernel then name it; nothing is compiled); or both.
 */
export interface PythonJob {
  reference?: PythonKernelSpec;
  candidate?: PythonKernelSpec;
}

/** What a worker runs: an EvalJob, or a submission to the problem of its extras. */
export type RunJob = EvalJob | ProblemSubmission;

/** What a worker reports: evaluate()'s report, or evaluateProblem()'s. */
export type RunReport = EvalReport | ProblemReport;

/** A worker's progress: evaluate()'s, or evaluateProblem()'s (each case as it starts, then its job's). */
export type RunProgress = EvalProgress | ProblemProgress;

/** Whether a worker's report is evaluateProblem()'s. */
export function isProblemReport(report: RunReport): report is ProblemReport {
  const r = report as Partial<ProblemReport>;
  return Array.isArray(r.cases) && typeof r.problem === 'string';
}

/**
 * Whether a warm worker stays for the next job after this report: not after a sticky error (its context is lost), and
 * not after a problem with cases, whose cases' buffers evaluateProblem() does not scrub before they are freed (the
 * worker exits: worker/main.ts).
 */
export function workerStays(report: RunReport): boolean {
  return !isProblemReport(report) && report.error?.sticky !== true;
}

export type ParentMessage =
  /** Run this job now. `seedSalt` is secret: the inputs' seed is the job's public seed mixed with it. */
  | { v: 1; t: 'job'; id: string; job: RunJob; seedSalt: string; deadlines: Deadlines; extras?: JobExtras }
  /** Finish nothing more and exit (a warm worker between jobs, or a drain). */
  | { v: 1; t: 'shutdown' }
  /** One of the job's Python runners: started (its folder), a line it wrote, or its end. */
  | { v: 1; t: 'python'; id: string; runner: PythonRole; event: RelayEvent }
  /** The job's turn on the GPU has come (the answer to the child's `gpu`): its GPU work may begin. */
  | { v: 1; t: 'gpu'; id: string };

export type ChildMessage =
  /** Node is up and cudakit is imported, no CUDA context yet: the child counts as capacity from now on. */
  | { v: 1; t: 'ready'; pid: number }
  /** A phase began (the parent arms its deadline). */
  | { v: 1; t: 'phase'; id: string; phase: EvalPhase | 'profile'; atMs: number }
  /** Progress within a phase (samples while timing). */
  | { v: 1; t: 'progress'; id: string; progress: RunProgress }
  /** The job's report (serialised with formatJson: 64-bit values are strings). Then the child exits, or waits. */
  | { v: 1; t: 'result'; id: string; report: RunReport; device: DeviceFacts | undefined }
  /** Something outside any job's verdict broke (the device could not be opened, say); the child exits next. */
  | { v: 1; t: 'fatal'; id: string | undefined; error: { code: string; message: string } }
  /** For one of the job's Python runners: start it, send it a line, stop it. */
  | { v: 1; t: 'python'; id: string; runner: PythonRole; op: 'start' | 'line' | 'stop'; line?: string }
  /**
   * The job is ready for the GPU: its GPU work (a CUDA context, the load phase and every phase after it, a Python
   * runner) waits for the parent's `gpu`, which comes when no other job's GPU work runs on this GPU. Once per job.
   */
  | { v: 1; t: 'gpu'; id: string };

/** Whether `value` is a message of this protocol from a child (type and version; fields are checked by the user). */
export function isChildMessage(value: unknown): value is ChildMessage {
  if (typeof value !== 'object' || value === null) return false;
  const m = value as { v?: unknown; t?: unknown };
  return (
    m.v === PROTOCOL_VERSION &&
    (m.t === 'ready' ||
      m.t === 'phase' ||
      m.t === 'progress' ||
      m.t === 'result' ||
      m.t === 'fatal' ||
      m.t === 'python' ||
      m.t === 'gpu')
  );
}

/** Whether `value` is a message of this protocol from the parent (type and version; the worker checks the rest). */
export function isParentMessage(value: unknown): value is ParentMessage {
  if (typeof value !== 'object' || value === null) return false;
  const m = value as { v?: unknown; t?: unknown };
  return m.v === PROTOCOL_VERSION && (m.t === 'job' || m.t === 'shutdown' || m.t === 'python' || m.t === 'gpu');
}

/** What the parent tells a worker child through its environment, beside CUDA_VISIBLE_DEVICES. */
export const WORKER_ENV = {
  /** 'process' (default): exit after the job's result; 'warm': wait for the next job. */
  isolation: 'CUDAKIT_WORKER_ISOLATION',
  /** 'watchdog': the child runs its own parent-death watchdog (the parent found no setpriv to do it). */
  guard: 'CUDAKIT_WORKER_GUARD',
  /** When the child makes its CUDA context (WorkerContext): 'job' when unset. */
  context: 'CUDAKIT_WORKER_CONTEXT',
} as const;

/**
 * When a worker makes its CUDA context: as its job starts ('job'), once the job's turn on the GPU has come ('turn'),
 * or before it says `ready` ('standby').
 */
export type WorkerContext = 'job' | 'turn' | 'standby';

/** The phases that use the GPU: a job's message for one of them before its turn on the GPU breaks the protocol. */
export const GPU_PHASES: ReadonlySet<string> = new Set(['load', 'check', 'time', 'recheck', 'profile']);

/** A short description of an unexpected message, for lastError (never the whole of it). */
export function describeMessage(m: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(m, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x)) ?? String(m);
  } catch {
    text = Object.prototype.toString.call(m);
  }
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

const PHASES = new Set<string>(['validate', 'compile', 'load', 'check', 'time', 'recheck', 'profile']);

/** A well-formed message for job `id`, or what is wrong with it. */
export function checkJobMessage(m: ChildMessage, id: string): string | undefined {
  if (m.t === 'ready') return undefined;
  if (m.t === 'fatal') {
    const e = m.error as unknown as { code?: unknown; message?: unknown } | undefined;
    if (typeof e?.code !== 'string' || typeof e.message !== 'string') return 'a fatal message without an error';
    return m.id === undefined || m.id === id ? undefined : `a fatal message for job ${m.id}`;
  }
  if (m.id !== id) return `a ${m.t} message for job ${String(m.id)}, not ${id}`;
  if (m.t === 'phase' && !PHASES.has(m.phase)) return `an unknown phase ${describeMessage(m.phase)}`;
  if (m.t === 'python' && !['start', 'line', 'stop'].includes(m.op)) return `a python message ${describeMessage(m.op)}`;
  if (m.t === 'python' && m.runner !== 'reference' && m.runner !== 'candidate') {
    return `a python message for runner ${describeMessage(m.runner)}`;
  }
  if (m.t === 'progress') {
    const p = m.progress as unknown;
    if (typeof p !== 'object' || p === null || typeof (p as { kind?: unknown }).kind !== 'string') {
      return 'a progress message without progress';
    }
  }
  if (m.t === 'result') {
    const r = m.report as unknown as { passed?: unknown; phases?: unknown; cases?: unknown } | null;
    // evaluate()'s report has its phases, evaluateProblem()'s its cases.
    const parts = r !== null && typeof r === 'object' && (Array.isArray(r.phases) || Array.isArray(r.cases));
    if (typeof r !== 'object' || r === null || typeof r.passed !== 'boolean' || !parts) {
      return 'a result without a report';
    }
  }
  return undefined;
}
