// SPDX-License-Identifier: MIT
// The embedded queue: in memory, fair between principals by queue.ts's rule. Per class, one list per principal with
// jobs there, kept in the order its jobs run: priority (higher first), then enqueuedAtMs (older first), then arrival;
// beside them, each principal's turn. A take scans the principals of the slot's classes for the oldest turn, then
// takes the best head of that principal's lists. Nothing here is durable: the store is the journal, and the owner
// rebuilds the queue from store.queued() at start (EmbeddedQueue.rebuild). Sorted arrays with binary search and
// linear scans over principals: the admission caps keep a queue to about a thousand jobs, where a splice costs less
// than a heap's bookkeeping for remove() and position().
import type { JobRecord } from '../store/store.js';
import { type LostJob, type QueuedJob, type RunQueue, type SubmitQueue, queuedJobOf } from './queue.js';

interface Entry {
  job: QueuedJob;
  /** Arrival order: the tie-break between one principal's jobs of one priority and one enqueuedAtMs. */
  seq: number;
}

/** Negative when `a` runs before `b` (both of one principal). Total: no two entries share a seq. */
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

export class EmbeddedQueue implements SubmitQueue, RunQueue {
  /** Nothing runs elsewhere: a taken job is this process's until it settles. */
  readonly redelivers = false;

  /** Per class, per principal with jobs there: its jobs of that class in the order they run. */
  readonly #lists = new Map<string, Map<string, Entry[]>>();
  readonly #byId = new Map<string, Entry>();
  readonly #perPrincipal = new Map<string, number>();
  readonly #perClass = new Map<string, number>();
  /** Each principal with a job queued: its turn (queue.ts); the oldest, the smallest, goes first. */
  readonly #turns = new Map<string, number>();
  #seq = 0;
  #turnSeq = 0;
  /**
   * The last job taken, with its place and its principal's turn before the take: a job handed back before anything
   * else is taken (its slot went away, the leasing failed) gets both back, as if it had never left.
   */
  #lastTake: { entry: Entry; turn: number } | undefined;

  /** A queue holding the store's queued jobs (store.queued(): oldest first, so arrival order is creation order). */
  static rebuild(records: readonly JobRecord[]): EmbeddedQueue {
    const queue = new EmbeddedQueue();
    for (const record of records) queue.enqueue(queuedJobOf(record));
    return queue;
  }

  enqueue(job: QueuedJob): void {
    checkJob(job);
    if (this.#byId.has(job.id)) throw new Error(`Cannot enqueue job '${job.id}': it is already queued`);
    const back = this.#lastTake?.entry.job.id === job.id ? this.#lastTake : undefined;
    if (back !== undefined) this.#lastTake = undefined;
    const entry: Entry = { job: { ...job }, seq: back?.entry.seq ?? this.#seq++ };
    let byPrincipal = this.#lists.get(job.gpu);
    if (byPrincipal === undefined) this.#lists.set(job.gpu, (byPrincipal = new Map()));
    let list = byPrincipal.get(job.principal);
    if (list === undefined) byPrincipal.set(job.principal, (list = []));
    list.splice(lowerBound(list, entry), 0, entry);
    this.#byId.set(job.id, entry);
    this.#perClass.set(job.gpu, (this.#perClass.get(job.gpu) ?? 0) + 1);
    const queued = (this.#perPrincipal.get(job.principal) ?? 0) + 1;
    this.#perPrincipal.set(job.principal, queued);
    if (back !== undefined && back.entry.job.principal === job.principal) this.#turns.set(job.principal, back.turn);
    else if (queued === 1) this.#turns.set(job.principal, ++this.#turnSeq);
  }

  take(classes: readonly string[]): QueuedJob | undefined {
    let principal: string | undefined;
    let turn = Infinity;
    for (const gpu of classes) {
      for (const p of this.#lists.get(gpu)?.keys() ?? []) {
        const t = this.#turns.get(p)!;
        if (t < turn) [principal, turn] = [p, t];
      }
    }
    if (principal === undefined) return undefined;
    let best: Entry | undefined;
    for (const gpu of classes) {
      const head = this.#lists.get(gpu)?.get(principal)?.[0];
      if (head !== undefined && (best === undefined || compare(head, best) < 0)) best = head;
    }
    this.#delete(best!);
    if (this.#perPrincipal.has(principal)) this.#turns.set(principal, ++this.#turnSeq);
    this.#lastTake = { entry: best!, turn };
    return { ...best!.job };
  }

  remove(id: string): boolean {
    const entry = this.#byId.get(id);
    if (entry === undefined) return false;
    this.#delete(entry);
    return true;
  }

  /**
   * 1 + the jobs of the same class that start before this one if nothing new arrives (queue.ts). Jobs of other
   * classes that a slot serving several may take first are not counted: which those are depends on the slots, which
   * the queue does not know.
   */
  position(id: string): number | undefined {
    const entry = this.#byId.get(id);
    if (entry === undefined) return undefined;
    const { principal, gpu } = entry.job;
    const byPrincipal = this.#lists.get(gpu)!;
    const own = lowerBound(byPrincipal.get(principal)!, entry);
    const turn = this.#turns.get(principal)!;
    let ahead = own;
    for (const [p, list] of byPrincipal) {
      if (p !== principal) ahead += Math.min(list.length, this.#turns.get(p)! < turn ? own + 1 : own);
    }
    return ahead + 1;
  }

  size(principal?: string): number {
    return principal === undefined ? this.#byId.size : (this.#perPrincipal.get(principal) ?? 0);
  }

  /** Jobs queued per GPU class (the metrics' queue depth); classes with none are left out. */
  sizeByClass(): Record<string, number> {
    return Object.fromEntries(this.#perClass);
  }

  /** Removes the jobs whose expiresAtMs ≤ nowMs and returns them, the first to expire first. */
  expire(nowMs: number): QueuedJob[] {
    const expired = [...this.#byId.values()].filter((e) => e.job.expiresAtMs <= nowMs);
    expired.sort((a, b) => a.job.expiresAtMs - b.job.expiresAtMs || a.seq - b.seq);
    for (const entry of expired) this.#delete(entry);
    return expired.map((e) => ({ ...e.job }));
  }

  /** A job taken but not run goes back to its place: its enqueuedAtMs and its principal's turns decide it. */
  putBack(job: QueuedJob): void {
    this.enqueue(job);
  }

  /** Nothing to complete: the store holds the result, and the queue forgot the job when it was taken. */
  settle(): void {}

  /** Only this process enqueues, and every enqueue is followed by a dispatch pass. */
  onAvailable(): void {}

  /** Only this process takes: the 'queued' event follows the enqueue. */
  arrivalPosition(_job?: QueuedJob): number | undefined {
    return undefined;
  }

  /** A job taken here is this process's: it is never lost by the queue. */
  lost(): LostJob[] {
    return [];
  }

  /** Memory always answers. */
  ping(): void {}

  close(): void {}

  /** Takes `entry` out; a principal left with no job leaves the turns (it joins at the back when it comes again). */
  #delete(entry: Entry): void {
    const { id, principal, gpu } = entry.job;
    const byPrincipal = this.#lists.get(gpu)!;
    const list = byPrincipal.get(principal)!;
    list.splice(lowerBound(list, entry), 1);
    if (list.length === 0) byPrincipal.delete(principal);
    if (byPrincipal.size === 0) this.#lists.delete(gpu);
    this.#byId.delete(id);
    const inClass = this.#perClass.get(gpu)! - 1;
    if (inClass === 0) this.#perClass.delete(gpu);
    else this.#perClass.set(gpu, inClass);
    const left = this.#perPrincipal.get(principal)! - 1;
    if (left === 0) {
      this.#perPrincipal.delete(principal);
      this.#turns.delete(principal);
    } else this.#perPrincipal.set(principal, left);
  }
}
