// SPDX-License-Identifier: MIT
// lib/measure/inputs.ts without a GPU: generated values for every init kind (exact bytes, sequences along the last
// dimension, per-buffer seeds), poison, guard zones, zeroing before free, and inputSets() (input-sets.ts) over a fake
// device.
import { describe, expect, it } from 'vitest';
import { CudaError, fromDeviceBytes, toDeviceBytes } from '../../lib/core/index.js';
import { type BufferArgSpec, type InitSpec, parseArgSpec, parseArgSpecs, roleOf } from '../../lib/measure/argspec.js';
import {
  type GuardedBuffer,
  generateBytes,
  poisonBytes,
  prepareInputs,
  releaseBuffers,
  startBytes,
  uploadGuarded,
} from '../../lib/measure/inputs.js';
import { inputSets } from '../../lib/measure/input-sets.js';
import { createRng } from '../../lib/measure/random.js';
import { FakeDevice, asBuffers } from './fake-device.js';

const buffer = (text: string): BufferArgSpec => {
  const s = parseArgSpec(text);
  if (s.kind !== 'buffer') throw new Error(`${text} is not a buffer`);
  return s;
};
const values = (text: string, rng = createRng(1)): number[] => {
  const spec = buffer(text);
  return Array.from(fromDeviceBytes(spec.dtype, generateBytes(spec, spec.init!, rng)), Number);
};

describe('generated values', () => {
  it('fill constants, zeros, ones and sequences over the whole buffer', () => {
    expect(values('ptr:i32[4]=const(7)')).toEqual([7, 7, 7, 7]);
    expect(values('ptr:f32[3]=zeros')).toEqual([0, 0, 0]);
    expect(values('ptr:u8[3]=ones')).toEqual([1, 1, 1]);
    expect(values('ptr:i16[5]=arange')).toEqual([0, 1, 2, 3, 4]);
    expect(values('ptr:f32[4]=seq(1,0.5)')).toEqual([1, 1.5, 2, 2.5]);
    expect(values('ptr:f32[2,3]=seq(1,2)')).toEqual([1, 3, 5, 7, 9, 11]); // shaped, but along the whole buffer
    expect(values('ptr:u8[300]=arange').slice(254, 258)).toEqual([254, 255, 0, 1]); // wraps as u8 does
  });

  it('run a sequence along the last dimension, repeated over the leading ones: (i mod lastDim)·step + start', () => {
    expect(values('ptr:f32[2,3]=seq(10,2,along=last)')).toEqual([10, 12, 14, 10, 12, 14]);
    expect(values('ptr:i32[2,2,4]=arange(along=last)')).toEqual([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
    expect(values('ptr:i32[5]=seq(3,1,along=last)')).toEqual([3, 4, 5, 6, 7]); // no shape: the whole buffer
    const shaped: BufferArgSpec = {
      kind: 'buffer',
      dtype: 'f16',
      length: 6,
      shape: [3, 2],
      role: 'in',
      init: undefined,
    };
    const init: InitSpec = { kind: 'seq', start: 0, step: 0.5, along: 'last' };
    expect(Array.from(fromDeviceBytes('f16', generateBytes(shaped, init, createRng(1))))).toEqual([
      0, 0.5, 0, 0.5, 0, 0.5,
    ]);
    expect(values('ptr:f32[2,3]=seq(10,2,along=all)')).toEqual([10, 12, 14, 16, 18, 20]);
  });

  it('take exact bytes as they are (a copy), NaN payloads and all', () => {
    const bytes = new Uint8Array([0x01, 0x00, 0xc0, 0x7f, 0, 0, 0x80, 0x3f]); // a NaN with payload 1, then 1.0
    const spec: BufferArgSpec = { kind: 'buffer', dtype: 'f32', length: 2, role: 'in', init: { kind: 'data', bytes } };
    const out = generateBytes(spec, spec.init!, createRng(1));
    expect(out).toEqual(bytes);
    expect(out).not.toBe(bytes);
    const inputs = prepareInputs([spec], 5n);
    expect(inputs.bytes[0]).toEqual(bytes); // the device gets these bits exactly
    expect(inputs.values[0]![1]).toBe(1);
    expect(values('ptr:u16[2]=data(AQACAA==)')).toEqual([1, 2]);
  });

  it('draw random values within their bounds, rounded through the device type', () => {
    const u = values('ptr:f32[1000]=uniform(-2,3)');
    expect(Math.min(...u)).toBeGreaterThanOrEqual(-2);
    expect(Math.max(...u)).toBeLessThan(3);
    const r = values('ptr:i8[1000]=randint(-5,5)');
    expect(new Set(r)).toEqual(new Set([-5, -4, -3, -2, -1, 0, 1, 2, 3, 4]));
    const h = values('ptr:f16[100]=normal(0,1)');
    for (const x of h) expect(Math.fround(x)).toBe(x);
    // fp8: one byte each, the f64 draws rounded as CUDA rounds them.
    const wide = values('ptr:f64[1000]=uniform(-440,440)');
    const spec = buffer('ptr:f8e4m3[1000]=uniform(-440,440)');
    const bytes = generateBytes(spec, spec.init!, createRng(1));
    expect(bytes).toEqual(toDeviceBytes('f8e4m3', wide));
    expect(() => buffer('ptr:f8e4m3[4]=uniform(-600,600)')).toThrow(/within ±448 for f8e4m3/);
  });
});

describe('prepareInputs', () => {
  it('fills inputs and in-place outputs, not pure outputs, and gives the reference the values the kernel reads', () => {
    const io = parseArgSpecs(['ptr:f16[8]=uniform(-1,1)', 'ptr:f16[8]=ones:out', 'ptr:f16[8]:out', 'i32=8']);
    expect(io.map((a) => (a.kind === 'buffer' ? roleOf(a) : 'scalar'))).toEqual(['in', 'inout', 'out', 'scalar']);
    const inputs = prepareInputs(io, 1n);
    expect(inputs.bytes.map((b) => b?.length)).toEqual([16, 16, undefined, undefined]);
    expect(inputs.values[0]).toEqual(fromDeviceBytes('f16', inputs.bytes[0]!)); // rounded to half
    expect(Array.from(inputs.values[1]!)).toEqual(new Array(8).fill(1));
    expect(prepareInputs(io, 1n)).toEqual(inputs); // the same seed, the same inputs
    expect(prepareInputs(io, 2n).bytes[0]).not.toEqual(inputs.bytes[0]);
  });

  it('draws unseeded buffers from one generator in argument order, and a seeded buffer from its own', () => {
    const a = 'x@ptr:f32[16]=uniform(0,1,seed=7)';
    const b = 'ptr:f32[16]=uniform(0,1)';
    const c = 'ptr:f32[16]=normal(0,1)';
    const first = prepareInputs(parseArgSpecs([a, b, c]), 99n);
    const moved = prepareInputs(parseArgSpecs([b, c, a]), 99n);
    expect(moved.bytes[2]).toEqual(first.bytes[0]); // the seeded buffer does not depend on the others' order
    expect(moved.bytes[0]).toEqual(first.bytes[1]); // nor do the others depend on it
    const alone = prepareInputs(parseArgSpecs([c, a]), 99n);
    expect(alone.bytes[1]).toEqual(first.bytes[0]);
    expect(alone.bytes[0]).not.toEqual(first.bytes[2]); // unseeded: its values follow the buffers before it
    expect(prepareInputs(parseArgSpecs([a]), 100n).bytes[0]).not.toEqual(first.bytes[0]); // still varies by trial
    expect(prepareInputs(parseArgSpecs(['ptr:f32[16]=uniform(0,1,seed=8)']), 99n).bytes[0]).not.toEqual(first.bytes[0]);
  });
});

describe('poison', () => {
  it('repeats one element (or its complement) over every length, the last element included', () => {
    for (const dtype of ['u8', 'f16', 'f32', 'f64'] as const) {
      for (const length of [0, 1, 3, 1000, 4097]) {
        for (const alternate of [false, true]) {
          const one = poisonBytes(dtype, 1, alternate);
          const all = poisonBytes(dtype, length, alternate);
          expect(all.length).toBe(length * one.length);
          for (let i = 0; i < all.length; i++) if (all[i] !== one[i % one.length]) expect.fail(`${dtype} byte ${i}`);
        }
      }
    }
    expect(poisonBytes('f32', 1, true)).toEqual(poisonBytes('f32', 1).map((b) => ~b & 0xff));
  });

  it('is NaN for every float type and 0xDEADBEEF for integers', () => {
    expect(Number.isNaN(new Float32Array(poisonBytes('f32', 3).buffer)[2])).toBe(true);
    expect(Number.isNaN(new Float64Array(poisonBytes('f64', 2).buffer)[1])).toBe(true);
    expect(Number.isNaN(fromDeviceBytes('f16', poisonBytes('f16', 2))[0] as number)).toBe(true);
    expect(Number.isNaN(fromDeviceBytes('bf16', poisonBytes('bf16', 2))[1] as number)).toBe(true);
    expect(Number.isNaN(fromDeviceBytes('f8e4m3', poisonBytes('f8e4m3', 2))[1] as number)).toBe(true);
    expect(Number.isNaN(fromDeviceBytes('f8e5m2', poisonBytes('f8e5m2', 2))[1] as number)).toBe(true);
    expect(new Uint32Array(poisonBytes('u32', 2).buffer)[1]).toBe(0xdeadbeef);
    expect(new BigUint64Array(poisonBytes('u64', 1).buffer)[0]).toBe(0xdeadbeefdeadbeefn);
    expect(new Uint16Array(poisonBytes('i16', 1).buffer)[0]).toBe(0xbeef);
    expect(poisonBytes('u8', 4)).toEqual(new Uint8Array([0xef, 0xef, 0xef, 0xef]));
  });

  it('has an alternate, its bitwise complement, that no element can share with it', () => {
    expect(poisonBytes('u8', 2, true)).toEqual(new Uint8Array([0x10, 0x10]));
    expect(new Uint32Array(poisonBytes('u32', 1, true).buffer)[0]).toBe(~0xdeadbeef >>> 0);
    const p = poisonBytes('f32', 4);
    const q = poisonBytes('f32', 4, true);
    for (let i = 0; i < p.length; i++) expect(p[i]! ^ q[i]!).toBe(0xff);
  });

  it('is where a launch starts for pure outputs; everything else starts from its initial bytes', () => {
    const io = parseArgSpecs(['ptr:u8[2]=const(5)', 'ptr:u8[2]:out']);
    const inputs = prepareInputs(io, 1n);
    expect(startBytes(io[0] as BufferArgSpec, inputs, 0)).toEqual(new Uint8Array([5, 5]));
    expect(startBytes(io[1] as BufferArgSpec, inputs, 1)).toEqual(new Uint8Array([0xef, 0xef]));
    expect(startBytes(io[1] as BufferArgSpec, inputs, 1, true)).toEqual(new Uint8Array([0x10, 0x10]));
  });
});

describe('guarded device buffers', () => {
  it('surround every buffer with the same random guard on both sides and give the kernel the middle', () => {
    const device = new FakeDevice();
    const io = parseArgSpecs(['ptr:i32[4]=arange', 'ptr:i32[4]:out', 'i32=4']);
    const inputs = prepareInputs(io, 1n);
    const buffers: GuardedBuffer[] = [];
    const args = uploadGuarded(device.asDevice, io, inputs, 256, createRng(3), buffers);
    expect(args[2]).toBe(4);
    expect(buffers).toHaveLength(2);
    for (const i of [0, 1]) {
      const whole = (buffers[i]!.base as unknown as { memory: Uint8Array }).memory;
      expect(whole.length).toBe(256 + 16 + 256);
      expect(whole.subarray(0, 256)).toEqual(buffers[i]!.guard);
      expect(whole.subarray(272)).toEqual(buffers[i]!.guard);
      expect(args[i]).toBe(buffers[i]!.view);
      expect(buffers[i]!.view.byteLength).toBe(16);
    }
    expect(buffers[0]!.view.copyToHost()).toEqual(toDeviceBytes('i32', [0, 1, 2, 3]));
    expect(buffers[1]!.view.copyToHost()).toEqual(poisonBytes('i32', 4));
    expect(new Set(buffers[0]!.guard).size).toBeGreaterThan(100); // random bytes, not a pattern
  });
});

describe('releasing buffers', () => {
  it('with zeroOnFree, zeroes every buffer and waits for it before freeing any', () => {
    const device = new FakeDevice();
    const list = [device.alloc(8).fill(7), device.alloc(8).fill(9), undefined];
    device.log.length = 0;
    releaseBuffers(asBuffers(list.filter((b) => b !== undefined)), true);
    expect(device.log).toEqual(['fill 0', 'fill 1', 'synchronize', 'dispose 0', 'dispose 1']);
    expect(list.every((b) => b === undefined || b.memory.every((x) => x === 0))).toBe(true);
  });

  it('without it, only frees them; buffers freed already are left alone', () => {
    const device = new FakeDevice();
    const a = device.alloc(8).fill(7);
    const b = device.alloc(8);
    b.dispose();
    device.log.length = 0;
    releaseBuffers(asBuffers([a, b]), false);
    expect(device.log).toEqual(['dispose 0']);
    expect(a.memory[0]).toBe(7);
  });

  it('frees what it can and rethrows when zeroing fails for another reason than a lost context', () => {
    const device = new FakeDevice();
    const a = device.alloc(8);
    a.fill = () => {
      throw new RangeError('boom');
    };
    const b = device.alloc(8);
    expect(() => releaseBuffers(asBuffers([a, b]), true)).toThrow('boom');
    expect([a.disposed, b.disposed]).toEqual([true, true]);
  });
});

describe('inputSets over a fake device', () => {
  const io = parseArgSpecs(['x@ptr:f32[6]=uniform(-1,1)', 'y@ptr:f32[6]:out', 'a@f32=2', 'n@i32=6']);
  const reference = (args: unknown[]): void => {
    const [x, y, a] = args as [Float32Array, Float32Array, number];
    for (let i = 0; i < x.length; i++) y[i] = Math.fround(a * x[i]!);
  };
  /** What a correct kernel would leave in set k's output. */
  const runKernel = (args: unknown[], wrongAt = -1): void => {
    const [x, y] = args as unknown as [{ copyToHost(): Uint8Array }, { copyFromHost(b: Uint8Array): void }];
    const xs = fromDeviceBytes('f32', x.copyToHost()) as Float32Array;
    const ys = xs.map((v, i) => (i === wrongAt ? 0.5 : Math.fround(2 * v)));
    y.copyFromHost(new Uint8Array(ys.buffer));
  };

  it('makes each set on first use, seeded per set, with outputs poisoned', () => {
    const device = new FakeDevice();
    const sets = inputSets(device.asDevice, io, 42);
    const a0 = sets.args(0);
    const a1 = sets.args(1);
    expect(a0.slice(2)).toEqual([2, 6]);
    const x0 = (a0[0] as unknown as { copyToHost(): Uint8Array }).copyToHost();
    const x1 = (a1[0] as unknown as { copyToHost(): Uint8Array }).copyToHost();
    expect(x0).not.toEqual(x1);
    expect((a0[1] as unknown as { copyToHost(): Uint8Array }).copyToHost()).toEqual(poisonBytes('f32', 6));
    expect(device.buffers).toHaveLength(4);
  });

  it("re-checks every set's outputs against the reference on that set's inputs", async () => {
    const device = new FakeDevice();
    const sets = inputSets(device.asDevice, io);
    for (let k = 0; k < 3; k++) runKernel(sets.args(k));
    const ok = await sets.verify(reference);
    expect(ok.passed).toBe(true);
    expect(ok.trials).toHaveLength(3);
    expect(ok.summary).toMatch(/^PASS after timing: 3 input sets re-checked/);
    runKernel(sets.args(3), 4);
    const bad = await sets.verify(reference);
    expect(bad).toMatchObject({ passed: false, defence: 'mismatch' });
    expect(bad.summary).toBe('FAIL after timing (mismatch) in input set 3');
    expect(bad.mismatches[0]).toMatchObject({ arg: 1, index: 4, actual: 0.5 });
  });

  it('zeroes every buffer before freeing it with zeroOnFree, and only frees it without', () => {
    for (const zeroOnFree of [true, false]) {
      const device = new FakeDevice();
      const sets = inputSets(device.asDevice, io, 42, { zeroOnFree });
      runKernel(sets.args(0));
      runKernel(sets.args(1));
      device.log.length = 0;
      sets.dispose();
      const fills = device.log.filter((e) => e.startsWith('fill'));
      expect(fills).toHaveLength(zeroOnFree ? 4 : 0);
      expect(device.log.filter((e) => e.startsWith('dispose'))).toHaveLength(4);
      expect(device.buffers.every((b) => b.memory.every((x) => x === 0))).toBe(zeroOnFree);
      if (zeroOnFree) expect(device.log.indexOf('synchronize')).toBeLessThan(device.log.indexOf('dispose 0'));
    }
  });

  it('validates its options and io', () => {
    const device = new FakeDevice();
    expect(() => inputSets(device.asDevice, io, 42, { zeroOnFree: 1 as unknown as boolean })).toThrow(
      new TypeError('Expected a boolean for options.zeroOnFree but received 1 of type number'),
    );
    expect(() => inputSets(device.asDevice, io, 42, { zeroOnfree: true } as never)).toThrow(
      /Unknown option options.zeroOnfree/,
    );
    const wrong = [
      { kind: 'buffer', dtype: 'f32', length: 4, role: 'in', init: { kind: 'data', bytes: new Uint8Array(3) } },
    ];
    expect(() => inputSets(device.asDevice, wrong as never)).toThrow(
      new RangeError(
        'Expected exactly 16 bytes (4 × f32) for io[0].init.bytes.byteLength but received 3 of type number',
      ),
    );
  });
});

describe('after a sticky error', () => {
  // Last in this file: a sticky CudaError marks the process's context lost for good.
  it('releasing buffers is silent: the memory went with the context', () => {
    const device = new FakeDevice();
    const a = device.alloc(8);
    a.fill = () => {
      throw new CudaError({ code: 'CUDA_ERROR_ILLEGAL_ADDRESS', api: 'cuMemsetAsync', result: 700, explanation: 'x' });
    };
    expect(() => releaseBuffers(asBuffers([a]), true)).not.toThrow();
    expect(a.disposed).toBe(true);
  });
});
