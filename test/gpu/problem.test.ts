// SPDX-License-Identifier: MIT
// evaluateProblem() on the GPU: an honest kernel through every case (public, then hidden) and its score; a kernel
// fitted to the public shapes, which a hidden case catches; a kernel wrong everywhere, which never reaches the hidden
// cases; the public cases alone; the reference against itself, whose score is about 1; `cudakit eval` end to end.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type EvalProblem, type ProblemProgress, type ProblemSubmission, evaluateProblem } from '../../lib/index.js';
import { cli, describeGpu } from '../helpers.js';

const ADD = `extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
`;
// Four elements per thread, with a scalar tail: honest for every n.
const ADD4 = `extern "C" __global__ void add4(const float* a, const float* b, float* c, int n) {
  int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 3 < n) {
    float4 x = *reinterpret_cast<const float4*>(a + i), y = *reinterpret_cast<const float4*>(b + i);
    *reinterpret_cast<float4*>(c + i) = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  } else {
    for (; i < n; i++) c[i] = a[i] + b[i];
  }
}
`;
// Fitted to the public shapes, all multiples of 1024: the elements past the last whole 1024 are never written.
const FITTED = `extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (n & ~1023)) c[i] = a[i] + b[i];
}
`;
const WRONG = `extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] - b[i];
}
`;

const problem: EvalProblem = {
  name: 'vector-add',
  dims: { n: { min: 1, max: 1 << 26 } },
  args: ['a@ptr:f32[n]=normal(0,1)', 'b@ptr:f32[n]=normal(0,1)', 'c@ptr:f32[n]:out', 'n@i32=n'],
  reference: { source: ADD, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 },
  check: { tolerances: { f32: { atol: 0, rtol: 0 } }, trials: 2 },
  // Two ABBA rounds, not five: what is tested here is the cases' flow, not the comparison's precision.
  timing: { bytes: '12 * n', flops: 'n', preset: 'quick', rounds: 2 },
  cases: [
    { dims: { n: 1 << 20 } },
    { dims: { n: 1 << 22 } },
    { dims: { n: 3 << 20 }, name: 'three' },
    { dims: { n: 1_000_003 }, visibility: 'hidden' },
    { dims: { n: 12_345 }, visibility: 'hidden' },
  ],
};
const submit = (source: string, kernel = 'add'): ProblemSubmission => ({
  source,
  kernel,
  grid: 'cdiv(n, 256)',
  block: 256,
});

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cudakit-problem-'));
  writeFileSync(join(dir, 'problem.json'), JSON.stringify(problem));
  writeFileSync(join(dir, 'add4.cu'), ADD4);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeGpu('evaluateProblem()', () => {
  it('runs an honest kernel through every case, public then hidden, and scores it', async () => {
    const started: string[] = [];
    const r = await evaluateProblem(
      problem,
      { ...submit(ADD4, 'add4'), grid: 'cdiv(cdiv(n, 4), 256)' },
      { onProgress: (p: ProblemProgress) => p.kind === 'case' && started.push(`${p.name}:${p.visibility}`) },
    );
    expect(r.error).toBeUndefined();
    expect(r.cases.map((c) => [c.ran, c.passed, c.report?.error?.message])).toEqual(
      r.cases.map(() => [true, true, undefined]),
    );
    expect(started).toEqual([
      'n=1048576:public',
      'n=4194304:public',
      'three:public',
      'n=1000003:hidden',
      'n=12345:hidden',
    ]);
    expect(r.passed).toBe(true);
    expect(r.device?.arch).toMatch(/^sm_\d+$/);
    for (const c of r.cases) {
      expect(c.baselineUs! > 0 && c.candidateUs! > 0, c.name).toBe(true);
      expect(c.speedupLow! <= c.speedup! && c.speedup! <= c.speedupHigh!, c.name).toBe(true);
      expect(c.bytes).toBe(12 * c.dims.n!);
      // A known GPU has a floor, and an honest kernel never reads below it.
      if (c.floorUs !== undefined) expect(c.candidateUs!).toBeGreaterThan(c.floorUs);
      expect(c.scored?.floored).toBe(false);
    }
    expect(r.score).toBeGreaterThan(0);
    expect(r.scoreLow! <= r.score! && r.score! <= r.scoreHigh!).toBe(true);
    const logs = r.cases.map((c) => Math.log(c.scored!.speedup));
    expect(Math.log(r.score!)).toBeCloseTo(logs.reduce((a, b) => a + b, 0) / logs.length, 9);
  });

  it('catches a kernel fitted to the public shapes on a hidden case, and stops there', async () => {
    const r = await evaluateProblem(problem, submit(FITTED));
    expect(r.cases.map((c) => [c.visibility, c.ran, c.passed])).toEqual([
      ['public', true, true],
      ['public', true, true],
      ['public', true, true],
      ['hidden', true, false],
      ['hidden', false, false],
    ]);
    expect(r.passed).toBe(false);
    expect(r.score).toBeUndefined();
    expect(r.cases[3]!.report?.error?.kind).toBe('verdict');
  });

  it('runs every public case of a wrong kernel and no hidden one', async () => {
    const r = await evaluateProblem(problem, submit(WRONG));
    expect(r.cases.map((c) => [c.ran, c.passed])).toEqual([
      [true, false],
      [true, false],
      [true, false],
      [false, false],
      [false, false],
    ]);
    expect(r.cases[0]!.report?.error?.code).toBe('mismatch');
  });

  it("with cases: 'public', runs those alone and gives no score", async () => {
    const r = await evaluateProblem(problem, submit(ADD), { cases: 'public' });
    expect(r.passed).toBe(true);
    expect(r.cases.filter((c) => c.ran).map((c) => c.visibility)).toEqual(['public', 'public', 'public']);
    expect(r.score).toBeUndefined();
  });

  it('scores the reference against itself at about 1', async () => {
    const r = await evaluateProblem(problem, submit(ADD));
    expect(r.passed).toBe(true);
    expect(r.score).toBeGreaterThan(0.8);
    expect(r.score).toBeLessThan(1.25);
  });

  it('`cudakit eval problem kernel.cu` prints every case and the score, exit 0; --json has the report', async () => {
    const file = join(dir, 'add4.cu');
    const args = ['eval', dir, file, '--grid', 'cdiv(cdiv(n, 4), 256)', '--block', '256', '--preset', 'quick'];
    const r = await cli(args);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^add4\.cu on vector-add on .+ \(sm_\d+\)\n/);
    expect(r.stdout).toMatch(/\nn=12345 +hidden +passed /);
    expect(r.stdout).toMatch(/\nscore \d+\.\d+× \[\d+\.\d+, \d+\.\d+\]: the geometric mean over 5 cases/);
    const json = await cli([...args, '--cases', 'public', '--json', '-']);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as { passed: boolean; cases: { ran: boolean }[] };
    expect(report.passed).toBe(true);
    expect(report.cases.map((c) => c.ran)).toEqual([true, true, true, false, false]);
  });
});
