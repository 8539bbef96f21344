// SPDX-License-Identifier: MIT
// The embedded job store: one SQLite file (better-sqlite3, synchronous) behind the async JobStore interface. Every
// statement is prepared once at open. The schema is in migrations.ts; list order and shared messages in common.ts.
//
// Durability: WAL with synchronous=NORMAL by default. A commit appends the transaction to the WAL with write() before
// insert() resolves, so once the client has its 202 the job is in the operating system's hands: a crash, SIGKILL or
// OOM kill of the server loses nothing (server/test/store/sqlite.test.ts kills a writer right after insert to show it).
// What NORMAL gives up is the last commits before a power loss or kernel crash, which would also end every running
// job; FULL closes that gap with an fsync per commit, paid on every event and phase change too. Deployments that want
// the 202 to outlive the machine pass { synchronous: 'FULL' }.
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import type { EvalPhase } from 'cudakit';
import {
  type JobRow,
  checkListFilter,
  checkSeq,
  closedError,
  duplicateJobError,
  fromRow,
  missingJobError,
  parseJson,
  toRow,
  zeroCounts,
} from './common.js';
import {
  type LeaderboardEntry,
  type LeaderboardFilter,
  type LeaderboardStatus,
  type LeaderboardRow,
  type LeaderboardWho,
  type RankedEntry,
  PSEUDONYM_KEY,
  checkLeaderboardEntry,
  checkLeaderboardFilter,
  checkLeaderboardStatus,
  checkLeaderboardWho,
  fromLeaderboardRow,
  pageOf,
  ranksBeforeSql,
  toLeaderboardRow,
} from './leaderboard.js';
import { splitLiterals } from './literals.js';
import { migrate, schemaVersion } from './migrations.js';
import {
  INTERRUPTED_ERROR,
  TERMINAL,
  type JobEvent,
  type JobRecord,
  type JobStatus,
  type JobStore,
  type ListFilter,
} from './store.js';

export interface SqliteStoreOptions {
  /**
   * 'NORMAL' (default): durable against a crash of the process; 'FULL': also against a power loss, at an fsync per
   * commit.
   */
  synchronous?: 'NORMAL' | 'FULL';
  /**
   * How long a write waits for another connection's lock before it fails with SQLITE_BUSY. The wait blocks the event
   * loop, but in embedded mode the server is the only writer: the lock holders are brief (a backup, a sqlite3 shell).
   * Default 5000.
   */
  busyTimeoutMs?: number;
}

/** The connection's settings as SQLite reports them (for /readyz and the tests). */
export interface SqliteStoreInfo {
  file: string;
  journalMode: string;
  synchronous: 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA';
  busyTimeoutMs: number;
  foreignKeys: boolean;
  schemaVersion: number;
}

interface EventRow {
  seq: number;
  type: JobEvent['type'];
  data: string | null;
  at_ms: number;
}

const TERMINAL_SQL = [...TERMINAL].map((s) => `'${s}'`).join(', ');
const SYNCHRONOUS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'] as const;
// After a checkpoint, a WAL grown by a burst of large reports is cut back to this size instead of staying as large.
const WAL_SIZE_LIMIT_BYTES = 64 * 2 ** 20;

function statements(db: Database.Database) {
  return {
    insert: db.prepare(`
      INSERT INTO jobs (id, principal, status, verdict, phase, job, options, idempotency_key, body_hash,
                        created_at_ms, started_at_ms, finished_at_ms, gpu_uuid, report, error)
      VALUES (@id, @principal, @status, @verdict, @phase, @job, @options, @idempotency_key, @body_hash,
              @created_at_ms, @started_at_ms, @finished_at_ms, @gpu_uuid, @report, @error)`),
    get: db.prepare('SELECT * FROM jobs WHERE id = ?'),
    byIdempotencyKey: db.prepare(`
      SELECT * FROM jobs WHERE principal = ? AND idempotency_key = ? AND created_at_ms >= ?
      ORDER BY created_at_ms DESC, id DESC LIMIT 1`),
    queued: db.prepare("SELECT * FROM jobs WHERE status = 'queued' ORDER BY id"),
    markRunning: db.prepare(`
      UPDATE jobs SET status = 'running', gpu_uuid = ?, started_at_ms = ? WHERE id = ? AND status = 'queued'`),
    takeOver: db.prepare(`
      UPDATE jobs SET status = 'running', gpu_uuid = ?, started_at_ms = ?, phase = NULL
      WHERE id = ? AND status IN ('queued', 'running')`),
    setPhase: db.prepare("UPDATE jobs SET phase = ? WHERE id = ? AND status = 'running'"),
    finish: db.prepare(`
      UPDATE jobs SET status = @status, verdict = @verdict, phase = @phase, report = @report, error = @error,
                      finished_at_ms = @at_ms
      WHERE id = @id AND status IN ('queued', 'running')`),
    finishQueued: db.prepare(`
      UPDATE jobs SET status = @status, verdict = @verdict, phase = @phase, report = @report, error = @error,
                      finished_at_ms = @at_ms
      WHERE id = @id AND status = 'queued'`),
    // error.phase only where the job had a phase: JSON's absent key, not null.
    interruptRunning: db.prepare(`
      UPDATE jobs SET status = 'failed', finished_at_ms = @at_ms,
        error = CASE WHEN phase IS NULL THEN json_object('code', @code, 'message', @message)
                     ELSE json_object('code', @code, 'message', @message, 'phase', phase) END
      WHERE status = 'running' RETURNING id`),
    purge: db.prepare(`DELETE FROM jobs WHERE id = ? AND status IN (${TERMINAL_SQL})`),
    deleteFinishedBefore: db.prepare(`DELETE FROM jobs WHERE finished_at_ms < ? AND status IN (${TERMINAL_SQL})`),
    // The next seq of the job in the same statement as the insert, so two appends cannot take one number.
    appendEvent: db.prepare(`
      INSERT INTO job_events (job_id, seq, type, data, at_ms)
      SELECT @job_id, coalesce(max(seq), 0) + 1, @type, @data, @at_ms FROM job_events WHERE job_id = @job_id
      RETURNING seq`),
    events: db.prepare('SELECT seq, type, data, at_ms FROM job_events WHERE job_id = ? AND seq > ? ORDER BY seq'),
    counts: db.prepare('SELECT status, count(*) AS n FROM jobs GROUP BY status'),
    queuedCount: db.prepare(
      "SELECT count(*) AS n FROM jobs WHERE status = 'queued' AND (@principal IS NULL OR principal = @principal)",
    ),
    meanCreatedAt: db.prepare('SELECT avg(created_at_ms) AS mean FROM jobs'),
    insertLiteral: db.prepare('INSERT OR IGNORE INTO literals (hash, text) VALUES (?, ?)'),
    insertJobLiteral: db.prepare('INSERT INTO job_literals (job_id, path, hash) VALUES (?, ?, ?)'),
    jobLiterals: db.prepare(`
      SELECT jl.path, l.text FROM job_literals jl JOIN literals l ON l.hash = jl.hash WHERE jl.job_id = ?`),
    deleteOrphanLiterals: db.prepare(`
      DELETE FROM literals WHERE NOT EXISTS (SELECT 1 FROM job_literals jl WHERE jl.hash = literals.hash)`),
    // Written when the principal has no entry, or replaces it when it ranks before it; changes says which.
    recordScore: db.prepare(`
      INSERT INTO leaderboard (problem, gpu_class, principal, display_name, score, score_low, score_high, job_id,
                               submitted_at_ms, status)
      VALUES (@problem, @gpu_class, @principal, @display_name, @score, @score_low, @score_high, @job_id,
              @submitted_at_ms, @status)
      ON CONFLICT (problem, gpu_class, principal) DO UPDATE SET
        display_name = excluded.display_name, score = excluded.score, score_low = excluded.score_low,
        score_high = excluded.score_high, job_id = excluded.job_id, submitted_at_ms = excluded.submitted_at_ms,
        status = excluded.status
      WHERE ${ranksBeforeSql('excluded', 'leaderboard')}`),
    leaderboard: db.prepare(`
      SELECT * FROM leaderboard WHERE problem = ? AND gpu_class = ?
      ORDER BY score DESC, submitted_at_ms, job_id LIMIT ? OFFSET ?`),
    leaderboardEntry: db.prepare('SELECT * FROM leaderboard WHERE problem = ? AND gpu_class = ? AND principal = ?'),
    removeLeaderboardEntries: db.prepare(`
      DELETE FROM leaderboard WHERE problem = @problem AND (@gpu_class IS NULL OR gpu_class = @gpu_class)
        AND (principal = @principal OR display_name = @display_name)`),
    makeSetting: db.prepare('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING'),
    setting: db.prepare('SELECT value FROM settings WHERE name = ?'),
    setLeaderboardStatus: db.prepare(`
      UPDATE leaderboard SET status = ?
      WHERE problem = ? AND gpu_class = ? AND principal = ? AND job_id = ?`),
  };
}

export class SqliteJobStore implements JobStore {
  readonly file: string;
  readonly #db: Database.Database;
  readonly #sql: ReturnType<typeof statements>;
  /** list()'s statements, one per combination of filters (each uses its own index). */
  readonly #listSql = new Map<string, Database.Statement>();

  private constructor(file: string, db: Database.Database) {
    this.file = file;
    this.#db = db;
    this.#sql = statements(db);
  }

  /**
   * Opens (or creates) the store in `file`: WAL, the chosen synchronous level, foreign keys on, and the schema
   * migrated to the latest version.
   *
   * @throws Error when the file cannot use WAL (a network file system) or its schema is newer than this code's.
   */
  static open(file: string, options: SqliteStoreOptions = {}): SqliteJobStore {
    const { synchronous = 'NORMAL', busyTimeoutMs = 5000 } = options;
    if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
      throw new RangeError(`Expected 'NORMAL' or 'FULL' for options.synchronous but received '${String(synchronous)}'`);
    }
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0 || busyTimeoutMs > 2 ** 31 - 1) {
      throw new RangeError(`Expected a non-negative integer for options.busyTimeoutMs but received ${busyTimeoutMs}`);
    }
    const db = new Database(file, { timeout: busyTimeoutMs });
    try {
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      if (mode !== 'wal' && !db.memory) {
        throw new Error(
          `SQLite could not put ${file} in WAL mode (journal_mode is '${String(mode)}'): ` +
            'the job store needs a local file system (WAL uses shared memory beside the file)',
        );
      }
      db.pragma(`synchronous = ${synchronous}`);
      db.pragma('foreign_keys = ON');
      db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
      migrate(db);
      return new SqliteJobStore(file, db);
    } catch (e) {
      db.close();
      throw e;
    }
  }

  info(): SqliteStoreInfo {
    const db = this.#live();
    return {
      file: this.file,
      journalMode: String(db.pragma('journal_mode', { simple: true })),
      synchronous: SYNCHRONOUS[db.pragma('synchronous', { simple: true }) as number] ?? 'OFF',
      busyTimeoutMs: db.pragma('busy_timeout', { simple: true }) as number,
      foreignKeys: db.pragma('foreign_keys', { simple: true }) === 1,
      schemaVersion: schemaVersion(db),
    };
  }

  async insert(record: JobRecord): Promise<void> {
    this.#live();
    const { json, literals } = splitLiterals(record.job);
    try {
      this.#db.transaction(() => {
        this.#sql.insert.run({ ...toRow(record), job: json });
        for (const l of literals) {
          this.#sql.insertLiteral.run(l.hash, l.text);
          this.#sql.insertJobLiteral.run(record.id, l.path, l.hash);
        }
      })();
    } catch (e) {
      if (e instanceof Database.SqliteError && e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw duplicateJobError(record.id);
      }
      throw e;
    }
  }

  async get(id: string): Promise<JobRecord | undefined> {
    this.#live();
    const row = this.#sql.get.get(id) as JobRow | undefined;
    return row && this.#fromRow(row);
  }

  async findByIdempotencyKey(principal: string, key: string, notBeforeMs: number): Promise<JobRecord | undefined> {
    this.#live();
    const row = this.#sql.byIdempotencyKey.get(principal, key, notBeforeMs) as JobRow | undefined;
    return row && this.#fromRow(row);
  }

  async list(filter: ListFilter): Promise<{ items: JobRecord[]; next: string | undefined }> {
    this.#live();
    checkListFilter(filter);
    const where: string[] = [];
    const params: Record<string, string | number> = { limit: filter.limit + 1 };
    for (const column of ['principal', 'status', 'verdict'] as const) {
      const value = filter[column];
      if (value === undefined) continue;
      where.push(`${column} = @${column}`);
      params[column] = value;
    }
    if (filter.after !== undefined) {
      where.push('id < @after');
      params.after = filter.after;
    }
    const key = where.join(' AND ');
    let statement = this.#listSql.get(key);
    if (statement === undefined) {
      const clause = where.length > 0 ? `WHERE ${key}` : '';
      statement = this.#db.prepare(`SELECT * FROM jobs ${clause} ORDER BY id DESC LIMIT @limit`);
      this.#listSql.set(key, statement);
    }
    // One row past the page says whether there is a next page, without a count.
    const rows = statement.all(params) as JobRow[];
    const items = rows.slice(0, filter.limit).map((row) => this.#fromRow(row));
    return { items, next: rows.length > filter.limit ? items[items.length - 1]!.id : undefined };
  }

  async queued(): Promise<JobRecord[]> {
    this.#live();
    return (this.#sql.queued.all() as JobRow[]).map((row) => this.#fromRow(row));
  }

  async markRunning(id: string, gpuUuid: string, atMs: number, options: { takeOver?: boolean } = {}): Promise<boolean> {
    this.#live();
    const statement = options.takeOver === true ? this.#sql.takeOver : this.#sql.markRunning;
    return statement.run(gpuUuid, atMs, id).changes === 1;
  }

  async setPhase(id: string, phase: EvalPhase | 'profile'): Promise<void> {
    this.#live();
    this.#sql.setPhase.run(phase, id);
  }

  async finish(id: string, outcome: Parameters<JobStore['finish']>[1]): Promise<boolean> {
    this.#live();
    const statement = outcome.onlyIfQueued === true ? this.#sql.finishQueued : this.#sql.finish;
    const { entry } = outcome;
    if (entry !== undefined) checkLeaderboardEntry(entry);
    // The end and its board entry in one transaction: a stored PASSED result is never missing from its board.
    return this.#db.transaction(() => {
      const result = statement.run({
        id,
        status: outcome.status,
        verdict: outcome.verdict ?? null,
        phase: outcome.phase ?? null,
        report: outcome.report ?? null,
        error: outcome.error === undefined ? null : JSON.stringify(outcome.error),
        at_ms: outcome.atMs,
      });
      if (result.changes !== 1) return false;
      if (entry !== undefined) this.#sql.recordScore.run(toLeaderboardRow(entry));
      return true;
    })();
  }

  async interruptRunning(atMs: number): Promise<string[]> {
    this.#live();
    const rows = this.#sql.interruptRunning.all({ at_ms: atMs, ...INTERRUPTED_ERROR }) as { id: string }[];
    return rows.map((r) => r.id).sort();
  }

  async purge(id: string): Promise<boolean> {
    this.#live();
    return this.#db.transaction(() => {
      const purged = this.#sql.purge.run(id).changes === 1;
      if (purged) this.#sql.deleteOrphanLiterals.run();
      return purged;
    })();
  }

  async deleteFinishedBefore(atMs: number): Promise<number> {
    this.#live();
    return this.#db.transaction(() => {
      const deleted = this.#sql.deleteFinishedBefore.run(atMs).changes;
      if (deleted > 0) this.#sql.deleteOrphanLiterals.run();
      return deleted;
    })();
  }

  /** The record of `row`, its large literals put back (store/literals.ts). */
  #fromRow(row: JobRow): JobRecord {
    return fromRow(row, this.#sql.jobLiterals.all(row.id) as { path: string; text: string }[]);
  }

  async appendEvent(event: Omit<JobEvent, 'seq'>): Promise<JobEvent> {
    this.#live();
    const data = event.data === undefined ? null : JSON.stringify(event.data);
    try {
      const row = this.#sql.appendEvent.get({ job_id: event.jobId, type: event.type, data, at_ms: event.atMs }) as {
        seq: number;
      };
      return { seq: row.seq, jobId: event.jobId, type: event.type, data: parseJson(data), atMs: event.atMs };
    } catch (e) {
      if (e instanceof Database.SqliteError && e.code === 'SQLITE_CONSTRAINT_FOREIGNKEY') {
        throw missingJobError(event.jobId);
      }
      throw e;
    }
  }

  async events(jobId: string, afterSeq: number): Promise<JobEvent[]> {
    this.#live();
    checkSeq('afterSeq', afterSeq);
    const rows = this.#sql.events.all(jobId, afterSeq) as EventRow[];
    return rows.map((r) => ({ seq: r.seq, jobId, type: r.type, data: parseJson(r.data), atMs: r.at_ms }));
  }

  async queuedCount(principal?: string): Promise<number> {
    this.#live();
    return (this.#sql.queuedCount.get({ principal: principal ?? null }) as { n: number }).n;
  }

  async counts(): Promise<Record<JobStatus, number>> {
    this.#live();
    const counts = zeroCounts();
    for (const row of this.#sql.counts.all() as { status: JobStatus; n: number }[]) counts[row.status] = row.n;
    return counts;
  }

  async meanCreatedAtMs(): Promise<number | undefined> {
    this.#live();
    const row = this.#sql.meanCreatedAt.get() as { mean: number | null };
    return row.mean ?? undefined;
  }

  async recordScore(entry: LeaderboardEntry): Promise<boolean> {
    this.#live();
    checkLeaderboardEntry(entry);
    return this.#sql.recordScore.run(toLeaderboardRow(entry)).changes === 1;
  }

  async leaderboard(filter: LeaderboardFilter): Promise<{ entries: RankedEntry[]; next: number | undefined }> {
    this.#live();
    checkLeaderboardFilter(filter);
    const { problem, gpuClass, limit, offset = 0 } = filter;
    const rows = this.#sql.leaderboard.all(problem, gpuClass, limit + 1, offset) as LeaderboardRow[];
    return pageOf(rows, filter, fromLeaderboardRow);
  }

  async leaderboardEntry(problem: string, gpuClass: string, principal: string): Promise<LeaderboardEntry | undefined> {
    this.#live();
    const row = this.#sql.leaderboardEntry.get(problem, gpuClass, principal) as LeaderboardRow | undefined;
    return row && fromLeaderboardRow(row);
  }

  async removeLeaderboardEntries(problem: string, who: LeaderboardWho, gpuClass?: string): Promise<number> {
    this.#live();
    checkLeaderboardWho(who);
    return this.#sql.removeLeaderboardEntries.run({
      problem,
      gpu_class: gpuClass ?? null,
      principal: 'principal' in who ? who.principal : null,
      display_name: 'displayName' in who ? who.displayName : null,
    }).changes;
  }

  async pseudonymKey(): Promise<Uint8Array> {
    this.#live();
    // Made once: a second process that races the first keeps the first's.
    this.#sql.makeSetting.run(PSEUDONYM_KEY, randomBytes(32));
    const row = this.#sql.setting.get(PSEUDONYM_KEY) as { value: Buffer };
    return new Uint8Array(row.value);
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
    return this.#sql.setLeaderboardStatus.run(status, problem, gpuClass, principal, jobId).changes === 1;
  }

  async close(): Promise<void> {
    if (!this.#db.open) return;
    try {
      // SQLite's advice for long-lived connections: refresh the planner's statistics where they went stale.
      this.#db.pragma('optimize');
    } catch {
      // Best effort: another connection holding the write lock is no reason to fail a close.
    }
    this.#db.close();
  }

  #live(): Database.Database {
    if (!this.#db.open) throw closedError();
    return this.#db;
  }
}
