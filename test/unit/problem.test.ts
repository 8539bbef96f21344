// SPDX-License-Identifier: MIT
// Problems with cases (lib/eval/problem.ts) and their score (lib/eval/score.ts), without a GPU: what validateProblem()
// refuses and how it says so, the EvalJob caseJob() makes of a case (every size over the dimensions evaluated, the
// reference as the comparison's baseline, tolerances by the outputs' type), and the floored geometric mean.
import { describe, expect, it } from 'vitest';
import { InvalidJobError, validateJob } from '../../lib/eval/index.js';
import { InvalidProblemError, PROBLEM_LIMITS, validateProblem } from '../../lib/eval/problem.js';
import type { EvalProblem, ProblemSubmission } from '../../lib/eval/problem-types.js';
import { caseJob, caseName, caseWork, outputBytes } from '../../lib/eval/problem-case.js';
import { caseScore, problemScore } from '../../lib/eval/score.js';
import { caseShare } from '../../lib/eval/evaluate-problem.js';
import { PRESETS } from '../../lib/measure/index.js';

const ADD = 'extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {}';

const problem = (over: Partial<EvalProblem> = {}): EvalProblem => ({
  name: 'vector-add',
  dims: { n: { min: 1, max: 1 << 28 } },
  args: ['a@ptr:f32[n]=normal(0,1)', 'b@ptr:f32[n]=normal(0,1)', 'c@ptr:f32[n]:out', 'n@i32=n'],
  reference: { source: ADD, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 },
  timing: { bytes: '12 * n', flops: 'n', preset: 'quick' },
  cases: [{ dims: { n: 1 << 20 } }, { dims: { n: 1000 }, name: 'odd' }, { dims: { n: 12_345 }, visibility: 'hidden' }],
  ...over,
});

const submission: ProblemSubmission = { source: ADD, kernel: 'add', grid: 'cdiv(n, 128)', block: 128 };

/** The InvalidProblemError `f` throws, its messages. */
function faults(f: () => unknown): string[] {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidProblemError);
    expect((e as InvalidProblemError).code).toBe('ERR_CUDAKIT_INVALID_PROBLEM');
    return (e as InvalidProblemError).problems.map((p) => p.message);
  }
  throw new Error('did not throw');
}

describe('caseJob', () => {
  it('evaluates every size, launch and the roofline work with the case’s dimensions', () => {
    const p = validateProblem(problem(), submission);
    const job = caseJob(p, submission, p.cases[1]!);
    expect(job.args).toEqual([
      'a@ptr:f32[1000]=normal(0,1)',
      'b@ptr:f32[1000]=normal(0,1)',
      'c@ptr:f32[1000]:out',
      'n@i32=1000',
    ]);
    expect(job.grid).toBe(8);
    expect(job.block).toBe(128);
    expect(job.compare).toMatchObject({ kernel: 'add', grid: 4, block: 256 });
    expect(job.reference).toBeUndefined();
    expect(job.timing).toEqual({ bytes: 12_000, flops: 1000, preset: 'quick' });
    expect(job.name).toBe('add [odd]');
    expect(() => validateJob(job)).not.toThrow();
    expect(caseWork(p, p.cases[0]!)).toEqual({ bytes: 12 * (1 << 20), flops: 1 << 20 });
  });

  it('reads shapes with commas inside calls, object arguments, shared memory and 2-D launches', () => {
    const p = validateProblem(
      problem({
        dims: ['m', 'k'],
        args: [
          'x@ptr:f32[m, max(k, 4)]=uniform(-1,1)',
          { kind: 'buffer', dtype: 'f32', shape: ['m', 2], role: 'out', name: 'y' },
          { kind: 'scalar', type: 'i32', value: 'm * k', name: 'mk' },
          'ptr:u8[1M]',
          'w@ptr:f32[k, 2*k, 1M]',
        ],
        reference: { source: ADD, kernel: 'ref', grid: ['cdiv(k, 32)', 'm'], block: [32, 8], sharedMemBytes: '4 * k' },
        timing: {},
        cases: [{ dims: { m: 3, k: 2 } }],
      }),
    );
    const s: ProblemSubmission = { ...submission, grid: ['m', 1], block: [64, 'k'], sharedMemBytes: '8 * k' };
    const job = caseJob(p, s, p.cases[0]!);
    expect(job.args).toEqual([
      'x@ptr:f32[3,4]=uniform(-1,1)',
      { kind: 'buffer', dtype: 'f32', shape: [3, 2], role: 'out', name: 'y' },
      { kind: 'scalar', type: 'i32', value: 6, name: 'mk' },
      'ptr:u8[1M]',
      'w@ptr:f32[2,4,1M]',
    ]);
    expect(job.grid).toEqual([3, 1]);
    expect(job.block).toEqual([64, 2]);
    expect(job.sharedMemBytes).toBe(16);
    expect(job.compare).toMatchObject({ grid: [1, 3], block: [32, 8], sharedMemBytes: 8 });
    expect(caseName(p.cases[0]!)).toBe('m=3 k=2');
  });

  it('holds each output to its own element type’s tolerance, and keeps a literal reference per case', () => {
    const p = validateProblem(
      problem({
        args: ['x@ptr:f32[n]=arange', 'y@ptr:f16[n]:out', 'z@ptr:f32[n]:out', 'n@i32=n'],
        check: { tolerances: { f16: { atol: 1e-2, rtol: 1e-3 }, f32: { rtol: 1e-2 }, bf16: { atol: 1 } }, trials: 2 },
        cases: [{ dims: { n: 2 }, expected: { y: { base64: 'AAAAAA==' }, z: { base64: 'AAAAAAAAAAA=' } } }],
      }),
    );
    const job = caseJob(p, submission, p.cases[0]!);
    // The f32 output keeps its own (f32's rtol, the default atol), not the f16 output's looser atol.
    expect(job.check).toEqual({
      trials: 2,
      tolerances: { f16: { atol: 1e-2, rtol: 1e-3 }, f32: { rtol: 1e-2 }, bf16: { atol: 1 } },
    });
    expect(validateJob(job).check).toEqual(job.check);
    expect(job.reference).toEqual({ expected: p.cases[0]!.expected });
    expect(job.compare).toMatchObject({ kernel: 'add' });
  });

  it('with a baseline, the reference kernel is the check’s and the baseline is timed', () => {
    const base = { source: ADD, kernel: 'fast', grid: 'cdiv(n, 1024)', block: 1024 };
    const p = validateProblem(problem({ baseline: base }));
    const job = caseJob(p, submission, p.cases[0]!);
    expect(job.compare).toMatchObject({ kernel: 'fast', grid: 1024 });
    expect(job.reference).toMatchObject({ kernel: 'add', grid: 4096 });
  });

  it('gives the case its precise reference, its launch and arguments over the dimensions, and its factor', () => {
    const precise = {
      source: ADD,
      kernel: 'add_f64',
      grid: 'cdiv(n, 64)',
      args: ['a@ptr:f32[n]:in', 'b@ptr:f32[n]:in', 'c@ptr:f64[n]:out', 'n@i32=n'],
    };
    const p = validateProblem(problem({ check: { precision: { reference: precise, factor: 8 } } }), submission);
    const job = caseJob(p, submission, p.cases[1]!);
    expect(job.check!.precision).toEqual({
      reference: {
        source: ADD,
        kernel: 'add_f64',
        grid: 16,
        args: ['a@ptr:f32[1000]:in', 'b@ptr:f32[1000]:in', 'c@ptr:f64[1000]:out', 'n@i32=1000'],
      },
      factor: 8,
    });
    expect(validateJob(job).check).toEqual(job.check);
  });

  it('refuses a precision policy without a reference kernel, a factor below 1, and its unknown fields', () => {
    const reference = { source: ADD, kernel: 'add_f64', grid: 'cdiv(m, 64)', color: 1 } as never;
    const messages = faults(() =>
      validateProblem(
        problem({
          reference: undefined as never,
          baseline: { source: ADD, kernel: 'add' },
          check: { precision: { reference, factor: 0.5 } },
        }),
      ),
    );
    expect(messages).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Unknown field problem\.check\.precision\.reference\.color/),
        'Expected a finite number, at least 1 for problem.check.precision.factor but received 0.5 of type number',
        expect.stringMatching(
          /^Expected a reference kernel .* as problem\.check\.precision needs, for problem\.reference/,
        ),
        expect.stringMatching(/problem\.check\.precision\.reference\.grid/),
      ]),
    );
  });

  it('counts the bytes a job writes (its outputs, read-write ones too), which the L2 may hold when it ends', () => {
    const args = [
      'a@ptr:f32[10]=normal(0,1)',
      'c@ptr:f32[10]:out',
      'y@ptr:f32[4]=zeros:out',
      { kind: 'buffer' as const, dtype: 'f16' as const, length: 8 },
      { kind: 'buffer' as const, dtype: 'f32' as const, shape: [2, 3], init: { kind: 'zeros' as const } },
      'n@i32=10',
    ];
    expect(outputBytes({ args })).toBe(40 + 16 + 16);
  });

  it('a value no case can have is the case’s error, naming the expression and the values', () => {
    const p = validateProblem(problem());
    expect(() => caseJob(p, { ...submission, grid: 'n - 2000' }, p.cases[1]!)).toThrow(
      /submission\.grid.*'n - 2000'.*-1000.*n = 1000/,
    );
  });
});

describe('validateProblem', () => {
  it('accepts the problem as it is', () => {
    const p = problem();
    expect(validateProblem(p, submission)).toBe(p);
  });

  it('lists every fault of the problem’s own fields at once', () => {
    const messages = faults(() =>
      validateProblem({
        name: '../etc',
        dims: { n: { min: 5, max: 2 }, ceil: {} },
        args: 'x',
        reference: 7,
        cases: [],
        extra: 1,
      }),
    );
    expect(messages).toEqual(
      expect.arrayContaining([
        'Unknown field problem.extra; known fields: name, description, dims, args, reference, baseline, headers, ' +
          'compile, check, timing, cases',
        expect.stringMatching(/^Expected a name of letters.* for problem\.name but received '\.\.\/etc'/),
        expect.stringMatching(/^Expected at least 5 for problem\.dims\.n\.max but received 2/),
        expect.stringMatching(/for problem\.dims\.ceil/),
        expect.stringMatching(/for problem\.args but received 'x'/),
        expect.stringMatching(/for problem\.reference but received 7/),
        expect.stringMatching(/for problem\.cases but received an array/),
      ]),
    );
  });

  it('refuses expressions over undeclared dimensions, and bad syntax, naming where', () => {
    const messages = faults(() =>
      validateProblem(
        problem({
          args: ['x@ptr:f32[n * q]', 'n@i32=n'],
          reference: { source: ADD, kernel: 'add', grid: 'cdiv(n, ', block: 256 },
          timing: { bytes: 'eval("1")' },
        }),
        { ...submission, block: 'm' },
      ),
    );
    expect(messages).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/dimensions \(n\) for problem\.args\[0\].*uses 'q'/),
        expect.stringMatching(/for problem\.reference\.grid at column/),
        expect.stringMatching(/for problem\.timing\.bytes at column/),
        expect.stringMatching(/dimensions \(n\) for submission\.block.*uses 'm'/),
      ]),
    );
  });

  it('checks every case: dimensions known, within bounds, integers, names unique', () => {
    const messages = faults(() =>
      validateProblem(
        problem({
          cases: [
            { dims: { n: 0 } },
            { dims: { n: 1.5 } },
            { dims: { n: 4, q: 1 } },
            { dims: {} },
            { dims: { n: 8 }, name: 'x', visibility: 'secret' as never },
            { dims: { n: 9 }, name: 'x' },
          ],
        }),
      ),
    );
    expect(messages).toEqual(
      expect.arrayContaining([
        `Expected an integer in [1, ${1 << 28}] for problem.cases[0].dims.n but received 0 of type number`,
        'Expected a safe integer for problem.cases[1].dims.n but received 1.5 of type number',
        expect.stringMatching(/dimension of the problem \(n\) for problem\.cases\[2\]\.dims\.q/),
        'Expected a safe integer for problem.cases[3].dims.n but received undefined',
        expect.stringMatching(/'public' or 'hidden' for problem\.cases\[4\]\.visibility/),
        expect.stringMatching(/a name no other case has \('x' is taken\) for problem\.cases\[5\]\.name/),
      ]),
    );
  });

  it('checks each case’s job as validateJob() does, saying which case', () => {
    const messages = faults(() =>
      validateProblem(problem({ args: ['x@ptr:f99[n]', 'n@i32=n'], cases: [{ dims: { n: 4 }, name: 'four' }] })),
    );
    expect(messages.length).toBeGreaterThan(0);
    expect(messages[0]).toMatch(/^case 'four' \(problem\.cases\[0\]\): .*job\.args\[0\]/);
    expect(new InvalidJobError([])).toBeInstanceOf(TypeError);
  });

  it('holds a stranger’s problem to its limits', () => {
    const many = Array.from({ length: PROBLEM_LIMITS.maxCases + 1 }, (_, i) => ({ dims: { n: i + 1 } }));
    expect(faults(() => validateProblem(problem({ cases: many })))).toEqual([
      `Expected at most ${PROBLEM_LIMITS.maxCases} cases for problem.cases but received ${many.length} of type number`,
    ]);
    const dims = Object.fromEntries(Array.from({ length: PROBLEM_LIMITS.maxDims + 1 }, (_, i) => [`d${i}`, {}]));
    expect(faults(() => validateProblem(problem({ dims })))[0]).toMatch(/at most 16 dimensions/);
    expect(faults(() => validateProblem(null))).toEqual([
      'Expected a problem { name, dims, args, reference?, cases, ... } for problem but received null',
    ]);
  });

  it('refuses a skipped check or timing, and a size suffix that is also a dimension', () => {
    const messages = faults(() =>
      validateProblem(
        problem({
          dims: ['n', 'k'],
          args: ['x@ptr:f32[4k]', 'n@i32=n'],
          check: { skip: true, withoutReference: 'skip' } as never,
          timing: { skip: true } as never,
          cases: [{ dims: { n: 4, k: 2 } }],
        }),
      ),
    );
    expect(messages).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Unknown field problem\.check\.skip; known fields: trials, seed/),
        expect.stringMatching(/^Unknown field problem\.check\.withoutReference/),
        expect.stringMatching(/^Unknown field problem\.timing\.skip/),
        'Expected a size without the suffix k, which is also a dimension (write 4 * k) for problem.args[0] but ' +
          "received '4k' of type string",
      ]),
    );
  });

  it('refuses tolerances of unknown types and negative ones', () => {
    const messages = faults(() =>
      validateProblem(problem({ check: { tolerances: { f33: { atol: 1 }, f32: { rtol: -1, x: 1 } as never } } })),
    );
    expect(messages).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/an element type .* for problem\.check\.tolerances\.f33/),
        'Expected a non-negative number for problem.check.tolerances.f32.rtol but received -1 of type number',
        'Unknown field problem.check.tolerances.f32.x; known fields: atol, rtol',
      ]),
    );
  });
});

describe('the score', () => {
  const t = { baselineUs: 100, candidateUs: 50, speedup: 2, speedupLow: 1.9, speedupHigh: 2.1, floorUs: 10 };

  it('is the geometric mean of the cases’ speedups', () => {
    const s = problemScore([t, { ...t, speedup: 8, speedupLow: 7.6, speedupHigh: 8.4, candidateUs: 12.5 }]);
    expect(s.score).toBeCloseTo(4, 12);
    expect(s.scoreLow).toBeLessThan(4);
    expect(s.scoreHigh).toBeGreaterThan(4);
    expect(s.cases.map((c) => c.floored)).toEqual([false, false]);
  });

  it('floors a case at its roofline, so one case cannot carry the aggregate (reference-kernels #162)', () => {
    // A case that reads 1000× faster than its baseline, 100× below what the GPU can do.
    const cheat = { ...t, candidateUs: 0.1, speedup: 1000, speedupLow: 900, speedupHigh: 1100 };
    const s = problemScore([t, cheat]);
    expect(s.cases[1]).toEqual({ speedup: 10, speedupLow: 10, speedupHigh: 10, floored: true });
    expect(s.score).toBeCloseTo(Math.sqrt(20), 12);
    // Without the floor the same cases would score sqrt(2000).
    expect(problemScore([t, { ...cheat, floorUs: undefined }]).score).toBeCloseTo(Math.sqrt(2000), 9);
  });

  it('narrows its interval as cases are added, and is exact where every case is', () => {
    const one = problemScore([t]);
    const four = problemScore([t, t, t, t]);
    expect(four.score).toBeCloseTo(one.score, 12);
    expect(four.scoreHigh - four.scoreLow).toBeCloseTo((one.scoreHigh - one.scoreLow) / 2, 2);
    const exact = problemScore([{ ...t, speedupLow: 2, speedupHigh: 2 }]);
    expect([exact.scoreLow, exact.score, exact.scoreHigh]).toEqual([2, 2, 2]);
  });

  it('refuses no cases and timings that are not positive', () => {
    expect(() => problemScore([])).toThrow(RangeError);
    expect(() => caseScore({ ...t, speedupLow: 0 })).toThrow(/positive number for speedupLow/);
    expect(() => caseScore({ ...t, candidateUs: Number.NaN })).toThrow(RangeError);
    expect(() => caseScore({ ...t, floorUs: -1 })).toThrow(/floorUs/);
  });
});

describe("a case's share of the stopping rule", () => {
  it("splits the preset's budget among the cases and widens each case's target by √k", () => {
    const full = PRESETS.default;
    const share = caseShare({ preset: 'default' }, 4, true);
    expect(share.minTimeMs).toBe(full.minTimeMs / 4);
    expect(share.timeoutMs).toBe(full.timeoutMs / 4);
    expect(share.maxSamples).toBe(Math.ceil(full.maxSamples / 4));
    expect(share.targetRelCI).toBeCloseTo(full.targetRelCI * 2, 12);
    // The first case warms up in full: the clock ramps there.
    expect(share.warmupMinMs).toBeUndefined();
    const later = caseShare({ preset: 'default' }, 4, false);
    expect(later.warmupMinMs).toBe(full.warmupMinMs / 4);
    expect(later.warmupMaxMs).toBe(full.warmupMaxMs / 4);
  });

  it("starts from the problem's own rule and preset, and leaves a problem of one case as it is", () => {
    const share = caseShare({ preset: 'quick', rule: { timeoutMs: 8000, throttleRatio: 0.9 } }, 2, true);
    expect(share.timeoutMs).toBe(4000);
    expect(share.throttleRatio).toBe(0.9);
    expect(share.minTimeMs).toBe(PRESETS.quick.minTimeMs / 2);
    expect(caseShare({ preset: 'quick', rule: { timeoutMs: 8000 } }, 1, true)).toEqual({ timeoutMs: 8000 });
  });

  it("takes the problem's precision as its target and splits a GPU-time cap like the rest of the budget", () => {
    const share = caseShare({ preset: 'default', precision: 0.01, rule: { maxGpuMs: 240 } }, 4, true);
    expect(share.targetRelCI).toBeCloseTo(0.02, 12);
    expect(share.maxGpuMs).toBe(60);
    expect(caseShare({ precision: 0.03 }, 1, true)).toEqual({ targetRelCI: 0.03 });
    expect(caseShare({ preset: 'default' }, 4, true)).not.toHaveProperty('maxGpuMs');
  });
});
