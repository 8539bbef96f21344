// SPDX-License-Identifier: MIT
// The distributed mode's job store: PostgreSQL, written by several API processes and GPU agents at once. Every method
// means what SqliteJobStore's does (same messages through common.ts, same order and cursors, large literals stored
// once by hash through literals.ts), and it passes the same contract tests. What differs is that the races are real:
// - a state change is one conditional UPDATE (finish, markRunning), so of two processes finishing one job, exactly
//   one wins and the first result stays;
// - appendEvent takes the job's next seq from a counter on the job's row in the same statement as the insert: the
//   UPDATE locks the row, so two processes appending to one job get 1, 2, … without a gap or a duplicate;
// - a literal that a job is being inserted with is locked until that insert commits, so a purge of the literal's
//   last other job cannot delete it in between.
//
// Durability: insert resolves after COMMIT, and PostgreSQL's default synchronous_commit = on flushes the WAL first,
// so a job that got its 202 survives a crash of the database server.
//
// Errors: a database that cannot be reached (refused, cut, a connect timeout, a server shutting down or starting up)
// rejects with StoreUnavailableError, which the HTTP layer answers with 503 and Retry-After; every other error stays
// what it is. The pool connects lazily: calls after an outage work again once the server is back.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
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
import { addressOf, Reachability, type ReachabilityLog } from '../reachability.js';
import {
  type LeaderboardEntry,
  type LeaderboardFilter,
  type LeaderboardStatus,
  type LeaderboardWho,
  type RankedEntry,
  PSEUDONYM_KEY,
  checkLeaderboardEntry,
} from './leaderboard.js';
import { splitLiterals } from './literals.js';
import * as boards from './postgres-leaderboard.js';
import { POSTGRES_LATEST_VERSION, POSTGRES_MIGRATIONS } from './postgres-migrations.js';
import {
  INTERRUPTED_ERROR,
  StoreUnavailableError,
  TERMINAL,
  type JobEvent,
  type JobRecord,
  type JobStatus,
  type JobStore,
  type ListFilter,
} from './store.js';

export interface PostgresStoreOptions {
  /** Connections in this process's pool. Default 10. */
  maxConnections?: number;
  /** How long a new connection may take before the call fails with StoreUnavailableError. Default 2000. */
  connectTimeoutMs?: number;
  /**
   * The server cancels a statement (a lock wait included) that runs longer. Also bounds, with a small margin, how long
   * a call waits on a server that stopped answering without closing the connection. Default 10000.
   */
  statementTimeoutMs?: number;
  /** Where "PostgreSQL at host:port is not reachable" and "... is reachable again" go, once per change. */
  log?: ReachabilityLog;
}

/** What the store is connected to (for /readyz and the tests). */
export interface PostgresStoreInfo {
  /** The URL without its password. */
  url: string;
  /** The server's version, as SHOW server_version gives it ('15.18 (Debian 15.18-0+deb12u1)'). */
  serverVersion: string;
  schemaVersion: number;
  maxConnections: number;
  statementTimeoutMs: number;
}

/** pg_advisory_xact_lock's key pair for migrating: 'cuda' in ASCII, then 1. */
const MIGRATION_LOCK = [0x63756461, 1] as const;
/** How often a store that lost its database asks it again. */
const RECONNECT_PROBE_MS = 2000;
/** How much longer than the statement timeout a call waits for an answer before it gives the connection up. */
const QUERY_TIMEOUT_MARGIN_MS = 2000;

const TERMINAL_SQL = [...TERMINAL].map((s) => `'${s}'`).join(', ');

// Per pool, not pg's global parsers: bigint (ms, counts: all below 2^53) as a number; json as its text, parsed here
// where needed (a job's JSON gets its literals back before it is parsed).
const PARSERS = new Map<number, (text: string) => unknown>([
  [pg.types.builtins.INT8, Number],
  [pg.types.builtins.JSON, (text) => text],
]);
const TYPES = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') => PARSERS.get(oid) ?? pg.types.getTypeParser(oid, format),
} as pg.CustomTypesConfig;

// The SQLSTATEs of a database that cannot serve now: class 08 (connection exception), 57P01 admin shutdown, 57P02
// crash shutdown, 57P03 cannot connect now (starting up, recovering), 53300 too many connections. And the socket's.
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);
const UNAVAILABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// The starts of pg's own messages for a connection lost, never made, or not answering.
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error',
];

/** Whether `e` says the database cannot be reached (rather than that a statement failed). */
export function isConnectionError(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (code.startsWith('08') || UNAVAILABLE_STATES.has(code))) return true;
  if (typeof code === 'string' && UNAVAILABLE_ERRNOS.has(code)) return true;
  if (UNAVAILABLE_MESSAGES.some((start) => e.message.startsWith(start))) return true;
  // Node tries each address of 'localhost' (::1, 127.0.0.1) and reports all the refusals together.
  return e instanceof AggregateError && e.errors.length > 0 && e.errors.every(isConnectionError);
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(an unparsable PostgreSQL URL)';
  }
}

/** A job's row with its large literals, as the queries select it. */
interface PostgresJobRow extends JobRow {
  /** JSON: [{ path, text }] of the job's large literals, or null. */
  literals: string | null;
}

interface EventRow {
  seq: number;
  type: JobEvent['type'];
  data: string | null;
  at_ms: number;
}

type Query = <R extends pg.QueryResultRow = pg.QueryResultRow>(
  text: string,
  values?: unknown[],
) => Promise<pg.QueryResult<R>>;

/**
 * The jobs that `inner` selects (a SELECT of jobs' columns), each with its literals, in `order`. The literals are read
 * in the same statement (one snapshot: a purge between two reads cannot take them away) and only for the rows that
 * `inner` kept, after its LIMIT.
 */
function withLiterals(inner: string, order: string): string {
  return `
    SELECT page.*, (
      SELECT json_agg(json_build_object('path', jl.path, 'text', l.value))
      FROM job_literals jl JOIN literals l ON l.hash = jl.hash WHERE jl.job_id = page.id
    ) AS literals
    FROM (${inner}) page ORDER BY ${order}`;
}

const SQL = {
  insert: `
    INSERT INTO jobs (id, principal, status, verdict, phase, job, options, idempotency_key, body_hash,
                      created_at_ms, started_at_ms, finished_at_ms, gpu_uuid, report, error)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
  // A literal already stored is locked (KEY SHARE, as a foreign key check would) so that a purge cannot delete it
  // before this insert commits; one not yet stored is written, or locked if another insert wrote it meanwhile.
  lockLiteral: 'SELECT 1 FROM literals WHERE hash = $1 FOR KEY SHARE',
  insertLiteral: `
    INSERT INTO literals (hash, value) VALUES ($1, $2) ON CONFLICT (hash) DO UPDATE SET hash = excluded.hash`,
  insertJobLiteral: 'INSERT INTO job_literals (job_id, path, hash) VALUES ($1, $2, $3)',
  get: withLiterals('SELECT * FROM jobs WHERE id = $1', 'page.id'),
  byIdempotencyKey: withLiterals(
    `SELECT * FROM jobs WHERE principal = $1 AND idempotency_key = $2 AND created_at_ms >= $3
     ORDER BY created_at_ms DESC, id DESC LIMIT 1`,
    'page.id',
  ),
  queued: withLiterals("SELECT * FROM jobs WHERE status = 'queued'", 'page.id'),
  markRunning: `
    UPDATE jobs SET status = 'running', gpu_uuid = $2, started_at_ms = $3 WHERE id = $1 AND status = 'queued'`,
  takeOver: `
    UPDATE jobs SET status = 'running', gpu_uuid = $2, started_at_ms = $3, phase = NULL
    WHERE id = $1 AND status IN ('queued', 'running')`,
  setPhase: "UPDATE jobs SET phase = $2 WHERE id = $1 AND status = 'running'",
  finish: `
    UPDATE jobs SET status = $2, verdict = $3, phase = $4, report = $5, error = $6, finished_at_ms = $7
    WHERE id = $1 AND status IN ('queued', 'running')`,
  finishQueued: `
    UPDATE jobs SET status = $2, verdict = $3, phase = $4, report = $5, error = $6, finished_at_ms = $7
    WHERE id = $1 AND status = 'queued'`,
  // error.phase only where the job had a phase: JSON's absent key, not null.
  interruptRunning: `
    UPDATE jobs SET status = 'failed', finished_at_ms = $1,
      error = CASE WHEN phase IS NULL THEN json_build_object('code', $2::text, 'message', $3::text)
                   ELSE json_build_object('code', $2::text, 'message', $3::text, 'phase', phase) END
    WHERE status = 'running' RETURNING id`,
  // The deleted jobs, and the hashes of their literals (read in the DELETE's snapshot: before the cascade).
  purge: `
    WITH gone AS (DELETE FROM jobs WHERE id = $1 AND status IN (${TERMINAL_SQL}) RETURNING id)
    SELECT (SELECT count(*) FROM gone) AS n,
           ARRAY(SELECT DISTINCT hash FROM job_literals WHERE job_id IN (SELECT id FROM gone) ORDER BY hash) AS hashes`,
  // Rows another process holds (its own retention sweep, a late event) are left for the next sweep rather than
  // waited for: two sweeps never deadlock.
  deleteFinishedBefore: `
    WITH gone AS (
      DELETE FROM jobs WHERE id IN (
        SELECT id FROM jobs WHERE finished_at_ms < $1 AND status IN (${TERMINAL_SQL}) FOR UPDATE SKIP LOCKED)
      RETURNING id)
    SELECT (SELECT count(*) FROM gone) AS n,
           ARRAY(SELECT DISTINCT hash FROM job_literals WHERE job_id IN (SELECT id FROM gone) ORDER BY hash) AS hashes`,
  // Locks the literals in hash order (as inserts take them), then deletes those no job refers to any more; the
  // DELETE's fresh snapshot sees every insert that held one of the locks.
  lockLiterals: 'SELECT hash FROM literals WHERE hash = ANY($1) ORDER BY hash FOR UPDATE',
  deleteOrphanLiterals: `
    DELETE FROM literals l WHERE l.hash = ANY($1)
      AND NOT EXISTS (SELECT 1 FROM job_literals jl WHERE jl.hash = l.hash)`,
  appendEvent: `
    WITH job AS (UPDATE jobs SET last_event_seq = last_event_seq + 1 WHERE id = $1 RETURNING id, last_event_seq)
    INSERT INTO job_events (job_id, seq, type, data, at_ms) SELECT id, last_event_seq, $2, $3, $4 FROM job
    RETURNING seq`,
  events: 'SELECT seq, type, data, at_ms FROM job_events WHERE job_id = $1 AND seq > $2 ORDER BY seq',
  queuedCount: "SELECT count(*) AS n FROM jobs WHERE status = 'queued' AND ($1::text IS NULL OR principal = $1)",
  counts: 'SELECT status, count(*) AS n FROM jobs GROUP BY status',
  meanCreatedAt: 'SELECT avg(created_at_ms)::float8 AS mean FROM jobs',
};

const MIGRATIONS_TABLE = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version       integer PRIMARY KEY,
    name          text NOT NULL,
    applied_at_ms bigint NOT NULL
  )`;

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > 2 ** 31 - 1) {
    throw new RangeError(`Expected a positive integer for options.${name} but received ${String(value)}`);
  }
  return value;
}

export class PostgresJobStore implements JobStore {
  /** The URL without its password. */
  readonly url: string;
  /** Whether the database answers, as the last call found it: the log's record of an outage. */
  readonly reachability: Reachability;
  readonly #pool: pg.Pool;
  readonly #options: Required<Omit<PostgresStoreOptions, 'log'>>;
  #closed = false;
  /** While the database does not answer: the timer that asks it again. */
  #probe: NodeJS.Timeout | undefined;
  /** #query, for the leaderboard's statements (postgres-leaderboard.ts). */
  readonly #boardQuery: Query = (text, values) => this.#query(text, values);

  private constructor(
    url: string,
    pool: pg.Pool,
    options: Required<Omit<PostgresStoreOptions, 'log'>>,
    reachability: Reachability,
  ) {
    this.url = url;
    this.#pool = pool;
    this.#options = options;
    this.reachability = reachability;
  }

  /**
   * Connects to the database at `url` (postgresql://user:password@host:port/database) and migrates its schema to the
   * latest version. Several processes may open one database at once: the migrations run under an advisory lock, so
   * the first applies them and the others find nothing left to do.
   *
   * @throws StoreUnavailableError when the database cannot be reached; Error when its schema is newer than this
   *   code's.
   */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresJobStore> {
    if (typeof url !== 'string' || url === '') {
      throw new TypeError(
        `Expected a PostgreSQL URL (postgresql://…) for url but received ${url === '' ? "''" : typeof url}`,
      );
    }
    const resolved: Required<Omit<PostgresStoreOptions, 'log'>> = {
      maxConnections: positiveInteger('maxConnections', options.maxConnections ?? 10),
      connectTimeoutMs: positiveInteger('connectTimeoutMs', options.connectTimeoutMs ?? 2000),
      statementTimeoutMs: positiveInteger('statementTimeoutMs', options.statementTimeoutMs ?? 10_000),
    };
    const pool = new pg.Pool({
      connectionString: url,
      max: resolved.maxConnections,
      connectionTimeoutMillis: resolved.connectTimeoutMs,
      statement_timeout: resolved.statementTimeoutMs,
      query_timeout: resolved.statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS,
      keepAlive: true,
      fallback_application_name: 'cudakit-server',
      types: TYPES,
    });
    const reachability = new Reachability('PostgreSQL', addressOf(url, 5432), options.log);
    const store = new PostgresJobStore(redact(url), pool, resolved, reachability);
    // An idle connection lost (the server restarted) is no call's failure: the pool drops it, the next call connects.
    // The server went away, though: the log says so (once), and says when it answers again.
    pool.on('error', (e) => {
      if (isConnectionError(e)) store.#lost(e);
    });
    try {
      await store.#migrate();
      return store;
    } catch (e) {
      await pool.end().catch(() => {});
      throw e;
    }
  }

  async info(): Promise<PostgresStoreInfo> {
    const { rows } = await this.#query<{ server_version: string; version: number }>(
      "SELECT current_setting('server_version') AS server_version, max(version) AS version FROM schema_migrations",
    );
    return {
      url: this.url,
      serverVersion: rows[0]!.server_version,
      schemaVersion: rows[0]!.version,
      maxConnections: this.#options.maxConnections,
      statementTimeoutMs: this.#options.statementTimeoutMs,
    };
  }

  async #migrate(): Promise<number[]> {
    return this.#transaction(async (query) => {
      await query('SELECT pg_advisory_xact_lock($1, $2)', [...MIGRATION_LOCK]);
      await query(MIGRATIONS_TABLE);
      const { rows } = await query<{ version: number }>(
        'SELECT coalesce(max(version), 0) AS version FROM schema_migrations',
      );
      const current = rows[0]!.version;
      if (current > POSTGRES_LATEST_VERSION) {
        throw new Error(
          `The database ${this.url} is at schema version ${current}, newer than this server's ` +
            `${POSTGRES_LATEST_VERSION}: open it with the @cudakit/server release that wrote it, or a later one`,
        );
      }
      const applied: number[] = [];
      for (const m of POSTGRES_MIGRATIONS) {
        if (m.version <= current) continue;
        await query(m.sql);
        await query('INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          Date.now(),
        ]);
        applied.push(m.version);
      }
      return applied;
    });
  }

  async insert(record: JobRecord): Promise<void> {
    const { json, literals } = splitLiterals(record.job);
    const r = { ...toRow(record), job: json };
    // In SQL.insert's column order.
    const row = [
      r.id,
      r.principal,
      r.status,
      r.verdict,
      r.phase,
      r.job,
      r.options,
      r.idempotency_key,
      r.body_hash,
      r.created_at_ms,
      r.started_at_ms,
      r.finished_at_ms,
      r.gpu_uuid,
      r.report,
      r.error,
    ];
    try {
      if (literals.length === 0) {
        await this.#query(SQL.insert, row);
        return;
      }
      await this.#transaction(async (query) => {
        await query(SQL.insert, row);
        // In hash order, as purges lock them: two transactions never wait on each other in a circle.
        const byHash = new Map(literals.map((l) => [l.hash, JSON.stringify(l.text)]));
        for (const hash of [...byHash.keys()].sort()) {
          if ((await query(SQL.lockLiteral, [hash])).rowCount === 0)
            await query(SQL.insertLiteral, [hash, byHash.get(hash)]);
        }
        for (const l of literals) await query(SQL.insertJobLiteral, [record.id, l.path, l.hash]);
      });
    } catch (e) {
      if (e instanceof pg.DatabaseError && e.code === '23505' && e.constraint === 'jobs_pkey') {
        throw duplicateJobError(record.id);
      }
      throw e;
    }
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const { rows } = await this.#query<PostgresJobRow>(SQL.get, [id]);
    return rows[0] && recordOf(rows[0]);
  }

  async findByIdempotencyKey(principal: string, key: string, notBeforeMs: number): Promise<JobRecord | undefined> {
    const { rows } = await this.#query<PostgresJobRow>(SQL.byIdempotencyKey, [principal, key, notBeforeMs]);
    return rows[0] && recordOf(rows[0]);
  }

  async list(filter: ListFilter): Promise<{ items: JobRecord[]; next: string | undefined }> {
    this.#live();
    checkListFilter(filter);
    const where: string[] = [];
    const values: unknown[] = [];
    for (const column of ['principal', 'status', 'verdict'] as const) {
      const value = filter[column];
      if (value === undefined) continue;
      values.push(value);
      where.push(`${column} = $${values.length}`);
    }
    if (filter.after !== undefined) {
      values.push(filter.after);
      where.push(`id < $${values.length}`);
    }
    // One row past the page says whether there is a next page, without a count.
    values.push(filter.limit + 1);
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    const inner = `SELECT * FROM jobs ${clause} ORDER BY id DESC LIMIT $${values.length}`;
    const { rows } = await this.#query<PostgresJobRow>(withLiterals(inner, 'page.id DESC'), values);
    const items = rows.slice(0, filter.limit).map(recordOf);
    return { items, next: rows.length > filter.limit ? items[items.length - 1]!.id : undefined };
  }

  async queued(): Promise<JobRecord[]> {
    return (await this.#query<PostgresJobRow>(SQL.queued)).rows.map(recordOf);
  }

  async markRunning(id: string, gpuUuid: string, atMs: number, options: { takeOver?: boolean } = {}): Promise<boolean> {
    const result = await this.#query(options.takeOver === true ? SQL.takeOver : SQL.markRunning, [id, gpuUuid, atMs]);
    return result.rowCount === 1;
  }

  async setPhase(id: string, phase: EvalPhase | 'profile'): Promise<void> {
    await this.#query(SQL.setPhase, [id, phase]);
  }

  async finish(id: string, outcome: Parameters<JobStore['finish']>[1]): Promise<boolean> {
    const values = [
      id,
      outcome.status,
      outcome.verdict ?? null,
      outcome.phase ?? null,
      outcome.report ?? null,
      outcome.error === undefined ? null : JSON.stringify(outcome.error),
      outcome.atMs,
    ];
    const statement = outcome.onlyIfQueued === true ? SQL.finishQueued : SQL.finish;
    const { entry } = outcome;
    if (entry === undefined) return (await this.#query(statement, values)).rowCount === 1;
    checkLeaderboardEntry(entry);
    // The end and its board entry in one transaction: a stored PASSED result is never missing from its board.
    return this.#transaction(async (query) => {
      if ((await query(statement, values)).rowCount !== 1) return false;
      await boards.recordScore(query, entry);
      return true;
    });
  }

  async interruptRunning(atMs: number): Promise<string[]> {
    const { code, message } = INTERRUPTED_ERROR;
    const { rows } = await this.#query<{ id: string }>(SQL.interruptRunning, [atMs, code, message]);
    return rows.map((r) => r.id).sort();
  }

  async purge(id: string): Promise<boolean> {
    return (await this.#deleteJobs(SQL.purge, [id])) === 1;
  }

  async deleteFinishedBefore(atMs: number): Promise<number> {
    return this.#deleteJobs(SQL.deleteFinishedBefore, [atMs]);
  }

  /** Runs a purge statement (SQL.purge's shape) and lets go of the literals no job refers to any more. */
  async #deleteJobs(statement: string, values: unknown[]): Promise<number> {
    return this.#transaction(async (query) => {
      const { rows } = await query<{ n: number; hashes: string[] }>(statement, values);
      const { n, hashes } = rows[0]!;
      if (hashes.length > 0) {
        await query(SQL.lockLiterals, [hashes]);
        await query(SQL.deleteOrphanLiterals, [hashes]);
      }
      return n;
    });
  }

  async appendEvent(event: Omit<JobEvent, 'seq'>): Promise<JobEvent> {
    const data = event.data === undefined ? null : JSON.stringify(event.data);
    const { rows } = await this.#query<{ seq: number }>(SQL.appendEvent, [event.jobId, event.type, data, event.atMs]);
    if (rows[0] === undefined) throw missingJobError(event.jobId);
    return { seq: rows[0].seq, jobId: event.jobId, type: event.type, data: parseJson(data), atMs: event.atMs };
  }

  async events(jobId: string, afterSeq: number): Promise<JobEvent[]> {
    this.#live();
    checkSeq('afterSeq', afterSeq);
    const { rows } = await this.#query<EventRow>(SQL.events, [jobId, afterSeq]);
    return rows.map((r) => ({ seq: r.seq, jobId, type: r.type, data: parseJson(r.data), atMs: r.at_ms }));
  }

  async queuedCount(principal?: string): Promise<number> {
    return (await this.#query<{ n: number }>(SQL.queuedCount, [principal ?? null])).rows[0]!.n;
  }

  async counts(): Promise<Record<JobStatus, number>> {
    const counts = zeroCounts();
    for (const row of (await this.#query<{ status: JobStatus; n: number }>(SQL.counts)).rows)
      counts[row.status] = row.n;
    return counts;
  }

  async meanCreatedAtMs(): Promise<number | undefined> {
    const { rows } = await this.#query<{ mean: number | null }>(SQL.meanCreatedAt);
    return rows[0]!.mean ?? undefined;
  }

  async recordScore(entry: LeaderboardEntry): Promise<boolean> {
    return boards.recordScore(this.#boardQuery, entry);
  }

  async leaderboard(filter: LeaderboardFilter): Promise<{ entries: RankedEntry[]; next: number | undefined }> {
    return boards.leaderboardPage(this.#boardQuery, filter);
  }

  async leaderboardEntry(problem: string, gpuClass: string, principal: string): Promise<LeaderboardEntry | undefined> {
    return boards.leaderboardEntry(this.#boardQuery, problem, gpuClass, principal);
  }

  async removeLeaderboardEntries(problem: string, who: LeaderboardWho, gpuClass?: string): Promise<number> {
    return boards.removeLeaderboardEntries(this.#boardQuery, problem, who, gpuClass);
  }

  async pseudonymKey(): Promise<Uint8Array> {
    // Made once: a second process that races the first keeps the first's.
    await this.#query('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
      PSEUDONYM_KEY,
      randomBytes(32),
    ]);
    const { rows } = await this.#query<{ value: Buffer }>('SELECT value FROM settings WHERE name = $1', [
      PSEUDONYM_KEY,
    ]);
    return new Uint8Array(rows[0]!.value);
  }

  async setLeaderboardStatus(
    problem: string,
    gpuClass: string,
    principal: string,
    jobId: string,
    status: LeaderboardStatus,
  ): Promise<boolean> {
    return boards.setLeaderboardStatus(this.#boardQuery, [problem, gpuClass, principal, jobId, status]);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#probe);
    await this.#pool.end();
  }

  #live(): pg.Pool {
    if (this.#closed) throw closedError();
    return this.#pool;
  }

  /**
   * The database stopped answering: logged once, and asked every RECONNECT_PROBE_MS until it answers again, so that
   * the log says when it is back even on a process that has nothing to ask it meanwhile (an idle agent).
   */
  #lost(e: unknown): void {
    this.reachability.lost(e);
    if (this.#probe !== undefined || this.#closed) return;
    this.#probe = setInterval(() => {
      this.#pool.query('SELECT 1').then(
        () => this.#reached(),
        () => {},
      );
    }, RECONNECT_PROBE_MS);
    this.#probe.unref();
  }

  #reached(): void {
    this.reachability.reached();
    clearInterval(this.#probe);
    this.#probe = undefined;
  }

  #unavailable(e: unknown): unknown {
    if (!isConnectionError(e)) return e;
    this.#lost(e);
    const why = e instanceof Error ? e.message : String(e);
    return new StoreUnavailableError(`The job store's database ${this.url} cannot be reached: ${why}`, { cause: e });
  }

  /** One statement on any connection of the pool. */
  async #query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    const pool = this.#live();
    try {
      const result = await pool.query<R>(text, values);
      this.#reached();
      return result;
    } catch (e) {
      throw this.#unavailable(e);
    }
  }

  /** `work` in one transaction on one connection: committed when it resolves, rolled back when it throws. */
  async #transaction<T>(work: (query: Query) => Promise<T>): Promise<T> {
    const pool = this.#live();
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
      this.#reached();
    } catch (e) {
      throw this.#unavailable(e);
    }
    const query: Query = (text, values) => client.query(text, values);
    // A connection lost between two statements is no unhandled 'error' event: the next statement fails with it.
    const ignore = () => {};
    client.on('error', ignore);
    // A connection whose transaction could not be closed goes back broken: the pool ends it rather than reuse it.
    let broken: Error | undefined;
    try {
      await query('BEGIN');
      const result = await work(query);
      await query('COMMIT');
      return result;
    } catch (e) {
      await query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      throw this.#unavailable(e);
    } finally {
      client.off('error', ignore);
      client.release(broken);
    }
  }
}

function recordOf(row: PostgresJobRow): JobRecord {
  return fromRow(row, row.literals === null ? [] : (JSON.parse(row.literals) as { path: string; text: string }[]));
}
