// SPDX-License-Identifier: MIT
// The re-check of timed launches drawn at random (input-sets.ts's reservoir), over a fake device: this file plays the
// sampler's part (native/bench.cc), sample by sample: the set's fresh inputs for the sample's epoch, the kernel, and
// the device copies a snapshot asks for after it. A kernel that does its work only on each set's last launch passes
// the re-check of the sets' last launches, and fails the one of the kept launches.
import { describe, expect, it } from 'vitest';
import { parseArgSpecs } from '../../lib/measure/argspec.js';
import { type FreshSet, RESERVOIR_SLOTS, freshSetOf, inputSets } from '../../lib/measure/input-sets.js';
import { prepareInputs } from '../../lib/measure/inputs.js';
import { splitmix64 } from '../../lib/measure/random.js';
import { FakeDevice, view } from './fake-device.js';

const n = 16;
const io = parseArgSpecs([`x@ptr:f32[${n}]=uniform(-1,1)`, `y@ptr:f32[${n}]:out`, `n@i32=${n}`]);
const SEED = 42;
const SETS = 4;
const reference = (args: unknown[]): void => {
  const [x, y] = args as [Float32Array, Float32Array];
  for (let i = 0; i < x.length; i++) y[i] = Math.fround(3 * x[i]!);
};

/** Does set `set`'s work on `args` (y = 3x), or leaves y as it is when `work` is false. */
function kernel(args: unknown[], work: boolean): void {
  if (!work) return;
  const x = view(Float32Array, args[0]);
  const y = view(Float32Array, args[1]);
  for (let i = 0; i < n; i++) y[i] = Math.fround(3 * x[i]!);
}

/**
 * Runs `samples` launches over the sets in batches of `batch`, as bench() would with fresh inputs: each sample's
 * inputs regenerated for its epoch, `works(sample, last)` saying whether the kernel does its work (`last`: no later
 * launch on the same set), and the reservoir's copies after the launches it picked. `keep` false: no reservoir.
 */
function run(samples: number, batch: number, works: (sample: number, last: boolean) => boolean, keep = true) {
  const device = new FakeDevice();
  const sets = inputSets(device.asDevice, io, SEED, { fresh: true });
  const args = Array.from({ length: SETS }, (_, k) => sets.args(k));
  const fresh = args.map((a) => freshSetOf(a)!);
  const order = Array.from({ length: samples }, (_, i) => (i * 7 + (i >> 2)) % SETS);
  const lastOf = new Map(order.map((set, i) => [set, i]));
  const kept: number[] = [];
  /** By slot (its first copy's destination): the sample whose outputs it holds now. */
  const holds = new Map<bigint, number>();
  let epoch = 1;
  for (let first = 0; first < samples; first += batch) {
    const batchOrder = order.slice(first, first + batch);
    const plan = keep ? fresh[0]!.reservoir.plan(batchOrder.map((k) => fresh[k]!)) : undefined;
    const epochs: number[] = [];
    batchOrder.forEach((set, i) => {
      const e = epoch++;
      epochs.push(e);
      const inputs = prepareInputs(io, splitmix64(BigInt(SEED) + 1000n + BigInt(set)), undefined, e);
      view(Float32Array, args[set]![0]).set(inputs.values[0] as Float32Array);
      kernel(args[set]!, works(first + i, lastOf.get(set) === first + i));
      for (const snap of plan?.snapshots ?? []) {
        if (snap.sample !== i) continue;
        kept.push(first + i);
        holds.set(snap.copies[0]!.to, first + i);
        for (const c of snap.copies) device.copy(c.from, c.to, c.bytes);
      }
      fresh[set]!.used(e);
    });
    plan?.ran(epochs);
  }
  return { sets, kept, held: [...holds.values()] };
}

describe('the re-check of timed launches drawn at random', () => {
  it('passes an honest kernel, its kept launches checked besides each set’s last', async () => {
    const { sets } = run(200, 16, () => true);
    const r = await sets.verify(reference);
    expect(r.passed, r.summary).toBe(true);
    expect(r.trials).toHaveLength(SETS + RESERVOIR_SLOTS);
    expect(r.summary).toMatch(/^PASS after timing: 4 input sets and 2 timed launches drawn at random re-checked/);
  });

  it('fails a kernel that works only on each set’s last launch, which the sets’ own re-check passes', async () => {
    // 4 of 400 launches do the work: both kept launches among them has a chance of 4·3 / (400·399), under 1e-4.
    const lazy = (_: number, last: boolean): boolean => last;
    const unchecked = await run(400, 16, lazy, false).sets.verify(reference);
    expect(unchecked.passed, unchecked.summary).toBe(true);
    const r = await run(400, 16, lazy).sets.verify(reference);
    expect(r.passed).toBe(false);
    expect(r.summary).toMatch(
      /^FAIL after timing \((mismatch|unwritten)\) in a timed launch drawn at random \(sample epoch \d+\): its outputs/,
    );
  });

  it('fails a kernel that skips one launch in two, kept launches or not', async () => {
    // Skipping leaves the previous outputs of the set (or the poison): wrong for the launch's own inputs.
    const r = await run(400, 16, (sample) => sample % 2 === 0).sets.verify(reference);
    expect(r.passed).toBe(false);
  });

  it('keeps every launch with the same chance, across batches, the first and the last included', () => {
    const samples = 60;
    const runs = 1500;
    const counts = new Array<number>(samples).fill(0);
    for (let k = 0; k < runs; k++) {
      const { kept } = run(samples, 7, () => true);
      // What a slot holds in the end: the last pick into it; every pick is counted here (reservoir sampling picks
      // sample i with chance K / i, and keeps it to the end with chance K / samples).
      for (const s of kept) counts[s]!++;
    }
    // Each of the first K samples is always picked; sample i > K with chance K / (i + 1).
    expect(counts.slice(0, RESERVOIR_SLOTS)).toEqual(new Array(RESERVOIR_SLOTS).fill(runs));
    for (let i = RESERVOIR_SLOTS; i < samples; i++) {
      const expected = (runs * RESERVOIR_SLOTS) / (i + 1);
      expect(Math.abs(counts[i]! - expected), `sample ${i}`).toBeLessThan(6 * Math.sqrt(expected) + 2);
    }
  });

  it('ends with each launch kept with the same chance, K / samples', () => {
    const samples = 40;
    const runs = 1500;
    const counts = new Array<number>(samples).fill(0);
    for (let k = 0; k < runs; k++) for (const s of run(samples, 5, () => true).held) counts[s]!++;
    const expected = (runs * RESERVOIR_SLOTS) / samples;
    for (let i = 0; i < samples; i++) {
      expect(Math.abs(counts[i]! - expected), `sample ${i}`).toBeLessThan(6 * Math.sqrt(expected));
    }
  });

  it('keeps nothing from a batch that failed: its copies may not have run', async () => {
    const device = new FakeDevice();
    const sets = inputSets(device.asDevice, io, SEED, { fresh: true });
    const fresh: FreshSet = freshSetOf(sets.args(0))!;
    const plan = fresh.reservoir.plan([fresh, fresh]);
    expect(plan.snapshots.map((s) => s.sample)).toEqual([0, 1]); // the first K samples fill the slots
    plan.failed();
    const r = await sets.verify(reference);
    expect(r.trials).toHaveLength(1);
    expect(r.summary).not.toMatch(/drawn at random/);
  });
});
