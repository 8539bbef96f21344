// SPDX-License-Identifier: MIT
// Tensor maps: the descriptors the Tensor Memory Accelerator (TMA, sm_90 and later) copies tiles of global memory
// with (cuTensorMapEncodeTiled). A kernel takes one as `const __grid_constant__ CUtensorMap` (128 bytes, aligned to
// 64), which NVRTC cannot get from cuda.h: <cudakit/tensor_map.h> (tensor-map-header.ts) declares it. Every rule of
// the driver is checked here first, each message naming the rule, because the driver answers a broken map with
// CUDA_ERROR_INVALID_VALUE alone.
import type { DType } from './dtype.js';
import type { DeviceBuffer } from './memory.js';
import { getNative } from './native.js';
import { checkOptions, rangeError, typeError } from './validate.js';

/**
 * A tensor map's element type: a cudakit element type, or one of TMA's own: 'tf32' (f32 rounded to TF32 as it is
 * copied), 'f32-ftz' and 'tf32-ftz' (denormals flushed to zero). Types of 1 and 2 bytes without their own TMA type
 * (i8, i16, the fp8 types) are copied as u8 and u16: TMA moves bits.
 */
export type TensorMapDType = DType | 'tf32' | 'f32-ftz' | 'tf32-ftz';

/** What `TensorMap.tiled()` takes. Dimensions are innermost (contiguous) first, as CUDA orders them. */
export interface TensorMapTiledOptions {
  /** The element type. */
  dtype: TensorMapDType;
  /** Elements in each dimension, 1 to 5 dimensions, innermost first: a row-major rows × cols matrix is [cols, rows]. */
  dims: readonly number[];
  /** Bytes from one index to the next of every dimension but the first (one fewer than dims). Default: packed. */
  stridesBytes?: readonly number[];
  /** The box one copy moves: elements in each dimension, 1 to 256 each. */
  box: readonly number[];
  /** The step in each dimension within the box, 1 to 8 each (the first is ignored without interleave). Default 1s. */
  elementStrides?: readonly number[];
  /** 'none' (default), '16B' or '32B': the layout of an interleaved tensor (NC/8HWC8 ...). */
  interleave?: 'none' | '16B' | '32B';
  /** 'none' (default), '32B', '64B' or '128B': how the box is swizzled in shared memory (bank conflicts). */
  swizzle?: 'none' | '32B' | '64B' | '128B';
  /** 'none' (default), '64B', '128B' or '256B': the L2 promotion of the copies' loads. */
  l2Promotion?: 'none' | '64B' | '128B' | '256B';
  /**
   * What elements outside the tensor read as: 'zero' (default), or 'nan' (a NaN that makes an FMA's product zero;
   * floating-point types only).
   */
  oobFill?: 'zero' | 'nan';
  /** Where the tensor begins in the memory, in bytes. Default 0. */
  offsetBytes?: number;
}

/** CUtensorMapDataType by element type, with its size in bytes. */
const DATA_TYPES: Record<TensorMapDType, [code: number, bytes: number, float: boolean]> = {
  u8: [0, 1, false],
  i8: [0, 1, false],
  f8e4m3: [0, 1, false],
  f8e5m2: [0, 1, false],
  u16: [1, 2, false],
  i16: [1, 2, false],
  u32: [2, 4, false],
  i32: [3, 4, false],
  u64: [4, 8, false],
  i64: [5, 8, false],
  f16: [6, 2, true],
  f32: [7, 4, true],
  f64: [8, 8, true],
  bf16: [9, 2, true],
  'f32-ftz': [10, 4, true],
  tf32: [11, 4, true],
  'tf32-ftz': [12, 4, true],
};
const INTERLEAVE = { none: 0, '16B': 1, '32B': 2 } as const;
const SWIZZLE = { none: 0, '32B': 1, '64B': 2, '128B': 3 } as const;
const SWIZZLE_BYTES = { none: Infinity, '32B': 32, '64B': 64, '128B': 128 } as const;
const L2_PROMOTION = { none: 0, '64B': 1, '128B': 2, '256B': 3 } as const;
const OOB_FILL = { zero: 0, nan: 1 } as const;

const OPTION_KEYS = [
  'dtype',
  'dims',
  'stridesBytes',
  'box',
  'elementStrides',
  'interleave',
  'swizzle',
  'l2Promotion',
  'oobFill',
  'offsetBytes',
] as const;

/** A tensor map's options, checked and with their defaults. */
export interface TensorMapLayout {
  /** The element type. */
  readonly dtype: TensorMapDType;
  /** Elements in each dimension, innermost first. */
  readonly dims: readonly number[];
  /** Bytes from one index to the next of every dimension but the first. */
  readonly stridesBytes: readonly number[];
  /** The box one copy moves, elements in each dimension. */
  readonly box: readonly number[];
  /** The step in each dimension within the box. */
  readonly elementStrides: readonly number[];
  /** The interleave layout. */
  readonly interleave: 'none' | '16B' | '32B';
  /** The swizzle of the box in shared memory. */
  readonly swizzle: 'none' | '32B' | '64B' | '128B';
  /** The L2 promotion of the copies' loads. */
  readonly l2Promotion: 'none' | '64B' | '128B' | '256B';
  /** What elements outside the tensor read as. */
  readonly oobFill: 'zero' | 'nan';
  /** Where the tensor begins in the memory, bytes. */
  readonly offsetBytes: number;
  /** Bytes of one element. */
  readonly elementBytes: number;
  /** Bytes of one box: what one copy moves (the transaction count an mbarrier expects). */
  readonly boxBytes: number;
}

const enumOf = <T extends string>(name: string, value: unknown, table: Record<T, number>, fallback: T): T => {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !Object.hasOwn(table, value)) {
    throw typeError(
      name,
      `one of ${Object.keys(table)
        .map((k) => `'${k}'`)
        .join(', ')}`,
      value,
    );
  }
  return value as T;
};

function intArray(name: string, value: unknown, length: number, min: number, max: number): number[] {
  if (!Array.isArray(value)) throw typeError(name, `an array of ${length} integers`, value);
  if (value.length !== length) throw rangeError(`${name}.length`, `${length} (one per dimension)`, value.length);
  return value.map((x: unknown, i) => {
    if (typeof x !== 'number' || !Number.isSafeInteger(x)) throw typeError(`${name}[${i}]`, 'an integer', x);
    if (x < min || x > max) throw rangeError(`${name}[${i}]`, `an integer in [${min}, ${max}]`, x);
    return x;
  });
}

/**
 * Checks a tiled tensor map's options against cuTensorMapEncodeTiled's rules and against the memory it maps (the
 * tensor must fit in it: the TMA reads and writes wherever the map says). Throws TypeError or RangeError naming the
 * rule; returns the layout with defaults.
 */
export function checkTensorMapLayout(options: unknown, address: bigint, byteLength: number): TensorMapLayout {
  const o = checkOptions('options', options, OPTION_KEYS);
  if (typeof o.dtype !== 'string' || !Object.hasOwn(DATA_TYPES, o.dtype)) {
    throw typeError('options.dtype', `one of ${Object.keys(DATA_TYPES).join(', ')}`, o.dtype);
  }
  const dtype = o.dtype as TensorMapDType;
  const [, elementBytes, isFloat] = DATA_TYPES[dtype];
  if (!Array.isArray(o.dims)) throw typeError('options.dims', 'an array of 1 to 5 dimensions', o.dims);
  const rank = o.dims.length;
  if (rank < 1 || rank > 5) throw rangeError('options.dims.length', 'a rank of 1 to 5 (cuTensorMapEncodeTiled)', rank);
  const dims = intArray('options.dims', o.dims, rank, 1, 2 ** 32);
  const interleave = enumOf<keyof typeof INTERLEAVE>('options.interleave', o.interleave, INTERLEAVE, 'none');
  const swizzle = enumOf<keyof typeof SWIZZLE>('options.swizzle', o.swizzle, SWIZZLE, 'none');
  const l2Promotion = enumOf<keyof typeof L2_PROMOTION>('options.l2Promotion', o.l2Promotion, L2_PROMOTION, 'none');
  const oobFill = enumOf<keyof typeof OOB_FILL>('options.oobFill', o.oobFill, OOB_FILL, 'zero');
  if (interleave !== 'none' && rank < 3) {
    throw rangeError('options.dims.length', `at least 3 with interleave '${interleave}'`, rank);
  }
  const strideAlign = interleave === '32B' ? 32 : 16;
  let stridesBytes: number[];
  if (o.stridesBytes === undefined) {
    stridesBytes = [];
    let stride = dims[0]! * elementBytes;
    for (let i = 1; i < rank; i++) {
      if (stride % strideAlign !== 0) {
        throw rangeError(
          `options.stridesBytes (packed, dimension ${i})`,
          `a multiple of ${strideAlign} bytes: pad the rows and give stridesBytes`,
          stride,
        );
      }
      stridesBytes.push(stride);
      stride *= dims[i]!;
    }
  } else {
    stridesBytes = intArray('options.stridesBytes', o.stridesBytes, rank - 1, 1, 2 ** 40 - 1);
    stridesBytes.forEach((s, i) => {
      if (s % strideAlign !== 0) {
        throw rangeError(
          `options.stridesBytes[${i}]`,
          `a multiple of ${strideAlign} bytes (cuTensorMapEncodeTiled)`,
          s,
        );
      }
    });
  }
  const box = intArray('options.box', o.box, rank, 1, 256);
  const elementStrides =
    o.elementStrides === undefined
      ? Array<number>(rank).fill(1)
      : intArray('options.elementStrides', o.elementStrides, rank, 1, 8);
  const innerBoxBytes = box[0]! * elementBytes;
  if (interleave === 'none' && innerBoxBytes % 16 !== 0) {
    throw rangeError('options.box[0]', 'a box whose inner dimension is a multiple of 16 bytes', `${innerBoxBytes} B`);
  }
  if (interleave === 'none' && innerBoxBytes > SWIZZLE_BYTES[swizzle]) {
    throw rangeError(
      'options.box[0]',
      `an inner box of at most ${SWIZZLE_BYTES[swizzle]} bytes with swizzle '${swizzle}'`,
      `${innerBoxBytes} B`,
    );
  }
  if (interleave === '32B' && swizzle !== '32B') {
    throw rangeError('options.swizzle', "'32B' with interleave '32B' (cuTensorMapEncodeTiled)", swizzle);
  }
  if (oobFill === 'nan' && !isFloat) {
    throw rangeError(
      'options.oobFill',
      `'zero' for the integer type '${dtype}' ('nan' is for floating point)`,
      oobFill,
    );
  }
  const offsetBytes =
    o.offsetBytes === undefined ? 0 : intArray('options.offsetBytes', [o.offsetBytes], 1, 0, 2 ** 52)[0]!;
  const start = address + BigInt(offsetBytes);
  const addressAlign = interleave === '32B' ? 32n : 16n;
  if (start % addressAlign !== 0n) {
    throw rangeError('the tensor address', `a multiple of ${addressAlign} bytes`, `0x${start.toString(16)}`);
  }
  // The last byte the map reaches: each dimension's last index, at its stride.
  let extent = dims[0]! * elementBytes;
  for (let i = 1; i < rank; i++) extent += (dims[i]! - 1) * stridesBytes[i - 1]!;
  if (offsetBytes + extent > byteLength) {
    throw rangeError(
      'options.dims',
      `a tensor within the memory's ${byteLength} bytes (it reaches byte ${offsetBytes + extent})`,
      `[${dims.join(', ')}]`,
    );
  }
  const boxBytes = box.reduce(
    (n, b, i) => n * Math.ceil(b / (i === 0 && interleave === 'none' ? 1 : elementStrides[i]!)),
    elementBytes,
  );
  return Object.freeze({
    dtype,
    dims: Object.freeze(dims),
    stridesBytes: Object.freeze(stridesBytes),
    box: Object.freeze(box),
    elementStrides: Object.freeze(elementStrides),
    interleave,
    swizzle,
    l2Promotion,
    oobFill,
    offsetBytes,
    elementBytes,
    boxBytes,
  });
}

/**
 * A TMA descriptor of device memory: pass it to a kernel whose parameter is `const __grid_constant__ CUtensorMap`
 * (TENSOR_MAP_PARAM in a signature; the map itself as the argument). It holds the address of the memory, not the
 * memory: it must not outlive the buffer it maps.
 *
 * @example
 * // A row-major 1024 × 1024 f32 matrix, copied in 64 × 32 tiles (a box of 32 columns, 64 rows).
 * const a = device.allocArray(Float32Array, 1024 * 1024);
 * const map = TensorMap.tiled(a, { dtype: 'f32', dims: [1024, 1024], box: [32, 64] });
 */
export class TensorMap {
  /** The 128 bytes of the CUtensorMap, as the kernel gets them. */
  readonly bytes: Uint8Array;
  /** Its options, checked, with their defaults. */
  readonly layout: TensorMapLayout;
  /** The memory it maps (kept so the map's address stays that memory's while the map is reachable). */
  readonly memory: DeviceBuffer;

  private constructor(bytes: Uint8Array, layout: TensorMapLayout, memory: DeviceBuffer) {
    this.bytes = bytes;
    this.layout = layout;
    this.memory = memory;
  }

  /**
   * A tiled tensor map of `memory` (cuTensorMapEncodeTiled; CUDA 12.0 and a GPU of sm_90 or later to use it).
   *
   * @throws TypeError or RangeError for options that break one of the driver's rules, or a tensor larger than the
   *   memory; CudaError where the driver refuses the map or lacks the call.
   */
  static tiled(memory: DeviceBuffer, options: TensorMapTiledOptions): TensorMap {
    const m = memory as Partial<DeviceBuffer> | null;
    if (typeof m !== 'object' || m === null || typeof m.ptr !== 'bigint' || typeof m.byteLength !== 'number') {
      throw typeError('memory', 'a DeviceBuffer or DeviceArray', memory);
    }
    const layout = checkTensorMapLayout(options, m.ptr, m.byteLength);
    const raw = getNative().tensorMapEncodeTiled(
      DATA_TYPES[layout.dtype][0],
      m.ptr + BigInt(layout.offsetBytes),
      layout.dims,
      layout.stridesBytes,
      layout.box,
      layout.elementStrides,
      INTERLEAVE[layout.interleave],
      SWIZZLE[layout.swizzle],
      L2_PROMOTION[layout.l2Promotion],
      OOB_FILL[layout.oobFill],
    );
    return new TensorMap(new Uint8Array(raw), layout, memory);
  }

  /** 'TensorMap(f32 [1024, 1024], box [32, 64], swizzle none)'. */
  toString(): string {
    const l = this.layout;
    return `TensorMap(${l.dtype} [${l.dims.join(', ')}], box [${l.box.join(', ')}], swizzle ${l.swizzle})`;
  }
}
