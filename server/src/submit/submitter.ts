// SPDX-License-Identifier: MIT
// The queue's submitting side: a submission is validated, admitted (admission limits, the queue caps, one attempt per
// Idempotency-Key at a time) and stored queued before the client gets its 202 (a submission to a problem with cases
// is checked by problem-submission.ts, and stored with the problem's name); a job's place in the queue; the
// periodic passes that fail queued jobs past their maxQueueSeconds (and running jobs the queue lost) and delete
// finished jobs past their retention.
import { InvalidJobError, isArch, validateJob } from 'cudakit';
import type { EvalJob } from 'cudakit';
import { ServiceError } from '../errors.js';
import { queueTimeoutOutcome } from '../judge/outcome.js';
import type { CheckOptions, CompileCheckResult } from '../run/compile-check.js';
import type { GpuPool } from '../run/pool.js';
import type { Deadlines } from '../run/protocol.js';
import type { JobEvents, ServiceLog } from '../schedule/job-events.js';
import { type SubmitQueue, queuedJobOf } from '../schedule/queue.js';
import { newJobId } from '../store/ids.js';
import { type JobRecord, type JobStore, type ServiceOptions, type StoredJob, queuedRecord } from '../store/store.js';
import {
  DEFAULT_ADMISSION_LIMITS,
  admissionProblems,
  gpuAdmissionLimits,
  gpuLaunchLimits,
  type AdmissionLimits,
} from './admission.js';
import {
  CONFIRMATIONS_PER_SWEEP,
  boardClassesOf,
  confirmKeyOf,
  findEntry,
  provisionalEntries,
  reverifyKeyOf,
  rerunRecordOf,
} from './confirmations.js';
import { splitBody } from './fields.js';
import { hashOf } from './idempotency.js';
import { checkProblemSubmission } from './problem-submission.js';
import type { ProblemRegistry } from './problems.js';

export interface ServiceLimits extends AdmissionLimits {
  /** Jobs one principal may have queued (429 beyond). */
  maxQueuedPerPrincipal: number;
  /** Jobs queued in all (503 beyond). */
  maxQueued: number;
}

export const DEFAULT_LIMITS: ServiceLimits = {
  ...DEFAULT_ADMISSION_LIMITS,
  maxQueuedPerPrincipal: 32,
  maxQueued: 1000,
};

/** The compile check the service uses (run/compile-check.ts's CompileChecker). */
export interface CompileCheck {
  /** Whether `job` compiles, for its compile.arch, else `arch`, else the newest arch NVRTC knows. Never rejects. */
  check(job: EvalJob, o?: CheckOptions): Promise<CompileCheckResult>;
  /** Ends the checks in progress. */
  stop(): void;
}

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export interface Submission {
  record: JobRecord;
  /** An Idempotency-Key's earlier job, returned instead of a new one. */
  replayed: boolean;
  /** Its place in the queue when it was admitted (a replay's: now). */
  queue: QueueInfo;
}

/** What an admin's re-verify of a leaderboard entry did. */
export type Reverify =
  | { kind: 'queued'; record: JobRecord }
  | { kind: 'no-entry' }
  | { kind: 'job-gone' }
  | { kind: 'queue-full'; retryAfterSeconds: number };

export interface QueueInfo {
  position: number;
  ahead: number;
  running: number;
  gpus: number;
}

/** A job's place: `position` in the queue, among the GPUs of its class (only counts: nothing of others' jobs). */
export function queueInfoOf(pool: GpuPool, record: JobRecord, position: number): QueueInfo {
  const slots = pool.slots().filter((s) => s.classes.includes(record.options.gpu) && s.state !== 'quarantined');
  return {
    position,
    ahead: Math.max(0, position - 1),
    running: slots.filter((s) => s.state === 'busy').length,
    gpus: slots.length,
  };
}

export interface SubmitterConfig {
  /** The queue's submitting side. */
  queue: SubmitQueue;
  pool: GpuPool;
  store: JobStore;
  events: JobEvents;
  limits: ServiceLimits;
  /** limits.maxDeviceBytes was configured: it applies whatever the GPUs. */
  deviceCapConfigured: boolean;
  problems: ProblemRegistry;
  /** The per-phase limits a run gets (the compile check's time is the compile phase's). */
  deadlines: (job: EvalJob, options: ServiceOptions) => Deadlines;
  compileCheck: CompileCheck | undefined;
  /** Seconds a run takes, smoothed: what a Retry-After estimate is made of. */
  runSeconds: () => number;
  /** A job was queued (the running side, where this process has it, looks for a slot). */
  onQueued: () => void;
  /** Finished jobs are deleted this long after they finished. */
  retentionMs: number;
  /** How often queued jobs are checked against their maxQueueSeconds. */
  expiryIntervalMs: number;
  /** How often the retention sweep runs. */
  retentionIntervalMs: number;
  /** How often provisional leaderboard entries get their confirmation re-runs queued. */
  confirmIntervalMs: number;
  now: () => number;
  log: ServiceLog;
}

export class Submitter {
  readonly #queue: SubmitQueue;
  readonly #pool: GpuPool;
  readonly #store: JobStore;
  readonly #events: JobEvents;
  readonly #limits: ServiceLimits;
  readonly #deviceCapConfigured: boolean;
  readonly #problems: ProblemRegistry;
  readonly #deadlines: (job: EvalJob, options: ServiceOptions) => Deadlines;
  readonly #compileCheck: CompileCheck | undefined;
  readonly #runSeconds: () => number;
  readonly #onQueued: () => void;
  readonly #retentionMs: number;
  readonly #expiryIntervalMs: number;
  readonly #retentionIntervalMs: number;
  readonly #confirmIntervalMs: number;
  readonly #now: () => number;
  readonly #log: ServiceLog;
  /** Submissions in progress per principal + Idempotency-Key: a retry waits for the first instead of racing it. */
  readonly #idempotencyLocks = new Map<string, Promise<unknown>>();
  readonly #timers: NodeJS.Timeout[] = [];

  constructor(config: SubmitterConfig) {
    this.#queue = config.queue;
    this.#pool = config.pool;
    this.#store = config.store;
    this.#events = config.events;
    this.#limits = config.limits;
    this.#deviceCapConfigured = config.deviceCapConfigured;
    this.#problems = config.problems;
    this.#deadlines = config.deadlines;
    this.#compileCheck = config.compileCheck;
    this.#runSeconds = config.runSeconds;
    this.#onQueued = config.onQueued;
    this.#retentionMs = config.retentionMs;
    this.#expiryIntervalMs = config.expiryIntervalMs;
    this.#retentionIntervalMs = config.retentionIntervalMs;
    this.#confirmIntervalMs = config.confirmIntervalMs;
    this.#now = config.now;
    this.#log = config.log;
  }

  /** The queue is rebuilt from the store's queued jobs (each keeps its place and its QUEUE_TIMEOUT deadline). */
  async requeue(records: readonly JobRecord[]): Promise<void> {
    for (const record of records) {
      if ((await this.#queue.position(record.id)) === undefined) await this.#queue.enqueue(queuedJobOf(record));
    }
  }

  /** A first expiry pass, retention sweep and confirmation sweep, then each every while. */
  async start(): Promise<void> {
    await this.#expire();
    await this.#sweepRetention();
    // A sweep that fails is tried again on the timer: no reason to keep the service from starting.
    await this.sweepConfirmations().catch((e: unknown) => this.#log.error({ err: e }, 'the confirmation sweep failed'));
    this.#every(this.#expiryIntervalMs, () => this.#expire());
    this.#every(this.#retentionIntervalMs, () => this.#sweepRetention());
    this.#every(this.#confirmIntervalMs, () => this.sweepConfirmations());
  }

  /**
   * Queues a confirmation re-run for each provisional leaderboard entry that has none yet and whose job is still
   * stored (at most CONFIRMATIONS_PER_SWEEP a sweep); resolves the re-runs' ids.
   */
  async sweepConfirmations(): Promise<string[]> {
    const classes = boardClassesOf(this.#pool);
    const entries = await provisionalEntries(this.#store, this.#problems.namesWithCases(), classes);
    const queued: string[] = [];
    for (const entry of entries) {
      if (queued.length >= CONFIRMATIONS_PER_SWEEP) break;
      const key = confirmKeyOf(entry.jobId);
      if ((await this.#store.findByIdempotencyKey(entry.principal, key, 0)) !== undefined) continue;
      const original = await this.#store.get(entry.jobId);
      if (original === undefined) continue; // retention took its job: an admin may remove the entry
      const rerun = await this.#queueRerun(original, entry.gpuClass, key);
      if (rerun === undefined) break; // the queue is full: the next sweep tries again
      queued.push(rerun.id);
    }
    return queued;
  }

  /**
   * An admin's re-verify: queues a re-run of the job of `who`'s entry (a principal, or the name the board shows) on
   * the board of `problem` and `gpuClass`. Its result confirms the entry or sets it provisional again. Resolves the
   * re-run, or why there is none: no such entry, its job no longer stored (retention), or a full queue.
   */
  async reverify(problem: string, gpuClass: string, who: string): Promise<Reverify> {
    const entry = await findEntry(this.#store, problem, gpuClass, who);
    if (entry === undefined) return { kind: 'no-entry' };
    const original = await this.#store.get(entry.jobId);
    if (original === undefined) return { kind: 'job-gone' };
    const rerun = await this.#queueRerun(original, entry.gpuClass, reverifyKeyOf(entry.jobId, this.#now()));
    if (rerun === undefined) return { kind: 'queue-full', retryAfterSeconds: this.#retryAfterSeconds(0) };
    return { kind: 'queued', record: rerun };
  }

  /** Stores and queues a re-run of `original`; undefined when the queue is full. */
  async #queueRerun(original: JobRecord, gpuClass: string, key: string): Promise<JobRecord | undefined> {
    if ((await this.#queue.size()) >= this.#limits.maxQueued) return undefined;
    const record = rerunRecordOf(original, gpuClass, key, this.#now());
    await this.#queueRecord(record);
    this.#log.info({ id: record.id, confirms: original.id, gpu: gpuClass }, 'queued a leaderboard re-run');
    return record;
  }

  /** Stops the expiry and retention timers. */
  close(): void {
    for (const t of this.#timers.splice(0)) clearInterval(t);
  }

  /** Jobs queued, in all or for one principal. */
  async size(principal?: string): Promise<number> {
    return this.#queue.size(principal);
  }

  /** Takes a queued job out of the queue (its cancel). */
  async remove(id: string): Promise<void> {
    await this.#queue.remove(id);
  }

  /** Where a job stands in the queue, among the GPUs of its class. */
  async queueInfo(record: JobRecord): Promise<QueueInfo> {
    const position = record.status === 'queued' ? ((await this.#queue.position(record.id)) ?? 0) : 0;
    return queueInfoOf(this.#pool, record, position);
  }

  /**
   * Validates `body` (the request: an EvalJob with the service's fields), admits it and stores it queued.
   *
   * @throws InvalidJobError (400) with every problem; ServiceError: 503 without a GPU (after validation and, with a
   *   compile check, after compiling, so a client without one still learns what is wrong with its job), 400 for a GPU
   *   class no GPU here serves, 422 for an Idempotency-Key reused with another body, 429 / 503 (with Retry-After) at
   *   the queue caps.
   */
  /** `internal`: what the service's own routes add to a job and no client's body can (compat's Python reference). */
  async submit(
    principal: string,
    body: Record<string, unknown>,
    idempotencyKey?: string,
    internal?: Pick<ServiceOptions, 'python'>,
  ): Promise<Submission> {
    const split = splitBody(body);
    const options: ServiceOptions = split.options;
    if (internal?.python !== undefined) options.python = internal.python;
    // A job, or a submission to a problem with cases; `compiled` is what the compile check compiles.
    const { job, compiled } = this.#checked(split.job, options);
    await this.#checkGpus(compiled, options);

    const bodyHash = hashOf({ job, options });
    if (idempotencyKey === undefined) return this.#admit(principal, job, options, bodyHash, undefined);
    // One submission per principal + key at a time: a retry racing its original gets the original's job.
    const lockKey = `${principal}\0${idempotencyKey}`;
    while (this.#idempotencyLocks.has(lockKey)) await this.#idempotencyLocks.get(lockKey)!.catch(() => {});
    const attempt = (async () => {
      const notBeforeMs = this.#now() - IDEMPOTENCY_TTL_MS;
      const existing = await this.#store.findByIdempotencyKey(principal, idempotencyKey, notBeforeMs);
      if (existing !== undefined) {
        if (existing.bodyHash !== bodyHash) {
          const message =
            `Idempotency-Key '${idempotencyKey}' was used for another request body (evaluation ${existing.id}) ` +
            'within the last 24 hours: use a new key for a new evaluation';
          throw new ServiceError('IDEMPOTENCY_KEY_REUSED', message);
        }
        return { record: existing, replayed: true, queue: await this.queueInfo(existing) };
      }
      return this.#admit(principal, job, options, bodyHash, idempotencyKey);
    })();
    this.#idempotencyLocks.set(lockKey, attempt);
    try {
      return await attempt;
    } finally {
      this.#idempotencyLocks.delete(lockKey);
    }
  }

  /**
   * The job to store and the EvalJob the compile check compiles: the body's EvalJob (a registry problem's args and
   * reference in place), or the submission to a problem with cases and its first case's job.
   * @throws InvalidJobError with every problem found.
   */
  #checked(body: Record<string, unknown>, options: ServiceOptions): { job: StoredJob; compiled: EvalJob } {
    const validated = <T>(check: () => T, what: string): T => {
      try {
        return check();
      } catch (e) {
        if (e instanceof InvalidJobError) throw e;
        // A validator that throws anything else met a body it did not foresee: still the body's problem, not a 500.
        this.#log.error({ err: e }, `${what} threw something other than InvalidJobError`);
        const message = `Expected a job cudakit's ${what} can check for job but it failed: ${(e as Error).message}`;
        throw new InvalidJobError([{ path: 'job', message, type: 'TypeError' }]);
      }
    };
    if ('problem' in body) {
      const checked = validated(
        () => checkProblemSubmission(body, options, this.#problems, this.#admissionLimits()),
        'validateProblem',
      );
      const referenceModule = this.#problems.modulePath(checked.job.problem);
      if (referenceModule !== undefined) options.referenceModule = referenceModule;
      return { job: checked.job, compiled: checked.firstCase };
    }
    // A registry problem gives the job its args and reference before anything checks them.
    const { job: rawJob, problem } = this.#problems.expand(body);
    const referenceModule = problem === undefined ? undefined : this.#problems.modulePath(problem);
    if (referenceModule !== undefined) options.referenceModule = referenceModule;
    const pythonCandidate = options.python?.candidate !== undefined;
    const problems = admissionProblems(rawJob, this.#admissionLimits(), { pythonCandidate });
    if (problems.length > 0) throw new InvalidJobError(problems);
    const job = validated(() => validateJob(rawJob), 'validateJob');
    return { job, compiled: job };
  }

  /** Throws when no GPU can take the job: 503 without one (400 for a job that does not compile), 400 for a class. */
  async #checkGpus(job: EvalJob, options: ServiceOptions): Promise<void> {
    const pool = this.#pool;
    // The pool's view can lag (an API node's registry read): it looks again before it refuses.
    if ((pool.unavailableReason !== undefined || !pool.serves(options.gpu)) && pool.recheck) {
      await pool.recheck();
    }
    const reason = pool.unavailableReason;
    if (reason !== undefined) {
      // What NVRTC can tell without a GPU, the client learns now: a kernel that does not compile is not worth a retry.
      // A Python candidate has nothing for NVRTC.
      const deadlines = this.#deadlines(job, options);
      const compileCheck = options.python?.candidate === undefined ? this.#compileCheck : undefined;
      const checked = await compileCheck?.check(job, {
        ...(isArch(options.gpu) ? { arch: options.gpu } : {}),
        timeoutMs: deadlines.phaseMs.compile ?? deadlines.jobMs,
      });
      if (checked?.kind === 'fails') throw new InvalidJobError(checked.problems);
      const compiles =
        checked?.kind === 'compiles'
          ? ` (the job compiles${checked.arch === undefined ? '' : ` for ${checked.arch}`})`
          : '';
      const message = `No GPU to run evaluations on: ${reason}${compiles}`;
      throw new ServiceError('NO_GPU', message, pool.unavailableRetryAfterSeconds);
    }
    if (!pool.serves(options.gpu)) {
      const known = new Set(pool.slots().flatMap((s) => s.classes));
      if (!known.has(options.gpu)) {
        const classes = [...known].sort().join(', ');
        throw new ServiceError('UNKNOWN_GPU_CLASS', `No GPU here is of class '${options.gpu}' (classes: ${classes})`);
      }
      const message = `Every GPU of class '${options.gpu}' is out of service (quarantined)`;
      throw new ServiceError('NO_GPU_OF_CLASS', message, 60);
    }
  }

  async #admit(
    principal: string,
    job: StoredJob,
    options: ServiceOptions,
    bodyHash: string,
    idempotencyKey: string | undefined,
  ): Promise<Submission> {
    const queue = this.#queue;
    const mine = await queue.size(principal);
    if (mine >= this.#limits.maxQueuedPerPrincipal) {
      const message =
        `${mine} evaluations of yours are queued, the most one client may have: ` +
        'wait for some to start, or cancel some';
      throw new ServiceError('QUEUE_FULL_FOR_PRINCIPAL', message, this.#retryAfterSeconds(mine));
    }
    const all = await queue.size();
    if (all >= this.#limits.maxQueued) {
      const message = `The queue is full (${all} evaluations): try again later`;
      throw new ServiceError('QUEUE_FULL', message, this.#retryAfterSeconds(all));
    }
    const nowMs = this.#now();
    const record = queuedRecord({
      id: newJobId(nowMs),
      principal,
      job,
      options,
      idempotencyKey,
      bodyHash,
      createdAt: nowMs,
    });
    return { record, replayed: false, queue: await this.#queueRecord(record) };
  }

  /** Stores `record` queued and puts it in the queue; resolves its place. */
  async #queueRecord(record: JobRecord): Promise<QueueInfo> {
    const queue = this.#queue;
    await this.#store.insert(record);
    const queued = queuedJobOf(record);
    // Where agents take jobs the moment they are queued, the 'queued' event is stored first: an agent's 'started'
    // must never come before it in the job's events.
    const arrival = await queue.arrivalPosition(queued);
    if (arrival !== undefined) await this.#events.event(record.id, 'queued', { position: arrival });
    await queue.enqueue(queued);
    const info = await this.queueInfo(record);
    if (arrival === undefined) void this.#events.event(record.id, 'queued', { position: info.position });
    this.#onQueued();
    return info;
  }

  /**
   * The configured device-bytes cap, else a quarter of the smallest GPU's memory in the pool, else the default; the
   * launch limits of the smallest GPU in the pool (an API node's: the agents' GPUs), else CUDA's own.
   */
  #admissionLimits(): AdmissionLimits {
    const slots = this.#pool.slots();
    const launch = gpuLaunchLimits(slots);
    if (this.#deviceCapConfigured) {
      return {
        maxDeviceBytes: this.#limits.maxDeviceBytes,
        maxDeviceBytesReason: 'the limit configured for this server',
        launch,
      };
    }
    return { ...(gpuAdmissionLimits(slots) ?? this.#limits), launch };
  }

  /** An estimate of when a place frees up: the jobs in front, over the GPUs, at the average run time. */
  #retryAfterSeconds(jobsAhead: number): number {
    const gpus = Math.max(1, this.#pool.slots().filter((s) => s.state !== 'quarantined').length);
    return Math.min(600, Math.max(1, Math.ceil((this.#runSeconds() * Math.max(1, jobsAhead)) / gpus)));
  }

  #every(intervalMs: number, task: () => Promise<unknown>): void {
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      task()
        .catch((e: unknown) => this.#log.error({ err: e }, 'periodic task failed'))
        .finally(() => (busy = false));
    }, intervalMs);
    timer.unref();
    this.#timers.push(timer);
  }

  /** Queued jobs past their maxQueueSeconds fail with QUEUE_TIMEOUT. */
  async #expire(): Promise<void> {
    const nowMs = this.#now();
    const queue = this.#queue;
    for (const q of await queue.expire(nowMs)) {
      await this.#events.finish(q.id, q.gpu, undefined, { ...queueTimeoutOutcome(q), atMs: nowMs });
    }
    for (const lost of await queue.lost(nowMs)) {
      const error = lost.error;
      const outcome = { status: 'failed', verdict: undefined, phase: undefined, report: undefined, error } as const;
      if (await this.#events.finish(lost.id, lost.gpu, undefined, { ...outcome, atMs: nowMs })) {
        this.#log.warn({ id: lost.id, error }, 'the queue lost a running job: it failed');
      }
    }
  }

  async #sweepRetention(): Promise<void> {
    const deleted = await this.#store.deleteFinishedBefore(this.#now() - this.#retentionMs);
    if (deleted > 0) this.#log.info({ deleted }, 'retention: deleted finished evaluations');
  }
}
