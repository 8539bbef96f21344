// SPDX-License-Identifier: MIT
// The queue between the API and the GPU slots: per GPU class, fair between principals. The embedded mode keeps it in
// memory and rebuilds it from the store's queued rows at start (schedule/embedded-queue.ts, synchronous); the
// distributed mode keeps it in Redis beside BullMQ (cluster/queue.ts, cluster/fair.ts), whose calls are network round
// trips: the service awaits every method.
//
// Fair share, the one rule both keep. Between principals the queue takes turns; a job's priority, then its age, then
// its arrival orders only its own principal's jobs. Each principal with a job queued holds a turn: a number from one
// counter, drawn when it enters the queue (it had no job queued) and again each time one of its jobs is taken. A slot
// takes from the principal whose turn is the oldest among those with a job in a class the slot serves, that
// principal's first job of those classes. Within one class this is strict round-robin: the principal served goes to
// the back, one that arrives joins at the back, so a client with 32 jobs queued delays another's next job by one
// job, not 32. Across the classes a slot serves (['H200', 'sm_90', 'any']) it holds because a principal has one
// turn, not one per class: a job taken from 'any' moves its principal to the back for 'H200' too, so spreading jobs
// over classes buys no extra turns. Priority is not a lever between clients: only a client's own jobs compete on it.
//
// A position counts the jobs that start before a job if nothing new arrives and only slots of its class take: its
// principal's own jobs ahead of it (r), and from every other principal with n jobs in the class min(n, r + 1) when
// that principal's turn is older (it comes first in each round), min(n, r) when newer.
import type { JobRecord } from '../store/store.js';

export interface QueuedJob {
  id: string;
  principal: string;
  priority: number;
  /** 'any' or a class ('H200', 'sm_90'). */
  gpu: string;
  enqueuedAtMs: number;
  /** When it fails with QUEUE_TIMEOUT if still queued. */
  expiresAtMs: number;
}

type MaybePromise<T> = T | Promise<T>;

export interface JobQueue {
  enqueue(job: QueuedJob): MaybePromise<void>;
  /**
   * The next job a slot of these classes may run, removed from the queue: the fair-share rule above picks the
   * principal, then that principal's highest priority, oldest job.
   */
  take(classes: readonly string[]): MaybePromise<QueuedJob | undefined>;
  /** Removes a queued job (cancelled); false when it was not queued (a slot somewhere may be starting it). */
  remove(id: string): MaybePromise<boolean>;
  /**
   * 1 + the jobs a slot of its class takes before it if nothing new arrives (the turns above), or undefined when
   * not queued.
   */
  position(id: string): MaybePromise<number | undefined>;
  /**
   * The position `job` will have once enqueued, read before it is: for a queue another process takes jobs from the
   * moment they are in it (an API node's, which agents take from), so that the job's 'queued' event can be stored
   * before any agent's 'started'. Undefined when it cannot be read; a queue only its own process takes from has none.
   */
  arrivalPosition?(job: QueuedJob): Promise<number | undefined>;
  /** Jobs queued, in all, and per principal (admission limits). */
  size(principal?: string): MaybePromise<number>;
  /** Jobs queued per GPU class (the metrics' queue depth); classes with none may be left out. */
  sizeByClass(): MaybePromise<Record<string, number>>;
  /** Removes and returns the jobs whose expiresAtMs has passed. */
  expire(nowMs: number): MaybePromise<QueuedJob[]>;
  /**
   * The run of a taken job ended and its result is stored (the distributed queue completes its job there, so a host
   * that dies before this line costs a redelivery, and one that dies after it costs nothing).
   */
  settle?(id: string): Promise<void>;
  /**
   * Jobs the queue lost while they ran: their hosts died more often than the queue redelivers, or the queue forgot
   * them and their deadline passed. The service fails each with the error given.
   */
  lost?(nowMs: number): Promise<Array<{ id: string; gpu: string; error: { code: string; message: string } }>>;
  /** Calls `listener` when a job may have arrived that this process did not enqueue (an agent's wake-up). */
  onAvailable?(listener: () => void): void;
  /** Whether the queue's backend answers (readiness); the in-memory queue always does. */
  ping?(): Promise<void>;
  /** Stops its timers and connections. */
  close?(): Promise<void>;
}

/**
 * A stored job as the queue sees it: enqueued at its creation, so a queue rebuilt from the store at start keeps each
 * job's place among its principal's jobs and its QUEUE_TIMEOUT deadline (the time the server was down counts as time
 * queued).
 */
export function queuedJobOf(record: JobRecord): QueuedJob {
  return {
    id: record.id,
    principal: record.principal,
    priority: record.options.priority,
    gpu: record.options.gpu,
    enqueuedAtMs: record.createdAt,
    expiresAtMs: record.createdAt + record.options.maxQueueSeconds * 1000,
  };
}
