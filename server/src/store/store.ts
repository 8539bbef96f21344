// SPDX-License-Identifier: MIT
// The system of record for evaluations: every job and its result, keyed by id. The embedded mode stores it in one
// SQLite file (store/sqlite.ts); the distributed mode in PostgreSQL (store/postgres.ts). Both implement this
// interface and pass the same contract tests. Writes of a result are idempotent: finishing a job twice keeps the first
// result. The leaderboards of problems with cases are kept in the same store (leaderboard.ts).
import type { EvalJob, EvalPhase, ProblemSubmission } from 'cudakit';
import type { Verdict } from '../judge/verdict.js';
import type { LeaderboardEntry, LeaderboardStore } from './leaderboard.js';

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
export const TERMINAL: ReadonlySet<JobStatus> = new Set(['succeeded', 'failed', 'cancelled']);

/** The service's own fields beside the EvalJob. */
export interface ServiceOptions {
  /** Execution budget from the GPU lease to the result. */
  timeoutSeconds: number;
  /** How long the job may wait in the queue before it fails with QUEUE_TIMEOUT. */
  maxQueueSeconds: number;
  /** Higher runs first; FIFO within a priority. */
  priority: number;
  /** 'any', or a GPU class ('H200', 'sm_90'): a timing only means something on the class asked for. */
  gpu: string;
  deviceMetrics: boolean;
  /** The JavaScript reference module of the job's registry problem, for its worker to import. */
  referenceModule?: string;
  /**
   * A reference or a candidate in Python (the compatible routes, with --python), each for a runner of the job's:
   * run/protocol.ts's PythonJob, kept as plain data (the store knows no worker types). Never a client's field. With a
   * candidate, the job's source and kernel are the Python kernel's, and nothing compiles it.
   */
  python?: { reference?: object; candidate?: object };
  /**
   * A re-run the service queued (never a client's field): the id of the job whose leaderboard entry it confirms. Its
   * result confirms the entry or leaves it provisional, and is never an entry itself.
   */
  confirms?: string;
}

/**
 * A submission to a problem with cases as the store keeps it: the submission as the client sent it, and the problem's
 * name (the worker gets the problem itself from the registry when the job runs).
 */
export type ProblemJob = ProblemSubmission & { problem: string };

/** What a record holds of its job: an EvalJob, or a submission to a problem with cases. */
export type StoredJob = EvalJob | ProblemJob;

/** Whether `job` is a submission to a problem with cases. */
export function isProblemJob(job: StoredJob): job is ProblemJob {
  return typeof (job as Partial<ProblemJob>).problem === 'string';
}

export interface JobRecord {
  /** 'ev_' + a ULID: sortable by creation time. */
  id: string;
  /** The token's name that submitted it ('local' without tokens). */
  principal: string;
  status: JobStatus;
  /** The kernel's verdict, once known (a succeeded job always has one). */
  verdict: Verdict | undefined;
  /** The phase running now, or the one that failed. */
  phase: EvalPhase | 'profile' | undefined;
  job: StoredJob;
  options: ServiceOptions;
  idempotencyKey: string | undefined;
  /** sha256 of the canonical job + options: the same key with another body is a 422. */
  bodyHash: string;
  createdAt: number;
  startedAt: number | undefined;
  finishedAt: number | undefined;
  /** The GPU that ran it. */
  gpuUuid: string | undefined;
  /** The EvalReport as stored (JSON text, formatJson's), or undefined before the result. */
  report: string | undefined;
  /** Why the service could not finish (status 'failed'), or what the verdict's error was. */
  error: { code: string; message: string; phase?: string } | undefined;
}

/** A new job's record, queued at `createdAt`: nothing has happened to it yet. */
export function queuedRecord(
  fields: Pick<JobRecord, 'id' | 'principal' | 'job' | 'options' | 'idempotencyKey' | 'bodyHash' | 'createdAt'>,
): JobRecord {
  return {
    ...fields,
    status: 'queued',
    verdict: undefined,
    phase: undefined,
    startedAt: undefined,
    finishedAt: undefined,
    gpuUuid: undefined,
    report: undefined,
    error: undefined,
  };
}

/** One server-sent event of a job, numbered for `Last-Event-ID`. */
export interface JobEvent {
  seq: number;
  jobId: string;
  type: 'queued' | 'started' | 'phase' | 'progress' | 'done';
  data: unknown;
  atMs: number;
}

export interface ListFilter {
  principal?: string;
  status?: JobStatus;
  verdict?: Verdict;
  /** Opaque cursor from a previous page (the last id seen). */
  after?: string;
  limit: number;
}

export interface JobStore extends LeaderboardStore {
  /** Writes a new queued job; resolves before the client gets its 202. */
  insert(record: JobRecord): Promise<void>;
  get(id: string): Promise<JobRecord | undefined>;
  findByIdempotencyKey(principal: string, key: string, notBeforeMs: number): Promise<JobRecord | undefined>;
  list(filter: ListFilter): Promise<{ items: JobRecord[]; next: string | undefined }>;
  /** Jobs still queued, oldest first (the queue is rebuilt from them at start). */
  queued(): Promise<JobRecord[]>;
  /**
   * queued → running; false when the job is no longer queued (cancelled meanwhile). With `takeOver`, a job already
   * running is claimed too (the queue delivered it again because the host that ran it died): its GPU and start time
   * are replaced and its phase cleared. A finished job is never claimed.
   */
  markRunning(id: string, gpuUuid: string, atMs: number, options?: { takeOver?: boolean }): Promise<boolean>;
  setPhase(id: string, phase: EvalPhase | 'profile'): Promise<void>;
  /**
   * running|queued → a terminal status with its result. Idempotent: a job already terminal keeps its first result
   * and this resolves false. With `onlyIfQueued`, only a job still queued is finished (a queue expiry, or a cancel
   * while another process may be starting the job): false for a running one.
   */
  finish(
    id: string,
    outcome: {
      status: 'succeeded' | 'failed' | 'cancelled';
      verdict: Verdict | undefined;
      phase: EvalPhase | 'profile' | undefined;
      report: string | undefined;
      error: JobRecord['error'];
      atMs: number;
      onlyIfQueued?: boolean;
      /**
       * The leaderboard entry this end gives (schedule/leaderboard.ts): recorded by recordScore's rule in the same
       * transaction as the end, and only by the call that finishes the job, so a stored PASSED result is never
       * missing from its board.
       */
      entry?: LeaderboardEntry;
    },
  ): Promise<boolean>;
  /** At start: every job left 'running' by a server that died becomes failed: interrupted. Returns their ids. */
  interruptRunning(atMs: number): Promise<string[]>;
  /** Deletes a finished job with its events; false when it is not finished (or not there). */
  purge(id: string): Promise<boolean>;
  /** Deletes finished jobs older than the retention; returns how many. */
  deleteFinishedBefore(atMs: number): Promise<number>;
  appendEvent(event: Omit<JobEvent, 'seq'>): Promise<JobEvent>;
  events(jobId: string, afterSeq: number): Promise<JobEvent[]>;
  /** How many jobs are queued, of every principal or of one (the per-client quota, across API processes). */
  queuedCount(principal?: string): Promise<number>;
  /** Counts per status (for /stats, /metrics). */
  counts(): Promise<Record<JobStatus, number>>;
  /** The mean createdAt of every stored job, ms; undefined when there is none (the compatible /health's age). */
  meanCreatedAtMs(): Promise<number | undefined>;
  close(): Promise<void>;
}

/**
 * What a store throws when its database cannot be reached (PostgreSQL down, a connection refused or cut, a connect
 * timeout): the request may succeed later, so the HTTP layer answers 503 with Retry-After. Only such failures are
 * wrapped; a constraint violation or a bug stays the error it is. `cause` is the driver's error.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';

  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
  }
}

/**
 * The error of a job that was running when its server stopped (interruptRunning): the service could not finish it,
 * so the job failed (no verdict), and the client should submit it again.
 */
export const INTERRUPTED_ERROR = {
  code: 'INTERRUPTED',
  message: 'the server stopped while this job was running; please resubmit',
} as const;
