// SPDX-License-Identifier: MIT
// The leaderboards the job store keeps beside the jobs: per problem with cases and GPU class, each principal's best
// PASSED submission. What every store shares is here: the entry's shape, the order of a board (score descending; on
// a tie the earlier submission, then the smaller job id, so two entries never tie), the checks of what a caller hands
// in (in the stores' one message format) and the SQL stores' row. An entry outlives its job: retention deletes
// jobs, never a place on a board (only an admin's remove does).
import { describe } from './messages.js';

export type LeaderboardStatus = 'provisional' | 'confirmed';

/** A principal's best PASSED submission to a problem on a GPU class. */
export interface LeaderboardEntry {
  problem: string;
  gpuClass: string;
  principal: string;
  /** What the board shows for the principal (never the principal itself, nor a token). */
  displayName: string;
  score: number;
  scoreLow: number;
  scoreHigh: number;
  jobId: string;
  /** When the job was submitted, ms. */
  submittedAt: number;
  /** 'provisional' until a re-run confirms it. */
  status: LeaderboardStatus;
}

export interface RankedEntry extends LeaderboardEntry {
  /** 1 for the best on its board. */
  rank: number;
}

export interface LeaderboardFilter {
  problem: string;
  gpuClass: string;
  /** 1 to LEADERBOARD_LIMIT_MAX. */
  limit: number;
  /** Entries to skip (the next page's `next`). Default 0. */
  offset?: number;
}

/** Who an admin's remove names: the principal, or the name the board shows. */
export type LeaderboardWho = { principal: string } | { displayName: string };

/** The settings row (SQL stores) that keeps LeaderboardStore.pseudonymKey(). */
export const PSEUDONYM_KEY = 'leaderboard_pseudonym_key';

/** The most entries a page of a board holds. */
export const LEADERBOARD_LIMIT_MAX = 100;
/** The deepest a page may start: a board is read from its top. */
export const LEADERBOARD_OFFSET_MAX = 100_000;

/** The leaderboard's half of the job store (store.ts's JobStore extends it). */
export interface LeaderboardStore {
  /**
   * Records a PASSED result: it becomes the principal's entry on its board when the principal has none there, or when
   * it ranks before the one it has (a higher score; on a tie an earlier submission). Resolves whether it became the
   * entry; the same job recorded twice changes nothing the second time.
   */
  recordScore(entry: LeaderboardEntry): Promise<boolean>;
  /** A page of a board, best first, each entry with its rank; `next` is the offset of the next page, if any. */
  leaderboard(filter: LeaderboardFilter): Promise<{ entries: RankedEntry[]; next: number | undefined }>;
  /** A principal's entry on a board. */
  leaderboardEntry(problem: string, gpuClass: string, principal: string): Promise<LeaderboardEntry | undefined>;
  /** Removes the entries of `who` on a problem's board of `gpuClass`, or on all its boards; returns how many. */
  removeLeaderboardEntries(problem: string, who: LeaderboardWho, gpuClass?: string): Promise<number>;
  /**
   * The key the boards' display names are made with (schedule/leaderboard.ts's pseudonymOf): 32 random bytes, made
   * the first time they are asked for and kept with the boards, so every process of a server (API nodes and agents
   * alike) names a principal the same way, across restarts.
   */
  pseudonymKey(): Promise<Uint8Array>;
  /**
   * Sets a principal's entry 'confirmed' (a re-run agreed) or 'provisional' again (an admin's re-run did not), if it is
   * still the entry of job `jobId`; resolves whether it was.
   */
  setLeaderboardStatus(
    problem: string,
    gpuClass: string,
    principal: string,
    jobId: string,
    status: LeaderboardStatus,
  ): Promise<boolean>;
}

/** Whether `a` ranks before `b` on one board: a higher score, then an earlier submission, then a smaller job id. */
export function ranksBefore(a: LeaderboardEntry, b: LeaderboardEntry): boolean {
  if (a.score !== b.score) return a.score > b.score;
  if (a.submittedAt !== b.submittedAt) return a.submittedAt < b.submittedAt;
  return a.jobId < b.jobId;
}

function checkName(name: string, value: unknown): void {
  if (typeof value !== 'string' || value === '' || value.length > 256) {
    throw new RangeError(
      `Expected a non-empty string of at most 256 characters for ${name} but received ${describe(value)}`,
    );
  }
}

/** @throws RangeError naming the first field of `entry` a board cannot hold. */
export function checkLeaderboardEntry(entry: LeaderboardEntry): void {
  for (const key of ['problem', 'gpuClass', 'principal', 'displayName', 'jobId'] as const) {
    checkName(`entry.${key}`, entry[key]);
  }
  for (const key of ['score', 'scoreLow', 'scoreHigh'] as const) {
    const value = entry[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw new RangeError(`Expected a finite positive number for entry.${key} but received ${describe(value)}`);
    }
  }
  if (!Number.isSafeInteger(entry.submittedAt) || entry.submittedAt < 0) {
    throw new RangeError(
      `Expected a non-negative integer for entry.submittedAt but received ${describe(entry.submittedAt)}`,
    );
  }
  checkLeaderboardStatus(entry.status, 'entry.status');
}

/** @throws RangeError unless `status` is 'provisional' or 'confirmed'. */
export function checkLeaderboardStatus(status: LeaderboardStatus, name = 'status'): void {
  if (status !== 'provisional' && status !== 'confirmed') {
    throw new RangeError(`Expected 'provisional' or 'confirmed' for ${name} but received ${describe(status)}`);
  }
}

/** @throws RangeError for a limit outside 1 to LEADERBOARD_LIMIT_MAX or an offset outside 0 to its maximum. */
export function checkLeaderboardFilter(filter: LeaderboardFilter): void {
  checkName('filter.problem', filter.problem);
  checkName('filter.gpuClass', filter.gpuClass);
  const { limit, offset = 0 } = filter;
  if (!Number.isInteger(limit) || limit < 1 || limit > LEADERBOARD_LIMIT_MAX) {
    throw new RangeError(
      `Expected an integer in [1, ${LEADERBOARD_LIMIT_MAX}] for filter.limit but received ${describe(limit)}`,
    );
  }
  if (!Number.isInteger(offset) || offset < 0 || offset > LEADERBOARD_OFFSET_MAX) {
    throw new RangeError(
      `Expected an integer in [0, ${LEADERBOARD_OFFSET_MAX}] for filter.offset but received ${describe(offset)}`,
    );
  }
}

/** @throws RangeError for a `who` that names neither a principal nor a display name. */
export function checkLeaderboardWho(who: LeaderboardWho): void {
  if ('principal' in who) checkName('who.principal', who.principal);
  else checkName('who.displayName', (who as { displayName?: unknown }).displayName);
}

/** A page of `rows` read with LIMIT limit + 1 at `offset`: the entries with their ranks, and the next offset. */
export function pageOf<T>(
  rows: readonly T[],
  filter: LeaderboardFilter,
  entryOf: (row: T) => LeaderboardEntry,
): { entries: RankedEntry[]; next: number | undefined } {
  const offset = filter.offset ?? 0;
  const entries = rows.slice(0, filter.limit).map((row, i) => ({ ...entryOf(row), rank: offset + i + 1 }));
  return { entries, next: rows.length > filter.limit ? offset + filter.limit : undefined };
}

/** An entry as both SQL stores keep it. */
export interface LeaderboardRow {
  problem: string;
  gpu_class: string;
  principal: string;
  display_name: string;
  score: number;
  score_low: number;
  score_high: number;
  job_id: string;
  submitted_at_ms: number;
  status: LeaderboardStatus;
}

export function toLeaderboardRow(e: LeaderboardEntry): LeaderboardRow {
  return {
    problem: e.problem,
    gpu_class: e.gpuClass,
    principal: e.principal,
    display_name: e.displayName,
    score: e.score,
    score_low: e.scoreLow,
    score_high: e.scoreHigh,
    job_id: e.jobId,
    submitted_at_ms: e.submittedAt,
    status: e.status,
  };
}

export function fromLeaderboardRow(row: LeaderboardRow): LeaderboardEntry {
  return {
    problem: row.problem,
    gpuClass: row.gpu_class,
    principal: row.principal,
    displayName: row.display_name,
    score: row.score,
    scoreLow: row.score_low,
    scoreHigh: row.score_high,
    jobId: row.job_id,
    submittedAt: row.submitted_at_ms,
    status: row.status,
  };
}

/**
 * The WHERE clause of a better result in an upsert: `fresh` (the row being written) ranks before `old` (the one
 * there), in ranksBefore's order. Both SQL stores use it with their own names for the two rows.
 */
export function ranksBeforeSql(fresh: string, old: string): string {
  return (
    `${fresh}.score > ${old}.score OR (${fresh}.score = ${old}.score AND ` +
    `(${fresh}.submitted_at_ms < ${old}.submitted_at_ms OR (${fresh}.submitted_at_ms = ${old}.submitted_at_ms ` +
    `AND ${fresh}.job_id < ${old}.job_id)))`
  );
}
