// SPDX-License-Identifier: MIT
// The precision policy (lib/measure/precision.ts, check()'s `precision` option) over a fake device: row dot products
// of k = 1024 random-sign products, as test/adversarial's dot task, with arithmetic emulated on the host (fp32 by
// Math.fround, fp16 and TF32 by rounding doubles to their significands). A tolerance loose enough for any summation
// order lets every downgrade through; the policy lets the honest orders through and stops the downgrades.
import { describe, expect, it } from 'vitest';
import { CudaError, type Kernel } from '../../lib/core/index.js';
import { parseArgSpecs } from '../../lib/measure/argspec.js';
import { InvalidJobError, validateJob } from '../../lib/eval/index.js';
import { check } from '../../lib/measure/check.js';
import { PRECISION_FACTOR, precisionDetail, precisionFigures } from '../../lib/measure/precision.js';
import { FakeDevice, fakeKernel, view } from './fake-device.js';

const f32 = Math.fround;
/** x rounded to a significand of `bits` bits (fp16: 11, TF32: 11, bf16: 8), exponent range ignored. */
const roundTo = (x: number, bits: number): number => {
  if (x === 0 || !Number.isFinite(x)) return x;
  const ulp = 2 ** (Math.floor(Math.log2(Math.abs(x))) - (bits - 1));
  return Math.round(x / ulp) * ulp;
};
const f16 = (x: number): number => roundTo(x, 11);
const tf32 = (x: number): number => roundTo(x, 11);

const rows = 32;
const k = 1024;
const io = parseArgSpecs([
  `a@ptr:f32[${rows},${k}]=uniform(-1,1)`,
  `b@ptr:f32[${rows},${k}]=uniform(-1,1)`,
  `out@ptr:f32[${rows}]:out`,
  `rows@i32=${rows}`,
  `k@i32=${k}`,
]);
const signature = ['ptr', 'ptr', 'ptr', 'i32', 'i32'];
const config = { grid: 1, block: 1 };
/** The loose tolerance: every order passes it, and so does every downgrade but the truncated bf16 accumulator. */
const loose = { atol: 0.5, rtol: 0, trials: 2, guardBytes: 256 };

type RowSum = (a: Float32Array, b: Float32Array, base: number) => number;
/** A fake kernel writing out[r] = rowSum(row r), into a Float32Array or (f64 outputs) a Float64Array. */
function dotKernel(device: FakeDevice, name: string, rowSum: RowSum, wide = false) {
  return fakeKernel(device, name, signature, ([a, b, out]) => {
    const as = view(Float32Array, a);
    const bs = view(Float32Array, b);
    const o = wide ? view(Float64Array, out) : view(Float32Array, out);
    for (let r = 0; r < rows; r++) o[r] = rowSum(as, bs, r * k);
  });
}
const target = (device: FakeDevice, name: string, rowSum: RowSum) => ({
  kernel: dotKernel(device, name, rowSum) as unknown as Kernel,
  config,
});

/** The reference's order: 256 strided fp32 partial sums (fused multiply-add), then a tree. */
const tree: RowSum = (a, b, base) => {
  const part: number[] = [];
  for (let t = 0; t < 256; t++) {
    let s = 0;
    for (let j = t; j < k; j += 256) s = f32(a[base + j]! * b[base + j]! + s);
    part.push(s);
  }
  for (let w = 128; w >= 1; w >>= 1) for (let t = 0; t < w; t++) part[t] = f32(part[t]! + part[t + w]!);
  return part[0]!;
};
const sequential: RowSum = (a, b, base) => {
  let s = 0;
  for (let j = 0; j < k; j++) s = f32(s + f32(a[base + j]! * b[base + j]!));
  return s;
};
const exact: RowSum = (a, b, base) => {
  let s = 0;
  for (let j = 0; j < k; j++) s += a[base + j]! * b[base + j]!;
  return s;
};
const fp16Accumulator: RowSum = (a, b, base) => {
  let s = 0;
  for (let j = 0; j < k; j++) s = f16(s + f16(a[base + j]! * b[base + j]!));
  return s;
};
const fp16Products: RowSum = (a, b, base) => {
  let s = 0;
  for (let j = 0; j < k; j++) s = f32(s + f16(f16(a[base + j]!) * f16(b[base + j]!)));
  return s;
};
const tf32Inputs: RowSum = (a, b, base) => {
  let s = 0;
  for (let j = 0; j < k; j++) s = f32(s + tf32(a[base + j]!) * tf32(b[base + j]!));
  return s;
};

/** The precise reference as a kernel: f64 outputs in its own io, matched to the candidate's by name. */
const preciseKernel = (device: FakeDevice) => ({
  kernel: dotKernel(device, 'dot_f64', exact, true) as unknown as Kernel,
  config,
  io: parseArgSpecs([
    `a@ptr:f32[${rows},${k}]:in`,
    `b@ptr:f32[${rows},${k}]:in`,
    `out@ptr:f64[${rows}]:out`,
    `rows@i32=${rows}`,
    `k@i32=${k}`,
  ]),
});
/** The precise reference in JavaScript: it gets a Float64Array for the output, so its doubles stay doubles. */
const preciseJs = (args: unknown[]): void => {
  const [a, b, out] = args as [Float32Array, Float32Array, Float64Array];
  if (!(out instanceof Float64Array)) throw new Error('the precise reference got no Float64Array');
  for (let r = 0; r < rows; r++) out[r] = exact(a, b, r * k);
};

describe('the precision policy', () => {
  it('without it, a loose tolerance passes every downgrade: what the policy is for', async () => {
    for (const rowSum of [fp16Accumulator, fp16Products, tf32Inputs]) {
      const device = new FakeDevice();
      const reference = { kernel: dotKernel(device, 'ref', tree) as unknown as Kernel, config };
      const r = await check(target(device, 'cand', rowSum), reference, io, loose);
      expect(r.passed, r.summary).toBe(true);
      expect(r).not.toHaveProperty('precisionUsed');
    }
  });

  for (const [label, precise] of [
    ['a kernel with f64 outputs', preciseKernel],
    ['a JavaScript function', () => preciseJs],
  ] as const) {
    describe(`with the precise reference as ${label}`, () => {
      it('passes the honest orders: the tree, sequential fp32, fp64 accumulation', async () => {
        for (const rowSum of [tree, sequential, exact]) {
          const device = new FakeDevice();
          const reference = { kernel: dotKernel(device, 'ref', tree) as unknown as Kernel, config };
          const precision = { reference: precise(device) };
          const r = await check(target(device, 'cand', rowSum), reference, io, { ...loose, precision });
          expect(r.passed, r.summary).toBe(true);
          expect(r.precisionUsed).toBeGreaterThanOrEqual(0);
          // The least accurate honest order is some 6 times the tree's error: a fifth of the bound at most.
          expect(r.precisionUsed).toBeLessThan(0.35);
          expect(r.summary).toMatch(/% of the precision bound$/);
        }
      });

      it("fails fp16 accumulation, fp16 products and TF32 inputs inside the tolerance ('precision')", async () => {
        for (const rowSum of [fp16Accumulator, fp16Products, tf32Inputs]) {
          const device = new FakeDevice();
          const reference = { kernel: dotKernel(device, 'ref', tree) as unknown as Kernel, config };
          const precision = { reference: precise(device) };
          const r = await check(target(device, 'cand', rowSum), reference, io, { ...loose, precision });
          expect(r.passed).toBe(false);
          expect(r.defence).toBe('precision');
          expect(r.trials[0]!.toleranceUsed).toBeLessThan(1); // inside the tolerance all the same
          expect(r.precisionUsed).toBeGreaterThan(10); // hundreds of times the honest error: far from the bound
          expect(r.summary).toMatch(
            new RegExp(
              '^FAIL \\(precision\\) in trial 0: argument 2: rms error .* against the precise reference, ' +
                ".* times the declared-precision reference's .* \\(at most 32 times\\)",
            ),
          );
        }
      });
    });
  }

  it('takes the factor: a bound of 1000 times lets TF32 inputs through, the fp16 accumulator not', async () => {
    const device = new FakeDevice();
    const reference = { kernel: dotKernel(device, 'ref', tree) as unknown as Kernel, config };
    const precision = { reference: preciseJs, factor: 1e5 };
    const r = await check(target(device, 'tf32', tf32Inputs), reference, io, { ...loose, precision });
    expect(r.passed, r.summary).toBe(true);
    const strict = { reference: preciseJs, factor: 1000 };
    const bad = await check(target(device, 'fp16', fp16Accumulator), reference, io, { ...loose, precision: strict });
    expect(bad.defence).toBe('precision');
  });

  it('refuses precision without a reference, a factor below 1, and a precise io that does not match', async () => {
    const device = new FakeDevice();
    const candidate = target(device, 'cand', tree);
    const reference = { kernel: dotKernel(device, 'ref', tree) as unknown as Kernel, config };
    await expect(check(candidate, null, io, { ...loose, precision: { reference: preciseJs } })).rejects.toThrow(
      /options\.precision needs a reference/,
    );
    await expect(
      check(candidate, reference, io, { ...loose, precision: { reference: preciseJs, factor: 0.5 } }),
    ).rejects.toThrow(RangeError);
    const wrong = { ...preciseKernel(device) };
    wrong.io = parseArgSpecs([
      `a@ptr:f64[${rows},${k}]:in`, // an input must be the candidate's type: the precise kernel reads the same values
      `b@ptr:f32[${rows},${k}]:in`,
      `out@ptr:f64[${rows}]:out`,
      `rows@i32=${rows}`,
      `k@i32=${k}`,
    ]);
    await expect(check(candidate, reference, io, { ...loose, precision: { reference: wrong } })).rejects.toThrow(
      /options\.precision\.reference.*|reference io: the reference's input/,
    );
  });

  it('rejects a precise reference that does not compute what the reference computes', async () => {
    const device = new FakeDevice();
    const reference = { kernel: dotKernel(device, 'ref', tree) as unknown as Kernel, config };
    // Its inputs are scratch outputs here (no :in): it sums zeros, and every candidate would look as good as the
    // reference against it.
    const blind = preciseKernel(device);
    blind.io = parseArgSpecs([
      `a@ptr:f32[${rows},${k}]`,
      `b@ptr:f32[${rows},${k}]`,
      `out@ptr:f64[${rows}]:out`,
      `rows@i32=${rows}`,
      `k@i32=${k}`,
    ]);
    await expect(
      check(target(device, 'cand', fp16Accumulator), reference, io, { ...loose, precision: { reference: blind } }),
    ).rejects.toThrow(
      /options\.precision\.reference: its output argument 2 is 0 at element \d+, where the reference's/,
    );
  });

  it('blames the precise reference when it faults', async () => {
    const device = new FakeDevice();
    const reference = { kernel: dotKernel(device, 'ref', tree) as unknown as Kernel, config };
    const faulting = fakeKernel(device, 'dot_f64', signature, () => {
      throw new CudaError({
        code: 'CUDA_ERROR_ILLEGAL_ADDRESS',
        api: 'cuCtxSynchronize',
        result: 700,
        explanation: 'an illegal address',
      });
    });
    const precision = { reference: { ...preciseKernel(device), kernel: faulting as unknown as Kernel } };
    const r = await check(target(device, 'cand', tree), reference, io, { ...loose, precision });
    expect(r.defence).toBe('reference-fault');
    expect(r.summary).toMatch(/the precise reference kernel failed/);
  });
});

describe('precisionFigures', () => {
  it("is the candidate's rms error over factor times the larger of the reference's and one rounding", () => {
    const precise = [1, -1, 2, -2];
    const f = precisionFigures('f32', [1.5, -1, 2, -2], [1.25, -1, 2, -2], precise, 4);
    expect(f.candidateRms).toBeCloseTo(0.25, 12); // sqrt(0.5² / 4)
    expect(f.referenceRms).toBeCloseTo(0.125, 12);
    expect(f.roundingRms).toBeCloseTo(2 ** -24 * Math.sqrt(2.5), 18);
    expect(f.used).toBeCloseTo(0.25 / (4 * 0.125), 12);
  });

  it('falls back to one rounding of the output type where the reference is exact, skipping non-finite values', () => {
    const f = precisionFigures('f16', [1 + 2 ** -10, NaN, 3], [1, 5, 3], [1, Infinity, 3], PRECISION_FACTOR);
    expect(f.referenceRms).toBe(0);
    expect(f.roundingRms).toBeCloseTo(2 ** -11 * Math.sqrt(5), 15);
    expect(f.used).toBeCloseTo(2 ** -10 / Math.sqrt(2) / (PRECISION_FACTOR * f.roundingRms), 12);
    expect(precisionFigures('f32', [0], [0], [0], 32).used).toBe(0);
    expect(precisionFigures('f32', [1e-3], [0], [0], 32).used).toBe(Infinity);
    expect(precisionDetail(2, f, 32)).toMatch(/one rounding of/);
  });
});

describe('a job’s check.precision (validateJob)', () => {
  const source = 'extern "C" __global__ void dot(const float*, const float*, float*, int, int) {}';
  const args = [
    'a@ptr:f32[4,8]=uniform(-1,1)',
    'b@ptr:f32[4,8]=uniform(-1,1)',
    'out@ptr:f32[4]:out',
    'r@i32=4',
    'k@i32=8',
  ];
  const preciseArgs = ['a@ptr:f32[4,8]:in', 'b@ptr:f32[4,8]:in', 'out@ptr:f64[4]:out', 'r@i32=4', 'k@i32=8'];
  const job = (over: Record<string, unknown> = {}) => ({
    source,
    kernel: 'dot',
    grid: 4,
    block: 32,
    args,
    reference: { source, kernel: 'dot' },
    check: { precision: { reference: { source, kernel: 'dot_f64', args: preciseArgs }, factor: 16 } },
    ...over,
  });
  /** The problems validateJob() lists for `value`. */
  const problems = (value: unknown): string[] => {
    try {
      validateJob(value);
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidJobError);
      return (e as InvalidJobError).problems.map((p) => p.message);
    }
    return [];
  };

  it('accepts a precise kernel with f64 outputs, with job.reference or a compare baseline as the honest kernel', () => {
    expect(problems(job())).toEqual([]);
    expect(problems(job({ reference: undefined, compare: { source, kernel: 'dot' } }))).toEqual([]);
  });

  it('needs a reference kernel, a factor of at least 1, and arguments that match the candidate’s', () => {
    expect(problems(job({ reference: undefined }))[0]).toMatch(
      new RegExp(
        '^Expected a reference kernel \\(or a compare baseline\\) that computes in the declared precision, ' +
          'as job\\.check\\.precision needs, for job\\.reference',
      ),
    );
    expect(problems(job({ reference: { expected: { out: { base64: 'AAAAAAAAAAAAAAAAAAAAAA==' } } } }))).toEqual(
      expect.arrayContaining([expect.stringMatching(/job\.check\.precision needs, for job\.reference/)]),
    );
    const precise = (over: Record<string, unknown>) => job({ check: { precision: over } });
    expect(problems(precise({ reference: { source, kernel: 'p', args: preciseArgs }, factor: 0 }))).toEqual([
      'Expected a finite number, at least 1 for job.check.precision.factor but received 0 of type number',
    ]);
    const wrongInput = ['a@ptr:f64[4,8]:in', ...preciseArgs.slice(1)];
    expect(problems(precise({ reference: { source, kernel: 'p', args: wrongInput } }))[0]).toMatch(
      /^Expected arguments that match the candidate's, f64 for float outputs .* for job\.check\.precision\.refer/,
    );
    expect(problems(precise({ factor: 2 }))[0]).toMatch(/job\.check\.precision\.reference/);
    expect(problems(precise({ reference: { source, kernel: 'p' }, tolerance: 1 }))).toEqual([
      'Unknown field job.check.precision.tolerance; known fields: reference, factor',
    ]);
  });
});
