// SPDX-License-Identifier: MIT
// Fresh inputs through bench()'s Session (session.ts) over a stub native layer that plays native/bench.cc: every
// sample writes its epoch, runs its input set's refresh launches (the fill kernel's arithmetic, emulated here for
// uniform f32), the kernel, and the snapshot copies after it. A kernel that caches its outputs by the input pointer
// and three sampled inputs (test/adversarial's replay_sampled) never hits on full refreshes; the launches drawn for
// the re-check run right after one on the same set with a sparse refresh, where it hits and fails verify(), while an
// honest kernel passes on the same inputs.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BenchSpec, Native } from '../../lib/core/native.js';
import type { Device, Kernel, LaunchConfig } from '../../lib/core/index.js';
import { splitmix64 } from '../../lib/measure/random.js';
import { FakeDevice, view } from './fake-device.js';

/** What a bound launch's slot runs: the stub's launches find it here. */
const stub = vi.hoisted(() => ({
  slots: new Map<number, (epoch: number) => void>(),
  specs: [] as { order: number[]; refresh: number[][]; snapshots: number[] }[],
}));

vi.mock('../../lib/core/native.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/core/native.js')>();
  const fake: Partial<Native> = {
    memHostAlloc: () => new ArrayBuffer(8),
    memHostGetDevicePointer: () => 0xf1a6n,
    ctxSetLimit: () => {},
    launchKernel: (slot) => stub.slots.get(slot)!(0),
    benchSamples: (spec: BenchSpec) => {
      stub.specs.push({
        order: [...spec.order],
        refresh: spec.refresh ?? [],
        snapshots: (spec.snapshots ?? []).map((x) => x.sample),
      });
      spec.order.forEach((k, i) => {
        const epoch = (spec.epochBase ?? 0) + i;
        for (const fill of spec.refresh?.[k] ?? []) stub.slots.get(fill)!(epoch);
        stub.slots.get(spec.slots[k]!)!(epoch);
        for (const snap of spec.snapshots ?? []) {
          if (snap.sample !== i) continue;
          for (const [from, to, bytes] of snap.copies) copy(BigInt(from), BigInt(to), Number(bytes));
        }
      });
      return new Float64Array(spec.order.length * 3).map((_, j) => (j % 3 === 2 ? 1500 : 1));
    },
  };
  return { ...real, getNative: () => fake as Native };
});

vi.mock('../../lib/core/program.js', () => ({
  Program: class {
    compile() {
      return {};
    }
  },
}));

const { Session } = await import('../../lib/measure/session.js');
const { inputSets } = await import('../../lib/measure/input-sets.js');
const { parseArgSpecs } = await import('../../lib/measure/argspec.js');
const { RESERVOIR_SLOTS } = await import('../../lib/measure/input-sets.js');

const N = 1 << 12;
const IO = parseArgSpecs([`x@ptr:f32[${N}]=uniform(-2,2)`, `y@ptr:f32[${N}]:out`, `n@i32=${N}`]);
const GAMMA = 0x9e3779b97f4a7c15n;
const MASK = (1n << 64n) - 1n;

let device: ReturnType<typeof gpu>;
/** A device-to-device copy on the current fake device (a snapshot). */
function copy(from: bigint, to: bigint, bytes: number): void {
  device.copy(from, to, bytes);
}

/** The bytes at a fake device address (FakeBuffer.ptr's encoding). */
function at(address: bigint, bytes: number): Uint8Array {
  const base = device.buffers[Number(address >> 32n) - 1]!.memory;
  return new Uint8Array(base.buffer, base.byteOffset + Number(address & 0xffffffffn), bytes);
}

/**
 * The fill kernel (device-fill.ts's cudakit_fill) for a uniform f32 buffer, in BigInt arithmetic: all n elements,
 * or `changes` of them at the positions the kernel hashes, each the value of the epoch's draw at its index.
 */
function fill(args: readonly unknown[], epoch: number): void {
  const [ptr, n, dtype, kind, a, b, state0, first, , epochPtr, changes] = args as [
    bigint,
    bigint,
    number,
    number,
    number,
    number,
    bigint,
    bigint,
    bigint,
    bigint,
    bigint,
  ];
  expect([dtype, kind]).toEqual([0, 0]);
  const state = epochPtr !== 0n && epoch !== 0 ? state0 ^ splitmix64(BigInt(epoch)) : state0;
  const spot = splitmix64(state ^ 0x5851f42d4c957f2dn);
  const out = new Float32Array(at(ptr, Number(n) * 4).slice().buffer);
  const target = at(ptr, Number(n) * 4);
  const count = changes === 0n ? n : changes;
  for (let j = 0n; j < count; j++) {
    const i = changes === 0n ? j : splitmix64((spot + (first + j) * GAMMA) & MASK) % n;
    const z = splitmix64((state + (first + i) * GAMMA) & MASK);
    out[Number(i)] = a + b * (Number(z >> 11n) / 2 ** 53);
  }
  target.set(new Uint8Array(out.buffer));
}

/** A fake device with what the sampler asks of one: a context, a stream, modules whose kernels bind launches. */
function gpu() {
  const d = new FakeDevice();
  let slot = 100;
  const kernelOf = (name: string, run: (args: readonly unknown[], epoch: number) => void) => ({
    name,
    device: d,
    handle: BigInt(slot),
    bindLaunch(_config: LaunchConfig, args: readonly unknown[]) {
      const s = slot++;
      stub.slots.set(s, (epoch) => run(args, epoch));
      return { slot: s, release: () => stub.slots.delete(s) };
    },
  });
  return Object.assign(d, {
    ctx: 0xc7n,
    multiprocessorCount: 4,
    l2CacheBytes: 1024,
    stream: { handle: 0x5ea0n, synchronize: () => {} },
    createStream() {
      return this.stream;
    },
    loadModule: () => ({ getKernel: (name: string) => kernelOf(name, fill) }),
    kernelOf,
  });
}

/** y = f(x), f as map-reference.cu's (64 steps), in f32. */
const f = (v: number): number => {
  let x = Math.fround(v);
  for (let step = 0; step < 64; step++) {
    x = Math.fround(Math.fround(x * Math.fround(0.999)) + Math.fround(Math.fround(0.01) * Math.fround(Math.sin(x))));
  }
  return x;
};
const reference = (args: unknown[]): void => {
  const [x, y] = args as [Float32Array, Float32Array];
  for (let i = 0; i < x.length; i++) y[i] = f(x[i]!);
};

/** replay_sampled: four slots keyed on the input pointer and the bits of x[0], x[n/2], x[n-1]; a hit copies. */
function replaySampled() {
  const slots: { key: string; y: Float32Array }[] = [];
  const seen = { hits: 0 };
  const run = (args: readonly unknown[]): void => {
    const x = view(Int32Array, args[0]);
    const y = view(Float32Array, args[1]);
    const key = `${(args[0] as { ptr: bigint }).ptr}:${x[0]}:${x[N >> 1]}:${x[N - 1]}`;
    const slot = slots.find((s) => s.key === key);
    if (slot !== undefined) {
      seen.hits++;
      y.set(slot.y);
      return;
    }
    const xs = view(Float32Array, args[0]);
    for (let i = 0; i < N; i++) y[i] = f(xs[i]!);
    slots.push({ key, y: new Float32Array(y) });
    if (slots.length > 4) slots.shift();
  };
  return { run, seen };
}

afterEach(() => {
  stub.slots.clear();
  stub.specs = [];
});

describe('fresh inputs through a Session', () => {
  /** Samples in batches of 16 through a Session over the sets, then verify(). */
  async function timed(
    run: (args: readonly unknown[]) => void,
    batches: number,
    keeps = true,
    io = IO,
    ref = reference,
  ) {
    device = gpu();
    const sets = inputSets(device as unknown as Device, io, 42, { fresh: true });
    const kernel = device.kernelOf('candidate', run) as unknown as Kernel;
    const s = new Session({ kernel, config: { grid: N / 256, block: 256 }, args: sets.args }, 'cold', 4, 'events');
    s.keepsLaunches = keeps;
    try {
      s.prime();
      for (let b = 0; b < batches; b++) s.take(16, true);
    } finally {
      s.dispose();
    }
    return sets.verify(ref);
  }

  it('runs a drawn launch on the set before it, sparsely refreshed: launch k + 4, with its own fills', async () => {
    const r = await timed(replaySampled().run, 1);
    const spec = stub.specs[0]!;
    expect(spec.refresh).toHaveLength(8);
    // The first two samples are always drawn: the second moved onto the first's set, with the sparse refresh.
    expect(spec.snapshots.slice(0, 2)).toEqual([0, 1]);
    expect(spec.order[0]).toBeLessThan(4);
    expect(spec.order[1]).toBe(spec.order[0]! + 4);
    for (const [i, k] of spec.order.entries()) {
      if (k >= 4) expect(spec.order[i - 1]! % 4, `sample ${i}`).toBe(k - 4);
    }
    expect(r.trials).toHaveLength(6);
  });

  it('passes an honest kernel, whose drawn launches ran on sparsely refreshed inputs', async () => {
    const honest = (args: readonly unknown[]): void => {
      const x = view(Float32Array, args[0]);
      const y = view(Float32Array, args[1]);
      for (let i = 0; i < N; i++) y[i] = f(x[i]!);
    };
    const r = await timed(honest, 4);
    expect(r.passed, r.summary).toBe(true);
    expect(stub.specs.flatMap((x) => x.order).some((k) => k >= 4)).toBe(true);
  });

  it('rebuilds an in-place output after a sparse refresh, which fills it in full', async () => {
    const io = parseArgSpecs([`x@ptr:f32[${N}]=uniform(-1,1)`, `y@ptr:f32[${N}]=uniform(0,1):out`, `n@i32=${N}`]);
    const accumulate = (args: readonly unknown[]): void => {
      const x = view(Float32Array, args[0]);
      const y = view(Float32Array, args[1]);
      for (let i = 0; i < N; i++) y[i] = Math.fround(Math.fround(0.5 * y[i]!) + x[i]!);
    };
    const r = await timed(accumulate, 4, true, io, (args) => {
      const [x, y] = args as [Float32Array, Float32Array];
      for (let i = 0; i < N; i++) y[i] = Math.fround(Math.fround(0.5 * y[i]!) + x[i]!);
    });
    expect(r.passed, r.summary).toBe(true);
    expect(stub.specs.flatMap((x) => x.order).some((k) => k >= 4)).toBe(true);
  });

  it('fails replay_sampled on its drawn launches, which fresh inputs alone never let hit', async () => {
    const alone = replaySampled();
    const unchecked = await timed(alone.run, 4, false);
    expect(alone.seen.hits).toBe(0);
    expect(unchecked.passed, unchecked.summary).toBe(true);
    const cache = replaySampled();
    const r = await timed(cache.run, 4);
    expect(cache.seen.hits).toBeGreaterThan(0);
    expect(r.passed).toBe(false);
    // A set's last launch may be a drawn one too, and fail first: the drawn launches' own trials are the last ones.
    expect(r.summary).toMatch(/^FAIL after timing \(mismatch\)/);
    expect(r.trials.slice(-RESERVOIR_SLOTS).some((t) => !t.passed)).toBe(true);
  });
});
