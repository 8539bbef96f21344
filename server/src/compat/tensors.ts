// SPDX-License-Identifier: MIT
// The original server's tensors in cudakit's terms: a tensor_spec (its dtype, shape, data or init) as a cudakit buffer
// argument, by the original's rules (io_contract/tensor_utils.py). Shared by CUDA kernels (jobs.ts) and Python
// candidates (python-jobs.ts).
import type { EvalBufferArg, EvalInit } from 'cudakit';
import { CompatClientError } from './errors.js';
import { CUDAKIT_DTYPES, type ArgSpec, type CompatDType } from './schemas.js';

const FLOAT_DTYPES = new Set(['float32', 'float64', 'float16', 'bfloat16', 'float8_e4m3fn', 'float8_e5m2']);
/** What the original's randn draws into an integer tensor: inclusive bounds per dtype. */
const INT_RANDN_RANGE: Record<string, [number, number]> = {
  int8: [-128, 127],
  uint8: [0, 255],
  int16: [-32768, 32767],
  int32: [-2147483648, 2147483647],
  int64: [-1_000_000, 1_000_000],
};
export function compatDtype(name: string, field: string): CompatDType {
  // Own keys only: 'constructor' or 'toString' must not find Object.prototype's.
  if (!Object.hasOwn(CUDAKIT_DTYPES, name)) {
    throw new CompatClientError(
      `Unknown dtype '${name.slice(0, 40)}': one of ${Object.keys(CUDAKIT_DTYPES).join(', ')}`,
      {
        field,
      },
    );
  }
  return name as CompatDType;
}

/** Python's `x or default` for the original's optional numbers (0 and null both take the default). */
export const or = (x: number | null | undefined, fallback: number): number =>
  x === undefined || x === null || x === 0 ? fallback : x;

/** A TensorInit as a cudakit init, by the original's rules (io_contract/tensor_utils.py), for one dtype. */
function initOf(init: NonNullable<NonNullable<ArgSpec['tensor_spec']>['init']>, dtype: CompatDType, field: string) {
  const kind = init.kind ?? 'randn';
  const seed = init.seed ?? undefined;
  if (seed !== undefined && (seed < 0 || !Number.isSafeInteger(seed))) {
    throw new CompatClientError('A seed is a non-negative integer here', { field: `${field} -> seed`, seed });
  }
  const seeded = seed === undefined ? {} : { seed };
  const float = FLOAT_DTYPES.has(dtype);
  const coin: EvalInit = { kind: 'randint', lo: 0, hi: 2, ...seeded };
  switch (kind) {
    case 'randn': {
      if (dtype === 'bool') return coin;
      if (!float) {
        const [lo, hi] = INT_RANDN_RANGE[dtype]!;
        return { kind: 'randint', lo, hi: hi + 1, ...seeded } satisfies EvalInit;
      }
      // The original scales only when a mean is given (std then defaults to 1).
      const scaled = init.mean !== undefined && init.mean !== null;
      const mean = scaled ? or(init.mean, 0) : 0;
      const std = scaled ? or(init.std, 1) : 1;
      return { kind: 'normal', mean, std, ...seeded } satisfies EvalInit;
    }
    case 'uniform': {
      if (dtype === 'bool') return coin;
      if (float) return { kind: 'uniform', lo: or(init.low, 0), hi: or(init.high, 1), ...seeded } satisfies EvalInit;
      // Integers: randint(low, high + 1), the high bound inclusive; Python's int() truncates.
      const lo = Math.trunc(or(init.low, 0));
      const hi = Math.trunc(or(init.high, 100)) + 1;
      return { kind: 'randint', lo, hi, ...seeded } satisfies EvalInit;
    }
    case 'zeros':
      return { kind: 'zeros' } satisfies EvalInit;
    case 'ones':
      return { kind: 'ones' } satisfies EvalInit;
    case 'full': {
      const value = or(init.fill_value, 0);
      return { kind: 'const', value: dtype === 'bool' ? Number(value !== 0) : value } satisfies EvalInit;
    }
    case 'arange':
      if (dtype === 'bool') {
        throw new CompatClientError("init 'arange' has no meaning for a bool tensor", { field: `${field} -> kind` });
      }
      // One row of shape[-1] values, repeated over the leading dimensions, as the original broadcasts it.
      return { kind: 'seq', start: or(init.start, 0), step: or(init.step, 1), along: 'last' } satisfies EvalInit;
    default:
      throw new CompatClientError(
        `Unknown init kind '${kind.slice(0, 40)}': randn, zeros, ones, uniform, full or arange`,
        { field: `${field} -> kind` },
      );
  }
}

export function tensorOf(a: ArgSpec, role: 'in' | 'out', inout: boolean, field: string): EvalBufferArg {
  const spec = a.tensor_spec;
  if (spec === undefined || spec === null) {
    throw new CompatClientError('A tensor argument needs tensor_spec', { field: `${field} -> tensor_spec` });
  }
  const data = spec.data ?? undefined;
  // Literal data brings its own dtype and shape, as the original decodes it.
  const dtype = compatDtype(data?.dtype ?? spec.dtype ?? 'float32', `${field} -> tensor_spec -> dtype`);
  const specShape = spec.shape ?? [];
  let shape = specShape;
  if (data !== undefined) {
    shape = data.shape ?? [];
    if (specShape.length > 0 && specShape.join(',') !== shape.join(',')) {
      throw new CompatClientError('tensor_spec.shape and tensor_spec.data.shape differ', {
        field: `${field} -> tensor_spec -> shape`,
        shape: specShape,
        data_shape: shape,
      });
    }
  }
  if (!shape.every((d) => d >= 1)) {
    throw new CompatClientError('Tensor dimensions are positive integers here (an empty tensor has nothing to check)', {
      field: `${field} -> tensor_spec -> shape`,
      shape,
    });
  }
  let init: EvalInit | undefined;
  if (data !== undefined) init = { kind: 'data', base64: data.data_b64, compress: data.compress ?? 'none' };
  else if (spec.init !== undefined && spec.init !== null)
    init = initOf(spec.init, dtype, `${field} -> tensor_spec -> init`);
  // No init: the original's torch.empty holds whatever was there; an input or a read-write output starts from zeros
  // here, a plain output is poisoned so that elements the kernel never writes are caught.
  else if (role === 'in' || inout) init = { kind: 'zeros' };
  return {
    kind: 'buffer',
    dtype: CUDAKIT_DTYPES[dtype],
    ...(shape.length === 0 ? { length: 1 } : { shape }),
    role,
    ...(init === undefined ? {} : { init }),
    name: a.name,
  };
}
