// SPDX-License-Identifier: MIT
// Kernel durations from CUPTI: a kernel of a known length (a %globaltimer spin) reads that length by the 'cupti'
// timer, where events read it plus the event pair; every mode and function targets are timed by it; 'events' is
// still there when asked for. Skipped with the reason where CUPTI cannot be loaded, unless CUDAKIT_REQUIRE_CUPTI=1,
// and under compute-sanitizer, which holds it: cuptiStatus() knows the sanitizer and says so, the timer tests skip
// with that reason, and one test checks that bench() then times by events. Without CUPTI at all:
// test/gpu/cupti-fallback.test.ts.
import { expect, it } from 'vitest';
import { Device, Program, type Stream, bench, compare, cuptiStatus } from '../../lib/index.js';
import { describeGpu, machine } from '../helpers.js';

const SRC = `
extern "C" __global__ void spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}
extern "C" __global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}`;

const status = machine.ok ? cuptiStatus() : undefined;
// scripts/gpu-check.sh runs this tier under compute-sanitizer with CUDAKIT_UNDER_SANITIZER=1: there, the timer tests
// skip by that variable too, so that a sanitizer cuptiStatus() did not see cannot fail them.
const sanitized = process.env.CUDAKIT_UNDER_SANITIZER === '1';
const missing =
  status !== undefined && !status.available
    ? status.reason
    : sanitized
      ? 'under compute-sanitizer (CUDAKIT_UNDER_SANITIZER=1), which holds CUPTI'
      : undefined;
const cuptiIt =
  missing === undefined
    ? it
    : process.env.CUDAKIT_REQUIRE_CUPTI === '1' && !sanitized
      ? (name: string, _body: () => Promise<void>) =>
          it(name, () => {
            throw new Error(`CUPTI is required here (CUDAKIT_REQUIRE_CUPTI=1) but unavailable: ${missing}`);
          })
      : (name: string, body: () => Promise<void>) => it.skip(`${name} [skipped: ${missing}]`, body);

describeGpu('the CUPTI timer', () => {
  const setup = () => {
    const d = Device.get(0);
    const module = d.loadModule(new Program(SRC).compile());
    return {
      d,
      module,
      spin: module.getKernel('spin', ['u64']),
      scale: module.getKernel('scale', ['ptr', 'f32', 'i32']),
    };
  };

  // A spin kernel lasts its wait plus its own start and exit (a block scheduled, the last %globaltimer read): about
  // 0.8 µs on an H100. Differences between two spins are the waits' difference exactly.
  cuptiIt(
    'is the default, and times a 20 µs spin kernel at 20 µs and up to 1.5 µs more; events read more',
    async () => {
      const { module, spin } = setup();
      const r = await bench(spin, { grid: 1, block: 1 }, [20_000n], { mode: 'hot', preset: 'quick' });
      const e = await bench(spin, { grid: 1, block: 1 }, [20_000n], { mode: 'hot', preset: 'quick', timer: 'events' });
      expect(r.timer).toBe('cupti');
      expect(r.env.cupti).toMatchObject({ available: true });
      expect(r.stats.median).toBeGreaterThanOrEqual(0.02);
      expect(r.stats.median).toBeLessThan(0.0215);
      // every sample keeps its event time beside it, which holds the kernel and the event pair
      for (const s of r.samples) expect(s.eventMs).toBeGreaterThan(s.gpuMs);
      expect(e.timer).toBe('events');
      expect(e.samples.every((s) => s.gpuMs === s.eventMs)).toBe(true);
      expect(e.stats.median).toBeGreaterThan(r.stats.median);
      expect(r.warnings.filter((w) => w.includes('CUPTI'))).toEqual([]);
      module.dispose();
    },
  );

  cuptiIt('times the difference of a 20 µs and a 5 µs spin at 15 µs ±2 % in cold, hot and graph mode', async () => {
    const { module, spin } = setup();
    for (const mode of ['cold', 'hot', 'graph'] as const) {
      const long = await bench(spin, { grid: 1, block: 1 }, [20_000n], { mode, preset: 'quick' });
      const short = await bench(spin, { grid: 1, block: 1 }, [5_000n], { mode, preset: 'quick' });
      expect([long.timer, short.timer], mode).toEqual(['cupti', 'cupti']);
      expect(short.stats.median, mode).toBeGreaterThanOrEqual(0.005);
      expect(short.stats.median, mode).toBeLessThan(0.0065);
      expect(Math.abs((long.stats.median - short.stats.median) / 0.015 - 1), mode).toBeLessThan(0.02);
    }
    module.dispose();
  });

  cuptiIt("times a function target from its first kernel's start to its last kernel's end", async () => {
    const { module, spin } = setup();
    const twoSpins = (stream: Stream): void => {
      spin.launch({ grid: 1, block: 1, stream }, 10_000n);
      spin.launch({ grid: 1, block: 1, stream }, 10_000n);
    };
    const r = await bench(twoSpins, { mode: 'hot', preset: 'quick' });
    expect(r.timer).toBe('cupti');
    // two 10 µs kernels and the gap between them (a few µs at most), without the event pair
    expect(r.stats.median).toBeGreaterThan(0.0198);
    expect(r.stats.median).toBeLessThan(0.026);
    expect(r.stats.median).toBeLessThan(median(r.samples.map((s) => s.eventMs)));
    module.dispose();
  });

  cuptiIt('compares two kernels on the CUPTI timer, both sides alike', async () => {
    const { module, spin } = setup();
    const r = await compare(
      { kernel: spin, config: { grid: 1, block: 1 }, args: [10_000n], name: '10 µs' },
      { kernel: spin, config: { grid: 1, block: 1 }, args: [5_000n], name: '5 µs' },
      { mode: 'hot', preset: 'quick', rounds: 2 },
    );
    expect([r.a.timer, r.b.timer]).toEqual(['cupti', 'cupti']);
    // (10 µs + start and exit) / (5 µs + start and exit)
    expect(r.speedup).toBeGreaterThan(1.7);
    expect(r.speedup).toBeLessThan(2);
    expect(r.verdict).toBe('FASTER');
    module.dispose();
  });

  cuptiIt('times a short memory-bound kernel below its event time, by about the event pair', async () => {
    const { d, module, scale } = setup();
    const n = 1 << 16;
    using x = d.alloc(4 * n).fill(0);
    const config = { grid: n / 256, block: 256 };
    const r = await bench(scale, config, [x, 1.0001, n], { mode: 'cold', preset: 'quick' });
    expect(r.timer).toBe('cupti');
    const events = median(r.samples.map((s) => s.eventMs));
    expect(r.stats.median).toBeLessThan(events);
    expect(events - r.stats.median).toBeLessThan(4 * r.env.eventOverheadMs + 0.002);
    module.dispose();
  });

  // The sanitizer run: cuptiStatus() says what bench() does, so the tests above skip instead of failing.
  const notSanitized = ' [skipped: not under compute-sanitizer (CUDAKIT_UNDER_SANITIZER=1)]';
  (sanitized ? it : it.skip)(
    `under compute-sanitizer, cuptiStatus() says so and bench() times by events${sanitized ? '' : notSanitized}`,
    async () => {
      const { module, spin } = setup();
      expect(cuptiStatus()).toEqual({ available: false, reason: expect.stringMatching(/compute-sanitizer/) as string });
      const r = await bench(spin, { grid: 1, block: 1 }, [2_000n], { mode: 'hot', preset: 'quick' });
      expect(r.timer).toBe('events');
      expect(r.env.cupti).toEqual(cuptiStatus());
      module.dispose();
    },
  );
});

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}
