import { expect, it, vi } from 'vitest';
import { Sampler } from '../../lib/core/sampler.js';
import {
  Device,
  Program,
  bench,
  check,
  compare,
  formatResult,
  inputSets,
  native,
  parseArgSpecs,
} from '../../lib/index.js';
import { describeGpu } from '../helpers.js';
import { runScript } from '../child.js';

// A memory-bound copy whose work can be scaled exactly: `reps` passes over the data.
const SRC = `
extern "C" __global__ void copy(const float4* __restrict__ in, float4* __restrict__ out, int n, int reps) {
  for (int r = 0; r < reps; r++)
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i];
}
// Spins for about "cycles" clocks and counts its launches: what ran on the GPU, whatever bench() says it did.
extern "C" __global__ void spin(long long cycles, unsigned long long* launches) {
  long long s = clock64();
  while (clock64() - s < cycles) {}
  atomicAdd(launches, 1ULL);
}`;

// Under compute-sanitizer kernels run many times slower and serialized: assertions about speed cannot hold there.
const timing = process.env.CUDAKIT_UNDER_SANITIZER === '1' ? it.skip : it;

describeGpu('bench', () => {
  const d = () => Device.get(0);
  const setup = () => {
    const m = d().loadModule(new Program(SRC).compile());
    return { m, copy: m.getKernel('copy', ['ptr', 'ptr', 'i32', 'i32']), spin: m.getKernel('spin', ['i64', 'ptr']) };
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
      for (const [, pct] of text.matchAll(/([\d.]+)% of peak bandwidth/g))
        expect(Number(pct), text).toBeLessThanOrEqual(100);
      if (t.percentOfPeakBandwidth! > 100) expect(text).toMatch(/(at|above) the measured peak bandwidth \(\d+\.\d%/);
      else expect(text).toMatch(/throughput +\d+\.\d GB\/s · \d+\.\d% of peak bandwidth/);
    }
    m.dispose();
  });

  it(
    "rotates input sets from a generator: each sample reaches the kernel with its own set's addresses " + 'and values',
    async () => {
      // The kernel itself records, for every launch, the input address, the first input value and the set number it
      // was given, so the test sees what reached the GPU rather than what bench() says it sent.
      const LOGGED = `
extern "C" __global__ void logged_copy(const float4* __restrict__ in, float4* __restrict__ out, int n, int set,
                                       unsigned long long* log, unsigned int* count, unsigned int capacity) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i];
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned int k = atomicAdd(count, 1u);
    if (k < capacity) {
      log[3 * k] = (unsigned long long)in;
      log[3 * k + 1] = (unsigned long long)in[0].x;
      log[3 * k + 2] = (unsigned long long)set;
    }
  }
}`;
      using module = d().loadModule(new Program(LOGGED).compile());
      const kernel = module.getKernel('logged_copy', ['ptr', 'ptr', 'i32', 'i32', 'ptr', 'ptr', 'u32']);
      const capacity = 1 << 16;
      using log = d()
        .allocArray(BigUint64Array, 3 * capacity)
        .fill(0n);
      using count = d().allocArray(Uint32Array, 1).fill(0);
      const n = (1 << 20) / 16; // 1 MiB of float4 per buffer
      const f32 = (length: number) => d().allocArray(Float32Array, length);
      const inputs: ReturnType<typeof f32>[] = [];
      const outputs: ReturnType<typeof f32>[] = [];
      try {
        const r = await bench(
          kernel,
          { grid: 264, block: 256 },
          (set) => {
            const input = f32(4 * n).fill(10 + set); // set k's input holds 10 + k everywhere
            const output = f32(4 * n).fill(0);
            inputs.push(input);
            outputs.push(output);
            return [input, output, n, set, log, count, capacity];
          },
          { preset: 'quick', mode: 'hot' },
        );
        expect(inputs).toHaveLength(4); // the default number of sets
        expect(new Set(inputs.map((b) => b.ptr)).size).toBe(4);

        const launched = count.copyToHost()[0]!;
        expect(launched).toBeLessThanOrEqual(capacity); // else the log is incomplete: raise capacity
        const raw = log.copyToHost();
        const launches = Array.from({ length: launched }, (_, k) => ({
          ptr: raw[3 * k]!,
          value: Number(raw[3 * k + 1]!),
          set: Number(raw[3 * k + 2]!),
        }));
        // Every launch got one set's arguments together: that set's input address, its contents and its number.
        const torn = launches.filter((l) => l.ptr !== inputs[l.set]?.ptr || l.value !== 10 + l.set);
        expect(torn.slice(0, 5)).toEqual([]);
        // The timed samples are the last launches, in order: each sample's inputSet is the set the kernel really got.
        expect(launched).toBeGreaterThanOrEqual(r.warmupRuns + r.samples.length);
        const timed = launches.slice(launched - r.samples.length);
        expect(timed.map((l) => l.set)).toEqual(r.samples.map((s) => s.inputSet));
        // Rotation is real: the timed launches read more than one address, holding more than one value.
        expect(new Set(timed.map((l) => l.ptr)).size).toBeGreaterThan(1);
        expect(new Set(timed.map((l) => l.value)).size).toBeGreaterThan(1);
        // Each set's output was written from its own input.
        outputs.forEach((o, set) =>
          expect(
            o.copyToHost().every((v) => v === 10 + set),
            `output of set ${set}`,
          ).toBe(true),
        );
      } finally {
        for (const b of [...inputs, ...outputs]) b.dispose();
      }
    },
  );

  timing('graph mode replays many launches per sample and divides a replay by its launches', async () => {
    const { m, spin } = setup();
    const cycles = BigInt(Math.round(d().clockRateKHz * 1000 * 5e-6)); // ~5 µs
    using launches = d().allocArray(BigUint64Array, 1);
    /** bench() in `mode`, and the launches that ran after warm-up (the first, untimed launch and warm-up excluded). */
    const timedLaunches = async (mode: 'hot' | 'graph') => {
      launches.fill(0n);
      d().synchronize();
      const r = await bench(spin, { grid: 1, block: 1 }, [cycles, launches], { preset: 'quick', mode });
      d().synchronize();
      return { r, timed: Number(launches.copyToHost()[0]!) - 1 - r.warmupRuns };
    };
    // Hot: one launch per sample
    const hot = await timedLaunches('hot');
    expect(hot.r.mode).toBe('hot');
    expect(hot.timed).toBe(hot.r.samples.length);
    // Graph: every sample (and two untimed replays that warm the graph) replays one graph of L launches, L sized for
    // a replay of ~10 ms (at most 1000 launches): ~5 µs launches give hundreds per replay
    const graph = await timedLaunches('graph');
    expect(graph.r.mode).toBe('graph');
    const replays = graph.r.samples.length + 2;
    const perReplay = graph.timed / replays;
    expect(Number.isInteger(perReplay), `${graph.timed} launches in ${replays} replays`).toBe(true);
    expect(perReplay).toBeGreaterThanOrEqual(100);
    expect(perReplay).toBeLessThanOrEqual(1000);
    // A sample's time is one launch's: the replay's time divided by its launches
    expect(graph.r.stats.median).toBeGreaterThan(0.003);
    expect(graph.r.stats.median).toBeLessThan(0.02);
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
    // A 95 % interval misses the true ratio one run in twenty even when nothing differs (here it once ended 0.013 %
    // short of 1), so an A/A is held to a tight interval around 1, not to one that contains it.
    expect(same.speedupLow).toBeGreaterThan(0.99);
    expect(same.speedupHigh).toBeLessThan(1.01);
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
    // Every native call that would put work or a resource on the GPU, watched (and still called through)
    const n = native();
    const touching = [
      'memAlloc',
      'memAllocAsync',
      'moduleLoadData',
      'streamCreate',
      'eventCreate',
      'eventRecord',
      'kernelSlotCreate',
      'launchKernel',
      'launchKernelEx',
      'benchSamples',
      'graphLaunch',
      'streamBeginCapture',
      'memcpyHtoD',
      'memsetAsync',
    ] as const;
    const spies = touching.map((name) => vi.spyOn(n, name));
    const sampler = vi.spyOn(Sampler, 'for');
    const before = n.stats();
    try {
      await expect(bench(copy, { grid: 1, block: 1 }, [a, a, 1, 1], { mode: 'warm' as never })).rejects.toThrow(
        TypeError,
      );
      await expect(bench(copy, { grid: 1, block: 1 }, [a, a, 1, 1], { bytes: -1 })).rejects.toThrow(RangeError);
      await expect(bench(copy, { grid: 1, block: 1 }, [a, a, 1, 1], { preset: 'fast' as never })).rejects.toThrow(
        TypeError,
      );
      const called = touching.filter((_, i) => spies[i]!.mock.calls.length > 0);
      expect(called).toEqual([]);
      expect(sampler).not.toHaveBeenCalled(); // no timing harness made or fetched either
      // Nothing was created and left behind (finalizers of earlier tests' garbage may only lower the counts)
      const after = n.stats();
      for (const key of Object.keys(before) as (keyof typeof before)[]) {
        expect(after[key], key).toBeLessThanOrEqual(before[key]);
      }
    } finally {
      for (const spy of spies) spy.mockRestore();
      sampler.mockRestore();
      m.dispose();
    }
  });
});

describeGpu('bench agrees with Nsight Compute', () => {
  timing('a memory-bound kernel: cold median within ±3 % of ncu gpu__time_duration.sum', async (ctx) => {
    const { ncuAvailable, ncuCopyMs } = await import('../../bench/ncu.js');
    const { COPY_SOURCE, copyConfig } = await import('../../bench/ncu-child.js');
    if (!ncuAvailable()) {
      if (process.env.CUDAKIT_REQUIRE_GPU === '1')
        throw new Error('ncu (Nsight Compute) is required with CUDAKIT_REQUIRE_GPU=1');
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
      Object.assign(out, {
        cls: e instanceof CudaError,
        code: e.code,
        api: e.api,
        phase: e.phase,
        sticky: e.sticky,
        msg: e.message,
        cause: e.cause?.code,
      });
    }
    console.log(JSON.stringify(out));
  `;
  const r = runScript(script);
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
      cls: true,
      code: 'CUDA_ERROR_ILLEGAL_ADDRESS',
      phase: 'bench(): warm-up',
      sticky: true,
      cause: 'CUDA_ERROR_ILLEGAL_ADDRESS',
    });
    expect(r.out.msg).toMatch(/^bench\(\): warm-up: cu\w+ failed: CUDA_ERROR_ILLEGAL_ADDRESS \(700\)/);
  });

  it(
    'a cooperative launch too large for the device is refused while timing too: ' +
      'the attribute reaches the timed launch',
    () => {
      // A plain launch of this grid is fine; only a cooperative one must fit on the device at once.
      const r = benchInChild(`
      const p = d.alloc(16);
      good.launch({ grid: 1 << 20, block: 1024 }, p);
      d.synchronize();
      await bench(good, { grid: 1 << 20, block: 1024, cooperative: true }, [p], { preset: 'quick' });`);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(r.out).toMatchObject({
        cls: true,
        code: 'CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE',
        api: 'cuLaunchKernelEx',
        phase: 'bench(): warm-up',
        sticky: false,
      });
      expect(r.out.msg).toMatch(
        /^bench\(\): warm-up: cuLaunchKernelEx failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE/,
      );
    },
  );

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
    expect(r.out).toMatchObject({
      cls: true,
      code: 'CUDA_ERROR_ILLEGAL_ADDRESS',
      phase: 'compare(): B (broken): warm-up',
      sticky: true,
    });
    expect(r.out.msg).toMatch(/^compare\(\): B \(broken\): warm-up: cu\w+ failed: CUDA_ERROR_ILLEGAL_ADDRESS/);
  });
});

// What bench() times is the launch check() verified, launch attributes included (the sampler binds launches by
// the rules of kernel.launch(); native/bench.cc launches a slot with attributes through cuLaunchKernelEx).
// %cluster_nctarank: the number of blocks in this block's cluster (1 without clusters). sm_90 and later only.
const CLUSTER_SIZE = `
extern "C" __global__ void cluster_size(unsigned int* out, int n) {
  unsigned int size;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = size;
}`;
const FILL_ONE = `
extern "C" __global__ void fill_one(unsigned int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1u;
}`;

describeGpu('bench: launch attributes are timed as checked', () => {
  const d = () => Device.get(0);
  const n = 64 * 256;
  const io = parseArgSpecs([`ptr:u32[${n}]:out`, `i32=${n}`]);
  /** Every element holds `value`: the blocks' cluster size for cluster_size. */
  const all =
    (value: number) =>
    (args: unknown[]): void =>
      void (args[0] as Uint32Array).fill(value);

  it('a cluster launch: check() and every timed launch see the cluster size, a plain launch sees 1', async (ctx) => {
    if (d().computeCapability.major < 9) ctx.skip(); // thread block clusters: Hopper and later
    using m = d().loadModule(new Program(CLUSTER_SIZE).compile());
    const kernel = m.getKernel('cluster_size', ['ptr', 'i32']);
    const clustered = { grid: 64, block: 256, clusterDim: [2, 1, 1] as const };
    const checked = await check({ kernel, config: clustered }, all(2), io, { trials: 2 });
    expect(checked.passed, checked.summary).toBe(true);
    const plain = await check({ kernel, config: { grid: 64, block: 256 } }, all(2), io, { trials: 1 });
    expect(plain.defence).toBe('mismatch'); // without the attribute the cluster is one block
    expect(plain.mismatches[0]).toMatchObject({ expected: 2, actual: 1 });
    for (const mode of ['cold', 'hot'] as const) {
      const sets = inputSets(d(), io);
      try {
        const r = await bench(kernel, clustered, sets.args, { preset: 'quick', mode });
        expect(r.stats.n).toBeGreaterThan(0);
        // The outputs the timed launches left: every one of them ran as clusters of 2.
        const after = await sets.verify(all(2));
        expect(after.passed, after.summary).toBe(true);
      } finally {
        sets.dispose();
      }
    }
  });

  it('a cluster launch in graph mode: the captured launches keep the attribute', async (ctx) => {
    if (d().computeCapability.major < 9) ctx.skip();
    using m = d().loadModule(new Program(CLUSTER_SIZE).compile());
    const kernel = m.getKernel('cluster_size', ['ptr', 'i32']);
    const sets = inputSets(d(), io);
    try {
      await bench(kernel, { grid: 64, block: 256, clusterDim: [4, 1, 1] }, sets.args, {
        preset: 'quick',
        mode: 'graph',
      });
      const after = await sets.verify(all(4));
      expect(after.passed, after.summary).toBe(true);
    } finally {
      sets.dispose();
    }
  });

  it('a cooperative launch that fits is timed', async () => {
    using m = d().loadModule(new Program(FILL_ONE).compile());
    const kernel = m.getKernel('fill_one', ['ptr', 'i32']);
    const config = { grid: d().multiprocessorCount, block: 128, cooperative: true };
    const sets = inputSets(
      d(),
      parseArgSpecs([`ptr:u32[${d().multiprocessorCount * 128}]:out`, `i32=${d().multiprocessorCount * 128}`]),
    );
    try {
      const r = await bench(kernel, config, sets.args, { preset: 'quick', mode: 'hot' });
      expect(r.stats.median).toBeGreaterThan(0);
      expect((await sets.verify(all(1))).passed).toBe(true);
    } finally {
      sets.dispose();
    }
  });

  it('validates a bound launch like launch(): a bad clusterDim is refused before the GPU is touched', async () => {
    using m = d().loadModule(new Program(FILL_ONE).compile());
    const kernel = m.getKernel('fill_one', ['ptr', 'i32']);
    using out = d().alloc(4 * n);
    await expect(
      bench(kernel, { grid: 64, block: 256, clusterDim: [0, 1, 1] }, [out, n], { preset: 'quick' }),
    ).rejects.toThrow(
      new RangeError('Expected an integer in [1, 4294967295] for clusterDim.x but received 0 of type number'),
    );
  });
});
