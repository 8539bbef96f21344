// SPDX-License-Identifier: MIT
// The scheduler (server/src/service.ts) over a fake pool: admission, priorities, GPU classes, cancel, queue expiry,
// outcomes → statuses and verdicts, SUSPICIOUS, restart recovery from a persisted store, drain, and the invariants
// under load: no slot runs two jobs at once, and every accepted job ends exactly once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidJobError, type BenchResult, type EvalJob } from 'cudakit';
import { afterEach, describe, expect, it } from 'vitest';
import { suspicionsOf } from '../src/judge/roofline.js';
import { EmbeddedQueue } from '../src/schedule/embedded-queue.js';
import type { QueuedJob } from '../src/schedule/queue.js';
import { ServiceError } from '../src/errors.js';
import { resultOf, type OutcomeContext } from '../src/judge/outcome.js';
import { EvalService } from '../src/service.js';
import { MemoryJobStore } from '../src/store/memory.js';
import { SqliteJobStore } from '../src/store/sqlite.js';
import { until } from '../../test/support/until.js';
import { FakePool, failedReport, fakeGpus, passedReport, type FakeGpu } from './support/fake-pool.js';
import { body, settled, setup, type Setup } from './support/helpers.js';

const services: EvalService[] = [];
afterEach(() => {
  for (const s of services.splice(0)) s.close();
});
async function make(options: Parameters<typeof setup>[0] = {}): Promise<Setup> {
  const s = await setup(options);
  services.push(s.service);
  return s;
}

async function rejection(p: Promise<unknown>): Promise<ServiceError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ServiceError);
  return e as ServiceError;
}

describe('submit', () => {
  it('validates with cudakit and refuses files, include paths and unlisted flags', async () => {
    const { service } = await make();
    const e = await service.submit('p', body('x', { grid: 0, args: ['ptr:q32[4]'] })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(InvalidJobError);
    expect((e as InvalidJobError).problems.map((p) => p.path)).toEqual(expect.arrayContaining(['job.grid']));

    const hostile = body('x', {
      reference: { source: { file: '/etc/passwd' }, kernel: 'k', compile: { includePaths: ['/'] } },
      compile: { extraFlags: ['-I/etc', '--use_fast_math', '--pre-include=/etc/shadow'] },
    });
    const f = (await service.submit('p', hostile).catch((x: unknown) => x)) as InvalidJobError;
    expect(f).toBeInstanceOf(InvalidJobError);
    expect(f.problems.map((p) => p.path).sort()).toEqual([
      'job.compile.extraFlags[0]',
      'job.compile.extraFlags[2]',
      'job.reference.compile.includePaths',
      'job.reference.source',
    ]);
    expect(f.problems[0]!.message).toMatch(/^Expected /);
  });

  it('caps the declared device memory', async () => {
    const { service } = await make({ limits: { maxDeviceBytes: 1024 } });
    const e = (await service
      .submit('p', body('x', { args: ['ptr:f32[1K]:out'] }))
      .catch((x: unknown) => x)) as InvalidJobError;
    expect(e.problems[0]).toMatchObject({ path: 'job.args', type: 'RangeError' });
    expect(e.problems[0]!.message).toContain('4096 bytes');
  });

  it("answers 503 with the pool's reason without a GPU, after validation", async () => {
    const { service } = await make({ unavailableReason: 'CUDA_DRIVER_NOT_FOUND: no libcuda.so.1' });
    await expect(service.submit('p', body('x', { grid: 'no' }))).rejects.toBeInstanceOf(InvalidJobError);
    const e = await rejection(service.submit('p', body()));
    expect(e).toMatchObject({ statusCode: 503, code: 'NO_GPU' });
    expect(e.message).toContain('CUDA_DRIVER_NOT_FOUND');
  });

  it("looks at the pool again before it refuses for want of a GPU (an API node's registry read lags)", async () => {
    const { service, pool } = await make();
    const seen = pool.unavailableReason;
    let rechecks = 0;
    pool.unavailableReason = 'no GPU agent is connected';
    pool.recheck = async () => {
      rechecks++;
      pool.unavailableReason = seen;
    };
    const accepted = await service.submit('p', body());
    expect(accepted.record.status).toBe('queued');
    expect(rechecks).toBe(1);
    // A pool that already has a GPU for the job is not asked again.
    await service.submit('p', body());
    expect(rechecks).toBe(1);
    // One whose recheck finds nothing still refuses, with its reason.
    pool.recheck = async () => {
      rechecks++;
    };
    pool.unavailableReason = 'no GPU agent is connected';
    const e = await rejection(service.submit('p', body()));
    expect(e).toMatchObject({ statusCode: 503, code: 'NO_GPU' });
    expect(rechecks).toBe(2);
  });

  it("stores 'queued' before the job enters a queue that others take from at once (an API node's)", async () => {
    // A queue an agent takes from the moment a job is in it, and says so: its 'started' is stored during enqueue.
    const store = new MemoryJobStore();
    class AgentsQueue extends EmbeddedQueue {
      override arrivalPosition(): number {
        return this.size() + 1;
      }
      override async enqueue(job: QueuedJob): Promise<void> {
        super.enqueue(job);
        await store.appendEvent({ jobId: job.id, type: 'started', data: { by: 'agent' }, atMs: Date.now() });
      }
    }
    const queue = new AgentsQueue();
    const service = new EvalService({
      progressIntervalMs: 0,
      store,
      submitQueue: queue,
      runQueue: queue,
      pool: new FakePool(),
    });
    services.push(service);
    await service.start();
    const { record } = await service.submit('p', body('hang'));
    const events = await store.events(record.id, 0);
    expect(events.slice(0, 2).map((e) => [e.type, e.data])).toEqual([
      ['queued', { position: 1 }],
      ['started', { by: 'agent' }],
    ]);
  });

  it('admits per principal and in all, with Retry-After', async () => {
    const { service, pool } = await make({ limits: { maxQueuedPerPrincipal: 2, maxQueued: 3 } });
    await service.submit('a', body('hang'));
    await until(() => pool.running().length === 1);
    await service.submit('a', body());
    await service.submit('a', body());
    const perPrincipal = await rejection(service.submit('a', body()));
    expect(perPrincipal).toMatchObject({ statusCode: 429, code: 'QUEUE_FULL_FOR_PRINCIPAL' });
    expect(perPrincipal.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    await service.submit('b', body());
    const global = await rejection(service.submit('c', body()));
    expect(global).toMatchObject({ statusCode: 503, code: 'QUEUE_FULL' });
    expect(global.retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it('keeps an Idempotency-Key per principal for 24 h; another body under it is a 422', async () => {
    let nowMs = Date.now();
    const { service } = await make({ now: () => nowMs });
    const first = await service.submit('a', body('k1'), 'key-1');
    const again = await service.submit('a', body('k1'), 'key-1');
    expect(again).toMatchObject({ replayed: true, record: { id: first.record.id } });
    // The same job written another way (BenchSpec's top-level preset) is the same body.
    const a = await service.submit('a', body('k2', { timing: { preset: 'quick' } }), 'key-2');
    const b = await service.submit('a', body('k2', { preset: 'quick' }), 'key-2');
    expect(b.record.id).toBe(a.record.id);
    expect(await rejection(service.submit('a', body('other'), 'key-1'))).toMatchObject({
      statusCode: 422,
      code: 'IDEMPOTENCY_KEY_REUSED',
    });
    expect((await service.submit('b', body('k1'), 'key-1')).record.id).not.toBe(first.record.id);
    nowMs += 24 * 3600 * 1000 + 1;
    expect((await service.submit('a', body('other'), 'key-1')).replayed).toBe(false);
  });

  it('makes concurrent retries with one key one job', async () => {
    const { service } = await make();
    const all = await Promise.all(Array.from({ length: 8 }, () => service.submit('a', body('same'), 'k')));
    expect(new Set(all.map((s) => s.record.id)).size).toBe(1);
    expect(all.filter((s) => !s.replayed)).toHaveLength(1);
  });
});

describe('scheduling', () => {
  it('runs higher priorities first, FIFO within one', async () => {
    const { service, pool } = await make();
    const blocker = await service.submit('p', body('hang'));
    await until(() => pool.running().length === 1);
    const ids: Record<string, string> = {};
    for (const [name, priority] of [
      ['a', 0],
      ['b', 5],
      ['c', -3],
      ['d', 5],
    ] as const) {
      ids[name] = (await service.submit('p', body(name, { priority }))).record.id;
    }
    expect(await service.queueInfo((await service.get(ids.b!))!)).toMatchObject({
      position: 1,
      ahead: 0,
      running: 1,
      gpus: 1,
    });
    expect((await service.queueInfo((await service.get(ids.c!))!)).position).toBe(4);
    pool.finish(blocker.record.id, { kind: 'report', report: passedReport('hang'), device: undefined });
    for (const id of Object.values(ids)) await settled(service, id);
    const order = pool.runs.map((r) => r.id).slice(1);
    expect(order).toEqual([ids.b, ids.d, ids.a, ids.c]);
  });

  it('runs a job only on a GPU of the class it asked for', async () => {
    const h100: FakeGpu = { uuid: 'GPU-h100', name: 'NVIDIA H100 80GB HBM3', arch: 'sm_90' };
    const h200: FakeGpu = { uuid: 'GPU-h200', name: 'NVIDIA H200', arch: 'sm_90' };
    const { service, pool } = await make({ gpus: [h100, h200] });
    const jobs = [];
    for (let i = 0; i < 6; i++) jobs.push((await service.submit('p', body('sleep:5', { gpu: 'H200' }))).record.id);
    const any = (await service.submit('p', body('sleep:5', { gpu: 'sm_90' }))).record.id;
    for (const id of [...jobs, any]) await settled(service, id);
    for (const id of jobs) expect(pool.runs.find((r) => r.id === id)!.uuid).toBe('GPU-h200');
    expect((await service.get(jobs[0]!))!.gpuUuid).toBe('GPU-h200');
    expect(await rejection(service.submit('p', body('x', { gpu: 'A100' })))).toMatchObject({
      statusCode: 400,
      code: 'UNKNOWN_GPU_CLASS',
    });
    pool.setState('GPU-h200', 'quarantined');
    expect(await rejection(service.submit('p', body('x', { gpu: 'H200' })))).toMatchObject({
      statusCode: 503,
      code: 'NO_GPU_OF_CLASS',
    });
  });

  it('gives each run deadlines inside its timeoutSeconds', async () => {
    const { service, pool } = await make();
    const { record } = await service.submit('p', body('x', { timeoutSeconds: 30, timing: { preset: 'rigorous' } }));
    await settled(service, record.id);
    const { deadlines } = pool.runs[0]!;
    expect(deadlines.jobMs).toBe(30_000);
    for (const ms of Object.values(deadlines.phaseMs)) expect(ms).toBeLessThanOrEqual(30_000);
    expect(deadlines.phaseMs.time).toBe(30_000);
  });
});

describe('cancel', () => {
  it('cancels a queued job without running it, a running one through its lease, and not a finished one', async () => {
    const { service, pool } = await make();
    const running = await service.submit('p', body('hang'));
    const queued = await service.submit('p', body('never-runs'));
    await until(() => pool.running().length === 1);
    expect(await service.cancel(queued.record.id)).toBe('cancelled');
    expect((await service.get(queued.record.id))!.status).toBe('cancelled');
    expect(await service.cancel(running.record.id)).toBe('cancelling');
    expect(await settled(service, running.record.id)).toMatchObject({ status: 'cancelled', verdict: undefined });
    expect(pool.runs.map((r) => r.id)).toEqual([running.record.id]);
    expect(await service.cancel(running.record.id)).toBe('finished');
    expect(await service.cancel('ev_nope')).toBeUndefined();
    const events = await service.store.events(queued.record.id, 0);
    expect(events.map((e) => e.type)).toEqual(['queued', 'done']);
  });

  it('stops a job cancelled while its slot was being leased', async () => {
    const { service, pool } = await make();
    const { record } = await service.submit('p', body('hang'));
    // The dispatch runs in a microtask; the cancel lands while the job is between the queue and its run.
    const answer = service.cancel(record.id);
    expect(['cancelled', 'cancelling']).toContain(await answer);
    expect((await settled(service, record.id)).status).toBe('cancelled');
    expect(pool.running()).toEqual([]);
  });
});

describe('queue expiry', () => {
  it('fails a job queued past its maxQueueSeconds with QUEUE_TIMEOUT', async () => {
    let nowMs = Date.now();
    const { service, pool } = await make({ now: () => nowMs });
    await service.submit('p', body('hang'));
    await until(() => pool.running().length === 1);
    const { record } = await service.submit('p', body('x', { maxQueueSeconds: 2 }));
    nowMs += 2500;
    const done = await settled(service, record.id);
    expect(done).toMatchObject({ status: 'failed', verdict: undefined, error: { code: 'QUEUE_TIMEOUT' } });
    expect(done.error!.message).toContain('2 s');
  });
});

describe('outcomes', () => {
  const context: OutcomeContext = {
    job: { source: '', kernel: 'k', grid: 1, block: 1, args: [] },
    device: { name: 'NVIDIA H200', arch: 'sm_90' },
    cancelRequested: false,
    draining: false,
  };

  it('maps reports to verdicts, deadlines to TIMEOUT, deaths to CRASHED, kills to cancelled', () => {
    const passed = resultOf({ kind: 'report', report: passedReport('k'), device: undefined }, context);
    expect(passed).toMatchObject({ status: 'succeeded', verdict: 'PASSED', error: undefined });
    expect(JSON.parse(passed.report!)).toMatchObject({ name: 'k', passed: true });

    const mismatch = failedReport(
      'k',
      { kind: 'verdict', code: 'mismatch', message: 'differs', defence: 'mismatch' },
      'check',
    );
    expect(resultOf({ kind: 'report', report: mismatch, device: undefined }, context)).toMatchObject({
      status: 'succeeded',
      verdict: 'INCORRECT',
      phase: 'check',
      error: { code: 'mismatch', message: 'differs', phase: 'check' },
    });
    const compile = failedReport('k', { kind: 'compile', code: 'NVRTC_ERROR_COMPILATION', message: 'x' }, 'compile');
    expect(resultOf({ kind: 'report', report: compile, device: undefined }, context).verdict).toBe('COMPILE_ERROR');

    const timeout = resultOf({ kind: 'timeout', phase: 'check', limitMs: 60_000, scope: 'phase' }, context);
    expect(timeout).toMatchObject({
      status: 'succeeded',
      verdict: 'TIMEOUT',
      error: { code: 'TIMEOUT', phase: 'check' },
    });
    expect(timeout.error!.message).toBe('killed after 60 s (the check deadline)');

    const crash = {
      kind: 'crashed',
      signal: 'SIGSEGV',
      exitCode: undefined,
      stderrTail: 'boom\n',
      reason: 'died',
    } as const;
    expect(resultOf({ ...crash, phase: 'time' }, context)).toMatchObject({
      status: 'failed',
      verdict: 'CRASHED',
      error: { code: 'CRASHED', message: 'died (signal SIGSEGV)\nboom', phase: 'time' },
    });
    expect(resultOf({ ...crash, phase: undefined }, context)).toMatchObject({
      status: 'failed',
      verdict: undefined,
      error: { code: 'WORKER_FAILED' },
    });
    expect(resultOf({ kind: 'cancelled' }, { ...context, cancelRequested: true })).toMatchObject({
      status: 'cancelled',
    });
    // A kill nobody asked for is the drain's: the job failed, and the client should resubmit.
    expect(resultOf({ kind: 'cancelled' }, { ...context, draining: true })).toMatchObject({
      status: 'failed',
      error: { code: 'INTERRUPTED' },
    });
    expect(resultOf({ ...crash, phase: 'time' }, { ...context, draining: true }).error!.code).toBe('INTERRUPTED');
  });

  it('stores each outcome with its events, once', async () => {
    const { service } = await make();
    const cases = { pass: 'PASSED', incorrect: 'INCORRECT', timeout: 'TIMEOUT', crash: 'CRASHED' } as const;
    for (const [name, verdict] of Object.entries(cases)) {
      const { record } = await service.submit('p', body(name));
      const done = await settled(service, record.id);
      expect(done.verdict).toBe(verdict);
      await until(async () => (await service.store.events(record.id, 0)).some((e) => e.type === 'done'));
      const events = await service.store.events(record.id, 0);
      expect(events.map((e) => e.type)).toEqual(['queued', 'started', 'phase', 'phase', 'done']);
      expect(events.at(-1)!.data).toMatchObject({ status: done.status, verdict });
    }
  });
});

describe('SUSPICIOUS', () => {
  function timing(medianMs: number, extra: Partial<BenchResult> = {}): BenchResult {
    return {
      name: 'k',
      mode: 'cold',
      preset: 'quick',
      timer: 'cupti',
      samples: [],
      stats: { median: medianMs } as BenchResult['stats'],
      rejected: 0,
      warmupRuns: 1,
      wallMs: 100,
      converged: true,
      stopReason: 'precision',
      clockMHz: 1980,
      env: { device: 'NVIDIA H200', arch: 'sm_90', l2Bytes: 60 * 2 ** 20 } as BenchResult['env'],
      warnings: [],
      ...extra,
    };
  }
  const device = { name: 'NVIDIA H200', arch: 'sm_90' };
  const job = (bytes?: number): EvalJob => ({
    source: '',
    kernel: 'k',
    grid: 1,
    block: 1,
    args: [],
    ...(bytes === undefined ? {} : { timing: { bytes } }),
  });

  it('flags bandwidth above the measured peak and a time under the floor, not a large honest speedup', () => {
    const honest = passedReport('k', { timing: timing(2) });
    expect(suspicionsOf(honest, job(4.8e9), device)).toEqual([]);
    const aboveMeasuredPeak = passedReport('k', {
      timing: timing(2, { throughput: { percentOfPeakBandwidth: 130, percentOfPeakBandwidthLow: 120 } }),
    });
    expect(suspicionsOf(aboveMeasuredPeak, job(), device)[0]).toMatch(/above the measured peak/);
    const withinInterval = passedReport('k', {
      timing: timing(2, { throughput: { percentOfPeakBandwidth: 101, percentOfPeakBandwidthLow: 99 } }),
    });
    expect(suspicionsOf(withinInterval, job(), device)).toEqual([]);
    const belowFloor = passedReport('k', { timing: timing(0.5) });
    expect(suspicionsOf(belowFloor, job(4.8e9), device)[0]).toMatch(
      /below the roofline floor of 987 µs on NVIDIA H200/,
    );
    // An honest parallel sum against a naive one read 15.6× (2.1 against 32.8 µs): within physics, not flagged.
    const compare = passedReport('k', {
      comparison: {
        a: timing(0.0328),
        b: timing(0.0021),
        speedup: 15.6,
        speedupLow: 15.2,
        speedupHigh: 16,
        verdict: 'FASTER',
        rounds: 5,
      },
    });
    expect(suspicionsOf(compare, job(4 * 2 ** 20), device)).toEqual([]);
    // The same speedup where the candidate's median is under the floor of the bytes it must move is flagged.
    expect(suspicionsOf(compare, job(512 * 2 ** 20), device)[0]).toMatch(/below the roofline floor/);
    // A Python candidate's median, its runner's, is held to the same floor.
    const python = (medianMs: number) => ({
      ...passedReport('k'),
      pythonCandidate: { timing: { stats: { median: medianMs } } },
    });
    expect(suspicionsOf(python(0.5), job(4.8e9), device)[0]).toMatch(
      /below the roofline floor of 1\.\d+ ms on NVIDIA H200/,
    );
    expect(suspicionsOf(python(2), job(4.8e9), device)).toEqual([]);
  });

  it('marks a passing job SUSPICIOUS and keeps its report', async () => {
    const { service, pool } = await make();
    pool.script = (j) => ({
      delayMs: 1,
      outcome: {
        kind: 'report',
        report: passedReport(j.name ?? 'k', { timing: timing(0.01) }),
        device: undefined,
      },
    });
    const { record } = await service.submit('p', body('fast', { timing: { bytes: 4.8e9 } }));
    const done = await settled(service, record.id);
    expect(done).toMatchObject({ status: 'succeeded', verdict: 'SUSPICIOUS', error: { code: 'SUSPICIOUS' } });
    expect(JSON.parse(done.report!).passed).toBe(true);
  });
});

describe('recovery and drain', () => {
  it('restarts from a persisted store: running jobs fail as interrupted, queued ones run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-service-'));
    try {
      const file = join(dir, 'jobs.sqlite');
      const first = await make({ store: SqliteJobStore.open(file) });
      const running = await first.service.submit('p', body('hang'));
      await until(() => first.pool.running().length === 1);
      const queued = [];
      for (let i = 0; i < 3; i++)
        queued.push((await first.service.submit('p', body(`q${i}`, { priority: i }))).record.id);
      // The server dies: no drain, the store is closed under it.
      first.service.close();
      await first.store.close();

      const second = await make({ store: SqliteJobStore.open(file) });
      const interrupted = await second.service.get(running.record.id);
      expect(interrupted).toMatchObject({ status: 'failed', verdict: undefined, error: { code: 'INTERRUPTED' } });
      for (const id of queued) expect((await settled(second.service, id)).status).toBe('succeeded');
      // The queue kept their priorities.
      expect(second.pool.runs.map((r) => r.id)).toEqual([...queued].reverse());
      await until(async () => (await second.store.events(running.record.id, 0)).some((e) => e.type === 'done'));
      second.service.close();
      await second.store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('drains: refuses new jobs, lets running ones end in the grace, interrupts the rest, keeps the queue', async () => {
    const { service, pool, store } = await make({ gpus: fakeGpus(2) });
    const quick = await service.submit('p', body('sleep:30'));
    const stuck = await service.submit('p', body('hang'));
    await until(() => pool.running().length === 2);
    const waiting = await service.submit('p', body('waiting'));
    await service.drain(300);
    expect((await service.get(quick.record.id))!.status).toBe('succeeded');
    expect(await service.get(stuck.record.id)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
    expect((await store.get(waiting.record.id))!.status).toBe('queued');
    expect(await rejection(service.submit('p', body()))).toMatchObject({ statusCode: 503, code: 'SHUTTING_DOWN' });
  });

  it('deletes finished jobs past the retention', async () => {
    let nowMs = Date.now();
    const store = new MemoryJobStore();
    const first = await make({ store, now: () => nowMs });
    const { record } = await first.service.submit('p', body());
    await settled(first.service, record.id);
    first.service.close();
    nowMs += 31 * 24 * 3600 * 1000;
    await make({ store, now: () => nowMs });
    expect(await store.get(record.id)).toBeUndefined();
  });
});

describe('under load', () => {
  it('never runs two jobs on one slot, and ends every accepted job exactly once', async () => {
    const gpus = fakeGpus(4);
    const { service, pool, store } = await make({ gpus, limits: { maxQueuedPerPrincipal: 1000 } });
    let seed = 7;
    const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const names = ['sleep:1', 'sleep:3', 'sleep:8', 'incorrect', 'timeout', 'crash', 'hang'];
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) {
      const name = names[Math.floor(random() * names.length)]!;
      const { record } = await service.submit(`p${i % 5}`, body(name, { priority: Math.floor(random() * 5) - 2 }));
      ids.push(record.id);
      if (random() < 0.15) void service.cancel(ids[Math.floor(random() * ids.length)]!);
      if (random() < 0.3) await new Promise((r) => setTimeout(r, 1));
    }
    // Whatever still hangs is cancelled (a hang runs until then).
    await until(
      async () => {
        for (const id of pool.running()) await service.cancel(id);
        for (const id of ids) {
          const r = await service.get(id);
          if (r!.status === 'queued' || r!.status === 'running') return false;
        }
        return true;
      },
      { timeoutMs: 20_000, what: 'every job to end' },
    );
    expect(pool.violations).toEqual([]);
    for (const g of gpus) {
      const runs = pool.runs.filter((r) => r.uuid === g.uuid).sort((a, b) => a.startMs - b.startMs);
      for (let i = 1; i < runs.length; i++) expect(runs[i]!.startMs).toBeGreaterThanOrEqual(runs[i - 1]!.endMs!);
    }
    for (const id of ids) {
      await until(async () => (await store.events(id, 0)).some((e) => e.type === 'done'), {
        timeoutMs: 2000,
        what: `${id}'s done`,
      });
      const events = await store.events(id, 0);
      expect(events.filter((e) => e.type === 'done')).toHaveLength(1);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    }
    // Each job ran at most once.
    const runIds = pool.runs.map((r) => r.id);
    expect(new Set(runIds).size).toBe(runIds.length);
  });
});
