// SPDX-License-Identifier: MIT
// What the JobStore implementations share, so SQLite, PostgreSQL and memory answer bad arguments and missing jobs with
// the same messages, and the two SQL stores map a job to its row one way (toRow, fromRow). Listing order, for all of
// them: newest first (id descending; ids are ULIDs, so this is creation order), and `after` is the last id of the
// previous page. Jobs created while a client pages have larger ids than its cursor, so they land before the first page:
// later pages neither repeat nor skip a job.
import type { EvalJob } from 'cudakit';
import type { Verdict } from '../judge/verdict.js';
import { joinLiterals } from './literals.js';
import { describe } from './messages.js';
import type { JobRecord, JobStatus, ListFilter } from './store.js';

export function checkListFilter(filter: ListFilter): void {
  const { limit, after } = filter;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`Expected a positive integer for filter.limit but received ${describe(limit)}`);
  }
  if (after !== undefined && (typeof after !== 'string' || after === '')) {
    throw new RangeError(`Expected a cursor from a previous page for filter.after but received ${describe(after)}`);
  }
}

export function checkSeq(name: string, value: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new RangeError(`Expected a non-negative integer for ${name} but received ${describe(value)}`);
  }
}

export function zeroCounts(): Record<JobStatus, number> {
  return { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
}

export function duplicateJobError(id: string): Error {
  return new Error(`Cannot insert job '${id}': a job with this id already exists`);
}

export function missingJobError(id: string): Error {
  return new Error(`Cannot append an event to job '${id}': no such job (never inserted, or purged)`);
}

export function closedError(): Error {
  return new Error('The job store is closed');
}

/** A job as both SQL stores keep it: one row, JSON in text columns, an absent value as NULL. */
export interface JobRow {
  id: string;
  principal: string;
  status: JobStatus;
  verdict: string | null;
  phase: string | null;
  job: string;
  options: string;
  idempotency_key: string | null;
  body_hash: string;
  created_at_ms: number;
  started_at_ms: number | null;
  finished_at_ms: number | null;
  gpu_uuid: string | null;
  report: string | null;
  error: string | null;
}

/** A stored JSON text (NULL: undefined). */
export function parseJson(text: string | null): unknown {
  return text === null ? undefined : JSON.parse(text);
}

export function toRow(r: JobRecord): JobRow {
  return {
    id: r.id,
    principal: r.principal,
    status: r.status,
    verdict: r.verdict ?? null,
    phase: r.phase ?? null,
    job: JSON.stringify(r.job),
    options: JSON.stringify(r.options),
    idempotency_key: r.idempotencyKey ?? null,
    body_hash: r.bodyHash,
    created_at_ms: r.createdAt,
    started_at_ms: r.startedAt ?? null,
    finished_at_ms: r.finishedAt ?? null,
    gpu_uuid: r.gpuUuid ?? null,
    report: r.report ?? null,
    error: r.error === undefined ? null : JSON.stringify(r.error),
  };
}

/** The record of a row, its large literals (store/literals.ts) put back into its job. */
export function fromRow(row: JobRow, literals: readonly { path: string; text: string }[] = []): JobRecord {
  return {
    id: row.id,
    principal: row.principal,
    status: row.status,
    verdict: (row.verdict ?? undefined) as Verdict | undefined,
    phase: (row.phase ?? undefined) as JobRecord['phase'],
    job: (literals.length > 0 ? joinLiterals(row.job, [...literals]) : JSON.parse(row.job)) as EvalJob,
    options: JSON.parse(row.options) as JobRecord['options'],
    idempotencyKey: row.idempotency_key ?? undefined,
    bodyHash: row.body_hash,
    createdAt: row.created_at_ms,
    startedAt: row.started_at_ms ?? undefined,
    finishedAt: row.finished_at_ms ?? undefined,
    gpuUuid: row.gpu_uuid ?? undefined,
    report: row.report ?? undefined,
    error: row.error === null ? undefined : (JSON.parse(row.error) as JobRecord['error']),
  };
}
