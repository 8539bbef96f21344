// SPDX-License-Identifier: MIT
// lib/measure/check.ts: each defence on its own, the element comparison (compare-output.ts: tolerance, non-finite
// rules, unwritten and all-zero detection), the determinism rule over two runs (determinism.ts), the result builder
// (check-result.ts), and check() itself over a fake device (with a reference, with a reference in another parameter
// order, and without one). The GPU tier runs the planted faults end to end.
import { describe, expect, it } from 'vitest';
import { CudaError, type Kernel, fromDeviceBytes as decode, toDeviceBytes } from '../../lib/core/index.js';
import { parseArgSpecs } from '../../lib/measure/argspec.js';
import { check, checkWritten, faultOf, modifiedInputElement, outOfBoundsWrite } from '../../lib/measure/check.js';
import { buildCheckResult, trialResult } from '../../lib/measure/check-result.js';
import {
  compareOutput,
  degenerateZeros,
  holdsPoison,
  newComparison,
  nonFiniteAgrees,
  withinTolerance,
} from '../../lib/measure/compare-output.js';
import { compareRuns, determinismFailure, determinismNote, newRunComparison } from '../../lib/measure/determinism.js';
import { poisonBytes } from '../../lib/measure/inputs.js';
import { type FakeBuffer, FakeDevice, fakeKernel, view } from './fake-device.js';

const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

describe('element comparison', () => {
  const run = (dtype: 'f32' | 'i32', got: ArrayBufferView, expected: ArrayLike<number>, atol = 1e-4, rtol = 1e-4) => {
    const c = newComparison();
    compareOutput(1, dtype, bytesOf(got), expected, atol, rtol, c);
    return c;
  };

  it('accepts values within atol + rtol·|ref| and rejects the rest', () => {
    const ok = run('f32', new Float32Array([1.0001, 100.009]), [1, 100]);
    expect(ok.defence).toBeUndefined();
    expect(ok.matched).toBe(2);
    expect(ok.maxAbs).toBeCloseTo(0.009, 5);
    const bad = run('f32', new Float32Array([1, 100.02]), [1, 100]); // 0.02 > 1e-4 + 1e-4 × 100
    expect(bad.defence).toBe('mismatch');
    expect(bad.mismatches).toEqual([{ arg: 1, index: 1, expected: 100, actual: Math.fround(100.02) }]);
  });

  it("reports the worst element's share of its tolerance, which stays meaningful near zero", () => {
    // 1e-5 off a reference of 1e-5 is a 100% relative error yet well inside atol = 1e-4: 10% of the tolerance.
    const near0 = run('f32', new Float32Array([2e-5]), [1e-5]);
    expect(near0.defence).toBeUndefined();
    expect(near0.maxRel).toBeGreaterThan(0.99);
    expect(near0.tolUsed).toBeCloseTo(0.1, 5);
    const edge = run('f32', new Float32Array([100.02]), [100]); // 0.02 / 0.0101: about twice the tolerance
    expect(edge.tolUsed).toBeCloseTo(1.98, 2);
    expect(run('i32', new Int32Array([5]), [5], 0, 0).tolUsed).toBe(0);
    expect(run('i32', new Int32Array([6]), [5.5], 0, 0).tolUsed).toBe(Infinity); // exact types: any difference
  });

  it('integers must match exactly', () => {
    expect(run('i32', new Int32Array([5, 6]), [5, 6], 0, 0).defence).toBeUndefined();
    expect(run('i32', new Int32Array([5, 7]), [5, 6], 0, 0).defence).toBe('mismatch');
  });

  it('NaN and Inf must match the reference exactly; NaN is not a wildcard', () => {
    expect(run('f32', new Float32Array([NaN, Infinity]), [NaN, Infinity]).defence).toBeUndefined();
    expect(run('f32', new Float32Array([1, -Infinity]), [1, Infinity]).defence).toBe('non-finite');
    const nanBits = new Uint32Array([0x7fc00001]); // a NaN that is not the poison pattern
    expect(run('f32', new Float32Array(nanBits.buffer), [2]).defence).toBe('non-finite');
    expect(run('f32', new Float32Array([3]), [NaN]).defence).toBe('non-finite');
  });

  it('names an element that still holds the poison "unwritten"', () => {
    const got = new Float32Array(poisonBytes('f32', 3).buffer);
    got[0] = 1;
    got[1] = 2;
    const c = run('f32', got, [1, 2, 3]);
    expect(c.defence).toBe('unwritten');
    expect(c.mismatches[0]!.index).toBe(2);
  });

  it('flags an all-zero output where the reference is not', () => {
    // within atol, still degenerate
    expect(run('f32', new Float32Array(4), [0, 0, 0, 1e-6], 1e-4, 0).defence).toBe('all-zero');
    expect(run('f32', new Float32Array(4), [0, 0, 0, 0]).defence).toBeUndefined();
  });
});

describe("each dtype's default tolerance, at its boundary (docs/benchmarking.md, 'Tolerances per dtype')", () => {
  /**
   * check() on a one-element output of `dtype` that the kernel writes as `actual` and the reference as `expected`,
   * with the default tolerances unless `tol` is given: 'pass' or the defence.
   */
  const verdict = async (
    dtype: 'f16' | 'bf16' | 'f32' | 'f64' | 'u8' | 'i32' | 'i64',
    actual: number | bigint,
    expected: number | bigint,
    tol?: { atol: number; rtol: number },
  ): Promise<string | undefined> => {
    const device = new FakeDevice();
    const kernel = fakeKernel(device, 'k', ['ptr'], ([y]) =>
      (y as FakeBuffer).memory.set(toDeviceBytes(dtype, [actual])),
    );
    const reference = (args: unknown[]): void => {
      (args[0] as (number | bigint)[])[0] = expected;
    };
    const io = parseArgSpecs([`y@ptr:${dtype}[1]:out`]);
    const config = { grid: 1, block: 1 };
    const r = await check({ kernel: kernel as unknown as Kernel, config }, reference, io, {
      trials: 1,
      guardBytes: 256,
      ...tol,
    });
    return r.passed ? 'pass' : r.defence;
  };

  // The last representable value within the tolerance of the reference passes, the next one up fails: f32 and f64
  // by 1e-4 and 1e-8 absolute plus relative (2e-4 and 2e-8 of 1), f16 and bf16 by 1e-2 + 1e-2 (2e-2 of 1).
  it.each([
    ['f32', 1, 1.0001999139785767, 1.0002000331878662], // f32 neighbours around 1 + 2e-4
    ['f32', 100, 100.01009368896484, 100.01010131835938], // around 100 + 1e-4 + 1e-2: rtol scales with |ref|
    ['f32', -3, -3.0003998279571533, -3.0004000663757324], // and with |ref| below it too
    ['f32', 0, 0.00009999999747378752, 0.00010000000474974513], // around 1e-4: atol alone at zero
    ['f16', 1, 1.01953125, 1.0205078125], // 1 + 20/1024 and 1 + 21/1024
    ['bf16', 1, 1.015625, 1.0234375], // 1 + 2/128 and 1 + 3/128
    ['f64', 1, 1.0000000199999999, 1.00000002], // f64 neighbours around 1 + 2e-8
  ] as const)('%s against %s: %s passes, the next value %s fails', async (dtype, expected, last, next) => {
    expect(await verdict(dtype, last, expected)).toBe('pass');
    expect(await verdict(dtype, next, expected)).toBe('mismatch');
  });

  it('integers of every width compare exactly, 64-bit ones beyond what a double holds', async () => {
    expect(await verdict('u8', 255, 255)).toBe('pass');
    expect(await verdict('u8', 254, 255)).toBe('mismatch');
    expect(await verdict('i32', -7, -7)).toBe('pass');
    expect(await verdict('i32', -6, -7)).toBe('mismatch');
    expect(await verdict('i64', 2n ** 53n + 1n, 2n ** 53n + 1n)).toBe('pass');
    expect(await verdict('i64', 2n ** 53n, 2n ** 53n + 1n)).toBe('mismatch'); // the same double, not the same integer
  });

  it('exactly at atol + rtol·|ref| passes, one ulp beyond fails (tolerances given as options)', async () => {
    const atol = { atol: 2 ** -10, rtol: 0 }; // tolerance 2^-10 at any reference
    expect(await verdict('f32', 1 + 2 ** -10, 1, atol)).toBe('pass');
    expect(await verdict('f32', 1 + 2 ** -10 + 2 ** -23, 1, atol)).toBe('mismatch'); // one f32 ulp above
    expect(await verdict('f32', 1 - 2 ** -10, 1, atol)).toBe('pass');
    expect(await verdict('f32', 1 - 2 ** -10 - 2 ** -24, 1, atol)).toBe('mismatch'); // one f32 ulp below (< 1)
    const rtol = { atol: 0, rtol: 2 ** -4 }; // tolerance 4 · 2^-4 = 0.25 at 4
    expect(await verdict('f32', 4.25, 4, rtol)).toBe('pass');
    expect(await verdict('f32', 4.25 + 2 ** -21, 4, rtol)).toBe('mismatch');
    expect(await verdict('f32', 3.75, 4, rtol)).toBe('pass');
    expect(await verdict('f32', 3.75 - 2 ** -22, 4, rtol)).toBe('mismatch');
    // Integers are exact by default, but an explicit tolerance applies to them too
    expect(await verdict('i32', 9, 8, { atol: 1, rtol: 0 })).toBe('pass');
    expect(await verdict('i32', 10, 8, { atol: 1, rtol: 0 })).toBe('mismatch');
  });
});

describe('two runs on the same inputs', () => {
  const runs = (
    dtype: 'f32' | 'i32' | 'i64',
    first: ArrayBufferView,
    second: ArrayBufferView,
    atol = 1e-4,
    rtol = 1e-4,
  ) => {
    const r = newRunComparison();
    compareRuns(2, dtype, bytesOf(first), bytesOf(second), atol, rtol, r);
    return r;
  };

  it('counts bitwise differences, and those beyond atol + rtol·|first run| apart', () => {
    // 1 → 1.00005: 5e-5 ≤ 1e-4 + 1e-4·1, within; 10 → 10.01: 0.01 > 1e-4 + 1e-3, beyond
    const r = runs('f32', new Float32Array([1, 2, 10, 4]), new Float32Array([1.00005, 2, 10.01, 4]));
    expect(r.differing).toBe(2);
    expect(r.beyondTolerance).toBe(1);
    expect(r.maxAbsDifference).toBeCloseTo(0.01, 5);
    expect(r.firstDiffering.map((m) => m.index)).toEqual([0, 2]);
    expect(r.firstBeyond).toEqual([{ arg: 2, index: 2, expected: 10, actual: Math.fround(10.01) }]);
    expect(runs('f32', new Float32Array([1, 2]), new Float32Array([1, 2]))).toEqual(newRunComparison());
  });

  it('accumulates over outputs and keeps at most 8 examples', () => {
    const r = newRunComparison();
    const a = new Int32Array(20);
    const b = Int32Array.from({ length: 20 }, (_, i) => i % 2);
    compareRuns(1, 'i32', bytesOf(a), bytesOf(b), 0, 0, r);
    compareRuns(3, 'i32', bytesOf(a), bytesOf(b), 0, 0, r);
    expect(r.differing).toBe(20);
    expect(r.beyondTolerance).toBe(20); // integers: exact by default
    expect(r.firstBeyond).toHaveLength(8);
    expect(r.firstBeyond[0]).toEqual({ arg: 1, index: 1, expected: 0, actual: 1 });
  });

  it(
    'NaN payloads and ±0 differ bitwise only; ' +
      'NaN against a number, other infinities, 64-bit integers differ beyond',
    () => {
      const nanA = new Float32Array(new Uint32Array([0x7fc00000]).buffer)[0]!;
      const nanB = new Float32Array(new Uint32Array([0x7fc00001]).buffer)[0]!;
      const within = runs('f32', Float32Array.of(nanA, 0), Float32Array.of(nanB, -0));
      expect(within).toMatchObject({ differing: 2, beyondTolerance: 0 });
      const beyond = runs('f32', Float32Array.of(Number.NaN, Infinity, 1), Float32Array.of(1, -Infinity, Infinity));
      expect(beyond).toMatchObject({ differing: 3, beyondTolerance: 3, maxAbsDifference: 0 });
      expect(runs('i64', BigInt64Array.of(5n, 6n), BigInt64Array.of(5n, 7n), 1, 1)).toMatchObject({
        differing: 1,
        beyondTolerance: 1,
      });
      // an atol for integers applies
      expect(runs('i32', Int32Array.of(5), Int32Array.of(6), 1, 0)).toMatchObject({ differing: 1, beyondTolerance: 0 });
    },
  );

  it('fails beyond the tolerance by default, on any bit with requireDeterminism, and says which', () => {
    const onlyWithin = runs('f32', new Float32Array([1, 2]), new Float32Array([1.00005, 2]));
    expect(determinismFailure(onlyWithin, false)).toBeUndefined();
    expect(determinismFailure(onlyWithin, true)).toEqual({
      detail:
        '1 element differed bitwise between two runs on the same inputs (requireDeterminism), all within ' +
        `tolerance; first: argument 2[0] = 1 in one run, ${Math.fround(1.00005)} in the other`,
      mismatches: onlyWithin.firstDiffering,
    });
    const race = runs('f32', new Float32Array([1, 2, 3]), new Float32Array([1.00005, 7, 9]));
    const failure = determinismFailure(race, false)!;
    expect(failure.detail).toBe(
      '3 elements differed between two runs on the same inputs, 2 beyond tolerance; ' +
        'first: argument 2[1] = 2 in one run, 7 in the other',
    );
    expect(failure.mismatches.map((m) => m.index)).toEqual([1, 2]); // the ones beyond tolerance
    expect(determinismFailure(race, true)!.detail).toMatch(
      /^3 elements differed bitwise .*\(requireDeterminism\), 2 beyond tolerance; first: argument 2\[1\]/,
    );
    expect(determinismFailure(newRunComparison(), true)).toBeUndefined();
  });

  it('notes differences within tolerance on a pass, and nothing for identical runs', () => {
    expect(determinismNote(0)).toBe('');
    expect(determinismNote(undefined)).toBe('');
    expect(determinismNote(1)).toBe(
      '; 1 element differed between two runs on the same inputs, ' +
        'all within tolerance (allowed unless requireDeterminism)',
    );
    expect(determinismNote(12)).toMatch(/^; 12 elements differed between/);
  });
});

describe('the defences, one function each', () => {
  it("'out-of-bounds': finds the first guard byte that changed, before or after the buffer", () => {
    const guard = new Uint8Array([1, 2, 3, 4]);
    const whole = (body: number[]) => new Uint8Array([...guard, ...body, ...guard]);
    expect(outOfBoundsWrite(whole([9, 9]), guard)).toBeUndefined();
    const before = whole([9, 9]);
    before[3] = 0;
    expect(outOfBoundsWrite(before, guard)).toBe('1 bytes before');
    const after = whole([9, 9]);
    after[7] = 0;
    expect(outOfBoundsWrite(after, guard)).toBe('1 bytes after');
    expect(outOfBoundsWrite(new Uint8Array([5, 6]), new Uint8Array(0))).toBeUndefined(); // no guard, nothing to find
  });

  it("'input-modified': names the first element whose bytes changed", () => {
    const before = new Uint8Array(new Float32Array([1, 2, 3]).buffer);
    const body = new Uint8Array(new Float32Array([1, 2, 3.5]).buffer);
    expect(modifiedInputElement('f32', before, before)).toBe(-1);
    expect(modifiedInputElement('f32', body, before)).toBe(2);
  });

  it("'unwritten': tells an element that holds the poison (or its complement) from one that was written", () => {
    const got = poisonBytes('u16', 3);
    got[2] = 7; // element 1 written (one byte is enough)
    expect([0, 1, 2].map((i) => holdsPoison('u16', got, i))).toEqual([true, false, true]);
    const alternate = poisonBytes('u16', 1, true);
    expect(holdsPoison('u16', alternate, 0, true)).toBe(true);
    expect(holdsPoison('u16', alternate, 0)).toBe(false);
  });

  it("'non-finite', 'mismatch' and 'all-zero' as predicates", () => {
    expect(nonFiniteAgrees(NaN, NaN)).toBe(true);
    expect(nonFiniteAgrees(Infinity, Infinity)).toBe(true);
    expect(nonFiniteAgrees(Infinity, -Infinity)).toBe(false);
    expect(nonFiniteAgrees(NaN, 1)).toBe(false);
    expect(withinTolerance(100, 100.02, 1e-4, 1e-4)).toBe(false);
    expect(withinTolerance(100, 100.01, 1e-4, 1e-4)).toBe(true);
    expect(degenerateZeros([0, 0, -0], [0, 1, 0])).toBe(true);
    expect(degenerateZeros([0, 0], [0, 0])).toBe(false);
    expect(degenerateZeros([0n, 0n], [0n, 3n])).toBe(true);
    expect(degenerateZeros([0, 1e-30], [0, 1])).toBe(false);
  });

  it("'fault': keeps the driver error's code, call and number, and whether the context survived", () => {
    const e = new CudaError({
      code: 'CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES',
      api: 'cuLaunchKernel',
      result: 701,
      explanation: 'x',
    });
    expect(faultOf(e)).toEqual({
      code: 'CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES',
      api: 'cuLaunchKernel',
      result: 701,
      sticky: false,
    });
  });
});

describe('checkWritten (the defences without a reference)', () => {
  const bytesOfF32 = (values: number[]): Uint8Array => new Uint8Array(new Float32Array(values).buffer);

  it('passes an output that was written everywhere with finite values', () => {
    const c = newComparison();
    checkWritten(1, 'argument 1', 'f32', bytesOfF32([1, 2, 3]), undefined, c);
    expect(c).toMatchObject({ defence: undefined, matched: 3, total: 3, mismatches: [] });
  });

  it(
    "calls an element 'unwritten' only when it held the poison after both launches " +
      '(the second with its complement)',
    () => {
      const first = poisonBytes('u8', 4);
      first[0] = 1;
      const confirm = poisonBytes('u8', 4, true);
      confirm[0] = 1;
      confirm[2] = 0xef; // the kernel wrote 0xEF, the poison's value, to element 2: written, not unwritten
      const c = newComparison();
      checkWritten(3, "'y' (argument 3)", 'u8', first, confirm, c);
      expect(c.defence).toBe('unwritten');
      expect(c.detail).toBe("'y' (argument 3): 2 of 4 elements never written (first: element 1)");
      expect(c.mismatches.map((m) => m.index)).toEqual([1, 3]);
      expect(Number.isNaN(c.mismatches[0]!.expected)).toBe(true); // no expected value without a reference
      expect([c.matched, c.total]).toEqual([2, 4]);
    },
  );

  it("calls a NaN or infinity where the poison was 'non-finite', after 'unwritten'", () => {
    const c = newComparison();
    const nanBits = new Float32Array(new Uint32Array([0x7fc00001]).buffer)[0]!;
    checkWritten(1, 'argument 1', 'f32', bytesOfF32([1, nanBits, -Infinity]), undefined, c);
    expect(c.defence).toBe('non-finite');
    expect(c.detail).toBe('argument 1: 2 of 3 elements NaN or infinite (first: element 1 = NaN)');
    const both = newComparison();
    const first = bytesOfF32([1, Infinity, 0]);
    first.set(poisonBytes('f32', 1), 8);
    checkWritten(1, 'argument 1', 'f32', first, poisonBytes('f32', 3, true), both);
    expect(both.defence).toBe('unwritten');
    expect(both.detail).toBe('argument 1: 1 of 3 elements never written (first: element 2)');
  });
});

describe('buildCheckResult', () => {
  it("takes the worst figures over the trials and the first failing trial's verdict", () => {
    const pass = newComparison();
    pass.maxAbs = 0.5;
    pass.matched = pass.total = 4;
    const fail = newComparison();
    fail.defence = 'mismatch';
    fail.mismatches = [{ arg: 1, index: 2, expected: 1, actual: 3 }];
    fail.matched = 3;
    fail.total = 4;
    const r = buildCheckResult(
      [trialResult(0, '0x1', pass, undefined), trialResult(1, '0x2', fail, 'why')],
      newRunComparison(),
    );
    expect(r).toMatchObject({
      passed: false,
      defence: 'mismatch',
      maxAbsError: 0.5,
      matchedRatio: 0.75,
      mismatches: fail.mismatches,
      nondeterministicElements: 0,
      nondeterministicBeyondTolerance: 0,
      summary: '',
    });
    expect(r).not.toHaveProperty('referenceFree');
    expect(buildCheckResult([trialResult(0, '', pass, undefined)], undefined)).toMatchObject({
      passed: true,
      nondeterministicElements: undefined,
    });
  });
});

describe('check() over a fake device', () => {
  const n = 64;
  const io = parseArgSpecs([`x@ptr:f32[${n}]=uniform(-2,2)`, `y@ptr:f32[${n}]:out`, 'a@f32=1.5', `n@i32=${n}`]);
  const signature = ['ptr', 'ptr', 'f32', 'i32'];
  const jsRef = (args: unknown[]): void => {
    const [x, y, a] = args as [Float32Array, Float32Array, number];
    for (let i = 0; i < x.length; i++) y[i] = Math.fround(a * x[i]!);
  };
  /** scale: y[i] = a·x[i] for i in [from, to); `edit` may change y afterwards. */
  const scale = (device: FakeDevice, to = n, edit?: (y: Float32Array, x: Float32Array, launch: number) => void) => {
    const k = fakeKernel(device, 'scale', signature, ([x, y, a]) => {
      const xs = view(Float32Array, x);
      const ys = view(Float32Array, y);
      for (let i = 0; i < to; i++) ys[i] = Math.fround((a as number) * xs[i]!);
      edit?.(ys, xs, k.launches);
    });
    return { kernel: k as unknown as Kernel, config: { grid: 1, block: 1 }, fake: k };
  };
  const small = { trials: 2, guardBytes: 256 };

  it('passes a correct kernel against a JavaScript reference, five trials, with the determinism runs', async () => {
    const device = new FakeDevice();
    const candidate = scale(device);
    const r = await check(candidate, jsRef, io, { guardBytes: 256 });
    expect(r.passed, r.summary).toBe(true);
    expect(r.trials).toHaveLength(5);
    expect(r.nondeterministicElements).toBe(0);
    expect(candidate.fake.launches).toBe(6); // five trials and the second run on the first trial's inputs
    expect(r.summary).toMatch(/^PASS: 5 trials, worst element at 0% of its tolerance/);
    expect(r).not.toHaveProperty('referenceFree');
  });

  it('passes against a reference kernel whose parameters come in another order, matched by name', async () => {
    const device = new FakeDevice();
    // ref(n, a, y, x)
    const ref = fakeKernel(device, 'ref', ['i32', 'f32', 'ptr', 'ptr'], ([count, a, y, x]) => {
      const ys = view(Float32Array, y);
      const xs = view(Float32Array, x);
      for (let i = 0; i < (count as number); i++) ys[i] = Math.fround((a as number) * xs[i]!);
    });
    const refIo = parseArgSpecs([`n@i32=${n}`, 'a@f32=1.5', `y@ptr:f32[${n}]:out`, `x@ptr:f32[${n}]:in`]);
    const reference = { kernel: ref as unknown as Kernel, config: { grid: 1, block: 1 }, io: refIo };
    const good = await check(scale(device), reference, io, small);
    expect(good.passed, good.summary).toBe(true);
    const bad = await check(
      scale(device, n, (y) => void (y[5] = 0.25)),
      reference,
      io,
      small,
    );
    expect(bad).toMatchObject({ passed: false, defence: 'mismatch' });
    expect(bad.mismatches[0]).toMatchObject({ arg: 1, index: 5, actual: 0.25 });
    // A reference io that cannot be matched is the caller's mistake, before anything runs.
    const wrong = {
      ...reference,
      io: parseArgSpecs([`n@i32=${n}`, 'a@f32=1.5', `z@ptr:f32[${n}]:out`, `x@ptr:f32[${n}]:in`]),
    };
    await expect(check(scale(device), wrong, io, small)).rejects.toThrow(
      /the candidate's output 'y' \(argument 1\) has no reference output named 'y'/,
    );
  });

  it('runs a reference kernel after the candidate in even trials, before it (zeroed when freed) in odd', async () => {
    const device = new FakeDevice();
    const ref = fakeKernel(device, 'ref', signature, ([x, y, a]) => {
      const [xs, ys] = [view(Float32Array, x), view(Float32Array, y)];
      for (let i = 0; i < n; i++) ys[i] = Math.fround((a as number) * xs[i]!);
      device.log.push('launch ref');
    });
    const candidate = scale(device, n, () => void device.log.push('launch candidate'));
    const reference = { kernel: ref as unknown as Kernel, config: { grid: 1, block: 1 } };
    const r = await check(candidate, reference, io, { ...small, trials: 4, determinism: false });
    expect(r.passed, r.summary).toBe(true);
    const launches = device.log.filter((e) => e.startsWith('launch')).map((e) => e.slice('launch '.length));
    const [c, k] = ['candidate', 'ref'];
    expect(launches).toEqual([c, k, k, c, c, k, k, c]);
    // Between a reference launch and its buffers' disposal: zero fills in odd trials only (zeroOnFree is off).
    const zeroedPerRun = device.log
      .join('\n')
      .split('launch ref')
      .slice(1)
      .map((after) => after.split('dispose')[0]!.match(/fill /g)?.length ?? 0);
    expect(zeroedPerRun).toEqual([0, 2, 0, 2]);
  });

  it('holds each output to its own element type’s tolerance, the options’ atol and rtol to the others', async () => {
    const device = new FakeDevice();
    // y (f32) and z (f16) are both off by 5e-3 (z by its rounding to f16 too): within f16's default tolerance (1e-2
    // + 1e-2·|ref|), not within f32's (1e-4 + 1e-4·|ref|).
    const io2 = parseArgSpecs(['x@ptr:f32[4]=uniform(0,1)', 'y@ptr:f32[4]:out', 'z@ptr:f16[4]:out']);
    const k = fakeKernel(device, 'k', ['ptr', 'ptr', 'ptr'], ([x, y, z]) => {
      const xs = view(Float32Array, x);
      view(Float32Array, y).set([...xs].map((v) => v + 5e-3));
      (z as FakeBuffer).memory.set(
        toDeviceBytes(
          'f16',
          [...xs].map((v) => v + 5e-3),
        ),
      );
    });
    const jsRef2 = (args: unknown[]): void => {
      const [x, y, z] = args as [Float32Array, Float32Array, Float32Array];
      y.set(x);
      z.set(x);
    };
    const run = (o: object) =>
      check({ kernel: k as unknown as Kernel, config: { grid: 1, block: 1 } }, jsRef2, io2, { ...small, ...o });
    expect((await run({})).defence).toBe('mismatch'); // f32's default (1e-4) fails y
    const loose = await run({ tolerances: { f32: { atol: 1e-2 } } });
    expect(loose.passed, loose.summary).toBe(true); // f16's default takes z
    // A global atol loose enough for y would loosen z too; its own entry keeps z tight and fails it.
    const r = await run({ atol: 1e-2, tolerances: { f16: { atol: 1e-3, rtol: 1e-3 } } });
    expect(r).toMatchObject({ passed: false, defence: 'mismatch' });
    expect(r.mismatches[0]).toMatchObject({ arg: 2 });
    await expect(run({ tolerances: { f33: { atol: 1 } } })).rejects.toThrow(
      /Expected an element type .* for options\.tolerances\.f33/,
    );
    await expect(run({ tolerances: { f32: { atol: -1 } } })).rejects.toThrow(RangeError);
    await expect(run({ tolerances: { f32: { tol: 1 } } })).rejects.toThrow(/tol/);
  });

  it('without a reference, passes a kernel that writes every output element with finite values', async () => {
    const device = new FakeDevice();
    for (const reference of [null, undefined]) {
      const r = await check(scale(device), reference, io, small);
      expect(r.passed, r.summary).toBe(true);
      expect(r.referenceFree).toBe(true);
      expect(r.matchedRatio).toBe(1);
      expect(r.summary).toBe(
        'PASS without a reference: 2 trials; ' +
          'outputs fully written and finite, inputs unchanged, no writes outside the buffers',
      );
    }
  });

  it(
    'without a reference, fails an unwritten element, ' + 'confirmed by a launch with the complement as poison',
    async () => {
      const device = new FakeDevice();
      const candidate = scale(device, n - 3);
      const r = await check(candidate, null, io, small);
      expect(r).toMatchObject({ passed: false, defence: 'unwritten', referenceFree: true });
      expect(r.summary).toBe(
        'FAIL (unwritten) in trial 0: argument 1: 3 of 64 elements never written (first: element 61)',
      );
      expect(r.matchedRatio).toBeCloseTo(61 / 64, 12);
    },
  );

  it("without a reference, does not blame a kernel that writes the poison's own value", async () => {
    const device = new FakeDevice();
    const u8io = parseArgSpecs(['ptr:u8[16]=randint(0,10)', 'ptr:u8[16]:out']);
    const k = fakeKernel(device, 'fill', ['ptr', 'ptr'], ([, y]) => void view(Uint8Array, y).fill(0xef));
    const r = await check({ kernel: k as unknown as Kernel, config: { grid: 1, block: 1 } }, null, u8io, small);
    expect(r.passed, r.summary).toBe(true);
    expect(k.launches).toBe(5); // per trial a launch and one confirming its suspects, plus the determinism run
  });

  it('without a reference, fails NaN or infinity in an output', async () => {
    const r = await check(
      scale(new FakeDevice(), n, (y) => void (y[7] = Infinity)),
      null,
      io,
      small,
    );
    expect(r).toMatchObject({ passed: false, defence: 'non-finite' });
    expect(r.summary).toBe(
      'FAIL (non-finite) in trial 0: argument 1: 1 of 64 elements NaN or infinite (first: element 7 = Infinity)',
    );
  });

  it('without a reference, fails a write outside the buffer and a changed input', async () => {
    const stray = scale(new FakeDevice(), n, (y) => {
      new Uint8Array(y.buffer, y.byteOffset + y.byteLength, 4).fill(1); // just past the end: into the guard
    });
    const oob = await check(stray, null, io, small);
    expect(oob).toMatchObject({ passed: false, defence: 'out-of-bounds' });
    expect(oob.summary).toBe('FAIL (out-of-bounds) in trial 0: argument 1: a write 0 bytes after its buffer');
    const writesInput = await check(
      scale(new FakeDevice(), n, (_y, x) => void (x[3] = 0)),
      null,
      io,
      small,
    );
    expect(writesInput).toMatchObject({ passed: false, defence: 'input-modified' });
    expect(writesInput.summary).toBe('FAIL (input-modified) in trial 0: argument 0 (an input) changed at element 3');
  });

  it('without a reference, still compares two runs on the same inputs', async () => {
    const racy = scale(new FakeDevice(), n, (y, _x, launch) => void (y[9] = y[9]! + launch));
    const r = await check(racy, null, io, small);
    expect(r).toMatchObject({ passed: false, defence: 'nondeterministic', nondeterministicElements: 1 });
    const off = await check(
      scale(new FakeDevice(), n, (y, _x, launch) => void (y[9] = y[9]! + launch)),
      null,
      io,
      { ...small, determinism: false },
    );
    expect(off.passed).toBe(true);
    expect(off.nondeterministicElements).toBeUndefined();
  });

  it('makes a refused launch a fault verdict and stops', async () => {
    const device = new FakeDevice();
    const refused = fakeKernel(device, 'big', signature, () => {
      throw new CudaError({
        code: 'CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES',
        api: 'cuLaunchKernel',
        result: 701,
        explanation: 'too many resources',
      });
    });
    const r = await check({ kernel: refused as unknown as Kernel, config: { grid: 1, block: 1 } }, null, io, small);
    expect(r).toMatchObject({ passed: false, defence: 'fault', trials: [{ trial: 0 }] });
    expect(r.error).toEqual({
      code: 'CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES',
      api: 'cuLaunchKernel',
      result: 701,
      sticky: false,
    });
    expect(r.summary).toMatch(
      /^FAIL \(fault\) in trial 0: cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES \(701\)/,
    );
  });

  it(
    'with zeroOnFree, zeroes every buffer (guard zones included) before freeing it; ' + 'without, leaves the data',
    async () => {
      for (const zeroOnFree of [true, false]) {
        const device = new FakeDevice();
        const r = await check(scale(device), jsRef, io, { ...small, zeroOnFree });
        expect(r.passed).toBe(true);
        expect(device.buffers).toHaveLength(4); // two buffers per trial
        expect(device.buffers.every((b) => b.disposed)).toBe(true);
        expect(device.buffers.every((b) => b.memory.every((x) => x === 0))).toBe(zeroOnFree);
        const log = device.log.filter((e) => e !== 'synchronize' || zeroOnFree);
        if (zeroOnFree) expect(log.slice(-5)).toEqual(['fill 2', 'fill 3', 'synchronize', 'dispose 2', 'dispose 3']);
      }
      await expect(check(scale(new FakeDevice()), jsRef, io, { zeroOnFree: 'yes' as never })).rejects.toThrow(
        new TypeError("Expected a boolean for options.zeroOnFree but received 'yes' of type string"),
      );
    },
  );

  it('validates io against the candidate and the specs themselves', async () => {
    const device = new FakeDevice();
    await expect(check(scale(device), jsRef, io.slice(0, 3), small)).rejects.toThrow(
      "io declares 3 arguments but kernel 'scale' takes 4",
    );
    await expect(
      check(scale(device), jsRef, parseArgSpecs(['ptr:f32[4]=ones', 'ptr:f32[4]=ones', 'f32=1', 'i32=4']), small),
    ).rejects.toThrow(/no output buffer/);
    const bad = [{ ...io[0]!, length: -1 }, ...io.slice(1)];
    await expect(check(scale(device), jsRef, bad as never, small)).rejects.toThrow(/for io\[0\].length/);
  });
});
