// SPDX-License-Identifier: MIT
// lib/core/args.ts: parameter layouts (C rules, CUDA vector alignment), the validating writers, and how parameter
// types read in messages.
import { describe, expect, it } from 'vitest';
import { formatParam, layoutOf, packedOffsets, type ParamType } from '../../lib/core/args.js';

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
      new RangeError(
        'Expected an integer in [-2147483648, 2147483647] for argument 1 (i32) but received 2147483648 of type number',
      ),
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

describe('vector types and struct alignment', () => {
  const shape = (p: ParamType) => {
    const l = layoutOf(p, 'arg');
    return { size: l.size, align: l.align, offsets: l.offsets };
  };

  it('gives CUDA vector types their alignment (x2 and x4: whole size up to 16; x3: the element)', () => {
    expect(shape('f32x2')).toEqual({ size: 8, align: 8, offsets: [0, 4] });
    expect(shape('f32x4')).toEqual({ size: 16, align: 16, offsets: [0, 4, 8, 12] });
    expect(shape('f32x3')).toEqual({ size: 12, align: 4, offsets: [0, 4, 8] });
    expect(shape('i32x3')).toEqual({ size: 12, align: 4, offsets: [0, 4, 8] });
    expect(shape('f64x2')).toEqual({ size: 16, align: 16, offsets: [0, 8] });
    expect(shape('f64x4')).toEqual({ size: 32, align: 16, offsets: [0, 8, 16, 24] });
    expect(shape('i64x2')).toMatchObject({ size: 16, align: 16 });
    expect(shape('u32x2')).toMatchObject({ size: 8, align: 8 });
    expect(shape('i32x4')).toMatchObject({ size: 16, align: 16 });
    expect(shape('f16x2')).toMatchObject({ size: 4, align: 4 });
    expect(shape('bf16x2')).toMatchObject({ size: 4, align: 4 });
    expect(shape('i8x2')).toMatchObject({ size: 2, align: 2 });
    expect(shape('u8x4')).toMatchObject({ size: 4, align: 4 });
    expect(shape('u8x3')).toMatchObject({ size: 3, align: 1 });
    expect(shape('i16x2')).toMatchObject({ size: 4, align: 4 });
    expect(shape('i16x4')).toMatchObject({ size: 8, align: 8 });
  });

  it('lays out structs holding vectors: struct { float a; float2 b; int c; }', () => {
    expect(shape({ struct: ['f32', 'f32x2', 'i32'] })).toEqual({ size: 24, align: 8, offsets: [0, 8, 16] });
    // The same fields as scalars pack differently: that is why float2 needs its own type.
    expect(shape({ struct: ['f32', 'f32', 'f32', 'i32'] })).toEqual({ size: 16, align: 4, offsets: [0, 4, 8, 12] });
    expect(shape({ struct: ['f32', 'f32x4'] })).toEqual({ size: 32, align: 16, offsets: [0, 16] });
    expect(shape({ struct: ['u8', 'f64x2', 'u8'] })).toEqual({ size: 48, align: 16, offsets: [0, 16, 32] });
    expect(shape({ struct: ['u8', 'f32x3'] })).toEqual({ size: 16, align: 4, offsets: [0, 4] });
  });

  it('lays out nested structs with the inner struct aligned as its strictest member', () => {
    const inner = { struct: ['u8', 'f32x2'] } as const; // size 16, align 8
    expect(shape(inner)).toEqual({ size: 16, align: 8, offsets: [0, 8] });
    expect(shape({ struct: ['i16', inner, 'u8'] })).toEqual({ size: 32, align: 8, offsets: [0, 8, 24] });
    expect(shape({ struct: ['u8', { struct: ['f32'], align: 16 }] })).toEqual({
      size: 32,
      align: 16,
      offsets: [0, 16],
    });
  });

  it('applies an explicit struct align (__align__(N)): alignment max(align, members), size rounded up', () => {
    expect(shape({ struct: ['f32'], align: 16 })).toEqual({ size: 16, align: 16, offsets: [0] });
    expect(shape({ struct: ['f32', 'f32', 'f32'], align: 8 })).toEqual({ size: 16, align: 8, offsets: [0, 4, 8] });
    expect(shape({ struct: ['f64x2'], align: 4 })).toEqual({ size: 16, align: 16, offsets: [0] }); // members win
    expect(shape({ struct: ['u8'], align: 256 })).toMatchObject({ size: 256, align: 256 });
    expect(shape({ struct: ['u8'], align: 1 })).toMatchObject({ size: 1, align: 1 });
  });

  it('writes every struct field and vector component at its offset', () => {
    const l = layoutOf({ struct: ['f32', 'f32x2', 'i32', { struct: ['u8', 'i64x2'] }] }, 'arg');
    expect(l.offsets).toEqual([0, 8, 16, 32]);
    expect(l.size).toBe(64);
    const dv = new DataView(new ArrayBuffer(80));
    new Uint8Array(dv.buffer).fill(0xee);
    l.write(dv, 8, [1.5, [2.5, -3.25], -7, [9, [-(2n ** 62n), 5]]]);
    const at = (o: number) => 8 + o;
    expect(dv.getFloat32(at(0), true)).toBe(1.5);
    expect(dv.getFloat32(at(8), true)).toBe(2.5);
    expect(dv.getFloat32(at(12), true)).toBe(-3.25);
    expect(dv.getInt32(at(16), true)).toBe(-7);
    expect(dv.getUint8(at(32))).toBe(9);
    expect(dv.getBigInt64(at(48), true)).toBe(-(2n ** 62n));
    expect(dv.getBigInt64(at(56), true)).toBe(5n);
    // Padding is left alone; nothing is written outside the value.
    expect([4, 5, 6, 7, 20, 33, 47].map((o) => dv.getUint8(at(o)))).toEqual(Array(7).fill(0xee));
    expect(dv.getUint8(7)).toBe(0xee);
    expect(dv.getUint8(72)).toBe(0xee);
  });

  it('writes vector components with the element writers', () => {
    const dv = new DataView(new ArrayBuffer(32));
    layoutOf('f32x4', 'v').write(dv, 0, [1, 2, 3, 4]);
    expect([0, 4, 8, 12].map((o) => dv.getFloat32(o, true))).toEqual([1, 2, 3, 4]);
    layoutOf('f16x2', 'v').write(dv, 16, [1, -2]);
    expect([dv.getUint16(16, true), dv.getUint16(18, true)]).toEqual([0x3c00, 0xc000]);
    layoutOf('u8x4', 'v').write(dv, 20, [1, 2, 3, 255]);
    expect(dv.getUint32(20, true)).toBe(0xff030201);
    layoutOf('u64x2', 'v').write(dv, 16, [2n ** 64n - 1n, 3]);
    expect(dv.getBigUint64(16, true)).toBe(2n ** 64n - 1n);
    expect(dv.getBigUint64(24, true)).toBe(3n);
  });

  it('rejects wrong vector lengths and bad components with the standard message', () => {
    const dv = new DataView(new ArrayBuffer(32));
    const v = layoutOf('f32x2', "argument 1 (f32x2) of kernel 'k'");
    expect(() => v.write(dv, 0, [1, 2, 3])).toThrow(
      new TypeError(
        "Expected an array of 2 numbers (f32x2) for argument 1 (f32x2) of kernel 'k' " +
          'but received an array of 3 elements',
      ),
    );
    expect(() => v.write(dv, 0, [1])).toThrow(TypeError);
    expect(() => v.write(dv, 0, new Float32Array(2))).toThrow(
      new TypeError(
        "Expected an array of 2 numbers (f32x2) for argument 1 (f32x2) of kernel 'k' " +
          'but received an object of type Float32Array',
      ),
    );
    expect(() => v.write(dv, 0, [1, '2'])).toThrow(
      new TypeError(
        "Expected a number for argument 1 (f32x2) of kernel 'k' component y but received '2' of type string",
      ),
    );
    expect(() => layoutOf('i32x4', 'v').write(dv, 0, [1, 2, 3, 1.5])).toThrow(/for v component w but received 1.5/);
    expect(() => layoutOf('u8x4', 'v').write(dv, 0, [1, 2, 256, 0])).toThrow(RangeError);
    expect(() => layoutOf('i64x2', 'v').write(dv, 0, [1n])).toThrow(/an array of 2 bigints or safe integers \(i64x2\)/);
    expect(() => layoutOf({ struct: ['f32', 'f32x2'] }, 's').write(dv, 0, [1, 2])).toThrow(
      /s field 1 \(f32x2\) but received 2 of type number/,
    );
    expect(() => layoutOf({ struct: ['f32', 'f32x2'] }, 's').write(dv, 0, [1])).toThrow(
      new TypeError('Expected an array of 2 field values for s but received an array of 1 element'),
    );
  });

  it('rejects bad align values and unknown vector or key names', () => {
    expect(() => layoutOf({ struct: ['f32'], align: 3 }, 'arg')).toThrow(
      new RangeError('Expected a power of two up to 256 for arg.align but received 3 of type number'),
    );
    expect(() => layoutOf({ struct: ['f32'], align: 512 }, 'arg')).toThrow(RangeError);
    expect(() => layoutOf({ struct: ['f32'], align: 0 }, 'arg')).toThrow(RangeError);
    expect(() => layoutOf({ struct: ['f32'], align: '16' } as never, 'arg')).toThrow(
      new TypeError("Expected a power of two up to 256 for arg.align but received '16' of type string"),
    );
    expect(() => layoutOf({ bytes: 8, align: '8' } as never, 'arg')).toThrow(TypeError);
    expect(() => layoutOf({ struct: ['f32'], aling: 16 } as never, 'arg')).toThrow(
      new TypeError("Unknown key 'aling' in the parameter type of arg; known keys: struct, align"),
    );
    for (const bad of ['f32x5', 'f32x1', 'f16x4', 'boolx2', 'ptrx2', 'float2', 'toString']) {
      expect(() => layoutOf(bad as never, 'p'), bad).toThrow(/Expected a parameter type \(.*a vector such as f32x2/);
    }
  });

  it('formats vector and aligned struct parameters for messages', () => {
    expect(formatParam({ struct: ['f32', 'f32x2', { struct: ['u8'], align: 16 }] })).toBe(
      '{ struct: [f32, f32x2, { struct: [u8], align: 16 }] }',
    );
    expect(formatParam('f64x2')).toBe('f64x2');
  });
});

describe('packedOffsets', () => {
  it('lays parameters out one after another at their alignment, as C does', () => {
    const layouts = (['u8', 'f64', 'i16', 'f32x4', 'ptr'] as const).map((p) => layoutOf(p, 'a'));
    expect(packedOffsets(layouts)).toEqual([0, 8, 16, 32, 48]);
    expect(packedOffsets([])).toEqual([]);
  });
});
