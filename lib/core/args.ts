// SPDX-License-Identifier: MIT
// Kernel parameters: the parameter types a signature lists (scalars, CUDA vector types, structs, raw bytes), their
// C layout (size, alignment, field offsets) and a validating writer per type that packs a JavaScript value into a
// launch slot. Pure: no driver call, tested without a GPU.
import { DeviceBuffer } from './memory.js';
import { TensorMap } from './tensor-map.js';
import { SCALAR_BYTES, type ScalarType, toBf16Bits, toFp8Bits, toHalfBits } from './dtype.js';
import { checkSize, rangeError, typeError } from './validate.js';

export type { ScalarType } from './dtype.js';

/**
 * Element types of the CUDA vector types (char, uchar, short, ushort, int, uint, longlong, ulonglong, float, double).
 */
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
  /** The fields' types, in declaration order. */
  readonly struct: readonly ParamType[];
  /** A power of two up to 256. */
  readonly align?: number;
}
/**
 * Raw bytes passed by value (any POD type); its argument is an ArrayBuffer or a view of exactly `bytes` bytes, or a
 * TensorMap for `{ bytes: 128, align: 64 }` (TENSOR_MAP_PARAM, a `const __grid_constant__ CUtensorMap`).
 */
export interface BytesType {
  /** Size of the value in bytes. */
  readonly bytes: number;
  /** Its alignment, a power of two up to 256. Default: the largest power of two that divides `bytes`, at most 8. */
  readonly align?: number;
}
/** The kernel parameter type of a tensor map (`const __grid_constant__ CUtensorMap`): 128 bytes, aligned to 64. */
export const TENSOR_MAP_PARAM: BytesType = Object.freeze({ bytes: 128, align: 64 });

/** One kernel parameter type: a scalar ('f32', 'ptr' ...), a CUDA vector type ('f32x4' ...), a struct or raw bytes. */
export type ParamType = ScalarType | VectorType | StructType | BytesType;
/**
 * A kernel's parameter types in order, as `module.getKernel(name, signature)` takes them: `['f32', 'ptr', 'ptr',
 * 'i32']`.
 */
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
                ? ArrayBufferView | ArrayBuffer | TensorMap
                : never;
/**
 * One less than each depth: bounds how deep ArgFor recurses into nested structs.
 * @inline
 */
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

/** Writes one value at `offset`, after validating it (TypeError / RangeError naming the argument). */
export type Writer = (dv: DataView, offset: number, value: unknown) => void;
/** How one parameter type sits in memory. */
export interface Layout {
  size: number;
  align: number;
  /** Byte offsets of a struct's fields or a vector's components, from the start of the value. */
  offsets?: readonly number[];
  write: Writer;
}

const VECTOR_ELEMENTS: readonly VectorElement[] = ['i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'i64', 'u64', 'f32', 'f64'];
/** Every vector type name → its element and length (f16 and bf16 come only as the pairs __half2 and __nv_bfloat162). */
const VECTORS = new Map<string, { element: ScalarType; length: number }>([
  ['f16x2', { element: 'f16', length: 2 }],
  ['bf16x2', { element: 'bf16', length: 2 }],
]);
for (const element of VECTOR_ELEMENTS)
  for (const length of [2, 3, 4]) VECTORS.set(`${element}x${length}`, { element, length });
const PARAM_TYPES =
  `${Object.keys(SCALAR_BYTES).join(', ')}, a vector such as f32x2, f32x4, i32x2 or u8x4, ` +
  '{ struct: [...], align? }, { bytes }';
const ALIGNS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/** A parameter type as a signature spells it, for messages: 'f32', 'f32x2', '{ struct: [f32, i32], align: 16 }'. */
export function formatParam(p: ParamType): string {
  if (typeof p === 'string') return p;
  if ('struct' in p)
    return `{ struct: [${p.struct.map(formatParam).join(', ')}]${p.align !== undefined ? `, align: ${p.align}` : ''} }`;
  return `{ bytes: ${p.bytes}${p.align !== undefined ? `, align: ${p.align}` : ''} }`;
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

function floatWriter(where: string, kind: 'f8e4m3' | 'f8e5m2' | 'f16' | 'bf16' | 'f32' | 'f64'): Writer {
  const check = (v: unknown): number => {
    if (typeof v !== 'number') throw typeError(where, 'a number', v);
    return v;
  };
  switch (kind) {
    case 'f8e4m3':
    case 'f8e5m2':
      return (dv, o, v) => dv.setUint8(o, toFp8Bits(kind, check(v)));
    case 'f16':
      return (dv, o, v) => dv.setUint16(o, toHalfBits(check(v)), true);
    case 'bf16':
      return (dv, o, v) => dv.setUint16(o, toBf16Bits(check(v)), true);
    case 'f32':
      return (dv, o, v) => dv.setFloat32(o, check(v), true);
    case 'f64':
      return (dv, o, v) => dv.setFloat64(o, check(v), true);
  }
}

function ptrWriter(where: string): Writer {
  return (dv, o, v) => {
    if (v instanceof DeviceBuffer) dv.setBigUint64(o, v.ptr, true);
    else if (typeof v === 'bigint' && v >= 0n && v < 1n << 64n) dv.setBigUint64(o, v, true);
    else throw typeError(where, 'a DeviceBuffer or a bigint device address', v);
  };
}

export const alignUp = (n: number, a: number): number => Math.ceil(n / a) * a;

/**
 * The parameter types a launch packs inline, with writeFast, rather than through their writer: the common scalars.
 * Calling each parameter's writer costs a call per argument that V8 cannot inline (the call site in the launch
 * loop sees every kind of writer), and DataView.setBigUint64 is a call too (13 ns on Node 20); a switch over these
 * codes is inlined in the loop, and a pointer is stored through a BigUint64Array (1 ns).
 */
export const FAST_NONE = 0;
const FAST_PTR = 1;
const FAST_F32 = 2;
const FAST_F64 = 3;
const FAST_I32 = 4;
const FAST_U32 = 5;
const FAST_CODES: Partial<Record<ParamType & string, number>> = {
  ptr: FAST_PTR,
  f32: FAST_F32,
  f64: FAST_F64,
  i32: FAST_I32,
  u32: FAST_U32,
};

/**
 * The writeFast code of a parameter type at byte `offset` of the slot buffer; FAST_NONE for one that only its writer
 * packs (and for a pointer that is not 8-byte aligned, which the BigUint64Array cannot store).
 */
export function fastCode(p: ParamType, offset: number): number {
  const code = (typeof p === 'string' && Object.hasOwn(FAST_CODES, p) && FAST_CODES[p]) || FAST_NONE;
  return code === FAST_PTR && offset % 8 !== 0 ? FAST_NONE : code;
}

/**
 * Writes `v` for the parameter type `code` stands for at byte `o` of the buffer `dv` and `u64` view, and returns true,
 * when `v` is a value that type's writer accepts without question (a DeviceBuffer for 'ptr', a number for 'f32', an
 * int32 for 'i32' ...), in the same bytes as the writer (little-endian, as every CUDA host is); returns false without
 * writing for any other value, which the caller then gives to the writer, to write (a bigint 'ptr') or to reject
 * with its message. So this never accepts what the writer would reject.
 */
export function writeFast(code: number, dv: DataView, u64: BigUint64Array, o: number, v: unknown): boolean {
  switch (code) {
    case FAST_PTR:
      if (!(v instanceof DeviceBuffer)) return false;
      u64[o >> 3] = v.ptr; // the getter throws for a disposed buffer, as the writer's does
      return true;
    case FAST_F32:
      if (typeof v !== 'number') return false;
      dv.setFloat32(o, v, true);
      return true;
    case FAST_F64:
      if (typeof v !== 'number') return false;
      dv.setFloat64(o, v, true);
      return true;
    case FAST_I32:
      if (typeof v !== 'number' || (v | 0) !== v) return false; // an integer in [-2^31, 2^31 - 1] (NaN fails)
      dv.setInt32(o, v, true);
      return true;
    case FAST_U32:
      if (typeof v !== 'number' || v >>> 0 !== v) return false; // an integer in [0, 2^32 - 1]
      dv.setUint32(o, v, true);
      return true;
    default:
      return false;
  }
}

/** TypeError for a value that should be an array of `length` items; says how long an array of the wrong length was. */
function arrayError(where: string, expected: string, v: unknown): TypeError {
  if (!Array.isArray(v)) return typeError(where, expected, v);
  return new TypeError(
    `Expected ${expected} for ${where} but received an array of ${v.length} element${v.length === 1 ? '' : 's'}`,
  );
}

function checkAlign(name: string, value: unknown): number {
  if (typeof value !== 'number') throw typeError(name, 'a power of two up to 256', value);
  if (!ALIGNS.includes(value)) throw rangeError(name, 'a power of two up to 256', value);
  return value;
}

/** Unknown keys in an object parameter type are a TypeError: a misspelt `align` would silently change the layout. */
function checkTypeKeys(p: object, where: string, known: readonly string[]): void {
  for (const key of Object.keys(p)) {
    if (!known.includes(key))
      throw new TypeError(`Unknown key '${key}' in the parameter type of ${where}; known keys: ${known.join(', ')}`);
  }
}

function scalarWriter(p: ScalarType, where: string): Writer {
  switch (p) {
    case 'ptr':
      return ptrWriter(where);
    case 'i8':
      return intWriter(where, 8, true);
    case 'u8':
      return intWriter(where, 8, false);
    case 'i16':
      return intWriter(where, 16, true);
    case 'u16':
      return intWriter(where, 16, false);
    case 'i32':
      return intWriter(where, 32, true);
    case 'u32':
      return intWriter(where, 32, false);
    case 'i64':
      return int64Writer(where, true);
    case 'u64':
      return int64Writer(where, false);
    case 'bool':
      return (dv, o, v) => {
        if (typeof v !== 'boolean') throw typeError(where, 'a boolean', v);
        dv.setUint8(o, v ? 1 : 0);
      };
    default:
      return floatWriter(where, p);
  }
}

/** A CUDA vector type: `length` elements in a row, aligned to the whole vector up to 16 bytes (x3: to the element). */
function vectorLayout(name: string, element: ScalarType, length: number, where: string): Layout {
  const elementSize = SCALAR_BYTES[element];
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
    if (!Object.hasOwn(SCALAR_BYTES, p)) throw typeError(where, `a parameter type (${PARAM_TYPES})`, p);
    const size = SCALAR_BYTES[p as ScalarType];
    return { size, align: size, write: scalarWriter(p as ScalarType, where) };
  }
  if (typeof p !== 'object' || p === null) throw typeError(where, `a parameter type (${PARAM_TYPES})`, p);
  if ('struct' in p) {
    checkTypeKeys(p, where, ['struct', 'align']);
    if (!Array.isArray(p.struct) || p.struct.length === 0)
      throw typeError(`${where}.struct`, 'a non-empty array of field types', p.struct);
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
        if (v instanceof TensorMap) {
          if (size !== 128 || align !== 64) {
            throw rangeError(
              where,
              'a parameter of 128 bytes aligned to 64 for a TensorMap (TENSOR_MAP_PARAM)',
              formatParam(p),
            );
          }
          v = v.bytes;
        }
        const src = ArrayBuffer.isView(v)
          ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength)
          : v instanceof ArrayBuffer
            ? new Uint8Array(v)
            : undefined;
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
export function alignmentHint(p: ParamType, layout: Layout, compiledSize: number): string {
  if (typeof p !== 'object' || !('struct' in p) || compiledSize <= layout.size) return '';
  // The smallest __align__(N) that would give the compiled size, if any.
  const n = ALIGNS.find((a) => a > layout.align && alignUp(layout.size, a) === compiledSize);
  if (n === undefined && !hasVectorLikeRun(p)) return '';
  const N = n ?? 'N';
  return (
    ` (alignment: CUDA aligns float2 to 8 bytes and float4 to 16; if the struct holds a float2/float4, describe that ` +
    `member as 'f32x2'/'f32x4' (likewise i32x2, f64x2, ...), ` +
    `and if it is declared __align__(${N}), give the struct align: ${N})`
  );
}

/**
 * Whether a struct (or a struct inside it) has two or more same-typed scalar fields in a row spanning 8 or 16 bytes.
 */
function hasVectorLikeRun(p: StructType): boolean {
  let run = 0;
  let prev: ParamType | undefined;
  for (const f of p.struct) {
    if (typeof f === 'object' && 'struct' in f && hasVectorLikeRun(f)) return true;
    run = typeof f === 'string' && f === prev && !VECTORS.has(f) && f !== 'ptr' && f !== 'bool' ? run + 1 : 1;
    prev = f;
    const bytes = typeof f === 'string' && !VECTORS.has(f) ? (SCALAR_BYTES[f as ScalarType] ?? 0) : 0;
    if ((run === 2 && (bytes * 2 === 8 || bytes * 2 === 16)) || (run === 4 && (bytes * 4 === 8 || bytes * 4 === 16)))
      return true;
  }
  return false;
}

/** Offsets of the parameters as C lays them out one after another (when neither the driver nor the image tells). */
export function packedOffsets(layouts: readonly Layout[]): number[] {
  const offsets: number[] = [];
  let at = 0;
  for (const l of layouts) {
    at = alignUp(at, l.align);
    offsets.push(at);
    at += l.size;
  }
  return offsets;
}
