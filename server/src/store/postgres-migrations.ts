// SPDX-License-Identifier: MIT
// The PostgreSQL store's schema (store/postgres.ts applies it under an advisory lock, as numbered migrations).
import type { Migration } from './migrations.js';

/**
 * The schema, as numbered migrations (the rules of migrations.ts: a released migration never changes). JSON is kept
 * in json columns, which store the text as written (an exact round trip, \u0000 included) and check it; the report is
 * text, as in SQLite: several MB that our own worker wrote. Ids compare in the C collation, byte by byte, so they sort
 * as ULIDs whatever the database's locale.
 */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'jobs, events and literals',
    sql: `
      CREATE TABLE jobs (
        id              text COLLATE "C" PRIMARY KEY,
        principal       text NOT NULL,
        status          text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        verdict         text,
        phase           text,
        job             json NOT NULL,
        options         json NOT NULL,
        idempotency_key text,
        body_hash       text NOT NULL,
        created_at_ms   bigint NOT NULL,
        started_at_ms   bigint,
        finished_at_ms  bigint,
        gpu_uuid        text,
        report          text,
        error           json,
        -- The seq of the job's last event: appendEvent's counter, and its lock.
        last_event_seq  integer NOT NULL DEFAULT 0
      );
      CREATE INDEX jobs_status_id ON jobs (status, id);
      CREATE INDEX jobs_principal_id ON jobs (principal, id);
      CREATE INDEX jobs_verdict_id ON jobs (verdict, id) WHERE verdict IS NOT NULL;
      CREATE INDEX jobs_idempotency ON jobs (principal, idempotency_key, created_at_ms)
        WHERE idempotency_key IS NOT NULL;
      CREATE INDEX jobs_finished_at ON jobs (finished_at_ms) WHERE finished_at_ms IS NOT NULL;

      CREATE TABLE job_events (
        job_id text COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        seq    integer NOT NULL,
        type   text NOT NULL,
        data   json,
        at_ms  bigint NOT NULL,
        PRIMARY KEY (job_id, seq)
      );

      -- value: the literal as a JSON string, so that any string round-trips (text cannot hold NUL); the reads put it
      -- into their JSON as it is.
      CREATE TABLE literals (
        hash  text PRIMARY KEY,
        value json NOT NULL
      );
      CREATE TABLE job_literals (
        job_id text COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        path   text NOT NULL,
        hash   text NOT NULL REFERENCES literals (hash),
        PRIMARY KEY (job_id, path)
      );
      CREATE INDEX job_literals_hash ON job_literals (hash);
    `,
  },
  {
    version: 2,
    name: 'leaderboards',
    // A principal's best PASSED submission per problem and GPU class (store/leaderboard.ts). No foreign key to jobs:
    // an entry outlives its job's retention. Names in the C collation, as ids: job_id breaks a tie byte by byte.
    sql: `
      CREATE TABLE IF NOT EXISTS leaderboard (
        problem         text COLLATE "C" NOT NULL,
        gpu_class       text COLLATE "C" NOT NULL,
        principal       text COLLATE "C" NOT NULL,
        display_name    text NOT NULL,
        score           float8 NOT NULL,
        score_low       float8 NOT NULL,
        score_high      float8 NOT NULL,
        job_id          text COLLATE "C" NOT NULL,
        submitted_at_ms bigint NOT NULL,
        status          text NOT NULL CHECK (status IN ('provisional', 'confirmed')),
        PRIMARY KEY (problem, gpu_class, principal)
      );
      CREATE INDEX IF NOT EXISTS leaderboard_rank
        ON leaderboard (problem, gpu_class, score DESC, submitted_at_ms, job_id);
    `,
  },
  {
    version: 3,
    name: 'settings',
    // Values the server makes once and keeps with its data: the key of the boards' display names
    // (store/leaderboard.ts).
    sql: `
      CREATE TABLE IF NOT EXISTS settings (
        name  text COLLATE "C" PRIMARY KEY,
        value bytea NOT NULL
      );
    `,
  },
];

export const POSTGRES_LATEST_VERSION = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]!.version;
