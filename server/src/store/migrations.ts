// SPDX-License-Identifier: MIT
// The SQLite store's schema, as numbered migrations. Opening a database applies the ones it lacks, in one IMMEDIATE
// transaction (two servers opening one file at once: the second waits, then finds nothing left to do), and records
// each in schema_migrations. A migration, once released, never changes (so it spells out its SQL rather than build it
// from constants that may move): a new schema is a new migration.
import type Database from 'better-sqlite3';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'jobs',
    // JSON columns are checked on write, except report: several MB that our own worker wrote as JSON, and parsing it
    // again on every finish would cost more than it finds. A rowid table, not WITHOUT ROWID: rows that large belong
    // in overflow pages of a rowid table (SQLite's advice).
    sql: `
      CREATE TABLE jobs (
        id              TEXT PRIMARY KEY,
        principal       TEXT NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        verdict         TEXT,
        phase           TEXT,
        job             TEXT NOT NULL CHECK (json_valid(job)),
        options         TEXT NOT NULL CHECK (json_valid(options)),
        idempotency_key TEXT,
        body_hash       TEXT NOT NULL,
        created_at_ms   INTEGER NOT NULL,
        started_at_ms   INTEGER,
        finished_at_ms  INTEGER,
        gpu_uuid        TEXT,
        report          TEXT,
        error           TEXT CHECK (error IS NULL OR json_valid(error))
      ) STRICT;
      -- queued(), interruptRunning(), counts() and a listing by status.
      CREATE INDEX jobs_status_id ON jobs (status, id);
    `,
  },
  {
    version: 2,
    name: 'job events',
    // seq counts per job from 1, for SSE's Last-Event-ID. The events go with their job (purge, retention).
    sql: `
      CREATE TABLE job_events (
        job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        seq    INTEGER NOT NULL,
        type   TEXT NOT NULL,
        data   TEXT CHECK (data IS NULL OR json_valid(data)),
        at_ms  INTEGER NOT NULL,
        PRIMARY KEY (job_id, seq)
      ) STRICT, WITHOUT ROWID;
    `,
  },
  {
    version: 3,
    name: 'listing, idempotency and retention indexes',
    sql: `
      CREATE INDEX jobs_principal_id ON jobs (principal, id);
      CREATE INDEX jobs_verdict_id ON jobs (verdict, id) WHERE verdict IS NOT NULL;
      CREATE INDEX jobs_idempotency ON jobs (principal, idempotency_key, created_at_ms)
        WHERE idempotency_key IS NOT NULL;
      CREATE INDEX jobs_finished_at ON jobs (finished_at_ms) WHERE finished_at_ms IS NOT NULL;
    `,
  },
  {
    version: 4,
    name: 'large literals stored once by hash',
    // A job's large strings (store/literals.ts) live in literals, once per content; job_literals says where in
    // which job. A literal goes when its last job does (purge, retention).
    sql: `
      CREATE TABLE literals (
        hash TEXT PRIMARY KEY,
        text TEXT NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE TABLE job_literals (
        job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        path   TEXT NOT NULL,
        hash   TEXT NOT NULL REFERENCES literals (hash),
        PRIMARY KEY (job_id, path)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX job_literals_hash ON job_literals (hash);
    `,
  },
  {
    version: 5,
    name: 'leaderboards',
    // A principal's best PASSED submission per problem and GPU class (store/leaderboard.ts). No foreign key to jobs:
    // an entry outlives its job's retention. leaderboard_rank reads a board in its order (score descending, then
    // the earlier submission, then the smaller job id).
    sql: `
      CREATE TABLE IF NOT EXISTS leaderboard (
        problem         TEXT NOT NULL,
        gpu_class       TEXT NOT NULL,
        principal       TEXT NOT NULL,
        display_name    TEXT NOT NULL,
        score           REAL NOT NULL,
        score_low       REAL NOT NULL,
        score_high      REAL NOT NULL,
        job_id          TEXT NOT NULL,
        submitted_at_ms INTEGER NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('provisional', 'confirmed')),
        PRIMARY KEY (problem, gpu_class, principal)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS leaderboard_rank
        ON leaderboard (problem, gpu_class, score DESC, submitted_at_ms, job_id);
    `,
  },
  {
    version: 6,
    name: 'settings',
    // Values the server makes once and keeps with its data: the key of the boards' display names
    // (store/leaderboard.ts).
    sql: `
      CREATE TABLE IF NOT EXISTS settings (
        name  TEXT PRIMARY KEY,
        value BLOB NOT NULL
      ) STRICT, WITHOUT ROWID;
    `,
  },
];

export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

const MIGRATIONS_TABLE = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version       INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    applied_at_ms INTEGER NOT NULL
  ) STRICT
`;

/** The highest migration applied to `db`; 0 for a new database. */
export function schemaVersion(db: Database.Database): number {
  const table = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (table === undefined) return 0;
  const row = db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number | null };
  return row.version ?? 0;
}

/**
 * Applies the migrations after the database's version up to `target` (default: the latest), and returns the versions
 * applied. A database from a newer server is refused rather than used with a schema this code does not know.
 */
export function migrate(db: Database.Database, target: number = LATEST_VERSION): number[] {
  if (!Number.isInteger(target) || target < 1 || target > LATEST_VERSION) {
    throw new RangeError(`Expected a schema version in [1, ${LATEST_VERSION}] for target but received ${target}`);
  }
  // Up to date: no write lock, so a second process can open the file while the server writes (a reader, a CLI).
  if (schemaVersion(db) === target) return [];
  const apply = db.transaction(() => {
    db.exec(MIGRATIONS_TABLE);
    const current = schemaVersion(db);
    if (current > LATEST_VERSION) {
      throw new Error(
        `The database ${db.name} is at schema version ${current}, newer than this server's ${LATEST_VERSION}: ` +
          'open it with the @cudakit/server release that wrote it, or a later one',
      );
    }
    if (target < current) {
      throw new RangeError(`Cannot migrate ${db.name} down from schema version ${current} to ${target}`);
    }
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?, ?, ?)');
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (m.version <= current || m.version > target) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, Date.now());
      applied.push(m.version);
    }
    return applied;
  });
  return apply.immediate();
}
