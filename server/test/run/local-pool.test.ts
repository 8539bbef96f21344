// SPDX-License-Identifier: MIT
// LocalGpuPool with the fake probe and worker: four fake GPUs and their classes, shared and MIG ones, the selection
// from config, no GPU (unavailableReason), leases by class, onIdle, and stop() draining then killing. Also the real
// probe script on this machine: without a GPU it answers with the reason.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readFakeLog } from '../../bench/binary.js';
import { workerScript } from '../../src/run/child.js';
import { LocalGpuPool, type LocalPoolOptions, gpuClasses, runProbe } from '../../src/run/local-pool.js';
import { fakeJob } from '../../../test/support/jobs.js';
import { until } from '../../../test/support/until.js';
import { isAlive, TEST_SLOT, deadlines } from '../support/slot-helpers.js';

const T = 10_000;
const FOUR = 'NVIDIA H200@sm_90,NVIDIA H200@sm_90,NVIDIA H100 80GB HBM3@sm_90,NVIDIA A100-SXM4-40GB MIG 1g.5gb@sm_80';
const UUID = (i: number, mig = false): string =>
  `${mig ? 'MIG' : 'GPU'}-fa4e${String(i).padStart(4, '0')}-0000-4000-8000-00000000000${i}`;

const pools: LocalGpuPool[] = [];
function fakePool(gpus: string, more: LocalPoolOptions = {}): LocalGpuPool {
  const { worker: _, ...slot } = TEST_SLOT;
  const pool = new LocalGpuPool({
    worker: 'fake',
    env: { CUDAKIT_FAKE_GPUS: gpus },
    computeApps: () => Promise.resolve([]),
    reprobeIntervalMs: 0,
    slot,
    ...more,
  });
  pools.push(pool);
  return pool;
}

async function allIdle(pool: LocalGpuPool): Promise<void> {
  await until(() => pool.slots().every((s) => s.state === 'idle'), {
    timeoutMs: 8_000,
    what: () => `every slot to be idle: ${JSON.stringify(pool.slots())}`,
  });
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.stop(0)));
});

describe('gpuClasses', () => {
  it("names a GPU's model, its arch and 'any'", () => {
    const classes = (name: string, arch = 'sm_90'): string[] => gpuClasses({ name, arch });
    expect(classes('NVIDIA H200')).toEqual(['H200', 'sm_90', 'any']);
    expect(classes('NVIDIA H100 80GB HBM3')).toEqual(['H100', 'sm_90', 'any']);
    expect(classes('NVIDIA A100-SXM4-80GB', 'sm_80')).toEqual(['A100', 'sm_80', 'any']);
    expect(classes('Tesla V100-SXM2-16GB', 'sm_70')).toEqual(['V100', 'sm_70', 'any']);
    expect(classes('NVIDIA GeForce RTX 4090', 'sm_89')).toEqual(['RTX4090', 'sm_89', 'any']);
    expect(classes('NVIDIA L4', 'sm_89')).toEqual(['L4', 'sm_89', 'any']);
  });
});

describe('LocalGpuPool', () => {
  it(
    'gives each GPU its lanes: one entry each in slots(), jobs to the emptier GPU first, as many at once as lanes',
    async () => {
      const log = join(mkdtempSync(join(tmpdir(), 'cudakit-lanes-')), 'fake.log');
      const pool = fakePool('2', { lanes: 2, env: { CUDAKIT_FAKE_GPUS: '2', CUDAKIT_FAKE_LOG: log } });
      await pool.start();
      await until(() => pool.slotObjects().every((s) => s.state === 'idle'), { timeoutMs: 8_000, what: 'all lanes' });
      expect(pool.slotObjects()).toHaveLength(4);
      expect(pool.slots().map((s) => [s.uuid, s.lanes, s.running])).toEqual([
        [UUID(0), 2, 0],
        [UUID(1), 2, 0],
      ]);
      const runs = [];
      const leasedOn: string[] = [];
      for (const id of ['a', 'b', 'c', 'd']) {
        const lease = pool.lease('H200');
        if (lease === undefined) throw new Error(`no lane for ${id}: ${JSON.stringify(pool.slots())}`);
        leasedOn.push(lease.info.uuid);
        runs.push(lease.run(id, fakeJob('fake:pass:300ms'), 's', deadlines(), {}));
      }
      expect(pool.lease('H200')).toBeUndefined(); // two lanes on each GPU, all busy
      // a and b went to different GPUs (the emptier first), then c and d beside them.
      expect(leasedOn).toEqual([UUID(0), UUID(1), UUID(0), UUID(1)]);
      expect(pool.slots().map((s) => [s.state, s.running])).toEqual([
        ['busy', 2],
        ['busy', 2],
      ]);
      const outcomes = await Promise.all(runs);
      expect(outcomes.map((o) => o.kind)).toEqual(['report', 'report', 'report', 'report']);
      await allIdle(pool);
      expect(pool.slots().map((s) => s.jobs)).toEqual([2, 2]);
      // Lanes share the GPU: a worker makes its context once its job's turn has come.
      const spawns = readFakeLog(log).filter((e) => e.event === 'spawn');
      expect(spawns.length).toBeGreaterThanOrEqual(4);
      expect(new Set(spawns.map((e) => e.context))).toEqual(new Set(['turn']));
    },
    T,
  );

  it('keeps one lane with warm isolation', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'cudakit-lanes-')), 'fake.log');
    const pool = fakePool('1', { lanes: 3, isolation: 'warm', env: { CUDAKIT_FAKE_GPUS: '1', CUDAKIT_FAKE_LOG: log } });
    await pool.start();
    await allIdle(pool);
    expect(pool.slots().map((s) => s.lanes)).toEqual([1]);
    // One lane: the context is made as the job starts, beside its validation and compile.
    expect(readFakeLog(log).find((e) => e.event === 'spawn')?.context).toBe('job');
  });

  it("shows its host's checked Python on every GPU, reprobed ones too, and none without one", async () => {
    const python = {
      path: '/opt/py/bin/python3',
      python: '3.12.3',
      torch: '2.11.0',
      triton: null,
      cudaVersion: '13.0',
    };
    const pool = fakePool(FOUR, { python });
    await pool.start();
    await allIdle(pool);
    expect(pool.slots().map((s) => s.python)).toEqual([python, python, python, python]);
    expect((await pool.reprobe(UUID(1)))?.python).toEqual(python);
    const without = fakePool(FOUR);
    await without.start();
    expect(without.slots().some((s) => 'python' in s)).toBe(false);
  });

  it(
    'probes four fake GPUs: a slot each, with classes, and shared where others run or MIG',
    async () => {
      const pool = fakePool(FOUR, { computeApps: () => Promise.resolve([{ pid: 4242, uuid: UUID(0) }]) });
      await pool.start();
      expect(pool.unavailableReason).toBeUndefined();
      await allIdle(pool);
      expect(
        pool.slots().map(({ uuid, name, classes, shared, state }) => ({ uuid, name, classes, shared, state })),
      ).toEqual([
        { uuid: UUID(0), name: 'NVIDIA H200', classes: ['H200', 'sm_90', 'any'], shared: true, state: 'idle' },
        { uuid: UUID(1), name: 'NVIDIA H200', classes: ['H200', 'sm_90', 'any'], shared: false, state: 'idle' },
        {
          uuid: UUID(2),
          name: 'NVIDIA H100 80GB HBM3',
          classes: ['H100', 'sm_90', 'any'],
          shared: false,
          state: 'idle',
        },
        {
          uuid: UUID(3, true),
          name: 'NVIDIA A100-SXM4-40GB MIG 1g.5gb',
          classes: ['A100', 'sm_80', 'any'],
          shared: true,
          state: 'idle',
        },
      ]);
      expect(pool.serves('H100')).toBe(true);
      expect(pool.serves('sm_80')).toBe(true);
      expect(pool.serves('V100')).toBe(false);
      // An exclusive GPU first: timings on the shared one are disturbed.
      expect(pool.lease('H200')!.info.uuid).toBe(UUID(1));
      expect(pool.lease('H200')!.info.uuid).toBe(UUID(0));
    },
    T,
  );

  it(
    'uses only the configured GPUs, by index or UUID, and warns of those it did not find',
    async () => {
      const pool = fakePool(FOUR, { gpus: [2, UUID(0), 9] });
      await pool.start();
      expect(pool.slots().map((s) => s.uuid)).toEqual([UUID(2), UUID(0)]);
      expect(pool.warnings).toEqual(['GPU 9 is configured but the probe did not find it']);
      const none = fakePool(FOUR, { gpus: ['GPU-nope'] });
      await none.start();
      expect(none.slots()).toEqual([]);
      expect(none.unavailableReason).toBe('GPU GPU-nope is configured but the probe did not find it');
    },
    T,
  );

  it(
    'has no slot and says why when there is no GPU',
    async () => {
      const pool = fakePool('none');
      await pool.start();
      expect(pool.slots()).toEqual([]);
      expect(pool.unavailableReason).toBe('CUDA_DRIVER_NOT_FOUND: libcuda.so.1 could not be loaded (fake probe)');
      expect(pool.lease('any')).toBeUndefined();
      expect(pool.serves('any')).toBe(false);
    },
    T,
  );

  it(
    'says why when the probe itself fails',
    async () => {
      const pool = fakePool('4', { worker: '/nonexistent/cudakit-worker.js' });
      await pool.start();
      expect(pool.slots()).toEqual([]);
      expect(pool.unavailableReason).toMatch(
        /^the GPU probe failed: exit code 1, signal null: Error: Cannot find module/,
      );
    },
    T,
  );

  it(
    'leases idle slots by class, one job each, and calls onIdle when one frees up',
    async () => {
      const pool = fakePool(FOUR);
      let idle = 0;
      pool.onIdle(() => idle++);
      await pool.start();
      await allIdle(pool);
      expect(idle).toBeGreaterThanOrEqual(4); // each slot's first ready

      const h100 = pool.lease('H100')!;
      expect(h100.info.uuid).toBe(UUID(2));
      expect(h100.info.state).toBe('busy');
      expect(pool.lease('H100')).toBeUndefined(); // its only H100 is busy
      const a = pool.lease('H200')!;
      const b = pool.lease('H200')!;
      expect(pool.lease('H200')).toBeUndefined();
      expect(new Set([a.info.uuid, b.info.uuid])).toEqual(new Set([UUID(0), UUID(1)]));
      expect(pool.lease('sm_80')!.info.uuid).toBe(UUID(3, true));
      expect(pool.lease('any')).toBeUndefined();
      expect(pool.slots().map((s) => s.state)).toEqual(['busy', 'busy', 'busy', 'busy']);

      const before = idle;
      const outcome = await h100.run('j', fakeJob('fake:pass'), 's', deadlines(), {});
      expect(outcome.kind).toBe('report');
      await until(() => idle > before);
      expect(pool.lease('H100')).toBeDefined();
      a.cancel();
      b.cancel();
      expect(pool.lease('H200')).toBeDefined();
    },
    T,
  );

  it(
    'stop() lets running jobs finish within the grace, then kills every child',
    async () => {
      const pool = fakePool('2');
      await pool.start();
      await allIdle(pool);
      const pids = pool.slotObjects().map((s) => s.pids().current!);
      const run = pool.lease('any')!.run('j', fakeJob('fake:pass:400ms'), 's', deadlines(), {});
      const t0 = performance.now();
      await pool.stop(5_000);
      expect((await run).kind).toBe('report'); // finished inside the grace
      expect(performance.now() - t0).toBeLessThan(3_000);
      expect(pool.lease('any')).toBeUndefined();
      for (const pid of pids) expect(isAlive(pid)).toBe(false);
      for (const s of pool.slotObjects()) expect(s.pids()).toEqual({ current: undefined, others: [] });
    },
    T,
  );

  it(
    'stop() kills a job that outlives the grace (it resolves cancelled)',
    async () => {
      const pool = fakePool('1');
      await pool.start();
      await allIdle(pool);
      const pid = pool.slotObjects()[0]!.pids().current!;
      const run = pool.lease('any')!.run('j', fakeJob('fake:hang:time'), 's', deadlines(), {});
      const t0 = performance.now();
      await pool.stop(200);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(195);
      expect(await run).toEqual({ kind: 'cancelled' });
      expect(isAlive(pid)).toBe(false);
    },
    T,
  );

  it(
    'reprobes a quarantined slot by UUID',
    async () => {
      const pool = fakePool('1', { env: { CUDAKIT_FAKE_GPUS: '1', CUDAKIT_FAKE_START: 'exit' } });
      await pool.start();
      await until(() => pool.slots()[0]?.state === 'quarantined');
      expect(pool.serves('any')).toBe(false);
      expect((await pool.reprobe(UUID(0)))?.state).toBe('quarantined'); // still broken
      expect(await pool.reprobe('GPU-unknown')).toBeUndefined();
    },
    T,
  );
});

describe('the real probe (run/worker/probe.ts)', () => {
  it(
    'prints the GPUs it finds, or why there are none',
    async () => {
      const out = await runProbe(workerScript('probe', 'real'), {}, 20_000);
      if (out.devices.length === 0) expect(out.reason).toMatch(/\S/);
      for (const d of out.devices) expect(d.uuid).toMatch(/^(GPU|MIG)-/);
    },
    T,
  );
});
