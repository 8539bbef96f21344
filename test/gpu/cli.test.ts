// SPDX-License-Identifier: MIT
// `cudakit bench` end to end on the GPU, in-process through main(): check, timing, --compare, --ref, --json, the
// terminal-only progress line and colours, and the exit codes. Small buffers and the quick preset keep it short.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cli, describeGpu } from '../helpers.js';

const N = 1 << 20;
const SAXPY = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;
// Four elements per thread: launched with a quarter of the threads.
const SAXPY4 = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  for (int k = i; k < i + 4 && k < n; k++) y[k] = a * x[k] + y[k];
}
`;
const WRONG = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1) y[i] = a * x[i] + y[i];
}
`;

let dir = '';
const file = (name: string): string => join(dir, name);
const saxpyArgs = [
  '--kernel', 'saxpy', '--arg', 'f32=2.5', '--arg', `ptr:f32[${N}]=uniform(-1,1)`,
  '--arg', `ptr:f32[${N}]=uniform(-1,1):out`, '--arg', `i32=${N}`, '--preset', 'quick', '--trials', '2',
];
const grid = (threads: number): string[] => ['--grid', String(threads / 256), '--block', '256'];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cudakit-cli-gpu-'));
  writeFileSync(file('saxpy.cu'), SAXPY);
  writeFileSync(file('saxpy4.cu'), SAXPY4);
  writeFileSync(file('wrong.cu'), WRONG);
  writeFileSync(
    file('saxpy.bench.mjs'),
    `export default {
  name: 'saxpy-spec',
  source: ${JSON.stringify(SAXPY)},
  kernel: 'saxpy', grid: ${N / 256}, block: 256,
  args: ['f32=2', 'ptr:f32[${N}]=uniform(-1,1)', 'ptr:f32[${N}]=uniform(-1,1):out', 'i32=${N}'],
  reference: ([a, x, y, n]) => { for (let i = 0; i < n; i++) y[i] = a * x[i] + y[i]; },
  bytes: ${12 * N},
};
`,
  );
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describeGpu('cudakit bench', () => {
  it('checks a spec against its JavaScript reference, times it and writes both to --json', async () => {
    const json = file('spec.json');
    const r = await cli(['bench', file('saxpy.bench.mjs'), '--preset', 'quick', '--json', json]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^✓ check against the JavaScript reference: PASS: 5 trials, worst element at \d+% of its tolerance/);
    expect(r.stdout).toMatch(/saxpy-spec \(cold, quick\)\n {2}median ±CI \(min … max\) +\d+\.\d+ µs/);
    expect(r.stdout).toMatch(/throughput +\d+(\.\d+)? GB\/s · \d+\.\d% of peak bandwidth/);
    expect(r.stdout).not.toMatch(/\x1b\[/); // not a terminal: no colours
    const out = JSON.parse(readFileSync(json, 'utf8'));
    expect(out.name).toBe('saxpy-spec');
    expect(out.stats.n).toBeGreaterThanOrEqual(10);
    expect(out.stats.median).toBeGreaterThan(0);
    expect(out.samples.length).toBe(out.stats.n + out.rejected);
    expect(out.throughput.gbPerS).toBeGreaterThan(0);
    expect(out.check).toMatchObject({ reference: 'the JavaScript reference', passed: true });
    expect(out.check.before.trials).toHaveLength(5);
    expect(out.check.afterTiming.passed).toBe(true);
  });

  it('--compare checks the candidate against the other kernel, then gives a speedup and a verdict', async () => {
    const json = file('compare.json');
    const r = await cli([
      'bench', file('saxpy4.cu'), ...saxpyArgs, ...grid(N / 4),
      '--compare', file('saxpy.cu'), '--compare-grid', String(N / 256), '--compare-block', '256', '--json', json,
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^✓ check against saxpy in .*saxpy\.cu: PASS: 2 trials/);
    expect(r.stdout).toMatch(
      /\n {2}saxpy4\.cu:saxpy is ([\d.]+× (faster|slower) than|about as fast as) saxpy\.cu:saxpy:? ([\d.]+× )?\(95% CI [\d.]+ … [\d.]+\) → (FASTER|SLOWER|SAME|UNCERTAIN)\n/,
    );
    const out = JSON.parse(readFileSync(json, 'utf8'));
    expect(['FASTER', 'SLOWER', 'SAME', 'UNCERTAIN']).toContain(out.verdict);
    expect(out.a.name).toBe('saxpy.cu:saxpy');
    expect(out.b.name).toBe('saxpy4.cu:saxpy');
    expect(out.speedup).toBeCloseTo(out.a.stats.median / out.b.stats.median, 1);
    expect(out.speedupLow).toBeLessThanOrEqual(out.speedup);
    expect(out.speedupHigh).toBeGreaterThanOrEqual(out.speedup);
    expect(out.check.passed).toBe(true);
  });

  it('A/A through the CLI says SAME', async () => {
    const r = await cli(['bench', file('saxpy.cu'), ...saxpyArgs, ...grid(N), '--compare', file('saxpy.cu'), '--json', '-']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout); // --json -: stdout is only the JSON, the human lines go to stderr
    expect(out.verdict).toBe('SAME');
    expect(r.stderr).toMatch(/^✓ check against saxpy in .*saxpy\.cu: PASS/);
  });

  it('a kernel that fails --ref exits 1 before any timing, naming the element; --json says why', async () => {
    const json = file('wrong.json');
    const r = await cli(['bench', file('wrong.cu'), ...saxpyArgs, ...grid(N), '--ref', file('saxpy.cu'), '--json', json]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      new RegExp(`^cudakit: check failed against saxpy in .*saxpy\\.cu: FAIL \\(mismatch\\) in trial 0; first: argument 2\\[${N - 1}\\]`),
    );
    const out = JSON.parse(readFileSync(json, 'utf8'));
    expect(out.stats).toBeUndefined(); // nothing was timed
    expect(out.check).toMatchObject({ passed: false, before: { passed: false, defence: 'mismatch' } });
    expect(out.check.before.mismatches[0]).toMatchObject({ arg: 2, index: N - 1 });
  });

  it('on a terminal: a progress line on stderr, rewritten in place and cleared, and colours on stdout', async () => {
    const r = await cli(['bench', file('saxpy.cu'), ...saxpyArgs, ...grid(N), '--no-check'], true);
    expect(r.code).toBe(0);
    const redraws = r.stderr.split('\r').filter((s) => /saxpy\S* \(cold\)( ±[\d.]+%)? samples +\d+/.test(s));
    expect(redraws.length).toBeGreaterThanOrEqual(1);
    expect(r.stderr.endsWith('\r')).toBe(true); // the line is blanked and the cursor returned: nothing left over
    expect(r.stderr).not.toContain('\n');
    expect(r.stdout).toMatch(/\x1b\[\d+m/);
    expect(r.stdout).toContain('correctness: not checked (--no-check)');
  });
});
