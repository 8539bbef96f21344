import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';
import { Device, Program, probe } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

// Spins for about `cycles` clocks, then writes `value` to `flag`: work that is observably still running, then done.
const SPIN = `
extern "C" __global__ void spin(long long cycles, int* flag, int value) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  *flag = value;
}`;

describeGpu('Device', () => {
  it('counts and returns the same object per ordinal', () => {
    expect(Device.count()).toBeGreaterThan(0);
    expect(Device.get(0)).toBe(Device.get(0));
    expect(Device.all().length).toBe(Device.count());
    expect(() => Device.get(Device.count())).toThrow(RangeError);
    expect(() => Device.get(-1)).toThrow(RangeError);
  });

  it('reports properties consistent with each other', () => {
    const d = Device.get(0);
    expect(d.name).toMatch(/NVIDIA|H100|H200/);
    expect(d.uuid).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(d.pciBusId).toMatch(/^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d$/);
    const { major, minor } = d.computeCapability;
    expect(d.arch).toBe(`sm_${major}${minor}`);
    expect(major).toBeGreaterThanOrEqual(7);
    expect(d.multiprocessorCount).toBeGreaterThan(10);
    expect(d.totalMemoryBytes).toBeGreaterThan(8 * 2 ** 30);
    expect(d.l2CacheBytes).toBeGreaterThan(2 ** 20);
    expect(d.maxThreadsPerBlock).toBe(1024);
    expect(d.maxSharedMemoryPerBlockBytes).toBe(48 * 1024);
    expect(d.warpSize).toBe(32);
    expect(d.clockRateKHz).toBeGreaterThan(500_000);
    expect(d.attribute('MAX_BLOCK_DIM_X')).toBe(1024);
    expect(d.attribute('MAX_GRID_DIM_X')).toBe(2 ** 31 - 1);
    expect(() => d.attribute('NOT_AN_ATTRIBUTE' as never)).toThrow(RangeError);
  });

  it('reports memory info', () => {
    const d = Device.get(0);
    const m = d.memoryInfo();
    expect(m.totalBytes).toBe(d.totalMemoryBytes);
    expect(m.freeBytes).toBeGreaterThan(0);
    expect(m.freeBytes).toBeLessThanOrEqual(m.totalBytes);
  });

  it('synchronize() and synchronizeAsync() wait for the work on every stream', async () => {
    const d = Device.get(0);
    const m = d.loadModule(new Program(SPIN).compile());
    const spin = m.getKernel('spin', ['i64', 'ptr', 'i32']);
    const cycles = BigInt(Math.round(d.clockRateKHz * 1000 * 0.1)); // ~0.1 s at the max clock
    using s = d.createStream({ nonBlocking: true });
    using flag = d.allocArray(Int32Array, 1);
    flag.fill(0);
    d.synchronize();
    spin.launch({ grid: 1, block: 1, stream: s }, cycles, flag, 1);
    expect(s.query()).toBe(false); // still spinning
    d.synchronize();
    expect(s.query()).toBe(true);
    expect(flag.copyToHost()[0]).toBe(1);
    spin.launch({ grid: 1, block: 1, stream: s }, cycles, flag, 2);
    expect(s.query()).toBe(false);
    await d.synchronizeAsync();
    expect(s.query()).toBe(true);
    expect(flag.copyToHost()[0]).toBe(2);
    m.dispose();
  });

  it('probe() sees the driver, NVRTC and the devices', () => {
    const p = probe();
    expect(p).toMatchObject({ ok: true, deviceCount: Device.count(), reason: undefined });
    expect(p.driverVersion).toMatch(/^1[2-9]\.\d+$/);
    expect(p.nvrtcVersion).toMatch(/^\d+\.\d+$/);
  });

  it('createContextAsync() leaves the event loop free; a GPU call made meanwhile gets the context', async () => {
    // In fresh processes: this one's context exists already.
    const script = (raceWithSyncCall: boolean) => `
      import { Device } from './lib/index.ts';
      const d = Device.get(0);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      const created = Promise.all([d.createContextAsync(), d.createContextAsync()]);
      // Synchronous GPU work at once: it waits inside the driver for the context being created.
      const early = ${raceWithSyncCall} ? Array.from(d.alloc(64).fill(7).copyToHost(new Uint8Array(64))) : [];
      await created;
      await new Promise((r) => setTimeout(r, 5));
      clearInterval(timer);
      const b = d.alloc(1024).fill(3);
      const late = b.copyToHost(new Uint8Array(1024));
      await d.createContextAsync(); // resolves at once now
      const used = d.memoryInfo().poolUsedBytes;
      console.log(JSON.stringify({ ticks, early, late: late.every((v) => v === 3), used }));
    `;
    const run = async (race: boolean) => {
      const r = await promisify(execFile)(process.execPath, [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        script(race),
      ]);
      return JSON.parse(r.stdout) as { ticks: number; early: number[]; late: boolean; used: number };
    };
    const alone = await run(false);
    expect(alone.ticks).toBeGreaterThan(0); // the event loop ran while the context was created
    expect(alone.late).toBe(true);
    expect(alone.used).toBeGreaterThanOrEqual(1024);
    const raced = await run(true);
    expect(raced.early).toEqual(Array(64).fill(7));
    expect(raced.late).toBe(true);
  });

  it('works from worker_threads, each with its own context binding and cleanup', async () => {
    const code = `
      const { parentPort } = require('node:worker_threads');
      // the compiled package (npm run build:ts): worker threads do not inherit the TypeScript loader
      import('${new URL('../../dist/index.js', import.meta.url).href}').then(({ Device }) => {
        const d = Device.get(0);
        const buf = d.allocArray(Float32Array, 1024);
        buf.copyFromHost(new Float32Array(1024).fill(3));
        const host = buf.copyToHost();
        parentPort.postMessage({ name: d.name, sum: host.reduce((a, b) => a + b, 0) });
        // buf is deliberately not disposed: the worker's env cleanup must release it
      }).catch((e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
    `;
    const results = await Promise.all(
      [0, 1].map(
        () =>
          new Promise<{ name?: string; sum?: number; error?: string }>((resolve, reject) => {
            const w = new Worker(code, { eval: true });
            w.once('message', (m) => {
              resolve(m as { name: string; sum: number });
              void w.terminate();
            });
            w.once('error', reject);
          }),
      ),
    );
    for (const r of results) {
      expect(r.error).toBeUndefined();
      expect(r.sum).toBe(3 * 1024);
      expect(r.name).toBe(Device.get(0).name);
    }
  });
});
