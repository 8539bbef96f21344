// SPDX-License-Identifier: MIT
// Kernels: explicit signatures, argument packing into a buffer shared with native code, launch validation against
// device and kernel limits, attributes and occupancy.
import type { Device } from './device.js';
import type { ParamInfo } from './image.js';
import type { Module } from './module.js';
import { assertUsable } from './errors.js';
import { INTERNAL, checkInternal, disposedError } from './lifetime.js';
import { DeviceBuffer } from './memory.js';
import { getNative, type Handle, type Native } from './native.js';
import type { Stream } from './stream.js';
import { checkSize, rangeError, typeError } from './validate.js';

export type ScalarType =
  | 'ptr' | 'i8' | 'u8' | 'i16' | 'u16' | 'i32' | 'u32' | 'i64' | 'u64' | 'f16' | 'bf16' | 'f32' | 'f64' | 'bool';
/** Element types of the CUDA vector types (char, uchar, short, ushort, int, uint, longlong, ulonglong, float, double). */
export type VectorElement = 'i8' | 'u8' | 'i16' | 'u16' | 'i32' | 'u32' | 'i64' | 'u64' | 'f32' | 'f64';
/**
 * CUDA's built-in vector types, by value: float2 is 'f32x2', int4 'i32x4', uchar4 'u8x4', double2 'f64x2',
 * longlong2 'i64x2', float3 'f32x3', __half2 'f16x2', __nv_bfloat162 'bf16x2'. Their argument is an array of the
 * components [x, y, z?, w?]. They carry CUDA's alignment, which is larger than their element's: x2 and x4 vectors
 * are aligned to their size up to 16 bytes (float2 8, float4 16, double2 16, short2 4, char4 4, double4 16), x3
 * vectors to their element (float3: alignment 4, size 12).
 *
 * Spelled like the scalars (element, 'x', length) rather than as an object such as { vector: 'f32', length: 2 }:
 * a signature stays a flat list of short names that reads like the CUDA declaration, and the spelling can only
 * name vector types CUDA has, whose alignment is fixed by CUDA rather than chosen by the caller.
 */
export type VectorType = `${VectorElement}x${2 | 3 | 4}` | 'f16x2' | 'bf16x2';
/**
 * A struct passed by value, fields laid out as C does. Its argument is an array of the field values.
 * `align` stands for `struct __align__(N) S { ... }` (or alignas(N)): the struct's alignment is the larger of
 * `align` and its members' alignments, and its size is rounded up to it.
 */
export interface StructType {
  readonly struct: readonly ParamType[];
  /** A power of two up to 256. */
  readonly align?: number;
}
/** Raw bytes passed by value (any POD type); its argument is an ArrayBuffer or a view of exactly `bytes` bytes. */
export interface BytesType {
  readonly bytes: number;
  readonly align?: number;
}
export type ParamType = ScalarType | VectorType | StructType | BytesType;
export type Signature = readonly ParamType[];

/** The JavaScript value for one parameter type (structs nest up to 4 levels deep in the types). */
export type ArgFor<P, Depth extends number = 4> = [Depth] extends [never]
  ? unknown
  : P extends 'ptr'
    ? DeviceBuffer | bigint
    : P extends 'i64' | 'u64'
      ? bigint | number
      : P extends 'bool'
        ? boolean
        : P extends ScalarType
          ? number
          : P extends `${infer E}x${infer N}`
            ? VectorArg<E extends 'i64' | 'u64' ? bigint | number : number, N>
            : P extends { readonly struct: infer F extends readonly unknown[] }
              ? { -readonly [K in keyof F]: ArgFor<F[K], PrevDepth[Depth]> }
              : P extends { readonly bytes: number }
                ? ArrayBufferView | ArrayBuffer
                : never;
type PrevDepth = [never, 0, 1, 2, 3];
/** The components of a vector argument, [x, y, z?, w?]. */
type VectorArg<T, N> = N extends '2'
  ? readonly [T, T]
  : N extends '3'
    ? readonly [T, T, T]
    : N extends '4'
      ? readonly [T, T, T, T]
      : never;
/** Launch arguments typed from a signature: a wrong argument is a compile error in the editor. */
export type ArgsFor<S extends readonly ParamType[]> = { -readonly [K in keyof S]: ArgFor<S[K]> };

export type Dim3 = number | readonly [number] | readonly [number, number] | readonly [number, number, number];

export interface LaunchConfig {
  grid: Dim3;
  block: Dim3;
  /** Dynamic shared memory per block. Default 0. */
  sharedMemBytes?: number;
  /** Default: the device's legacy default stream. */
  stream?: Stream;
  /** Cooperative launch (grid-wide sync); the whole grid must be resident at once. */
  cooperative?: boolean;
  /** Thread block cluster dimensions (Hopper and later). */
  clusterDim?: Dim3;
}

export interface KernelAttributes {
  numRegs: number;
  sharedSizeBytes: number;
  constSizeBytes: number;
  localSizeBytes: number;
  maxThreadsPerBlock: number;
  ptxVersion: number;
  binaryVersion: number;
  maxDynamicSharedSizeBytes: number;
}

const FUNC_ATTR = {
  maxThreadsPerBlock: 0,
  sharedSizeBytes: 1,
  constSizeBytes: 2,
  localSizeBytes: 3,
  numRegs: 4,
  ptxVersion: 5,
  binaryVersion: 6,
  maxDynamicSharedSizeBytes: 8,
} as const;

/** Bytes before the parameters in a slot buffer (see native/kernel.cc). */
const PARAM_BASE = 64;

type Writer = (dv: DataView, offset: number, value: unknown) => void;
/** @internal How one parameter type sits in memory. */
export interface Layout {
  size: number;
  align: number;
  /** Byte offsets of a struct's fields or a vector's components, from the start of the value. */
  offsets?: readonly number[];
  write: Writer;
}

const SCALAR_SIZE: Record<ScalarType, number> = {
  ptr: 8, i8: 1, u8: 1, bool: 1, i16: 2, u16: 2, f16: 2, bf16: 2, i32: 4, u32: 4, f32: 4, i64: 8, u64: 8, f64: 8,
};

const VECTOR_ELEMENTS: readonly VectorElement[] = ['i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'i64', 'u64', 'f32', 'f64'];
/** Every vector type name → its element and length (f16 and bf16 come only as the pairs __half2 and __nv_bfloat162). */
const VECTORS = new Map<string, { element: ScalarType; length: number }>([
  ['f16x2', { element: 'f16', length: 2 }],
  ['bf16x2', { element: 'bf16', length: 2 }],
]);
for (const element of VECTOR_ELEMENTS) for (const length of [2, 3, 4]) VECTORS.set(`${element}x${length}`, { element, length });
const PARAM_TYPES =
  `${Object.keys(SCALAR_SIZE).join(', ')}, a vector such as f32x2, f32x4, i32x2 or u8x4, { struct: [...], align? }, { bytes }`;
const ALIGNS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

export function formatParam(p: ParamType): string {
  if (typeof p === 'string') return p;
  if ('struct' in p) return `{ struct: [${p.struct.map(formatParam).join(', ')}]${p.align !== undefined ? `, align: ${p.align}` : ''} }`;
  return `{ bytes: ${p.bytes}${p.align !== undefined ? `, align: ${p.align}` : ''} }`;
}

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

function intWriter(where: string, bits: 8 | 16 | 32, signed: boolean): Writer {
  const min = signed ? -(2 ** (bits - 1)) : 0;
  const max = signed ? 2 ** (bits - 1) - 1 : 2 ** bits - 1;
  const expected = `an integer in [${min}, ${max}]`;
  const check = (v: unknown): number => {
    if (typeof v !== 'number') throw typeError(where, expected, v);
    if (!Number.isInteger(v) || v < min || v > max) throw rangeError(where, expected, v);
    return v;
  };
  if (bits === 8) return signed ? (dv, o, v) => dv.setInt8(o, check(v)) : (dv, o, v) => dv.setUint8(o, check(v));
  if (bits === 16) {
    return signed ? (dv, o, v) => dv.setInt16(o, check(v), true) : (dv, o, v) => dv.setUint16(o, check(v), true);
  }
  return signed ? (dv, o, v) => dv.setInt32(o, check(v), true) : (dv, o, v) => dv.setUint32(o, check(v), true);
}

function int64Writer(where: string, signed: boolean): Writer {
  const min = signed ? -(1n << 63n) : 0n;
  const max = signed ? (1n << 63n) - 1n : (1n << 64n) - 1n;
  const expected = `a bigint or safe integer in [${min}, ${max}]`;
  return (dv, o, v) => {
    let b: bigint;
    if (typeof v === 'bigint') b = v;
    else if (typeof v === 'number' && Number.isSafeInteger(v)) b = BigInt(v);
    else throw (typeof v === 'number' ? rangeError : typeError)(where, expected, v);
    if (b < min || b > max) throw rangeError(where, expected, v);
    if (signed) dv.setBigInt64(o, b, true);
    else dv.setBigUint64(o, b, true);
  };
}

function floatWriter(where: string, kind: 'f16' | 'bf16' | 'f32' | 'f64'): Writer {
  const check = (v: unknown): number => {
    if (typeof v !== 'number') throw typeError(where, 'a number', v);
    return v;
  };
  switch (kind) {
    case 'f16': return (dv, o, v) => dv.setUint16(o, toHalfBits(check(v)), true);
    case 'bf16': return (dv, o, v) => dv.setUint16(o, toBf16Bits(check(v)), true);
    case 'f32': return (dv, o, v) => dv.setFloat32(o, check(v), true);
    case 'f64': return (dv, o, v) => dv.setFloat64(o, check(v), true);
  }
}

function ptrWriter(where: string): Writer {
  return (dv, o, v) => {
    if (v instanceof DeviceBuffer) dv.setBigUint64(o, v.ptr, true);
    else if (typeof v === 'bigint' && v >= 0n && v < 1n << 64n) dv.setBigUint64(o, v, true);
    else throw typeError(where, 'a DeviceBuffer or a bigint device address', v);
  };
}

const alignUp = (n: number, a: number): number => Math.ceil(n / a) * a;

/** TypeError for a value that should be an array of `length` items; says how long an array of the wrong length was. */
function arrayError(where: string, expected: string, v: unknown): TypeError {
  if (!Array.isArray(v)) return typeError(where, expected, v);
  return new TypeError(`Expected ${expected} for ${where} but received an array of ${v.length} element${v.length === 1 ? '' : 's'}`);
}

function checkAlign(name: string, value: unknown): number {
  if (typeof value !== 'number') throw typeError(name, 'a power of two up to 256', value);
  if (!ALIGNS.includes(value)) throw rangeError(name, 'a power of two up to 256', value);
  return value;
}

/** Unknown keys in an object parameter type are a TypeError: a misspelt `align` would silently change the layout. */
function checkTypeKeys(p: object, where: string, known: readonly string[]): void {
  for (const key of Object.keys(p)) {
    if (!known.includes(key)) throw new TypeError(`Unknown key '${key}' in the parameter type of ${where}; known keys: ${known.join(', ')}`);
  }
}

function scalarWriter(p: ScalarType, where: string): Writer {
  switch (p) {
    case 'ptr': return ptrWriter(where);
    case 'i8': return intWriter(where, 8, true);
    case 'u8': return intWriter(where, 8, false);
    case 'i16': return intWriter(where, 16, true);
    case 'u16': return intWriter(where, 16, false);
    case 'i32': return intWriter(where, 32, true);
    case 'u32': return intWriter(where, 32, false);
    case 'i64': return int64Writer(where, true);
    case 'u64': return int64Writer(where, false);
    case 'bool':
      return (dv, o, v) => {
        if (typeof v !== 'boolean') throw typeError(where, 'a boolean', v);
        dv.setUint8(o, v ? 1 : 0);
      };
    default: return floatWriter(where, p);
  }
}

/** A CUDA vector type: `length` elements in a row, aligned to the whole vector up to 16 bytes (x3: to the element). */
function vectorLayout(name: string, element: ScalarType, length: number, where: string): Layout {
  const elementSize = SCALAR_SIZE[element];
  const size = elementSize * length;
  const offsets = Array.from({ length }, (_, i) => i * elementSize);
  const writers = offsets.map((_, i) => scalarWriter(element, `${where} component ${'xyzw'[i]}`));
  const wide = element === 'i64' || element === 'u64';
  const expected = `an array of ${length} ${wide ? 'bigints or safe integers' : 'numbers'} (${name})`;
  return {
    size,
    align: length === 3 ? elementSize : Math.min(size, 16),
    offsets,
    write: (dv, o, v) => {
      if (!Array.isArray(v) || v.length !== length) throw arrayError(where, expected, v);
      for (let i = 0; i < length; i++) writers[i]!(dv, o + offsets[i]!, v[i]);
    },
  };
}

/** Size, alignment and a validating writer for one parameter type (C layout rules, CUDA vector alignment). */
export function layoutOf(p: ParamType, where: string): Layout {
  if (typeof p === 'string') {
    const vector = VECTORS.get(p);
    if (vector !== undefined) return vectorLayout(p, vector.element, vector.length, where);
    if (!Object.hasOwn(SCALAR_SIZE, p)) throw typeError(where, `a parameter type (${PARAM_TYPES})`, p);
    const size = SCALAR_SIZE[p as ScalarType];
    return { size, align: size, write: scalarWriter(p as ScalarType, where) };
  }
  if (typeof p !== 'object' || p === null) throw typeError(where, `a parameter type (${PARAM_TYPES})`, p);
  if ('struct' in p) {
    checkTypeKeys(p, where, ['struct', 'align']);
    if (!Array.isArray(p.struct) || p.struct.length === 0) throw typeError(`${where}.struct`, 'a non-empty array of field types', p.struct);
    const fields: { offset: number; layout: Layout }[] = [];
    let size = 0;
    let align = p.align === undefined ? 1 : checkAlign(`${where}.align`, p.align);
    p.struct.forEach((f, i) => {
      const layout = layoutOf(f, `${where} field ${i} (${formatParam(f)})`);
      size = alignUp(size, layout.align);
      fields.push({ offset: size, layout });
      size += layout.size;
      align = Math.max(align, layout.align);
    });
    size = alignUp(size, align);
    const n = fields.length;
    return {
      size,
      align,
      offsets: fields.map((f) => f.offset),
      write: (dv, o, v) => {
        if (!Array.isArray(v) || v.length !== n) throw arrayError(where, `an array of ${n} field values`, v);
        for (let i = 0; i < n; i++) fields[i]!.layout.write(dv, o + fields[i]!.offset, v[i]);
      },
    };
  }
  if ('bytes' in p) {
    checkTypeKeys(p, where, ['bytes', 'align']);
    const size = checkSize(`${where}.bytes`, p.bytes);
    const align = p.align === undefined ? Math.min(8, size & -size || 1) : checkAlign(`${where}.align`, p.align);
    return {
      size,
      align,
      write: (dv, o, v) => {
        const src = ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : v instanceof ArrayBuffer ? new Uint8Array(v) : undefined;
        if (src === undefined) throw typeError(where, `an ArrayBuffer or view of ${size} bytes`, v);
        if (src.byteLength !== size) throw rangeError(`${where} byteLength`, `exactly ${size} bytes`, src.byteLength);
        new Uint8Array(dv.buffer, dv.byteOffset + o, size).set(src);
      },
    };
  }
  throw typeError(where, `a parameter type (${PARAM_TYPES})`, p);
}

/**
 * Why a struct parameter's size may differ from the compiled one when alignment is the likely cause, as advice to
 * append to the mismatch message; '' when it is not. The likely causes: a vector member (float2, float4, ...) written
 * as a run of scalars, which packs it at the element's alignment, or a struct declared __align__(N) without `align`.
 */
function alignmentHint(p: ParamType, layout: Layout, compiledSize: number): string {
  if (typeof p !== 'object' || !('struct' in p) || compiledSize <= layout.size) return '';
  // The smallest __align__(N) that would give the compiled size, if any.
  const n = ALIGNS.find((a) => a > layout.align && alignUp(layout.size, a) === compiledSize);
  if (n === undefined && !hasVectorLikeRun(p)) return '';
  const N = n ?? 'N';
  return (
    ` (alignment: CUDA aligns float2 to 8 bytes and float4 to 16; if the struct holds a float2/float4, describe that ` +
    `member as 'f32x2'/'f32x4' (likewise i32x2, f64x2, ...), and if it is declared __align__(${N}), give the struct align: ${N})`
  );
}

/** Whether a struct (or a struct inside it) has two or more same-typed scalar fields in a row spanning 8 or 16 bytes. */
function hasVectorLikeRun(p: StructType): boolean {
  let run = 0;
  let prev: ParamType | undefined;
  for (const f of p.struct) {
    if (typeof f === 'object' && 'struct' in f && hasVectorLikeRun(f)) return true;
    run = typeof f === 'string' && f === prev && !VECTORS.has(f) && f !== 'ptr' && f !== 'bool' ? run + 1 : 1;
    prev = f;
    const bytes = typeof f === 'string' && !VECTORS.has(f) ? (SCALAR_SIZE[f as ScalarType] ?? 0) : 0;
    if ((run === 2 && (bytes * 2 === 8 || bytes * 2 === 16)) || (run === 4 && (bytes * 4 === 8 || bytes * 4 === 16))) return true;
  }
  return false;
}

function readDim(name: string, v: unknown, max: readonly [number, number, number], out: Uint32Array, at: number): number {
  let x: unknown;
  let y: unknown = 1;
  let z: unknown = 1;
  if (typeof v === 'number') x = v;
  else if (Array.isArray(v) && v.length >= 1 && v.length <= 3) [x, y = 1, z = 1] = v as unknown[];
  else throw typeError(name, 'a positive integer or [x, y?, z?]', v);
  const dims = [x, y, z];
  for (let i = 0; i < 3; i++) {
    const d = dims[i];
    const limit = max[i]!;
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > limit) {
      throw (typeof d === 'number' ? rangeError : typeError)(`${name}.${'xyz'[i]}`, `an integer in [1, ${limit}]`, d);
    }
    out[at + i] = d;
  }
  return (x as number) * (y as number) * (z as number);
}

/** Every LaunchConfig key; checkLaunchKeys spells the same list as switch cases (a unit test launches with each). */
const LAUNCH_KEYS: readonly (keyof LaunchConfig)[] = ['grid', 'block', 'sharedMemBytes', 'stream', 'cooperative', 'clusterDim'];

/**
 * Unknown launch options are a TypeError, so a typo (sharedMemByte, streams) cannot launch with the defaults.
 * This runs on every launch and is allocation-free: for-in over a plain object walks V8's enum cache, and the
 * switch compares interned strings. Nothing is cached per config object, so a key added to a config that was
 * launched with before is still caught. Measured at 5-10 ns per launch (of about 2.4 µs), and no allocation.
 */
function checkLaunchKeys(config: LaunchConfig): void {
  for (const key in config) {
    switch (key) {
      case 'grid': case 'block': case 'sharedMemBytes': case 'stream': case 'cooperative': case 'clusterDim':
        continue;
      default:
        throw unknownLaunchOption(key);
    }
  }
}

/** Edit distance between two short strings (case-insensitive), for "did you mean". */
function editDistance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let row = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const next = [i];
    for (let j = 1; j <= y.length; j++) {
      next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1)));
    }
    row = next;
  }
  return row[y.length]!;
}

/** The known option a misspelt one most likely meant: close in edit distance, or one containing the other. */
function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = Infinity;
  for (const k of known) {
    const d = editDistance(key, k);
    const [short, long] = key.length < k.length ? [key, k] : [k, key];
    const contains = short.length >= 4 && long.toLowerCase().includes(short.toLowerCase());
    const limit = key.length <= 3 ? 1 : Math.max(2, Math.floor(key.length / 5));
    const score = d <= limit ? d : contains ? 100 + d : Infinity;
    if (score < bestScore) [best, bestScore] = [k, score];
  }
  return best;
}

function unknownLaunchOption(key: string): TypeError {
  const near = closestKey(key, LAUNCH_KEYS);
  return new TypeError(
    `Unknown launch option '${key}'${near !== undefined ? ` (did you mean '${near}'?)` : ''}; ` +
      `known options: ${LAUNCH_KEYS.join(', ')}`,
  );
}
const NO_LIMIT: readonly [number, number, number] = [0xffffffff, 0xffffffff, 0xffffffff];

/** A kernel with a fixed signature. Launches are synchronous enqueues: cheap, no Promise, no allocation. */
export class Kernel<S extends Signature = Signature> implements Disposable {
  readonly name: string;
  readonly device: Device;
  /** The module this kernel lives in (kept alive by the kernel). */
  readonly module: Module;
  readonly signature: S;
  readonly #native: Native;
  readonly #fn: Handle;
  readonly #ctx: Handle;
  readonly #buffer: ArrayBuffer;
  readonly #dv: DataView;
  readonly #u32: Uint32Array;
  readonly #u64: BigUint64Array;
  readonly #writers: Writer[];
  readonly #offsets: number[];
  #slot: number;
  #lastGrid: number | undefined;
  #lastBlock: number | undefined;
  #lastSmem = 0;
  #lastStream = 0n;
  // Read from the driver at first need, not in the constructor: under lazy loading (the default since CUDA 12.2) a
  // function attribute loads the function's code, which getKernel alone should not pay for; a launch pays it anyway.
  #maxThreads = -1;
  #maxDynamicSmem = -1;
  #attributes: KernelAttributes | undefined;

  /** @internal */
  constructor(token: typeof INTERNAL, module: Module, fn: Handle, name: string, signature: S, fromImage?: ParamInfo[]) {
    checkInternal(token, 'Kernel', 'module.getKernel(name, signature)');
    if (!Array.isArray(signature)) throw typeError('signature', "an array of parameter types such as ['ptr', 'f32', 'i32']", signature);
    const device = module.device;
    this.name = name;
    this.device = device;
    this.module = module;
    this.signature = Object.freeze([...signature]) as unknown as S;
    this.#native = getNative();
    this.#fn = fn;
    this.#ctx = device.ctx;
    const layouts = signature.map((p, i) => layoutOf(p, `argument ${i} (${formatParam(p)}) of kernel '${name}'`));
    // The compiled parameter list, from the driver (CUDA >= 12.4) or else from the image itself: a signature that
    // disagrees is caught here, before it can silently pass garbage (e.g. 'f32' for a double). The image also tells
    // how many parameters to ask the driver about, so it is never probed past the last one.
    const info =
      this.#native.funcGetParamInfo(this.#ctx, fn, fromImage?.length ?? -1) ??
      fromImage?.map(({ offset, size }): [number, number] => [offset, size]) ??
      null;
    let offsets: number[];
    if (info !== null) {
      if (info.length !== layouts.length) {
        throw new TypeError(
          `Kernel '${name}' takes ${info.length} parameter${info.length === 1 ? '' : 's'} but the signature lists ` +
            `${layouts.length}: [${signature.map(formatParam).join(', ')}]`,
        );
      }
      info.forEach(([, size], i) => {
        if (size !== layouts[i]!.size) {
          throw new TypeError(
            `Parameter ${i} of kernel '${name}' is ${size} bytes but the signature says ` +
              `${formatParam(signature[i]!)} (${layouts[i]!.size} bytes)${alignmentHint(signature[i]!, layouts[i]!, size)}`,
          );
        }
      });
      offsets = info.map(([offset]) => offset);
    } else {
      offsets = [];
      let at = 0;
      for (const l of layouts) {
        at = alignUp(at, l.align);
        offsets.push(at);
        at += l.size;
      }
    }
    const paramBytes = layouts.reduce((end, l, i) => Math.max(end, offsets[i]! + l.size), 0);
    this.#buffer = new ArrayBuffer(PARAM_BASE + alignUp(Math.max(paramBytes, 8), 8));
    this.#dv = new DataView(this.#buffer);
    this.#u32 = new Uint32Array(this.#buffer, 0, 8);
    this.#u64 = new BigUint64Array(this.#buffer, 0, 8);
    this.#writers = layouts.map((l) => l.write);
    this.#offsets = offsets.map((o) => o + PARAM_BASE);
    this.#slot = this.#native.kernelSlotCreate(this.#ctx, fn, this.#buffer, offsets);
  }

  /** The raw CUfunction. Borrowed: valid while the module is loaded. */
  get handle(): Handle {
    if (this.#slot < 0) throw disposedError(`Kernel '${this.name}'`);
    return this.#fn;
  }

  private get maxThreads(): number {
    if (this.#maxThreads < 0) this.#maxThreads = Math.min(this.device.limits.maxThreadsPerBlock, this.attr(FUNC_ATTR.maxThreadsPerBlock));
    return this.#maxThreads;
  }

  private get maxDynamicSmem(): number {
    if (this.#maxDynamicSmem < 0) this.#maxDynamicSmem = this.attr(FUNC_ATTR.maxDynamicSharedSizeBytes);
    return this.#maxDynamicSmem;
  }

  private attr(id: number): number {
    return this.#native.funcGetAttribute(this.#ctx, this.handle, id);
  }

  /** Registers, memory sizes, limits and versions of the compiled kernel. */
  get attributes(): KernelAttributes {
    if (this.#attributes === undefined) {
      const a = {} as Record<keyof KernelAttributes, number>;
      for (const [k, id] of Object.entries(FUNC_ATTR)) a[k as keyof KernelAttributes] = this.attr(id);
      this.#attributes = a;
    }
    return { ...this.#attributes, maxDynamicSharedSizeBytes: this.maxDynamicSmem };
  }

  /** Allows launches with up to `bytes` of dynamic shared memory (above the 48 KiB default, up to the opt-in limit). */
  setMaxDynamicSharedMemory(bytes: number): void {
    const max = this.device.limits.maxSharedMemoryPerBlockOptinBytes;
    checkSize('bytes', bytes, max);
    this.#native.funcSetAttribute(this.#ctx, this.handle, FUNC_ATTR.maxDynamicSharedSizeBytes, bytes);
    this.#maxDynamicSmem = bytes;
    this.#lastSmem = -1; // re-validate shared memory at the next launch
  }

  /** Blocks of `blockSize` threads that fit on one SM at once (occupancy). */
  maxActiveBlocksPerMultiprocessor(blockSize: number, dynamicSharedMemBytes = 0): number {
    const maxThreads = this.maxThreads;
    if (typeof blockSize !== 'number' || !Number.isInteger(blockSize) || blockSize < 1 || blockSize > maxThreads) {
      throw (typeof blockSize === 'number' ? rangeError : typeError)('blockSize', `an integer in [1, ${maxThreads}]`, blockSize);
    }
    checkSize('dynamicSharedMemBytes', dynamicSharedMemBytes);
    return this.#native.occupancyMaxActiveBlocksPerMultiprocessor(this.#ctx, this.handle, blockSize, dynamicSharedMemBytes);
  }

  /** The block size with the best occupancy, and the smallest grid that reaches it. */
  suggestedBlockSize(dynamicSharedMemBytes = 0): { blockSize: number; minGridSize: number } {
    checkSize('dynamicSharedMemBytes', dynamicSharedMemBytes);
    const [minGridSize, blockSize] = this.#native.occupancyMaxPotentialBlockSize(this.#ctx, this.handle, dynamicSharedMemBytes, 0);
    return { blockSize, minGridSize };
  }

  /**
   * Enqueues the kernel. Grid, block and shared memory are checked against the device's and the kernel's limits,
   * and every argument against its signature type, before the driver is called (TypeError / RangeError).
   */
  launch(config: LaunchConfig, ...args: ArgsFor<S>): void {
    if (this.#slot < 0) throw disposedError(`Kernel '${this.name}'`);
    assertUsable('cuLaunchKernel');
    if (typeof config !== 'object' || config === null) throw typeError('config', 'a launch config { grid, block }', config);
    checkLaunchKeys(config);
    // Validation and header writes are skipped when grid, block, shared memory and stream repeat the previous
    // launch's (numbers and handles compare by value, so this cannot miss a change).
    const { grid, block } = config;
    if (typeof grid !== 'number' || grid !== this.#lastGrid) {
      this.#lastGrid = undefined;
      readDim('grid', grid, this.device.limits.maxGridDim, this.#u32, 0);
      if (typeof grid === 'number') this.#lastGrid = grid;
    }
    if (typeof block !== 'number' || block !== this.#lastBlock) {
      this.#lastBlock = undefined;
      const threads = readDim('block', block, this.device.limits.maxBlockDim, this.#u32, 3);
      if (threads > this.maxThreads) {
        throw rangeError('block', `at most ${this.maxThreads} threads for kernel '${this.name}'`, threads);
      }
      if (typeof block === 'number') this.#lastBlock = block;
    }
    const smem = config.sharedMemBytes ?? 0;
    if (smem !== this.#lastSmem) {
      if (typeof smem !== 'number' || !Number.isInteger(smem) || smem < 0 || smem > this.maxDynamicSmem) {
        throw (typeof smem === 'number' ? rangeError : typeError)(
          'sharedMemBytes',
          `an integer in [0, ${this.maxDynamicSmem}] (raise it with kernel.setMaxDynamicSharedMemory)`,
          smem,
        );
      }
      this.#u32[6] = smem;
      this.#lastSmem = smem;
    }
    const stream = config.stream;
    const handle = stream === undefined ? 0n : stream.handle; // throws for a disposed stream
    if (handle !== this.#lastStream) {
      this.#u64[4] = handle;
      this.#lastStream = handle;
    }
    const writers = this.#writers;
    if (args.length !== writers.length) {
      throw new TypeError(
        `Kernel '${this.name}' takes ${writers.length} argument${writers.length === 1 ? '' : 's'} ` +
          `[${this.signature.map(formatParam).join(', ')}] but received ${args.length}`,
      );
    }
    const dv = this.#dv;
    const offsets = this.#offsets;
    for (let i = 0; i < writers.length; i++) writers[i]!(dv, offsets[i]!, args[i]);
    if (config.cooperative === true || config.clusterDim !== undefined) {
      const cluster = new Uint32Array(3);
      if (config.clusterDim !== undefined) readDim('clusterDim', config.clusterDim, NO_LIMIT, cluster, 0);
      this.#native.launchKernelEx(this.#slot, config.cooperative === true, cluster[0]!, cluster[1]!, cluster[2]!);
    } else {
      this.#native.launchKernel(this.#slot);
    }
  }

  /**
   * @internal A separate launch slot with this configuration and these arguments bound: the benchmark loop
   * launches it from native code. Validated exactly like launch().
   */
  bindLaunch(config: LaunchConfig, args: readonly unknown[]): { slot: number; release: () => void } {
    if (this.#slot < 0) throw disposedError(`Kernel '${this.name}'`);
    if (typeof config !== 'object' || config === null) throw typeError('config', 'a launch config { grid, block }', config);
    checkLaunchKeys(config);
    const buffer = new ArrayBuffer(this.#buffer.byteLength);
    const u32 = new Uint32Array(buffer, 0, 8);
    const limits = this.device.limits;
    readDim('grid', config.grid, limits.maxGridDim, u32, 0);
    const threads = readDim('block', config.block, limits.maxBlockDim, u32, 3);
    if (threads > this.maxThreads) throw rangeError('block', `at most ${this.maxThreads} threads for kernel '${this.name}'`, threads);
    const smem = config.sharedMemBytes ?? 0;
    if (typeof smem !== 'number' || !Number.isInteger(smem) || smem < 0 || smem > this.maxDynamicSmem) {
      throw rangeError('sharedMemBytes', `an integer in [0, ${this.maxDynamicSmem}]`, smem);
    }
    u32[6] = smem;
    new BigUint64Array(buffer, 0, 8)[4] = config.stream === undefined ? 0n : config.stream.handle;
    if (args.length !== this.#writers.length) {
      throw new TypeError(`Kernel '${this.name}' takes ${this.#writers.length} arguments but received ${args.length}`);
    }
    const dv = new DataView(buffer);
    this.#writers.forEach((write, i) => write(dv, this.#offsets[i]!, args[i]));
    const slot = this.#native.kernelSlotCreate(this.#ctx, this.#fn, buffer, this.#offsets.map((o) => o - PARAM_BASE));
    let live = true;
    return {
      slot,
      release: () => {
        if (live) this.#native.kernelSlotDestroy(slot);
        live = false;
      },
    };
  }

  /** Releases the launch slot. The CUfunction itself lives as long as its module. Idempotent. */
  dispose(): void {
    if (this.#slot < 0) return;
    this.#native.kernelSlotDestroy(this.#slot);
    this.#slot = -1;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `Kernel(${this.name}(${this.signature.map(formatParam).join(', ')}))`;
  }
}
