// SPDX-License-Identifier: MIT
// Fresh inputs for every timed launch (inputSets() with fresh, on in evaluate()): bench() regenerates a set's inputs
// on the GPU before each of its samples, and verify() checks each set's outputs against the reference on the inputs of
// its last timed launch. A kernel that caches its outputs by input pointer (result replay, test/adversarial) passes
// the re-check over fixed input sets and fails it over fresh ones; honest kernels pass both, in-place outputs too.
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { Device, Program, bench, evaluate, inputSets, parseArgSpecs } from '../../lib/index.js';
import { RESERVOIR_SLOTS } from '../../lib/measure/input-sets.js';
import { describeGpu } from '../helpers.js';

const ADV = new URL('../adversarial/', import.meta.url);
const source = (file: string): string => readFileSync(new URL(`kernels/${file}`, ADV), 'utf8');
const N = 1 << 20;
const SPECS = [`x@ptr:f32[${N}]=uniform(-2,2)`, `y@ptr:f32[${N}]:out`, `n@i32=${N}`];
const IO = parseArgSpecs(SPECS);
const CONFIG = { grid: N / 256, block: 256 };

const INPLACE = `
extern "C" __global__ void accumulate(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.5f * y[i] + x[i];
}`;

/** An honest map, and a kernel that writes nothing: the kept launches' copies hold the one's outputs, the poison. */
const KEPT = `
extern "C" __global__ void triple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 3.0f * x[i];
}
extern "C" __global__ void never_writes(const float* x, float* y, int n) {}`;

describeGpu('fresh inputs for every timed launch', () => {
  const load = (src: string, name: string) => {
    const device = Device.get(0);
    const m = device.loadModule(new Program(src, { name: `${name}.cu` }).compile({ cudaIncludes: false }));
    return { m, kernel: m.getKernel(name, ['ptr', 'ptr', 'i32']) };
  };

  it.each([false, true])(
    'a result cached by input pointer: the re-check %s',
    async (fresh) => {
      const device = Device.get(0);
      const replay = load(source('replay-pointer-slots.cu'), 'replay_pointer_slots');
      const ref = load(source('map-reference.cu'), 'map_reference');
      const sets = inputSets(device, IO, 42, { fresh });
      try {
        await bench(replay.kernel, CONFIG, sets.args, { preset: 'quick' });
        const r = await sets.verify({ kernel: ref.kernel, config: CONFIG });
        // Over fixed sets every hit replays the right outputs; over fresh ones they are another launch's.
        expect(r.passed, r.summary).toBe(!fresh);
        if (fresh) expect(r.summary).toMatch(/not those of its last timed launch, on fresh inputs/);
      } finally {
        sets.dispose();
        replay.m.dispose();
        ref.m.dispose();
      }
    },
    120_000,
  );

  it('regenerates the inputs between samples: other bytes after timing, and an honest kernel passes', async () => {
    const device = Device.get(0);
    const ref = load(source('map-reference.cu'), 'map_reference');
    for (const fresh of [false, true]) {
      const sets = inputSets(device, IO, 7, { fresh });
      try {
        const args = sets.args(0);
        const before = (args[0] as { copyToHost(): Uint8Array }).copyToHost();
        await bench(ref.kernel, CONFIG, (set: number) => (set === 0 ? args : sets.args(set)), { preset: 'quick' });
        const after = (args[0] as { copyToHost(): Uint8Array }).copyToHost();
        expect(Buffer.from(after).equals(Buffer.from(before)), `fresh: ${fresh}`).toBe(!fresh);
        const r = await sets.verify({ kernel: ref.kernel, config: CONFIG });
        expect(r.passed, r.summary).toBe(true);
      } finally {
        sets.dispose();
      }
    }
    ref.m.dispose();
  });

  it('checks an in-place output after timing on fresh inputs, and catches one left wrong', async () => {
    const device = Device.get(0);
    const io = parseArgSpecs([`x@ptr:f32[${N}]=uniform(-1,1)`, `y@ptr:f32[${N}]=uniform(0,1):out`, `n@i32=${N}`]);
    const k = load(INPLACE, 'accumulate');
    const sets = inputSets(device, io, 3, { fresh: true });
    try {
      const all = [0, 1, 2, 3].map((set) => sets.args(set));
      await bench(k.kernel, CONFIG, (set: number) => all[set]!, { preset: 'quick' });
      const ok = await sets.verify({ kernel: k.kernel, config: CONFIG });
      expect(ok.passed, ok.summary).toBe(true);
      // One more launch on a set's inputs, past its last timed one: its in-place output is no longer that launch's.
      k.kernel.launch(CONFIG, ...(all[0] as [never, never, number]));
      device.synchronize();
      const bad = await sets.verify({ kernel: k.kernel, config: CONFIG });
      expect(bad.passed, bad.summary).toBe(false);
    } finally {
      sets.dispose();
      k.m.dispose();
    }
  });

  it('keeps timed launches drawn at random: an honest kernel passes on them, one that never writes fails', async () => {
    const device = Device.get(0);
    const m = device.loadModule(new Program(KEPT, { name: 'kept.cu' }).compile({ cudaIncludes: false }));
    try {
      const triple = m.getKernel('triple', ['ptr', 'ptr', 'i32']);
      const idle = m.getKernel('never_writes', ['ptr', 'ptr', 'i32']);
      for (const [kernel, honest] of [
        [triple, true],
        [idle, false],
      ] as const) {
        const sets = inputSets(device, IO, 11, { fresh: true });
        try {
          await bench(kernel, CONFIG, sets.args, { preset: 'quick' });
          const r = await sets.verify({ kernel: triple, config: CONFIG });
          // Four sets' last launches, then the kept ones: copied out by the sampler right after each ran.
          expect(r.trials, r.summary).toHaveLength(4 + RESERVOIR_SLOTS);
          expect(r.trials.slice(4).every((t) => t.passed === honest)).toBe(true);
          if (honest)
            expect(r.summary).toMatch(/^PASS after timing: 4 input sets and 2 timed launches drawn at random/);
        } finally {
          sets.dispose();
        }
      }
    } finally {
      m.dispose();
    }
  }, 120_000);

  it('evaluate() times on fresh inputs: the pointer-keyed replay fails its job after timing', async () => {
    const report = await evaluate(
      {
        source: source('replay-pointer-slots.cu'),
        kernel: 'replay_pointer_slots',
        args: SPECS,
        grid: CONFIG.grid,
        block: CONFIG.block,
        reference: { source: source('map-reference.cu'), kernel: 'map_reference' },
        check: { atol: 1e-5, rtol: 1e-5 },
        timing: { preset: 'quick' },
      },
      { device: Device.get(0) },
    );
    expect(report.passed).toBe(false);
    // Caught at the check (a reused address across trials) or after timing: never timed as a pass.
    expect(['check', 'recheck']).toContain(report.phase);
  }, 120_000);
});
