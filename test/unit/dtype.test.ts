// SPDX-License-Identifier: MIT
// lib/core/dtype.ts: the one table of element types, the f16/bf16/fp8 conversions both ways, and logical values to
// device bytes and back.
import { describe, expect, it } from 'vitest';
import {
  DTYPES,
  DTYPE_INFO,
  SCALAR_BYTES,
  TYPED_ARRAYS,
  type Fp8DType,
  fromBf16Bits,
  fromDeviceBytes,
  fromFp8Bits,
  fromHalfBits,
  isDType,
  toBf16Bits,
  toDeviceBytes,
  toFp8Bits,
  toHalfBits,
} from '../../lib/core/dtype.js';
import * as root from '../../lib/index.js';

describe('the element type table', () => {
  it('lists every type with its size, kind and the typed array of its logical values', () => {
    expect(DTYPES).toEqual([
      ...['i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'i64', 'u64'],
      ...['f8e4m3', 'f8e5m2', 'f16', 'bf16', 'f32', 'f64'],
    ]);
    const rows = DTYPES.map((d) => [
      d,
      DTYPE_INFO[d].bytes,
      DTYPE_INFO[d].float,
      DTYPE_INFO[d].bigint,
      DTYPE_INFO[d].hostArray.name,
    ]);
    expect(rows).toEqual([
      ['i8', 1, false, false, 'Int8Array'],
      ['u8', 1, false, false, 'Uint8Array'],
      ['i16', 2, false, false, 'Int16Array'],
      ['u16', 2, false, false, 'Uint16Array'],
      ['i32', 4, false, false, 'Int32Array'],
      ['u32', 4, false, false, 'Uint32Array'],
      ['i64', 8, false, true, 'BigInt64Array'],
      ['u64', 8, false, true, 'BigUint64Array'],
      ['f8e4m3', 1, true, false, 'Float32Array'],
      ['f8e5m2', 1, true, false, 'Float32Array'],
      ['f16', 2, true, false, 'Float32Array'],
      ['bf16', 2, true, false, 'Float32Array'],
      ['f32', 4, true, false, 'Float32Array'],
      ['f64', 8, true, false, 'Float64Array'],
    ]);
    for (const d of DTYPES) expect(DTYPE_INFO[d].name).toBe(d);
  });

  it('gives exact integer ranges and the largest finite float of each type', () => {
    expect(DTYPE_INFO.i8.range).toEqual([-128n, 127n]);
    expect(DTYPE_INFO.u16.range).toEqual([0n, 65535n]);
    expect(DTYPE_INFO.i64.range).toEqual([-(2n ** 63n), 2n ** 63n - 1n]);
    expect(DTYPE_INFO.u64.range).toEqual([0n, 2n ** 64n - 1n]);
    expect(DTYPE_INFO.f32.range).toBeUndefined();
    expect(DTYPE_INFO.f16.maxFinite).toBe(65504);
    expect(DTYPE_INFO.f8e4m3.maxFinite).toBe(fromFp8Bits('f8e4m3', 0x7e));
    expect(DTYPE_INFO.f8e5m2.maxFinite).toBe(fromFp8Bits('f8e5m2', 0x7b));
    expect(DTYPE_INFO.bf16.maxFinite).toBe(fromBf16Bits(0x7f7f));
    expect(DTYPE_INFO.f32.maxFinite).toBe(new Float32Array(new Uint32Array([0x7f7fffff]).buffer)[0]);
    expect(DTYPE_INFO.i32.maxFinite).toBeUndefined();
  });

  it("carries check()'s default tolerances: exact for integers, looser for the narrow floats", () => {
    expect([DTYPE_INFO.i32.atol, DTYPE_INFO.i32.rtol]).toEqual([0, 0]);
    expect([DTYPE_INFO.f16.atol, DTYPE_INFO.bf16.rtol]).toEqual([1e-2, 1e-2]);
    expect([DTYPE_INFO.f32.atol, DTYPE_INFO.f32.rtol]).toEqual([1e-4, 1e-4]);
    expect([DTYPE_INFO.f64.atol, DTYPE_INFO.f64.rtol]).toEqual([1e-8, 1e-8]);
  });

  it('has a poison of one element per type: a quiet NaN for floats, 0xDEADBEEF (low bytes) for integers', () => {
    for (const d of DTYPES) expect(DTYPE_INFO[d].poison).toHaveLength(DTYPE_INFO[d].bytes);
    expect(Number.isNaN(fromDeviceBytes('f32', new Uint8Array(DTYPE_INFO.f32.poison))[0])).toBe(true);
    expect(Number.isNaN(fromDeviceBytes('bf16', new Uint8Array(DTYPE_INFO.bf16.poison))[0])).toBe(true);
    for (const d of ['f8e4m3', 'f8e5m2'] as const) {
      expect(Number.isNaN(fromDeviceBytes(d, new Uint8Array(DTYPE_INFO[d].poison))[0])).toBe(true);
    }
    expect(fromDeviceBytes('u32', new Uint8Array(DTYPE_INFO.u32.poison))[0]).toBe(0xdeadbeef);
    expect(fromDeviceBytes('u64', new Uint8Array(DTYPE_INFO.u64.poison))[0]).toBe(0xdeadbeefdeadbeefn);
    expect(DTYPE_INFO.u8.poison).toEqual([0xef]);
  });

  it('sizes every scalar parameter type, pointers and bools included', () => {
    expect(SCALAR_BYTES.ptr).toBe(8);
    expect(SCALAR_BYTES.bool).toBe(1);
    for (const d of DTYPES) expect(SCALAR_BYTES[d]).toBe(DTYPE_INFO[d].bytes);
  });

  it('knows its names and the typed array constructors', () => {
    expect(isDType('bf16')).toBe(true);
    expect(isDType('bool')).toBe(false);
    expect(isDType('toString')).toBe(false); // not fooled by Object.prototype
    expect(isDType(3)).toBe(false);
    expect(TYPED_ARRAYS).toHaveLength(11);
    expect(TYPED_ARRAYS).toContain(Uint8ClampedArray);
  });
});

describe('f16 and bf16 conversions', () => {
  it('rounds to IEEE half correctly', () => {
    expect(toHalfBits(1)).toBe(0x3c00);
    expect(toHalfBits(-2)).toBe(0xc000);
    expect(toHalfBits(65504)).toBe(0x7bff);
    expect(toHalfBits(65520)).toBe(0x7c00); // rounds up to infinity
    expect(toHalfBits(Infinity)).toBe(0x7c00);
    expect(toHalfBits(NaN) & 0x7e00).toBe(0x7e00);
    expect(toHalfBits(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(toHalfBits(2 ** -25)).toBe(0x0000); // tie → even (0)
    expect(toHalfBits(1 + 2 ** -11)).toBe(0x3c00); // tie → even
    expect(toHalfBits(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie → even (up)
    expect(toHalfBits(0.1)).toBe(0x2e66);
  });

  it('rounds to bfloat16 correctly', () => {
    expect(toBf16Bits(1)).toBe(0x3f80);
    expect(toBf16Bits(-1.5)).toBe(0xbfc0);
    expect(toBf16Bits(3.140625)).toBe(0x4049);
    expect(toBf16Bits(1 + 2 ** -8)).toBe(0x3f80); // tie → even
    expect(toBf16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(toBf16Bits(NaN) & 0x7fc0).toBe(0x7fc0);
  });

  it('reads half and bfloat16 bits back exactly: every finite pattern round-trips', () => {
    for (let h = 0; h < 0x10000; h++) {
      const exp = (h >> 10) & 0x1f;
      if (exp === 0x1f) continue; // Inf and NaN below
      expect(toHalfBits(fromHalfBits(h))).toBe(h);
    }
    for (let b = 0; b < 0x10000; b++) {
      if ((b & 0x7f80) === 0x7f80) continue;
      expect(toBf16Bits(fromBf16Bits(b))).toBe(b);
    }
    expect(fromHalfBits(0x7c00)).toBe(Infinity);
    expect(fromHalfBits(0xfc00)).toBe(-Infinity);
    expect(fromHalfBits(0x7e00)).toBeNaN();
    expect(fromHalfBits(0x0001)).toBe(2 ** -24);
    expect(fromHalfBits(0x8000)).toBe(-0);
    expect(fromBf16Bits(0x7f80)).toBe(Infinity);
    expect(fromBf16Bits(0x7fc0)).toBeNaN();
  });

  it('are exported from the package root', () => {
    expect(root.toHalfBits).toBe(toHalfBits);
    expect(root.toBf16Bits).toBe(toBf16Bits);
    expect(root.fromHalfBits).toBe(fromHalfBits);
    expect(root.fromBf16Bits).toBe(fromBf16Bits);
  });
});

/**
 * The fp8 value nearest x among all 256 patterns, ties to the even pattern, past the largest finite value saturated
 * to it: CUDA's __NV_SATFINITE conversion, found by search rather than by toFp8Bits' arithmetic.
 */
function nearestFp8(dtype: Fp8DType, x: number): number {
  const max = DTYPE_INFO[dtype].maxFinite!;
  const sign = x < 0 || Object.is(x, -0) ? 0x80 : 0;
  const abs = Math.min(Math.abs(x), max);
  let best = 0;
  for (let b = 1; b < 0x80; b++) {
    const v = fromFp8Bits(dtype, b);
    if (!Number.isFinite(v)) continue;
    const d = Math.abs(v - abs);
    const bestD = Math.abs(fromFp8Bits(dtype, best) - abs);
    if (d < bestD || (d === bestD && b % 2 === 0)) best = b;
  }
  return sign | best;
}

describe('fp8 conversions (e4m3, e5m2)', () => {
  it('reads every pattern as CUDA defines it: e4m3 without infinities, e5m2 IEEE-like', () => {
    expect([0x38, 0x3c].map((b, i) => fromFp8Bits(i === 0 ? 'f8e4m3' : 'f8e5m2', b))).toEqual([1, 1]);
    expect(fromFp8Bits('f8e4m3', 0x01)).toBe(2 ** -9); // the smallest subnormal
    expect(fromFp8Bits('f8e4m3', 0x08)).toBe(2 ** -6); // the smallest normal
    expect(fromFp8Bits('f8e4m3', 0x7e)).toBe(448);
    expect(fromFp8Bits('f8e4m3', 0xfe)).toBe(-448);
    expect(fromFp8Bits('f8e4m3', 0x78)).toBe(256); // exponent field 15 is finite in e4m3 ...
    expect(fromFp8Bits('f8e4m3', 0x7f)).toBeNaN(); // ... but for its last mantissa
    expect(fromFp8Bits('f8e4m3', 0xff)).toBeNaN();
    expect(fromFp8Bits('f8e5m2', 0x01)).toBe(2 ** -16);
    expect(fromFp8Bits('f8e5m2', 0x7b)).toBe(57344);
    expect(fromFp8Bits('f8e5m2', 0x7c)).toBe(Infinity);
    expect(fromFp8Bits('f8e5m2', 0xfc)).toBe(-Infinity);
    for (const b of [0x7d, 0x7e, 0x7f, 0xff]) expect(fromFp8Bits('f8e5m2', b)).toBeNaN();
    expect(Object.is(fromFp8Bits('f8e4m3', 0x80), -0)).toBe(true);
  });

  it('round-trips every finite pattern', () => {
    for (const d of ['f8e4m3', 'f8e5m2'] as const) {
      for (let b = 0; b < 256; b++) {
        const v = fromFp8Bits(d, b);
        if (Number.isFinite(v)) expect(toFp8Bits(d, v), `${d} 0x${b.toString(16)}`).toBe(b);
      }
    }
  });

  it('rounds to nearest even and saturates as __NV_SATFINITE does, matching a search over all patterns', () => {
    expect(toFp8Bits('f8e4m3', 1 + 1 / 16)).toBe(0x38); // halfway between 1 and 1.125: to the even 1
    expect(toFp8Bits('f8e4m3', 1 + 3 / 16)).toBe(0x3a); // halfway between 1.125 and 1.25: to the even 1.25
    expect(toFp8Bits('f8e4m3', 2 ** -10)).toBe(0x00); // half the smallest subnormal: to the even 0
    expect(toFp8Bits('f8e4m3', 3 * 2 ** -10)).toBe(0x02);
    expect(toFp8Bits('f8e4m3', 1000)).toBe(0x7e);
    expect(toFp8Bits('f8e4m3', -Infinity)).toBe(0xfe);
    expect(toFp8Bits('f8e5m2', Infinity)).toBe(0x7b);
    expect(toFp8Bits('f8e5m2', 60000)).toBe(0x7b);
    expect(toFp8Bits('f8e4m3', Number.NaN)).toBe(0x7f);
    expect(toFp8Bits('f8e4m3', -0)).toBe(0x80);
    expect(toFp8Bits('f8e5m2', 15.5)).toBe(0x4c); // 15.5 is halfway between 14 and 16: to the even 16
    let seed = 7;
    const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (const d of ['f8e4m3', 'f8e5m2'] as const) {
      const max = DTYPE_INFO[d].maxFinite!;
      const values = [
        ...Array.from({ length: 3000 }, () => (random() - 0.5) * 2 * max * 1.2),
        ...Array.from({ length: 3000 }, () => (random() - 0.5) * 2 ** -(random() * 20)),
        // Every midpoint between neighbouring patterns: where ties-to-even decides.
        ...Array.from({ length: toFp8Bits(d, max) }, (_, b) => (fromFp8Bits(d, b) + fromFp8Bits(d, b + 1)) / 2),
      ];
      for (const x of values) expect(toFp8Bits(d, x), `${d} ${x}`).toBe(nearestFp8(d, x));
    }
  });

  it('are device bytes and logical values both ways, and exported from the package root', () => {
    const bytes = toDeviceBytes('f8e4m3', [1, -2, 0.5, 448]);
    expect([...bytes]).toEqual([0x38, 0xc0, 0x30, 0x7e]);
    expect(Array.from(fromDeviceBytes('f8e4m3', bytes))).toEqual([1, -2, 0.5, 448]);
    expect(Array.from(fromDeviceBytes('f8e5m2', new Uint8Array([0x3c, 0x7c])))).toEqual([1, Infinity]);
    expect(root.toFp8Bits).toBe(toFp8Bits);
    expect(root.fromFp8Bits).toBe(fromFp8Bits);
    expect(root.isFp8('f8e5m2')).toBe(true);
    expect(root.isFp8('f16')).toBe(false);
  });
});

describe('device bytes', () => {
  it('round-trip logical values through the device representation', () => {
    expect(Array.from(fromDeviceBytes('f16', toDeviceBytes('f16', [1, -2, 0.5, 65504])))).toEqual([1, -2, 0.5, 65504]);
    expect(Array.from(fromDeviceBytes('bf16', toDeviceBytes('bf16', [1, 3.140625])))).toEqual([1, 3.140625]);
    expect(Array.from(fromDeviceBytes('i8', toDeviceBytes('i8', [-128, 127])))).toEqual([-128, 127]);
    expect(Array.from(fromDeviceBytes('i64', toDeviceBytes('i64', [-5n, 2n ** 62n])))).toEqual([-5n, 2n ** 62n]);
  });

  it('are little-endian, rounded and wrapped as the device type does', () => {
    expect([...toDeviceBytes('u16', [0x1234])]).toEqual([0x34, 0x12]);
    expect([...toDeviceBytes('f16', [0.1])]).toEqual([0x66, 0x2e]);
    expect([...toDeviceBytes('u8', [300, -1])]).toEqual([44, 255]);
    expect(fromDeviceBytes('f32', toDeviceBytes('f32', [0.1]))[0]).toBe(Math.fround(0.1));
  });

  it('decode into an array of their own, whatever the alignment of the bytes', () => {
    const backing = new Uint8Array(9);
    backing.set(toDeviceBytes('f64', [2.5]), 1); // offset 1: not 8-byte aligned
    const view = backing.subarray(1);
    const values = fromDeviceBytes('f64', view);
    expect(values[0]).toBe(2.5);
    backing[8] = 0;
    expect(values[0]).toBe(2.5); // a copy
    expect(fromDeviceBytes('f32', new Uint8Array(6))).toHaveLength(1); // a trailing partial element is dropped
  });
});
