// SPDX-License-Identifier: MIT
// The JobStore contract: every behaviour the service relies on, as one suite that any implementation runs
// (sqlite.test.ts, memory-store.test.ts, postgres.test.ts). `open` gives a fresh, empty store per test.
import type { EvalJob } from 'cudakit';
import { afterEach, describe, expect, it } from 'vitest';
import { newJobId } from '../../src/store/ids.js';
import { INTERRUPTED_ERROR, type JobRecord, type JobStore } from '../../src/store/store.js';

const T0 = Date.UTC(2026, 10, 23, 12);

const JOB: EvalJob = {
  source: 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }',
  kernel: 'k',
  grid: 1,
  block: 32,
  args: ['ptr:f32[32]:out'],
  timing: { preset: 'quick', mode: 'cold' },
};

/** A queued job created at `createdAt`, its id made from that time (so ids and times agree, as in the service). */
export function jobRecord(more: Partial<JobRecord> = {}): JobRecord {
  const createdAt = more.createdAt ?? T0;
  return {
    id: newJobId(createdAt),
    principal: 'alice',
    status: 'queued',
    verdict: undefined,
    phase: undefined,
    job: JOB,
    options: { timeoutSeconds: 120, maxQueueSeconds: 300, priority: 0, gpu: 'any', deviceMetrics: false },
    idempotencyKey: undefined,
    bodyHash: 'sha256:' + 'ab'.repeat(32),
    createdAt,
    startedAt: undefined,
    finishedAt: undefined,
    gpuUuid: undefined,
    report: undefined,
    error: undefined,
    ...more,
  };
}

const PASSED = {
  status: 'succeeded',
  verdict: 'PASSED',
  phase: undefined,
  report: '{"passed":true}',
  error: undefined,
  atMs: T0 + 5000,
} as const;

export function jobStoreContract(name: string, open: () => JobStore | Promise<JobStore>): void {
  describe(`JobStore contract: ${name}`, () => {
    let store: JobStore;
    afterEach(async () => {
      await store?.close();
    });

    async function fresh(): Promise<JobStore> {
      store = await open();
      return store;
    }

    /** Inserts `n` queued jobs, `perMs` in each millisecond; returns them oldest first. */
    async function insertMany(s: JobStore, n: number, more: Partial<JobRecord> = {}, perMs = 1): Promise<JobRecord[]> {
      const records: JobRecord[] = [];
      for (let i = 0; i < n; i++) {
        const r = jobRecord({ createdAt: T0 + Math.floor(i / perMs), ...more });
        await s.insert(r);
        records.push(r);
      }
      return records;
    }

    describe('insert and get', () => {
      it('gives back the record as inserted, every field, and undefined for an unknown id', async () => {
        const s = await fresh();
        const r = jobRecord({ idempotencyKey: 'k1', principal: 'bob' });
        await s.insert(r);
        expect(await s.get(r.id)).toStrictEqual(r);
        expect(await s.get(newJobId())).toBeUndefined();
      });

      it('keeps a finished record whole: verdict, phase, times, GPU, report and error', async () => {
        const s = await fresh();
        const r = jobRecord({
          status: 'succeeded',
          verdict: 'INCORRECT',
          phase: 'check',
          startedAt: T0 + 10,
          finishedAt: T0 + 20,
          gpuUuid: 'GPU-0',
          report: '{"passed":false}',
          error: { code: 'MISMATCH', message: '3 of 32 elements differ', phase: 'check' },
        });
        await s.insert(r);
        expect(await s.get(r.id)).toStrictEqual(r);
      });

      it('hands out copies: editing a record got back changes nothing stored', async () => {
        const s = await fresh();
        const r = jobRecord();
        await s.insert(r);
        r.principal = 'mallory'; // the caller's object after insert
        const got = (await s.get(r.id))!;
        got.status = 'cancelled';
        ((got.job as EvalJob).args as string[]).push('i32=1');
        expect(await s.get(r.id)).toStrictEqual({ ...r, principal: 'alice' });
      });

      it('refuses a second job with the same id', async () => {
        const s = await fresh();
        const r = jobRecord();
        await s.insert(r);
        await expect(s.insert({ ...r, principal: 'bob' })).rejects.toThrow(
          `Cannot insert job '${r.id}': a job with this id already exists`,
        );
        expect((await s.get(r.id))!.principal).toBe('alice');
      });
    });

    describe('findByIdempotencyKey', () => {
      it('finds a job by its principal and key within the window, and nothing else', async () => {
        const s = await fresh();
        const r = jobRecord({ idempotencyKey: 'key-1', createdAt: T0 });
        await s.insert(r);
        await s.insert(jobRecord({ createdAt: T0 + 1 })); // no key
        expect((await s.findByIdempotencyKey('alice', 'key-1', T0 - 1000))?.id).toBe(r.id);
        expect((await s.findByIdempotencyKey('alice', 'key-1', T0))?.id).toBe(r.id); // the window's edge is in
        expect(await s.findByIdempotencyKey('alice', 'key-1', T0 + 1)).toBeUndefined(); // older than the window
        expect(await s.findByIdempotencyKey('bob', 'key-1', 0)).toBeUndefined(); // another principal's key
        expect(await s.findByIdempotencyKey('alice', 'key-2', 0)).toBeUndefined();
      });

      it('gives the newest job of a key reused after its window', async () => {
        const s = await fresh();
        const old = jobRecord({ idempotencyKey: 'k', createdAt: T0 });
        const reused = jobRecord({ idempotencyKey: 'k', createdAt: T0 + 86_400_000 });
        const bobs = jobRecord({ idempotencyKey: 'k', createdAt: T0 + 86_400_001, principal: 'bob' });
        for (const r of [old, reused, bobs]) await s.insert(r);
        expect((await s.findByIdempotencyKey('alice', 'k', 0))?.id).toBe(reused.id);
        expect((await s.findByIdempotencyKey('bob', 'k', 0))?.id).toBe(bobs.id);
      });

      it('finds the job whatever its status', async () => {
        const s = await fresh();
        const r = jobRecord({ idempotencyKey: 'k' });
        await s.insert(r);
        await s.finish(r.id, PASSED);
        expect((await s.findByIdempotencyKey('alice', 'k', 0))?.status).toBe('succeeded');
      });
    });

    describe('list', () => {
      it('lists newest first, and filters by principal, status and verdict together', async () => {
        const s = await fresh();
        const [a, b, c, d] = [
          jobRecord({ createdAt: T0 }),
          jobRecord({ createdAt: T0 + 1, principal: 'bob' }),
          jobRecord({ createdAt: T0 + 2 }),
          jobRecord({ createdAt: T0 + 3 }),
        ];
        for (const r of [c, a, d, b]) await s.insert(r!); // insertion order is not the listing's
        await s.markRunning(c!.id, 'GPU-0', T0 + 10);
        await s.finish(c!.id, { ...PASSED, verdict: 'INCORRECT' });
        await s.finish(d!.id, PASSED);
        const ids = async (filter: Parameters<JobStore['list']>[0]) => (await s.list(filter)).items.map((r) => r.id);
        expect(await ids({ limit: 10 })).toEqual([d!.id, c!.id, b!.id, a!.id]);
        expect(await ids({ limit: 10, principal: 'alice' })).toEqual([d!.id, c!.id, a!.id]);
        expect(await ids({ limit: 10, status: 'queued' })).toEqual([b!.id, a!.id]);
        expect(await ids({ limit: 10, status: 'succeeded', verdict: 'INCORRECT' })).toEqual([c!.id]);
        expect(await ids({ limit: 10, principal: 'bob', status: 'succeeded' })).toEqual([]);
        expect(await ids({ limit: 10, verdict: 'PASSED', principal: 'alice' })).toEqual([d!.id]);
      });

      it('pages with a cursor: every job once, in order, and no next page after the last', async () => {
        const s = await fresh();
        // Several jobs per millisecond: the order is the ids', not the times' (which tie).
        const all = (await insertMany(s, 23, {}, 4)).map((r) => r.id).reverse();
        for (const limit of [1, 5, 23, 24, 100]) {
          const seen: string[] = [];
          let after: string | undefined;
          let pages = 0;
          do {
            const page = await s.list(after === undefined ? { limit } : { limit, after });
            expect(page.items.length).toBeLessThanOrEqual(limit);
            seen.push(...page.items.map((r) => r.id));
            after = page.next;
            pages++;
          } while (after !== undefined);
          expect(seen, `limit ${limit}`).toEqual(all);
          expect(pages).toBe(Math.max(1, Math.ceil(23 / limit)));
        }
      });

      it('gives no next page when the last page is exactly full', async () => {
        const s = await fresh();
        await insertMany(s, 4);
        const first = await s.list({ limit: 2 });
        expect(first.next).toBe(first.items[1]!.id);
        const second = await s.list({ limit: 2, after: first.next! });
        expect(second.items).toHaveLength(2);
        expect(second.next).toBeUndefined();
      });

      it('neither repeats nor skips a job when jobs are created while a client pages', async () => {
        const s = await fresh();
        const before = (await insertMany(s, 10)).map((r) => r.id).reverse();
        const seen: string[] = [];
        let page = await s.list({ limit: 3 });
        let createdAt = T0 + 1000;
        for (;;) {
          seen.push(...page.items.map((r) => r.id));
          await s.insert(jobRecord({ createdAt: createdAt++ })); // newer than every cursor
          await s.insert(jobRecord({ createdAt: createdAt++ }));
          if (page.next === undefined) break;
          page = await s.list({ limit: 3, after: page.next });
        }
        expect(seen).toEqual(before);
        expect(new Set(seen).size).toBe(seen.length);
        expect((await s.list({ limit: 100 })).items).toHaveLength(10 + 2 * 4);
      });

      it('pages within a filter', async () => {
        const s = await fresh();
        const records = await insertMany(s, 12);
        for (const r of records.filter((_, i) => i % 3 === 0)) await s.finish(r.id, PASSED);
        const queued = records
          .filter((_, i) => i % 3 !== 0)
          .map((r) => r.id)
          .reverse();
        const seen: string[] = [];
        let after: string | undefined;
        do {
          const page = await s.list({ limit: 3, status: 'queued', ...(after === undefined ? {} : { after }) });
          seen.push(...page.items.map((r) => r.id));
          after = page.next;
        } while (after !== undefined);
        expect(seen).toEqual(queued);
      });

      it('refuses a limit that is not a positive integer and an empty cursor', async () => {
        const s = await fresh();
        await expect(s.list({ limit: 0 })).rejects.toThrow(
          new RangeError('Expected a positive integer for filter.limit but received 0 of type number'),
        );
        await expect(s.list({ limit: 2.5 })).rejects.toThrow(RangeError);
        await expect(s.list({ limit: 2, after: '' })).rejects.toThrow(
          "Expected a cursor from a previous page for filter.after but received '' of type string",
        );
      });
    });

    describe('queued', () => {
      it('gives the queued jobs only, oldest first', async () => {
        const s = await fresh();
        const [a, b, c, d] = [0, 1, 1, 2].map((dt) => jobRecord({ createdAt: T0 + dt })); // b, c: one millisecond
        for (const r of [d, c, b, a]) await s.insert(r!);
        await s.markRunning(b!.id, 'GPU-0', T0 + 5);
        const e = jobRecord({ createdAt: T0 + 3 });
        await s.insert(e);
        await s.finish(e.id, { ...PASSED, status: 'cancelled', verdict: undefined, report: undefined });
        expect((await s.queued()).map((r) => r.id)).toEqual([a!.id, c!.id, d!.id]);
      });
    });

    describe('markRunning', () => {
      it('moves a queued job to running with its GPU and start time, once', async () => {
        const s = await fresh();
        const r = jobRecord();
        await s.insert(r);
        expect(await s.markRunning(r.id, 'GPU-1', T0 + 7)).toBe(true);
        expect(await s.get(r.id)).toMatchObject({ status: 'running', gpuUuid: 'GPU-1', startedAt: T0 + 7 });
        expect(await s.markRunning(r.id, 'GPU-2', T0 + 8)).toBe(false);
        expect(await s.get(r.id)).toMatchObject({ gpuUuid: 'GPU-1', startedAt: T0 + 7 });
      });

      it('refuses a job cancelled meanwhile, a finished one and an unknown one', async () => {
        const s = await fresh();
        const [cancelled, finished] = await insertMany(s, 2);
        await s.finish(cancelled!.id, { ...PASSED, status: 'cancelled', verdict: undefined, report: undefined });
        await s.markRunning(finished!.id, 'GPU-0', T0);
        await s.finish(finished!.id, PASSED);
        expect(await s.markRunning(cancelled!.id, 'GPU-0', T0 + 9)).toBe(false);
        expect(await s.markRunning(finished!.id, 'GPU-0', T0 + 9)).toBe(false);
        expect(await s.markRunning(newJobId(), 'GPU-0', T0 + 9)).toBe(false);
        expect((await s.get(cancelled!.id))!.status).toBe('cancelled');
        expect((await s.get(cancelled!.id))!.gpuUuid).toBeUndefined();
      });

      it('with takeOver, claims a running job again: a new GPU and start time, its old phase cleared', async () => {
        const s = await fresh();
        const [running, queued] = await insertMany(s, 2);
        await s.markRunning(running!.id, 'GPU-1', T0 + 1);
        await s.setPhase(running!.id, 'time');
        expect(await s.markRunning(running!.id, 'GPU-2', T0 + 9)).toBe(false); // without takeOver: a running job stays
        expect(await s.get(running!.id)).toMatchObject({ gpuUuid: 'GPU-1', startedAt: T0 + 1, phase: 'time' });
        expect(await s.markRunning(running!.id, 'GPU-2', T0 + 9, { takeOver: true })).toBe(true);
        expect(await s.get(running!.id)).toStrictEqual({
          ...running!,
          status: 'running',
          gpuUuid: 'GPU-2',
          startedAt: T0 + 9,
          phase: undefined,
        });
        expect(await s.markRunning(queued!.id, 'GPU-3', T0 + 10, { takeOver: true })).toBe(true); // queued: as without
        expect(await s.get(queued!.id)).toMatchObject({ status: 'running', gpuUuid: 'GPU-3', startedAt: T0 + 10 });
      });

      it('never takes over a finished job, nor an unknown one', async () => {
        const s = await fresh();
        const [done, cancelled] = await insertMany(s, 2);
        await s.markRunning(done!.id, 'GPU-0', T0 + 1);
        await s.finish(done!.id, PASSED);
        await s.finish(cancelled!.id, { ...PASSED, status: 'cancelled', verdict: undefined, report: undefined });
        const before = await Promise.all([s.get(done!.id), s.get(cancelled!.id)]);
        expect(await s.markRunning(done!.id, 'GPU-9', T0 + 99, { takeOver: true })).toBe(false);
        expect(await s.markRunning(cancelled!.id, 'GPU-9', T0 + 99, { takeOver: true })).toBe(false);
        expect(await s.markRunning(newJobId(), 'GPU-9', T0 + 99, { takeOver: true })).toBe(false);
        expect(await Promise.all([s.get(done!.id), s.get(cancelled!.id)])).toStrictEqual(before);
      });
    });

    describe('setPhase', () => {
      it('records the phase of a running job, and leaves queued and finished jobs alone', async () => {
        const s = await fresh();
        const [running, queued, done] = await insertMany(s, 3);
        await s.markRunning(running!.id, 'GPU-0', T0);
        await s.setPhase(running!.id, 'compile');
        await s.setPhase(running!.id, 'check');
        await s.setPhase(queued!.id, 'check');
        await s.finish(done!.id, { ...PASSED, phase: 'time' });
        await s.setPhase(done!.id, 'profile');
        await s.setPhase(newJobId(), 'check'); // unknown: nothing to do, no error
        expect((await s.get(running!.id))!.phase).toBe('check');
        expect((await s.get(queued!.id))!.phase).toBeUndefined();
        expect((await s.get(done!.id))!.phase).toBe('time');
      });
    });

    describe('finish', () => {
      it('writes the result of a running job', async () => {
        const s = await fresh();
        const r = jobRecord();
        await s.insert(r);
        await s.markRunning(r.id, 'GPU-0', T0 + 1);
        await s.setPhase(r.id, 'time');
        const error = { code: 'CUDA_ERROR_ILLEGAL_ADDRESS', message: 'sticky', phase: 'time' };
        expect(
          await s.finish(r.id, {
            status: 'succeeded',
            verdict: 'RUNTIME_ERROR',
            phase: 'time',
            report: '{}',
            error,
            atMs: T0 + 9,
          }),
        ).toBe(true);
        expect(await s.get(r.id)).toStrictEqual({
          ...r,
          status: 'succeeded',
          verdict: 'RUNTIME_ERROR',
          phase: 'time',
          gpuUuid: 'GPU-0',
          startedAt: T0 + 1,
          finishedAt: T0 + 9,
          report: '{}',
          error,
        });
      });

      it('is idempotent: a second finish resolves false and keeps the first result', async () => {
        const s = await fresh();
        const r = jobRecord();
        await s.insert(r);
        await s.markRunning(r.id, 'GPU-0', T0);
        expect(await s.finish(r.id, PASSED)).toBe(true);
        const first = await s.get(r.id);
        const second = {
          status: 'failed',
          verdict: 'CRASHED',
          phase: 'check',
          report: undefined,
          atMs: T0 + 99,
        } as const;
        expect(await s.finish(r.id, { ...second, error: { code: 'X', message: 'again' } })).toBe(false);
        expect(await s.finish(r.id, { ...PASSED, status: 'cancelled' })).toBe(false);
        expect(await s.get(r.id)).toStrictEqual(first);
      });

      it('finishes a queued job (cancelled before it ran), and nothing for an unknown id', async () => {
        const s = await fresh();
        const r = jobRecord();
        await s.insert(r);
        const cancel = { status: 'cancelled', verdict: undefined, phase: undefined, report: undefined } as const;
        expect(await s.finish(r.id, { ...cancel, error: undefined, atMs: T0 + 3 })).toBe(true);
        expect(await s.get(r.id)).toMatchObject({ status: 'cancelled', finishedAt: T0 + 3, startedAt: undefined });
        expect(await s.finish(newJobId(), PASSED)).toBe(false);
      });

      it('with onlyIfQueued, finishes a queued job only: a running or finished one is left as it is', async () => {
        const s = await fresh();
        const [queued, running, done] = await insertMany(s, 3);
        await s.markRunning(running!.id, 'GPU-0', T0 + 1);
        await s.finish(done!.id, PASSED);
        const expired = {
          status: 'failed',
          verdict: undefined,
          phase: undefined,
          report: undefined,
          error: { code: 'QUEUE_TIMEOUT', message: 'waited 300 s in the queue' },
          atMs: T0 + 300_000,
          onlyIfQueued: true,
        } as const;
        expect(await s.finish(queued!.id, expired)).toBe(true);
        expect(await s.get(queued!.id)).toStrictEqual({
          ...queued!,
          status: 'failed',
          finishedAt: T0 + 300_000,
          error: { code: 'QUEUE_TIMEOUT', message: 'waited 300 s in the queue' },
        });
        const runningBefore = await s.get(running!.id);
        const doneBefore = await s.get(done!.id);
        expect(await s.finish(running!.id, expired)).toBe(false);
        expect(await s.finish(done!.id, expired)).toBe(false);
        expect(await s.finish(newJobId(), expired)).toBe(false);
        expect(await s.get(running!.id)).toStrictEqual(runningBefore);
        expect(await s.get(done!.id)).toStrictEqual(doneBefore);
        expect(await s.finish(running!.id, PASSED)).toBe(true); // without it, the running job finishes as before
      });
    });

    describe('interruptRunning', () => {
      it('fails the running jobs as interrupted, keeping their phase, and leaves the rest', async () => {
        const s = await fresh();
        const [inPhase, noPhase, queued, done] = await insertMany(s, 4);
        for (const r of [inPhase!, noPhase!, done!]) await s.markRunning(r.id, 'GPU-0', T0 + 1);
        await s.setPhase(inPhase!.id, 'time');
        await s.finish(done!.id, PASSED);
        expect(await s.interruptRunning(T0 + 50)).toEqual([inPhase!.id, noPhase!.id]);
        expect(await s.get(inPhase!.id)).toMatchObject({
          status: 'failed',
          verdict: undefined,
          phase: 'time',
          finishedAt: T0 + 50,
          error: { ...INTERRUPTED_ERROR, phase: 'time' },
        });
        expect((await s.get(noPhase!.id))!.error).toStrictEqual({ ...INTERRUPTED_ERROR });
        expect((await s.get(queued!.id))!.status).toBe('queued');
        expect((await s.get(done!.id))!.status).toBe('succeeded');
        expect(await s.interruptRunning(T0 + 60)).toEqual([]);
        expect(await s.finish(inPhase!.id, PASSED)).toBe(false); // a late result from before the restart
      });
    });

    describe('purge and deleteFinishedBefore', () => {
      it('purges a finished job with its events, and refuses an unfinished or unknown one', async () => {
        const s = await fresh();
        const [queued, running, done] = await insertMany(s, 3);
        await s.markRunning(running!.id, 'GPU-0', T0);
        await s.finish(done!.id, PASSED);
        await s.appendEvent({ jobId: done!.id, type: 'done', data: { status: 'succeeded' }, atMs: T0 });
        expect(await s.purge(queued!.id)).toBe(false);
        expect(await s.purge(running!.id)).toBe(false);
        expect(await s.purge(newJobId())).toBe(false);
        expect(await s.purge(done!.id)).toBe(true);
        expect(await s.get(done!.id)).toBeUndefined();
        expect(await s.events(done!.id, 0)).toEqual([]);
        expect(await s.purge(done!.id)).toBe(false);
        expect(await s.get(queued!.id)).toBeDefined();
        expect(await s.get(running!.id)).toBeDefined();
      });

      it('deletes the jobs finished before a time, with their events, and nothing unfinished', async () => {
        const s = await fresh();
        const records = await insertMany(s, 6, { createdAt: T0 - 10_000 });
        const [early, edge, late, oldQueued, oldRunning, earlyFailed] = records;
        await s.finish(early!.id, { ...PASSED, atMs: T0 - 1 });
        await s.finish(edge!.id, { ...PASSED, atMs: T0 });
        await s.finish(late!.id, { ...PASSED, atMs: T0 + 1 });
        await s.markRunning(oldRunning!.id, 'GPU-0', T0 - 5000);
        const failed = { status: 'failed', verdict: undefined, phase: undefined, report: undefined } as const;
        await s.finish(earlyFailed!.id, { ...failed, error: { code: 'QUEUE_TIMEOUT', message: 'x' }, atMs: T0 - 2 });
        await s.appendEvent({ jobId: early!.id, type: 'done', data: null, atMs: T0 - 1 });
        expect(await s.deleteFinishedBefore(T0)).toBe(2);
        expect(await s.get(early!.id)).toBeUndefined();
        expect(await s.get(earlyFailed!.id)).toBeUndefined();
        expect(await s.events(early!.id, 0)).toEqual([]);
        for (const r of [edge, late, oldQueued, oldRunning]) expect(await s.get(r!.id)).toBeDefined();
        expect(await s.deleteFinishedBefore(T0)).toBe(0);
      });
    });

    describe('events', () => {
      it('numbers each job’s events from 1, and resumes after a seq (Last-Event-ID)', async () => {
        const s = await fresh();
        const [a, b] = await insertMany(s, 2);
        const appended = [];
        appended.push(await s.appendEvent({ jobId: a!.id, type: 'queued', data: { position: 1 }, atMs: T0 }));
        appended.push(await s.appendEvent({ jobId: b!.id, type: 'queued', data: { position: 2 }, atMs: T0 + 1 }));
        appended.push(await s.appendEvent({ jobId: a!.id, type: 'started', data: { gpu: 'GPU-0' }, atMs: T0 + 2 }));
        appended.push(await s.appendEvent({ jobId: a!.id, type: 'phase', data: { phase: 'compile' }, atMs: T0 + 3 }));
        appended.push(await s.appendEvent({ jobId: a!.id, type: 'progress', data: undefined, atMs: T0 + 4 }));
        expect(appended.map((e) => `${e.jobId === a!.id ? 'a' : 'b'}${e.seq}`)).toEqual(['a1', 'b1', 'a2', 'a3', 'a4']);
        expect(appended[2]).toStrictEqual({
          seq: 2,
          jobId: a!.id,
          type: 'started',
          data: { gpu: 'GPU-0' },
          atMs: T0 + 2,
        });

        const all = await s.events(a!.id, 0);
        expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
        expect(all).toStrictEqual(appended.filter((e) => e.jobId === a!.id));
        expect(all[3]!.data).toBeUndefined();
        expect((await s.events(a!.id, 2)).map((e) => e.type)).toEqual(['phase', 'progress']);
        expect(await s.events(a!.id, 4)).toEqual([]);
        expect(await s.events(a!.id, 99)).toEqual([]);
        expect((await s.events(b!.id, 0)).map((e) => e.data)).toEqual([{ position: 2 }]);
        expect(await s.events(newJobId(), 0)).toEqual([]);
      });

      it('keeps numbering after a job finishes (the done event comes last)', async () => {
        const s = await fresh();
        const r = jobRecord();
        await s.insert(r);
        await s.appendEvent({ jobId: r.id, type: 'queued', data: {}, atMs: T0 });
        await s.finish(r.id, PASSED);
        expect((await s.appendEvent({ jobId: r.id, type: 'done', data: { verdict: 'PASSED' }, atMs: T0 })).seq).toBe(2);
      });

      it('refuses an event for a job that is not there, and a negative afterSeq', async () => {
        const s = await fresh();
        const id = newJobId();
        await expect(s.appendEvent({ jobId: id, type: 'queued', data: {}, atMs: T0 })).rejects.toThrow(
          `Cannot append an event to job '${id}': no such job (never inserted, or purged)`,
        );
        await expect(s.events(id, -1)).rejects.toThrow(RangeError);
      });
    });

    describe('counts', () => {
      it('counts the queued jobs, of everyone and of one principal', async () => {
        const s = await fresh();
        expect(await s.queuedCount()).toBe(0);
        expect(await s.queuedCount('alice')).toBe(0);
        const alices = await insertMany(s, 3);
        const bobs = await insertMany(s, 2, { principal: 'bob' });
        await s.markRunning(alices[0]!.id, 'GPU-0', T0);
        await s.finish(bobs[0]!.id, { ...PASSED, status: 'cancelled', verdict: undefined, report: undefined });
        expect(await s.queuedCount()).toBe(3);
        expect(await s.queuedCount('alice')).toBe(2);
        expect(await s.queuedCount('bob')).toBe(1);
        expect(await s.queuedCount('carol')).toBe(0);
      });

      it('counts every status, zero included', async () => {
        const s = await fresh();
        expect(await s.counts()).toStrictEqual({ queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 });
        const [a, b, c] = await insertMany(s, 5);
        await s.markRunning(a!.id, 'GPU-0', T0);
        await s.markRunning(b!.id, 'GPU-1', T0);
        await s.finish(b!.id, PASSED);
        await s.finish(c!.id, { ...PASSED, status: 'cancelled', verdict: undefined });
        expect(await s.counts()).toStrictEqual({ queued: 2, running: 1, succeeded: 1, failed: 0, cancelled: 1 });
      });

      it('gives the mean creation time of every stored job, undefined without one', async () => {
        const s = await fresh();
        expect(await s.meanCreatedAtMs()).toBeUndefined();
        await s.insert(jobRecord({ createdAt: 1000 }));
        await s.insert(jobRecord({ createdAt: 4000 }));
        expect(await s.meanCreatedAtMs()).toBe(2500);
      });
    });

    describe('close', () => {
      it('refuses every call after close, and closes twice without error', async () => {
        const s = await fresh();
        const r = jobRecord();
        await s.insert(r);
        await s.close();
        await s.close();
        await expect(s.get(r.id)).rejects.toThrow('The job store is closed');
        await expect(s.insert(jobRecord())).rejects.toThrow('The job store is closed');
        await expect(s.counts()).rejects.toThrow('The job store is closed');
      });
    });
  });
}
