// SPDX-License-Identifier: MIT
// The PostgreSQL job store on a throwaway server (services.ts): the JobStore contract, each test in a new schema of
// one server (a schema costs a few kB of WAL where a database costs megabytes, which a restart would replay), then
// what only a database shared by several processes gives: two stores (two pools) racing to finish, start and append
// to one job, migrations run twice and at once, large literals shared across stores, and outages:
// a job inserted just before the server is SIGKILLed is there after its restart, and a server that is down or stops
// answering makes calls fail fast with StoreUnavailableError, and they work again once it is back.
import type { EvalJob } from 'cudakit';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PostgresJobStore, isConnectionError } from '../../src/store/postgres.js';
import { POSTGRES_LATEST_VERSION, POSTGRES_MIGRATIONS } from '../../src/store/postgres-migrations.js';
import { StoreUnavailableError, type JobStore } from '../../src/store/store.js';
import { describeWithServices, startPostgres, type ServiceServer } from '../support/services.js';
import { leaderboardContract } from './leaderboard.contract.js';
import { jobRecord, jobStoreContract } from './store.contract.js';

const T0 = Date.UTC(2026, 10, 23, 12);
/** How long a call may take to fail while the database is down: well past the 2 s connect timeout, far below a hang. */
const OUTAGE_BOUND_MS = 8000;

const PASSED = {
  status: 'succeeded',
  verdict: 'PASSED',
  phase: undefined,
  report: '{"passed":true}',
  error: undefined,
  atMs: T0 + 5000,
} as const;

/** `promise`, or a rejection naming the bound if it has not settled within `ms`. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, bound]);
  } finally {
    clearTimeout(timer);
  }
}

describe('isConnectionError', () => {
  const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

  it('takes a lost or refused connection, a shutdown and a connect timeout for an outage', () => {
    for (const code of ['57P01', '57P02', '57P03', '08006', '08001', 'ECONNREFUSED', 'ECONNRESET']) {
      expect(isConnectionError(withCode(code)), code).toBe(true);
    }
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionError(new Error('Connection terminated due to connection timeout'))).toBe(true);
    expect(isConnectionError(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')]))).toBe(true);
  });

  it('leaves a failed statement alone: a constraint, a statement timeout, a syntax error, a bug', () => {
    for (const code of ['23505', '23503', '57014', '42601', '40P01']) {
      expect(isConnectionError(withCode(code)), code).toBe(false);
    }
    expect(isConnectionError(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBe(false);
    expect(isConnectionError(new AggregateError([withCode('ECONNREFUSED'), new TypeError('x')]))).toBe(false);
    expect(isConnectionError('Connection terminated')).toBe(false);
  });
});

describeWithServices('PostgresJobStore', ['postgres'], () => {
  let server: ServiceServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  }, 30_000);

  /** Runs one statement on a connection of its own (the server may have restarted since the last one). */
  async function sql<R extends pg.QueryResultRow>(url: string, text: string, values?: unknown[]): Promise<R[]> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  }

  let schemas = 0;
  /** A new, empty schema on the server: a URL whose connections use it (as a store would use a new database). */
  async function newSchema(): Promise<string> {
    const name = `jobs_${schemas++}`;
    await sql(server.url, `CREATE SCHEMA ${name}`);
    return `${server.url}?options=${encodeURIComponent(`-c search_path=${name}`)}`;
  }

  jobStoreContract('PostgreSQL', async () => PostgresJobStore.open(await newSchema()));
  leaderboardContract('PostgreSQL', async () => PostgresJobStore.open(await newSchema()));

  const opened: JobStore[] = [];
  async function openStore(url: string, options?: Parameters<typeof PostgresJobStore.open>[1]) {
    const store = await PostgresJobStore.open(url, options);
    opened.push(store);
    return store;
  }
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  describe('one database, several stores', () => {
    it('reports its server and schema, without the password of its URL', async () => {
      const url = await newSchema();
      const store = await openStore(url.replace('postgres@', 'postgres:secret@'), { maxConnections: 3 });
      const info = await store.info();
      expect(info).toStrictEqual({
        url: expect.not.stringContaining('secret') as string,
        serverVersion: expect.stringMatching(/^\d+\.\d+/) as string,
        schemaVersion: POSTGRES_LATEST_VERSION,
        maxConnections: 3,
        statementTimeoutMs: 10_000,
      });
      expect(info.url).toContain(`127.0.0.1:${server.port}/postgres?options=`);
    });

    it('refuses options it does not know, in the one message format', async () => {
      const url = await newSchema();
      await expect(PostgresJobStore.open(url, { maxConnections: 0 })).rejects.toThrow(
        new RangeError('Expected a positive integer for options.maxConnections but received 0'),
      );
      await expect(PostgresJobStore.open(url, { statementTimeoutMs: 1.5 })).rejects.toThrow(RangeError);
      await expect(PostgresJobStore.open('')).rejects.toThrow(TypeError);
    });

    it('of two stores finishing one job at once, exactly one wins, and its result stays', async () => {
      const url = await newSchema();
      const [a, b] = [await openStore(url), await openStore(url)];
      const records = Array.from({ length: 30 }, (_, i) => jobRecord({ createdAt: T0 + i }));
      for (const r of records) await a.insert(r);
      for (const r of records.slice(0, 15)) await a.markRunning(r.id, 'GPU-0', T0 + 100);
      const crashed = {
        status: 'failed',
        verdict: 'CRASHED',
        phase: 'check',
        report: undefined,
        error: { code: 'WORKER_EXIT', message: 'the worker exited' },
        atMs: T0 + 7000,
      } as const;
      const results = await Promise.all(
        records.map((r) => Promise.all([a.finish(r.id, PASSED), b.finish(r.id, crashed)])),
      );
      for (const [i, [byA, byB]] of results.entries()) {
        expect(byA !== byB, `job ${i}: ${byA} and ${byB}`).toBe(true);
        const got = (await b.get(records[i]!.id))!;
        const winner = byA ? PASSED : crashed;
        expect(got).toMatchObject({ status: winner.status, verdict: winner.verdict, finishedAt: winner.atMs });
        expect(got.error).toStrictEqual(winner.error);
      }
    });

    it('of a start and a cancel-if-queued racing on one job, exactly one happens', async () => {
      const url = await newSchema();
      const [a, b] = [await openStore(url), await openStore(url)];
      const records = Array.from({ length: 30 }, (_, i) => jobRecord({ createdAt: T0 + i }));
      for (const r of records) await a.insert(r);
      const cancel = {
        status: 'cancelled',
        verdict: undefined,
        phase: undefined,
        report: undefined,
        error: undefined,
        atMs: T0 + 50,
        onlyIfQueued: true,
      } as const;
      const results = await Promise.all(
        records.map((r) => Promise.all([a.markRunning(r.id, 'GPU-0', T0 + 40), b.finish(r.id, cancel)])),
      );
      for (const [i, [started, cancelled]] of results.entries()) {
        expect(started !== cancelled, `job ${i}`).toBe(true);
        expect((await a.get(records[i]!.id))!.status).toBe(started ? 'running' : 'cancelled');
      }
    });

    it('numbers the events of two stores appending to one job at once 1..N, without a gap or a duplicate', async () => {
      const url = await newSchema();
      const [a, b] = [await openStore(url), await openStore(url)];
      const r = jobRecord();
      await a.insert(r);
      const append = (store: JobStore, name: string, i: number) =>
        store.appendEvent({ jobId: r.id, type: 'progress', data: { by: name, i }, atMs: T0 + i });
      const appended = await Promise.all(
        Array.from({ length: 60 }, (_, i) => [append(a, 'a', i), append(b, 'b', i)]).flat(),
      );
      const n = appended.length;
      expect(appended.map((e) => e.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      const stored = await b.events(r.id, 0);
      expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      // Each stored event is the one its append was told it got.
      expect(stored).toStrictEqual([...appended].sort((x, y) => x.seq - y.seq));
      expect((await a.appendEvent({ jobId: r.id, type: 'done', data: null, atMs: T0 })).seq).toBe(n + 1);
    });

    it('round-trips JSON exactly: NUL and lone surrogates in strings and in large literals, numbers', async () => {
      const url = await newSchema();
      const store = await openStore(url);
      const odd = 'nul\u0000 and \ud800 and 🦀';
      const job: EvalJob = {
        ...(jobRecord().job as EvalJob),
        name: odd,
        args: [
          'f32=1e-7',
          'f32=-0.5',
          { kind: 'buffer', dtype: 'u8', length: 1, init: { kind: 'data', base64: odd.repeat(2 ** 16) } },
        ],
      };
      const r = jobRecord({ job, error: { code: 'X', message: 'tab\there, quote " and \\' } });
      await store.insert(r);
      expect(await sql(url, 'SELECT path FROM job_literals')).toEqual([{ path: '/args/2/init/base64' }]);
      expect(await store.get(r.id)).toStrictEqual(r);
      const e = await store.appendEvent({ jobId: r.id, type: 'phase', data: { big: 2 ** 53 - 1, x: 0.1 }, atMs: 1 });
      expect((await store.events(r.id, 0))[0]).toStrictEqual(e);
    });

    it('stores a large literal once for the jobs of every store, and lets it go with the last of them', async () => {
      const url = await newSchema();
      const [a, b] = [await openStore(url), await openStore(url)];
      const base64 = Buffer.alloc(3 * 2 ** 20, 9).toString('base64');
      const withLiteral = (createdAt: number) =>
        jobRecord({
          createdAt,
          job: {
            ...jobRecord().job,
            args: [{ kind: 'buffer', dtype: 'u8', length: 3 * 2 ** 20, init: { kind: 'data', base64 } }, 'i32=1'],
          },
        });
      const records = [withLiteral(T0), withLiteral(T0 + 1), withLiteral(T0 + 2)];
      await Promise.all(records.map((r, i) => (i % 2 === 0 ? a : b).insert(r)));
      const literals = () =>
        sql<{ n: number; chars: string | null }>(
          url,
          'SELECT count(*)::int AS n, sum(length(value::text)) AS chars FROM literals',
        );
      expect(await literals()).toEqual([{ n: 1, chars: String(JSON.stringify(base64).length) }]);
      const [jobChars] = await sql<{ n: number }>(url, 'SELECT max(length(job::text)) AS n FROM jobs');
      expect(jobChars!.n).toBeLessThan(4096);
      expect((await b.get(records[0]!.id))!.job).toStrictEqual(records[0]!.job);
      expect((await a.list({ limit: 3 })).items.map((r) => r.job)).toStrictEqual(records.map((r) => r.job).reverse());

      const report = JSON.stringify({ passed: true, log: 'x'.repeat(8 * 2 ** 20) });
      await a.markRunning(records[2]!.id, 'GPU-0', T0 + 3);
      await a.finish(records[2]!.id, { ...PASSED, report, atMs: T0 + 4 });
      expect((await b.get(records[2]!.id))!.report).toBe(report);

      for (const r of records.slice(0, 2)) {
        await b.finish(r.id, { ...PASSED, status: 'cancelled', verdict: undefined, report: undefined, atMs: T0 + 5 });
      }
      expect(await a.purge(records[0]!.id)).toBe(true);
      expect((await literals())[0]!.n).toBe(1);
      expect((await b.get(records[1]!.id))!.job).toStrictEqual(records[1]!.job);
      expect(await b.deleteFinishedBefore(T0 + 10)).toBe(2);
      expect(await literals()).toEqual([{ n: 0, chars: null }]);
    });

    it('keeps a literal that one store inserts while another purges its last job', async () => {
      const url = await newSchema();
      const [a, b] = [await openStore(url), await openStore(url)];
      const base64 = Buffer.alloc(2 ** 20, 3).toString('base64');
      const withLiteral = (createdAt: number) =>
        jobRecord({
          createdAt,
          job: {
            ...jobRecord().job,
            args: [{ kind: 'buffer', dtype: 'u8', length: 2 ** 20, init: { kind: 'data', base64 } }],
          },
        });
      for (let round = 0; round < 10; round++) {
        const old = withLiteral(T0 + 2 * round);
        await a.insert(old);
        await a.finish(old.id, { ...PASSED, status: 'cancelled', verdict: undefined, report: undefined });
        const fresh = withLiteral(T0 + 2 * round + 1);
        const [purged] = await Promise.all([a.purge(old.id), b.insert(fresh)]);
        expect(purged).toBe(true);
        expect((await a.get(fresh.id))!.job).toStrictEqual(fresh.job);
        await b.finish(fresh.id, { ...PASSED, status: 'cancelled', verdict: undefined, report: undefined });
        expect(await b.purge(fresh.id)).toBe(true);
      }
      expect(await sql(url, 'SELECT hash FROM literals')).toEqual([]);
    });
  });

  describe('migrations', () => {
    it('applies every migration once when several stores open a new database at once, none on a reopen', async () => {
      const url = await newSchema();
      const stores = await Promise.all([openStore(url), openStore(url), openStore(url)]);
      for (const s of stores) expect((await s.info()).schemaVersion).toBe(POSTGRES_LATEST_VERSION);
      const applied = () =>
        sql<{ version: number; name: string; applied_at_ms: string }>(
          url,
          'SELECT version, name, applied_at_ms FROM schema_migrations ORDER BY version',
        );
      const first = await applied();
      expect(first).toMatchObject(POSTGRES_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
      await openStore(url);
      expect(await applied()).toStrictEqual(first);
      const r = jobRecord();
      await stores[0]!.insert(r);
      expect(await stores[2]!.get(r.id)).toStrictEqual(r);
    });

    it('migrates a database of version 1 forward, keeping its jobs; the leaderboard migration runs again', async () => {
      const url = await newSchema();
      await sql(url, 'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text, applied_at_ms bigint)');
      await sql(url, POSTGRES_MIGRATIONS[0]!.sql);
      await sql(url, "INSERT INTO schema_migrations VALUES (1, 'jobs, events and literals', 0)");
      const r = jobRecord();
      await sql(
        url,
        `INSERT INTO jobs (id, principal, status, job, options, body_hash, created_at_ms)
         VALUES ($1, $2, 'queued', $3, $4, $5, $6)`,
        [r.id, r.principal, JSON.stringify(r.job), JSON.stringify(r.options), r.bodyHash, r.createdAt],
      );
      const store = await openStore(url);
      expect((await store.info()).schemaVersion).toBe(POSTGRES_LATEST_VERSION);
      expect(await store.get(r.id)).toStrictEqual(r);
      const entry = {
        ...{ problem: 'add', gpuClass: 'H200', principal: 'alice', displayName: 'anon-1', jobId: r.id },
        ...{ score: 2, scoreLow: 1.9, scoreHigh: 2.1, submittedAt: 1, status: 'provisional' as const },
      };
      expect(await store.recordScore(entry)).toBe(true);
      await sql(url, POSTGRES_MIGRATIONS.find((m) => m.name === 'leaderboards')!.sql);
      expect(await store.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(entry);
    });

    it('refuses a database from a newer server', async () => {
      const url = await newSchema();
      await (await openStore(url)).close();
      await sql(url, "INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES ($1, 'from the future', 0)", [
        POSTGRES_LATEST_VERSION + 1,
      ]);
      await expect(PostgresJobStore.open(url)).rejects.toThrow(
        `is at schema version ${POSTGRES_LATEST_VERSION + 1}, newer than this server's ${POSTGRES_LATEST_VERSION}`,
      );
    });
  });

  // Last: these take the server down.
  describe('outages', () => {
    it('keeps a job whose insert resolved when the server is SIGKILLed right after', async () => {
      const url = await newSchema();
      const store = await openStore(url);
      const record = jobRecord({ createdAt: Date.now(), idempotencyKey: 'once' });
      await store.insert(record);
      await store.appendEvent({ jobId: record.id, type: 'queued', data: { position: 1 }, atMs: record.createdAt });
      await server.kill('SIGKILL');
      await server.restart();
      const reopened = await openStore(url);
      expect(await reopened.get(record.id)).toStrictEqual(record);
      expect((await reopened.events(record.id, 0)).map((e) => e.seq)).toEqual([1]);
    });

    it('fails fast with StoreUnavailableError while the server is down, works again after its restart', async () => {
      const url = await newSchema();
      const store = await openStore(url);
      const r = jobRecord();
      await store.insert(r);
      await Promise.all([store.get(r.id), store.counts(), store.queued()]); // a few connections in the pool
      for (const signal of ['SIGKILL', 'SIGINT'] as const) {
        await server.kill(signal);
        const calls: Promise<unknown>[] = [
          store.get(r.id),
          store.insert(jobRecord()),
          store.appendEvent({ jobId: r.id, type: 'progress', data: null, atMs: T0 }),
          store.finish(r.id, PASSED),
          store.purge(r.id),
          store.list({ limit: 5 }),
        ];
        const errors = await Promise.all(
          calls.map((call) =>
            within(OUTAGE_BOUND_MS, call).then(
              () => new Error('resolved'),
              (e: unknown) => e,
            ),
          ),
        );
        await server.restart(); // before the assertions: a failure here leaves the server up for the next tests
        for (const [i, error] of errors.entries()) {
          expect(error, `${signal}, call ${i}: ${String(error)}`).toBeInstanceOf(StoreUnavailableError);
          expect((error as StoreUnavailableError).name).toBe('StoreUnavailableError');
          expect((error as StoreUnavailableError).cause).toBeDefined();
        }
        expect((await store.get(r.id))!.status).toBe('queued');
        expect((await store.appendEvent({ jobId: r.id, type: 'progress', data: null, atMs: T0 })).jobId).toBe(r.id);
      }
    });

    it('fails with StoreUnavailableError, not a hang, while the server stops answering; works on resume', async () => {
      const store = await openStore(await newSchema(), { statementTimeoutMs: 1000 });
      const r = jobRecord();
      await store.insert(r);
      await server.kill('SIGSTOP'); // connections stay open, and nothing answers on them
      let errors: unknown[];
      try {
        // One call on the idle connection (the query timeout), two on new ones (the connect timeout).
        const calls: Promise<unknown>[] = [store.get(r.id), store.insert(jobRecord()), store.counts()];
        errors = await Promise.all(
          calls.map((call) =>
            within(OUTAGE_BOUND_MS, call).then(
              () => new Error('resolved'),
              (e: unknown) => e,
            ),
          ),
        );
      } finally {
        await server.kill('SIGCONT');
      }
      for (const [i, error] of errors.entries()) {
        expect(error, `call ${i}: ${String(error)}`).toBeInstanceOf(StoreUnavailableError);
      }
      expect((await store.get(r.id))!.status).toBe('queued');
    });

    it('fails to open with StoreUnavailableError where no server listens', async () => {
      const url = await newSchema();
      await server.kill('SIGKILL');
      try {
        const error = await within(OUTAGE_BOUND_MS, PostgresJobStore.open(url)).then(
          () => new Error('opened'),
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect((error as Error).message).toMatch(/^The job store's database postgresql:\/\/postgres@127\.0\.0\.1:/);
      } finally {
        await server.restart();
      }
    });

    it('after close, rejects every call with the closed error', async () => {
      const store = await PostgresJobStore.open(await newSchema());
      await store.close();
      await expect(store.get(jobRecord().id)).rejects.toThrow('The job store is closed');
      await expect(store.info()).rejects.toThrow('The job store is closed');
    });
  });
});
