// SPDX-License-Identifier: MIT
// Element types: the one table of what each type is (size, range, the typed arrays that hold it, check()'s default
// tolerances and poison), the f16/bf16/fp8 conversions, and encoding logical values to device bytes and back. Kernel
// argument packing (args.ts), argument specs (measure/argspec.ts) and correctness checks (measure/check.ts) all read
// it from here.

/** Element types a device buffer can hold (and the numeric scalar parameter types). */
export type DType =
  'i8' | 'u8' | 'i16' | 'u16' | 'i32' | 'u32' | 'i64' | 'u64' | 'f8e4m3' | 'f8e5m2' | 'f16' | 'bf16' | 'f32' | 'f64';
/** Scalar kernel parameter types: the element types, a device pointer and a C++ bool. */
export type ScalarType = DType | 'ptr' | 'bool';

/** The TypedArray classes that typed device and host memory take: `device.allocArray(Float32Array, n)`. */
export type TypedArrayConstructor =
  | Int8ArrayConstructor
  | Uint8ArrayConstructor
  | Uint8ClampedArrayConstructor
  | Int16ArrayConstructor
  | Uint16ArrayConstructor
  | Int32ArrayConstructor
  | Uint32ArrayConstructor
  | Float32ArrayConstructor
  | Float64ArrayConstructor
  | BigInt64ArrayConstructor
  | BigUint64ArrayConstructor;

/** Every typed array constructor (what device.allocArray and device.allocHost accept). */
export const TYPED_ARRAYS: readonly TypedArrayConstructor[] = Object.freeze([
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
]);

/** A typed array of logical values: what JavaScript sees of a buffer (fp8, f16 and bf16 widened to Float32Array). */
export type HostArray = ArrayBufferView & ArrayLike<number | bigint>;
type HostArrayConstructor = new (lengthOrBuffer: number | ArrayBuffer) => HostArray;

/** What one element type is. */
export interface DTypeInfo {
  readonly name: DType;
  /** Bytes per element on the device. */
  readonly bytes: number;
  /** A floating-point type (f8e4m3, f8e5m2, f16, bf16, f32, f64). */
  readonly float: boolean;
  /** Values are bigint (i64, u64). */
  readonly bigint: boolean;
  /** Smallest and largest value of an integer type, exactly; undefined for floats. */
  readonly range: readonly [bigint, bigint] | undefined;
  /** Largest finite magnitude of a float type (beyond it a value becomes Infinity); undefined for integers. */
  readonly maxFinite: number | undefined;
  /** The typed array of logical values (Float32Array for fp8, f16 and bf16, whose bits have no array of their own). */
  readonly hostArray: HostArrayConstructor;
  /** check()'s default tolerances: |actual − expected| ≤ atol + rtol·|expected|. Integers compare exactly. */
  readonly atol: number;
  readonly rtol: number;
  /**
   * check()'s poison, one element little-endian: what an output holds before every launch, so an element the kernel
   * never wrote shows. A quiet NaN for floats, 0xDEADBEEF (or its low bytes) for integers.
   */
  readonly poison: readonly number[];
  /**
   * A float type's unit roundoff, 2^-(significand bits): the largest relative error of rounding a real number to it
   * (f32 2^-24, f16 2^-11, bf16 2^-8, f8e4m3 2^-4, f8e5m2 2^-3); undefined for integers. The precision policy's
   * floor (check()).
   */
  readonly unitRoundoff: number | undefined;
}

const BEEF = [0xef, 0xbe, 0xad, 0xde];
const int = (name: DType, bytes: number, signed: boolean, hostArray: HostArrayConstructor): DTypeInfo => {
  const bits = BigInt(8 * bytes);
  const range: [bigint, bigint] = signed ? [-(1n << (bits - 1n)), (1n << (bits - 1n)) - 1n] : [0n, (1n << bits) - 1n];
  const poison = Array.from({ length: bytes }, (_, i) => BEEF[i % 4]!);
  return {
    name,
    bytes,
    float: false,
    bigint: bytes === 8,
    range,
    maxFinite: undefined,
    hostArray,
    atol: 0,
    rtol: 0,
    poison,
    unitRoundoff: undefined,
  };
};
const float = (
  name: DType,
  bytes: number,
  maxFinite: number,
  tol: number,
  poison: number[],
  significandBits: number,
): DTypeInfo => ({
  name,
  bytes,
  float: true,
  bigint: false,
  range: undefined,
  maxFinite,
  atol: tol,
  rtol: tol,
  poison,
  hostArray: bytes === 8 ? Float64Array : Float32Array,
  unitRoundoff: 2 ** -significandBits,
});

/** The table: every element type by name. */
export const DTYPE_INFO: Readonly<Record<DType, DTypeInfo>> = Object.freeze({
  i8: int('i8', 1, true, Int8Array),
  u8: int('u8', 1, false, Uint8Array),
  i16: int('i16', 2, true, Int16Array),
  u16: int('u16', 2, false, Uint16Array),
  i32: int('i32', 4, true, Int32Array),
  u32: int('u32', 4, false, Uint32Array),
  i64: int('i64', 8, true, BigInt64Array as unknown as HostArrayConstructor),
  u64: int('u64', 8, false, BigUint64Array as unknown as HostArrayConstructor),
  // CUDA's __nv_fp8_e4m3 and __nv_fp8_e5m2 (torch's float8_e4m3fn and float8_e5m2): 3 and 2 mantissa bits; e4m3
  // has no infinities. Their tolerances are two units of their roundoff; their poison a NaN (0x7f in both).
  f8e4m3: float('f8e4m3', 1, 448, 0.125, [0x7f], 4),
  f8e5m2: float('f8e5m2', 1, 57344, 0.25, [0x7f], 3),
  f16: float('f16', 2, 65504, 1e-2, [0x00, 0x7e], 11),
  bf16: float('bf16', 2, 3.3895313892515355e38, 1e-2, [0xc0, 0x7f], 8),
  f32: float('f32', 4, 3.4028234663852886e38, 1e-4, [0x00, 0x00, 0xc0, 0x7f], 24),
  f64: float('f64', 8, Number.MAX_VALUE, 1e-8, [0, 0, 0, 0, 0, 0, 0xf8, 0x7f], 53),
});

/** The element type names, in the order of the table (integers by size, then floats). */
export const DTYPES: readonly DType[] = Object.freeze(Object.keys(DTYPE_INFO) as DType[]);

export function isDType(value: unknown): value is DType {
  return typeof value === 'string' && Object.hasOwn(DTYPE_INFO, value);
}

/** Bytes of every scalar parameter type (a pointer is 8 bytes, a bool 1). */
export const SCALAR_BYTES: Readonly<Record<ScalarType, number>> = Object.freeze({
  ptr: 8,
  i8: 1,
  u8: 1,
  f8e4m3: 1,
  f8e5m2: 1,
  bool: 1,
  i16: 2,
  u16: 2,
  f16: 2,
  bf16: 2,
  i32: 4,
  u32: 4,
  f32: 4,
  i64: 8,
  u64: 8,
  f64: 8,
});

// ---------------------------------------------------------------------------------------------------------------
// f16 and bf16

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** IEEE half bits of x, rounded to nearest even (overflow → ±Infinity, NaN kept). */
export function toHalfBits(x: number): number {
  F32[0] = x;
  const f = U32[0]!;
  const sign = (f >>> 16) & 0x8000;
  const exp = (f >>> 23) & 0xff;
  let mant = f & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  // Rounding from double via float first is safe here: float has 13 more mantissa bits than half.
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1) === 1)) half++; // a carry into the exponent is correct
  return sign | half;
}

/** bfloat16 bits of x, rounded to nearest even. */
export function toBf16Bits(x: number): number {
  F32[0] = x;
  const f = U32[0]!;
  if ((f & 0x7f800000) === 0x7f800000 && (f & 0x7fffff) !== 0) return ((f >>> 16) | 0x40) & 0xffff; // quiet NaN
  return ((f + 0x7fff + ((f >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The value of IEEE half bits (the inverse of toHalfBits; exact). */
export function fromHalfBits(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? Number.NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** The value of bfloat16 bits (the inverse of toBf16Bits; exact). */
export function fromBf16Bits(h: number): number {
  U32[0] = h << 16;
  return F32[0]!;
}

// ---------------------------------------------------------------------------------------------------------------
// fp8 (e4m3 and e5m2)

/** The two fp8 formats: mantissa bits, exponent bias, smallest normal exponent. */
const FP8: Readonly<
  Record<'f8e4m3' | 'f8e5m2', { mantissaBits: number; bias: number; minExponent: number; maxFinite: number }>
> = {
  f8e4m3: { mantissaBits: 3, bias: 7, minExponent: -6, maxFinite: 448 },
  f8e5m2: { mantissaBits: 2, bias: 15, minExponent: -14, maxFinite: 57344 },
};

/** An fp8 element type. */
export type Fp8DType = 'f8e4m3' | 'f8e5m2';

/** Whether an element type is one of the fp8 formats. */
export function isFp8(dtype: DType): dtype is Fp8DType {
  return dtype === 'f8e4m3' || dtype === 'f8e5m2';
}

/** The value of fp8 bits (exact): e4m3's 0x7f and 0xff are NaN (it has no infinities), e5m2's are IEEE-like. */
export function fromFp8Bits(dtype: Fp8DType, bits: number): number {
  const f = FP8[dtype];
  const sign = bits & 0x80 ? -1 : 1;
  const exponentField = (bits & 0x7f) >> f.mantissaBits;
  const mantissa = bits & ((1 << f.mantissaBits) - 1);
  const top = (1 << (7 - f.mantissaBits)) - 1;
  if (dtype === 'f8e4m3' && exponentField === top && mantissa === (1 << f.mantissaBits) - 1) return Number.NaN;
  if (dtype === 'f8e5m2' && exponentField === top) return mantissa === 0 ? sign * Infinity : Number.NaN;
  if (exponentField === 0) return sign * mantissa * 2 ** (f.minExponent - f.mantissaBits);
  return sign * (1 + mantissa / (1 << f.mantissaBits)) * 2 ** (exponentField - f.bias);
}

/**
 * fp8 bits of x as CUDA's __nv_fp8_e4m3(x) and __nv_fp8_e5m2(x) make them (__NV_SATFINITE): rounded to nearest
 * even, values past the largest finite one (infinities included) saturated to it, NaN kept (0x7f, with x's sign).
 */
export function toFp8Bits(dtype: Fp8DType, x: number): number {
  const f = FP8[dtype];
  const sign = x < 0 || Object.is(x, -0) ? 0x80 : 0;
  const abs = Math.abs(x);
  if (Number.isNaN(abs)) return sign | 0x7f;
  if (abs === 0) return sign;
  const maxBits = dtype === 'f8e4m3' ? 0x7e : 0x7b;
  if (abs >= f.maxFinite) return sign | maxBits;
  // The exponent of abs, exactly (log2 can be one off next to a power of two), no lower than the normals' smallest.
  let e = Math.floor(Math.log2(abs));
  if (2 ** e > abs) e--;
  else if (2 ** (e + 1) <= abs) e++;
  e = Math.max(e, f.minExponent);
  const quantum = 2 ** (e - f.mantissaBits);
  const scaled = abs / quantum; // exact: a power of two
  let m = Math.floor(scaled);
  const rest = scaled - m;
  if (rest > 0.5 || (rest === 0.5 && m % 2 === 1)) m++;
  if (m * quantum > f.maxFinite) return sign | maxBits;
  const implicit = 1 << f.mantissaBits;
  if (m < implicit) return sign | m; // a subnormal (or zero), e at its smallest
  if (m === 2 * implicit) return sign | ((e + 1 + f.bias) << f.mantissaBits); // rounded up into the next binade
  return sign | ((e + f.bias) << f.mantissaBits) | (m - implicit);
}

/** Every fp8 byte's value, per format: fromDeviceBytes looks them up. */
const FP8_VALUES: Record<Fp8DType, Float32Array> = {
  f8e4m3: Float32Array.from({ length: 256 }, (_, b) => fromFp8Bits('f8e4m3', b)),
  f8e5m2: Float32Array.from({ length: 256 }, (_, b) => fromFp8Bits('f8e5m2', b)),
};

// ---------------------------------------------------------------------------------------------------------------
// Logical values ⇄ device bytes

/**
 * Device bytes (little-endian) of `values`, element by element as the type converts them: f16/bf16 rounded to
 * nearest even, fp8 as toFp8Bits, integers wrapped as their typed array wraps them, i64/u64 from bigints.
 */
export function toDeviceBytes(dtype: DType, values: ArrayLike<number | bigint>): Uint8Array {
  const d = DTYPE_INFO[dtype];
  const n = values.length;
  if (isFp8(dtype)) {
    const bits = new Uint8Array(n);
    for (let i = 0; i < n; i++) bits[i] = toFp8Bits(dtype, values[i] as number);
    return bits;
  }
  if (dtype === 'f16' || dtype === 'bf16') {
    const bits = new Uint16Array(n);
    const convert = dtype === 'f16' ? toHalfBits : toBf16Bits;
    for (let i = 0; i < n; i++) bits[i] = convert(values[i] as number);
    return new Uint8Array(bits.buffer);
  }
  // set() converts as element assignment does (rounding to f32, wrapping integers), in native code.
  const arr = new d.hostArray(n) as unknown as { set(v: ArrayLike<number | bigint>): void; buffer: ArrayBuffer };
  arr.set(values);
  return new Uint8Array(arr.buffer);
}

/** The logical values of device bytes: a typed array of its own (fp8/f16/bf16 as Float32Array, i64/u64 as bigints). */
export function fromDeviceBytes(dtype: DType, bytes: Uint8Array): HostArray {
  const d = DTYPE_INFO[dtype];
  const n = Math.floor(bytes.byteLength / d.bytes);
  const aligned = new Uint8Array(bytes.subarray(0, n * d.bytes)); // own, aligned copy
  if (isFp8(dtype)) {
    const values = FP8_VALUES[dtype];
    return Float32Array.from(aligned, (b) => values[b]!);
  }
  if (dtype === 'f16' || dtype === 'bf16') {
    const bits = new Uint16Array(aligned.buffer);
    const out = new Float32Array(n);
    const convert = dtype === 'f16' ? fromHalfBits : fromBf16Bits;
    for (let i = 0; i < n; i++) out[i] = convert(bits[i]!);
    return out;
  }
  return new d.hostArray(aligned.buffer);
}
