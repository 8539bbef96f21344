// The correctness defences' pure parts: poison patterns, encodings, the element comparison (tolerance, non-finite
// rules, unwritten and all-zero detection) and the determinism rule over two runs. The GPU tier runs the planted
// faults end to end.
import { describe, expect, it } from 'vitest';
import {
  compareOutput, compareRuns, decode, determinismFailure, determinismNote, encode, newComparison, newRunComparison,
  poisonBytes,
} from '../../lib/measure/check.js';

const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

describe('poison patterns', () => {
  it('are NaN for every float type and 0xDEADBEEF for integers', () => {
    expect(Number.isNaN(new Float32Array(poisonBytes('f32', 3).buffer)[2])).toBe(true);
    expect(Number.isNaN(new Float64Array(poisonBytes('f64', 2).buffer)[1])).toBe(true);
    expect(Number.isNaN(decode('f16', poisonBytes('f16', 2))[0] as number)).toBe(true);
    expect(Number.isNaN(decode('bf16', poisonBytes('bf16', 2))[1] as number)).toBe(true);
    expect(new Uint32Array(poisonBytes('u32', 2).buffer)[1]).toBe(0xdeadbeef);
    expect(new BigUint64Array(poisonBytes('u64', 1).buffer)[0]).toBe(0xdeadbeefdeadbeefn);
    expect(new Uint16Array(poisonBytes('i16', 1).buffer)[0]).toBe(0xbeef);
    expect(poisonBytes('u8', 4)).toEqual(new Uint8Array([0xef, 0xef, 0xef, 0xef]));
  });
});

describe('encode / decode', () => {
  it('round-trip through the device representation', () => {
    expect(Array.from(decode('f16', encode('f16', [1, -2, 0.5, 65504])))).toEqual([1, -2, 0.5, 65504]);
    expect(Array.from(decode('bf16', encode('bf16', [1, 3.140625])))).toEqual([1, 3.140625]);
    expect(Array.from(decode('i8', encode('i8', [-128, 127])))).toEqual([-128, 127]);
    expect(Array.from(decode('i64', encode('i64', [-5n, 2n ** 62n])))).toEqual([-5n, 2n ** 62n]);
  });
});

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
    expect(near0.tolUsed).toBeCloseTo(Math.abs(Math.fround(2e-5) - 1e-5) / (1e-4 + 1e-4 * 1e-5), 6);
    const edge = run('f32', new Float32Array([100.02]), [100]); // 0.02 / 0.0101: about twice the tolerance
    expect(edge.tolUsed).toBeGreaterThan(1.9);
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
    expect(run('f32', new Float32Array(4), [0, 0, 0, 1e-6], 1e-4, 0).defence).toBe('all-zero'); // within atol, still degenerate
    expect(run('f32', new Float32Array(4), [0, 0, 0, 0]).defence).toBeUndefined();
  });
});

describe('two runs on the same inputs', () => {
  const runs = (dtype: 'f32' | 'i32' | 'i64', first: ArrayBufferView, second: ArrayBufferView, atol = 1e-4, rtol = 1e-4) => {
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

  it('NaN payloads and ±0 differ bitwise only; NaN against a number, other infinities, 64-bit integers differ beyond', () => {
    const nanA = new Float32Array(new Uint32Array([0x7fc00000]).buffer)[0]!;
    const nanB = new Float32Array(new Uint32Array([0x7fc00001]).buffer)[0]!;
    const within = runs('f32', Float32Array.of(nanA, 0), Float32Array.of(nanB, -0));
    expect(within).toMatchObject({ differing: 2, beyondTolerance: 0 });
    const beyond = runs('f32', Float32Array.of(Number.NaN, Infinity, 1), Float32Array.of(1, -Infinity, Infinity));
    expect(beyond).toMatchObject({ differing: 3, beyondTolerance: 3, maxAbsDifference: 0 });
    expect(runs('i64', BigInt64Array.of(5n, 6n), BigInt64Array.of(5n, 7n), 1, 1)).toMatchObject({ differing: 1, beyondTolerance: 1 });
    expect(runs('i32', Int32Array.of(5), Int32Array.of(6), 1, 0)).toMatchObject({ differing: 1, beyondTolerance: 0 }); // an atol for integers applies
  });

  it('fails beyond the tolerance by default, on any bit with requireDeterminism, and says which', () => {
    const onlyWithin = runs('f32', new Float32Array([1, 2]), new Float32Array([1.00005, 2]));
    expect(determinismFailure(onlyWithin, false)).toBeUndefined();
    expect(determinismFailure(onlyWithin, true)).toEqual({
      detail: '1 element differed bitwise between two runs on the same inputs (requireDeterminism), all within ' +
        `tolerance; first: argument 2[0] = 1 in one run, ${Math.fround(1.00005)} in the other`,
      mismatches: onlyWithin.firstDiffering,
    });
    const race = runs('f32', new Float32Array([1, 2, 3]), new Float32Array([1.00005, 7, 9]));
    const failure = determinismFailure(race, false)!;
    expect(failure.detail).toBe(
      '3 elements differed between two runs on the same inputs, 2 beyond tolerance; first: argument 2[1] = 2 in one run, 7 in the other',
    );
    expect(failure.mismatches.map((m) => m.index)).toEqual([1, 2]); // the ones beyond tolerance
    expect(determinismFailure(race, true)!.detail).toMatch(/^3 elements differed bitwise .*\(requireDeterminism\), 2 beyond tolerance; first: argument 2\[1\]/);
    expect(determinismFailure(newRunComparison(), true)).toBeUndefined();
  });

  it('notes differences within tolerance on a pass, and nothing for identical runs', () => {
    expect(determinismNote(0)).toBe('');
    expect(determinismNote(undefined)).toBe('');
    expect(determinismNote(1)).toBe('; 1 element differed between two runs on the same inputs, all within tolerance (allowed unless requireDeterminism)');
    expect(determinismNote(12)).toMatch(/^; 12 elements differed between/);
  });
});
