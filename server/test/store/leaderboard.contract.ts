// SPDX-License-Identifier: MIT
// The leaderboard's half of the JobStore contract (store/leaderboard.ts), which every store's test file runs beside
// jobStoreContract: a principal's best result per problem and GPU class, a board's order and pages, an admin's remove
// and a confirmation.
import { afterEach, describe, expect, it } from 'vitest';
import { newJobId } from '../../src/store/ids.js';
import type { LeaderboardEntry } from '../../src/store/leaderboard.js';
import type { JobStore } from '../../src/store/store.js';
import { jobRecord } from './store.contract.js';

const T0 = Date.UTC(2026, 10, 23, 12);

/** alice's result on add/H200, submitted at T0 (its job id made from that time), a score with every bit used. */
function entry(more: Partial<LeaderboardEntry> = {}): LeaderboardEntry {
  const submittedAt = more.submittedAt ?? T0;
  return {
    problem: 'add',
    gpuClass: 'H200',
    principal: 'alice',
    displayName: 'anon-0a1b2c3d4e',
    score: 1.2345678901234567,
    scoreLow: 1.1,
    scoreHigh: 1.3,
    jobId: more.jobId ?? newJobId(submittedAt),
    submittedAt,
    status: 'provisional',
    ...more,
  };
}

const BOARD = { problem: 'add', gpuClass: 'H200' } as const;

const PASSED = { status: 'succeeded', verdict: 'PASSED', phase: undefined, report: '{}', error: undefined } as const;

export function leaderboardContract(name: string, open: () => JobStore | Promise<JobStore>): void {
  describe(`JobStore contract, leaderboards: ${name}`, () => {
    let store: JobStore;
    afterEach(async () => {
      await store?.close();
    });

    async function fresh(): Promise<JobStore> {
      store = await open();
      return store;
    }

    /** The board's principals in rank order, with their ranks. */
    async function ranking(s: JobStore, filter: Partial<Parameters<JobStore['leaderboard']>[0]> = {}) {
      const page = await s.leaderboard({ ...BOARD, limit: 100, ...filter });
      return page.entries.map((e) => `${e.rank} ${e.principal}`);
    }

    describe('recordScore and leaderboardEntry', () => {
      it("records a principal's first result, whole, and gives nothing for one without a result", async () => {
        const s = await fresh();
        const e = entry();
        expect(await s.recordScore(e)).toBe(true);
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(e);
        expect(await s.leaderboardEntry('add', 'H200', 'bob')).toBeUndefined();
        expect(await s.leaderboardEntry('add', 'H100', 'alice')).toBeUndefined();
        expect(await s.leaderboardEntry('sum', 'H200', 'alice')).toBeUndefined();
      });

      it('keeps the best result: a higher score replaces the entry, a lower one does not', async () => {
        const s = await fresh();
        const first = entry({ score: 2 });
        await s.recordScore(first);
        const worse = entry({ score: 1.5, submittedAt: T0 + 1 });
        expect(await s.recordScore(worse)).toBe(false);
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(first);
        const better = entry({ score: 2.5, scoreLow: 2.4, scoreHigh: 2.6, submittedAt: T0 + 2 });
        expect(await s.recordScore(better)).toBe(true);
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(better);
      });

      it('on a tie keeps the earlier submission, whichever was recorded first', async () => {
        const s = await fresh();
        const earlier = entry({ score: 2, submittedAt: T0 });
        const later = entry({ score: 2, submittedAt: T0 + 10 });
        await s.recordScore(later); // finished first
        expect(await s.recordScore(earlier)).toBe(true);
        expect(await s.recordScore(later)).toBe(false);
        expect((await s.leaderboardEntry('add', 'H200', 'alice'))?.jobId).toBe(earlier.jobId);
      });

      it('changes nothing when the same job is recorded again', async () => {
        const s = await fresh();
        const e = entry();
        await s.recordScore(e);
        expect(await s.recordScore(e)).toBe(false);
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(e);
      });

      it('keeps a board per problem and GPU class', async () => {
        const s = await fresh();
        const h200 = entry({ score: 3 });
        const h100 = entry({ gpuClass: 'H100', score: 1 });
        const sum = entry({ problem: 'sum', score: 0.5 });
        for (const e of [h200, h100, sum]) expect(await s.recordScore(e)).toBe(true);
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(h200);
        expect(await s.leaderboardEntry('add', 'H100', 'alice')).toStrictEqual(h100);
        expect(await s.leaderboardEntry('sum', 'H200', 'alice')).toStrictEqual(sum);
      });

      it('keeps the best of results recorded at once', async () => {
        const s = await fresh();
        const results = [1.5, 3.25, 2, 3.25, 0.75, 3].map((score, i) => entry({ score, submittedAt: T0 + 10 - i }));
        await Promise.all(results.map((e) => s.recordScore(e)));
        // 3.25 twice: the one submitted earlier (the later in the list) stays.
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(results[3]);
      });

      it('hands out copies: editing an entry got back changes nothing stored', async () => {
        const s = await fresh();
        const e = entry();
        await s.recordScore(e);
        e.score = 100;
        const got = (await s.leaderboardEntry('add', 'H200', 'alice'))!;
        got.status = 'confirmed';
        const page = await s.leaderboard({ ...BOARD, limit: 1 });
        page.entries[0]!.displayName = 'mallory';
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual({ ...e, score: 1.2345678901234567 });
      });

      it('refuses an entry a board cannot hold, in the one message format', async () => {
        const s = await fresh();
        await expect(s.recordScore(entry({ score: Number.NaN }))).rejects.toThrow(
          new RangeError('Expected a finite positive number for entry.score but received NaN of type number'),
        );
        await expect(s.recordScore(entry({ problem: '' }))).rejects.toThrow(
          new RangeError(
            "Expected a non-empty string of at most 256 characters for entry.problem but received '' of type string",
          ),
        );
        for (const bad of [
          { scoreHigh: Number.POSITIVE_INFINITY },
          { scoreLow: 0 },
          { score: -1 },
          { submittedAt: 1.5, jobId: newJobId(T0) },
          { principal: 'x'.repeat(257) },
          { status: 'final' as LeaderboardEntry['status'] },
        ]) {
          await expect(s.recordScore(entry(bad)), JSON.stringify(bad)).rejects.toThrow(RangeError);
        }
        expect((await s.leaderboard({ ...BOARD, limit: 10 })).entries).toEqual([]);
      });
    });

    describe('leaderboard', () => {
      it('ranks by score, then the earlier submission, then the smaller job id', async () => {
        const s = await fresh();
        const tied = newJobId(T0 + 5);
        const results = [
          entry({ principal: 'carol', score: 1.5, submittedAt: T0 + 1 }),
          entry({ principal: 'alice', score: 2.5, submittedAt: T0 + 9 }),
          entry({ principal: 'dave', score: 2.5, submittedAt: T0 + 5, jobId: `${tied.slice(0, -1)}Z` }),
          entry({ principal: 'bob', score: 2.5, submittedAt: T0 + 5, jobId: `${tied.slice(0, -1)}0` }),
          entry({ principal: 'erin', score: 0.25, submittedAt: T0 }),
        ];
        for (const e of results) await s.recordScore(e);
        expect(await ranking(s)).toEqual(['1 bob', '2 dave', '3 alice', '4 carol', '5 erin']);
        const page = await s.leaderboard({ ...BOARD, limit: 1 });
        expect(page.entries).toStrictEqual([{ ...results[3], rank: 1 }]);
      });

      it('lists one board only', async () => {
        const s = await fresh();
        await s.recordScore(entry({ principal: 'alice' }));
        await s.recordScore(entry({ principal: 'bob', gpuClass: 'H100' }));
        await s.recordScore(entry({ principal: 'carol', problem: 'sum' }));
        expect(await ranking(s)).toEqual(['1 alice']);
        expect(await ranking(s, { gpuClass: 'H100' })).toEqual(['1 bob']);
        expect(await ranking(s, { gpuClass: 'sm_90' })).toEqual([]);
      });

      it('pages with an offset: every entry once, in rank order, and no next page after the last', async () => {
        const s = await fresh();
        const principals = Array.from({ length: 23 }, (_, i) => `p${String(i).padStart(2, '0')}`);
        // Scores falling with the name, a few tied (their order then the submission's).
        for (const [i, principal] of principals.entries()) {
          await s.recordScore(entry({ principal, score: 10 - Math.floor(i / 3), submittedAt: T0 + i }));
        }
        for (const limit of [1, 5, 23, 24, 100]) {
          const seen: string[] = [];
          let offset: number | undefined = 0;
          let pages = 0;
          do {
            const page = await s.leaderboard({ ...BOARD, limit, offset });
            expect(page.entries.map((e) => e.rank)).toEqual(page.entries.map((_, i) => offset! + i + 1));
            seen.push(...page.entries.map((e) => e.principal));
            offset = page.next;
            pages++;
          } while (offset !== undefined);
          expect(seen, `limit ${limit}`).toEqual(principals);
          expect(pages).toBe(Math.max(1, Math.ceil(23 / limit)));
        }
        expect(await s.leaderboard({ ...BOARD, limit: 10, offset: 50 })).toStrictEqual({
          entries: [],
          next: undefined,
        });
      });

      it('refuses a limit outside 1 to 100 and an offset outside 0 to 100000', async () => {
        const s = await fresh();
        await expect(s.leaderboard({ ...BOARD, limit: 101 })).rejects.toThrow(
          new RangeError('Expected an integer in [1, 100] for filter.limit but received 101 of type number'),
        );
        for (const bad of [{ limit: 0 }, { limit: 1.5 }, { limit: 10, offset: -1 }, { limit: 10, offset: 100_001 }]) {
          await expect(s.leaderboard({ ...BOARD, ...bad }), JSON.stringify(bad)).rejects.toThrow(RangeError);
        }
        await expect(s.leaderboard({ problem: '', gpuClass: 'H200', limit: 1 })).rejects.toThrow(RangeError);
      });
    });

    describe('removeLeaderboardEntries and setLeaderboardStatus', () => {
      it('removes by principal or by display name, on one board or on every board of a problem', async () => {
        const s = await fresh();
        const alice = { principal: 'alice', displayName: 'anon-a' };
        const bob = { principal: 'bob', displayName: 'anon-b' };
        for (const who of [alice, bob]) {
          for (const gpuClass of ['H200', 'H100']) {
            await s.recordScore(entry({ ...who, gpuClass }));
            await s.recordScore(entry({ ...who, gpuClass, problem: 'sum' }));
          }
        }
        expect(await s.removeLeaderboardEntries('add', { principal: 'alice' }, 'H200')).toBe(1);
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toBeUndefined();
        expect(await s.leaderboardEntry('add', 'H100', 'alice')).toBeDefined();
        expect(await s.removeLeaderboardEntries('add', { displayName: 'anon-b' })).toBe(2);
        expect(await ranking(s)).toEqual([]);
        expect(await ranking(s, { gpuClass: 'H100' })).toEqual(['1 alice']);
        expect(await ranking(s, { problem: 'sum' })).toEqual(['1 alice', '2 bob']);
        expect(await s.removeLeaderboardEntries('add', { principal: 'anon-a' })).toBe(0); // a name is no principal
        expect(await s.removeLeaderboardEntries('add', { displayName: 'alice' })).toBe(0); // and the other way
        expect(await s.removeLeaderboardEntries('nothing', { principal: 'alice' })).toBe(0);
      });

      it('confirms the entry of its job only, and a better result later is provisional again', async () => {
        const s = await fresh();
        const first = entry({ score: 2 });
        await s.recordScore(first);
        expect(await s.setLeaderboardStatus('add', 'H200', 'alice', newJobId(T0 + 1), 'confirmed')).toBe(false);
        expect((await s.leaderboardEntry('add', 'H200', 'alice'))?.status).toBe('provisional');
        expect(await s.setLeaderboardStatus('add', 'H200', 'alice', first.jobId, 'confirmed')).toBe(true);
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual({ ...first, status: 'confirmed' });
        expect(await s.setLeaderboardStatus('add', 'H200', 'bob', first.jobId, 'confirmed')).toBe(false);
        const better = entry({ score: 3, submittedAt: T0 + 5 });
        await s.recordScore(better);
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(better);
        expect(await s.setLeaderboardStatus('add', 'H200', 'alice', first.jobId, 'confirmed')).toBe(false);
      });

      it('sets a confirmed entry provisional again, and refuses a status it does not know', async () => {
        const s = await fresh();
        const first = entry({ score: 2 });
        await s.recordScore(first);
        expect(await s.setLeaderboardStatus('add', 'H200', 'alice', first.jobId, 'confirmed')).toBe(true);
        expect(await s.setLeaderboardStatus('add', 'H200', 'alice', first.jobId, 'provisional')).toBe(true);
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(first);
        const bad = 'disputed' as unknown as 'confirmed';
        await expect(s.setLeaderboardStatus('add', 'H200', 'alice', first.jobId, bad)).rejects.toThrow(
          /Expected 'provisional' or 'confirmed' for status but received 'disputed'/,
        );
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(first);
      });

      it('records the entry a finish carries with the end, only when that call finishes the job', async () => {
        const s = await fresh();
        const job = jobRecord({ createdAt: T0 });
        await s.insert(job);
        const mine = entry({ jobId: job.id, score: 2 });
        expect(await s.finish(job.id, { ...PASSED, atMs: T0 + 10, entry: mine })).toBe(true);
        expect(await s.leaderboardEntry('add', 'H200', 'alice')).toStrictEqual(mine);
        expect((await s.get(job.id))?.status).toBe('succeeded');
        // A second finish of the job changes nothing, its entry included.
        const better = entry({ jobId: job.id, score: 9 });
        expect(await s.finish(job.id, { ...PASSED, atMs: T0 + 20, entry: better })).toBe(false);
        expect((await s.leaderboardEntry('add', 'H200', 'alice'))?.score).toBe(2);
        // Nor does a finish of a queued job only, which finds it running.
        const running = jobRecord({ createdAt: T0 + 1 });
        await s.insert(running);
        expect(await s.markRunning(running.id, 'GPU-1', T0 + 2)).toBe(true);
        const bob = entry({ principal: 'bob', displayName: 'anon-b', jobId: running.id });
        expect(await s.finish(running.id, { ...PASSED, atMs: T0 + 30, onlyIfQueued: true, entry: bob })).toBe(false);
        expect(await s.leaderboardEntry('add', 'H200', 'bob')).toBeUndefined();
        // An entry a board cannot hold is refused before anything changes: the job is still running.
        const bad = { ...bob, score: Number.NaN };
        await expect(s.finish(running.id, { ...PASSED, atMs: T0 + 40, entry: bad })).rejects.toThrow(RangeError);
        expect((await s.get(running.id))?.status).toBe('running');
        expect(await s.leaderboardEntry('add', 'H200', 'bob')).toBeUndefined();
      });

      it('makes the pseudonym key once: 32 bytes, the same on every call', async () => {
        const s = await fresh();
        const key = await s.pseudonymKey();
        expect(key).toBeInstanceOf(Uint8Array);
        expect(key).toHaveLength(32);
        expect(new Set(key).size).toBeGreaterThan(8); // random bytes, not a constant
        const again = await Promise.all([s.pseudonymKey(), s.pseudonymKey()]);
        expect(again).toEqual([key, key]);
      });

      it('keeps an entry when retention deletes its job', async () => {
        const s = await fresh();
        const job = jobRecord({ createdAt: T0 });
        await s.insert(job);
        await s.finish(job.id, { ...PASSED, atMs: T0 + 10 });
        await s.recordScore(entry({ jobId: job.id }));
        expect(await s.deleteFinishedBefore(T0 + 11)).toBe(1);
        expect(await s.get(job.id)).toBeUndefined();
        expect((await s.leaderboardEntry('add', 'H200', 'alice'))?.jobId).toBe(job.id);
      });

      it('refuses every call after close', async () => {
        const s = await fresh();
        await s.close();
        await expect(s.recordScore(entry())).rejects.toThrow('The job store is closed');
        await expect(s.leaderboard({ ...BOARD, limit: 1 })).rejects.toThrow('The job store is closed');
        await expect(s.leaderboardEntry('add', 'H200', 'alice')).rejects.toThrow('The job store is closed');
        await expect(s.pseudonymKey()).rejects.toThrow('The job store is closed');
        await expect(s.setLeaderboardStatus('add', 'H200', 'alice', 'ev_x', 'confirmed')).rejects.toThrow(
          'The job store is closed',
        );
      });
    });
  });
}
