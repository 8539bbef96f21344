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
/** A struct passed by value, fields laid out as C does. Its argument is an array of the field values. */
export interface StructType {
  readonly struct: readonly ParamType[];
}
/** Raw bytes passed by value (any POD type); its argument is an ArrayBuffer or a view of exactly `bytes` bytes. */
export interface BytesType {
  readonly bytes: number;
  readonly align?: number;
}
export type ParamType = ScalarType | StructType | BytesType;
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
          : P extends { readonly struct: infer F extends readonly unknown[] }
            ? { -readonly [K in keyof F]: ArgFor<F[K], PrevDepth[Depth]> }
            : P extends { readonly bytes: number }
              ? ArrayBufferView | ArrayBuffer
              : never;
type PrevDepth = [never, 0, 1, 2, 3];
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
interface Layout {
  size: number;
  align: number;
  write: Writer;
}

const SCALAR_SIZE: Record<ScalarType, number> = {
  ptr: 8, i8: 1, u8: 1, bool: 1, i16: 2, u16: 2, f16: 2, bf16: 2, i32: 4, u32: 4, f32: 4, i64: 8, u64: 8, f64: 8,
};

export function formatParam(p: ParamType): string {
  if (typeof p === 'string') return p;
  if ('struct' in p) return `{ struct: [${p.struct.map(formatParam).join(', ')}] }`;
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

/** Size, alignment and a validating writer for one parameter type (C layout rules). */
export function layoutOf(p: ParamType, where: string): Layout {
  if (typeof p === 'string') {
    const size = SCALAR_SIZE[p];
    if (size === undefined) throw typeError(where, `a parameter type (${Object.keys(SCALAR_SIZE).join(', ')}, { struct }, { bytes })`, p);
    let write: Writer;
    switch (p) {
      case 'ptr': write = ptrWriter(where); break;
      case 'i8': write = intWriter(where, 8, true); break;
      case 'u8': write = intWriter(where, 8, false); break;
      case 'i16': write = intWriter(where, 16, true); break;
      case 'u16': write = intWriter(where, 16, false); break;
      case 'i32': write = intWriter(where, 32, true); break;
      case 'u32': write = intWriter(where, 32, false); break;
      case 'i64': write = int64Writer(where, true); break;
      case 'u64': write = int64Writer(where, false); break;
      case 'bool':
        write = (dv, o, v) => {
          if (typeof v !== 'boolean') throw typeError(where, 'a boolean', v);
          dv.setUint8(o, v ? 1 : 0);
        };
        break;
      default: write = floatWriter(where, p);
    }
    return { size, align: size, write };
  }
  if (typeof p !== 'object' || p === null) throw typeError(where, 'a parameter type', p);
  if ('struct' in p) {
    if (!Array.isArray(p.struct) || p.struct.length === 0) throw typeError(`${where}.struct`, 'a non-empty array of field types', p.struct);
    const fields: { offset: number; layout: Layout }[] = [];
    let size = 0;
    let align = 1;
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
      write: (dv, o, v) => {
        if (!Array.isArray(v) || v.length !== n) throw typeError(where, `an array of ${n} field values`, v);
        for (let i = 0; i < n; i++) fields[i]!.layout.write(dv, o + fields[i]!.offset, v[i]);
      },
    };
  }
  if ('bytes' in p) {
    const size = checkSize(`${where}.bytes`, p.bytes);
    const align = p.align ?? Math.min(8, size & -size || 1);
    if (![1, 2, 4, 8, 16, 32, 64, 128, 256].includes(align)) throw rangeError(`${where}.align`, 'a power of two up to 256', align);
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
  throw typeError(where, 'a parameter type', p);
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

const LAUNCH_KEYS = new Set(['grid', 'block', 'sharedMemBytes', 'stream', 'cooperative', 'clusterDim']);
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
  #maxThreads: number;
  #maxDynamicSmem: number;
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
              `${formatParam(signature[i]!)} (${layouts[i]!.size} bytes)`,
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
    this.#maxThreads = Math.min(device.limits.maxThreadsPerBlock, this.attr(FUNC_ATTR.maxThreadsPerBlock));
    this.#maxDynamicSmem = this.attr(FUNC_ATTR.maxDynamicSharedSizeBytes);
  }

  /** The raw CUfunction. Borrowed: valid while the module is loaded. */
  get handle(): Handle {
    if (this.#slot < 0) throw disposedError(`Kernel '${this.name}'`);
    return this.#fn;
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
    return { ...this.#attributes, maxDynamicSharedSizeBytes: this.#maxDynamicSmem };
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
    if (typeof blockSize !== 'number' || !Number.isInteger(blockSize) || blockSize < 1 || blockSize > this.#maxThreads) {
      throw (typeof blockSize === 'number' ? rangeError : typeError)('blockSize', `an integer in [1, ${this.#maxThreads}]`, blockSize);
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
      if (threads > this.#maxThreads) {
        throw rangeError('block', `at most ${this.#maxThreads} threads for kernel '${this.name}'`, threads);
      }
      if (typeof block === 'number') this.#lastBlock = block;
    }
    const smem = config.sharedMemBytes ?? 0;
    if (smem !== this.#lastSmem) {
      if (typeof smem !== 'number' || !Number.isInteger(smem) || smem < 0 || smem > this.#maxDynamicSmem) {
        throw (typeof smem === 'number' ? rangeError : typeError)(
          'sharedMemBytes',
          `an integer in [0, ${this.#maxDynamicSmem}] (raise it with kernel.setMaxDynamicSharedMemory)`,
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
      for (const key of Object.keys(config)) {
        if (!LAUNCH_KEYS.has(key)) throw new TypeError(`Unknown launch option '${key}'`);
      }
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
    const buffer = new ArrayBuffer(this.#buffer.byteLength);
    const u32 = new Uint32Array(buffer, 0, 8);
    const limits = this.device.limits;
    readDim('grid', config.grid, limits.maxGridDim, u32, 0);
    const threads = readDim('block', config.block, limits.maxBlockDim, u32, 3);
    if (threads > this.#maxThreads) throw rangeError('block', `at most ${this.#maxThreads} threads for kernel '${this.name}'`, threads);
    const smem = config.sharedMemBytes ?? 0;
    if (typeof smem !== 'number' || !Number.isInteger(smem) || smem < 0 || smem > this.#maxDynamicSmem) {
      throw rangeError('sharedMemBytes', `an integer in [0, ${this.#maxDynamicSmem}]`, smem);
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
