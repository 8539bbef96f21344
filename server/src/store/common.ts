// SPDX-License-Identifier: MIT
// What the JobStore implementations share, so SQLite, memory (and later PostgreSQL) answer bad arguments and missing
// jobs with the same messages. Listing order, for all of them: newest first (id descending; ids are ULIDs, so this
// is creation order), and `after` is the last id of the previous page. Jobs created while a client pages have larger
// ids than its cursor, so they land before the first page: later pages neither repeat nor skip a job.
import type { JobStatus, ListFilter } from './store.js';

/** 'ev_…' of type string, 5 of type number: the value in the project's message format. */
function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value.slice(0, 40)}' of type string`;
  if (value === null || value === undefined) return String(value);
  return typeof value === 'object' ? 'an object' : `${String(value)} of type ${typeof value}`;
}

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
