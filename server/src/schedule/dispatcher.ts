// SPDX-License-Identifier: MIT
// The queue's running side: a dispatch loop leases this process's idle slots to jobs taken from the RunQueue whenever
// a slot turns idle or a job arrives; each run's SlotOutcome becomes a status and a verdict (judge/outcome.ts), stored
// once, and a 'done' event. Phases and progress of a run are its events; a drain lets the runs in flight end. A
// submission to a problem with cases runs with the problem from this process's registry, and its events say nothing
// of a hidden case but that it started (judge/problem-report.ts).
import { createHash, randomBytes } from 'node:crypto';
import type { EvalJob, EvalPhase, EvalProblem, EvalTimingOptions, ProblemSubmission } from 'cudakit';
import { queueTimeoutOutcome, resultOf } from '../judge/outcome.js';
import { type ProblemEventFilter, problemEventFilter } from '../judge/problem-report.js';
import type { GpuPool, SlotLease } from '../run/pool.js';
import type { Deadlines, JobExtras, PythonJob, RunJob, RunProgress } from '../run/protocol.js';
import { type JobRecord, type JobStore, type ServiceOptions, isProblemJob } from '../store/store.js';
import type { JobEvents, ServiceLog } from './job-events.js';
import { type QueuedJob, type RunQueue, queuedJobOf } from './queue.js';
import { withServiceTiming } from './service-timing.js';

/** Seconds a run is taken to last before any has been timed. */
export const DEFAULT_RUN_SECONDS = 10;

export interface DispatcherConfig {
  /** The queue's running side: the jobs this process's GPUs take. */
  queue: RunQueue;
  pool: GpuPool;
  store: JobStore;
  events: JobEvents;
  /** The per-phase limits a run gets. */
  deadlines: (job: EvalJob, options: ServiceOptions) => Deadlines;
  /** Progress events of one job closer together than this are dropped (the last is kept by the next). */
  progressIntervalMs: number;
  /** Cancels a job taken while a DELETE for it was arriving (the service's cancel). */
  cancel: (id: string) => Promise<unknown>;
  /** The problem with cases of that name, from this process's registry (its sources read in); undefined: none. */
  problem: (name: string) => EvalProblem | undefined;
  now: () => number;
  log: ServiceLog;
}

/** A job taken from the queue: leased (or about to be), possibly asked to stop. */
interface Active {
  lease: SlotLease | undefined;
  /** lease.run() has been called: cancel() must go through lease.cancel(). */
  running: boolean;
  /** DELETE arrived while it was being started or run. */
  cancelRequested: boolean;
}

export class Dispatcher {
  readonly #take: RunQueue;
  readonly #pool: GpuPool;
  readonly #store: JobStore;
  readonly #events: JobEvents;
  readonly #deadlines: (job: EvalJob, options: ServiceOptions) => Deadlines;
  readonly #progressIntervalMs: number;
  readonly #cancel: (id: string) => Promise<unknown>;
  readonly #problem: (name: string) => EvalProblem | undefined;
  readonly #now: () => number;
  readonly #log: ServiceLog;

  #started = false;
  #draining = false;
  readonly #active = new Map<string, Active>();
  /** Every run in flight (a drain waits for their results to be stored). */
  readonly #runs = new Set<Promise<void>>();
  #dispatching = false;
  #dispatchAgain = false;
  /** Seconds a run takes, smoothed: what a Retry-After estimate is made of. */
  #runSecondsAverage = DEFAULT_RUN_SECONDS;

  constructor(config: DispatcherConfig) {
    this.#take = config.queue;
    this.#pool = config.pool;
    this.#store = config.store;
    this.#events = config.events;
    this.#deadlines = config.deadlines;
    this.#progressIntervalMs = config.progressIntervalMs;
    this.#cancel = config.cancel;
    this.#problem = config.problem;
    this.#now = config.now;
    this.#log = config.log;
  }

  /** Seconds a run takes, smoothed. */
  get runSecondsAverage(): number {
    return this.#runSecondsAverage;
  }

  /** Dispatches from now on: whenever a slot turns idle or the queue has a job (the pass itself is kick()'s). */
  start(): void {
    this.#pool.onIdle(() => this.kick());
    this.#take.onAvailable(() => this.kick());
    this.#started = true;
  }

  /** Nothing more is dispatched; a run that ends from now on ends as interrupted by the drain. */
  stop(): void {
    this.#draining = true;
  }

  /** Resolves when every run in flight has its result stored. */
  async settled(): Promise<void> {
    while (this.#runs.size > 0) await Promise.allSettled([...this.#runs]);
  }

  /** Asks this process's run of a job to stop; false when this process is not running it. */
  cancelLocal(id: string): boolean {
    const active = this.#active.get(id);
    if (active === undefined) return false;
    active.cancelRequested = true;
    if (active.running) active.lease?.cancel();
    return true;
  }

  /** Schedules a dispatch pass (coalesced: many kicks in one tick make one pass). */
  kick(): void {
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
            this.kick();
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
      if (!this.#started || this.#draining) return;
      const slot = this.#pool.slots().find((s) => s.state === 'idle' && !tried.has(s.uuid));
      if (slot === undefined) return;
      tried.add(slot.uuid);
      const next = await this.#take.take(slot.classes);
      if (next !== undefined && (await this.#startJob(next))) tried.clear();
    }
  }

  /** Leases a slot to a job taken from the queue and starts its run; false when nothing was leased. */
  async #startJob(next: QueuedJob): Promise<boolean> {
    const take = this.#take;
    const active: Active = { lease: undefined, running: false, cancelRequested: false };
    this.#active.set(next.id, active);
    let record: JobRecord | undefined;
    try {
      record = await this.#store.get(next.id);
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
        await this.#cancel(next.id);
        await take.settle(next.id);
      }
      return false;
    }
    if (isProblemJob(record.job) && this.#problem(record.job.problem) === undefined) {
      // Queued by a process whose registry has the problem; this one's has not (another --problems-dir).
      this.#active.delete(next.id);
      const message = `The problem '${record.job.problem}' is not installed where the job was to run`;
      const error = { code: 'PROBLEM_NOT_INSTALLED', message };
      const outcome = { status: 'failed', verdict: undefined, phase: undefined, report: undefined, error } as const;
      await this.#events.finish(next.id, next.gpu, undefined, { ...outcome, atMs: this.#now() });
      await take.settle(next.id);
      return false;
    }
    if (record.status === 'queued' && next.expiresAtMs <= this.#now()) {
      // Taken after its deadline, before an expiry pass saw it.
      this.#active.delete(next.id);
      await this.#events.finish(next.id, next.gpu, undefined, { ...queueTimeoutOutcome(next), atMs: this.#now() });
      await take.settle(next.id);
      return false;
    }
    const lease = this.#pool.lease(next.gpu);
    if (lease === undefined) {
      // The slot went away between the listing and the lease (a crash, a quarantine): the job keeps its place.
      this.#active.delete(next.id);
      await take.putBack(next);
      return false;
    }
    active.lease = lease;
    const run = this.#run(record, lease, active)
      .catch((e: unknown) => this.#log.error({ err: e, id: next.id }, 'run failed'))
      .then(() => take.settle(next.id))
      .catch((e: unknown) => this.#log.error({ err: e, id: next.id }, 'the queue could not settle the job'))
      .finally(() => {
        this.#active.delete(next.id);
        this.#runs.delete(run);
        this.kick();
      });
    this.#runs.add(run);
    return true;
  }

  async #run(record: JobRecord, lease: SlotLease, active: Active): Promise<void> {
    const take = this.#take;
    const events = this.#events;
    const { id } = record;
    const startedAtMs = this.#now();
    let marked = false;
    try {
      const takeOver = take.redelivers;
      marked = await this.#store.markRunning(id, lease.info.uuid, startedAtMs, { takeOver });
    } catch (e) {
      this.#log.error({ err: e, id }, 'could not mark the job running: it goes back to the queue');
      await take.putBack(queuedJobOf(record));
    }
    if (marked) {
      // Stored before the worker starts: an agent killed the moment its worker has the job still leaves this start
      // in the job's history, beside the start of the agent that takes the job over.
      await events.event(id, 'started', {
        gpu: { uuid: lease.info.uuid, name: lease.info.name, arch: lease.info.arch },
      });
      events.started({ id, gpu: record.options.gpu, queueWaitMs: startedAtMs - record.createdAt });
    }
    const { deviceMetrics, referenceModule, python } = record.options;
    const extras: JobExtras = {
      deviceMetrics,
      ...(referenceModule === undefined ? {} : { referenceModule }),
      // Made by compat/python-jobs.ts as a PythonJob; the store keeps it as plain data.
      ...(python === undefined ? {} : { python: python as unknown as PythonJob, buildScope: buildScopeOf(record) }),
    };
    const run = this.#runOf(record);
    if (run.problem !== undefined) extras.problem = run.problem;
    let lastProgressMs = 0;
    const hooks = {
      onPhase: (phase: EvalPhase | 'profile') => {
        if (!marked || run.filter?.showsPhase() === false) return;
        void events.after(id, () => this.#store.setPhase(id, phase));
        void events.event(id, 'phase', { phase });
      },
      onProgress: (p: RunProgress) => {
        if (!marked || p.kind === 'phase') return; // phases come through onPhase
        const progress =
          run.filter === undefined ? p : run.filter.progress(p as Parameters<ProblemEventFilter['progress']>[0]);
        if (progress === undefined) return;
        const nowMs = this.#now();
        if (progress.kind === 'samples' && nowMs - lastProgressMs < this.#progressIntervalMs) return;
        lastProgressMs = nowMs;
        void events.event(id, 'progress', progress);
      },
      showsDetails: () => run.filter?.showsPhase() !== false,
    };
    const salt = randomBytes(16).toString('hex');
    const deadlines = this.#deadlines(run.timed, record.options);
    const outcomePromise = lease.run(id, run.job, salt, deadlines, hooks, extras);
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
      inHiddenCase: run.filter?.showsPhase() === false,
    });
    const phases =
      outcome.kind !== 'report'
        ? undefined
        : 'phases' in outcome.report
          ? outcome.report.phases
          : outcome.report.cases.flatMap((c) => c.report?.phases ?? []);
    await events.finish(
      id,
      record.options.gpu,
      runMs,
      { ...result, atMs: endMs },
      {
        phases,
        confirms: record.options.confirms,
        shared: lease.info.shared,
      },
    );
  }

  /**
   * What the worker runs for `record`: its EvalJob, or the submission to its problem with the problem itself, the
   * progress filter of its hidden cases, and the job its deadlines are made for.
   */
  #runOf(record: JobRecord): { job: RunJob; problem?: EvalProblem; filter?: ProblemEventFilter; timed: EvalJob } {
    // The service's timing defaults, but for a leaderboard's confirmation, which keeps the library's rigour.
    const timed = <T extends { timing?: EvalTimingOptions } | EvalProblem>(x: T): T =>
      record.options.confirms === undefined ? withServiceTiming(x) : x;
    const job = record.job;
    if (!isProblemJob(job)) {
      const own = timed(job);
      return { job: own, timed: own };
    }
    const { problem: name, ...submission } = job;
    // #startJob ran only a job whose problem this registry has.
    const problem = timed(this.#problem(name)!);
    return {
      job: submission,
      problem,
      filter: problemEventFilter(problem.cases),
      timed: timedJob(problem, submission),
    };
  }
}

/**
 * The job a problem's deadlines are made for: what jobDeadlines reads of each case's job (caseJob()'s), the problem's
 * timing and a comparison with its baseline, on a stand-in launch.
 */
function timedJob(problem: EvalProblem, submission: ProblemSubmission): EvalJob {
  const { preset, rule } = problem.timing ?? {};
  const baseline = problem.baseline ?? problem.reference;
  return {
    source: submission.source,
    kernel: submission.kernel,
    grid: 1,
    block: 1,
    args: [],
    timing: { ...(preset === undefined ? {} : { preset }), ...(rule === undefined ? {} : { rule }) },
    ...(baseline === undefined ? {} : { compare: { source: baseline.source, kernel: baseline.kernel } }),
  };
}

/** Whose Python builds a job may reuse: its principal's alone (one principal's job never loads what another built). */
function buildScopeOf(record: JobRecord): string {
  return createHash('sha256').update(`python-builds\0${record.principal}`).digest('hex');
}
