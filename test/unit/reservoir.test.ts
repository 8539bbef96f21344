// SPDX-License-Identifier: MIT
// The re-check of timed launches drawn at random (input-sets.ts's reservoir), over a fake device: this file plays the
// sampler's part (native/bench.cc), sample by sample: the set's fresh inputs for the sample's epoch (in full, or the
// sparse refresh of a drawn launch, which the plan moves onto the set of the launch before it), the kernel, and the
// device copies a snapshot asks for after it. A kernel that does its work only on each set's last launch passes the
// re-check of the sets' last launches, and fails the one of the kept launches; a cache keyed on the input pointer and
// a few sampled inputs, or on a checksum of some, never hits on fresh inputs (so passes), and hits on a drawn
// launch's sparse refresh, whose replayed outputs fail.
import { describe, expect, it } from 'vitest';
import { type ArgSpec, parseArgSpecs } from '../../lib/measure/argspec.js';
import { SPARSE_CHANGES, epochState, sparsePositions } from '../../lib/measure/device-fill.js';
import { type FreshSet, type Lineage, RESERVOIR_SLOTS, freshSetOf, inputSets } from '../../lib/measure/input-sets.js';
import { drawSources, prepareInputs } from '../../lib/measure/inputs.js';
import { splitmix64 } from '../../lib/measure/random.js';
import { FakeDevice, view } from './fake-device.js';

const n = 16;
const SEED = 42;
const SETS = 4;
const ioOf = (length: number): ArgSpec[] =>
  parseArgSpecs([`x@ptr:f32[${length}]=uniform(-1,1)`, `y@ptr:f32[${length}]:out`, `n@i32=${length}`]);
const io = ioOf(n);
const reference = (args: unknown[]): void => {
  const [x, y] = args as [Float32Array, Float32Array];
  for (let i = 0; i < x.length; i++) y[i] = Math.fround(3 * x[i]!);
};

/** Does set `set`'s work on `args` (y = 3x), or leaves y as it is when `work` is false. */
function kernel(args: unknown[], work: boolean): void {
  if (!work) return;
  const x = view(Float32Array, args[0]);
  const y = view(Float32Array, args[1]);
  for (let i = 0; i < x.length; i++) y[i] = Math.fround(3 * x[i]!);
}

/** A kernel of the fake device: its arguments, the sample it is timed in, and whether it is its set's last launch. */
type FakeLaunch = (args: unknown[], sample: number, last: boolean) => void;

/**
 * What the fill launches of a sample leave in set `set`'s input `x` (as the fill kernel writes it): with `sparse`,
 * its current values but at the sparse refresh's positions, where they become the epoch's; else all the epoch's.
 */
function refresh(args: unknown[], set: number, epoch: number, sparse: boolean, ios: readonly ArgSpec[]): void {
  const seed = splitmix64(BigInt(SEED) + 1000n + BigInt(set));
  const values = prepareInputs(ios, seed, undefined, epoch).values[0] as Float32Array;
  const x = view(Float32Array, args[0]);
  if (!sparse) {
    x.set(values);
    return;
  }
  const source = drawSources(ios, seed)[0]!;
  for (const k of sparsePositions(epochState(source.state, epoch), source.first, x.length, SPARSE_CHANGES)) {
    x[k] = values[k]!;
  }
}

/**
 * Runs `samples` launches over the sets in batches of `batch`, as bench() would with fresh inputs: each sample's
 * inputs regenerated for its epoch (a drawn launch's sparsely, on the set the plan moved it to), `launch` running
 * the kernel (`last`: no later launch on the same set), and the reservoir's copies after the launches it picked.
 * `keep` false: no reservoir, so every refresh is in full (fresh inputs alone).
 */
function runWith(samples: number, batch: number, launch: FakeLaunch, keep = true, ios: readonly ArgSpec[] = io) {
  const device = new FakeDevice();
  const sets = inputSets(device.asDevice, ios, SEED, { fresh: true });
  const args = Array.from({ length: SETS }, (_, k) => sets.args(k));
  const fresh = args.map((a) => freshSetOf(a)!);
  // Every batch planned first, so that `last` is known: a plan only moves samples, it never waits on a launch.
  const plans = [];
  for (let first = 0; first < samples; first += batch) {
    const order = Array.from({ length: Math.min(batch, samples - first) }, (_, i) => {
      const k = first + i;
      return (k * 7 + (k >> 2)) % SETS;
    });
    plans.push(keep ? fresh[0]!.reservoir.plan(order, fresh) : { order, sparse: order.map(() => false) });
  }
  const order = plans.flatMap((p) => p.order);
  const sparse = plans.flatMap((p) => p.sparse);
  const lastOf = new Map(order.map((set, i) => [set, i]));
  const kept: number[] = [];
  /** By slot (its first copy's destination): the sample whose outputs it holds now. */
  const holds = new Map<bigint, number>();
  let epoch = 1;
  plans.forEach((plan, b) => {
    const lineages: Lineage[] = [];
    plan.order.forEach((set, i) => {
      const sample = b * batch + i;
      const e = epoch++;
      refresh(args[set]!, set, e, plan.sparse[i]!, ios);
      launch(args[set]!, sample, lastOf.get(set) === sample);
      for (const snap of 'snapshots' in plan ? plan.snapshots : []) {
        if (snap.sample !== i) continue;
        kept.push(sample);
        holds.set(snap.copies[0]!.to, sample);
        for (const c of snap.copies) device.copy(c.from, c.to, c.bytes);
      }
      lineages.push(fresh[set]!.used(e, plan.sparse[i]));
    });
    if ('ran' in plan) plan.ran(lineages);
  });
  return { sets, kept, held: [...holds.values()], order, sparse };
}

/** runWith() with the kernel that works when `works` says so. */
function run(samples: number, batch: number, works: (sample: number, last: boolean) => boolean, keep = true) {
  return runWith(samples, batch, (args, sample, last) => kernel(args, works(sample, last)), keep);
}

/**
 * A cache of four slots, as test/adversarial's replay kernels keep: keyed by `keyOf` (the launch's arguments), a hit
 * copies the slot's outputs, a miss computes (y = 3x) and fills the next slot. Counts its hits.
 */
function replaying(keyOf: (args: unknown[]) => string) {
  const slots: { key: string; y: Float32Array }[] = [];
  const cache = { hits: 0, launch: undefined as unknown as FakeLaunch };
  cache.launch = (args) => {
    const key = keyOf(args);
    const slot = slots.find((s) => s.key === key);
    const y = view(Float32Array, args[1]);
    if (slot !== undefined) {
      cache.hits++;
      y.set(slot.y);
      return;
    }
    kernel(args, true);
    slots.push({ key, y: new Float32Array(y) });
    if (slots.length > 4) slots.shift();
  };
  return cache;
}

/** replay_sampled's key: the input pointer and the bits of the first, the middle and the last input. */
const sampledKey = (args: unknown[]): string => {
  const x = view(Int32Array, args[0]);
  return `${(args[0] as { ptr: bigint }).ptr}:${x[0]}:${x[x.length >> 1]}:${x[x.length - 1]}`;
};

/** replay_checksum's key: the bits of 256 inputs at an even stride, not the pointer. */
const checksumKey = (args: unknown[]): string => {
  const x = view(Int32Array, args[0]);
  const stride = Math.max(1, Math.floor(x.length / 256));
  const sample: number[] = [];
  for (let s = 0; s < 256 && s * stride < x.length; s++) sample.push(x[s * stride]!);
  return sample.join(',');
};

describe('the re-check of timed launches drawn at random', () => {
  it('passes an honest kernel, its kept launches checked besides each set’s last', async () => {
    const { sets, sparse } = run(200, 16, () => true);
    expect(sparse).toContain(true); // the inputs of a sparse refresh, rebuilt by verify(), are what the kernel read
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

  it.each([
    ['the input pointer and three sampled inputs (replay_sampled)', 1 << 12, sampledKey],
    ['a checksum of 1 in 4096 inputs (replay_checksum)', 1 << 16, checksumKey],
  ] as const)('fails a cache keyed on %s, which fresh inputs alone never let hit', async (_, length, keyOf) => {
    const ios = ioOf(length);
    const ref = (args: unknown[]): void => reference(args);
    // Fresh inputs alone: every launch misses and computes, so every output checked is right.
    const alone = replaying(keyOf);
    const honest = await runWith(120, 16, alone.launch, false, ios).sets.verify(ref);
    expect(alone.hits).toBe(0);
    expect(honest.passed, honest.summary).toBe(true);
    // A drawn launch runs right after one on the same set, a few of its inputs changed: the key sees none of them
    // (each kept launch escapes with a chance of 8 · 3 / 4096 or 8 / 4096), and the replayed outputs are stale.
    const cache = replaying(keyOf);
    const r = await runWith(120, 16, cache.launch, true, ios).sets.verify(ref);
    expect(cache.hits).toBeGreaterThan(0);
    expect(r.passed).toBe(false);
    // A set's last launch may be a drawn one too, and fail first: the drawn launches' own trials are the last ones.
    expect(r.summary).toMatch(/^FAIL after timing \(mismatch\)/);
    expect(r.trials.slice(-RESERVOIR_SLOTS).some((t) => !t.passed)).toBe(true);
  });

  it('moves a kept launch onto the set of the launch before it, sparsely refreshed, but first after a failure', () => {
    const device = new FakeDevice();
    const sets = inputSets(device.asDevice, io, SEED, { fresh: true });
    const fresh = Array.from({ length: SETS }, (_, k) => freshSetOf(sets.args(k))!);
    // The first K samples are always kept: the first has no launch before it, the second follows it.
    const a = fresh[0]!.reservoir.plan([2, 3], fresh);
    expect(a.order).toEqual([2, 2]);
    expect(a.sparse).toEqual([false, true]);
    expect(a.snapshots.map((x) => x.sample)).toEqual([0, 1]);
    a.ran(a.order.map((k, i) => fresh[k]!.used(i + 1, a.sparse[i])));
    expect(fresh[2]!.used(9, true)).toEqual({ base: 1, sparse: [2, 9] });
    // A failed batch may have refreshed any set: what the next batch's first sample runs on is not known.
    fresh[0]!.reservoir.plan([0], fresh).failed();
    let b = fresh[0]!.reservoir.plan([3, 0], fresh);
    while (b.snapshots[0]?.sample !== 0) {
      b.failed(); // until the batch's first sample is drawn, each batch failed
      b = fresh[0]!.reservoir.plan([3, 0], fresh);
    }
    expect(b.sparse[0]).toBe(false);
    expect(b.order[0]).toBe(3);
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
    const plan = fresh.reservoir.plan([0, 0], [fresh]);
    expect(plan.snapshots.map((s) => s.sample)).toEqual([0, 1]); // the first K samples fill the slots
    plan.failed();
    const r = await sets.verify(reference);
    expect(r.trials).toHaveLength(1);
    expect(r.summary).not.toMatch(/drawn at random/);
  });
});
