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
import type { JobEvent, JobRecord } from '../store/store.js';

/** The bounds and default of a job's priority, which orders only its own principal's jobs. */
export const PRIORITY = { min: -10, max: 10, default: 0 } as const;

/**
 * What the service's two sides need between processes in the distributed mode: a job's events to whoever follows it,
 * and a cancel to whichever agent runs the job (cluster/bus.ts over Redis). The embedded mode has none.
 */
export interface JobBus {
  publishEvent(event: JobEvent): void;
  /** Events of other processes; `wants` (the job's id) skips the rest before they are parsed. */
  onEvent(listener: (event: JobEvent) => void, wants?: (jobId: string) => boolean): void;
  /** Asks whichever agent runs `id` to kill it. */
  requestCancel(id: string): Promise<void>;
  onCancel(listener: (id: string) => void): void;
}

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

/** A job the queue lost while it ran, and the error it fails with. */
export interface LostJob {
  id: string;
  gpu: string;
  error: { code: string; message: string };
}

/**
 * What both sides of the queue have: a backend to answer (readiness), a depth per class (the metrics), connections
 * to close.
 */
export interface QueueConnection {
  /** Whether the queue's backend answers (readiness); the in-memory queue always does. */
  ping(): MaybePromise<void>;
  /** Jobs queued per GPU class (the metrics' queue depth); classes with none may be left out. */
  sizeByClass(): MaybePromise<Record<string, number>>;
  /** Stops its timers and connections. */
  close(): MaybePromise<void>;
}

/**
 * The submitting side of the queue (BullMQ's Queue): what a process that takes submissions does with it. The embedded
 * server and an API node have one; an agent has none.
 */
export interface SubmitQueue extends QueueConnection {
  enqueue(job: QueuedJob): MaybePromise<void>;
  /** Removes a queued job (cancelled); false when it was not queued (a slot somewhere may be starting it). */
  remove(id: string): MaybePromise<boolean>;
  /**
   * 1 + the jobs a slot of its class takes before it if nothing new arrives (the turns above), or undefined when
   * not queued.
   */
  position(id: string): MaybePromise<number | undefined>;
  /**
   * The position `job` will have once enqueued, read before it is, where another process takes jobs the moment they
   * are queued (an API node's queue, which agents take from): the job's 'queued' event is then stored before any
   * agent's 'started'. Undefined where only this process takes (the event follows the enqueue) or it cannot be read.
   */
  arrivalPosition(job: QueuedJob): MaybePromise<number | undefined>;
  /** Jobs queued, in all, and per principal (admission limits). */
  size(principal?: string): MaybePromise<number>;
  /** Removes and returns the jobs whose expiresAtMs has passed. */
  expire(nowMs: number): MaybePromise<QueuedJob[]>;
  /**
   * Jobs the queue lost while they ran: their hosts died more often than the queue redelivers, or the queue forgot
   * them and their deadline passed. The service fails each with the error given. None where the queue loses none.
   */
  lost(nowMs: number): MaybePromise<LostJob[]>;
}

/**
 * The running side of the queue (BullMQ's Worker): what a process with GPUs does with it. The embedded server and an
 * agent have one; an API node has none.
 */
export interface RunQueue extends QueueConnection {
  /**
   * The next job a slot of these classes may run, removed from the queue: the fair-share rule above picks the
   * principal, then that principal's highest priority, oldest job.
   */
  take(classes: readonly string[]): MaybePromise<QueuedJob | undefined>;
  /** A job taken but not run (no slot after all, a drain): back in its place for any taker. */
  putBack(job: QueuedJob): MaybePromise<void>;
  /**
   * The run of a taken job ended and its result is stored (the distributed queue completes its job there, so a host
   * that dies before this line costs a redelivery, and one that dies after it costs nothing).
   */
  settle(id: string): MaybePromise<void>;
  /**
   * Whether the queue may hand out a job that was running on a host that died (the distributed queue's redelivery):
   * the taker then runs it again and takes the stored run over.
   */
  readonly redelivers: boolean;
  /** Calls `listener` when a job may have arrived that this process did not enqueue (an agent's wake-up). */
  onAvailable(listener: () => void): void;
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
