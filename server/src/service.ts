// SPDX-License-Identifier: MIT
// The scheduler's face: the one place that wires the store (system of record), the queue (who runs next) and the GPU
// pool (who runs it). The queue has two sides, as BullMQ's Queue and Worker, and so has the service: the submitting
// side (submit/submitter.ts: submit() validates, admits and persists a job before the client gets its 202; queue
// expiry and retention) and the running side (schedule/dispatcher.ts: a dispatch loop leases idle slots to queued jobs;
// each run's SlotOutcome becomes a status and a verdict, stored once, and a 'done' event); both write a job's events
// through schedule/job-events.ts. Cancel, start-up recovery and a drain on shutdown, which take both, are here. Nothing
// in this process loads the CUDA addon: cudakit's validateJob and formatJson are pure JavaScript, and the GPUs are the
// pool's children's.
//
// The embedded server has both sides in one process (ServiceConfig.submitQueue and runQueue); in the distributed
// mode an API node has the submitting side (it submits, reads, cancels and expires; its pool is a view of the agents'
// GPUs) and an agent the running side (its GPUs' slots take jobs from the shared queue). What a process does follows
// from the sides it has; only main.ts knows the mode. Events and cancels cross processes through the cluster bus.
import type { EvalJob } from 'cudakit';
import { jobDeadlines } from './run/deadlines.js';
import type { GpuPool, SlotInfo } from './run/pool.js';
import type { Deadlines } from './run/protocol.js';
import { DEFAULT_RUN_SECONDS, Dispatcher } from './schedule/dispatcher.js';
import { type FinishedJob, JobEvents, type ServiceLog, type StartedJob, silentLog } from './schedule/job-events.js';
import type { JobBus, QueueConnection, RunQueue, SubmitQueue } from './schedule/queue.js';
import { ServiceError } from './errors.js';
import { TERMINAL, type JobEvent, type JobRecord, type JobStore, type ServiceOptions } from './store/store.js';
import { ProblemRegistry } from './submit/problems.js';
import {
  DEFAULT_LIMITS,
  type CompileCheck,
  type QueueInfo,
  type Reverify,
  type ServiceLimits,
  type Submission,
  Submitter,
  queueInfoOf,
} from './submit/submitter.js';

export type { FinishedJob, ServiceLog } from './schedule/job-events.js';
export {
  DEFAULT_LIMITS,
  IDEMPOTENCY_TTL_MS,
  type CompileCheck,
  type QueueInfo,
  type Reverify,
  type ServiceLimits,
  type Submission,
} from './submit/submitter.js';

export interface ServiceConfig {
  /** Events and cancels between the processes of the distributed mode (API nodes and agents). */
  bus?: JobBus;
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
  /** How often provisional leaderboard entries get their confirmation re-runs queued. Default 30000. */
  confirmIntervalMs?: number;
  /** Progress events of one job closer together than this are dropped (the last is kept by the next). Default 250. */
  progressIntervalMs?: number;
  log?: ServiceLog;
  /**
   * Where no GPU can take a job, whether it compiles (run/compile-check.ts: in a contained child, never here): a job
   * that does not is a 400 rather than a 503. Default none: every such job is a 503.
   */
  compileCheck?: CompileCheck;
}

export class EvalService {
  readonly store: JobStore;
  readonly pool: GpuPool;
  readonly limits: ServiceLimits;
  readonly problems: ProblemRegistry;
  readonly #bus: JobBus | undefined;
  readonly #now: () => number;
  readonly #compileCheck: CompileCheck | undefined;
  readonly #events: JobEvents;
  /** The submitting side; absent on an agent. */
  readonly #submitter: Submitter | undefined;
  /** The running side; absent on an API node. */
  readonly #dispatcher: Dispatcher | undefined;
  /** Whichever side of the queue this process has (the submitting side where it has both): depth, health. */
  readonly #queue: QueueConnection;

  #started = false;
  #accepting = true;

  constructor(config: ServiceConfig) {
    const { submitQueue, runQueue } = config;
    if (submitQueue === undefined && runQueue === undefined) {
      throw new TypeError('Expected a submitQueue, a runQueue or both for the service but received neither');
    }
    this.#bus = config.bus;
    this.store = config.store;
    this.pool = config.pool;
    this.limits = { ...DEFAULT_LIMITS, ...config.limits };
    this.problems = config.problems ?? ProblemRegistry.empty();
    this.#now = config.now ?? Date.now;
    this.#compileCheck = config.compileCheck;
    const deadlines =
      config.deadlines ??
      ((job, options) => jobDeadlines(job, options.timeoutSeconds, { python: options.python !== undefined }));
    const log = config.log ?? silentLog;
    const shared = { store: this.store, pool: this.pool, now: this.#now, log, deadlines };
    this.#events = new JobEvents({ store: this.store, bus: this.#bus, now: this.#now, log });
    this.#dispatcher =
      runQueue === undefined
        ? undefined
        : new Dispatcher({
            ...shared,
            queue: runQueue,
            events: this.#events,
            progressIntervalMs: config.progressIntervalMs ?? 250,
            cancel: (id) => this.cancel(id),
            problem: (name) => this.problems.withCases(name),
          });
    this.#submitter =
      submitQueue === undefined
        ? undefined
        : new Submitter({
            ...shared,
            queue: submitQueue,
            events: this.#events,
            limits: this.limits,
            deviceCapConfigured: config.limits?.maxDeviceBytes !== undefined,
            problems: this.problems,
            compileCheck: config.compileCheck,
            runSeconds: () => this.#dispatcher?.runSecondsAverage ?? DEFAULT_RUN_SECONDS,
            onQueued: () => this.#dispatcher?.kick(),
            retentionMs: (config.retentionDays ?? 30) * 24 * 3600 * 1000,
            expiryIntervalMs: config.expiryIntervalMs ?? 1000,
            retentionIntervalMs: config.retentionIntervalMs ?? 3600 * 1000,
            confirmIntervalMs: config.confirmIntervalMs ?? 30_000,
          });
    this.#queue = (submitQueue ?? runQueue)!;
  }

  /** The queue's submitting side, which every submission needs. */
  #submitting(): Submitter {
    if (this.#submitter === undefined) throw new Error('This process only runs jobs: it takes no submissions');
    return this.#submitter;
  }

  /** Whether this process takes submissions (an agent does not) and runs jobs on GPUs of its own (an API node not). */
  get sides(): { submits: boolean; runs: boolean } {
    return { submits: this.#submitter !== undefined, runs: this.#dispatcher !== undefined };
  }

  /** Jobs queued, in all or for one principal. */
  async queued(principal?: string): Promise<number> {
    return this.#submitting().size(principal);
  }

  /** The queue's depth per GPU class, from whichever side this process has (the metrics). */
  async queuedByClass(): Promise<Record<string, number>> {
    return this.#queue.sizeByClass();
  }

  /** Throws when the queue's backend does not answer (readiness). */
  async pingQueue(): Promise<void> {
    await this.#queue.ping();
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
    const submitter = this.#submitter;
    const dispatcher = this.#dispatcher;
    if (submitter !== undefined && dispatcher !== undefined) {
      for (const id of await this.store.interruptRunning(nowMs)) {
        const record = await this.store.get(id);
        void this.#events.event(id, 'done', { status: 'failed', verdict: null, error: record?.error ?? null });
      }
      await submitter.requeue(await this.store.queued());
    }
    this.#bus?.onEvent(
      (event) => this.#events.deliver(event),
      (jobId) => this.#events.watched(jobId),
    );
    if (dispatcher !== undefined) {
      // Another process's DELETE reaches a running job here.
      if (submitter === undefined) this.#bus?.onCancel((id) => dispatcher.cancelLocal(id));
      dispatcher.start();
    }
    this.#started = true;
    await submitter?.start();
    dispatcher?.kick();
  }

  /**
   * Stops taking work: submissions answer 503 from now on, nothing more is dispatched, and the pool stops (running
   * jobs get `graceMs` to finish, then their children are killed and the jobs fail as interrupted). Queued jobs stay
   * queued in the store for the next start. Resolves when every result is stored.
   */
  async drain(graceMs: number): Promise<void> {
    this.#accepting = false;
    this.#dispatcher?.stop();
    this.#submitter?.close();
    this.#compileCheck?.stop();
    await this.pool.stop(graceMs);
    await this.#dispatcher?.settled();
    await this.#events.allWritten();
  }

  /** Stops the timers without draining (tests; a server that drained has none left). */
  close(): void {
    this.#accepting = false;
    this.#submitter?.close();
    this.#compileCheck?.stop();
  }

  /**
   * Validates `body` (the request: an EvalJob with the service's fields), admits it and stores it queued.
   *
   * @throws InvalidJobError (400) with every problem; ServiceError: 503 without a GPU (after validation and, with a
   *   compile check, after compiling, so a client without one still learns what is wrong with its job), 400 for a GPU
   *   class no GPU here serves, 422 for an Idempotency-Key reused with another body, 429 / 503 (with Retry-After) at
   *   the queue caps.
   */
  async submit(
    principal: string,
    body: Record<string, unknown>,
    idempotencyKey?: string,
    internal?: Pick<ServiceOptions, 'python'>,
  ): Promise<Submission> {
    if (!this.#accepting) {
      throw new ServiceError('SHUTTING_DOWN', 'The server is shutting down and takes no new evaluations', 30);
    }
    return this.#submitting().submit(principal, body, idempotencyKey, internal);
  }

  /**
   * An admin's re-verify of a leaderboard entry: queues a re-run of its job, whose result confirms the entry or sets
   * it provisional again (submit/confirmations.ts); or why there is none.
   */
  async reverify(problem: string, gpuClass: string, who: string): Promise<Reverify> {
    if (!this.#accepting) {
      throw new ServiceError('SHUTTING_DOWN', 'The server is shutting down and takes no new evaluations', 30);
    }
    return this.#submitting().reverify(problem, gpuClass, who);
  }

  /** Queues the confirmation re-runs the provisional leaderboard entries are owed (the sweep, also on a timer). */
  async sweepConfirmations(): Promise<string[]> {
    return this.#submitting().sweepConfirmations();
  }

  get(id: string): Promise<JobRecord | undefined> {
    return this.store.get(id);
  }

  /** Where a job stands in the queue, among the GPUs of its class (only counts: nothing of other clients' jobs). */
  async queueInfo(record: JobRecord): Promise<QueueInfo> {
    return this.#submitter?.queueInfo(record) ?? queueInfoOf(this.pool, record, 0);
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
  waitForEnd(id: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.#events.waitForEnd(id, timeoutMs, signal);
  }

  /** Live events of a job, as they are stored. Returns the unsubscribe function. */
  subscribe(id: string, listener: (event: JobEvent) => void): () => void {
    return this.#events.subscribe(id, listener);
  }

  onFinished(listener: (job: FinishedJob) => void): void {
    this.#events.onFinished(listener);
  }

  onStarted(listener: (job: StartedJob) => void): void {
    this.#events.onStarted(listener);
  }

  /**
   * Cancels a job: a queued one at once ('cancelled'), a running one by killing its child ('cancelling'; the run
   * then ends as cancelled). 'finished' when it already ended; undefined when there is no such job.
   */
  async cancel(id: string): Promise<'cancelled' | 'cancelling' | 'finished' | undefined> {
    const record = await this.store.get(id);
    if (record === undefined) return undefined;
    if (TERMINAL.has(record.status)) return 'finished';
    if (this.#dispatcher?.cancelLocal(id) === true) return 'cancelling';
    // Queued (or queued in the store only, between a restart and the rebuild): it never ran. Only a job still
    // queued in the store is cancelled here: another process may have started it since it was read.
    await this.#submitter?.remove(id); // an agent holds no queued job: it cancels only what it took
    const finished = await this.#events.finish(id, record.options.gpu, undefined, {
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

  /** Deletes a finished job and its events; false when it is not finished. */
  async purge(id: string): Promise<boolean> {
    await this.#events.written(id);
    return this.store.purge(id);
  }
}
