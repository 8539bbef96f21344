// SPDX-License-Identifier: MIT
// A JobStore in memory, for tests of the layers above (API, scheduler, supervisors) and for a throwaway server. It
// passes the same contract tests as the SQLite store (server/test/store/store.contract.ts) and, like it, hands out
// copies: a caller that edits a record it got back changes nothing stored.
import { randomBytes } from 'node:crypto';
import { checkListFilter, checkSeq, closedError, duplicateJobError, missingJobError, zeroCounts } from './common.js';
import {
  type LeaderboardEntry,
  type LeaderboardFilter,
  type LeaderboardStatus,
  type LeaderboardWho,
  type RankedEntry,
  checkLeaderboardEntry,
  checkLeaderboardFilter,
  checkLeaderboardStatus,
  checkLeaderboardWho,
  pageOf,
  ranksBefore,
} from './leaderboard.js';
import { INTERRUPTED_ERROR, TERMINAL, type JobEvent, type JobRecord, type JobStatus, type JobStore } from './store.js';

export class MemoryJobStore implements JobStore {
  readonly #jobs = new Map<string, JobRecord>();
  readonly #events = new Map<string, JobEvent[]>();
  /** Keyed by leaderboardKey(problem, gpuClass, principal). */
  readonly #leaderboard = new Map<string, LeaderboardEntry>();
  readonly #pseudonymKey = new Uint8Array(randomBytes(32));
  #closed = false;

  async pseudonymKey(): Promise<Uint8Array> {
    this.#live();
    return new Uint8Array(this.#pseudonymKey);
  }

  async insert(record: JobRecord): Promise<void> {
    this.#live();
    if (this.#jobs.has(record.id)) throw duplicateJobError(record.id);
    this.#jobs.set(record.id, structuredClone(record));
  }

  async get(id: string): Promise<JobRecord | undefined> {
    this.#live();
    const record = this.#jobs.get(id);
    return record && structuredClone(record);
  }

  async findByIdempotencyKey(principal: string, key: string, notBeforeMs: number): Promise<JobRecord | undefined> {
    this.#live();
    let found: JobRecord | undefined;
    for (const r of this.#jobs.values()) {
      if (r.principal !== principal || r.idempotencyKey !== key || r.createdAt < notBeforeMs) continue;
      if (
        found === undefined ||
        r.createdAt > found.createdAt ||
        (r.createdAt === found.createdAt && r.id > found.id)
      ) {
        found = r;
      }
    }
    return found && structuredClone(found);
  }

  async list(filter: Parameters<JobStore['list']>[0]): Promise<{ items: JobRecord[]; next: string | undefined }> {
    this.#live();
    checkListFilter(filter);
    const { principal, status, verdict, after, limit } = filter;
    const matching = [...this.#jobs.values()]
      .filter(
        (r) =>
          (principal === undefined || r.principal === principal) &&
          (status === undefined || r.status === status) &&
          (verdict === undefined || r.verdict === verdict) &&
          (after === undefined || r.id < after),
      )
      .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    const items = matching.slice(0, limit).map((r) => structuredClone(r));
    return { items, next: matching.length > limit ? items[items.length - 1]!.id : undefined };
  }

  async queued(): Promise<JobRecord[]> {
    this.#live();
    return [...this.#jobs.values()]
      .filter((r) => r.status === 'queued')
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((r) => structuredClone(r));
  }

  async markRunning(id: string, gpuUuid: string, atMs: number, options: { takeOver?: boolean } = {}): Promise<boolean> {
    this.#live();
    const r = this.#jobs.get(id);
    if (r?.status === 'queued') {
      Object.assign(r, { status: 'running', gpuUuid, startedAt: atMs });
      return true;
    }
    if (r?.status !== 'running' || options.takeOver !== true) return false;
    Object.assign(r, { gpuUuid, startedAt: atMs, phase: undefined });
    return true;
  }

  async setPhase(id: string, phase: NonNullable<JobRecord['phase']>): Promise<void> {
    this.#live();
    const r = this.#jobs.get(id);
    if (r?.status === 'running') r.phase = phase;
  }

  async finish(id: string, outcome: Parameters<JobStore['finish']>[1]): Promise<boolean> {
    this.#live();
    const r = this.#jobs.get(id);
    if (r === undefined || TERMINAL.has(r.status)) return false;
    if (outcome.onlyIfQueued === true && r.status !== 'queued') return false;
    if (outcome.entry !== undefined) checkLeaderboardEntry(outcome.entry); // before anything changes
    const { status, verdict, phase, report, error, atMs } = structuredClone(outcome);
    Object.assign(r, { status, verdict, phase, report, error, finishedAt: atMs });
    if (outcome.entry !== undefined) await this.recordScore(outcome.entry);
    return true;
  }

  async interruptRunning(atMs: number): Promise<string[]> {
    this.#live();
    const ids: string[] = [];
    for (const r of this.#jobs.values()) {
      if (r.status !== 'running') continue;
      r.status = 'failed';
      r.finishedAt = atMs;
      r.error = r.phase === undefined ? { ...INTERRUPTED_ERROR } : { ...INTERRUPTED_ERROR, phase: r.phase };
      ids.push(r.id);
    }
    return ids.sort();
  }

  async purge(id: string): Promise<boolean> {
    this.#live();
    const r = this.#jobs.get(id);
    if (r === undefined || !TERMINAL.has(r.status)) return false;
    this.#delete(id);
    return true;
  }

  async deleteFinishedBefore(atMs: number): Promise<number> {
    this.#live();
    let deleted = 0;
    for (const r of [...this.#jobs.values()]) {
      if (!TERMINAL.has(r.status) || r.finishedAt === undefined || r.finishedAt >= atMs) continue;
      this.#delete(r.id);
      deleted++;
    }
    return deleted;
  }

  async appendEvent(event: Omit<JobEvent, 'seq'>): Promise<JobEvent> {
    this.#live();
    if (!this.#jobs.has(event.jobId)) throw missingJobError(event.jobId);
    const list = this.#events.get(event.jobId) ?? [];
    const stored: JobEvent = { ...structuredClone(event), seq: list.length + 1 };
    list.push(stored);
    this.#events.set(event.jobId, list);
    return structuredClone(stored);
  }

  async events(jobId: string, afterSeq: number): Promise<JobEvent[]> {
    this.#live();
    checkSeq('afterSeq', afterSeq);
    // seq n is at index n - 1.
    return (this.#events.get(jobId) ?? []).slice(afterSeq).map((e) => structuredClone(e));
  }

  async queuedCount(principal?: string): Promise<number> {
    this.#live();
    let n = 0;
    for (const r of this.#jobs.values()) {
      if (r.status === 'queued' && (principal === undefined || r.principal === principal)) n++;
    }
    return n;
  }

  async counts(): Promise<Record<JobStatus, number>> {
    this.#live();
    const counts = zeroCounts();
    for (const r of this.#jobs.values()) counts[r.status]++;
    return counts;
  }

  async meanCreatedAtMs(): Promise<number | undefined> {
    this.#live();
    if (this.#jobs.size === 0) return undefined;
    let sum = 0;
    for (const r of this.#jobs.values()) sum += r.createdAt;
    return sum / this.#jobs.size;
  }

  async recordScore(entry: LeaderboardEntry): Promise<boolean> {
    this.#live();
    checkLeaderboardEntry(entry);
    const key = leaderboardKey(entry.problem, entry.gpuClass, entry.principal);
    const held = this.#leaderboard.get(key);
    if (held !== undefined && !ranksBefore(entry, held)) return false;
    this.#leaderboard.set(key, { ...entry });
    return true;
  }

  async leaderboard(filter: LeaderboardFilter): Promise<{ entries: RankedEntry[]; next: number | undefined }> {
    this.#live();
    checkLeaderboardFilter(filter);
    const offset = filter.offset ?? 0;
    const board = [...this.#leaderboard.values()]
      .filter((e) => e.problem === filter.problem && e.gpuClass === filter.gpuClass)
      .sort((a, b) => (ranksBefore(a, b) ? -1 : 1));
    return pageOf(board.slice(offset, offset + filter.limit + 1), filter, (e) => ({ ...e }));
  }

  async leaderboardEntry(problem: string, gpuClass: string, principal: string): Promise<LeaderboardEntry | undefined> {
    this.#live();
    const entry = this.#leaderboard.get(leaderboardKey(problem, gpuClass, principal));
    return entry && { ...entry };
  }

  async removeLeaderboardEntries(problem: string, who: LeaderboardWho, gpuClass?: string): Promise<number> {
    this.#live();
    checkLeaderboardWho(who);
    let removed = 0;
    for (const [key, e] of [...this.#leaderboard]) {
      const named = 'principal' in who ? e.principal === who.principal : e.displayName === who.displayName;
      if (e.problem !== problem || (gpuClass !== undefined && e.gpuClass !== gpuClass) || !named) continue;
      this.#leaderboard.delete(key);
      removed++;
    }
    return removed;
  }

  async setLeaderboardStatus(
    problem: string,
    gpuClass: string,
    principal: string,
    jobId: string,
    status: LeaderboardStatus,
  ): Promise<boolean> {
    this.#live();
    checkLeaderboardStatus(status);
    const entry = this.#leaderboard.get(leaderboardKey(problem, gpuClass, principal));
    if (entry?.jobId !== jobId) return false;
    entry.status = status;
    return true;
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #delete(id: string): void {
    this.#jobs.delete(id);
    this.#events.delete(id);
  }

  #live(): void {
    if (this.#closed) throw closedError();
  }
}

/** One key per (problem, GPU class, principal): JSON, so no name can run into the next. */
function leaderboardKey(problem: string, gpuClass: string, principal: string): string {
  return JSON.stringify([problem, gpuClass, principal]);
}
