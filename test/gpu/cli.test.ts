// SPDX-License-Identifier: MIT
// `cudakit bench` end to end on the GPU, in-process through main(): check, timing, --compare, --ref, --json, the
// terminal-only progress line and colours, --metrics (with ncu, without it, under compute-sanitizer), and the exit
// codes. Small buffers and the quick preset keep it short.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KEY_METRICS } from '../../lib/cli/metrics.js';
import { METRIC_GROUPS } from '../../lib/index.js';
import { findNcu } from '../../lib/measure/profile.js';
import { cli, describeGpu } from '../helpers.js';
import { GOLDEN_CASES, expectGolden } from '../support/cli-golden.js';
import { SAXPY, SAXPY4, SAXPY_ILLEGAL } from '../support/kernels.js';

const N = 1 << 20;
const WRONG = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1) y[i] = a * x[i] + y[i];
}
`;

// A kernel whose runs differ within the tolerance only: y[i] = x[i], plus 1e-7·|x[i]| or not depending on the SM clock
// when the thread reads it (hashed, so every bit of the clock counts): far inside f32's 1e-4, but over a million
// elements two runs differ in their bits. And a kernel whose output depends on a race: every block adds into every
// element without atomics, losing updates differently on every run.
const JITTER = `extern "C" __global__ void jitter(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    bool add = ((unsigned long long)clock64() * 0x9E3779B97F4A7C15ULL) >> 63;
    y[i] = x[i] + (add ? 1e-7f * fabsf(x[i]) : 0.0f);
  }
}
`;
const LOST_UPDATES = `extern "C" __global__ void lost_updates(const float* x, float* y, int n) {
  volatile float* v = y;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float old = v[i];
    __nanosleep(64 * (blockIdx.x % 8));
    v[i] = old + x[i];
  }
}
`;
const M = 1 << 20;

let dir = '';
const file = (name: string): string => join(dir, name);
const saxpyArgs = [
  '--kernel',
  'saxpy',
  '--arg',
  'f32=2.5',
  '--arg',
  `ptr:f32[${N}]=uniform(-1,1)`,
  '--arg',
  `ptr:f32[${N}]=uniform(-1,1):out`,
  '--arg',
  `i32=${N}`,
  '--preset',
  'quick',
  '--trials',
  '2',
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

beforeAll(() => {
  writeFileSync(file('illegal.cu'), SAXPY_ILLEGAL);
  writeFileSync(
    file('jitter.bench.mjs'),
    `export default {
  source: ${JSON.stringify(JITTER)},
  kernel: 'jitter', grid: ${M / 256}, block: 256,
  args: ['ptr:f32[${M}]=uniform(-1,1)', 'ptr:f32[${M}]:out', 'i32=${M}'],
  reference: ([x, y]) => { y.set(x); },
  check: { trials: 2 },
};
`,
  );
  writeFileSync(
    file('race.bench.mjs'),
    `export default {
  source: ${JSON.stringify(LOST_UPDATES)},
  kernel: 'lost_updates', grid: 256, block: 256,
  args: ['ptr:f32[4099]=uniform(-2,2)', 'ptr:f32[4099]=zeros:out', 'i32=4099'],
  reference: ([x, y]) => { for (let i = 0; i < x.length; i++) y[i] = 256 * x[i]; },
  check: { trials: 2 },
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
    expect(r.stdout).toMatch(
      /^✓ check against the JavaScript reference: PASS: 5 trials, worst element at \d+% of its tolerance/,
    );
    expect(r.stdout).toMatch(
      /saxpy-spec \(cold, quick, (?:CUPTI|events)\)\n(?: {2}⚠ .*\n)* {2}median ±CI \(min … max\) +\d+\.\d+ µs/,
    );
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
      'bench',
      file('saxpy4.cu'),
      ...saxpyArgs,
      ...grid(N / 4),
      '--compare',
      file('saxpy.cu'),
      '--compare-grid',
      String(N / 256),
      '--compare-block',
      '256',
      '--json',
      json,
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^✓ check against saxpy in .*saxpy\.cu: PASS: 2 trials/);
    expect(r.stdout).toMatch(
      new RegExp(
        /\n {2}saxpy4\.cu:saxpy is ([\d.]+× (faster|slower) than|about as fast as) saxpy\.cu:saxpy:? /.source +
          /([\d.]+× )?\(95% CI [\d.]+ … [\d.]+\) → (FASTER|SLOWER|SAME|UNCERTAIN)\n/.source,
      ),
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

  // A verdict is a statement about speed: under compute-sanitizer kernels run serialized and many times slower.
  (process.env.CUDAKIT_UNDER_SANITIZER === '1' ? it.skip : it)('A/A through the CLI says SAME', async () => {
    const r = await cli([
      'bench',
      file('saxpy.cu'),
      ...saxpyArgs,
      ...grid(N),
      '--compare',
      file('saxpy.cu'),
      '--json',
      '-',
    ]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout); // --json -: stdout is only the JSON, the human lines go to stderr
    expect(out.verdict).toBe('SAME');
    expect(r.stderr).toMatch(/^✓ check against saxpy in .*saxpy\.cu: PASS/);
  });

  it('a kernel that fails --ref exits 1 before any timing, naming the element; --json says why', async () => {
    const json = file('wrong.json');
    const r = await cli([
      'bench',
      file('wrong.cu'),
      ...saxpyArgs,
      ...grid(N),
      '--ref',
      file('saxpy.cu'),
      '--json',
      json,
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      new RegExp(
        `^cudakit: check failed against saxpy in .*saxpy\\.cu: FAIL \\(mismatch\\) in trial 0; ` +
          `first: argument 2\\[${N - 1}\\]`,
      ),
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

// --metrics profiles with ncu on PATH, and not under compute-sanitizer: it holds the launch ncu would profile.
const sanitized = process.env.CUDAKIT_UNDER_SANITIZER === '1';
const ncu = findNcu(undefined);
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

describeGpu('cudakit bench --metrics', () => {
  const bench = (...more: string[]): string[] => ['bench', file('saxpy.cu'), ...saxpyArgs, ...grid(N), ...more];

  it('prints the key device metrics under the timing, and --json carries every metric beside it', async (ctx) => {
    if (sanitized) ctx.skip('ncu cannot profile under compute-sanitizer (the next tests have that case)');
    if (ncu === undefined) ctx.skip('no ncu (Nsight Compute) on PATH');
    const json = file('metrics.json');
    const r = await cli(bench('--metrics', '--json', json));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(readFileSync(json, 'utf8'));
    expect(out.metrics.failure, out.metrics.warnings.join('\n')).toBeNull();
    // The timing as without --metrics, then a blank line and the summary (and any warning of profile()'s).
    const [timing, summary, ...rest] = r.stdout.split(/\n\n(?=device metrics of )/);
    expect(rest).toEqual([]);
    expect(timing).toMatch(/\n {2}median ±CI \(min … max\) +\d/);
    expect(timing).toMatch(/\n {2}device +NVIDIA /);
    const pct = /\d+(\.\d)?%/.source;
    expect(summary).toMatch(
      new RegExp(
        `^device metrics of ${escape(out.name)} \\(ncu [\\d.]+, one launch\\)\n` +
          ` {2}speed of light {10}memory ${pct} · compute \\(SM\\) ${pct} of peak\n` +
          ` {2}occupancy {15}${pct} achieved · ${pct} theoretical\n` +
          ` {2}top warp stalls {9}\\w+ ${pct}( · \\w+ ${pct}){0,2} of active warps\n` +
          `( {2}⚠ .*\n)*$`,
      ),
    );
    // --json: the timing result as without --metrics, and beside it every metric ncu collected, by name and group.
    expect(out.stats.median).toBeGreaterThan(0);
    const m = out.metrics.deviceMetrics;
    for (const name of Object.values(KEY_METRICS)) expect(typeof m.metrics[name]?.value, name).toBe('number');
    expect(m.unavailable.filter((name: string) => name.includes('_issue_stalled_'))).toEqual([]);
    expect(Object.keys(m.groups.stalls).sort()).toEqual([...METRIC_GROUPS.stalls].sort());
    expect(out.metrics.warnings).toHaveLength(m.unavailable.length > 0 ? 1 : 0);
  });

  it('without ncu: the timing, then one line that says why, exit 0; --json has the reason as metrics', async () => {
    const missing = join(dir, 'no-ncu-here', 'ncu');
    const why = `device metrics not collected: ncu (Nsight Compute) not found at ${missing}`;
    const json = file('no-metrics.json');
    const r = await cli(bench('--metrics', '--ncu', missing, '--json', json));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\n {2}median ±CI \(min … max\) +\d/);
    expect(r.stdout.endsWith(`\n\n⚠ ${why}\n`)).toBe(true);
    const out = JSON.parse(readFileSync(json, 'utf8'));
    expect(out.stats.median).toBeGreaterThan(0);
    expect(out.metrics).toEqual({ deviceMetrics: null, failure: 'ncu-not-found', warnings: [why] });
    // --json -: stdout is the JSON alone; the line goes to stderr with the other human lines.
    const piped = await cli(bench('--metrics', '--ncu', missing, '--json', '-'));
    expect(piped.code).toBe(0);
    expect(JSON.parse(piped.stdout).metrics).toEqual(out.metrics);
    expect(piped.stderr.endsWith(`\n⚠ ${why}\n`)).toBe(true);
  });

  it('under compute-sanitizer: the timing, then the line that says ncu cannot profile there, exit 0', async (ctx) => {
    if (!sanitized) ctx.skip('only under compute-sanitizer (CUDAKIT_UNDER_SANITIZER=1)');
    if (ncu === undefined) ctx.skip('no ncu (Nsight Compute) on PATH');
    const r = await cli(bench('--metrics'));
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\n {2}median ±CI \(min … max\) +\d/);
    const why =
      'device metrics not collected: this process runs under compute-sanitizer, and ncu cannot profile a launch it ' +
      'holds: run without it';
    expect(r.stdout.endsWith(`\n\n⚠ ${why}\n`)).toBe(true);
  });
});

// Under compute-sanitizer a planted fault is (correctly) a memcheck error, and a race needs the real concurrency its
// instrumentation changes.
const unsanitized = process.env.CUDAKIT_UNDER_SANITIZER === '1' ? it.skip : it;

describeGpu('cudakit bench: determinism', () => {
  unsanitized(
    'differences within tolerance pass with a note; --require-determinism fails them, exit 1; --json has the rule',
    async () => {
      const loose = file('jitter.json');
      const r = await cli(['bench', file('jitter.bench.mjs'), '--preset', 'quick', '--json', loose]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(
        new RegExp(
          /^✓ check against the JavaScript reference: PASS: 2 trials, worst element at [\d.]+% of its tolerance /
            .source +
            /\(.*\); \d+ elements? differed between two runs on the same inputs, all within tolerance /.source +
            /\(allowed unless requireDeterminism\)\n/.source,
        ),
      );
      const a = JSON.parse(readFileSync(loose, 'utf8'));
      expect(a.check).toMatchObject({ passed: true, requireDeterminism: false });
      expect(a.check.before.nondeterministicElements).toBeGreaterThan(0);
      expect(a.check.before.nondeterministicBeyondTolerance).toBe(0);
      expect(a.stats.n).toBeGreaterThan(0); // timed after the check

      const strict = file('jitter-strict.json');
      const s = await cli([
        'bench',
        file('jitter.bench.mjs'),
        '--preset',
        'quick',
        '--require-determinism',
        '--json',
        strict,
      ]);
      expect(s.code).toBe(1);
      expect(s.stdout).toBe('');
      expect(s.stderr).toMatch(
        new RegExp(
          /^cudakit: check failed against the JavaScript reference: FAIL \(nondeterministic\) in trial 0: /.source +
            /\d+ elements? differed bitwise between two runs on the same inputs \(requireDeterminism\), /.source +
            /all within tolerance; first: argument 1\[\d+\] = /.source,
        ),
      );
      const b = JSON.parse(readFileSync(strict, 'utf8'));
      expect(b.check).toMatchObject({ passed: false, requireDeterminism: true });
      expect(b.check.before).toMatchObject({ passed: false, defence: 'nondeterministic' });
      expect(b.check.before.nondeterministicElements).toBeGreaterThan(0);
      expect(b.check.before.nondeterministicBeyondTolerance).toBe(0);
      expect(b.stats).toBeUndefined(); // nothing was timed
    },
  );

  unsanitized('a kernel whose output depends on a race fails the check by default, exit 1', async () => {
    const r = await cli(['bench', file('race.bench.mjs'), '--preset', 'quick']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      new RegExp(
        /^cudakit: check failed against the JavaScript reference: FAIL \(nondeterministic\) in trial 0: /.source +
          /\d+ elements? differed between two runs on the same inputs, \d+ beyond tolerance/.source,
      ),
    );
  });
});

/** The CLI in a child process: a kernel fault destroys the CUDA context of the process it happens in. */
function cliInChild(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const root = new URL('../..', import.meta.url).pathname;
  const r = spawnSync(process.execPath, ['--import', 'tsx', `${root}lib/cli/main.ts`, ...args], {
    encoding: 'utf8',
    cwd: root,
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describeGpu('cudakit bench: kernel faults', () => {
  const illegal = (): string[] => ['bench', file('illegal.cu'), ...saxpyArgs, ...grid(N)];

  unsanitized('a faulting kernel fails the check with defence fault, exit 1, and nothing after it', () => {
    const json = file('fault.json');
    const r = cliInChild([...illegal(), '--ref', file('saxpy.cu'), '--json', json]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      new RegExp(
        /^cudakit: check failed against saxpy in .*saxpy\.cu: FAIL \(fault\) in trial 0: /.source +
          /cu\w+ failed: CUDA_ERROR_ILLEGAL_ADDRESS \(700\): .*; /.source +
          /the CUDA context is lost: restart the process to use the GPU again\n$/.source,
      ),
    );
    const out = JSON.parse(readFileSync(json, 'utf8'));
    expect(out.check.before).toMatchObject({
      passed: false,
      defence: 'fault',
      error: { code: 'CUDA_ERROR_ILLEGAL_ADDRESS', sticky: true },
    });
  });

  unsanitized('with --no-check the fault is a CUDA error naming the phase, exit 2, with no error from cleanup', () => {
    const r = cliInChild([...illegal(), '--no-check']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^cudakit: bench\(\): warm-up: cu\w+ failed: CUDA_ERROR_ILLEGAL_ADDRESS \(700\)/);
    expect(r.stderr.match(/^cudakit: /gm)).toHaveLength(1);
  });
});

// The golden cases (test/support/cli-golden.ts) run for real, from the repository root as the goldens were made.
describeGpu('cudakit bench: golden output', () => {
  let cwd = '';
  beforeAll(() => {
    cwd = process.cwd();
    process.chdir(new URL('../..', import.meta.url).pathname);
  });
  afterAll(() => process.chdir(cwd));

  for (const c of GOLDEN_CASES) {
    it(`${c.name}: ${c.argv[1]}`, async () => {
      const json = file(`${c.name}.json`);
      expectGolden(c, await cli([...c.argv, '--json', json]), json);
    });
  }
});
