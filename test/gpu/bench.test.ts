import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { bench, compare } from '../../lib/measure/bench.js';
import { formatResult } from '../../lib/measure/format.js';
import { Device, Program } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

// A memory-bound copy whose work can be scaled exactly: `reps` passes over the data.
const SRC = `
extern "C" __global__ void copy(const float4* __restrict__ in, float4* __restrict__ out, int n, int reps) {
  for (int r = 0; r < reps; r++)
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i];
}
extern "C" __global__ void spin(long long cycles) { long long s = clock64(); while (clock64() - s < cycles) {} }`;

// Under compute-sanitizer kernels run many times slower and serialized: assertions about speed cannot hold there.
const timing = process.env.CUDAKIT_UNDER_SANITIZER === '1' ? it.skip : it;

describeGpu('bench', () => {
  const d = () => Device.get(0);
  const setup = () => {
    const m = d().loadModule(new Program(SRC).compile());
    return { m, copy: m.getKernel('copy', ['ptr', 'ptr', 'i32', 'i32']), spin: m.getKernel('spin', ['i64']) };
  };
  const n4 = (64 << 20) / 16; // 64 MiB of float4: past L2, memory-bound

  timing('times a kernel cold, with raw samples, clocks, statistics and throughput', async () => {
    const { m, copy } = setup();
    using a = d().alloc(n4 * 16);
    using b = d().alloc(n4 * 16);
    const cfg = { grid: 4 * d().multiprocessorCount, block: 256 };
    const r = await bench(copy, cfg, [a, b, n4, 1], { preset: 'quick', bytes: 2 * n4 * 16 });
    expect(r.mode).toBe('cold');
    expect(r.stats.n).toBeGreaterThanOrEqual(10);
    expect(r.samples.length).toBe(r.stats.n + r.rejected);
    expect(r.stats.min).toBeLessThanOrEqual(r.stats.median);
    expect(r.stats.ciLow).toBeLessThanOrEqual(r.stats.median);
    expect(r.stats.ciHigh).toBeGreaterThanOrEqual(r.stats.median);
    expect(r.clockMHz).toBeGreaterThan(500);
    expect(r.throughput!.gbPerS).toBeGreaterThan(500);
    expect(r.throughput!.percentOfPeakBandwidth).toBeGreaterThan(20);
    expect(r.throughput!.percentOfPeakBandwidth).toBeLessThan(110);
    expect(r.env.device).toBe(d().name);
    expect(r.samples.every((s) => s.launchUs > 0 && s.gpuMs > 0)).toBe(true);
    m.dispose();
  });

  timing('a plain float4 copy never prints a bare percentage of peak bandwidth above 100', async () => {
    const { m, copy } = setup();
    using a = d().alloc(n4 * 16);
    using b = d().alloc(n4 * 16);
    const cfg = { grid: 4 * d().multiprocessorCount, block: 256 };
    // Hot too: 64 MiB partly served from L2 may read above the DRAM peak, and must then say so.
    for (const mode of ['cold', 'hot'] as const) {
      const r = await bench(copy, cfg, [a, b, n4, 1], { preset: 'quick', mode, bytes: 2 * n4 * 16 });
      const t = r.throughput!;
      const peak = t.peakBandwidth!;
      expect(['memcpy', 'copy kernel', 'read stream']).toContain(peak.method);
      expect(peak.repetitions).toBe(20);
      expect(peak.lowGbPerS).toBeLessThanOrEqual(peak.gbPerS);
      expect(peak.highGbPerS).toBeGreaterThanOrEqual(peak.gbPerS);
      expect(peak.highGbPerS / peak.lowGbPerS).toBeLessThan(1.1); // a measurement with a usable interval
      expect(t.percentOfPeakBandwidth).toBeCloseTo((100 * t.gbPerS!) / peak.gbPerS, 6); // the raw figure stays
      expect(t.percentOfPeakBandwidthLow).toBeLessThanOrEqual(t.percentOfPeakBandwidth!);
      expect(t.percentOfPeakBandwidthHigh).toBeGreaterThanOrEqual(t.percentOfPeakBandwidth!);
      const text = formatResult(r);
      for (const [, pct] of text.matchAll(/([\d.]+)% of peak bandwidth/g)) expect(Number(pct), text).toBeLessThanOrEqual(100);
      if (t.percentOfPeakBandwidth! > 100) expect(text).toMatch(/(at|above) the measured peak bandwidth \(\d+\.\d%/);
      else expect(text).toMatch(/throughput +\d+\.\d GB\/s · \d+\.\d% of peak bandwidth/);
    }
    m.dispose();
  });

  it('rotates input sets from a generator (different addresses per set)', async () => {
    const { m, copy } = setup();
    const bufs: ReturnType<Device['alloc']>[] = [];
    const r = await bench(copy, { grid: 264, block: 256 }, (set) => {
      const a = d().alloc(1 << 20);
      const b = d().alloc(1 << 20);
      bufs.push(a, b);
      return [a, b, (1 << 20) / 16, 1 + (set % 1)];
    }, { preset: 'quick', mode: 'hot' });
    expect(bufs.length).toBe(8);
    expect(new Set(r.samples.map((s) => s.inputSet)).size).toBeGreaterThan(1);
    for (const b of bufs) b.dispose();
    m.dispose();
  });

  timing('graph mode divides a replay by its launches', async () => {
    const { m, spin } = setup();
    const cycles = BigInt(Math.round(d().clockRateKHz * 1000 * 5e-6)); // ~5 µs
    const g = await bench(spin, { grid: 1, block: 1 }, [cycles], { preset: 'quick', mode: 'graph' });
    expect(g.stats.median).toBeGreaterThan(0.003);
    expect(g.stats.median).toBeLessThan(0.02);
    m.dispose();
  });

  timing('A/A says SAME; a kernel made 20% slower says SLOWER', async () => {
    const { m, copy } = setup();
    using a = d().alloc(n4 * 16);
    using b = d().alloc(n4 * 16);
    const cfg = { grid: 4 * d().multiprocessorCount, block: 256 };
    const same = await compare(
      { kernel: copy, config: cfg, args: [a, b, n4, 5], name: 'A' },
      { kernel: copy, config: cfg, args: [a, b, n4, 5], name: 'A again' },
      { preset: 'quick', mode: 'hot' },
    );
    expect(same.verdict).toBe('SAME');
    expect(same.speedupLow).toBeLessThanOrEqual(1);
    expect(same.speedupHigh).toBeGreaterThanOrEqual(1);
    const slower = await compare(
      { kernel: copy, config: cfg, args: [a, b, n4, 5], name: '5 passes' },
      { kernel: copy, config: cfg, args: [a, b, n4, 6], name: '6 passes' },
      { preset: 'quick', mode: 'hot' },
    );
    expect(slower.verdict).toBe('SLOWER');
    expect(slower.speedup).toBeGreaterThan(0.78);
    expect(slower.speedup).toBeLessThan(0.9);
    m.dispose();
  });

  it('validates options before touching the GPU', async () => {
    const { m, copy } = setup();
    using a = d().alloc(16);
    await expect(bench(copy, { grid: 1, block: 1 }, [a, a, 1, 1], { mode: 'warm' as never })).rejects.toThrow(TypeError);
    await expect(bench(copy, { grid: 1, block: 1 }, [a, a, 1, 1], { bytes: -1 })).rejects.toThrow(RangeError);
    await expect(bench(copy, { grid: 1, block: 1 }, [a, a, 1, 1], { preset: 'fast' as never })).rejects.toThrow(TypeError);
    m.dispose();
  });
});

describeGpu('bench agrees with Nsight Compute', () => {
  timing('a memory-bound kernel: cold median within ±3 % of ncu gpu__time_duration.sum', async (ctx) => {
    const { ncuAvailable, ncuCopyMs } = await import('../../bench/ncu.js');
    const { COPY_SOURCE, copyConfig } = await import('../../bench/ncu-child.js');
    if (!ncuAvailable()) {
      if (process.env.CUDAKIT_REQUIRE_GPU === '1') throw new Error('ncu is required on the GPU host');
      ctx.skip();
    }
    const d = Device.get(0);
    const m = d.loadModule(new Program(COPY_SOURCE).compile());
    const copy = m.getKernel('copy', ['ptr', 'ptr', 'i64']);
    const mib = 256;
    using a = d.alloc(mib << 20).fill(1);
    using b = d.alloc(mib << 20);
    const ours = (await bench(copy, copyConfig(d), [a, b, (mib << 20) / 16], { mode: 'cold' })).stats.median;
    const ncu = ncuCopyMs(mib);
    expect(Math.abs(ours / ncu - 1), `cudakit ${ours} ms, ncu ${ncu} ms`).toBeLessThan(0.03);
    m.dispose();
  });
});

// A kernel that faults while being timed: in its own process, since the fault destroys the process's CUDA context.
function benchInChild(body: string): { status: number | null; stderr: string; out: Record<string, unknown> } {
  const script = `
    import { CudaError, Device, Program, bench, compare } from './lib/index.ts';
    const d = Device.get(0);
    const src = 'extern "C" __global__ void bad(int* p) { p[threadIdx.x] = 1; }' +
      'extern "C" __global__ void good(int* p) { if (p != 0 && threadIdx.x == 1024) p[0] = 1; }';
    const m = d.loadModule(new Program(src).compile());
    const bad = m.getKernel('bad', ['ptr']);
    const good = m.getKernel('good', ['ptr']);
    const out = {};
    try {
      ${body}
      out.resolved = true;
    } catch (e) {
      Object.assign(out, { cls: e instanceof CudaError, code: e.code, api: e.api, phase: e.phase, sticky: e.sticky, msg: e.message, cause: e.cause?.code });
    }
    console.log(JSON.stringify(out));
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    cwd: new URL('../..', import.meta.url).pathname,
    timeout: 60_000,
  });
  let out: Record<string, unknown>;
  try {
    out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as Record<string, unknown>;
  } catch {
    throw new Error(`the child printed no result (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
  return { status: r.status, stderr: r.stderr, out };
}

// Under compute-sanitizer these planted faults would be (correctly) reported as memcheck errors.
const planted = process.env.CUDAKIT_UNDER_SANITIZER === '1' ? it.skip : it;

describeGpu('bench: kernel faults', () => {
  planted('bench() of a faulting kernel rejects with a CudaError naming the phase; cleanup stays silent', () => {
    const r = benchInChild(`await bench(bad, { grid: 1, block: 32 }, [0x10n], { preset: 'quick' });`);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.out).toMatchObject({
      cls: true, code: 'CUDA_ERROR_ILLEGAL_ADDRESS', phase: 'bench(): warm-up', sticky: true, cause: 'CUDA_ERROR_ILLEGAL_ADDRESS',
    });
    expect(r.out.msg).toMatch(/^bench\(\): warm-up: cu\w+ failed: CUDA_ERROR_ILLEGAL_ADDRESS \(700\)/);
  });

  planted('compare() names the side that faulted', () => {
    const r = benchInChild(`
      const p = d.alloc(16);
      await compare(
        { kernel: good, config: { grid: 1, block: 32 }, args: [p], name: 'fine' },
        { kernel: bad, config: { grid: 1, block: 32 }, args: [0x10n], name: 'broken' },
        { preset: 'quick', rounds: 2 },
      );`);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.out).toMatchObject({ cls: true, code: 'CUDA_ERROR_ILLEGAL_ADDRESS', phase: 'compare(): B (broken): warm-up', sticky: true });
    expect(r.out.msg).toMatch(/^compare\(\): B \(broken\): warm-up: cu\w+ failed: CUDA_ERROR_ILLEGAL_ADDRESS/);
  });
});
