// SPDX-License-Identifier: MIT
// A job's place on a leaderboard (schedule/leaderboard.ts): which finished jobs give an entry and on which board, the
// pseudonym a board shows, and, through the service over a fake pool, that a PASSED problem job is on its board by
// the time its 'done' event is out, while a SUSPICIOUS one, a failed one and a plain job never are.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { entryOfEnd, leaderboardEntryOf, pseudonymOf, settleConfirmation } from '../../src/schedule/leaderboard.js';
import type { EvalService } from '../../src/service.js';
import { MemoryJobStore } from '../../src/store/memory.js';
import { SqliteJobStore } from '../../src/store/sqlite.js';
import type { JobRecord } from '../../src/store/store.js';
import { ProblemRegistry } from '../../src/submit/problems.js';
import { ADD, ADD_FILES, addReport, registry } from '../support/cases-problem.js';
import { body, settled, setup } from '../support/helpers.js';
import { jobRecord } from '../store/store.contract.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A store's pseudonym key, for the entries made here without one. */
const KEY = new Uint8Array(32).fill(1);

const SUBMISSION = { problem: 'add', source: ADD, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 };

/** A finished submission to 'add', its report addReport(outcome)'s as the store keeps it. */
function problemRecord(more: Partial<JobRecord> = {}, outcome: Parameters<typeof addReport>[0] = 'pass'): JobRecord {
  const { problem, source, kernel, grid, block } = SUBMISSION;
  return jobRecord({
    status: 'succeeded',
    verdict: 'PASSED',
    job: { problem, source, kernel, grid, block },
    report: JSON.stringify(addReport(outcome)),
    ...more,
  });
}

describe('pseudonymOf', () => {
  it("is 'anon-' and 10 hex digits, the same for a principal every time, and names nothing of it", () => {
    const names = ['alice', 'bob', 'local', 'Alice', 'alice '];
    const pseudonyms = names.map((n) => pseudonymOf(n, KEY));
    for (const [i, p] of pseudonyms.entries()) {
      expect(p).toMatch(/^anon-[0-9a-f]{10}$/);
      expect(p).not.toContain(names[i]!.trim().toLowerCase());
      expect(pseudonymOf(names[i]!, new Uint8Array(KEY))).toBe(p);
    }
    expect(new Set(pseudonyms).size).toBe(names.length);
  });

  it('depends on the key: a list of likely names tried without it finds nobody', () => {
    const other = new Uint8Array(32).fill(7);
    expect(pseudonymOf('alice', other)).not.toBe(pseudonymOf('alice', KEY));
    // The unkeyed hash the boards used to show (sha256 of a fixed prefix and the name) is not what they show now.
    const hash = createHash('sha256').update('cudakit leaderboard\0alice', 'utf8').digest('hex');
    const unkeyed = `anon-${hash.slice(0, 10)}`;
    expect(pseudonymOf('alice', KEY)).not.toBe(unkeyed);
  });

  it('keeps its key in the store: made once, the same every call, and for a second store on one file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-key-'));
    dirs.push(dir);
    const file = join(dir, 'jobs.db');
    const a = SqliteJobStore.open(file);
    const first = await a.pseudonymKey();
    expect(first).toHaveLength(32);
    expect(await a.pseudonymKey()).toEqual(first);
    const b = SqliteJobStore.open(file);
    expect(await b.pseudonymKey()).toEqual(first);
    await a.close();
    await b.close();
    const memory = new MemoryJobStore();
    expect(await memory.pseudonymKey()).toEqual(await memory.pseudonymKey());
    expect(await memory.pseudonymKey()).not.toEqual(await new MemoryJobStore().pseudonymKey());
  });
});

describe('leaderboardEntryOf', () => {
  it('gives a PASSED problem job its entry: score and interval from the report, provisional', () => {
    const record = problemRecord({ principal: 'alice', options: { ...jobRecord().options, gpu: 'H200' } });
    expect(leaderboardEntryOf(record, KEY)).toStrictEqual({
      problem: 'add',
      gpuClass: 'H200',
      principal: 'alice',
      displayName: pseudonymOf('alice', KEY),
      score: 2.1,
      scoreLow: 1.9,
      scoreHigh: 2.3,
      jobId: record.id,
      submittedAt: record.createdAt,
      status: 'provisional',
    });
  });

  it("puts a job on the board of the model that ran it, whether it asked for 'any', an arch or a class", () => {
    for (const gpu of ['any', 'sm_90', 'pool-a', 'H200']) {
      const record = problemRecord({ options: { ...jobRecord().options, gpu } });
      expect(leaderboardEntryOf(record, KEY)?.gpuClass, gpu).toBe('H200');
    }
    const report = { ...addReport('pass'), device: { name: 'NVIDIA GeForce RTX 4090', arch: 'sm_89' } };
    expect(leaderboardEntryOf(problemRecord({ report: JSON.stringify(report) }), KEY)?.gpuClass).toBe('RTX4090');
  });

  it('gives nothing for a device whose name makes no GPU class, nor for a job with no device', () => {
    const odd = { ...addReport('pass'), device: { name: '<b>x</b> y', arch: 'sm_90' } };
    expect(leaderboardEntryOf(problemRecord({ report: JSON.stringify(odd) }), KEY)).toBeUndefined();
    const none = { ...addReport('pass'), device: undefined };
    expect(leaderboardEntryOf(problemRecord({ report: JSON.stringify(none) }), KEY)).toBeUndefined();
  });

  it('gives nothing for SUSPICIOUS, a failure, a report without a score and a plain job', () => {
    const floored = problemRecord({ verdict: 'SUSPICIOUS' }, 'hidden-floored');
    expect(JSON.parse(floored.report!)).toMatchObject({ passed: true, score: 2.1 }); // a score, and still not
    expect(leaderboardEntryOf(floored, KEY)).toBeUndefined();
    expect(leaderboardEntryOf(problemRecord({ verdict: 'HIDDEN_CASE_FAILED' }, 'hidden-fail'), KEY)).toBeUndefined();
    expect(leaderboardEntryOf(problemRecord({ status: 'failed' }), KEY)).toBeUndefined();
    const noScore = { ...addReport('pass'), score: undefined };
    expect(leaderboardEntryOf(problemRecord({ report: JSON.stringify(noScore) }), KEY)).toBeUndefined();
    expect(leaderboardEntryOf(problemRecord({ report: 'not json' }), KEY)).toBeUndefined();
    const plain = jobRecord({ status: 'succeeded', verdict: 'PASSED', report: JSON.stringify(addReport('pass')) });
    expect(leaderboardEntryOf(plain, KEY)).toBeUndefined();
  });

  it('gives nothing for a confirmation re-run, however it scored', () => {
    const rerun = problemRecord({ options: { ...problemRecord().options, confirms: 'ev_original' } });
    expect(leaderboardEntryOf(problemRecord(), KEY)).toBeDefined();
    expect(leaderboardEntryOf(rerun, KEY)).toBeUndefined();
  });

  it('settles a re-run against the entry it confirms, and leaves an entry another job holds by now', async () => {
    const store = new MemoryJobStore();
    const original = problemRecord({ principal: 'alice' });
    await store.insert(original);
    expect(await store.recordScore(leaderboardEntryOf(original, KEY)!)).toBe(true);
    const options = { ...original.options, gpu: 'H200', confirms: original.id };
    const rerun = problemRecord({ principal: 'alice', options });
    await store.insert(rerun);
    expect(await settleConfirmation(store, rerun.id)).toEqual({ kind: 'confirmed', jobId: original.id });
    expect((await store.leaderboardEntry('add', 'H200', 'alice'))?.status).toBe('confirmed');
    // A better result replaced the entry: a re-run of the old one changes nothing.
    const better = problemRecord({ principal: 'alice', report: JSON.stringify({ ...addReport('pass'), score: 9 }) });
    await store.insert(better);
    expect(await store.recordScore(leaderboardEntryOf(better, KEY)!)).toBe(true);
    const late = problemRecord({ principal: 'alice', options, verdict: 'INCORRECT', status: 'succeeded' });
    await store.insert(late);
    expect(await settleConfirmation(store, late.id)).toEqual({ kind: 'stale', jobId: original.id });
    expect(await store.leaderboardEntry('add', 'H200', 'alice')).toMatchObject({
      jobId: better.id,
      status: 'provisional',
    });
    // A job that is no re-run settles nothing.
    expect(await settleConfirmation(store, better.id)).toBeUndefined();
  });

  it('gives the entry of an end, reading the job back only for a PASSED end with a score', async () => {
    const store = new MemoryJobStore();
    const done = problemRecord();
    const record = { ...done, status: 'running', verdict: undefined, report: undefined } as const;
    await store.insert(record);
    const reads: string[] = [];
    const get = store.get.bind(store);
    store.get = async (id) => (reads.push(id), get(id));
    const end = (verdict: 'PASSED' | 'SUSPICIOUS', report: string | undefined) =>
      entryOfEnd(store, record.id, { status: 'succeeded', verdict, report });
    expect(await end('SUSPICIOUS', done.report)).toBeUndefined();
    expect(await end('PASSED', JSON.stringify({ name: 'k', passed: true, timing: { median: 1 } }))).toBeUndefined();
    expect(reads).toEqual([]);
    expect(await end('PASSED', done.report)).toStrictEqual(leaderboardEntryOf(done, await store.pseudonymKey()));
    expect(reads).toEqual([record.id]);
    // The store records it with the end, and only the call that finishes the job does.
    const entry = (await end('PASSED', done.report))!;
    const outcome = { status: 'succeeded', verdict: 'PASSED', phase: undefined, report: done.report } as const;
    expect(await store.finish(record.id, { ...outcome, error: undefined, atMs: 1, entry })).toBe(true);
    expect((await store.leaderboardEntry('add', 'H200', 'alice'))?.jobId).toBe(record.id);
  });
});

describe('a job that ends, through the service', () => {
  let service: EvalService | undefined;
  afterEach(() => service?.close());

  /** The service over a memory store whose leaderboard writes take 30 ms (a database's round trip, made long). */
  async function start() {
    const problems = ProblemRegistry.load(registry({ ...ADD_FILES }, dirs));
    const store = new MemoryJobStore();
    const record = store.recordScore.bind(store);
    store.recordScore = async (entry) => (await sleep(30), record(entry));
    const s = await setup({ problems, store });
    service = s.service;
    return s;
  }

  /** Submits as `principal`, waits for the job's 'done' event, and returns the board's entry for it right then. */
  async function runToDone(s: Awaited<ReturnType<typeof start>>, payload: object, principal = 'alice') {
    const { record } = await s.service.submit(principal, { ...payload });
    let entryAtDone: unknown = 'not done';
    await new Promise<void>((resolve) => {
      const stop = s.service.subscribe(record.id, (e) => {
        if (e.type !== 'done') return;
        stop();
        void s.store.leaderboardEntry('add', 'H200', principal).then((entry) => {
          entryAtDone = entry;
          resolve();
        });
      });
    });
    return { id: record.id, entryAtDone, final: await settled(s.service, record.id) };
  }

  it('puts a PASSED submission on its board before its done event', async () => {
    const s = await start();
    const { id, entryAtDone, final } = await runToDone(s, SUBMISSION);
    expect(final.verdict).toBe('PASSED');
    expect(entryAtDone).toMatchObject({ jobId: id, principal: 'alice', score: 2, gpuClass: 'H200' });
  });

  it('records a SUSPICIOUS submission nowhere, though its report has a score', async () => {
    const s = await start();
    s.pool.script = () => ({
      delayMs: 5,
      outcome: { kind: 'report', report: addReport('hidden-floored'), device: undefined },
    });
    const { final, entryAtDone } = await runToDone(s, SUBMISSION);
    expect(final.verdict).toBe('SUSPICIOUS');
    expect(entryAtDone).toBeUndefined();
    expect((await s.store.leaderboard({ problem: 'add', gpuClass: 'H200', limit: 10 })).entries).toEqual([]);
  });

  it('records a submission that failed a hidden case nowhere, nor a plain job', async () => {
    const s = await start();
    const failed = await runToDone(s, { ...SUBMISSION, name: 'hidden-fail' });
    expect(failed.final.verdict).toBe('HIDDEN_CASE_FAILED');
    const plain = await s.service.submit('alice', body());
    expect((await settled(s.service, plain.record.id)).verdict).toBe('PASSED');
    for (const gpuClass of ['H200', 'sm_90', 'any']) {
      expect((await s.store.leaderboard({ problem: 'add', gpuClass, limit: 10 })).entries).toEqual([]);
    }
  });
});
