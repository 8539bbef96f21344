// SPDX-License-Identifier: MIT
// The service on two GPUs, end to end (buildApp and the scheduler over a LocalGpuPool of every GPU, the real worker):
// one slot per GPU, each worker pinned to its GPU by UUID and seeing that GPU alone; 40 small jobs spread over the
// slots, never two at once on one, each passing on the GPU of the slot that ran it; and a GPU whose worker cannot
// start quarantined while the others serve every job. Skipped with the count on a machine with fewer than two GPUs
// (describeMultiGpu), a failure there with CUDAKIT_REQUIRE_GPUS=2.
//
// The workers are the real one behind a wrapper, written to a temporary directory and given to the pool as its
// `worker` (a script that is the worker, and the probe with the argument 'probe'). Before it loads the real worker,
// the wrapper logs what it sees: CUDA_VISIBLE_DEVICES as the slot set it, and the UUID of every device CUDA lists then
// (no context is made). On the GPU that CUDAKIT_TEST_BROKEN_GPU names it exits before `ready` instead: a GPU whose
// worker cannot start, which its slot quarantines after three failed starts in a row.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saxpyJob } from '../../bench/gpu.js';
import { overlapsOf } from '../../bench/loadgen.js';
import { buildApp } from '../../src/http/app.js';
import { type App } from '../../src/http/shared.js';
import { workerScript } from '../../src/run/child.js';
import { LocalGpuPool, runProbe } from '../../src/run/local-pool.js';
import type { GpuPool, SlotLease, SlotOutcome } from '../../src/run/pool.js';
import type { DeviceFacts } from '../../src/run/protocol.js';
import { EmbeddedQueue } from '../../src/schedule/embedded-queue.js';
import type { Evaluation } from '../../src/http/schemas/v1.js';
import { EvalService } from '../../src/service.js';
import { MemoryJobStore } from '../../src/store/memory.js';
import { describeMultiGpu } from '../../../test/helpers.js';
import { until } from '../../../test/support/until.js';

const JOBS = 40;
const JOBS_WITH_ONE_QUARANTINED = 10;
const BROKEN_ENV = 'CUDAKIT_TEST_BROKEN_GPU';
const LOG_ENV = 'CUDAKIT_TEST_WORKER_LOG';

/** The wrapper around the real worker and probe (see the head of this file); its path. */
function writeWrapper(dir: string): string {
  const url = (path: string): string => JSON.stringify(pathToFileURL(path).href);
  // The module the real worker's `import 'cudakit'` loads.
  const cudakit = url(createRequire(import.meta.url).resolve('cudakit'));
  const text = `import { appendFileSync } from 'node:fs';
if (process.argv[2] === 'probe') {
  await import(${url(workerScript('probe', 'real').path)});
} else {
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  const broken = process.env.${BROKEN_ENV};
  if (broken !== undefined && visible === broken) {
    process.stderr.write('test worker: GPU ' + visible + ' is marked broken\\n');
    process.exit(3);
  }
  const { Device, probe } = await import(${cudakit});
  const seen = probe().ok ? Device.all().map((d) => d.uuid) : [];
  appendFileSync(process.env.${LOG_ENV}, JSON.stringify({ pid: process.pid, visible, seen }) + '\\n');
  await import(${url(workerScript('worker', 'real').path)});
}
`;
  const path = join(dir, 'worker.mts'); // .mts: an ES module, which the slot runs under tsx
  writeFileSync(path, text);
  return path;
}

/** One line of the wrapper's log: a worker's pid, its CUDA_VISIBLE_DEVICES, and the UUIDs of the devices it saw. */
interface WorkerSeen {
  pid: number;
  visible: string;
  seen: string[];
}

function workersSeen(log: string): WorkerSeen[] {
  let text = '';
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return []; // no worker got that far
  }
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as WorkerSeen);
}

/** A run on a leased slot, as the pool saw it: the slot, lease → outcome (performance.now()), and the outcome. */
interface Run {
  id: string;
  slot: string;
  leasedMs: number;
  endMs: number;
  outcome: SlotOutcome;
}

/** The LocalGpuPool, recording every run: the evaluation API shows the GPU a job ran on, not what its worker saw. */
class RecordingPool implements GpuPool {
  readonly runs: Run[] = [];
  readonly local: LocalGpuPool;

  constructor(local: LocalGpuPool) {
    this.local = local;
  }

  get unavailableReason(): string | undefined {
    return this.local.unavailableReason;
  }
  get unavailableRetryAfterSeconds(): number | undefined {
    return this.local.unavailableRetryAfterSeconds;
  }
  start(): Promise<void> {
    return this.local.start();
  }
  slots(): ReturnType<GpuPool['slots']> {
    return this.local.slots();
  }
  serves(gpuClass: string): boolean {
    return this.local.serves(gpuClass);
  }
  onIdle(listener: () => void): void {
    this.local.onIdle(listener);
  }
  reprobe(uuid: string): ReturnType<GpuPool['reprobe']> {
    return this.local.reprobe(uuid);
  }
  stop(graceMs: number): Promise<void> {
    return this.local.stop(graceMs);
  }

  lease(gpuClass: string): SlotLease | undefined {
    const lease = this.local.lease(gpuClass);
    if (lease === undefined) return undefined;
    const slot = lease.info.uuid;
    const leasedMs = performance.now();
    const runs = this.runs;
    return {
      get info() {
        return lease.info;
      },
      cancel: () => lease.cancel(),
      run: async (id, ...rest) => {
        const outcome = await lease.run(id, ...rest);
        runs.push({ id, slot, leasedMs, endMs: performance.now(), outcome });
        return outcome;
      },
    };
  }
}

interface Harness {
  app: App;
  service: EvalService;
  store: MemoryJobStore;
  pool: RecordingPool;
  /** The wrapper's log of the workers this harness started. */
  log: string;
}

/** The service over every GPU (the pool's default), its workers `wrapper`'s, with `env` added to theirs. */
async function startHarness(wrapper: string, name: string, env: Record<string, string>): Promise<Harness> {
  const log = join(dirname(wrapper), `${name}.jsonl`);
  const pool = new RecordingPool(
    new LocalGpuPool({
      isolation: 'process',
      worker: wrapper,
      env: { [LOG_ENV]: log, ...env },
      reprobeIntervalMs: 0,
      slot: { restartDelayMs: 100 },
    }),
  );
  const store = new MemoryJobStore();
  const queue = new EmbeddedQueue();
  const service = new EvalService({
    store,
    submitQueue: queue,
    runQueue: queue,
    pool,
    limits: { maxQueuedPerPrincipal: JOBS },
  });
  const app = await buildApp({ service, underPressure: false, submitsPerMinute: 1000 });
  await pool.start();
  await service.start();
  expect(pool.unavailableReason).toBeUndefined();
  return { app, service, store, pool, log };
}

async function stopHarness(h: Harness | undefined): Promise<void> {
  await h?.service.drain(5000);
  await h?.app.close();
  await h?.store.close();
}

interface GpuRow {
  uuid: string;
  state: string;
  jobs: number;
  restarts: number;
  lastError: string | null;
}

async function gpus(h: Harness): Promise<GpuRow[]> {
  const res = await h.app.inject({ method: 'GET', url: '/v1/gpus' });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { gpus: GpuRow[] }).gpus;
}

/** Waits (60 s at most) for every slot's state to be what `want` says for its UUID. */
async function untilStates(h: Harness, want: (uuid: string) => string): Promise<void> {
  const states = (): string =>
    h.pool
      .slots()
      .map((s) => `${s.uuid} ${s.state}`)
      .join(', ');
  await until(() => h.pool.slots().every((s) => s.state === want(s.uuid)), {
    timeoutMs: 60_000,
    what: () => `the slots to be as wanted (now ${states()})`,
    pollMs: 50,
  });
}

/** Submits `n` small jobs at once (gpu.ts's saxpy over 3M elements, quick preset); their evaluations once ended. */
async function runJobs(h: Harness, n: number): Promise<Evaluation[]> {
  const ids = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await h.app.inject({
        method: 'POST',
        url: '/v1/evaluations',
        payload: { ...saxpyJob(false), name: `saxpy-${i}` },
      });
      expect(res.statusCode, res.body).toBe(202);
      return (res.json() as { id: string }).id;
    }),
  );
  return Promise.all(
    ids.map(async (id) => {
      const deadline = Date.now() + 180_000;
      while (!['succeeded', 'failed', 'cancelled'].includes((await h.service.get(id))?.status ?? '')) {
        if (Date.now() > deadline) throw new Error(`${id} did not end within 180 s`);
        await h.service.waitForEnd(id, 5000);
      }
      return (await h.app.inject({ method: 'GET', url: `/v1/evaluations/${id}` })).json() as Evaluation;
    }),
  );
}

const brief = (ev: Evaluation): string => JSON.stringify({ ...ev, report: undefined });

/** Every job passed; each ran where the pool leased it, its worker reporting the slot's GPU as its device 0. */
function expectPassedWhereLeased(h: Harness, evaluations: readonly Evaluation[]): Run[] {
  return evaluations.map((ev) => {
    expect(ev, brief(ev)).toMatchObject({ status: 'succeeded', verdict: 'PASSED', error: null });
    const run = h.pool.runs.find((r) => r.id === ev.id);
    expect(run, ev.id).toBeDefined();
    expect(ev.gpu?.uuid).toBe(run!.slot);
    const device = run!.outcome.kind === 'report' ? run!.outcome.device : undefined;
    expect(device, `${ev.id}: ${JSON.stringify(run!.outcome).slice(0, 300)}`).toMatchObject({
      ordinal: 0,
      uuid: run!.slot,
    });
    return run!;
  });
}

/** Workers that saw another GPU than their own, or more than one. */
const strayWorkers = (log: string): WorkerSeen[] =>
  workersSeen(log).filter((w) => w.seen.length !== 1 || w.seen[0] !== w.visible);

describeMultiGpu('the service on two GPUs', () => {
  let dir: string;
  let wrapper: string;
  let devices: DeviceFacts[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cudakit-multi-gpu-'));
    wrapper = writeWrapper(dir);
    devices = (await runProbe(workerScript('probe', 'real'), {}, 60_000)).devices;
    expect(devices.length).toBeGreaterThanOrEqual(2);
  }, 120_000);
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  describe('every GPU serving', () => {
    let h: Harness | undefined;
    const harness = (): Harness => h!;

    beforeAll(async () => {
      h = await startHarness(wrapper, 'every-gpu', {});
    }, 120_000);
    afterAll(async () => {
      await stopHarness(h);
    });

    it('finds one slot per GPU; each worker is pinned to its GPU by UUID and sees that GPU alone', async () => {
      const h = harness();
      await untilStates(h, () => 'idle');
      const listed = await gpus(h);
      expect(listed.map((g) => g.uuid)).toEqual(devices.map((d) => d.uuid));
      expect(listed.map((g) => g.state)).toEqual(devices.map(() => 'idle'));
      const seen = workersSeen(h.log);
      for (const slot of h.pool.local.slotObjects()) {
        const pid = slot.pids().current;
        expect(seen.find((w) => w.pid === pid)).toEqual({ pid, visible: slot.uuid, seen: [slot.uuid] });
      }
      expect(strayWorkers(h.log)).toEqual([]);
    }, 120_000);

    it(`spreads ${JOBS} small jobs over the slots, one at a time on each, each passing on its slot's GPU`, async () => {
      const h = harness();
      const evaluations = await runJobs(h, JOBS);
      const runs = expectPassedWhereLeased(h, evaluations);
      // A fair share each: at least half of an even split.
      const perSlot = devices.map((d) => runs.filter((r) => r.slot === d.uuid).length);
      for (const n of perSlot) {
        expect(n, `jobs per slot: ${perSlot.join(', ')}`).toBeGreaterThanOrEqual(JOBS / devices.length / 2);
      }
      // One job at a time per slot, by the leases (lease → outcome) and by the store (startedAt → finishedAt) ...
      expect(overlapsOf(runs.map((r) => ({ gpu: r.slot, id: r.id, start: r.leasedMs, end: r.endMs })))).toEqual([]);
      const stored = evaluations.map((ev) => ({
        gpu: ev.gpu!.uuid,
        id: ev.id,
        start: Date.parse(ev.startedAt!),
        end: Date.parse(ev.finishedAt!),
      }));
      expect(overlapsOf(stored)).toEqual([]);
      // ... while the slots ran side by side.
      const overlap = (a: Run, b: Run): boolean => b.slot !== a.slot && b.leasedMs < a.endMs && a.leasedMs < b.endMs;
      expect(runs.some((a) => runs.some((b) => overlap(a, b)))).toBe(true);
      // Every worker saw its own GPU and no other, and every GPU had workers.
      expect(strayWorkers(h.log)).toEqual([]);
      expect(new Set(workersSeen(h.log).map((w) => w.visible))).toEqual(new Set(devices.map((d) => d.uuid)));
      expect((await gpus(h)).map((g) => g.jobs)).toEqual(perSlot);
    }, 240_000);
  });

  describe("one GPU's worker unable to start", () => {
    let h: Harness | undefined;
    const harness = (): Harness => h!;
    let broken: string;

    beforeAll(async () => {
      broken = devices[1]!.uuid;
      h = await startHarness(wrapper, 'one-broken', { [BROKEN_ENV]: broken });
    }, 120_000);
    afterAll(async () => {
      await stopHarness(h);
    });

    it('quarantines that GPU after three failed starts; the others take every job', async () => {
      const h = harness();
      await untilStates(h, (uuid) => (uuid === broken ? 'quarantined' : 'idle'));
      const listed = await gpus(h);
      expect(listed.find((g) => g.uuid === broken)).toMatchObject({ state: 'quarantined', jobs: 0, restarts: 3 });
      const { lastError } = listed.find((g) => g.uuid === broken)!;
      expect(lastError).toMatch(/^the worker did not start: it exited before ready \(exit code 3\)/);
      const healthy = devices.filter((d) => d.uuid !== broken);
      expect(listed.filter((g) => g.uuid !== broken).map((g) => g.state)).toEqual(healthy.map(() => 'idle'));
      const health = await h.app.inject({ method: 'GET', url: '/v1/health' });
      expect(health.json()).toMatchObject({ status: 'degraded', gpus: healthy.length });
      expect((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);

      const runs = expectPassedWhereLeased(h, await runJobs(h, JOBS_WITH_ONE_QUARANTINED));
      expect(runs.filter((r) => r.slot === broken)).toEqual([]);
      const after = await gpus(h);
      expect(after.find((g) => g.uuid === broken)).toMatchObject({ state: 'quarantined', jobs: 0 });
      expect(after.reduce((sum, g) => sum + g.jobs, 0)).toBe(JOBS_WITH_ONE_QUARANTINED);
      expect(workersSeen(h.log).filter((w) => w.visible === broken)).toEqual([]);
      expect(strayWorkers(h.log)).toEqual([]);
    }, 240_000);
  });
});
