import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ParamInfo } from '../../lib/core/image.js';
import { Kernel, formatParam, layoutOf, toBf16Bits, toHalfBits, type ParamType, type Signature } from '../../lib/core/kernel.js';
import { INTERNAL } from '../../lib/core/lifetime.js';
import type { Module } from '../../lib/core/module.js';
import type { Native } from '../../lib/core/native.js';
import type { Stream } from '../../lib/core/stream.js';

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
    expect(shape({ struct: ['u8', { struct: ['f32'], align: 16 }] })).toEqual({ size: 32, align: 16, offsets: [0, 16] });
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
      new TypeError("Expected an array of 2 numbers (f32x2) for argument 1 (f32x2) of kernel 'k' but received an array of 3 elements"),
    );
    expect(() => v.write(dv, 0, [1])).toThrow(TypeError);
    expect(() => v.write(dv, 0, new Float32Array(2))).toThrow(
      new TypeError("Expected an array of 2 numbers (f32x2) for argument 1 (f32x2) of kernel 'k' but received an object of type Float32Array"),
    );
    expect(() => v.write(dv, 0, [1, '2'])).toThrow(
      new TypeError("Expected a number for argument 1 (f32x2) of kernel 'k' component y but received '2' of type string"),
    );
    expect(() => layoutOf('i32x4', 'v').write(dv, 0, [1, 2, 3, 1.5])).toThrow(/for v component w but received 1.5/);
    expect(() => layoutOf('u8x4', 'v').write(dv, 0, [1, 2, 256, 0])).toThrow(RangeError);
    expect(() => layoutOf('i64x2', 'v').write(dv, 0, [1n])).toThrow(/an array of 2 bigints or safe integers \(i64x2\)/);
    expect(() => layoutOf({ struct: ['f32', 'f32x2'] }, 's').write(dv, 0, [1, 2])).toThrow(/s field 1 \(f32x2\) but received 2 of type number/);
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

// A Kernel over a stub native layer: launch validation and argument packing without a GPU.
const stub = vi.hoisted(() => ({
  paramInfo: null as [number, number][] | null,
  buffer: undefined as ArrayBuffer | undefined,
  offsets: [] as number[],
  launches: 0,
  slots: 0,
}));

vi.mock('../../lib/core/native.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/core/native.js')>();
  const fake: Partial<Native> = {
    funcGetParamInfo: () => stub.paramInfo,
    kernelSlotCreate: (_ctx, _fn, buffer, offsets) => {
      stub.buffer = buffer;
      stub.offsets = offsets;
      return ++stub.slots;
    },
    kernelSlotDestroy: () => {},
    funcGetAttribute: (_ctx, _fn, id) => (id === 0 ? 1024 : id === 8 ? 48 * 1024 : 0),
    launchKernel: () => void stub.launches++,
    launchKernelEx: () => void stub.launches++,
  };
  return { ...real, getNative: () => fake as Native };
});

const fakeModule = {
  device: {
    ctx: 1n,
    limits: { maxThreadsPerBlock: 1024, maxGridDim: [2 ** 31 - 1, 65535, 65535], maxBlockDim: [1024, 1024, 64] },
  },
} as unknown as Module;
const fakeStream = { handle: 0x5000n } as unknown as Stream;

function stubKernel<const S extends Signature>(signature: S, fromImage?: ParamInfo[]): Kernel<S> {
  return new Kernel(INTERNAL, fakeModule, 2n, 'k', signature, fromImage);
}

describe('launch options', () => {
  const known = 'known options: grid, block, sharedMemBytes, stream, cooperative, clusterDim';

  it('rejects unknown keys with the known ones and a suggestion, before the driver is called', () => {
    const k = stubKernel(['ptr', 'i32']);
    const launch = k.launch.bind(k) as (...a: unknown[]) => void;
    const before = stub.launches;
    expect(() => launch({ grid: 1, block: 1, sharedMemByte: 1024 }, 0n, 1)).toThrow(
      new TypeError(`Unknown launch option 'sharedMemByte' (did you mean 'sharedMemBytes'?); ${known}`),
    );
    expect(() => launch({ grid: 1, block: 1, streams: fakeStream }, 0n, 1)).toThrow(
      new TypeError(`Unknown launch option 'streams' (did you mean 'stream'?); ${known}`),
    );
    expect(() => launch({ grid: 1, block: 1, foo: undefined }, 0n, 1)).toThrow(new TypeError(`Unknown launch option 'foo'; ${known}`));
    expect(() => launch({ grid: 1, block: 1, blockDim: 32 }, 0n, 1)).toThrow(/'blockDim' \(did you mean 'block'\?\)/);
    expect(() => launch({ grid: 1, block: 1, cluster: [2, 1, 1] }, 0n, 1)).toThrow(/did you mean 'clusterDim'/);
    expect(() => launch({ grid: 1, block: 1, Stream: fakeStream }, 0n, 1)).toThrow(/did you mean 'stream'/);
    expect(() => launch({ grid: 1, block: 1, id: 1 }, 0n, 1)).toThrow(new TypeError(`Unknown launch option 'id'; ${known}`));
    // Also when the argument count is wrong: the option is the first thing reported.
    expect(() => launch({ grid: 1, block: 1, strem: fakeStream }, 0n)).toThrow(/Unknown launch option 'strem'/);
    expect(stub.launches).toBe(before);
  });

  it('catches a key added to a config object after it was launched with', () => {
    const k = stubKernel(['ptr', 'i32']);
    const cfg: Record<string, unknown> = { grid: 1, block: 1 };
    const launch = k.launch.bind(k) as (...a: unknown[]) => void;
    const before = stub.launches;
    launch(cfg, 0n, 1);
    launch(cfg, 0n, 1);
    cfg.sharedMemByte = 1024;
    expect(() => launch(cfg, 0n, 1)).toThrow(/Unknown launch option 'sharedMemByte'/);
    delete cfg.sharedMemByte;
    cfg.sharedMemBytes = 1024;
    launch(cfg, 0n, 1);
    expect(stub.launches).toBe(before + 3);
    expect(new Uint32Array(stub.buffer!, 0, 8)[6]).toBe(1024);
  });

  it('launches a correct config, writing the header and the arguments into the slot buffer', () => {
    const k = stubKernel(['ptr', { struct: ['f32', 'f32x2', 'i32'] }, 'f32x4', 'i32']);
    const before = stub.launches;
    k.launch({ grid: [3, 2], block: 128, sharedMemBytes: 256, stream: fakeStream }, 0xabc0n, [1.5, [2, 3], 4], [5, 6, 7, 8], 9);
    expect(stub.launches).toBe(before + 1);
    const buf = stub.buffer!;
    expect([...new Uint32Array(buf, 0, 7)]).toEqual([3, 2, 1, 128, 1, 1, 256]);
    expect(new BigUint64Array(buf, 0, 8)[4]).toBe(0x5000n);
    // Offsets from the signature (no driver or image information): ptr 0, struct 8 (align 8), float4 32, int 48.
    expect(stub.offsets).toEqual([0, 8, 32, 48]);
    const dv = new DataView(buf, 64);
    expect(dv.getBigUint64(0, true)).toBe(0xabc0n);
    expect([dv.getFloat32(8, true), dv.getFloat32(16, true), dv.getFloat32(20, true), dv.getInt32(24, true)]).toEqual([1.5, 2, 3, 4]);
    expect([32, 36, 40, 44].map((o) => dv.getFloat32(o, true))).toEqual([5, 6, 7, 8]);
    expect(dv.getInt32(48, true)).toBe(9);
  });

  it('accepts every known option, cooperative and clusterDim included', () => {
    const k = stubKernel([]);
    const before = stub.launches;
    const config = { grid: 2, block: 32, sharedMemBytes: 0, stream: fakeStream, cooperative: false, clusterDim: [2, 1, 1] } as const;
    expect(Object.keys(config)).toEqual(known.replace('known options: ', '').split(', '));
    k.launch(config);
    // Known keys set to undefined mean their defaults (plain JavaScript callers write this).
    const launch = k.launch.bind(k) as (...a: unknown[]) => void;
    launch({ ...config, cooperative: true, clusterDim: undefined });
    launch({ grid: 1, block: 1, stream: undefined, sharedMemBytes: undefined });
    expect(stub.launches).toBe(before + 3);
  });

  it('validates bindLaunch configs the same way', () => {
    const k = stubKernel(['ptr', 'i32']);
    expect(() => k.bindLaunch({ grid: 1, block: 1, sharedMemByte: 1024 } as never, [0n, 1])).toThrow(
      new TypeError(`Unknown launch option 'sharedMemByte' (did you mean 'sharedMemBytes'?); ${known}`),
    );
    expect(() => k.bindLaunch({ grid: 1, block: 1, streams: fakeStream } as never, [0n, 1])).toThrow(/'streams' \(did you mean 'stream'\?\)/);
    const bound = k.bindLaunch({ grid: 4, block: 32, stream: fakeStream }, [0n, 7]);
    expect(new DataView(stub.buffer!, 64).getInt32(8, true)).toBe(7);
    bound.release();
  });
});

describe('signature checks against the compiled parameters', () => {
  afterEach(() => {
    stub.paramInfo = null;
  });

  it('says how to describe a float2 member when the sizes differ by alignment', () => {
    stub.paramInfo = [[0, 24]]; // struct S { float a; float2 b; int c; }
    expect(() => stubKernel([{ struct: ['f32', 'f32', 'f32', 'i32'] }])).toThrow(
      new TypeError(
        "Parameter 0 of kernel 'k' is 24 bytes but the signature says { struct: [f32, f32, f32, i32] } (16 bytes) " +
          "(alignment: CUDA aligns float2 to 8 bytes and float4 to 16; if the struct holds a float2/float4, describe that " +
          "member as 'f32x2'/'f32x4' (likewise i32x2, f64x2, ...), and if it is declared __align__(N), give the struct align: N)",
      ),
    );
    const k = stubKernel([{ struct: ['f32', 'f32x2', 'i32'] }]);
    expect(k.signature).toEqual([{ struct: ['f32', 'f32x2', 'i32'] }]);
  });

  it('names the __align__(N) that gives the compiled size', () => {
    // struct __align__(16) S { float a; }: 16 bytes; from the image when the driver cannot tell.
    expect(() => stubKernel(['ptr', { struct: ['f32'] }], [{ offset: 0, size: 8 }, { offset: 16, size: 16 }])).toThrow(
      /is 16 bytes but the signature says \{ struct: \[f32\] \} \(4 bytes\) \(alignment: .*declared __align__\(16\), give the struct align: 16\)$/,
    );
    expect(stubKernel(['ptr', { struct: ['f32'], align: 16 }], [{ offset: 0, size: 8 }, { offset: 16, size: 16 }]).signature).toHaveLength(2);
  });

  it('adds no alignment advice where alignment cannot explain the difference', () => {
    stub.paramInfo = [[0, 4]];
    expect(() => stubKernel(['f64'])).toThrow(new TypeError("Parameter 0 of kernel 'k' is 4 bytes but the signature says f64 (8 bytes)"));
    stub.paramInfo = [[0, 12]];
    expect(() => stubKernel([{ struct: ['f32', 'i32'] }])).toThrow(/\(8 bytes\)$/);
  });
});
