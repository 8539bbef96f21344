// SPDX-License-Identifier: MIT
// One job inside a worker: evaluate() with the inputs' seed mixed with the job's secret salt, phases and progress
// reported as they happen, then (with the service's deviceMetrics option) one launch profiled under Nsight Compute,
// and the report made plain JSON (formatJson: 64-bit values become strings) for the parent. A submission to a problem
// with cases runs through evaluateProblem() the same way (runProblemJob), its seed mixed alike.
import { createHash } from 'node:crypto';
import {
  Device,
  type DeviceMetrics,
  type EvalJob,
  type EvalPhase,
  type EvalProblem,
  type EvalReport,
  type JsReference,
  type ProblemReport,
  type ProblemSubmission,
  type ProfileJobOptions,
  type ProfileResult,
  evaluate,
  evaluateProblem,
  formatJson,
  profileJob,
} from 'cudakit';
import { importJsReference } from './reference-module.js';
import type { Deadlines, DeviceFacts, PythonJob, PythonKernelSpec, RunProgress } from '../protocol.js';
import {
  PythonReference,
  type PythonReferenceReport,
  type PythonTiming,
  referenceRule,
  startPythonKernel,
} from './python-reference.js';
import { stopRelayedRunner } from './relay-link.js';
import { type PythonCandidateReport, runPythonCandidateJob } from './python-candidate.js';
import { deviceFacts } from './facts.js';

/**
 * evaluate()'s report, with the deviceMetrics option its device metrics (null when none were collected), and with a
 * Python reference what it was and how long it took.
 */
export type WorkerReport = EvalReport & {
  deviceMetrics?: DeviceMetrics | null;
  pythonReference?: PythonReferenceReport;
  pythonCandidate?: PythonCandidateReport['pythonCandidate'];
};

export interface RunJobOptions {
  signal?: AbortSignal;
  onPhase?: (phase: EvalPhase | 'profile') => void;
  onProgress?: (progress: RunProgress) => void;
  /** Scrub device buffers before they are freed (a warm worker: the next job must read nothing of this one). */
  zeroOnFree?: boolean;
  /** The service's deviceMetrics option: after evaluate(), Nsight Compute's metrics of one launch. Default false. */
  deviceMetrics?: boolean;
  /** The service's --ncu: 'auto' (ncu on PATH), 'off', or ncu's path. Default: $CUDAKIT_SERVER_NCU, else 'auto'. */
  ncu?: string;
  /** The job's deadlines and when the job arrived (Date.now()): profiling ends before the parent's deadlines. */
  deadlines?: Deadlines;
  receivedAtMs?: number;
  /** An operator-installed JavaScript reference module (the problem registry's): the job's reference. */
  referenceModule?: string;
  /** profileJob, or a stand-in. */
  profile?: (job: EvalJob, options: ProfileJobOptions) => Promise<ProfileResult>;
  /**
   * A reference or a candidate in Python (JobExtras.python), each run by a runner the slot starts for job `jobId`. With
   * a candidate, the job's source and kernel name it and nothing is compiled (python-candidate.ts).
   */
  python?: PythonJob;
  jobId?: string;
  /**
   * Resolves when the job's turn on the GPU has come (EvalOptions.waitForGpu): evaluate() waits before its load
   * phase, a job with a Python kernel before its first runner starts.
   */
  waitForGpu?: () => Promise<void>;
}

/** check()'s default seed, mixed like any other when the job names none. */
const DEFAULT_SEED = 42;

/**
 * The seed the inputs are drawn from: a hash of the job's public seed and the secret salt, so a kernel cannot know
 * its inputs in advance from the seed it was given (a 32-bit value: validateJob wants a non-negative integer).
 */
export function mixSeed(seed: number, salt: string): number {
  return createHash('sha256').update(`${seed}\0${salt}`).digest().readUInt32LE(0);
}

/** NVRTC's program name when a source's own name has nothing usable left. */
const FALLBACK_SOURCE_NAME = 'kernel.cu';

/**
 * The program name NVRTC gets for a client's source name: its last path part, in letters, digits, '.', '_' and '-'.
 * NVRTC searches the directory of a program's name for #include "..." unless told not to (lib/eval/source.ts tells
 * it): a bare name leaves nothing to search but the worker's own empty directory, whatever else fails.
 */
export function bareSourceName(name: string): string {
  const last = name.split(/[/\\]/).pop() ?? '';
  const bare = last.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '');
  return bare === '' ? FALLBACK_SOURCE_NAME : bare.slice(0, 128);
}

/** `kernel` with its source's name made bare (bareSourceName); anything else as it is. */
function withBareName<T>(kernel: T): T {
  if (typeof kernel !== 'object' || kernel === null) return kernel;
  const source = (kernel as { source?: unknown }).source;
  if (typeof source !== 'object' || source === null) return kernel;
  const name = (source as { name?: unknown }).name;
  if (typeof name !== 'string') return kernel;
  return { ...kernel, source: { ...source, name: bareSourceName(name) } };
}

/**
 * The job as the worker runs it: the mixed seed, zeroOnFree when asked, and every source's name bare
 * (bareSourceName; the stored job keeps the client's). Leaves `job` as it is.
 */
export function prepareForRun(job: EvalJob, seedSalt: string, zeroOnFree: boolean): EvalJob {
  const check = typeof job.check === 'object' && job.check !== null ? job.check : {};
  const seed = typeof check.seed === 'number' ? check.seed : DEFAULT_SEED;
  const run: EvalJob = { ...withBareName(job), check: { ...check, seed: mixSeed(seed, seedSalt) } };
  if (check.precision?.reference !== undefined) {
    run.check!.precision = { ...check.precision, reference: withBareName(check.precision.reference) };
  }
  if (job.reference !== undefined) run.reference = withBareName(job.reference);
  if (job.compare !== undefined) run.compare = withBareName(job.compare);
  if (zeroOnFree) run.zeroOnFree = true;
  return run;
}

/**
 * A problem and a submission to it as the worker runs them: the check's seed mixed with the job's salt (every case's
 * inputs are drawn from it), and every kernel's source name bare. Leaves both as they are.
 */
export function prepareProblemForRun(
  problem: EvalProblem,
  submission: ProblemSubmission,
  seedSalt: string,
): { problem: EvalProblem; submission: ProblemSubmission } {
  const check = typeof problem.check === 'object' && problem.check !== null ? problem.check : {};
  const seed = typeof check.seed === 'number' ? check.seed : DEFAULT_SEED;
  const run: EvalProblem = { ...problem, check: { ...check, seed: mixSeed(seed, seedSalt) } };
  if (check.precision !== undefined) {
    run.check!.precision = { ...check.precision, reference: withBareName(check.precision.reference) };
  }
  if (problem.reference !== undefined) run.reference = withBareName(problem.reference);
  if (problem.baseline !== undefined) run.baseline = withBareName(problem.baseline);
  return { problem: run, submission: withBareName(submission) };
}

let facts: DeviceFacts | undefined;

/** This worker's GPU (ordinal 0 under CUDA_VISIBLE_DEVICES), or undefined where it cannot be seen. No context. */
export function workerDevice(): DeviceFacts | undefined {
  try {
    facts ??= deviceFacts(Device.get(0));
  } catch {
    // no driver or no device: the report says why
  }
  return facts;
}

/**
 * Runs one job and returns its report as plain JSON, with the device it ran on. With `deviceMetrics`, the report
 * gets `deviceMetrics` (see collectDeviceMetrics); the job's verdict does not depend on it.
 */
export async function runJob(
  job: EvalJob,
  seedSalt: string,
  options: RunJobOptions = {},
): Promise<{ report: WorkerReport; device: DeviceFacts | undefined }> {
  const { signal, onPhase, onProgress, zeroOnFree = false } = options;
  const run = prepareForRun(job, seedSalt, zeroOnFree);
  const { waitForGpu } = options;
  // A runner's Python is the job's code and uses the GPU from its start: it starts in the job's turn.
  if (options.python !== undefined) await waitForGpu?.();
  if (options.python?.candidate !== undefined) {
    const report = await runPythonCandidateJob(run, options.python, options.jobId ?? '', onPhase);
    const plain = formatJson(report as unknown as Record<string, unknown>);
    return { report: JSON.parse(plain) as WorkerReport, device: workerDevice() };
  }
  const spec = options.python?.reference;
  const python = spec === undefined ? undefined : await startPythonReference(spec, options.jobId ?? '');
  const reference =
    python?.reference ??
    (options.referenceModule === undefined ? undefined : await importJsReference(options.referenceModule));
  let report: WorkerReport = await evaluate(run, {
    ...(signal === undefined ? {} : { signal }),
    ...(waitForGpu === undefined ? {} : { waitForGpu }),
    ...(reference === undefined ? {} : { reference }),
    onProgress: (p) => {
      if (p.kind === 'phase') onPhase?.(p.phase);
      else onProgress?.(p);
    },
  });
  if (python !== undefined) {
    const pythonReference = await timePythonReference(python, report, run, onPhase);
    if (pythonReference !== undefined) report = { ...report, pythonReference };
    stopRelayedRunner(options.jobId ?? '', 'reference');
  }
  if (options.deviceMetrics === true) {
    const elapsedMs = Date.now() - (options.receivedAtMs ?? Date.now());
    const m = await collectDeviceMetrics(report, run, {
      ncu: options.ncu ?? process.env[NCU_ENV] ?? 'auto',
      ...(options.deadlines === undefined ? {} : { timeoutMs: profileBudgetMs(options.deadlines, elapsedMs) }),
      ...(onPhase === undefined ? {} : { onPhase }),
      ...(options.profile === undefined ? {} : { profile: options.profile }),
    });
    report = { ...report, deviceMetrics: m.deviceMetrics, warnings: [...report.warnings, ...m.warnings] };
  }
  const plain = JSON.parse(formatJson(report as unknown as Record<string, unknown>)) as WorkerReport;
  return { report: plain, device: workerDevice() };
}

/**
 * Runs a submission to a problem with cases (evaluateProblem(): the public cases, then the hidden ones, then the
 * score) and returns its report as plain JSON, with the device it ran on. Phases and progress as runJob's, each
 * case's start and its job's progress carrying the case's index; device metrics are not collected.
 */
export async function runProblemJob(
  problem: EvalProblem,
  submission: ProblemSubmission,
  seedSalt: string,
  options: RunJobOptions = {},
): Promise<{ report: ProblemReport; device: DeviceFacts | undefined }> {
  const { signal, onPhase, onProgress } = options;
  const run = prepareProblemForRun(problem, submission, seedSalt);
  const reference =
    options.referenceModule === undefined ? undefined : await importJsReference(options.referenceModule);
  const report = await evaluateProblem(run.problem, run.submission, {
    ...(signal === undefined ? {} : { signal }),
    ...(options.waitForGpu === undefined ? {} : { waitForGpu: options.waitForGpu }),
    ...(reference === undefined ? {} : { reference }),
    onProgress: (p) => {
      if (p.kind === 'phase') onPhase?.(p.phase);
      else onProgress?.(p);
    },
  });
  const plain = JSON.parse(formatJson(report as unknown as Record<string, unknown>)) as ProblemReport;
  return { report: plain, device: workerDevice() };
}

/** Where Nsight Compute is, 'auto' or 'off': the service's --ncu, which main.ts puts in the workers' environment. */
export const NCU_ENV = 'CUDAKIT_SERVER_NCU';

/** Time kept back from a deadline for killing ncu and sending the result, ms. */
export const PROFILE_MARGIN_MS = 5_000;
/** Less time than this left for profiling: not tried. */
export const PROFILE_MIN_MS = 5_000;

/**
 * How long profiling may take: until the profile phase's deadline or the job's, whichever comes first, less a
 * margin, so ncu is killed here and the job keeps its verdict rather than ending in the parent's timeout.
 */
export function profileBudgetMs(deadlines: Deadlines, elapsedMs: number): number {
  const phaseMs = deadlines.phaseMs.profile ?? deadlines.jobMs;
  return Math.min(phaseMs, deadlines.jobMs - elapsedMs) - PROFILE_MARGIN_MS;
}

export interface DeviceMetricsOptions {
  /** 'auto' (ncu on PATH), 'off', or ncu's path. */
  ncu: string;
  /** How long ncu may take, ms (profileBudgetMs). Default: profile()'s. */
  timeoutMs?: number;
  onPhase?: (phase: 'profile') => void;
  profile?: (job: EvalJob, options: ProfileJobOptions) => Promise<ProfileResult>;
}

/**
 * The device metrics of a job that passed: profileJob() under ncu, in this worker's process group (a deadline that
 * kills the group kills ncu too), after a 'profile' phase is announced. null with a warning when ncu is off, the job
 * did not pass, too little time is left, or profiling fails (no ncu, no counter permission, a timeout ...).
 */
export async function collectDeviceMetrics(
  report: EvalReport,
  job: EvalJob,
  o: DeviceMetricsOptions,
): Promise<{ deviceMetrics: DeviceMetrics | null; warnings: string[] }> {
  const none = (why: string) => ({ deviceMetrics: null, warnings: [`device metrics not collected: ${why}`] });
  if (o.ncu === 'off') return none('Nsight Compute is off on this server (--ncu off)');
  if (!report.passed) return none(`the job did not pass (its ${report.phase ?? 'last'} phase failed)`);
  if (o.timeoutMs !== undefined && o.timeoutMs < PROFILE_MIN_MS) {
    return none(`too little of the job's time is left (${Math.max(0, Math.round(o.timeoutMs / 1000))} s)`);
  }
  o.onPhase?.('profile');
  try {
    const r = await (o.profile ?? profileJob)(job, {
      processGroup: 'caller',
      ...(o.ncu === 'auto' ? {} : { ncu: o.ncu }),
      ...(o.timeoutMs === undefined ? {} : { timeoutMs: o.timeoutMs }),
    });
    return { deviceMetrics: r.deviceMetrics, warnings: r.warnings };
  } catch (e) {
    return none(e instanceof Error ? e.message : String(e));
  }
}

/** Starts the job's runner through the slot and makes its reference; a runner that cannot start fails the check. */
async function startPythonReference(
  spec: PythonKernelSpec,
  jobId: string,
): Promise<PythonReference | { reference: JsReference }> {
  try {
    return await startPythonKernel(spec, jobId, 'reference');
  } catch (e) {
    const error = e as Error;
    return { reference: () => Promise.reject(error) };
  }
}

/**
 * After evaluate(): the Python reference timed with the job's rule when the candidate passed its check and was timed
 * (the answer compares the two), else only what it was. The runner is closed either way.
 */
async function timePythonReference(
  python: PythonReference | { reference: JsReference },
  report: EvalReport,
  job: EvalJob,
  onPhase: ((phase: EvalPhase | 'profile') => void) | undefined,
): Promise<PythonReferenceReport | undefined> {
  if (!(python instanceof PythonReference)) return undefined;
  let timing: PythonTiming | undefined;
  let notTimed: string | undefined;
  try {
    if (report.passed && report.timing !== undefined) {
      onPhase?.('time');
      timing = await python.time(referenceRule(job));
    } else notTimed = 'the kernel did not pass its check';
  } catch (e) {
    notTimed = `timing the reference failed: ${(e as Error).message}`;
  }
  const r = await python.reportOf(timing, notTimed);
  python.close();
  return r;
}
