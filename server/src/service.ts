// SPDX-License-Identifier: MIT
// The scheduler: the one place that wires the store (system of record), the queue (who runs next) and the GPU pool
// (who runs it). submit() validates, admits and persists a job before the client gets its 202; a dispatch loop leases
// idle slots to queued jobs whenever a slot turns idle or a job arrives; each run's SlotOutcome becomes a status and
// a verdict, stored once, and a 'done' event. Cancel, queue expiry, retention, start-up recovery and a drain on
// shutdown are here too. Nothing in this process loads the CUDA addon: cudakit's validateJob and formatJson are pure
// JavaScript, and the GPUs are the pool's children's.
//
// The queue has two sides, as BullMQ's Queue and Worker: submitting (ServiceConfig.submitQueue) and running
// (runQueue). The embedded server has both in one process; in the distributed mode an API node has the submitting
// side (it submits, reads, cancels and expires; its pool is a view of the agents' GPUs) and an agent the running side
// (its GPUs' slots take jobs from the shared queue). What a process does follows from the sides it has; only main.ts
// knows the mode. Events and cancels cross processes through the cluster bus.
import { randomBytes } from 'node:crypto';
import { InvalidJobError, validateJob } from 'cudakit';
import type { EvalJob, EvalPhase, EvalProgress } from 'cudakit';
import {
  DEFAULT_ADMISSION_LIMITS,
  admissionProblems,
  gpuAdmissionLimits,
  gpuLaunchLimits,
  type AdmissionLimits,
} from './submit/admission.js';
import type { CheckOptions, CompileCheckResult } from './run/compile-check.js';
import { jobDeadlines } from './run/deadlines.js';
import { ProblemRegistry } from './submit/problems.js';
import type { ClusterBus } from './cluster/bus.js';
import type { GpuPool, SlotInfo, SlotLease } from './run/pool.js';
import type { Deadlines } from './run/protocol.js';
import { type QueuedJob, type RunQueue, type SubmitQueue, queuedJobOf } from './schedule/queue.js';
import { type FinishOutcome, queueTimeoutOutcome, resultOf } from './judge/outcome.js';
import { hashOf } from './submit/idempotency.js';
import { ServiceError } from './errors.js';
import { splitBody } from './http/schemas/v1.js';
import { newJobId } from './store/ids.js';
import { TERMINAL, type JobEvent, type JobRecord, type JobStore, type ServiceOptions } from './store/store.js';
import type { Verdict } from './judge/verdict.js';

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

/** The subset of pino's logger the service uses. */
export interface ServiceLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

const silentLog: ServiceLog = { info() {}, warn() {}, error() {} };

export interface ServiceConfig {
  /** Events and cancels between the processes of the distributed mode (API nodes and agents). */
  bus?: ClusterBus;
  store: JobStore;
  /**
   * The queue's submitting side: submissions, places, cancels of queued jobs, expiry, retention. Absent on an agent,
   * which only runs jobs.
   */
  submitQueue?: SubmitQueue;
  /** The queue's running side: this process's GPUs take jobs from it. Absent on an API node, which has no GPU. */
  runQueue?: RunQueue;
  pool: GpuPool;
  /** Wall clock, ms. Default Date.now. */
  now?: () => number;
  /** maxDeviceBytes given here is the cap; without it, a quarter of the smallest GPU's memory in the pool. */
  limits?: Partial<ServiceLimits>;
  /** References the operator installed (jobs name them as reference: { problem }). Default none. */
  problems?: ProblemRegistry;
  /** The per-phase limits a run gets. Default run/deadlines.ts's jobDeadlines within the job's timeoutSeconds. */
  deadlines?: (job: EvalJob, options: ServiceOptions) => Deadlines;
  /** Finished jobs are deleted this long after they finished. Default 30. */
  retentionDays?: number;
  /** How often queued jobs are checked against their maxQueueSeconds. Default 1000. */
  expiryIntervalMs?: number;
  /** How often the retention sweep runs. Default one hour. */
  retentionIntervalMs?: number;
  /** Progress events of one job closer together than this are dropped (the last is kept by the next). Default 250. */
  progressIntervalMs?: number;
  log?: ServiceLog;
  /**
   * Where no GPU can take a job, whether it compiles (run/compile-check.ts: in a contained child, never here): a job
   * that does not is a 400 rather than a 503. Default none: every such job is a 503.
   */
  compileCheck?: CompileCheck;
}

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

export interface QueueInfo {
  position: number;
  ahead: number;
  running: number;
  gpus: number;
}

/** What the metrics see of a job that reached its end. */
export interface FinishedJob {
  id: string;
  status: 'succeeded' | 'failed' | 'cancelled';
  verdict: Verdict | undefined;
  gpu: string;
  /** From the lease to the end; undefined for a job that never ran. */
  runMs: number | undefined;
  /** The worker's phases and how long each took, when it reported. */
  phases?: ReadonlyArray<{ phase: string; ms: number }>;
}

/** A job taken from the queue: leased (or about to be), possibly asked to stop. */
interface Active {
  lease: SlotLease | undefined;
  /** lease.run() has been called: cancel() must go through lease.cancel(). */
  running: boolean;
  /** DELETE arrived while it was being started or run. */
  cancelRequested: boolean;
}

export class EvalService {
  readonly store: JobStore;
  readonly #submit: SubmitQueue | undefined;
  readonly #take: RunQueue | undefined;
  readonly pool: GpuPool;
  readonly limits: ServiceLimits;
  readonly #bus: ClusterBus | undefined;
  readonly #now: () => number;
  readonly #deadlines: (job: EvalJob, options: ServiceOptions) => Deadlines;
  readonly #retentionMs: number;
  readonly #expiryIntervalMs: number;
  readonly #retentionIntervalMs: number;
  readonly #progressIntervalMs: number;
  readonly #log: ServiceLog;
  readonly problems: ProblemRegistry;
  /** limits.maxDeviceBytes was configured: it applies whatever the GPUs. */
  readonly #deviceCapConfigured: boolean;
  readonly #compileCheck: CompileCheck | undefined;

  #started = false;
  #accepting = true;
  #draining = false;
  readonly #active = new Map<string, Active>();
  /** Every run in flight (a drain waits for their results to be stored). */
  readonly #runs = new Set<Promise<void>>();
  #dispatching = false;
  #dispatchAgain = false;
  /** Per job: the tail of its event writes, so events are stored and sent in the order they happened. */
  readonly #eventTails = new Map<string, Promise<unknown>>();
  readonly #subscribers = new Map<string, Set<(event: JobEvent) => void>>();
  readonly #finishListeners = new Set<(job: FinishedJob) => void>();
  readonly #startListeners = new Set<(job: { id: string; gpu: string; queueWaitMs: number }) => void>();
  /** Submissions in progress per principal + Idempotency-Key: a retry waits for the first instead of racing it. */
  readonly #idempotencyLocks = new Map<string, Promise<unknown>>();
  readonly #timers: NodeJS.Timeout[] = [];
  /** Seconds a run takes, smoothed: what a Retry-After estimate is made of. */
  #runSecondsAverage = 10;

  constructor(config: ServiceConfig) {
    this.#bus = config.bus;
    this.store = config.store;
    this.#submit = config.submitQueue;
    this.#take = config.runQueue;
    if (this.#submit === undefined && this.#take === undefined) {
      throw new TypeError('Expected a submitQueue, a runQueue or both for the service but received neither');
    }
    this.pool = config.pool;
    this.limits = { ...DEFAULT_LIMITS, ...config.limits };
    this.#now = config.now ?? Date.now;
    this.#deadlines = config.deadlines ?? ((job, options) => jobDeadlines(job, options.timeoutSeconds));
    this.#retentionMs = (config.retentionDays ?? 30) * 24 * 3600 * 1000;
    this.#expiryIntervalMs = config.expiryIntervalMs ?? 1000;
    this.#retentionIntervalMs = config.retentionIntervalMs ?? 3600 * 1000;
    this.#progressIntervalMs = config.progressIntervalMs ?? 250;
    this.#log = config.log ?? silentLog;
    this.problems = config.problems ?? ProblemRegistry.empty();
    this.#deviceCapConfigured = config.limits?.maxDeviceBytes !== undefined;
    this.#compileCheck = config.compileCheck;
  }

  /** The queue's submitting side, which every submission and expiry pass needs. */
  #submitting(): SubmitQueue {
    if (this.#submit === undefined) throw new Error('This process only runs jobs: it takes no submissions');
    return this.#submit;
  }

  /** Whether this process takes submissions (an agent does not) and runs jobs on GPUs of its own (an API node not). */
  get sides(): { submits: boolean; runs: boolean } {
    return { submits: this.#submit !== undefined, runs: this.#take !== undefined };
  }

  /** Jobs queued, in all or for one principal. */
  async queued(principal?: string): Promise<number> {
    return this.#submitting().size(principal);
  }

  /** The queue's depth per GPU class, from whichever side this process has (the metrics). */
  async queuedByClass(): Promise<Record<string, number>> {
    return (this.#submit ?? this.#take)!.sizeByClass();
  }

  /** Throws when the queue's backend does not answer (readiness). */
  async pingQueue(): Promise<void> {
    await (this.#submit ?? this.#take)!.ping();
  }

  /** Whether submissions are taken (false once a drain began). */
  get accepting(): boolean {
    return this.#accepting;
  }

  /**
   * Start-up recovery, then scheduling: jobs a dead server left running fail as interrupted; the queue is rebuilt
   * from the store's queued jobs (each keeps its place and its QUEUE_TIMEOUT deadline); timers for queue expiry and
   * retention start. The pool should be started already (its slots announce themselves through onIdle).
   */
  async start(): Promise<void> {
    if (this.#started) return;
    const nowMs = this.#now();
    // Only a process with both sides of the queue (the embedded server) owns every running job and the queue itself;
    // in the distributed mode other hosts run jobs, and the queue outlives every process.
    const submit = this.#submit;
    if (submit !== undefined && this.#take !== undefined) {
      for (const id of await this.store.interruptRunning(nowMs)) {
        const record = await this.store.get(id);
        this.#event(id, 'done', { status: 'failed', verdict: null, error: record?.error ?? null });
      }
      for (const record of await this.store.queued()) {
        if ((await submit.position(record.id)) === undefined) await submit.enqueue(queuedJobOf(record));
      }
    }
    this.#bus?.onEvent(
      (event) => this.#deliver(event),
      (jobId) => this.#subscribers.has(jobId),
    );
    const take = this.#take;
    if (take !== undefined) {
      // Another process's DELETE reaches a running job here.
      if (this.#submit === undefined) this.#bus?.onCancel((id) => this.#cancelLocal(id));
      this.pool.onIdle(() => this.#kick());
      take.onAvailable(() => this.#kick());
    }
    this.#started = true;
    if (this.#submit !== undefined) {
      await this.#expire();
      await this.#sweepRetention();
      this.#every(this.#expiryIntervalMs, () => this.#expire());
      this.#every(this.#retentionIntervalMs, () => this.#sweepRetention());
    }
    this.#kick();
  }

  /**
   * Stops taking work: submissions answer 503 from now on, nothing more is dispatched, and the pool stops (running
   * jobs get `graceMs` to finish, then their children are killed and the jobs fail as interrupted). Queued jobs stay
   * queued in the store for the next start. Resolves when every result is stored.
   */
  async drain(graceMs: number): Promise<void> {
    this.#accepting = false;
    this.#draining = true;
    for (const t of this.#timers.splice(0)) clearInterval(t);
    this.#compileCheck?.stop();
    await this.pool.stop(graceMs);
    while (this.#runs.size > 0) await Promise.allSettled([...this.#runs]);
    await Promise.allSettled([...this.#eventTails.values()]);
  }

  /** Stops the timers without draining (tests; a server that drained has none left). */
  close(): void {
    this.#accepting = false;
    for (const t of this.#timers.splice(0)) clearInterval(t);
    this.#compileCheck?.stop();
  }

  // -------------------------------------------------------------------------------------------------------------
  // Submit

  /**
   * Validates `body` (the request: an EvalJob with the service's fields), admits it and stores it queued.
   *
   * @throws InvalidJobError (400) with every problem; ServiceError: 503 without a GPU (after validation and, with a
   *   compile check, after compiling, so a client without one still learns what is wrong with its job), 400 for a GPU
   *   class no GPU here serves, 422 for an Idempotency-Key reused with another body, 429 / 503 (with Retry-After) at
   *   the queue caps.
   */
  async submit(principal: string, body: Record<string, unknown>, idempotencyKey?: string): Promise<Submission> {
    if (!this.#accepting) {
      throw new ServiceError('SHUTTING_DOWN', 'The server is shutting down and takes no new evaluations', 30);
    }
    const split = splitBody(body);
    const options: ServiceOptions = split.options;
    // A registry problem gives the job its args and reference before anything checks them.
    const { job: rawJob, problem } = this.problems.expand(split.job);
    const referenceModule = problem === undefined ? undefined : this.problems.modulePath(problem);
    if (referenceModule !== undefined) options.referenceModule = referenceModule;
    const problems = admissionProblems(rawJob, this.#admissionLimits());
    if (problems.length > 0) throw new InvalidJobError(problems);
    let job: EvalJob;
    try {
      job = validateJob(rawJob);
    } catch (e) {
      if (e instanceof InvalidJobError) throw e;
      // A validator that throws anything else met a body it did not foresee: still the body's problem, not a 500.
      this.#log.error({ err: e }, 'validateJob threw something other than InvalidJobError');
      const message = `Expected a job cudakit's validateJob can check for job but it failed: ${(e as Error).message}`;
      throw new InvalidJobError([{ path: 'job', message, type: 'TypeError' }]);
    }

    // The pool's view can lag (an API node's registry read): it looks again before it refuses.
    if ((this.pool.unavailableReason !== undefined || !this.pool.serves(options.gpu)) && this.pool.recheck) {
      await this.pool.recheck();
    }
    const reason = this.pool.unavailableReason;
    if (reason !== undefined) {
      // What NVRTC can tell without a GPU, the client learns now: a kernel that does not compile is not worth a retry.
      const deadlines = this.#deadlines(job, options);
      const checked = await this.#compileCheck?.check(job, {
        ...(/^sm_\d+[af]?$/.test(options.gpu) ? { arch: options.gpu } : {}),
        timeoutMs: deadlines.phaseMs.compile ?? deadlines.jobMs,
      });
      if (checked?.kind === 'fails') throw new InvalidJobError(checked.problems);
      const compiles =
        checked?.kind === 'compiles'
          ? ` (the job compiles${checked.arch === undefined ? '' : ` for ${checked.arch}`})`
          : '';
      const message = `No GPU to run evaluations on: ${reason}${compiles}`;
      throw new ServiceError('NO_GPU', message, this.pool.unavailableRetryAfterSeconds);
    }
    if (!this.pool.serves(options.gpu)) {
      const known = new Set(this.pool.slots().flatMap((s) => s.classes));
      if (!known.has(options.gpu)) {
        const classes = [...known].sort().join(', ');
        throw new ServiceError('UNKNOWN_GPU_CLASS', `No GPU here is of class '${options.gpu}' (classes: ${classes})`);
      }
      const message = `Every GPU of class '${options.gpu}' is out of service (quarantined)`;
      throw new ServiceError('NO_GPU_OF_CLASS', message, 60);
    }

    const bodyHash = hashOf({ job, options });
    if (idempotencyKey === undefined) return this.#admit(principal, job, options, bodyHash, undefined);
    // One submission per principal + key at a time: a retry racing its original gets the original's job.
    const lockKey = `${principal}\0${idempotencyKey}`;
    while (this.#idempotencyLocks.has(lockKey)) await this.#idempotencyLocks.get(lockKey)!.catch(() => {});
    const attempt = (async () => {
      const notBeforeMs = this.#now() - IDEMPOTENCY_TTL_MS;
      const existing = await this.store.findByIdempotencyKey(principal, idempotencyKey, notBeforeMs);
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

  async #admit(
    principal: string,
    job: EvalJob,
    options: ServiceOptions,
    bodyHash: string,
    idempotencyKey: string | undefined,
  ): Promise<Submission> {
    const queue = this.#submitting();
    const mine = await queue.size(principal);
    if (mine >= this.limits.maxQueuedPerPrincipal) {
      const message =
        `${mine} evaluations of yours are queued, the most one client may have: ` +
        'wait for some to start, or cancel some';
      throw new ServiceError('QUEUE_FULL_FOR_PRINCIPAL', message, this.#retryAfterSeconds(mine));
    }
    const all = await queue.size();
    if (all >= this.limits.maxQueued) {
      const message = `The queue is full (${all} evaluations): try again later`;
      throw new ServiceError('QUEUE_FULL', message, this.#retryAfterSeconds(all));
    }
    const nowMs = this.#now();
    const record: JobRecord = {
      id: newJobId(nowMs),
      principal,
      status: 'queued',
      verdict: undefined,
      phase: undefined,
      job,
      options,
      idempotencyKey,
      bodyHash,
      createdAt: nowMs,
      startedAt: undefined,
      finishedAt: undefined,
      gpuUuid: undefined,
      report: undefined,
      error: undefined,
    };
    await this.store.insert(record);
    const queued = queuedJobOf(record);
    // Where agents take jobs the moment they are queued, the 'queued' event is stored first: an agent's 'started'
    // must never come before it in the job's events.
    const arrival = await queue.arrivalPosition(queued);
    if (arrival !== undefined) await this.#event(record.id, 'queued', { position: arrival });
    await queue.enqueue(queued);
    const info = await this.queueInfo(record);
    if (arrival === undefined) void this.#event(record.id, 'queued', { position: info.position });
    this.#kick();
    return { record, replayed: false, queue: info };
  }

  /**
   * The configured device-bytes cap, else a quarter of the smallest GPU's memory in the pool, else the default; the
   * launch limits of the smallest GPU in the pool (an API node's: the agents' GPUs), else CUDA's own.
   */
  #admissionLimits(): AdmissionLimits {
    const slots = this.pool.slots();
    const launch = gpuLaunchLimits(slots);
    if (this.#deviceCapConfigured) {
      return {
        maxDeviceBytes: this.limits.maxDeviceBytes,
        maxDeviceBytesReason: 'the limit configured for this server',
        launch,
      };
    }
    return { ...(gpuAdmissionLimits(slots) ?? this.limits), launch };
  }

  /** An estimate of when a place frees up: the jobs in front, over the GPUs, at the average run time. */
  #retryAfterSeconds(jobsAhead: number): number {
    const gpus = Math.max(1, this.pool.slots().filter((s) => s.state !== 'quarantined').length);
    return Math.min(600, Math.max(1, Math.ceil((this.#runSecondsAverage * Math.max(1, jobsAhead)) / gpus)));
  }

  // -------------------------------------------------------------------------------------------------------------
  // Reading

  get(id: string): Promise<JobRecord | undefined> {
    return this.store.get(id);
  }

  /** Where a job stands in the queue, among the GPUs of its class (only counts: nothing of other clients' jobs). */
  async queueInfo(record: JobRecord): Promise<QueueInfo> {
    const position = record.status === 'queued' ? ((await this.#submit?.position(record.id)) ?? 0) : 0;
    const slots = this.pool.slots().filter((s) => s.classes.includes(record.options.gpu) && s.state !== 'quarantined');
    return {
      position,
      ahead: Math.max(0, position - 1),
      running: slots.filter((s) => s.state === 'busy').length,
      gpus: slots.length,
    };
  }

  slots(): SlotInfo[] {
    return this.pool.slots();
  }

  /** Probes a quarantined GPU again (the admin route); undefined for a GPU the pool does not have. */
  reprobe(uuid: string): Promise<SlotInfo | undefined> {
    return this.pool.reprobe(uuid);
  }

  /**
   * Resolves when the job is finished (or gone), or after `timeoutMs`, or when `signal` aborts: the long-poll. The
   * caller reads the record afterwards.
   */
  async waitForEnd(id: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    await new Promise<void>((resolve) => {
      let settled = false;
      const done = (): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        unsubscribe();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      const unsubscribe = this.subscribe(id, (e) => {
        if (e.type === 'done') done();
      });
      signal?.addEventListener('abort', done);
      // Subscribed first, then checked: an end between the two cannot be missed.
      this.store.get(id).then(
        (r) => {
          if (r === undefined || TERMINAL.has(r.status)) done();
        },
        () => done(),
      );
    });
  }

  /** Live events of a job, as they are stored. Returns the unsubscribe function. */
  subscribe(id: string, listener: (event: JobEvent) => void): () => void {
    let set = this.#subscribers.get(id);
    if (set === undefined) this.#subscribers.set(id, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#subscribers.get(id) === set) this.#subscribers.delete(id);
    };
  }

  onFinished(listener: (job: FinishedJob) => void): void {
    this.#finishListeners.add(listener);
  }

  onStarted(listener: (job: { id: string; gpu: string; queueWaitMs: number }) => void): void {
    this.#startListeners.add(listener);
  }

  // -------------------------------------------------------------------------------------------------------------
  // Cancel and purge

  /**
   * Cancels a job: a queued one at once ('cancelled'), a running one by killing its child ('cancelling'; the run
   * then ends as cancelled). 'finished' when it already ended; undefined when there is no such job.
   */
  async cancel(id: string): Promise<'cancelled' | 'cancelling' | 'finished' | undefined> {
    const record = await this.store.get(id);
    if (record === undefined) return undefined;
    if (TERMINAL.has(record.status)) return 'finished';
    if (this.#cancelLocal(id)) return 'cancelling';
    // Queued (or queued in the store only, between a restart and the rebuild): it never ran. Only a job still
    // queued in the store is cancelled here: another process may have started it since it was read.
    await this.#submit?.remove(id); // an agent holds no queued job: it cancels only what it took
    const finished = await this.#finish(id, record.options.gpu, undefined, {
      status: 'cancelled',
      verdict: undefined,
      phase: undefined,
      report: undefined,
      error: undefined,
      atMs: this.#now(),
      onlyIfQueued: true,
    });
    if (finished) return 'cancelled';
    const now = await this.store.get(id);
    if (now === undefined || TERMINAL.has(now.status)) return 'finished';
    // Running on another host: the agent holding it kills its child, and the run ends as cancelled.
    if (this.#bus === undefined) return 'finished';
    await this.#bus.requestCancel(id);
    return 'cancelling';
  }

  /** Asks this process's run of a job to stop; false when this process is not running it. */
  #cancelLocal(id: string): boolean {
    const active = this.#active.get(id);
    if (active === undefined) return false;
    active.cancelRequested = true;
    if (active.running) active.lease?.cancel();
    return true;
  }

  /** Deletes a finished job and its events; false when it is not finished. */
  async purge(id: string): Promise<boolean> {
    await this.#eventTails.get(id)?.catch(() => {});
    return this.store.purge(id);
  }

  // -------------------------------------------------------------------------------------------------------------
  // Dispatch

  /** Schedules a dispatch pass (coalesced: many kicks in one tick make one pass). */
  #kick(): void {
    if (this.#dispatching) {
      this.#dispatchAgain = true; // a pass is under way: run another after it
      return;
    }
    this.#dispatching = true;
    queueMicrotask(() => {
      this.#dispatch()
        .catch((e: unknown) => this.#log.error({ err: e }, 'dispatch failed'))
        .finally(() => {
          this.#dispatching = false;
          if (this.#dispatchAgain) {
            this.#dispatchAgain = false;
            this.#kick();
          }
        });
    });
  }

  /**
   * Leases idle slots to queued jobs until no idle slot has a job it may run. One pass at a time, so no two
   * passes lease for one job; the job is read from the store before its lease (a lease cannot be given back).
   */
  async #dispatch(): Promise<void> {
    // Slots tried since the last lease: one whose lease keeps failing cannot spin the loop.
    const tried = new Set<string>();
    for (;;) {
      const take = this.#take;
      if (!this.#started || this.#draining || take === undefined) return;
      const slot = this.pool.slots().find((s) => s.state === 'idle' && !tried.has(s.uuid));
      if (slot === undefined) return;
      tried.add(slot.uuid);
      const next = await take.take(slot.classes);
      if (next !== undefined && (await this.#startJob(take, next))) tried.clear();
    }
  }

  /** Leases a slot to a job taken from the queue and starts its run; false when nothing was leased. */
  async #startJob(take: RunQueue, next: QueuedJob): Promise<boolean> {
    const active: Active = { lease: undefined, running: false, cancelRequested: false };
    this.#active.set(next.id, active);
    let record: JobRecord | undefined;
    try {
      record = await this.store.get(next.id);
    } catch (e) {
      this.#active.delete(next.id);
      await take.putBack(next);
      throw e;
    }
    // A queue that redelivers hands out a job another host was running, when that host died.
    const runnable = record?.status === 'queued' || (take.redelivers && record?.status === 'running');
    if (record === undefined || !runnable) {
      this.#active.delete(next.id);
      await take.settle(next.id);
      return false;
    }
    if (active.cancelRequested || this.#draining) {
      this.#active.delete(next.id);
      if (this.#draining) await take.putBack(next);
      else {
        await this.cancel(next.id);
        await take.settle(next.id);
      }
      return false;
    }
    if (record.status === 'queued' && next.expiresAtMs <= this.#now()) {
      // Taken after its deadline, before an expiry pass saw it.
      this.#active.delete(next.id);
      await this.#finish(next.id, next.gpu, undefined, { ...queueTimeoutOutcome(next), atMs: this.#now() });
      await take.settle(next.id);
      return false;
    }
    const lease = this.pool.lease(next.gpu);
    if (lease === undefined) {
      // The slot went away between the listing and the lease (a crash, a quarantine): the job keeps its place.
      this.#active.delete(next.id);
      await take.putBack(next);
      return false;
    }
    active.lease = lease;
    const run = this.#run(take, record, lease, active)
      .catch((e: unknown) => this.#log.error({ err: e, id: next.id }, 'run failed'))
      .then(() => take.settle(next.id))
      .catch((e: unknown) => this.#log.error({ err: e, id: next.id }, 'the queue could not settle the job'))
      .finally(() => {
        this.#active.delete(next.id);
        this.#runs.delete(run);
        this.#kick();
      });
    this.#runs.add(run);
    return true;
  }

  async #run(take: RunQueue, record: JobRecord, lease: SlotLease, active: Active): Promise<void> {
    const { id } = record;
    const startedAtMs = this.#now();
    let marked = false;
    try {
      const takeOver = take.redelivers;
      marked = await this.store.markRunning(id, lease.info.uuid, startedAtMs, { takeOver });
    } catch (e) {
      this.#log.error({ err: e, id }, 'could not mark the job running: it goes back to the queue');
      await take.putBack(queuedJobOf(record));
    }
    if (marked) {
      // Stored before the worker starts: an agent killed the moment its worker has the job still leaves this start
      // in the job's history, beside the start of the agent that takes the job over.
      await this.#event(id, 'started', {
        gpu: { uuid: lease.info.uuid, name: lease.info.name, arch: lease.info.arch },
      });
      const queueWaitMs = startedAtMs - record.createdAt;
      for (const l of this.#startListeners) l({ id, gpu: record.options.gpu, queueWaitMs });
    }
    let lastProgressMs = 0;
    const hooks = {
      onPhase: (phase: EvalPhase | 'profile') => {
        if (!marked) return;
        this.#after(id, () => this.store.setPhase(id, phase));
        this.#event(id, 'phase', { phase });
      },
      onProgress: (progress: EvalProgress) => {
        if (!marked || progress.kind === 'phase') return; // phases come through onPhase
        const nowMs = this.#now();
        if (progress.kind === 'samples' && nowMs - lastProgressMs < this.#progressIntervalMs) return;
        lastProgressMs = nowMs;
        this.#event(id, 'progress', progress);
      },
    };
    const salt = randomBytes(16).toString('hex');
    const { deviceMetrics, referenceModule } = record.options;
    const extras = { deviceMetrics, ...(referenceModule === undefined ? {} : { referenceModule }) };
    const deadlines = this.#deadlines(record.job, record.options);
    const outcomePromise = lease.run(id, record.job, salt, deadlines, hooks, extras);
    active.running = true;
    // A DELETE while it was starting, or a store that no longer has it queued: the slot is leased, so the job runs
    // and is stopped at once (a lease has no other way back).
    if (active.cancelRequested || !marked) lease.cancel();
    const outcome = await outcomePromise;
    if (!marked) return;
    const endMs = this.#now();
    const runMs = endMs - startedAtMs;
    this.#runSecondsAverage = 0.8 * this.#runSecondsAverage + 0.2 * (runMs / 1000);
    const device = outcome.kind === 'report' ? outcome.device : undefined;
    const result = resultOf(outcome, {
      job: record.job,
      device: { name: device?.name ?? lease.info.name, arch: device?.arch ?? lease.info.arch },
      cancelRequested: active.cancelRequested,
      draining: this.#draining,
    });
    const phases = outcome.kind === 'report' ? outcome.report.phases : undefined;
    await this.#finish(id, record.options.gpu, runMs, { ...result, atMs: endMs }, phases);
  }

  /** Stores a job's end (once: a second finish of a job changes nothing) and sends its 'done' event. */
  async #finish(
    id: string,
    gpu: string,
    runMs: number | undefined,
    outcome: FinishOutcome,
    phases?: FinishedJob['phases'],
  ): Promise<boolean> {
    await this.#eventTails.get(id)?.catch(() => {}); // its phase writes first
    const finished = await this.store.finish(id, outcome);
    if (!finished) return false;
    const { status, verdict } = outcome;
    this.#event(id, 'done', { status, verdict: verdict ?? null, error: outcome.error ?? null });
    for (const l of this.#finishListeners)
      l({ id, status, verdict, gpu, runMs, ...(phases === undefined ? {} : { phases }) });
    return true;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Events, timers

  /** Runs `write` after the job's earlier writes (errors are logged: an event lost is not a job lost). */
  #after(id: string, write: () => Promise<unknown>): Promise<unknown> {
    const tail = (this.#eventTails.get(id) ?? Promise.resolve())
      .then(write)
      .catch((e: unknown) => this.#log.warn({ err: e, id }, 'event write failed'));
    this.#eventTails.set(id, tail);
    void tail.finally(() => {
      if (this.#eventTails.get(id) === tail) this.#eventTails.delete(id);
    });
    return tail;
  }

  /** Stores and delivers an event after the job's earlier ones; resolves once it is stored (or its write failed). */
  #event(id: string, type: JobEvent['type'], data: unknown): Promise<unknown> {
    return this.#after(id, async () => {
      const event = await this.store.appendEvent({ jobId: id, type, data, atMs: this.#now() });
      this.#deliver(event);
      this.#bus?.publishEvent(event);
    });
  }

  /** Hands a stored event to this process's subscribers (its own, or another process's through the bus). */
  #deliver(event: JobEvent): void {
    for (const l of this.#subscribers.get(event.jobId) ?? []) {
      try {
        l(event);
      } catch (e) {
        this.#log.warn({ err: e, id: event.jobId }, 'event listener failed');
      }
    }
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
    const queue = this.#submitting();
    for (const q of await queue.expire(nowMs)) {
      await this.#finish(q.id, q.gpu, undefined, { ...queueTimeoutOutcome(q), atMs: nowMs });
    }
    for (const lost of await queue.lost(nowMs)) {
      const error = lost.error;
      const outcome = { status: 'failed', verdict: undefined, phase: undefined, report: undefined, error } as const;
      if (await this.#finish(lost.id, lost.gpu, undefined, { ...outcome, atMs: nowMs })) {
        this.#log.warn({ id: lost.id, error }, 'the queue lost a running job: it failed');
      }
    }
  }

  async #sweepRetention(): Promise<void> {
    const deleted = await this.store.deleteFinishedBefore(this.#now() - this.#retentionMs);
    if (deleted > 0) this.#log.info({ deleted }, 'retention: deleted finished evaluations');
  }
}
