// SPDX-License-Identifier: MIT
// evaluate() end to end on the GPU: a whole job (check, timing, re-check), a comparison, a kernel fault (in a child
// process: it costs the CUDA context), literal inputs and expected outputs, a reference kernel whose parameters come
// in another order, and a fresh module for each phase. Small buffers and the quick preset keep it short.
import { deflateSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { type EvalJob, type EvalProgress, type JsReference, evaluate } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';
import { SAXPY, SAXPY4, SAXPY_ILLEGAL } from '../support/kernels.js';
import { runScript } from '../child.js';

const N = 1 << 20;
const saxpyJob = (more: Partial<EvalJob> = {}): EvalJob => ({
  source: SAXPY,
  kernel: 'saxpy',
  grid: N / 256,
  block: 256,
  args: ['f32=2.5', `ptr:f32[${N}]=uniform(-1,1)`, `ptr:f32[${N}]=uniform(-1,1):out`, `i32=${N}`],
  check: { trials: 2 },
  timing: { preset: 'quick', bytes: 12 * N },
  ...more,
});
const saxpyJs: JsReference = (args) => {
  const [a, x, y, n] = args as [number, Float32Array, Float32Array, number];
  for (let i = 0; i < n; i++) y[i] = a * x[i]! + y[i]!;
};
const f32 = (...values: number[]): string => Buffer.from(new Float32Array(values).buffer).toString('base64');

// Under compute-sanitizer a planted fault is (correctly) a memcheck error.
const unsanitized = process.env.CUDAKIT_UNDER_SANITIZER === '1' ? it.skip : it;

describeGpu('evaluate()', () => {
  it('runs a whole job: compile, load, check against a reference kernel, time, re-check', async () => {
    const progress: EvalProgress[] = [];
    const report = await evaluate(
      saxpyJob({ reference: { source: { text: SAXPY, name: 'ref.cu' }, kernel: 'saxpy' } }),
      { onProgress: (p) => progress.push(p) },
    );
    expect(report.error).toBeUndefined();
    expect(report).toMatchObject({ name: 'saxpy', passed: true, phase: undefined, comparison: undefined });
    expect(report.phases.map((p) => p.phase)).toEqual(['validate', 'compile', 'load', 'check', 'time', 'recheck']);
    expect(report.check).toMatchObject({
      reference: 'saxpy in ref.cu',
      passed: true,
      requireDeterminism: false,
      before: { passed: true },
      afterTiming: { passed: true },
    });
    expect(report.timing!.name).toBe('saxpy');
    expect(report.timing!.stats.n).toBeGreaterThanOrEqual(10);
    expect(report.timing!.throughput!.gbPerS).toBeGreaterThan(0);
    expect(report.compile.candidate).toMatchObject({
      kernel: 'saxpy',
      loweredName: 'saxpy',
      target: 'cubin',
      spillBytes: 0,
    });
    expect(report.compile.candidate!.registers).toBeGreaterThan(0);
    expect(report.compile.reference!.source).toBe('ref.cu');
    const kinds = progress.map((p) => (p.kind === 'phase' ? p.phase : p.kind));
    expect(kinds.slice(0, 5)).toEqual(['validate', 'compile', 'load', 'check', 'checked']);
    expect(kinds).toContain('samples');
    expect(kinds.at(-1)).toBe('recheck');
  });

  it('takes a JavaScript reference beside the job', async () => {
    const report = await evaluate(saxpyJob({ timing: { preset: 'quick', mode: 'hot' } }), { reference: saxpyJs });
    expect(report.passed).toBe(true);
    expect(report.check).toMatchObject({ reference: 'the JavaScript reference', passed: true });
    expect(report.timing!.mode).toBe('hot');
  });

  it("compares with a baseline, which is also the check's reference", async () => {
    const progress: EvalProgress[] = [];
    const report = await evaluate(
      saxpyJob({
        source: { text: SAXPY4, name: 'saxpy4.cu' },
        grid: N / 4 / 256,
        compare: { source: { text: SAXPY, name: 'saxpy.cu' }, kernel: 'saxpy', grid: N / 256 },
        timing: { preset: 'quick', bytes: 12 * N, rounds: 3 },
      }),
      { onProgress: (p) => progress.push(p) },
    );
    expect(report.error).toBeUndefined();
    expect(report.passed).toBe(true);
    expect(report.timing).toBeUndefined();
    const c = report.comparison!;
    expect(['FASTER', 'SLOWER', 'SAME', 'UNCERTAIN']).toContain(c.verdict);
    expect([c.a.name, c.b.name, c.rounds]).toEqual(['saxpy.cu:saxpy', 'saxpy4.cu:saxpy', 3]);
    expect(report.check).toMatchObject({ reference: 'saxpy in saxpy.cu', passed: true, afterTiming: { passed: true } });
    expect(progress.filter((p) => p.kind === 'rounds').at(-1)).toEqual({
      kind: 'rounds',
      a: 'saxpy.cu:saxpy',
      b: 'saxpy4.cu:saxpy',
      round: 3,
      rounds: 3,
    });
    expect(report.compile.baseline).toMatchObject({ kernel: 'saxpy', source: 'saxpy.cu' });
  });

  it('a wrong kernel ends in the check, with the verdict, and is not timed', async () => {
    const wrong = SAXPY.replace('if (i < n)', 'if (i < n - 1)');
    const report = await evaluate(saxpyJob({ source: wrong }), { reference: saxpyJs });
    expect(report).toMatchObject({
      passed: false,
      phase: 'check',
      timing: undefined,
      error: { kind: 'verdict', code: 'mismatch', defence: 'mismatch' },
    });
    expect(report.error!.message).toMatch(
      new RegExp(`^FAIL \\(mismatch\\) in trial 0; first: argument 2\\[${N - 1}\\]`),
    );
    expect(report.phases.map((p) => p.phase)).toEqual(['validate', 'compile', 'load', 'check']);
  });

  unsanitized('a kernel fault ends the pipeline with a report (phase check, defence fault), never an exception', () => {
    // In a process of its own: the fault costs the CUDA context of the process it happens in.
    const job = saxpyJob({ source: SAXPY_ILLEGAL, reference: { source: SAXPY, kernel: 'saxpy' } });
    const script = `
      import { evaluate } from './lib/index.ts';
      const report = await evaluate(${JSON.stringify(job)});
      console.log(JSON.stringify(report, (_k, v) => (typeof v === 'bigint' ? String(v) : v)));
    `;
    const r = runScript(script);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({
      passed: false,
      phase: 'check',
      error: { kind: 'cuda', code: 'CUDA_ERROR_ILLEGAL_ADDRESS', kernel: 'candidate', sticky: true, defence: 'fault' },
      check: {
        passed: false,
        before: { defence: 'fault', error: { code: 'CUDA_ERROR_ILLEGAL_ADDRESS', sticky: true } },
      },
    });
    expect(report.error.api).toMatch(/^cu\w+$/);
    expect(report.timing).toBeUndefined();
    expect(report.phases.map((p: { phase: string }) => p.phase)).toEqual(['validate', 'compile', 'load', 'check']);
  });

  it('takes literal inputs (data, base64 and zlib) and literal expected outputs', async () => {
    const twice = `extern "C" __global__ void twice(const float* x, float* y, int n) {
  int i = threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
`;
    const job = (expected: string, compress: 'none' | 'zlib' = 'none'): EvalJob => ({
      source: twice,
      kernel: 'twice',
      grid: 1,
      block: 32,
      args: [
        { kind: 'buffer', dtype: 'f32', length: 4, init: { kind: 'data', base64: f32(1, 2, 3, 4) }, name: 'x' },
        { kind: 'buffer', dtype: 'f32', length: 4, name: 'y' },
        'i32=4',
      ],
      reference: { expected: { y: { base64: expected, compress } } },
      check: { trials: 2 },
      timing: { preset: 'quick' },
    });
    const right = await evaluate(job(f32(2, 4, 6, 8)));
    expect(right.error).toBeUndefined();
    expect(right.check).toMatchObject({
      reference: 'the expected outputs',
      passed: true,
      afterTiming: { passed: true },
    });
    const zipped = deflateSync(Buffer.from(new Float32Array([2, 4, 6, 8]).buffer)).toString('base64');
    expect((await evaluate(job(zipped, 'zlib'))).passed).toBe(true);
    const wrong = await evaluate(job(f32(2, 4, 6, 9)));
    expect(wrong).toMatchObject({ phase: 'check', error: { kind: 'verdict', code: 'mismatch' } });
    expect((wrong.check as { before: { mismatches: unknown[] } }).before.mismatches[0]).toEqual({
      arg: 1,
      index: 3,
      expected: 9,
      actual: 8,
    });
    // A JavaScript reference sees the literal values.
    let seen: number[] = [];
    const { reference: _literal, ...withoutExpected } = job('');
    await evaluate(
      { ...withoutExpected, timing: { skip: true } },
      {
        reference: ([x, y]) => {
          seen = [...(x as Float32Array)];
          (y as Float32Array).set((x as Float32Array).map((v) => 2 * v));
        },
      },
    );
    expect(seen).toEqual([1, 2, 3, 4]);
  });

  it('checks against a reference kernel whose parameters come in another order, matched by name', async () => {
    const ref = `extern "C" __global__ void saxpy_ref(int n, const float* x, float* y, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;
    const report = await evaluate(
      saxpyJob({
        args: ['a@f32=2.5', `x@ptr:f32[${N}]=uniform(-1,1)`, `y@ptr:f32[${N}]=uniform(-1,1):out`, `n@i32=${N}`],
        reference: {
          source: { text: ref, name: 'ref.cu' },
          kernel: 'saxpy_ref',
          args: [`n@i32=${N}`, `x@ptr:f32[${N}]:in`, `y@ptr:f32[${N}]=uniform(-1,1):out`, 'a@f32=2.5'],
        },
      }),
    );
    expect(report.error).toBeUndefined();
    expect(report.passed).toBe(true);
    expect(report.check).toMatchObject({ reference: 'saxpy_ref in ref.cu', before: { passed: true } });
    // Its scalars are its own: another a in its list, and it disagrees.
    const swapped = await evaluate(
      saxpyJob({
        args: ['a@f32=2.5', `x@ptr:f32[${N}]=uniform(-1,1)`, `y@ptr:f32[${N}]=uniform(-1,1):out`, `n@i32=${N}`],
        reference: {
          source: { text: ref, name: 'ref.cu' },
          kernel: 'saxpy_ref',
          args: [`n@i32=${N}`, `x@ptr:f32[${N}]:in`, `y@ptr:f32[${N}]=uniform(-1,1):out`, 'a@f32=3'],
        },
        timing: { skip: true },
      }),
    );
    expect(swapped).toMatchObject({ phase: 'check', error: { kind: 'verdict', code: 'mismatch' } });
  });

  it('without a reference, runs the reference-free check (and no re-check)', async () => {
    const report = await evaluate(saxpyJob({ zeroOnFree: true }));
    expect(report.error).toBeUndefined();
    expect(report.passed).toBe(true);
    expect(report.check).toMatchObject({
      reference: 'no reference (reference-free check)',
      before: { passed: true, referenceFree: true },
    });
    expect(report.phases.map((p) => p.phase)).toEqual(['validate', 'compile', 'load', 'check', 'time']);
    const half = SAXPY.replace('if (i < n) y[i] = a * x[i] + y[i];', 'if (i < n / 2) y[i] = a * x[i];');
    expect(half).not.toBe(SAXPY);
    const unwritten = await evaluate(
      saxpyJob({
        source: half,
        args: ['f32=2.5', `ptr:f32[${N}]=uniform(-1,1)`, `ptr:f32[${N}]:out`, `i32=${N}`],
      }),
    );
    expect(unwritten).toMatchObject({ phase: 'check', error: { kind: 'verdict', code: 'unwritten' } });
    const skipped = await evaluate(saxpyJob({ check: { withoutReference: 'skip' }, timing: { skip: true } }));
    expect(skipped).toMatchObject({ passed: true, check: { skipped: 'not checked (no reference)' } });
  });

  it("loads the module afresh for each phase: timing does not see the check's __device__ state", async () => {
    // Every launch takes a ticket from a __device__ counter and keeps the smallest it saw: the first launch of a
    // module sees 0. The check (3 trials) expects tickets 0, 1, 2; the re-check expects what no launch writes, so it
    // fails and shows, per input set, the smallest ticket the timed launches saw.
    const source = `__device__ unsigned int tickets;
extern "C" __global__ void ticket(unsigned int* out) { atomicMin(out, atomicAdd(&tickets, 1u)); }
`;
    let calls = 0;
    const reference: JsReference = ([out]) => {
      (out as Uint32Array)[0] = calls < 3 ? calls : 0xffffffff;
      calls++;
    };
    const report = await evaluate(
      {
        source,
        kernel: 'ticket',
        grid: 1,
        block: 1,
        args: ['ptr:u32[1]:out'],
        check: { trials: 3, determinism: false },
        timing: { preset: 'quick' },
      },
      { reference },
    );
    expect(report.check).toMatchObject({ before: { passed: true } }); // tickets 0, 1, 2 in the check's module
    expect(report.phase).toBe('recheck');
    const after = (report.check as { afterTiming: { trials: { mismatches: { actual: number }[] }[] } }).afterTiming;
    const smallest = after.trials.map((t) => Number(t.mismatches[0]!.actual));
    // The timing phase's module counted from 0 again (with the check's module it would start at 3).
    expect(Math.min(...smallest)).toBe(0);
  });
});
