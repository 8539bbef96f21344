// SPDX-License-Identifier: MIT
// The PostgreSQL store's leaderboards (store/leaderboard.ts): its statements and the methods PostgresJobStore hands
// them to, each on the store's own query function (its errors, an outage's included, are the store's). A record is
// one upsert, so of two results of one principal recorded at once by two processes, the better one stays: the
// conflicting insert waits on the row's lock, then compares with what the other wrote.
import type pg from 'pg';
import {
  type LeaderboardEntry,
  type LeaderboardFilter,
  type LeaderboardStatus,
  type LeaderboardRow,
  type LeaderboardWho,
  type RankedEntry,
  checkLeaderboardEntry,
  checkLeaderboardFilter,
  checkLeaderboardStatus,
  checkLeaderboardWho,
  fromLeaderboardRow,
  pageOf,
  ranksBeforeSql,
} from './leaderboard.js';

/** One statement, as PostgresJobStore runs it. */
export type LeaderboardQuery = <R extends pg.QueryResultRow = pg.QueryResultRow>(
  text: string,
  values?: unknown[],
) => Promise<pg.QueryResult<R>>;

const SQL = {
  record: `
    INSERT INTO leaderboard AS old (problem, gpu_class, principal, display_name, score, score_low, score_high, job_id,
                                    submitted_at_ms, status)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT (problem, gpu_class, principal) DO UPDATE SET
      display_name = excluded.display_name, score = excluded.score, score_low = excluded.score_low,
      score_high = excluded.score_high, job_id = excluded.job_id, submitted_at_ms = excluded.submitted_at_ms,
      status = excluded.status
    WHERE ${ranksBeforeSql('excluded', 'old')}`,
  page: `
    SELECT * FROM leaderboard WHERE problem = $1 AND gpu_class = $2
    ORDER BY score DESC, submitted_at_ms, job_id LIMIT $3 OFFSET $4`,
  entry: 'SELECT * FROM leaderboard WHERE problem = $1 AND gpu_class = $2 AND principal = $3',
  remove: `
    DELETE FROM leaderboard WHERE problem = $1 AND ($2::text IS NULL OR gpu_class = $2)
      AND (principal = $3 OR display_name = $4)`,
  setStatus: `
    UPDATE leaderboard SET status = $5
    WHERE problem = $1 AND gpu_class = $2 AND principal = $3 AND job_id = $4`,
};

export async function recordScore(query: LeaderboardQuery, entry: LeaderboardEntry): Promise<boolean> {
  checkLeaderboardEntry(entry);
  const e = entry;
  const values = [e.problem, e.gpuClass, e.principal, e.displayName, e.score, e.scoreLow, e.scoreHigh, e.jobId];
  return (await query(SQL.record, [...values, e.submittedAt, e.status])).rowCount === 1;
}

export async function leaderboardPage(
  query: LeaderboardQuery,
  filter: LeaderboardFilter,
): Promise<{ entries: RankedEntry[]; next: number | undefined }> {
  checkLeaderboardFilter(filter);
  const { problem, gpuClass, limit, offset = 0 } = filter;
  const { rows } = await query<LeaderboardRow>(SQL.page, [problem, gpuClass, limit + 1, offset]);
  return pageOf(rows, filter, fromLeaderboardRow);
}

export async function leaderboardEntry(
  query: LeaderboardQuery,
  problem: string,
  gpuClass: string,
  principal: string,
): Promise<LeaderboardEntry | undefined> {
  const { rows } = await query<LeaderboardRow>(SQL.entry, [problem, gpuClass, principal]);
  return rows[0] && fromLeaderboardRow(rows[0]);
}

export async function removeLeaderboardEntries(
  query: LeaderboardQuery,
  problem: string,
  who: LeaderboardWho,
  gpuClass: string | undefined,
): Promise<number> {
  checkLeaderboardWho(who);
  const principal = 'principal' in who ? who.principal : null;
  const displayName = 'displayName' in who ? who.displayName : null;
  return (await query(SQL.remove, [problem, gpuClass ?? null, principal, displayName])).rowCount ?? 0;
}

export async function setLeaderboardStatus(
  query: LeaderboardQuery,
  keys: [problem: string, gpuClass: string, principal: string, jobId: string, status: LeaderboardStatus],
): Promise<boolean> {
  checkLeaderboardStatus(keys[4]);
  return (await query(SQL.setStatus, keys)).rowCount === 1;
}
