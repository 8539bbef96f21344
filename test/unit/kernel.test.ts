import { describe, expect, it } from 'vitest';
import { layoutOf, toBf16Bits, toHalfBits } from '../../lib/kernel.js';

describe('scalar conversions', () => {
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
});

describe('argument layout', () => {
  it('lays out structs with C alignment rules', () => {
    const l = layoutOf({ struct: ['u8', 'f64', 'i16'] }, 'arg');
    expect(l.size).toBe(24);
    expect(l.align).toBe(8);
    const dv = new DataView(new ArrayBuffer(32));
    l.write(dv, 0, [7, 1.5, -2]);
    expect(dv.getUint8(0)).toBe(7);
    expect(dv.getFloat64(8, true)).toBe(1.5);
    expect(dv.getInt16(16, true)).toBe(-2);
  });

  it('validates every scalar type before anything is written', () => {
    const dv = new DataView(new ArrayBuffer(16));
    expect(() => layoutOf('i32', 'argument 1 (i32)').write(dv, 0, 2 ** 31)).toThrow(
      new RangeError('Expected an integer in [-2147483648, 2147483647] for argument 1 (i32) but received 2147483648 of type number'),
    );
    expect(() => layoutOf('u8', 'a').write(dv, 0, -1)).toThrow(RangeError);
    expect(() => layoutOf('f32', 'a').write(dv, 0, '1')).toThrow(TypeError);
    expect(() => layoutOf('u64', 'a').write(dv, 0, -1n)).toThrow(RangeError);
    expect(() => layoutOf('i64', 'a').write(dv, 0, 2 ** 60)).toThrow(RangeError); // not a safe integer
    expect(() => layoutOf('bool', 'a').write(dv, 0, 1)).toThrow(TypeError);
    expect(() => layoutOf('ptr', 'a').write(dv, 0, 5)).toThrow(/a DeviceBuffer or a bigint device address/);
    layoutOf('u64', 'a').write(dv, 0, 2n ** 64n - 1n);
    expect(dv.getBigUint64(0, true)).toBe(2n ** 64n - 1n);
    layoutOf('f16', 'a').write(dv, 8, 1);
    expect(dv.getUint16(8, true)).toBe(0x3c00);
  });

  it('copies raw bytes of exactly the declared size', () => {
    const l = layoutOf({ bytes: 12, align: 4 }, 'raw');
    const dv = new DataView(new ArrayBuffer(16));
    l.write(dv, 4, new Float32Array([1, 2, 3]));
    expect(dv.getFloat32(12, true)).toBe(3);
    expect(() => l.write(dv, 0, new Uint8Array(8))).toThrow(/exactly 12 bytes/);
  });

  it('rejects unknown parameter types', () => {
    expect(() => layoutOf('float' as never, 'p')).toThrow(TypeError);
  });
});
