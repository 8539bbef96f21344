// SPDX-License-Identifier: MIT
// Inputs generated on the GPU: the values inputs.ts's generateBytes() computes in JavaScript, computed by a kernel,
// element by element, at the speed of memory. Generating a 16M-element normal buffer in JavaScript takes seconds
// (check() makes fresh inputs for every trial and bench() for every input set: a large case spent most of its time
// there); the kernel takes well under a millisecond.
//
// The generator of random.ts is splitmix64, whose k-th draw is a function of the state and k alone, so element i's
// draws are found without the draws before it: a buffer's random values start at the draw where the buffer before it
// (on the shared generator) stopped. The kernel does the arithmetic of generateBytes() in the same order, rounded the
// same way (no fused multiply-add), so its bytes equal JavaScript's for every kind but 'normal', whose log and cos
// may differ from JavaScript's in the last bit of a double (test/gpu/device-fill.test.ts checks both).
//
// A sparse fill (`changes` > 0, inputSets()'s kept launches) writes only that many elements, at positions drawn from
// the epoch's state (sparsePositions() here finds the same ones), each with the value the full fill of that epoch
// gives it: the rest of the buffer keeps what it held, so a key that samples a few elements sees no change.
import { DTYPE_INFO, type Device, type DeviceBuffer, Program } from '../core/index.js';
import type { BufferArgSpec, BufferDType, InitSpec } from './argspec.js';
import { splitmix64 } from './random.js';

/** @internal The fill kernel (compiled once per device; test/nvrtc compiles it too). */
export const FILL_SOURCE = String.raw`
typedef unsigned long long u64;

__device__ __forceinline__ u64 splitmix64(u64 seed) {
  // random.ts's splitmix64(): the first output of the generator whose state is seed.
  u64 z = seed + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ double draw(u64 state, u64 k) {
  // The k-th (0-based) output of splitmix64 with this state, as a double in [0, 1): the top 53 bits / 2^53.
  u64 z = splitmix64(state + k * 0x9e3779b97f4a7c15ull);
  return __dmul_rn((double)(z >> 11), 1.1102230246251565e-16);
}

__device__ __forceinline__ unsigned short half_bits(double v) {
  // random.ts's toHalfBits: through float first, then round to nearest even.
  unsigned int f = __float_as_uint(__double2float_rn(v));
  unsigned int sign = (f >> 16) & 0x8000u;
  int exp = (f >> 23) & 0xff;
  unsigned int mant = f & 0x7fffffu;
  if (exp == 0xff) return (unsigned short)(sign | 0x7c00u | (mant != 0 ? 0x200u : 0u));
  int e = exp - 127 + 15;
  if (e >= 0x1f) return (unsigned short)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (unsigned short)sign;
    mant |= 0x800000u;
    int shift = 14 - e;
    unsigned int half = mant >> shift;
    unsigned int rem = mant & ((1u << shift) - 1u);
    unsigned int mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) half++;
    return (unsigned short)(sign | half);
  }
  unsigned int half = ((unsigned int)e << 10) | (mant >> 13);
  unsigned int rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
  return (unsigned short)(sign | half);
}

__device__ __forceinline__ unsigned short bf16_bits(double v) {
  unsigned int f = __float_as_uint(__double2float_rn(v));
  if ((f & 0x7f800000u) == 0x7f800000u && (f & 0x7fffffu) != 0) return (unsigned short)(((f >> 16) | 0x40u) & 0xffffu);
  return (unsigned short)(((f + 0x7fffu + ((f >> 16) & 1u)) >> 16) & 0xffffu);
}

__device__ __forceinline__ unsigned char fp8_bits(double v, int mantissa_bits, int bias, int min_exponent,
                                                  double max_finite, unsigned int max_bits) {
  // dtype.ts's toFp8Bits (CUDA's __NV_SATFINITE conversion): round to nearest even from the double, saturate.
  unsigned int sign = (unsigned int)(__double_as_longlong(v) >> 56) & 0x80u;
  double x = fabs(v);
  if (!(x == x)) return (unsigned char)(sign | 0x7fu);
  if (x == 0.0) return (unsigned char)sign;
  if (x >= max_finite) return (unsigned char)(sign | max_bits);
  int e = max(ilogb(x), min_exponent);
  double quantum = ldexp(1.0, e - mantissa_bits);
  double m = rint(x / quantum); // exact division; rint rounds half to even
  if (m * quantum > max_finite) return (unsigned char)(sign | max_bits);
  unsigned int implicit = 1u << mantissa_bits;
  unsigned int mi = (unsigned int)m;
  if (mi < implicit) return (unsigned char)(sign | mi);
  if (mi == 2u * implicit) return (unsigned char)(sign | ((unsigned int)(e + 1 + bias) << mantissa_bits));
  return (unsigned char)(sign | ((unsigned int)(e + bias) << mantissa_bits) | (mi - implicit));
}

__device__ __forceinline__ u64 wrap64(double v) {
  // What a typed array's element assignment does to a number: truncate toward zero, then modulo 2^width (NaN and
  // the infinities give 0). Every width's value is the low bits of this one. fmod is exact, so |m| < 2^64 is an
  // integer that converts exactly; a negative one is negated in u64 (mod 2^64), never added to 2^64 in a double,
  // which rounds -128 + 2^64 up to 2^64 (doubles near 2^64 are 2048 apart) and gave 0 for every small negative value.
  if (!(v == v) || v == 1.0 / 0.0 || v == -1.0 / 0.0) return 0ull;
  double m = fmod(trunc(v), 18446744073709551616.0);
  return m < 0 ? 0ull - (u64)(-m) : (u64)m;
}

// kind: 0 uniform (a = lo, b = hi - lo), 1 normal (a = mean, b = std), 2 randint (a = lo, b = hi - lo),
// 3 const (a = value), 4 sequence (a = start, b = step, along a period of 'period' elements).
// dtype: 0 f32, 1 f64, 2 f16, 3 bf16, 4 i8, 5 u8, 6 i16, 7 u16, 8 i32, 9 u32, 10 i64, 11 u64, 12 f8e4m3, 13 f8e5m2.
// epoch: null, or a u32 the harness writes before each timed sample; a non-zero epoch e draws from state ^
// splitmix64(e) instead (epochState() in device-fill.ts), so every sample's inputs are new.
// changes: 0 fills all n elements; c > 0 only c of them, element splitmix64(spot + (first + j) * gamma) % n for
// j < c, spot = splitmix64(state ^ SPARSE_SALT) (sparsePositions() in device-fill.ts), the others left as they are.
extern "C" __global__ void cudakit_fill(void* out, u64 n, int dtype, int kind, double a, double b, u64 state,
                                        u64 first, u64 period, const unsigned int* epoch, u64 changes) {
  if (epoch != 0) {
    unsigned int e = *epoch;
    if (e != 0u) state ^= splitmix64((u64)e);
  }
  const u64 count = changes == 0ull ? n : changes;
  const u64 spot = splitmix64(state ^ 0x5851f42d4c957f2dull);
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < count; j += stride) {
    const u64 i = changes == 0ull ? j : splitmix64(spot + (first + j) * 0x9e3779b97f4a7c15ull) % n;
    double v;
    if (kind == 0) {
      v = __dadd_rn(a, __dmul_rn(b, draw(state, first + i)));
    } else if (kind == 1) {
      // random.ts's normal(): sqrt(-2 log(1 - u1)) * cos(2 pi u2), u1 and u2 this element's two draws.
      double u1 = draw(state, first + 2 * i);
      double u2 = draw(state, first + 2 * i + 1);
      double r = __dsqrt_rn(__dmul_rn(-2.0, log(__dsub_rn(1.0, u1))));
      double z = __dmul_rn(r, cos(__dmul_rn(6.283185307179586, u2)));
      v = __dadd_rn(a, __dmul_rn(b, z));
    } else if (kind == 2) {
      v = __dadd_rn(a, floor(__dmul_rn(b, draw(state, first + i))));
    } else if (kind == 3) {
      v = a;
    } else {
      v = __dadd_rn(a, __dmul_rn((double)(i % period), b));
    }
    switch (dtype) {
      case 0: ((float*)out)[i] = __double2float_rn(v); break;
      case 1: ((double*)out)[i] = v; break;
      case 2: ((unsigned short*)out)[i] = half_bits(v); break;
      case 3: ((unsigned short*)out)[i] = bf16_bits(v); break;
      case 4: case 5: ((unsigned char*)out)[i] = (unsigned char)wrap64(v); break;
      case 6: case 7: ((unsigned short*)out)[i] = (unsigned short)wrap64(v); break;
      case 8: case 9: ((unsigned int*)out)[i] = (unsigned int)wrap64(v); break;
      case 12: ((unsigned char*)out)[i] = fp8_bits(v, 3, 7, -6, 448.0, 0x7eu); break;
      case 13: ((unsigned char*)out)[i] = fp8_bits(v, 2, 15, -14, 57344.0, 0x7bu); break;
      default: ((u64*)out)[i] = wrap64(v); break;
    }
  }
}
`;

/** @internal The fill kernel's signature. */
export const FILL_KERNEL = [
  'cudakit_fill',
  ['ptr', 'u64', 'i32', 'i32', 'f64', 'f64', 'u64', 'u64', 'u64', 'ptr', 'u64'],
] as const;

/**
 * @internal Elements a sparse fill changes (inputSets()'s kept launches): few enough that a key of some sampled
 * elements (256 of 1M: 0.2 %) rarely sees one, enough that a replayed output shows at one of them.
 */
export const SPARSE_CHANGES = 8;

const SPARSE_SALT = 0x5851f42d4c957f2dn;
const GAMMA = 0x9e3779b97f4a7c15n;

/**
 * The elements a sparse fill of `changes` elements writes in a buffer of `n`, drawing from `state` (the epoch's:
 * epochState()) with the buffer's first draw `first`, as the fill kernel finds them (repeats possible).
 */
export function sparsePositions(state: bigint, first: bigint, n: number, changes: number): number[] {
  const spot = splitmix64(BigInt.asUintN(64, state) ^ SPARSE_SALT);
  return Array.from({ length: n === 0 ? 0 : changes }, (_, j) =>
    Number(splitmix64(BigInt.asUintN(64, spot + (first + BigInt(j)) * GAMMA)) % BigInt(n)),
  );
}

const DTYPE_CODE: Record<BufferDType, number> = {
  f32: 0,
  f64: 1,
  f16: 2,
  bf16: 3,
  i8: 4,
  u8: 5,
  i16: 6,
  u16: 7,
  i32: 8,
  u32: 9,
  i64: 10,
  u64: 11,
  f8e4m3: 12,
  f8e5m2: 13,
};

/** Where a buffer's random values come from: a generator's state and the first of its draws to use. */
export interface DrawSource {
  /** splitmix64's state (createRng's seed). */
  state: bigint;
  /** The index of the first draw this buffer uses. */
  first: bigint;
}

/** How many draws of its generator a buffer of `length` elements uses with `init`: generateBytes()'s count. */
export function drawsOf(init: InitSpec, length: number): number {
  switch (init.kind) {
    case 'uniform':
    case 'randint':
      return length;
    case 'normal':
      return 2 * length;
    default:
      return 0;
  }
}

/** The state a generator draws from in epoch `epoch` (the fill kernel's, for the sample with that epoch). */
export function epochState(state: bigint, epoch: number | undefined): bigint {
  return epoch === undefined || epoch === 0 ? state : state ^ splitmix64(BigInt(epoch));
}

type Fill = ReturnType<typeof kernelFor>;
const kernels = new WeakMap<Device, Fill>();

/** @internal The device's fill kernel (compiled and loaded on first use). */
export function fillKernel(device: Device): Fill {
  let kernel = kernels.get(device);
  if (kernel === undefined) {
    kernel = kernelFor(device);
    kernels.set(device, kernel);
  }
  return kernel;
}

function kernelFor(device: Device) {
  const code = new Program(FILL_SOURCE, { name: 'cudakit_fill.cu' }).compile({
    arch: device.arch,
    cudaIncludes: false,
  });
  return device.loadModule(code).getKernel(...FILL_KERNEL);
}

/**
 * Fills `target` (a buffer of the spec's length and dtype) on the GPU with what generateBytes() gives for `init`,
 * drawing from `source` for the random kinds; ordered on the legacy default stream, as copies without a stream are.
 */
export function fillOnDevice(
  target: DeviceBuffer,
  spec: BufferArgSpec,
  init: Exclude<InitSpec, { kind: 'data' }>,
  source: DrawSource,
): void {
  const launch = fillLaunch(target, spec, init, source, 0n, 0);
  if (launch !== undefined) fillKernel(target.device).launch(launch.config, ...launch.args);
}

/** A fill launch's configuration and arguments. */
export interface FillLaunch {
  config: { grid: number; block: number };
  args: [bigint, bigint, number, number, number, number, bigint, bigint, bigint, bigint, bigint];
}

/**
 * The launch that fills `target` as fillOnDevice() does, reading its epoch from `epochPtr` (0n: none), all of it or,
 * with `changes` > 0, that many elements (sparsePositions()); undefined for an empty buffer.
 */
export function fillLaunch(
  target: DeviceBuffer,
  spec: BufferArgSpec,
  init: Exclude<InitSpec, { kind: 'data' }>,
  source: DrawSource,
  epochPtr: bigint,
  changes = 0,
): FillLaunch | undefined {
  const device = target.device;
  const n = spec.length;
  if (n === 0) return undefined;
  const along = init.kind === 'seq' || init.kind === 'arange' ? init.along : undefined;
  const period = along === 'last' ? (spec.shape?.[spec.shape.length - 1] ?? n) : n;
  let code: number;
  let a = 0;
  let b = 0;
  switch (init.kind) {
    case 'uniform':
    case 'randint':
      [code, a, b] = [init.kind === 'uniform' ? 0 : 2, init.lo, init.hi - init.lo];
      break;
    case 'normal':
      [code, a, b] = [1, init.mean, init.std];
      break;
    case 'const':
      [code, a] = [3, init.value];
      break;
    case 'zeros':
      [code, a] = [3, 0];
      break;
    case 'ones':
      [code, a] = [3, 1];
      break;
    case 'arange':
      [code, a, b] = [4, 0, 1];
      break;
    case 'seq':
      [code, a, b] = [4, init.start, init.step];
      break;
  }
  const block = 256;
  const count = changes > 0 ? changes : n;
  const grid = Math.max(1, Math.min(Math.ceil(count / block), device.multiprocessorCount * 16));
  if (DTYPE_INFO[spec.dtype].bytes * n !== target.byteLength) {
    throw new RangeError(
      `Expected a buffer of ${DTYPE_INFO[spec.dtype].bytes * n} bytes for the fill but received ${target.byteLength}`,
    );
  }
  return {
    config: { grid, block },
    args: [
      target.ptr,
      BigInt(n),
      DTYPE_CODE[spec.dtype],
      code,
      a,
      b,
      BigInt.asUintN(64, source.state),
      source.first,
      BigInt(Math.max(1, period)),
      epochPtr,
      BigInt(changes),
    ],
  };
}
