// SPDX-License-Identifier: MIT
// The distributed queue, on Redis, per GPU class (a timing only means something on the class the client asked for).
// Queued jobs wait in cluster/fair.ts's structures, where principals take turns (schedule/queue.ts's rule); a job taken
// runs as a BullMQ job of its class's queue (jobId = the evaluation id). PostgreSQL stays the system of record; a
// queued or BullMQ job carries the evaluation's id, principal, class, priority and deadlines, never its source or
// tensor bytes (the agent reads the job from the store).
//
// - ApiQueue (api role): queues jobs (queuing twice is one job), removes queued ones on cancel, answers positions and
//   depths, and reconciles the queue with the store: queued rows the queue lost are queued again once older than a
//   lock (a Redis that died between fsyncs loses nothing; a younger row's own submission queues it), queued rows past
//   their maxQueueSeconds expire, and running rows whose job the queue failed (a host died on it more than
//   maxStalledCount times) or forgot are reported lost. One API node reconciles at a time (a Redis lock).
// - AgentQueue (agent role): takes a job only when a local GPU slot is free (one fair-share take, then BullMQ's manual
//   fetching: no processor, so several classes never oversubscribe the slots), keeps its lock renewed while it runs,
//   and completes it once the result is stored. Both roles run BullMQ's stalled-job checker, so a job whose host died
//   is redelivered (or failed) even when every agent is gone.
import { randomUUID } from 'node:crypto';
import { Queue, QueueEvents, Worker, type Job, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { JobStore } from '../store/store.js';
import { redisClient, redisOptions, type RedisClusterBus } from './bus.js';
import { RedisFairShare } from './fair.js';
import { queuedJobOf, type LostJob, type QueuedJob, type RunQueue, type SubmitQueue } from '../schedule/queue.js';

/** What a queued job and a BullMQ job carry. */
export interface ClusterJobData extends QueuedJob {
  /** The job's execution budget: the agent stops renewing the lock past it (plus the lock itself). */
  timeoutSeconds: number;
}

export interface ClusterQueueOptions {
  url: string;
  /** Key prefix of every queue (and of the bus). Default 'cudakit'. */
  prefix: string;
  /** How long a job's lock lasts without renewal: a dead host's job is redelivered this long after it died. */
  lockMs: number;
  /** How often the stalled-job checker runs. */
  stalledIntervalMs: number;
  /** How long after its deadline a running job the queue forgot is failed (its host may still finish it). */
  lostGraceMs: number;
  now?: () => number;
}

export const DEFAULT_CLUSTER_TIMING = { lockMs: 30_000, stalledIntervalMs: 15_000, lostGraceMs: 60_000 } as const;

/** A host that dies mid-job costs one redelivery; the second death fails the job. */
export const MAX_STALLED_COUNT = 1;

/**
 * The distributed mode's deadlines, nested inside out: every worker phase < the job's limit (timeoutSeconds, the
 * slot kills the child there) < the queue lock's horizon (an agent renews a job's lock up to its limit plus two
 * locks, so a live agent never loses a job it runs, and a stuck one cannot hold it for ever) < a synchronous client's
 * HTTP wait (the queue time, then every delivery the queue may make: a dead host's job waits for its lock to expire
 * and a stalled check before it runs again, MAX_STALLED_COUNT times).
 */
export function clusterHorizons(
  job: { timeoutSeconds: number; maxQueueSeconds: number },
  lockMs: number,
  stalledIntervalMs: number,
): { jobMs: number; lockHorizonMs: number; httpWaitMs: number } {
  const jobMs = job.timeoutSeconds * 1000;
  const lockHorizonMs = jobMs + 2 * lockMs;
  const deliveryMs = lockHorizonMs + lockMs + stalledIntervalMs;
  const httpWaitMs = job.maxQueueSeconds * 1000 + (MAX_STALLED_COUNT + 1) * deliveryMs + 10_000;
  return { jobMs, lockHorizonMs, httpWaitMs };
}

/** BullMQ queue names cannot hold ':'; GPU classes are [A-Za-z0-9_.-]. */
export function queueName(gpuClass: string): string {
  return `eval.${gpuClass}`;
}

const JOB_OPTIONS: JobsOptions = {
  // A kernel-caused failure is a result, never retried; a dead host is the stalled checker's business.
  attempts: 1,
  removeOnComplete: true,
  // Failed jobs stay a week: the reconciler reads why a running job was given up.
  removeOnFail: { age: 7 * 24 * 3600, count: 100_000 },
};

abstract class ClusterQueueBase {
  protected readonly o: ClusterQueueOptions;
  protected readonly now: () => number;
  /** Commands fail at once while Redis is down (callers fall back on the store), and BullMQ shares it. */
  protected readonly redis: Redis;
  readonly #queues = new Map<string, Queue<ClusterJobData>>();
  /** Workers that only check for stalled jobs (api) or also fetch (agent), per class. */
  protected readonly workers = new Map<string, Worker<ClusterJobData>>();
  /** Where queued jobs wait their turn. */
  protected readonly fair: RedisFairShare;
  protected closed = false;

  constructor(options: ClusterQueueOptions) {
    this.o = options;
    this.now = options.now ?? Date.now;
    this.redis = redisClient(options.url, redisOptions({ maxRetriesPerRequest: 1 }));
    this.redis.on('error', () => {});
    this.fair = new RedisFairShare(this.redis, options.prefix, `${options.prefix}:${queueName('')}`);
  }

  protected queue(gpuClass: string): Queue<ClusterJobData> {
    let queue = this.#queues.get(gpuClass);
    if (queue === undefined) {
      queue = new Queue<ClusterJobData>(queueName(gpuClass), {
        connection: this.redis,
        prefix: this.o.prefix,
        defaultJobOptions: JOB_OPTIONS,
      });
      queue.on('error', () => {});
      this.#queues.set(gpuClass, queue);
    }
    return queue;
  }

  /** A worker of this class's queue: with its own blocking connection, the stalled checker started. */
  protected worker(gpuClass: string): Worker<ClusterJobData> {
    let worker = this.workers.get(gpuClass);
    if (worker === undefined) {
      worker = new Worker<ClusterJobData>(queueName(gpuClass), null, {
        connection: redisClient(this.o.url, redisOptions()),
        prefix: this.o.prefix,
        lockDuration: this.o.lockMs,
        stalledInterval: this.o.stalledIntervalMs,
        maxStalledCount: MAX_STALLED_COUNT,
        autorun: false,
      });
      worker.on('error', () => {});
      void worker.startStalledCheckTimer().catch(() => {});
      this.workers.set(gpuClass, worker);
    }
    return worker;
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  /** Jobs waiting their turn, and jobs BullMQ holds waiting (a dead host's, one an agent put back). */
  sizeByClassOf = async (classes: readonly string[]): Promise<Record<string, number>> => {
    const queued = await this.fair.sizeByClass();
    const sizes: Record<string, number> = {};
    for (const gpu of classes) {
      const counts = await this.queue(gpu).getJobCounts('wait', 'prioritized');
      const n = (queued[gpu] ?? 0) + (counts.wait ?? 0) + (counts.prioritized ?? 0);
      if (n > 0) sizes[gpu] = n;
    }
    return sizes;
  };

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.workers.values()].map((w) => w.close(true)));
    await Promise.allSettled([...this.#queues.values()].map((q) => q.close()));
    this.redis.disconnect();
  }
}

/** The queue's submitting side on an API node. */
export class ApiQueue extends ClusterQueueBase implements SubmitQueue {
  readonly #store: JobStore;
  readonly #bus: RedisClusterBus;
  /** How long queuing may take before the submission goes on without it (the reconciler queues it later). */
  readonly #addTimeoutMs: number;
  #knownClasses: string[] = [];
  #lastSweepMs = 0;

  constructor(options: ClusterQueueOptions & { store: JobStore; bus: RedisClusterBus; addTimeoutMs?: number }) {
    super(options);
    this.#store = options.store;
    this.#bus = options.bus;
    this.#addTimeoutMs = options.addTimeoutMs ?? 2000;
  }

  async enqueue(job: QueuedJob): Promise<void> {
    const record = await this.#store.get(job.id);
    const data: ClusterJobData = { ...job, timeoutSeconds: record?.options.timeoutSeconds ?? 0 };
    let timer: NodeJS.Timeout | undefined;
    try {
      // The row is stored: whatever happens here, the reconciler finds it queued and adds it.
      await Promise.race([
        this.fair.enqueue(data),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${this.#addTimeoutMs} ms`)), this.#addTimeoutMs);
        }),
      ]);
    } catch {
      // Redis is down or slow: the 202 still holds, the job is in the store.
    } finally {
      clearTimeout(timer);
    }
  }

  /** Removes a job that waits its turn, or waits in BullMQ; false when an agent holds it (or Redis does not answer). */
  async remove(id: string): Promise<boolean> {
    try {
      if (await this.fair.remove(id)) return true;
    } catch {
      return false;
    }
    const record = await this.#store.get(id);
    if (record === undefined) return false;
    try {
      const job = await this.queue(record.options.gpu).getJob(id);
      if (job === undefined) return true;
      const state = await job.getState();
      if (state === 'active') return false;
      await job.remove();
      return true;
    } catch {
      return false;
    }
  }

  /** 1 + the jobs of its class that start before it under the turns (fair.ts, one script: one consistent read). */
  async position(id: string): Promise<number | undefined> {
    try {
      return await this.fair.position(id);
    } catch {
      return undefined;
    }
  }

  /** The position of `job` if it were queued now: behind its principal's jobs as good as it, its principal's turn. */
  async arrivalPosition(job: QueuedJob): Promise<number | undefined> {
    try {
      return await this.fair.arrivalPosition(job);
    } catch {
      return undefined;
    }
  }

  /** Counted in the store, shared by every API node (the per-client cap holds across them). */
  size(principal?: string): Promise<number> {
    return this.#store.queuedCount(principal);
  }

  async sizeByClass(): Promise<Record<string, number>> {
    return this.sizeByClassOf(await this.#classes());
  }

  /**
   * The reconciler's pass over queued rows: those past maxQueueSeconds are removed from the queue and returned (the
   * service fails them with QUEUE_TIMEOUT, only while they are still queued); those the queue lost are queued again
   * (one script call each, in one round trip: a job waiting its turn, leaving or in BullMQ is left as it is). A row
   * younger than a lock is not lost but on its way: its submission stores it, then its 'queued' event (its arrival
   * position, read from the queue), then queues it. Queued here in between, it would count itself in its own arrival
   * position, and an agent could store its 'started' before that event.
   */
  async expire(nowMs: number): Promise<QueuedJob[]> {
    if (!(await this.#lock())) return [];
    await this.#checkers();
    // A release older than a lock never reached BullMQ: its agent died between the two.
    await this.fair.forgetLeavingOlderThan(this.o.lockMs);
    const records = await this.#store.queued();
    const expired: QueuedJob[] = [];
    const live: ClusterJobData[] = [];
    for (const record of records) {
      const job = queuedJobOf(record);
      if (job.expiresAtMs <= nowMs) {
        if (await this.#expireOne(job)) expired.push(job);
      } else if (nowMs - record.createdAt >= this.o.lockMs) {
        live.push({ ...job, timeoutSeconds: record.options.timeoutSeconds });
      }
    }
    await this.fair.enqueueAll(live);
    this.#lastSweepMs = nowMs;
    return expired;
  }

  /** Takes an expired job out of the queue; false when an agent is starting it (its start sees the deadline). */
  async #expireOne(job: QueuedJob): Promise<boolean> {
    if (await this.fair.remove(job.id)) return true;
    if (await this.fair.leaving(job.id)) return false;
    const queued = await this.queue(job.gpu).getJob(job.id);
    if (queued !== undefined && (await queued.getState()) === 'active') return false;
    await queued?.remove().catch(() => {});
    return true;
  }

  /**
   * Running rows the queue gave up on: failed by the stalled checker (their hosts died MAX_STALLED_COUNT + 1 times),
   * or gone from Redis altogether with their deadline long past. A job an agent still holds is never reported.
   */
  async lost(nowMs: number): Promise<LostJob[]> {
    if (this.#lastSweepMs !== nowMs) return []; // only in a pass that holds the lock
    const lost: LostJob[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.#store.list({ status: 'running', limit: 200, ...(after === undefined ? {} : { after }) });
      for (const record of page.items) {
        const gpu = record.options.gpu;
        const job = await this.queue(gpu).getJob(record.id);
        const state = job === undefined ? 'missing' : await job.getState();
        // Past maxStalledCount the stalled checker marks the job for failure and puts it back in its wait list,
        // where the next worker that fetches it fails it: with no agent left that may be never, so its mark counts.
        const deferred = (job as { deferredFailure?: string } | undefined)?.deferredFailure;
        if (state === 'failed' || (deferred !== undefined && deferred !== '')) {
          const why = deferred ?? job?.failedReason ?? 'failed';
          const message =
            `the GPU hosts that ran this job stopped answering ${MAX_STALLED_COUNT + 1} times (${why}): ` +
            'it is not run again';
          lost.push({ id: record.id, gpu, error: { code: 'HOST_LOST', message } });
        } else if (state === 'missing' || state === 'completed' || state === 'unknown') {
          const deadlineMs =
            (record.startedAt ?? record.createdAt) + record.options.timeoutSeconds * 1000 + this.o.lostGraceMs;
          if (nowMs > deadlineMs) {
            const message = 'the queue lost this job while it ran, and its deadline passed without a result';
            lost.push({ id: record.id, gpu, error: { code: 'INTERRUPTED', message } });
          }
        }
      }
      if (page.next === undefined) break;
      after = page.next;
    }
    return lost;
  }

  /** The reconciler's lock, held for a pass (it expires by itself if this node dies mid-pass). */
  async #lock(): Promise<boolean> {
    try {
      const ok = await this.redis.set(this.#bus.keys.reconcilerLock, this.#bus.nodeId, 'PX', 5000, 'NX');
      if (ok === 'OK') return true;
      return (await this.redis.get(this.#bus.keys.reconcilerLock)) === this.#bus.nodeId;
    } catch {
      return false;
    }
  }

  async #classes(): Promise<string[]> {
    try {
      this.#knownClasses = await this.#bus.classes();
    } catch {
      // Redis down: the classes known last
    }
    return this.#knownClasses;
  }

  /** The stalled-job checker of every class: a job whose host died is redelivered (or failed) with no agent left. */
  async #checkers(): Promise<void> {
    for (const gpu of await this.#classes()) this.worker(gpu);
  }
}

interface Held {
  job: Job<ClusterJobData>;
  token: string;
  renew: NodeJS.Timeout;
}

/** The agent role's queue. */
/** The queue's running side on an agent. */
export class AgentQueue extends ClusterQueueBase implements RunQueue {
  /** BullMQ hands a job whose host died (its lock lapsed) to another agent. */
  readonly redelivers = true;
  readonly #held = new Map<string, Held>();
  readonly #availableListeners = new Set<() => void>();
  readonly #events: QueueEvents[] = [];
  /** Hears the classes of jobs queued (fair.ts publishes each); BullMQ's events tell of jobs it puts back. */
  #queuedListener: Redis | undefined;
  #classes: string[] = [];
  #poll: NodeJS.Timeout | undefined;
  readonly #agentId: string;

  constructor(options: ClusterQueueOptions & { agentId: string; pollMs?: number }) {
    super(options);
    this.#agentId = options.agentId;
    this.#poll = setInterval(() => this.#available(), options.pollMs ?? 1000);
    this.#poll.unref();
  }

  /** Starts taking the jobs of these classes (the agent's GPUs' classes), woken when one is queued or put back. */
  serve(classes: readonly string[]): void {
    this.#classes = [...classes];
    if (this.#queuedListener === undefined) {
      this.#queuedListener = redisClient(this.o.url, redisOptions());
      this.#queuedListener.on('error', () => {});
      void this.#queuedListener.subscribe(this.fair.keys.available).catch(() => {});
      this.#queuedListener.on('message', (_channel: string, gpu: string) => {
        if (this.#classes.includes(gpu)) this.#available();
      });
    }
    for (const gpu of classes) {
      this.worker(gpu);
      const events = new QueueEvents(queueName(gpu), {
        connection: redisClient(this.o.url, redisOptions()),
        prefix: this.o.prefix,
      });
      events.on('error', () => {});
      events.on('waiting', () => this.#available());
      this.#events.push(events);
    }
  }

  /** A listener called when a job may be waiting (the service then dispatches its idle slots). */
  onAvailable(listener: () => void): void {
    this.#availableListeners.add(listener);
  }

  #available(): void {
    if (this.closed) return;
    for (const l of this.#availableListeners) l();
  }

  /**
   * The job a slot of these classes runs next: one BullMQ holds waiting first (it had its turn), else the fair-share
   * take's, which this agent adds to its class's BullMQ queue and fetches at once. Another agent fetching in between
   * may get it first (BullMQ hands a job to one fetch only): it runs there, and this take tries again.
   */
  async take(classes: readonly string[]): Promise<QueuedJob | undefined> {
    const mine = classes.filter((c) => this.#classes.includes(c));
    // A few tries, then the slot waits for the next wake-up (the job another agent fetched there woke it too).
    for (let attempt = 0; attempt < 3; attempt++) {
      const token = `${this.#agentId}:${randomUUID()}`;
      let job: Job<ClusterJobData> | undefined;
      try {
        const next = await this.fair.take(mine);
        if (next === undefined) return undefined;
        if (next.kind === 'bullmq') job = await this.worker(next.gpu).getNextJob(token, { block: false });
        else {
          const data = JSON.parse(next.json) as ClusterJobData;
          await this.queue(data.gpu).add('eval', data, { jobId: data.id });
          void this.fair.landed(data.id).catch(() => {});
          job = await this.worker(data.gpu).getNextJob(token, { block: false });
        }
      } catch {
        // Redis down: the poll tries again (a job taken but never added is queued again by the reconciler).
        return undefined;
      }
      if (job === undefined || job.id === undefined) continue;
      this.#hold(job, token);
      const { timeoutSeconds: _, ...queued } = job.data;
      return queued;
    }
    return undefined;
  }

  /** Renews the lock while the job runs, up to its timeout plus one lock: a run cannot outlive that. */
  #hold(job: Job<ClusterJobData>, token: string): void {
    const { lockHorizonMs } = clusterHorizons({ ...job.data, maxQueueSeconds: 0 }, this.o.lockMs, 0);
    const untilMs = this.now() + lockHorizonMs;
    const renew = setInterval(() => {
      if (this.now() > untilMs) return clearInterval(renew);
      job.extendLock(token, this.o.lockMs).catch(() => {});
    }, this.o.lockMs / 2);
    renew.unref();
    this.#held.set(job.id!, { job, token, renew });
  }

  /** A job taken but not run (no slot after all, a drain): back to its queue's wait list for any agent. */
  async putBack(job: QueuedJob): Promise<void> {
    const held = this.#held.get(job.id);
    if (held === undefined) return;
    this.#release(job.id);
    await held.job.moveToWait(held.token).catch(() => {});
  }

  /** The result is stored: the queue's job completes (a lock lost to a redelivery is another host's now). */
  async settle(id: string): Promise<void> {
    const held = this.#held.get(id);
    if (held === undefined) return;
    this.#release(id);
    await held.job.moveToCompleted('stored', held.token, false).catch(() => {});
  }

  #release(id: string): void {
    const held = this.#held.get(id);
    if (held !== undefined) clearInterval(held.renew);
    this.#held.delete(id);
  }

  sizeByClass(): Promise<Record<string, number>> {
    return this.sizeByClassOf(this.#classes);
  }

  override async close(): Promise<void> {
    clearInterval(this.#poll);
    this.#queuedListener?.disconnect();
    for (const id of [...this.#held.keys()]) this.#release(id);
    await Promise.allSettled(this.#events.map((e) => e.close()));
    await super.close();
  }
}
