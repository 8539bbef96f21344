// SPDX-License-Identifier: MIT
// The SQLite job store: the JobStore contract on a file in a temporary directory, then what only a file gives: the
// connection's settings (WAL, synchronous, busy timeout), jobs and events across a reopen and across a SIGKILL right
// after insert, schema migrations from an old file, a second process reading while the first writes, a writer
// waiting out another's lock, and reports of several MB.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LATEST_VERSION, MIGRATIONS, migrate, schemaVersion } from '../../src/store/migrations.js';
import { SqliteJobStore } from '../../src/store/sqlite.js';
import { leaderboardContract } from './leaderboard.contract.js';
import { jobRecord, jobStoreContract } from './store.contract.js';

const root = new URL('../../..', import.meta.url).pathname;
const child = join(root, 'server/test/support/sqlite-child.ts');
const dir = mkdtempSync(join(tmpdir(), 'cudakit-store-'));
let files = 0;
const newFile = (): string => join(dir, `jobs-${files++}.sqlite`);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

jobStoreContract('SQLite', () => SqliteJobStore.open(newFile()));
leaderboardContract('SQLite', () => SqliteJobStore.open(newFile()));

/** Runs sqlite-child.ts synchronously (this process blocked meanwhile) and returns its stdout. */
function runChild(...args: string[]): string {
  return execFileSync(process.execPath, ['--import', 'tsx', child, ...args], { cwd: root, encoding: 'utf8' });
}

function startChild(...args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', child, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The child's stdout, its exit code and signal, once it has exited. */
function finished(
  p: ChildProcess,
): Promise<{ stdout: string; stderr: string; code: number | null; signal: string | null }> {
  let stdout = '';
  let stderr = '';
  p.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  p.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => p.on('exit', (code, signal) => resolve({ stdout, stderr, code, signal })));
}

describe('SqliteJobStore on a file', () => {
  const open: SqliteJobStore[] = [];
  const openStore = (file: string, options?: Parameters<typeof SqliteJobStore.open>[1]): SqliteJobStore => {
    const store = SqliteJobStore.open(file, options);
    open.push(store);
    return store;
  };
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close();
  });

  it('runs in WAL mode, synchronous NORMAL, a 5 s busy timeout, foreign keys on, at the latest schema', () => {
    const file = newFile();
    expect(openStore(file).info()).toStrictEqual({
      file,
      journalMode: 'wal',
      synchronous: 'NORMAL',
      busyTimeoutMs: 5000,
      foreignKeys: true,
      schemaVersion: LATEST_VERSION,
    });
    expect(openStore(newFile(), { synchronous: 'FULL', busyTimeoutMs: 250 }).info()).toMatchObject({
      synchronous: 'FULL',
      busyTimeoutMs: 250,
    });
    // WAL is a property of the file: another connection sees it.
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('refuses options it does not know, in the one message format', () => {
    expect(() => SqliteJobStore.open(newFile(), { synchronous: 'OFF' as 'FULL' })).toThrow(
      new RangeError("Expected 'NORMAL' or 'FULL' for options.synchronous but received 'OFF'"),
    );
    expect(() => SqliteJobStore.open(newFile(), { busyTimeoutMs: -1 })).toThrow(
      new RangeError('Expected a non-negative integer for options.busyTimeoutMs but received -1'),
    );
  });

  it('keeps every job and event across a close and a reopen', async () => {
    const file = newFile();
    const store = SqliteJobStore.open(file);
    const records = [0, 1, 2].map((i) => jobRecord({ createdAt: Date.UTC(2026, 0, 1) + i, idempotencyKey: `k${i}` }));
    for (const r of records) await store.insert(r);
    await store.markRunning(records[0]!.id, 'GPU-0', 10);
    await store.setPhase(records[0]!.id, 'check');
    await store.finish(records[1]!.id, {
      status: 'succeeded',
      verdict: 'PASSED',
      phase: undefined,
      report: '{"passed":true}',
      error: undefined,
      atMs: 20,
    });
    for (const type of ['queued', 'started', 'phase'] as const) {
      await store.appendEvent({ jobId: records[0]!.id, type, data: { type }, atMs: 30 });
    }
    const before = await Promise.all(records.map((r) => store.get(r.id)));
    await store.close();

    const reopened = openStore(file);
    expect(await Promise.all(records.map((r) => reopened.get(r.id)))).toStrictEqual(before);
    expect((await reopened.events(records[0]!.id, 0)).map((e) => [e.seq, e.type])).toEqual([
      [1, 'queued'],
      [2, 'started'],
      [3, 'phase'],
    ]);
    expect((await reopened.appendEvent({ jobId: records[0]!.id, type: 'done', data: null, atMs: 40 })).seq).toBe(4);
    expect(await reopened.counts()).toMatchObject({ queued: 1, running: 1, succeeded: 1 });
  });

  it('keeps a job whose insert resolved in a process SIGKILLed right after (the 202 follows insert)', async () => {
    const file = newFile();
    openStore(file); // the file exists, migrated, as the server leaves it
    const record = jobRecord({ createdAt: Date.now(), principal: 'crash-test', idempotencyKey: 'once' });
    const result = await finished(startChild('insert-and-die', file, JSON.stringify(record)));
    expect(result.signal, result.stderr).toBe('SIGKILL');
    const reopened = openStore(file);
    expect(await reopened.get(record.id)).toStrictEqual(record);
    expect((await reopened.queued()).map((r) => r.id)).toEqual([record.id]);
  });

  it('serves a second process reading the file while this one writes, without making either wait', async () => {
    const file = newFile();
    const store = openStore(file);
    await store.insert(jobRecord());

    // A write transaction open here: the child, with busy timeout 0, still reads the last committed state.
    const writer = new Database(file);
    writer.exec('BEGIN IMMEDIATE');
    writer.prepare("UPDATE jobs SET status = 'cancelled'").run();
    expect(JSON.parse(runChild('count', file))).toMatchObject({ queued: 1, cancelled: 0 });
    writer.exec('COMMIT');
    writer.close();
    expect(JSON.parse(runChild('count', file))).toMatchObject({ queued: 0, cancelled: 1 });

    // And continuously: this process inserts jobs and events while the child reads for a second.
    const reader = finished(startChild('read-loop', file, '1000'));
    let exited = false;
    void reader.then(() => (exited = true));
    let inserted = 0;
    while (!exited) {
      for (let i = 0; i < 20; i++) {
        const r = jobRecord({ createdAt: Date.now() });
        await store.insert(r);
        await store.appendEvent({ jobId: r.id, type: 'queued', data: { position: inserted }, atMs: r.createdAt });
        inserted++;
      }
      await yieldToLoop();
    }
    const { stdout, stderr, code } = await reader;
    expect(code, stderr).toBe(0);
    const seen = JSON.parse(stdout) as { reads: number; errors: string[]; queuedSeen: number[] };
    expect(seen.errors).toEqual([]);
    expect(seen.reads).toBeGreaterThan(10);
    expect(seen.queuedSeen).toEqual([...seen.queuedSeen].sort((a, b) => a - b)); // never a step back
    expect(seen.queuedSeen.at(-1)).toBeGreaterThan(0); // it saw the writes as they were committed
    expect(seen.queuedSeen.at(-1)).toBeLessThanOrEqual(inserted);
    expect((await store.counts()).queued).toBe(inserted);
  });

  it('waits out another process’s write lock within the busy timeout, and fails with SQLITE_BUSY after', async () => {
    const file = newFile();
    const patient = openStore(file, { busyTimeoutMs: 10_000 });
    const impatient = openStore(file, { busyTimeoutMs: 50 });
    const holder = startChild('hold-lock', file, '400');
    const done = finished(holder);
    await new Promise<void>((resolve) => holder.stdout!.once('data', () => resolve())); // 'locked'

    const hurried = jobRecord();
    let startedMs = Date.now();
    await expect(impatient.insert(hurried)).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(40);

    const record = jobRecord();
    startedMs = Date.now();
    await patient.insert(record); // blocks until the holder commits
    expect(Date.now() - startedMs).toBeGreaterThan(100);
    expect((await done).code).toBe(0);
    expect(await patient.get(record.id)).toStrictEqual(record);
    expect(await patient.get(hurried.id)).toBeUndefined();
  });

  it('round-trips reports of several MB, and jobs with large literal data', async () => {
    const file = newFile();
    const store = openStore(file);
    const samples = Array.from({ length: 400_000 }, (_, i) => 1 + Math.sin(i) / 1000);
    const report = JSON.stringify({ passed: true, timing: { samples }, log: 'x'.repeat(1 << 20) });
    expect(report.length).toBeGreaterThan(8 * 2 ** 20);
    const base64 = Buffer.alloc(3 * 2 ** 20, 7).toString('base64');
    const r = jobRecord({
      job: {
        ...jobRecord().job,
        args: [{ kind: 'buffer', dtype: 'u8', length: 3 * 2 ** 20, init: { kind: 'data', base64 } }],
      },
    });
    await store.insert(r);
    await store.markRunning(r.id, 'GPU-0', 1);
    await store.finish(r.id, {
      status: 'succeeded',
      verdict: 'PASSED',
      phase: undefined,
      report,
      error: undefined,
      atMs: 2,
    });
    const got = (await store.get(r.id))!;
    expect(got.report).toBe(report);
    expect(got.job).toStrictEqual(r.job);
    expect((await store.list({ limit: 1 })).items[0]!.report).toBe(report);
    await store.close();
    expect((await openStore(file).get(r.id))!.report).toBe(report);
  });

  const T1 = Date.UTC(2026, 10, 23, 12);

  it('stores a large literal once for every job that sends it, and lets it go with the last of them', async () => {
    const file = newFile();
    const store = openStore(file);
    const base64 = Buffer.alloc(3 * 2 ** 20, 9).toString('base64');
    const withLiteral = (createdAt: number) =>
      jobRecord({
        createdAt,
        job: {
          ...jobRecord().job,
          args: [{ kind: 'buffer', dtype: 'u8', length: 3 * 2 ** 20, init: { kind: 'data', base64 } }, 'i32=1'],
        },
      });
    const [a, b] = [withLiteral(T1), withLiteral(T1 + 1)];
    await store.insert(a);
    await store.insert(b);
    const db = new Database(file, { readonly: true });
    try {
      const literals = () => db.prepare('SELECT count(*) AS n, sum(length(text)) AS chars FROM literals').get();
      expect(literals()).toEqual({ n: 1, chars: base64.length });
      const jobChars = db.prepare('SELECT max(length(job)) AS n FROM jobs').get() as { n: number };
      expect(jobChars.n).toBeLessThan(4096);
      expect((await store.get(a.id))!.job).toStrictEqual(a.job);
      expect((await store.list({ limit: 2 })).items.map((r) => r.job)).toStrictEqual([b.job, a.job]);
      for (const r of [a, b]) {
        const cancelled = { status: 'cancelled', verdict: undefined, phase: undefined, report: undefined } as const;
        await store.finish(r.id, { ...cancelled, error: undefined, atMs: T1 + 5 });
      }
      expect(await store.purge(a.id)).toBe(true);
      expect(literals()).toEqual({ n: 1, chars: base64.length });
      expect((await store.get(b.id))!.job).toStrictEqual(b.job);
      expect(await store.deleteFinishedBefore(T1 + 10)).toBe(1);
      expect(literals()).toEqual({ n: 0, chars: null });
    } finally {
      db.close();
    }
  });
});

describe('migrations', () => {
  it('numbers migrations 1, 2, 3 … without a gap', () => {
    expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    expect(LATEST_VERSION).toBe(MIGRATIONS.length);
  });

  it('migrates a file left at migration 1 forward, keeping its jobs, and records each migration', async () => {
    const file = newFile();
    const old = new Database(file);
    expect(migrate(old, 1)).toEqual([1]);
    expect(schemaVersion(old)).toBe(1);
    const tables = () =>
      old
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .all()
        .map((t) => (t as { name: string }).name);
    expect(tables()).toEqual(['jobs', 'schema_migrations']);
    // A job as the server of schema 1 wrote it.
    const record = jobRecord({ createdAt: Date.UTC(2026, 0, 1) });
    old
      .prepare(
        `INSERT INTO jobs (id, principal, status, job, options, body_hash, created_at_ms)
         VALUES (?, ?, 'queued', ?, ?, ?, ?)`,
      )
      .run(
        record.id,
        record.principal,
        JSON.stringify(record.job),
        JSON.stringify(record.options),
        record.bodyHash,
        record.createdAt,
      );
    old.close();

    const store = SqliteJobStore.open(file);
    expect(store.info().schemaVersion).toBe(LATEST_VERSION);
    expect(await store.get(record.id)).toStrictEqual(record);
    expect((await store.appendEvent({ jobId: record.id, type: 'queued', data: {}, atMs: 1 })).seq).toBe(1);
    await store.close();

    const db = new Database(file, { readonly: true });
    const applied = db.prepare('SELECT version, name, applied_at_ms FROM schema_migrations ORDER BY version').all();
    expect(applied).toMatchObject(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
    const indexes = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .all()
      .map((i) => (i as { name: string }).name);
    expect(indexes).toEqual([
      'job_literals_hash',
      'jobs_finished_at',
      'jobs_idempotency',
      'jobs_principal_id',
      'jobs_status_id',
      'jobs_verdict_id',
      'leaderboard_rank',
    ]);
    db.close();
  });

  it("runs the leaderboard's migration again without error, keeping its entries (IF NOT EXISTS)", async () => {
    const file = newFile();
    const store = SqliteJobStore.open(file);
    const entry = {
      ...{ problem: 'add', gpuClass: 'H200', principal: 'alice', displayName: 'anon-1', jobId: 'ev_1' },
      ...{ score: 2, scoreLow: 1.9, scoreHigh: 2.1, submittedAt: 1, status: 'provisional' as const },
    };
    await store.recordScore(entry);
    const db = new Database(file);
    db.exec(MIGRATIONS.find((m) => m.name === 'leaderboards')!.sql);
    db.close();
    expect(await store.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(entry);
    await store.close();
  });

  it('applies nothing to a file already at the latest version, and takes no write lock for it', () => {
    const file = newFile();
    const db = new Database(file);
    expect(migrate(db)).toEqual(MIGRATIONS.map((m) => m.version));
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE'); // another writer: a migration would have to wait for it
    expect(migrate(db)).toEqual([]);
    other.exec('ROLLBACK');
    other.close();
    db.close();
  });

  it('refuses a file from a newer server, and a downgrade', () => {
    const file = newFile();
    const db = new Database(file);
    migrate(db);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?, ?, ?)').run(
      LATEST_VERSION + 1,
      'from the future',
      0,
    );
    db.close();
    expect(() => SqliteJobStore.open(file)).toThrow(
      `The database ${file} is at schema version ${LATEST_VERSION + 1}, newer than this server's ${LATEST_VERSION}: ` +
        'open it with the @cudakit/server release that wrote it, or a later one',
    );
    const older = new Database(newFile());
    migrate(older, 2);
    expect(() => migrate(older, 1)).toThrow(`Cannot migrate ${older.name} down from schema version 2 to 1`);
    expect(() => migrate(older, LATEST_VERSION + 1)).toThrow(RangeError);
    older.close();
  });

  it('leaves no database behind a failed open', () => {
    const file = join(dir, 'no-such-dir', 'jobs.sqlite');
    expect(() => SqliteJobStore.open(file)).toThrow(/directory does not exist|unable to open/);
    expect(existsSync(file)).toBe(false);
  });
});
