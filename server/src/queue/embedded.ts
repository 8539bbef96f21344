// SPDX-License-Identifier: MIT
// The embedded queue: in memory, one list per GPU class, each kept in the order its jobs run: priority (higher
// first), then enqueuedAtMs (older first), then arrival. A slot takes the best head among the lists of the classes it
// serves. Nothing here is durable: the store is the journal, and the owner rebuilds the queue from store.queued() at
// start (EmbeddedQueue.rebuild). Sorted arrays with binary search: the admission caps keep a queue to about a
// thousand jobs, where a splice costs less than a heap's bookkeeping for remove() and position().
import type { JobRecord } from '../store/store.js';
import { type JobQueue, type QueuedJob, queuedJobOf } from './queue.js';

interface Entry {
  job: QueuedJob;
  /** Arrival order: the FIFO's tie-break between jobs of one priority and one enqueuedAtMs. */
  seq: number;
}

/** Negative when `a` runs before `b`. Total: no two entries share a seq. */
function compare(a: Entry, b: Entry): number {
  return b.job.priority - a.job.priority || a.job.enqueuedAtMs - b.job.enqueuedAtMs || a.seq - b.seq;
}

/** The index of the first entry of `list` that runs after `entry` (where `entry` goes, or is). */
function lowerBound(list: readonly Entry[], entry: Entry): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(list[mid]!, entry) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function checkJob(job: QueuedJob): void {
  if (typeof job.id !== 'string' || job.id === '') {
    throw new TypeError(`Expected a non-empty string for job.id but received ${String(job.id)}`);
  }
  if (typeof job.gpu !== 'string' || job.gpu === '') {
    throw new TypeError(`Expected a GPU class ('any', 'H200', 'sm_90') for job.gpu of ${job.id}`);
  }
  for (const key of ['priority', 'enqueuedAtMs', 'expiresAtMs'] as const) {
    if (!Number.isFinite(job[key])) {
      throw new RangeError(`Expected a finite number for job.${key} of ${job.id} but received ${String(job[key])}`);
    }
  }
}

export class EmbeddedQueue implements JobQueue {
  readonly #byClass = new Map<string, Entry[]>();
  readonly #byId = new Map<string, Entry>();
  readonly #perPrincipal = new Map<string, number>();
  #seq = 0;

  /** A queue holding the store's queued jobs (store.queued(): oldest first, so arrival order is creation order). */
  static rebuild(records: readonly JobRecord[]): EmbeddedQueue {
    const queue = new EmbeddedQueue();
    for (const record of records) queue.enqueue(queuedJobOf(record));
    return queue;
  }

  enqueue(job: QueuedJob): void {
    checkJob(job);
    if (this.#byId.has(job.id)) throw new Error(`Cannot enqueue job '${job.id}': it is already queued`);
    const entry: Entry = { job: { ...job }, seq: this.#seq++ };
    let list = this.#byClass.get(job.gpu);
    if (list === undefined) this.#byClass.set(job.gpu, (list = []));
    list.splice(lowerBound(list, entry), 0, entry);
    this.#byId.set(job.id, entry);
    this.#perPrincipal.set(job.principal, (this.#perPrincipal.get(job.principal) ?? 0) + 1);
  }

  take(classes: readonly string[]): QueuedJob | undefined {
    let best: Entry | undefined;
    for (const gpu of classes) {
      const head = this.#byClass.get(gpu)?.[0];
      if (head !== undefined && (best === undefined || compare(head, best) < 0)) best = head;
    }
    if (best === undefined) return undefined;
    this.#delete(best);
    return { ...best.job };
  }

  remove(id: string): boolean {
    const entry = this.#byId.get(id);
    if (entry === undefined) return false;
    this.#delete(entry);
    return true;
  }

  /**
   * 1 + the jobs of the same class that run before this one. Jobs of other classes that a slot serving several may
   * take first are not counted: which those are depends on the slots, which the queue does not know.
   */
  position(id: string): number | undefined {
    const entry = this.#byId.get(id);
    if (entry === undefined) return undefined;
    return lowerBound(this.#byClass.get(entry.job.gpu)!, entry) + 1;
  }

  size(principal?: string): number {
    return principal === undefined ? this.#byId.size : (this.#perPrincipal.get(principal) ?? 0);
  }

  /** Jobs queued per GPU class (the metrics' queue depth); classes with none are left out. */
  sizeByClass(): Record<string, number> {
    return Object.fromEntries([...this.#byClass].map(([gpu, list]) => [gpu, list.length]));
  }

  /** Removes the jobs whose expiresAtMs ≤ nowMs and returns them, the first to expire first. */
  expire(nowMs: number): QueuedJob[] {
    const expired = [...this.#byId.values()].filter((e) => e.job.expiresAtMs <= nowMs);
    expired.sort((a, b) => a.job.expiresAtMs - b.job.expiresAtMs || a.seq - b.seq);
    for (const entry of expired) this.#delete(entry);
    return expired.map((e) => ({ ...e.job }));
  }

  #delete(entry: Entry): void {
    const list = this.#byClass.get(entry.job.gpu)!;
    list.splice(lowerBound(list, entry), 1);
    if (list.length === 0) this.#byClass.delete(entry.job.gpu);
    this.#byId.delete(entry.job.id);
    const left = this.#perPrincipal.get(entry.job.principal)! - 1;
    if (left === 0) this.#perPrincipal.delete(entry.job.principal);
    else this.#perPrincipal.set(entry.job.principal, left);
  }
}
