// SPDX-License-Identifier: MIT
// The problems' leaderboards through the v1 API, over a fake pool: GET /v1/problems/{name}/leaderboard ranks each
// principal's best PASSED submission and shows of it only its display name, score, interval, time, class and status
// (no principal, job id, source or hidden case); a problem not served is a 404 and every hostile parameter a 400 in
// the v1 error format; DELETE takes the admin scope and removes by principal or by display name.
import { rmSync } from 'node:fs';
import type { EvalJob } from 'cudakit';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { defaultGpuClass } from '../../src/http/routes/leaderboard.js';
import type { App } from '../../src/http/shared.js';
import type { JobExtras } from '../../src/run/protocol.js';
import { ProblemRegistry } from '../../src/submit/problems.js';
import { auth, closeApps, harness, namer, type Who } from '../support/app-harness.js';
import { ADD, ADD_FILES, FILL_FILES, addReport, expectNoHidden, registry } from '../support/cases-problem.js';
import { fakeGpus, scriptByName } from '../support/fake-pool.js';
import { settled } from '../support/helpers.js';
import { SERVICE_MAX_GPU_MS, SERVICE_PRECISION } from '../../src/schedule/service-timing.js';

const dirs: string[] = [];
afterEach(closeApps);
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const problems = (): ProblemRegistry => ProblemRegistry.load(registry({ ...ADD_FILES, ...FILL_FILES }, dirs));

const SUBMISSION = { problem: 'add', source: ADD, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 };

/**
 * The fake pool's script, but a submission named 'fast' scores 2.1 (addReport's) where the others score 2, and one
 * named 'h100' ran on an H100 (its report says so): a board is the model's that ran the job.
 */
function scoring(job: EvalJob, id: string, extras?: JobExtras) {
  if (job.name === 'h100') {
    const report = { ...addReport('pass'), score: 2, device: { name: 'NVIDIA H100 80GB HBM3', arch: 'sm_90' } };
    return { delayMs: 5, outcome: { kind: 'report', report, device: undefined } } as const;
  }
  if (job.name !== 'fast') return scriptByName(job, id, extras);
  return { delayMs: 5, outcome: { kind: 'report', report: addReport('pass'), device: undefined } } as const;
}

/** Submits to 'add' as `who` and waits for the end; returns the job id. */
async function run(app: App, who: Who, more: object = {}): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/evaluations',
    headers: auth(who),
    payload: { ...SUBMISSION, ...more },
  });
  expect(res.statusCode, res.body).toBe(202);
  const { id } = res.json() as { id: string };
  expect((await settled(app.service, id)).status).toBe('succeeded');
  return id;
}

async function board(app: App, query = '', who: Who = 'viewer', name = 'add') {
  return app.inject({ method: 'GET', url: `/v1/problems/${name}/leaderboard${query}`, headers: auth(who) });
}

/** A 4xx in the v1 format: exactly its four fields, the code, and no path or stack in it. */
function expectError(res: { statusCode: number; body: string; json(): unknown }, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json() as Record<string, unknown>;
  expect(body.code).toBe(code);
  expect(Object.keys(body).filter((k) => k !== 'details')).toEqual(['statusCode', 'code', 'error', 'message']);
  expect(res.body).not.toMatch(/\/(work|tmp|home)\/|\.ts:\d|at [A-Za-z.]+ \(/);
  return body as { message: string };
}

describe('GET /v1/problems/{name}/leaderboard', () => {
  it("ranks each principal's best submission, and shows nothing of a principal, a job or a source", async () => {
    const { app, pool } = await harness({ problems: problems() });
    const name = await namer(app);
    pool.script = scoring;
    const ids = [await run(app, 'alice'), await run(app, 'bob', { name: 'fast' }), await run(app, 'alice')];
    const res = await board(app);
    expect(res.statusCode, res.body).toBe(200);
    const submittedAt = async (id: string) => new Date((await app.service.get(id))!.createdAt).toISOString();
    const entry = { scoreLow: 1.9, gpuClass: 'H200', status: 'provisional' };
    expect(res.json()).toEqual({
      problem: 'add',
      gpuClass: 'H200',
      entries: [
        {
          rank: 1,
          displayName: name('bob'),
          score: 2.1,
          scoreHigh: 2.3,
          submittedAt: await submittedAt(ids[1]!),
          ...entry,
        },
        // alice's two results tie: the earlier stays.
        {
          rank: 2,
          displayName: name('alice'),
          score: 2,
          scoreHigh: 2.1,
          submittedAt: await submittedAt(ids[0]!),
          ...entry,
        },
      ],
      next: null,
    });
    for (const secret of ['alice', 'bob', 'principal', 'jobId', ...ids, ADD.slice(0, 40), 'extern']) {
      expect(res.body, secret).not.toContain(secret);
    }
    expectNoHidden(res.body);
  });

  it('puts nothing timed on a shared GPU (a MIG slice, or other processes on it) on a board', async () => {
    const { app } = await harness({ problems: problems(), gpus: fakeGpus(1).map((g) => ({ ...g, shared: true })) });
    const id = await run(app, 'alice');
    expect((await app.service.get(id))?.verdict).toBe('PASSED');
    expect((await board(app)).json()).toMatchObject({ gpuClass: 'H200', entries: [] });
  });

  it('pages by offset, reads another class with gpuClass, and takes the read scope', async () => {
    const { app, pool } = await harness({ problems: problems() });
    const name = await namer(app);
    pool.script = scoring;
    await run(app, 'alice');
    await run(app, 'bob', { name: 'h100' });
    await run(app, 'root');
    const first = (await board(app, '?limit=1')).json() as { entries: { rank: number }[]; next: number };
    expect([first.entries.map((e) => e.rank), first.next]).toEqual([[1], 1]);
    const second = (await board(app, '?limit=1&offset=1')).json() as { entries: { rank: number }[]; next: unknown };
    expect([second.entries.map((e) => e.rank), second.next]).toEqual([[2], null]);
    const h100 = (await board(app, '?gpuClass=H100')).json() as {
      gpuClass: string;
      entries: { displayName: string }[];
    };
    expect(h100.gpuClass).toBe('H100');
    expect(h100.entries.map((e) => e.displayName)).toEqual([name('bob')]);
    // Asked for by arch, the board is still the model's: 'sm_90' spans models, and none of its own exists.
    expect((await board(app, '?gpuClass=sm_90')).json()).toEqual({
      problem: 'add',
      gpuClass: 'sm_90',
      entries: [],
      next: null,
    });
    const anonymous = await app.inject({ method: 'GET', url: '/v1/problems/add/leaderboard' });
    expectError(anonymous, 401, 'UNAUTHORIZED');
  });

  it('answers 404 for a problem not served with cases: unknown, or a single-shape one', async () => {
    const { app } = await harness({ problems: problems() });
    for (const name of ['nothing', 'fill', 'ADD']) {
      const body = expectError(await board(app, '', 'viewer', name), 404, 'PROBLEM_NOT_FOUND');
      expect(body.message).toBe(`No problem with cases '${name}' here (GET /v1/problems lists them)`);
    }
  });

  it('refuses a hostile name, class, limit or offset with a 400 before the store is asked', async () => {
    const { app } = await harness({ problems: problems() });
    const asked: unknown[] = [];
    const read = app.service.store.leaderboard.bind(app.service.store);
    app.service.store.leaderboard = async (filter) => (asked.push(filter), read(filter));
    const names = ['..%2F..%2Fetc', '.add', 'a%20b', 'a'.repeat(65), '%3Cscript%3E', 'add%00'];
    for (const name of names) expectError(await board(app, '', 'viewer', name), 400, 'FST_ERR_VALIDATION');
    const queries = [
      '?gpuClass=H200%3BDROP',
      '?gpuClass=%3Cb%3E',
      `?gpuClass=${'H'.repeat(65)}`,
      '?gpuClass=',
      '?limit=0',
      '?limit=101',
      '?limit=x',
      '?offset=-1',
      '?offset=100001',
      '?principal=alice',
    ];
    for (const q of queries) {
      const res = await board(app, q);
      expect(res.statusCode, q).toBe(400);
      expectError(res, 400, 'FST_ERR_VALIDATION');
    }
    expect(asked).toEqual([]);
    expect((await board(app, '?limit=100&offset=100000')).statusCode).toBe(200);
  });

  it('needs a gpuClass where no GPU here gives one', async () => {
    const { app } = await harness({ problems: problems(), unavailableReason: 'no driver (fake)' });
    const body = expectError(await board(app), 400, 'GPU_CLASS_REQUIRED');
    expect(body.message).toBe('No GPU here gives a class: name one with ?gpuClass=');
    expect((await board(app, '?gpuClass=H200')).statusCode).toBe(200);
  });
});

describe('defaultGpuClass', () => {
  it("takes the model most GPUs are of, the first by name on a tie, and none of 'any'", () => {
    const slot = (...classes: string[]) => ({ classes });
    expect(defaultGpuClass([slot('H100', 'sm_90'), slot('H200', 'sm_90'), slot('H200', 'sm_90')])).toBe('H200');
    expect(defaultGpuClass([slot('H200', 'sm_90'), slot('H100', 'sm_90')])).toBe('H100');
    expect(defaultGpuClass([slot('any')])).toBeUndefined();
    expect(defaultGpuClass([])).toBeUndefined();
  });
});

describe('DELETE /v1/problems/{name}/leaderboard/{who}', () => {
  const remove = (app: App, path: string, who: Who = 'root') =>
    app.inject({ method: 'DELETE', url: `/v1/problems/add/leaderboard/${path}`, headers: auth(who) });
  const shown = async (app: App, query = '') =>
    ((await board(app, query)).json() as { entries: { displayName: string }[] }).entries.map((e) => e.displayName);

  it('takes the admin scope, and removes by display name or by principal, on one class or every one', async () => {
    const { app, pool } = await harness({ problems: problems() });
    const name = await namer(app);
    pool.script = scoring;
    await run(app, 'alice');
    await run(app, 'alice', { name: 'h100' });
    await run(app, 'bob');
    expectError(await remove(app, name('alice'), 'alice'), 403, 'FORBIDDEN');
    expectError(await remove(app, 'bob', 'bob'), 403, 'FORBIDDEN');
    expect(await shown(app)).toEqual([name('alice'), name('bob')]);

    const byName = await remove(app, `${name('alice')}?gpuClass=H100`);
    expect([byName.statusCode, byName.json()]).toEqual([200, { problem: 'add', removed: 1 }]);
    expect(await shown(app, '?gpuClass=H100')).toEqual([]);
    expect(await shown(app)).toEqual([name('alice'), name('bob')]);

    expect((await remove(app, 'alice')).json()).toEqual({ problem: 'add', removed: 1 });
    expect(await shown(app)).toEqual([name('bob')]);
    const again = expectError(await remove(app, 'alice'), 404, 'LEADERBOARD_ENTRY_NOT_FOUND');
    expect(again.message).toBe("No entry of 'alice' on the leaderboard of 'add'");
    expectError(await remove(app, 'bob%2F..'), 400, 'FST_ERR_VALIDATION');
    expectError(await remove(app, 'bob?gpuClass=%3Cb%3E'), 400, 'FST_ERR_VALIDATION');
    expect(await shown(app)).toEqual([name('bob')]);
  });
});

describe('confirmation re-runs', () => {
  type Score = { score: number; scoreLow: number; scoreHigh: number };
  /** The fake pool's script for the re-runs: a report of this score and interval, or a failed hidden case. */
  const rerunScript = (result: Score | 'fails') => (job: EvalJob, id: string, extras?: JobExtras) => {
    if (result === 'fails') return scriptByName({ ...job, name: 'hidden-fail' }, id, extras);
    const report = { ...addReport('pass'), ...result };
    return { delayMs: 5, outcome: { kind: 'report', report, device: undefined } } as const;
  };
  const entries = async (app: App) =>
    ((await board(app)).json() as { entries: { displayName: string; score: number; status: string }[] }).entries;
  /** POST …/leaderboard/{who}/reverify, `query` after the path. */
  const reverify = (app: App, who: string, as: Who = 'root', query = '') =>
    app.inject({ method: 'POST', url: `/v1/problems/add/leaderboard/${who}/reverify${query}`, headers: auth(as) });

  it('queues a re-run per provisional entry, on its board, as its principal; one that agrees confirms it', async () => {
    const { app, service, pool } = await harness({ problems: problems() });
    const name = await namer(app);
    const original = await run(app, 'alice');
    // Another score, but an interval that overlaps the entry's [1.9, 2.1].
    pool.script = rerunScript({ score: 2.05, scoreLow: 2.0, scoreHigh: 2.2 });
    const [rerunId, ...more] = await service.sweepConfirmations();
    expect(more).toEqual([]);
    const rerun = await settled(service, rerunId!);
    expect(rerun).toMatchObject({ principal: 'alice', status: 'succeeded', verdict: 'PASSED' });
    expect(rerun.options).toMatchObject({ confirms: original, gpu: 'H200' });
    expect(rerun.job).toEqual((await service.get(original))!.job);
    // Confirmed, and still the original's entry: a re-run's result is never an entry of its own.
    expect(await entries(app)).toEqual([
      expect.objectContaining({ displayName: name('alice'), score: 2, status: 'confirmed' }),
    ]);
    expect((await app.service.store.leaderboardEntry('add', 'H200', 'alice'))?.jobId).toBe(original);
    // One re-run per entry: a later sweep queues none for it.
    expect(await service.sweepConfirmations()).toEqual([]);
    // The submission ran under the service's timing defaults (±1 %, 250 ms of GPU time); its confirmation under the
    // problem's own rules, at full precision.
    const [first, confirmation] = pool.runs.map((r) => r.extras?.problem?.timing);
    expect(first).toMatchObject({ precision: SERVICE_PRECISION, rule: { maxGpuMs: SERVICE_MAX_GPU_MS } });
    expect(confirmation).not.toHaveProperty('precision');
    expect(confirmation?.rule?.maxGpuMs).toBeUndefined();
  });

  it('leaves an entry provisional when its re-run fails or scores apart, and queues no second one', async () => {
    for (const result of ['fails', { score: 3, scoreLow: 2.9, scoreHigh: 3.1 }] as const) {
      const { app, service, pool } = await harness({ problems: problems() });
      await run(app, 'alice');
      pool.script = rerunScript(result);
      const [rerunId] = await service.sweepConfirmations();
      const rerun = await settled(service, rerunId!);
      expect(rerun.verdict).toBe(result === 'fails' ? 'HIDDEN_CASE_FAILED' : 'PASSED');
      expect(await entries(app)).toEqual([expect.objectContaining({ score: 2, status: 'provisional' })]);
      expect(await service.sweepConfirmations()).toEqual([]);
    }
  });

  it('queues nothing for an entry whose job retention deleted, nor for a confirmed one', async () => {
    const { app, service } = await harness({ problems: problems() });
    const gone = await run(app, 'alice');
    expect(await service.purge(gone)).toBe(true);
    expect(await service.sweepConfirmations()).toEqual([]);
    await run(app, 'bob');
    const [rerunId] = await service.sweepConfirmations();
    await settled(service, rerunId!);
    // alice's entry (the earlier of two equal scores) stays provisional: its job is gone.
    expect((await entries(app)).map((e) => e.status)).toEqual(['provisional', 'confirmed']);
    expect(await service.sweepConfirmations()).toEqual([]);
  });

  it("an admin's re-verify runs the job again: confirmed if it agrees, provisional again if it does not", async () => {
    const { app, service, pool } = await harness({ problems: problems() });
    const name = await namer(app);
    await run(app, 'alice');
    pool.script = rerunScript({ score: 2, scoreLow: 1.95, scoreHigh: 2.05 });
    const first = await reverify(app, name('alice'));
    expect(first.statusCode, first.body).toBe(202);
    const { id, ...rest } = first.json() as { id: string };
    expect(rest).toEqual({ problem: 'add', gpuClass: 'H200' });
    await settled(service, id);
    expect((await entries(app))[0]!.status).toBe('confirmed');
    // The sweep owes it nothing more: it is confirmed.
    expect(await service.sweepConfirmations()).toEqual([]);

    pool.script = rerunScript('fails');
    const second = await reverify(app, 'alice');
    expect(second.statusCode, second.body).toBe(202);
    const again = await settled(service, (second.json() as { id: string }).id);
    expect(again).toMatchObject({ principal: 'alice', verdict: 'HIDDEN_CASE_FAILED' });
    expect((await entries(app))[0]!.status).toBe('provisional');
  });

  it('re-verify takes the admin scope, and says what is wrong: no entry, its job gone, a hostile name', async () => {
    const { app, service } = await harness({ problems: problems() });
    const id = await run(app, 'alice');
    expectError(await reverify(app, 'alice', 'alice'), 403, 'FORBIDDEN');
    const none = expectError(await reverify(app, 'carol'), 404, 'LEADERBOARD_ENTRY_NOT_FOUND');
    expect(none.message).toBe("No entry of 'carol' on the leaderboard of 'add' on H200");
    expectError(await reverify(app, 'alice', 'root', '?gpuClass=H100'), 404, 'LEADERBOARD_ENTRY_NOT_FOUND');
    expectError(await reverify(app, 'alice%2F..'), 400, 'FST_ERR_VALIDATION');
    expectError(await reverify(app, 'alice', 'root', '?gpuClass=%3Cb%3E'), 400, 'FST_ERR_VALIDATION');
    expectError(await reverify(app, 'alice', 'root', '?limit=1'), 400, 'FST_ERR_VALIDATION');
    expect(await service.purge(id)).toBe(true);
    const gone = expectError(await reverify(app, 'alice'), 409, 'ENTRY_JOB_GONE');
    expect(gone.message).toMatch(/no longer stored/);
  });
});
