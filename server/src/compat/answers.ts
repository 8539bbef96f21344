// SPDX-License-Identifier: MIT
// Finished jobs as the original server answers them, pure (no I/O): EvaluationResponse or CompareResponse, with
// cudakit's own figures under metadata.cudakit; /job, /health and /stats in the original's shapes. The contract is
// server/docs/compat.md.
import { hostname, networkInterfaces } from 'node:os';
import {
  InvalidJobError,
  quantile,
  type BenchResult,
  type CheckResult,
  type CompareResult,
  type DeviceMetricGroup,
  type DeviceMetrics,
  type EvalCheck,
  type EvalReport,
} from 'cudakit';
import { gpuClasses } from '../run/local-pool.js';
import {
  type CompareResponse,
  type EvaluationResponse,
  type JobErrorBody,
  type JobStats,
  type JobStatus,
  type KernelExecResult,
  type RuntimeStats,
} from './schemas.js';
import type { EvalService, FinishedJob } from '../service.js';
import type { SlotInfo } from '../run/pool.js';
import { type JobRecord, type JobStatus as StoreStatus, isProblemJob } from '../store/store.js';
import { COMPAT_ERRORS, CompatClientError, compatMessage, type CompatJobErrorName } from './errors.js';
import type { CompatJob } from './jobs.js';

/** This host as the original names it in every answer. */
export interface PodInfo {
  name: string;
  ip: string;
}

let pod: PodInfo | undefined;

/** The host name and its first external IPv4 address (127.0.0.1 without one), as the original reports them. */
export function podInfo(): PodInfo {
  if (pod !== undefined) return pod;
  const ip = Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;
  pod = { name: hostname(), ip: ip ?? '127.0.0.1' };
  return pod;
}

/** The original's create_error_response (a 500's body). */
export function jobErrorBody(message: string, jobId?: string): JobErrorBody {
  const { name, ip } = podInfo();
  return {
    kernel_exec_result: {},
    ref_runtime: {},
    pod_name: name,
    pod_ip: ip,
    status: 'error',
    error: message,
    compilation_method: 'cudakit',
    ...(jobId === undefined ? {} : { job_id: jobId }),
  };
}

/** A job_error entry of COMPAT_ERRORS as an answer: the entry's status, create_error_response's body. */
export function jobErrorAnswer(
  name: CompatJobErrorName,
  message: string,
  jobId?: string,
): { statusCode: (typeof COMPAT_ERRORS)[CompatJobErrorName]['status']; body: JobErrorBody } {
  return { statusCode: COMPAT_ERRORS[name].status, body: jobErrorBody(message, jobId) };
}

/** The GPU a job ran on: its index among the pool's slots (the original's gpu_id) and its name. */
export interface CompatGpu {
  index: number;
  name: string;
  arch: string;
}

/** The slot a job ran on, as the original numbers its GPUs: its index among the service's slots. */
export function compatGpuOf(slots: readonly SlotInfo[], record: JobRecord): CompatGpu | undefined {
  const index = slots.findIndex((s) => s.uuid === record.gpuUuid);
  const slot = slots[index];
  return slot === undefined ? undefined : { index, name: slot.name, arch: slot.arch };
}

/** Beyond the job's queue and run limits, how long a synchronous caller waits for its result. */
const SYNC_WAIT_SLACK_SECONDS = 10;

/** How long a synchronous caller (POST /evaluate, /compare, the MCP tools) waits for a job's end. */
export function compatWaitMs(
  job: Pick<CompatJob, 'timeoutSeconds' | 'maxQueueSeconds'>,
  override?: (job: Pick<CompatJob, 'timeoutSeconds' | 'maxQueueSeconds'>) => number,
): number {
  return override?.(job) ?? (job.maxQueueSeconds + job.timeoutSeconds + SYNC_WAIT_SLACK_SECONDS) * 1000;
}

/** Queues a translated job; validateJob's and the admission's problems become a 400 naming the request's fields. */
export async function submitCompatJob(
  service: Pick<EvalService, 'submit'>,
  principal: string,
  job: CompatJob,
): Promise<JobRecord> {
  try {
    return (
      await service.submit(
        principal,
        job.body,
        undefined,
        job.python === undefined ? undefined : { python: job.python },
      )
    ).record;
  } catch (e) {
    if (!(e instanceof InvalidJobError)) throw e;
    const problems = e.problems.map((p) => ({ field: job.fieldOf(p.path), path: p.path, message: p.message }));
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more in details)` : '';
    throw new CompatClientError(`Invalid job: ${problems[0]?.message ?? 'no details'}${more}`, { problems });
  }
}

/** 'h200', 'a100' ...: the original's gpu_type, from the GPU's model. */
export function gpuTypeOf(gpu: Pick<CompatGpu, 'name' | 'arch'>): string {
  return gpuClasses(gpu)[0]!.toLowerCase();
}

const ZERO_STATS: RuntimeStats = {
  mean: 0,
  std: 0,
  min: 0,
  max: 0,
  median: 0,
  percentile_95: 0,
  percentile_99: 0,
};

/** What runtime_stats reads of a timing: its statistics and samples (a BenchResult, or a Python reference's). */
type TimingLike = Pick<BenchResult, 'stats'> & { samples?: readonly { gpuMs: number; rejected?: boolean }[] };

/** The original's runtime_stats of a timing, unrounded (ms), over its accepted samples. */
export function runtimeStatsOf(timing: TimingLike): RuntimeStats {
  const s = timing.stats;
  const sorted = (timing.samples ?? [])
    .filter((x) => !x.rejected)
    .map((x) => x.gpuMs)
    .sort((a, b) => a - b);
  // Reports keep their samples; one without them (never stored so far) gets p95 between p90 and p99.
  const p95 = sorted.length > 0 ? quantile(sorted, 0.95) : s.p90 + ((s.p99 - s.p90) * 5) / 9;
  const p99 = sorted.length > 0 ? quantile(sorted, 0.99) : s.p99;
  return {
    mean: s.mean,
    std: s.stdev,
    min: s.min,
    max: s.max,
    median: s.median,
    percentile_95: p95,
    percentile_99: p99,
  };
}

/** The original's DeviceMetrics: its categories, each a flat { metric: number }, numbers rounded to 3 decimals. */
export type CompatDeviceMetrics = Record<(typeof COMPAT_METRIC_CATEGORIES)[number], Record<string, number>>;

const COMPAT_METRIC_CATEGORIES = [
  'speed_of_light',
  'detailed_metrics',
  'memory_metrics',
  'compute_metrics',
  'pipeline_metrics',
  'occupancy_metrics',
  'stall_metrics',
  'scheduler_metrics',
  'access_pattern_metrics',
  'roofline_metrics',
  'timing_metrics',
] as const;

/** cudakit's metric groups in the original's categories (it counted the launch figures as occupancy). */
const COMPAT_CATEGORY: Record<DeviceMetricGroup, (typeof COMPAT_METRIC_CATEGORIES)[number]> = {
  speedOfLight: 'speed_of_light',
  memory: 'memory_metrics',
  compute: 'compute_metrics',
  pipeline: 'pipeline_metrics',
  occupancy: 'occupancy_metrics',
  launch: 'occupancy_metrics',
  stalls: 'stall_metrics',
  scheduler: 'scheduler_metrics',
  accessPattern: 'access_pattern_metrics',
  roofline: 'roofline_metrics',
  other: 'detailed_metrics',
};

/** Device metrics in the original's shape: every category present, numbers only (ncu's names kept as keys). */
export function compatDeviceMetricsOf(m: DeviceMetrics): CompatDeviceMetrics {
  const out = Object.fromEntries(COMPAT_METRIC_CATEGORIES.map((c) => [c, {}])) as CompatDeviceMetrics;
  for (const [group, metrics] of Object.entries(m.groups) as [DeviceMetricGroup, DeviceMetrics['metrics']][]) {
    for (const [name, { value }] of Object.entries(metrics)) {
      if (typeof value === 'number') out[COMPAT_CATEGORY[group]][name] = Math.round(value * 1000) / 1000;
    }
  }
  return out;
}

const firstLine = (text: string): string => text.split('\n')[0]!.trim();

/** Whether the candidate compiled: from the report, or (a run killed without one) from the phase it died in. */
function compiledOf(record: JobRecord, report: EvalReport | undefined): boolean {
  if (report?.passed === true || report?.compile.candidate !== undefined) return true;
  const phase = report?.phase ?? record.phase ?? record.error?.phase;
  // A Python candidate builds in its load phase (its import; torch_cuda's nvcc, Triton's compiler).
  const builds = pythonTypeOf(record) !== undefined && phase === 'load';
  return phase !== undefined && phase !== 'validate' && phase !== 'compile' && !builds;
}

/** The kernel type of the job's Python candidate, or undefined for a CUDA kernel. */
function pythonTypeOf(record: JobRecord): string | undefined {
  const type = (record.options.python?.candidate as { type?: unknown } | undefined)?.type;
  return typeof type === 'string' ? type : undefined;
}

/** The one-line text of a kernel that did not pass: its verdict, then cudakit's summary. */
function failureText(record: JobRecord, report: EvalReport | undefined): string {
  const verdict = record.verdict ?? 'RUNTIME_ERROR';
  const phase = record.phase ?? record.error?.phase ?? 'unknown';
  const e = report?.error;
  if (verdict === 'TIMEOUT') {
    const after = /^killed after ([\d.]+ s)/.exec(record.error?.message ?? '')?.[1];
    return `TIMEOUT: killed after ${after ?? 'its deadline'} in phase ${phase}`;
  }
  if (verdict === 'CRASHED') {
    return `CRASHED: ${firstLine(record.error?.message ?? 'the worker died')} in phase ${phase}`;
  }
  if (e?.kind === 'cuda' && e.kernel !== 'reference' && e.kernel !== 'baseline' && e.kernel !== 'precise') {
    const trial = /in trial (\d+)/.exec(e.message)?.[1];
    const where = trial !== undefined ? `trial ${trial}` : (e.where ?? `phase ${report?.phase ?? phase}`);
    const api = e.api === undefined ? '' : ` (${e.api})`;
    return `${verdict}: ${e.code}${e.sticky === true ? ' (sticky)' : ''} in ${where}${api}`;
  }
  if (e?.kind === 'compile') {
    // The compare baseline is the request's ref_kernel too.
    const which = e.kernel === 'candidate' ? 'custom' : 'reference';
    return `${verdict}: the ${which} kernel did not compile: ${firstLine(e.message)}`;
  }
  return `${verdict}: ${firstLine(e?.message ?? record.error?.message ?? verdict)}`;
}

/** compilation_error: the verdict and cudakit's one line, then NVRTC's log (what the author needs to fix). */
function compileText(record: JobRecord, report: EvalReport | undefined): string {
  const e = report?.error;
  if (e?.kind === 'exception' && pythonTypeOf(record) !== undefined) return `COMPILE_ERROR: ${e.message}`;
  if (e === undefined || e.kind !== 'compile') return failureText(record, report);
  const log = e.log?.trim() ?? '';
  return `COMPILE_ERROR: ${firstLine(e.message)}${log === '' ? '' : `\n${log}`}`;
}

function checkOf(check: EvalCheck | undefined): CheckResult | undefined {
  return check !== undefined && 'before' in check ? (check.afterTiming ?? check.before) : undefined;
}

const finite = (x: number | null | undefined): number | null =>
  typeof x === 'number' && Number.isFinite(x) ? x : null;

/** What the answer needs besides the record. */
export interface AnswerContext {
  kind: 'evaluate' | 'compare';
  gpu: CompatGpu | undefined;
  /** The mapping's warnings (CompatJob.warnings). */
  warnings: readonly string[];
}

export type CompatAnswer =
  { statusCode: 200; body: EvaluationResponse | CompareResponse } | ReturnType<typeof jobErrorAnswer>;

/** A stored report (formatJson's text), or undefined. */
function reportOf(record: JobRecord): EvalReport | undefined {
  if (record.report === undefined) return undefined;
  try {
    return JSON.parse(record.report) as EvalReport;
  } catch {
    return undefined;
  }
}

/**
 * A finished job as the original's answer: 200 `status: 'success'` for every kernel verdict (compiled / correctness
 * false with the text in compilation_error / validation_error, as the original answers kernel failures), 500 with the
 * original's error body for a job the service could not finish (queue timeout, interrupted, cancelled).
 */
export function answerOf(record: JobRecord, ctx: AnswerContext): CompatAnswer {
  if (record.status === 'cancelled') return jobErrorAnswer('JOB_CANCELLED', compatMessage('JOB_CANCELLED'), record.id);
  if (record.status === 'failed' && record.verdict === undefined) {
    const e = record.error;
    const message =
      e === undefined
        ? 'Job failed with unknown error'
        : compatMessage('JOB_FAILED', { code: e.code, message: e.message });
    return jobErrorAnswer('JOB_FAILED', message, record.id);
  }
  const report = reportOf(record);
  const verdict = record.verdict ?? 'RUNTIME_ERROR';
  const passed = verdict === 'PASSED' || verdict === 'SUSPICIOUS';
  const compiled = compiledOf(record, report);
  const comparison: CompareResult | undefined = report?.comparison;
  // A Python candidate is timed by its runner (run/worker/python-candidate.ts): its samples, cudakit's statistics.
  const pythonCandidate = (report as (EvalReport & { pythonCandidate?: { timing?: TimingLike } }) | undefined)
    ?.pythonCandidate;
  const timing: (TimingLike & Partial<Pick<BenchResult, 'mode' | 'preset'>>) | undefined =
    report?.timing ?? comparison?.b ?? pythonCandidate?.timing;
  const check = checkOf(report?.check);
  const jobTiming = (isProblemJob(record.job) ? undefined : record.job.timing) ?? {};
  const mode = timing?.mode ?? jobTiming.mode ?? 'cold';
  const warnings = [...ctx.warnings, ...(report?.warnings ?? [])];
  if (verdict === 'SUSPICIOUS' && record.error !== undefined) warnings.push(`SUSPICIOUS: ${record.error.message}`);
  const cudakit = {
    verdict,
    evaluation_id: record.id,
    median_ms: finite(timing?.stats.median),
    ci_low_ms: finite(timing?.stats.ciLow),
    ci_high_ms: finite(timing?.stats.ciHigh),
    mode,
    preset: timing?.preset ?? jobTiming.preset ?? 'default',
    ...(comparison === undefined
      ? {}
      : {
          speedup: finite(comparison.speedup),
          speedup_ci: [finite(comparison.speedupLow), finite(comparison.speedupHigh)],
          compare_verdict: comparison.verdict,
        }),
    check:
      check === undefined
        ? null
        : {
            trials: check.trials.length,
            defence: check.defence ?? null,
            max_abs_error: finite(check.maxAbsError),
            tolerance_used: finite(check.toleranceUsed),
          },
    warnings,
  };
  const gpuType = ctx.gpu === undefined ? undefined : gpuTypeOf(ctx.gpu);
  const cudaVersion = report?.compile.candidate?.nvrtcVersion;
  // The candidate's metrics, named as the original names the kernel it profiled: 'original' for /evaluate's one
  // kernel, 'custom' for /compare's candidate (the baseline is not profiled).
  const deviceMetrics = (report as (EvalReport & { deviceMetrics?: DeviceMetrics | null }) | undefined)?.deviceMetrics;
  const deviceMetricsKey = ctx.kind === 'evaluate' ? 'original_device_metrics' : 'custom_device_metrics';
  const result: KernelExecResult = {
    compiled,
    correctness: passed,
    runtime: timing === undefined ? 0 : timing.stats.mean,
    metadata: {
      gpu_id: ctx.gpu?.index ?? 0,
      kernel_name: record.job.kernel,
      kernel_type: pythonTypeOf(record) ?? 'cuda',
      ...(gpuType === undefined ? {} : { gpu_type: gpuType }),
      ...(cudaVersion === undefined ? {} : { cuda_version: cudaVersion }),
      profiling_method: `cudakit-${mode}`,
      cudakit,
      ...(deviceMetrics === undefined || deviceMetrics === null
        ? {}
        : { device_metrics: { [deviceMetricsKey]: compatDeviceMetricsOf(deviceMetrics) } }),
    },
    ...(timing === undefined ? {} : { runtime_stats: runtimeStatsOf(timing) }),
    ...(passed ? {} : compiled ? { validation_error: failureText(record, report) } : {}),
    ...(compiled ? {} : { compilation_error: compileText(record, report) }),
  };
  const { name, ip } = podInfo();
  const common = {
    job_id: record.id,
    kernel_exec_result: result,
    pod_name: name,
    pod_ip: ip,
    status: 'success' as const,
    ...(gpuType === undefined ? {} : { gpu_type: gpuType }),
  };
  if (ctx.kind === 'evaluate') return { statusCode: 200, body: common };
  // A Python reference is timed by the worker beside the job (run/worker/python-reference.ts).
  const pythonTiming = (report as (EvalReport & { pythonReference?: { timing?: TimingLike } }) | undefined)
    ?.pythonReference?.timing;
  const refRuntime =
    comparison !== undefined
      ? runtimeStatsOf(comparison.a)
      : pythonTiming !== undefined
        ? runtimeStatsOf(pythonTiming)
        : ZERO_STATS;
  return { statusCode: 200, body: { ...common, ref_runtime: refRuntime } };
}

// ---------------------------------------------------------------------------------------------------------------
// /job, /health, /stats

/** GET /job/{id}: the original's statuses (submitted, completed, failed); a kernel's failure is 'completed'. */
export function jobStatusOf(record: JobRecord): JobStatus {
  let status: string;
  let error: string | null = null;
  switch (record.status) {
    case 'queued':
    case 'running':
      status = 'submitted';
      break;
    case 'succeeded':
      status = 'completed';
      break;
    case 'failed':
      // A crash mid-phase is the kernel's verdict (answered 200); anything else the service's failure.
      status = record.verdict === undefined ? 'failed' : 'completed';
      error = record.error === undefined ? null : `${record.error.code}: ${record.error.message}`;
      break;
    case 'cancelled':
      status = 'failed';
      error = 'cancelled';
      break;
  }
  return { job_id: record.id, status, created_at: record.createdAt / 1000, error };
}

/** The original's job_stats from the store's counts and the mean creation time of its jobs. */
export function jobStatsOf(
  counts: Record<StoreStatus, number>,
  meanCreatedAtMs: number | undefined,
  nowMs: number,
): JobStats {
  const byStatus: Record<string, number> = {};
  const add = (status: string, n: number): void => {
    if (n > 0) byStatus[status] = (byStatus[status] ?? 0) + n;
  };
  add('submitted', counts.queued + counts.running);
  add('completed', counts.succeeded);
  add('failed', counts.failed + counts.cancelled);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const averageAge = total === 0 || meanCreatedAtMs === undefined ? 0 : (nowMs - meanCreatedAtMs) / 1000;
  return { total_jobs: total, by_status: byStatus, average_age: Math.max(0, averageAge) };
}

const round = (x: number, places: number): number => Math.round(x * 10 ** places) / 10 ** places;
const minOf = (xs: readonly number[]): number => (xs.length === 0 ? 0 : Math.min(...xs));
const maxOf = (xs: readonly number[]): number => (xs.length === 0 ? 0 : Math.max(...xs));
const sumOf = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

/** Windows of the running figures: the last this many of each kind. */
const WINDOW = 10_000;

/**
 * The original's /stats figures since this process started, fed by the service's start and finish events (every
 * job, v1 or compatible). Counts come from verdicts; NVRTC compile times are not seen by the API process, so the
 * compile figures are counts only. Server statistics, rounded as the original rounds them.
 */
export class CompatStats {
  readonly #startMs: number;
  #started = 0;
  #released = 0;
  #finished = 0;
  #completed = 0;
  #failed = 0;
  #compileFailed = 0;
  #withVerdict = 0;
  #passed = 0;
  #incorrect = 0;
  readonly #waitSeconds: number[] = [];
  readonly #runSeconds: number[] = [];
  readonly #endToEndSeconds: number[] = [];
  readonly #finishTimesMs: number[] = [];
  readonly #waitById = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
    this.#startMs = now();
  }

  started(job: { id: string; queueWaitMs: number }): void {
    this.#started++;
    push(this.#waitSeconds, job.queueWaitMs / 1000);
    this.#waitById.set(job.id, job.queueWaitMs);
  }

  finished(job: FinishedJob): void {
    this.#finished++;
    push(this.#finishTimesMs, this.#now());
    const waitMs = this.#waitById.get(job.id);
    this.#waitById.delete(job.id);
    if (job.runMs !== undefined) {
      this.#released++;
      push(this.#runSeconds, job.runMs / 1000);
      push(this.#endToEndSeconds, ((waitMs ?? 0) + job.runMs) / 1000);
    }
    if (job.status === 'succeeded' || job.verdict !== undefined) this.#completed++;
    else this.#failed++;
    if (job.verdict === undefined) return;
    this.#withVerdict++;
    if (job.verdict === 'COMPILE_ERROR') this.#compileFailed++;
    if (job.verdict === 'PASSED' || job.verdict === 'SUSPICIOUS') this.#passed++;
    else if (!['COMPILE_ERROR', 'TIMEOUT', 'CRASHED', 'RUNTIME_ERROR'].includes(job.verdict)) this.#incorrect++;
  }

  /** The original's compilation_metrics, profiling_metrics, gpu_utilization, throughput and timestamp. */
  snapshot(): Record<string, unknown> {
    const nowMs = this.#now();
    const uptimeSeconds = (nowMs - this.#startMs) / 1000;
    const active = Math.max(0, this.#started - this.#released);
    // Every job seen: finished, or holding a GPU now (a queued job is seen when it starts).
    const total = this.#finished + active;
    const compiled = this.#withVerdict;
    const checked = this.#passed + this.#incorrect;
    const rate = (n: number, of: number): number => (of === 0 ? 1 : round(n / of, 3));
    const avg = (xs: readonly number[]): number => (xs.length === 0 ? 0 : round(sumOf(xs) / xs.length, 2));
    const recent = this.#finishTimesMs.filter((t) => t >= nowMs - 300_000).length;
    return {
      compilation_metrics: {
        total_compilations: compiled,
        successful_compilations: compiled - this.#compileFailed,
        failed_compilations: this.#compileFailed,
        success_rate: rate(compiled - this.#compileFailed, compiled),
      },
      profiling_metrics: {
        total_profilings: this.#withVerdict,
        successful_profilings: this.#passed,
        failed_profilings: this.#withVerdict - this.#passed,
        total_time_seconds: round(sumOf(this.#runSeconds), 2),
        average_time_seconds: avg(this.#runSeconds),
        success_rate: rate(this.#passed, this.#withVerdict),
        correctness_passed: this.#passed,
        correctness_failed: this.#incorrect,
        correctness_rate: rate(this.#passed, checked),
        min_time_seconds: round(minOf(this.#runSeconds), 2),
        max_time_seconds: round(maxOf(this.#runSeconds), 2),
      },
      gpu_utilization: {
        gpu_acquisitions: this.#started,
        gpu_releases: this.#released,
        active_sessions: active,
        total_gpu_time_seconds: round(sumOf(this.#runSeconds), 2),
        total_wait_time_seconds: round(sumOf(this.#waitSeconds), 2),
        average_wait_time_seconds: avg(this.#waitSeconds),
        max_wait_time_seconds: round(maxOf(this.#waitSeconds), 2),
        min_wait_time_seconds: round(minOf(this.#waitSeconds), 2),
      },
      throughput: {
        server_uptime_seconds: round(uptimeSeconds, 2),
        server_uptime_minutes: round(uptimeSeconds / 60, 2),
        total_requests: total,
        completed_requests: this.#completed,
        failed_requests: this.#failed,
        success_rate: rate(this.#completed, this.#finished),
        requests_per_minute: uptimeSeconds > 0 ? round(total / (uptimeSeconds / 60), 2) : 0,
        recent_throughput_per_minute: round(recent / 5, 2),
        average_end_to_end_time_seconds: avg(this.#endToEndSeconds),
        min_end_to_end_time_seconds: round(minOf(this.#endToEndSeconds), 2),
        max_end_to_end_time_seconds: round(maxOf(this.#endToEndSeconds), 2),
      },
      timestamp: nowMs / 1000,
    };
  }
}

/** Appends to a bounded window (the oldest falls out). */
function push(xs: number[], x: number): void {
  xs.push(x);
  if (xs.length > WINDOW) xs.shift();
}
