// SPDX-License-Identifier: MIT
// The cudakit command line, run in-process through main() with captured output. Compiling needs NVRTC only; the GPU
// commands are tested for what they do without a GPU (where there is one, `info` is tested for its table instead).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseArgSpec } from '../../lib/measure/argspec.js';
import { planFromCommandLine, planFromSpec } from '../../lib/cli/bench.js';
import { ptxasFacts } from '../../lib/cli/compile.js';
import { BENCH_FLAGS, jobFromFlags, metricsOption, parseCommand, parseDim } from '../../lib/cli/flags.js';
import { reasonLines, wrapColumns } from '../../lib/cli/output.js';
import { externCKernels } from '../../lib/eval/source.js';
import { Device, type EvalError, nvrtcVersion, supportedArchs, validateJob } from '../../lib/index.js';
import { type CliRun, cli, describeNvrtc, machine } from '../helpers.js';
import { GOLDEN, SAXPY_16M_ARGS } from '../support/cli-golden.js';

const ANSI = /\x1b\[/;
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const STACK = /\n\s+at /;
const driverReason = (machine.reason ?? '').split('\n')[0]!;
const shortReason = driverReason.replace(/ \(tried: .*\)$/, '');
/** What bench says on this machine where it has no GPU: the reason, then the library's remedy. */
const noGpu = (command: string): string =>
  `cudakit: ${command} needs a CUDA GPU and none is usable: ${driverReason}\n` +
  `${(machine.remedy ?? '').replace(/^/gm, '  Remedy: ')}\n`;

let dir = '';
const file = (name: string): string => join(dir, name);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cudakit-cli-'));
  writeFileSync(
    file('good.cu'),
    [
      '// extern "C" __global__ void commented_out(int x) {}',
      '#include "scale.h"',
      'extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {',
      '  int i = blockIdx.x * blockDim.x + threadIdx.x;',
      '  if (i < n) y[i] = SCALE * a * x[i] + y[i];',
      '}',
      'extern "C" __global__ void __launch_bounds__(128) zero(float* y) { y[threadIdx.x] = 0; }',
      'template <typename T> __global__ void scale(T* x, T s, int n) { if (threadIdx.x < n) x[threadIdx.x] *= s; }',
      '',
    ].join('\n'),
  );
  writeFileSync(file('scale.h'), '#define SCALE 1.0f\n'); // found beside the source, with no -I
  // ptxas's figures: 48 floats live in registers under a 32-register cap spill; an array indexed at run time in a loop
  // is in local memory (a stack frame) without spilling; a static shared array.
  writeFileSync(
    file('ptxas.cu'),
    [
      'extern "C" __global__ void __launch_bounds__(1024, 2) spill(float* x) {',
      '  float v[48];',
      '#pragma unroll',
      '  for (int i = 0; i < 48; i++) v[i] = x[i * 1024 + threadIdx.x];',
      '#pragma unroll',
      '  for (int r = 0; r < 4; r++)',
      '#pragma unroll',
      '    for (int i = 0; i < 48; i++) v[i] = v[i] * v[(i + 1) % 48] + 1.0f;',
      '  float s = 0;',
      '#pragma unroll',
      '  for (int i = 0; i < 48; i++) s += v[i] * (float)i;',
      '  x[threadIdx.x] = s;',
      '}',
      'extern "C" __global__ void frame(float* x) {',
      '  float v[64];',
      '  for (int i = 0; i < 64; i++) v[i] = x[i * blockDim.x + threadIdx.x];',
      '  float s = 0;',
      '  for (int i = 0; i < 64; i++)',
      '    for (int j = 0; j < 64; j++) s += v[i] * v[(j * 7 + i) & 63] * (float)j;',
      '  x[threadIdx.x] = s;',
      '}',
      'extern "C" __global__ void shared(float* x) {',
      '  __shared__ float s[256];',
      '  s[threadIdx.x] = x[threadIdx.x];',
      '  __syncthreads();',
      '  x[threadIdx.x] = s[255 - threadIdx.x];',
      '}',
      '',
    ].join('\n'),
  );
  writeFileSync(file('bad.cu'), 'extern "C" __global__ void k(float* x) {\n  x[0] = y;\n}\n');
  writeFileSync(
    file('defines.cu'),
    '#ifndef X\n#error X is not defined\n#endif\nextern "C" __global__ void k(int* p) { p[0] = X; }\n',
  );
  writeFileSync(
    file('bad-field.bench.mjs'),
    "export default { source: 'x', kernel: 'k', grid: 1, block: 1, args: [], colour: 1 };\n",
  );
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const repoRoot = new URL('../..', import.meta.url).pathname;
// The library's remedy for a missing driver (lib/core/errors.ts), which the commands pass on.
const DRIVER_REMEDY =
  'Install the NVIDIA driver (it provides libcuda.so.1), or point CUDAKIT_LIBCUDA_PATH at libcuda.so.1. ' +
  'In a container, run it with the GPU exposed (e.g. --gpus all).';

/**
 * The command line in a child process on a machine without a GPU (forced: no driver), so on any machine; stdout is a
 * pipe, and COLUMNS is only what `env` says.
 */
function cliWithoutGpu(args: string[], env: Record<string, string> = {}): CliRun {
  const inherited = { ...process.env };
  delete inherited.COLUMNS;
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'lib/cli/main.ts', ...args], {
    cwd: repoRoot,
    env: { ...inherited, CUDAKIT_LIBCUDA_PATH: '/nonexistent/libcuda.so.1', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

describe('cudakit help and usage errors', () => {
  it('prints usage with examples for --help and help, exit 0', async () => {
    for (const args of [['--help'], ['help']]) {
      const r = await cli(args);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(/^Usage: cudakit <command>/);
      for (const text of ['info', 'compile <file.cu>', 'bench <file.cu | spec.ts>', '--arg <spec>', 'Exit status']) {
        expect(r.stdout).toContain(text);
      }
      expect(r.stdout).toContain('\nExamples\n');
      expect(r.stdout).toContain('cudakit bench examples/saxpy.bench.ts');
    }
  });

  it("prints a command's own help for <command> --help, -h and help <command>, exit 0", async () => {
    const own: Record<string, { has: string[]; hasNot: string[] }> = {
      info: { has: ['Exit status: 0 when a GPU is usable, 2 when none is'], hasNot: ['--arch', '--kernel'] },
      compile: { has: ['--arch <sm_XX>', '--out <file>', 'from ptxas'], hasNot: ['--kernel', '--metrics'] },
      bench: {
        has: ['--kernel <name>', '--require-determinism', '--arch <sm_XX>', 'A spec file', '--metrics', '--ncu <path>'],
        hasNot: ['--section', '--metrics <a,b,...>'],
      },
      profile: { has: ['--metrics <a,b,...>', '--kernel <name>', '--seed <n>', '--std <c++17>'], hasNot: ['--ref '] },
    };
    for (const [command, { has, hasNot }] of Object.entries(own)) {
      const r = await cli([command, '--help']);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout.split('\n')[0]).toMatch(
        new RegExp(`^Usage: cudakit ${command}( <file\\.cu[^>]*>)?( \\[options\\])?$`),
      );
      expect(r.stdout).not.toContain('\nCommands\n'); // not the global page
      for (const text of has) expect(r.stdout).toContain(text);
      for (const text of hasNot) expect(r.stdout).not.toContain(text);
      expect(r.stdout.match(/^ {2}cudakit \w+/gm)!.every((line) => line === `  cudakit ${command}`)).toBe(true);
      expect(await cli([command, '-h'])).toEqual(r);
      expect(await cli(['help', command])).toEqual(r);
    }
    expect(await cli(['help', 'frobnicate'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "cudakit: help takes one command (info, compile, bench, eval, profile), got 'frobnicate'\n",
    });
  });

  it('prints its version', async () => {
    const r = await cli(['--version']);
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(r).toEqual({ code: 0, stdout: `cudakit ${pkg.version}\n`, stderr: '' });
  });

  it('without a command prints usage on stderr, exit 2', async () => {
    const r = await cli([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^Usage: cudakit/);
  });

  it('rejects an unknown command with one line, exit 2', async () => {
    const r = await cli(['frobnicate', 'x.cu']);
    expect(r).toEqual({
      code: 2,
      stdout: '',
      stderr: "cudakit: unknown command 'frobnicate' (commands: info, compile, bench, eval, profile, help)\n",
    });
  });

  it('rejects unknown options and missing option values with one line, exit 2', async () => {
    const unknown = await cli(['compile', file('good.cu'), '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe("cudakit: compile: Unknown option '--bogus' (see cudakit --help)\n");
    const missing = await cli(['compile', file('good.cu'), '--arch']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^cudakit: compile: Option '--arch <value>' argument missing/);
    expect(missing.stderr.split('\n')).toHaveLength(2);
  });

  it('checks option values before compiling anything', async () => {
    const cases: [string[], string][] = [
      [
        ['compile', file('good.cu'), '--arch', 'volta'],
        "cudakit: --arch expects an architecture such as sm_90 or compute_90, not 'volta'\n",
      ],
      [
        ['compile', file('good.cu'), '--std', 'c++99'],
        "cudakit: --std expects c++03, c++11, c++14, c++17, c++20, not 'c++99'\n",
      ],
      [['compile', file('good.cu'), '-D', '1X'], "cudakit: -D expects NAME or NAME=VALUE, not '1X'\n"],
      [['compile'], 'cudakit: compile takes one source file (see cudakit --help)\n'],
      [['compile', 'a.cu', 'b.cu'], 'cudakit: compile takes one source file, got 2 (see cudakit --help)\n'],
      [
        ['compile', file('missing.cu'), '--arch', 'sm_80'],
        `cudakit: cannot read ${file('missing.cu')}: no such file or directory\n`,
      ],
    ];
    for (const [args, stderr] of cases) expect(await cli(args)).toEqual({ code: 2, stdout: '', stderr });
  });
});

describe('cudakit bench: what is checked before the GPU', () => {
  const base = ['bench', '', '--kernel', 'saxpy', '--grid', '4', '--block', '256'];
  const bench = (...more: string[]): string[] => {
    const args = [...base, ...more];
    args[1] = file('good.cu');
    return args;
  };

  it('reports a bad --arg with the argspec message, exit 2', async () => {
    for (const spec of ['ptr:f32[4]=bogus', 'u8=300', 'ptr:f33[4]', 'f32']) {
      let message = '';
      try {
        parseArgSpec(spec);
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toContain(`but received the argument spec '${spec}'`);
      const r = await cli(bench('--arg', 'f32=2', '--arg', spec));
      expect(r).toEqual({ code: 2, stdout: '', stderr: `cudakit: ${message}\n` });
    }
  });

  it('asks for --kernel, naming the extern "C" kernels it found', async () => {
    const r = await cli(['bench', file('good.cu'), '--grid', '1', '--block', '1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `cudakit: bench needs --kernel <name> (extern "C" kernels in ${file('good.cu')}: saxpy, zero)\n`,
    );
  });

  it('rejects bad grid, block, mode, preset and amounts', async () => {
    const cases: [string[], RegExp][] = [
      [['--grid', '0'], /^cudakit: --grid expects 1 to 3 positive integers/],
      [['--block', '32x32x1x1'], /^cudakit: --block expects 1 to 3 positive integers/],
      [['--mode', 'warm'], /^cudakit: --mode expects cold, hot, graph, not 'warm'\n$/],
      [['--preset', 'fast'], /^cudakit: --preset expects quick, default, rigorous, not 'fast'\n$/],
      [['--bytes=-5'], /^cudakit: --bytes expects a positive number/],
      [['--flops', '0'], /^cudakit: --flops expects a positive number/],
      [
        ['--bytes', '-5'],
        /^cudakit: bench: Option '--bytes' argument is ambiguous: a value starting with '-' is written --bytes=<v/,
      ],
      [['--shared-mem', '1.5'], /^cudakit: --shared-mem expects an integer >= 0/],
      [
        ['--compare', file('good.cu'), '--compare-grid', '0'],
        /^cudakit: --compare-grid expects 1 to 3 positive integers/,
      ],
      [['--ref', file('good.cu'), '--ref-block', 'x'], /^cudakit: --ref-block expects 1 to 3 positive integers/],
    ];
    for (const [more, stderr] of cases) {
      const r = await cli(bench(...more));
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(stderr);
    }
  });

  it('takes --require-determinism as a flag, documented in --help', async () => {
    const help = await cli(['bench', '--help']);
    expect(help.stdout).toMatch(
      /\n {2}--require-determinism {7}fail the check when two runs on the same inputs differ at all/,
    );
    const valued = await cli(bench('--require-determinism=yes'));
    expect(valued.code).toBe(2);
    expect(valued.stderr).toMatch(/^cudakit: bench: Option '--require-determinism' does not take an argument/);
  });

  // With a GPU the flag's effect is a verdict: test/gpu/cli.test.ts ('cudakit bench: determinism') asserts it there.
  it.skipIf(machine.ok)(
    'without a GPU, --require-determinism is accepted and the bench exits 2 for the GPU ' +
      '(skipped with one: test/gpu/cli.test.ts has the verdicts)',
    async () => {
      const args = ['f32=2', 'ptr:f32[1k]=uniform(-1,1)', 'ptr:f32[1k]:out', 'i32=1024'].flatMap((a) => ['--arg', a]);
      expect(await cli(bench(...args, '--require-determinism'))).toEqual({
        code: 2,
        stdout: '',
        stderr: noGpu('bench'),
      });
    },
  );

  it('takes --metrics as a flag and --ncu only beside it, documented in --help, before the GPU', async () => {
    const help = (await cli(['bench', '--help'])).stdout;
    expect(help).toMatch(
      /\n {2}--metrics {19}then one launch under Nsight Compute \(not timed\) and, under the timing/,
    );
    expect(help).toMatch(/\n {2}--ncu <path> {16}with --metrics: Nsight Compute's ncu \(default: ncu on PATH\)\n/);
    expect(help).toContain('  cudakit bench examples/saxpy.bench.ts --preset quick --metrics\n');
    const cases: [string[], string][] = [
      [['--metrics=yes'], "cudakit: bench: Option '--metrics' does not take an argument (see cudakit --help)\n"],
      [['--ncu', '/opt/ncu'], 'cudakit: --ncu names the ncu that --metrics runs: give --metrics too\n'],
      [['--metrics', '--ncu='], 'cudakit: --ncu expects the path of ncu\n'],
      [['--metrics', 'dram__bytes.sum'], 'cudakit: bench takes one source file or spec, got 2 (see cudakit --help)\n'],
    ];
    for (const [more, stderr] of cases) expect(await cli(bench(...more))).toEqual({ code: 2, stdout: '', stderr });
  });

  it('reads --metrics and --ncu into the plan, and leaves the job as it was', () => {
    const values = (...more: string[]) => parseCommand('bench', ['--kernel', 'k', ...more], BENCH_FLAGS).values;
    expect(metricsOption(values())).toBeUndefined();
    expect(metricsOption(values('--metrics'))).toEqual({ ncu: undefined });
    expect(metricsOption(values('--metrics', '--ncu', '/opt/ncu'))).toEqual({ ncu: '/opt/ncu' });
    const launch = ['--grid', '4', '--block', '256'];
    expect(jobFromFlags('k.cu', values(...launch, '--metrics', '--ncu', '/opt/ncu'))).toEqual(
      jobFromFlags('k.cu', values(...launch)),
    );
  });

  // With a GPU, the metrics come after the timing: test/gpu/cli.test.ts ('cudakit bench --metrics') asserts them.
  it.skipIf(machine.ok)(
    'without a GPU, --metrics is accepted and the bench exits 2 for the GPU (skipped with one: test/gpu has it)',
    async () => {
      const args = ['f32=2', 'ptr:f32[1k]=uniform(-1,1)', 'ptr:f32[1k]:out', 'i32=1024'].flatMap((a) => ['--arg', a]);
      expect(await cli(bench(...args, '--metrics', '--ncu', '/opt/ncu'))).toEqual({
        code: 2,
        stdout: '',
        stderr: noGpu('bench'),
      });
    },
  );

  it('reports a bad spec file by its field', async () => {
    const r = await cli(['bench', file('bad-field.bench.mjs')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^cudakit: .*bad-field\.bench\.mjs: Unknown field job\.colour; known fields: name, source, kernel, /,
    );
    const missing = await cli(['bench', file('nothere.bench.ts')]);
    expect(missing.stderr).toBe(`cudakit: cannot read ${file('nothere.bench.ts')}: no such file or directory\n`);
  });

  it.skipIf(machine.ok)(
    "without a GPU exits 2 with the driver message and the library's remedy, for a source file and a spec",
    async () => {
      const args = ['f32=2', 'ptr:f32[1k]=uniform(-1,1)', 'ptr:f32[1k]:out', 'i32=1024'].flatMap((a) => ['--arg', a]);
      const fromFile = await cli(bench(...args));
      expect(fromFile).toEqual({
        code: 2,
        stdout: '',
        stderr: noGpu('bench'),
      });
      expect(driverReason).not.toBe('');
      const spec = new URL('../../examples/saxpy.bench.ts', import.meta.url).pathname;
      const fromSpec = await cli(['bench', spec, '--preset', 'quick']);
      expect(fromSpec).toEqual(fromFile);
    },
  );

  it('without a GPU (no driver, in a child), --json - prints why on stdout: the error, its code and remedy', () => {
    const args = ['f32=2', 'ptr:f32[1k]=uniform(-1,1)', 'ptr:f32[1k]:out', 'i32=1024'].flatMap((a) => ['--arg', a]);
    const r = cliWithoutGpu([...bench(...args), '--json', '-']);
    expect(r.code).toBe(2);
    const { error } = JSON.parse(r.stdout) as { error: Record<string, unknown> };
    expect(error).toEqual({
      kind: 'cuda',
      code: 'CUDA_DRIVER_NOT_FOUND',
      message: expect.stringMatching(/^bench needs a CUDA GPU and none is usable: CUDA_DRIVER_NOT_FOUND: /) as string,
      remedy: DRIVER_REMEDY,
    });
    // The human lines on stderr, the remedy among them.
    expect(r.stderr).toMatch(/^cudakit: bench needs a CUDA GPU and none is usable: CUDA_DRIVER_NOT_FOUND: /);
    expect(r.stderr).toContain(`\n  Remedy: ${DRIVER_REMEDY}\n`);
    // --json to a file: the same object there, nothing on stdout.
    const out = file('no-gpu.json');
    const toFile = cliWithoutGpu([...bench(...args), '--json', out]);
    expect([toFile.code, toFile.stdout]).toEqual([2, '']);
    expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual({ error });
  });
});

describeNvrtc('cudakit bench and profile: compiling comes before the GPU', () => {
  const launch = ['--grid', '1', '--block', '1'];
  const notThere = (path: string): string =>
    `cudakit: no kernel named 'nope' in ${path} (extern "C" kernels in it: saxpy, zero)\n`;

  it('names a kernel that is not in the source, with or without a GPU', async () => {
    const r = await cli(['bench', file('good.cu'), '--kernel', 'nope', ...launch]);
    expect(r).toEqual({ code: 2, stdout: '', stderr: notThere(file('good.cu')) });
  });

  // With a GPU, the compile error and the unknown kernel come from the run itself (the test above, and test/gpu).
  it.skipIf(machine.ok)(
    'without a GPU, reports a compile error or an unknown kernel before the missing GPU (skipped with one)',
    async () => {
      expect(await cli(['profile', file('good.cu'), '--kernel', 'nope', ...launch])).toEqual({
        code: 2,
        stdout: '',
        stderr: notThere(file('good.cu')),
      });
      for (const command of ['bench', 'profile']) {
        const r = await cli([command, file('bad.cu'), '--kernel', 'k', ...launch, '--arg', 'ptr:f32[1]:out']);
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(/:2:(\d+:)? error: identifier "y" is undefined\n {2}x\[0\] = y;\n/);
        expect(r.stderr).toMatch(/\ncudakit: compile failed: 1 error in .*bad\.cu\n$/);
      }
    },
  );

  it('without a GPU (in a child), checks the argument count against the compiled kernel before the GPU', () => {
    // saxpy takes 4 parameters; NVRTC's PTX says so, without a driver.
    const args = ['f32=2', 'ptr:f32[1k]=uniform(-1,1)', 'ptr:f32[1k]:out'].flatMap((a) => ['--arg', a]);
    for (const command of ['bench', 'profile']) {
      const r = cliWithoutGpu([command, file('good.cu'), '--kernel', 'saxpy', ...launch, ...args]);
      expect(r).toEqual({
        code: 2,
        stdout: '',
        stderr: "cudakit: Kernel 'saxpy' takes 4 parameters but the signature lists 3: [f32, ptr, ptr]\n",
      });
    }
    // The right count gets as far as the missing GPU.
    const right = cliWithoutGpu(['bench', file('good.cu'), '--kernel', 'saxpy', ...launch, ...args, '--arg', 'i32=1']);
    expect(right.code).toBe(2);
    expect(right.stderr).toMatch(/^cudakit: bench needs a CUDA GPU and none is usable: /);
  });

  it("says that --arch is unknown to this NVRTC in the command line's words, for every command", async () => {
    const arch = supportedArchs().includes(100) ? 'sm_99' : 'sm_100';
    const list = supportedArchs()
      .map((n) => `sm_${n}`)
      .join(', ');
    const supported = `an architecture NVRTC ${nvrtcVersion()} supports (${list})`;
    const stderr = `cudakit: --arch expects ${supported}, not '${arch}'\n`;
    const kernel = ['--kernel', 'saxpy', ...launch, '--arg', 'f32=1'];
    const commands = [
      ['compile', file('good.cu')],
      ['bench', file('good.cu'), ...kernel],
      ['profile', file('good.cu'), ...kernel],
    ];
    for (const args of commands) expect(await cli([...args, '--arch', arch])).toEqual({ code: 2, stdout: '', stderr });
    const virtual = await cli(['compile', file('good.cu'), '--ptx', '--arch', arch.replace('sm_', 'compute_')]);
    expect(virtual.stderr).toMatch(/^cudakit: --arch expects an architecture NVRTC \S+ supports \(compute_\d+, /);
  });

  it("with --json -, prints a compile failure on stdout as the report's error, the human lines on stderr", async () => {
    const args = ['bench', file('bad.cu'), '--kernel', 'k', ...launch, '--arg', 'ptr:f32[1]:out', '--json', '-'];
    const r = await cli(args);
    expect(r.code).toBe(2);
    const { error } = JSON.parse(r.stdout) as { error: EvalError };
    expect(error).toMatchObject({ kind: 'compile', code: 'NVRTC_ERROR_COMPILATION', kernel: 'candidate' });
    expect(error.diagnostics![0]).toMatchObject({ line: 2, severity: 'error', message: 'identifier "y" is undefined' });
    expect(r.stderr).toMatch(/\ncudakit: compile failed: 1 error in .*bad\.cu\n$/);
  });

  it('prints where a missing header was looked for and how to provide it (-I), for compile and bench', async () => {
    writeFileSync(file('needs-header.cu'), '#include "absent.h"\nextern "C" __global__ void k(float* x) {}\n');
    const launchK = ['--kernel', 'k', ...launch, '--arg', 'ptr:f32[1]:out'];
    const commands = [
      ['compile', file('needs-header.cu'), '--ptx', '-I', file('inc')],
      ['bench', file('needs-header.cu'), ...launchK, '-I', file('inc')],
    ];
    for (const args of commands) {
      const r = await cli(args);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`cudakit: compile failed: 1 error in ${file('needs-header.cu')}\n`);
      expect(r.stderr).toContain('\n  "absent.h" was looked for in:\n');
      // The source's own folder first (the command line puts it there), then -I.
      expect(r.stderr).toContain(`\n    the include path (includePaths, in order): ${dir}, ${file('inc')}\n`);
      expect(r.stderr).toMatch(/\n {2}Remedy: give the header from memory .*, or add the folder that holds it to /);
      expect(r.stderr.endsWith(' to includePaths (-I <dir>).\n')).toBe(true);
    }
  });
});

describe('cudakit info', () => {
  // Skipped without a GPU: the next test forces that case, on any machine.
  it.skipIf(!machine.ok)('exits 0 and prints the devices (skipped without a GPU)', async () => {
    const r = await cli(['info']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^driver CUDA \d+\.\d+ · NVRTC /);
    expect(r.stdout).toMatch(/#\s+name\s+CC\s+SMs\s+memory\s+SM clock\s+mem clock\s+L2/);
    expect(r.stdout).toContain(Device.get(0).name);
  });

  it('exits 2 where no GPU is usable, says why and what to do in lines of COLUMNS=80 (no driver, in a child)', () => {
    const r = cliWithoutGpu(['info'], { COLUMNS: '80' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(2);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 5)).toEqual([
      'No usable CUDA GPU.',
      '  driver  not found',
      `  NVRTC   ${machine.nvrtcVersion ?? 'not found'}`,
      '  reason  CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library (libcuda.so.1) could',
      '            not be loaded.',
    ]);
    expect(lines[5]).toMatch(/^ {10}tried \/nonexistent\/libcuda\.so\.1: /);
    // The library's remedy, wrapped the same way.
    const remedy = lines.findIndex((line) => line.startsWith('  remedy  '));
    expect(remedy).toBeGreaterThan(5);
    expect(lines[remedy]).toBe('  remedy  Install the NVIDIA driver (it provides libcuda.so.1), or point');
    expect(
      lines
        .slice(remedy)
        .map((l) => l.trim().replace(/^remedy {2}/, ''))
        .join(' '),
    ).toContain(DRIVER_REMEDY);
    expect(lines.filter((line) => line.length > 80)).toEqual([]);
  });

  it('does not wrap into a file or a pipe, and wraps at COLUMNS when it is set (no driver, in a child)', () => {
    const piped = cliWithoutGpu(['info']).stdout.split('\n');
    expect(piped[3]).toBe(
      '  reason  CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library (libcuda.so.1) could not be loaded.',
    );
    expect(piped[4]).toMatch(/^ {10}tried \/nonexistent\/libcuda\.so\.1: .*: No such file or directory$/);
    expect(piped).toContain(`  remedy  ${DRIVER_REMEDY}`);
    const wide = cliWithoutGpu(['info'], { COLUMNS: '200' }).stdout;
    expect(wide).toBe(piped.join('\n')); // every line fits in 200 columns
    const narrow = cliWithoutGpu(['info'], { COLUMNS: '60' }).stdout.trimEnd().split('\n');
    expect(narrow.length).toBeGreaterThan(piped.length);
    expect(narrow.filter((line) => line.length > 60)).toEqual([]);
  });

  it('takes its width from COLUMNS, else the terminal, else none for a file or a pipe', () => {
    expect(wrapColumns({ COLUMNS: '200' }, false)).toBe(200);
    expect(wrapColumns({ COLUMNS: '200' }, true, 100)).toBe(200);
    expect(wrapColumns({}, true, 132)).toBe(132);
    expect(wrapColumns({}, true, undefined)).toBe(80);
    expect(wrapColumns({}, false, 132)).toBe(Infinity);
    for (const bad of ['', '0', '-5', 'wide', '12.5']) expect(wrapColumns({ COLUMNS: bad }, true, 100)).toBe(100);
  });

  it('wraps a reason at the width, its paths tried one a line, a long word whole', () => {
    const reason =
      'CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library (libcuda.so.1) could not be loaded. ' +
      '(tried: libcuda.so.1: not found; /a/very/long/path/that/does/not/fit/in/the/width/libcuda.so: not found)\n' +
      'NVRTC_NOT_FOUND: The NVRTC library (libnvrtc) could not be loaded.';
    expect(reasonLines(reason, 40)).toEqual([
      'CUDA_DRIVER_NOT_FOUND: The NVIDIA driver',
      '  library (libcuda.so.1) could not be',
      '  loaded.',
      'tried libcuda.so.1: not found',
      'tried',
      '  /a/very/long/path/that/does/not/fit/in/the/width/libcuda.so:',
      '  not found',
      'NVRTC_NOT_FOUND: The NVRTC library',
      '  (libnvrtc) could not be loaded.',
    ]);
  });

  it('rejects arguments', async () => {
    expect(await cli(['info', 'extra'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "cudakit: info takes no arguments, got 'extra'\n",
    });
  });
});

describeNvrtc('cudakit compile', () => {
  it('compiles to PTX and reports the kernels, NVRTC version and flags; --out writes the PTX', async () => {
    const out = file('good.ptx');
    const r = await cli([
      'compile',
      file('good.cu'),
      '--arch',
      'sm_80',
      '--ptx',
      '--no-cache',
      '--name-expression',
      'scale<float>',
      '--out',
      out,
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    const nvrtc = escape(nvrtcVersion());
    const head = `^${escape(file('good.cu'))} → PTX for sm_80 · [\\d.]+ (B|KiB) · NVRTC ${nvrtc} · \\d+ ms$`;
    expect(lines[0]).toMatch(new RegExp(head));
    expect(r.stdout).toMatch(/\n {2}flags +--gpu-architecture=sm_80 --include-path=/);
    expect(r.stdout).toMatch(/\n {2}kernels +saxpy, zero, scale<float> \(_Z5scaleIfEvPT_S0_i\)\n/);
    expect(r.stdout).not.toContain('commented_out');
    expect(r.stdout).toContain(`  wrote             ${out}\n`);
    const ptx = readFileSync(out, 'utf8');
    expect(ptx).toMatch(/\.target sm_80/);
    expect(ptx).toMatch(/\.entry saxpy\(/);
    expect(ptx).toMatch(/\.entry _Z5scaleIfEvPT_S0_i\(/);
    if (machine.ok) {
      expect(r.stdout).toMatch(/\nsaxpy\n {2}registers +\d+ per thread\n/);
      expect(r.stdout).toMatch(/ {2}occupancy +\d+ blocks?\/SM at the suggested \d+ threads\/block · \d+% of \d+ thr/);
    } else {
      expect(r.stdout).toMatch(
        / {2}not shown +registers, spills and shared memory come from ptxas, for CUBIN \(without --ptx\); occupan/,
      );
      expect(r.stdout).not.toContain('(tried:');
    }
  });

  // Skipped with a GPU, where the device gives the architecture: the next test asserts that instead.
  it.skipIf(machine.ok)('without a GPU asks for --arch or --ptx (skipped with one: it gives the arch)', async () => {
    const r = await cli(['compile', file('good.cu'), '--no-cache']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'cudakit: compile needs --arch (e.g. --arch sm_90) or --ptx: there is no GPU to take the architecture from ' +
        `(${driverReason})\n`,
    );
  });

  // Skipped without a GPU: there is no device to take the architecture from (the previous test).
  it.skipIf(!machine.ok)("with a GPU and no --arch compiles for the device's arch (skipped without one)", async () => {
    const r = await cli(['compile', file('good.cu'), '--no-cache']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const arch = Device.get(0).arch;
    expect(r.stdout.split('\n')[0]).toMatch(new RegExp(`^${escape(file('good.cu'))} → CUBIN for ${arch} · `));
    expect(r.stdout).toMatch(new RegExp(`\n {2}flags +--gpu-architecture=${arch}[ \n]`));
  });

  // Skipped with a GPU, where the driver gives these figures (and occupancy): the test above asserts them there.
  it.skipIf(machine.ok)(
    'without a GPU reports registers, spills and shared memory from ptxas (skipped with one)',
    async () => {
      const r = await cli(['compile', file('ptxas.cu'), '--arch', 'sm_80', '--no-cache']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/\n {2}flags +--gpu-architecture=sm_80 --include-path=.* --ptxas-options=-v\n/);
      expect(r.stdout).toContain(
        `  not shown         occupancy needs a GPU (the figures below are ptxas's): ${shortReason}\n`,
      );
      const kernel = (name: string): string =>
        r.stdout
          .split('\n\n')
          .find((part) => part.startsWith(`${name}\n`))!
          .trimEnd();
      expect(kernel('spill')).toMatch(
        new RegExp(
          /^spill\n {2}registers {9}\d+ per thread\n {2}shared memory {5}0 B static per block\n/.source +
            / {2}local memory {6}\d+ B per thread, \d+ B stored, \d+ B loaded: spills to local memory \(slow\)$/.source,
        ),
      );
      expect(kernel('frame')).toMatch(/\n {2}local memory {6}\d+ B per thread \(stack frame, no spills\)$/);
      expect(kernel('shared')).toMatch(
        /\n {2}shared memory {5}1\.00 KiB static per block\n {2}local memory {6}0 B \(no spills\)$/,
      );
      expect(r.stdout).not.toContain('\0');
    },
  );

  it('prints a compile error as file:line: error, the source line and a caret; exit 2', async () => {
    const bad = file('bad.cu');
    const r = await cli(['compile', bad, '--arch', 'sm_80', '--no-cache']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.split('\n');
    // NVRTC 12 prints the column; 11.8 does not, and the caret goes under the line's first character.
    expect(lines[0]).toMatch(new RegExp(`^${escape(bad)}:2:(\\d+:)? error: identifier "y" is undefined$`));
    expect(lines[1]).toBe('  x[0] = y;');
    const column = /:2:(\d+):/.exec(lines[0]!)?.[1];
    expect(lines[2]).toBe(column !== undefined ? `${' '.repeat(Number(column) - 1)}^` : '  ^');
    expect(lines[3]).toBe(`cudakit: compile failed: 1 error in ${bad}`);
    expect(r.stderr).not.toMatch(STACK);
  });

  it('passes -D defines through to the code', async () => {
    const src = file('defines.cu');
    const without = await cli(['compile', src, '--arch', 'sm_80', '--no-cache']);
    expect(without.code).toBe(2);
    expect(without.stderr).toMatch(
      /defines\.cu:2:(\d+:)? (catastrophic )?error: #error directive: X is not defined\n#error X is not defined\n *\^/,
    );
    for (const define of [['-D', 'X=7'], ['-DX=7'], ['--define', 'X=7']]) {
      const r = await cli(['compile', src, '--arch', 'sm_80', '--no-cache', ...define]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/ {2}flags +--gpu-architecture=sm_80 -DX=7 /);
      expect(r.stdout).toMatch(/→ CUBIN for sm_80/);
    }
  });

  it('colours the report only for a terminal', async () => {
    vi.stubEnv('NO_COLOR', '');
    try {
      const args = ['compile', file('good.cu'), '--arch', 'sm_80', '--ptx', '--no-cache'];
      expect((await cli(args, true)).stdout).toMatch(ANSI);
      expect((await cli(args, false)).stdout).not.toMatch(ANSI);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('helpers', () => {
  it("reads ptxas's report per kernel, not per device function", () => {
    const log = [
      'ptxas info    : 0 bytes gmem',
      "ptxas info    : Compiling entry function '_Z5scaleIfEvPT_S0_i' for 'sm_90'",
      'ptxas info    : Function properties for _Z5scaleIfEvPT_S0_i',
      'ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads',
      'ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 368 bytes cmem[0]',
      'ptxas info    : Function properties for _Z6helperPfi',
      'ptxas         .     64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads',
      "ptxas info    : Compiling entry function 'k' for 'sm_90'",
      'ptxas info    : Function properties for k',
      'ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads',
      'ptxas info    : Used 8 registers, 360 bytes cmem[0]',
      '',
    ].join('\n');
    expect(Object.fromEntries(ptxasFacts(log))).toEqual({
      _Z5scaleIfEvPT_S0_i: {
        registers: 40,
        sharedBytes: 2048,
        stackFrameBytes: 16,
        spillStoreBytes: 8,
        spillLoadBytes: 4,
      },
      k: { registers: 8, sharedBytes: 0, stackFrameBytes: 0, spillStoreBytes: 0, spillLoadBytes: 0 },
    });
  });

  it('parses grid and block sizes', () => {
    expect(parseDim('256', '--block')).toBe(256);
    expect(parseDim('64,64', '--grid')).toEqual([64, 64]);
    expect(parseDim('16x16x4', '--grid')).toEqual([16, 16, 4]);
    for (const bad of ['0', '-1', '1.5', 'a', '1,2,3,4', '']) {
      expect(() => parseDim(bad, '--grid')).toThrow(/--grid expects/);
    }
  });

  it('finds extern "C" kernels, not device functions or commented-out code', () => {
    const src = [
      'extern "C" __global__ void a(int* p) {}',
      'extern "C" __global__ __launch_bounds__(256, 2) void b(int* p) {}',
      'extern  "C"  __global__  void  __launch_bounds__(128)  c (int* p) {}',
      'extern "C" __device__ void helper(int* p) {}',
      '/* extern "C" __global__ void hidden(int* p) {} */',
      '__global__ void cpp_linkage(int* p) {}',
      'extern "C" __global__ void a(int* p);',
    ].join('\n');
    expect(externCKernels(src)).toEqual(['a', 'b', 'c']);
  });
});

describe('flags → job (no GPU)', () => {
  const values = (...argv: string[]) => parseCommand('bench', argv, BENCH_FLAGS).values;

  it('maps a --compare command line to its job', () => {
    // The golden case's command line: 'bench', the source, then the flags.
    const [, source, ...flags] = GOLDEN.compare.argv;
    const job = jobFromFlags(source!, values(...flags, '--json', 'out.json'));
    expect(job).toEqual({
      source: { file: 'examples/cuda/saxpy_vec4.cu' },
      kernel: 'saxpy',
      grid: 4096,
      block: 1024,
      args: ['f32=2.5', 'ptr:f32[16M]=uniform(-1,1)', 'ptr:f32[16M]=uniform(-1,1):out', 'i32=16777216'],
      compare: { source: { file: 'examples/cuda/saxpy.cu' }, kernel: 'saxpy', grid: 65536, block: 256 },
      check: { withoutReference: 'skip' },
      timing: { preset: 'quick', bytes: 12 * 16 * 1024 * 1024 },
    });
    expect(validateJob(job)).toEqual({ ...job, name: 'saxpy' });
    expect(JSON.parse(JSON.stringify(job))).toEqual(job); // plain JSON
  });

  it('maps --ref, check, compile and timing flags to their fields', () => {
    const job = jobFromFlags(
      'k.cu',
      values(
        '--kernel',
        'k',
        '--grid',
        '64,64',
        '--block',
        '16x16',
        '--shared-mem',
        '4096',
        ...SAXPY_16M_ARGS,
        '--ref',
        'ref.cu',
        '--ref-kernel',
        'k_ref',
        '--ref-block',
        '256',
        '--arch',
        'sm_90',
        '-D',
        'N=4',
        '--std',
        'c++17',
        '--fast-math',
        '--no-cache',
        '--atol',
        '1e-3',
        '--rtol',
        '0',
        '--trials',
        '3',
        '--seed',
        '7',
        '--require-determinism',
        '--mode',
        'graph',
        '--flops',
        '2*16M',
      ),
    );
    expect(job).toMatchObject({
      grid: [64, 64],
      block: [16, 16],
      sharedMemBytes: 4096,
      reference: { source: { file: 'ref.cu' }, kernel: 'k_ref', block: 256 },
      compile: { arch: 'sm_90', defines: ['N=4'], std: 'c++17', fastMath: true, cache: false },
      check: { atol: 1e-3, rtol: 0, trials: 3, seed: 7, requireDeterminism: true, withoutReference: 'skip' },
      timing: { mode: 'graph', flops: 2 * 16 * 1024 * 1024 },
    });
    expect(job.reference).not.toHaveProperty('grid'); // the job's launch, unless --ref-grid
    expect(jobFromFlags('k.cu', values('--kernel', 'k', '--grid', '1', '--block', '1', '--no-check')).check).toEqual({
      skip: true,
      withoutReference: 'skip',
    });
    expect(() => jobFromFlags('k.cu', values('--kernel', 'k', '--grid', '1'))).toThrow(
      /^bench needs --grid and --block/,
    );
    expect(() =>
      jobFromFlags('k.cu', values('--kernel', 'k', '--grid', '1', '--block', '1', '--arg', 'f33=1')),
    ).toThrow(/but received the argument spec 'f33=1'$/);
  });

  it("reads a source file's plan: the job, no JavaScript reference, --json and --no-check beside it", () => {
    const plan = planFromCommandLine(
      file('good.cu'),
      values('--kernel', 'saxpy', '--grid', '4', '--block', '256', '--json', '-', '--no-check'),
    );
    expect(plan).toMatchObject({
      what: file('good.cu'),
      reference: undefined,
      baseDir: undefined,
      json: '-',
      noCheck: true,
    });
    expect(plan.job.source).toEqual({ file: file('good.cu') });
  });

  it('maps a spec file with the command line over it', async () => {
    writeFileSync(file('ref.cu'), 'extern "C" __global__ void ref(float* y) {}\n');
    writeFileSync(
      file('over.bench.mjs'),
      [
        "export default { name: 'mine', source: 'extern \"C\" __global__ void k(float* y) {}', " +
          "kernel: 'k', grid: 4, block: 32,",
        "  args: ['ptr:f32[128]:out'], reference: { source: { file: 'ref.cu' }, kernel: 'ref' }, " +
          "preset: 'default', bytes: 512,",
        '  check: { trials: 2 } };',
      ].join('\n'),
    );
    const plan = await planFromSpec(
      file('over.bench.mjs'),
      values('--preset', 'quick', '--block', '64', '--seed', '3'),
    );
    expect(plan.reference).toBeUndefined();
    expect(plan.baseDir).toBe(dir);
    expect(plan.job).toEqual({
      name: 'mine',
      source: { text: 'extern "C" __global__ void k(float* y) {}', name: 'over.bench.source.cu' },
      kernel: 'k',
      grid: 4,
      block: 64,
      args: ['ptr:f32[128]:out'],
      reference: { source: { file: file('ref.cu'), name: expect.stringMatching(/ref\.cu$/) }, kernel: 'ref' },
      check: { trials: 2, seed: 3, withoutReference: 'skip' },
      timing: { preset: 'quick', bytes: 512 }, // BenchSpec's top-level fields moved, the command line over them
    });
  });

  it("takes a spec's JavaScript reference from its export, or from the job (BenchSpec)", async () => {
    const job = "{ source: 'x', kernel: 'k', grid: 1, block: 1, args: ['ptr:f32[1]:out'] }";
    writeFileSync(
      file('named.bench.mjs'),
      `export default ${job};\nexport const reference = ([y]) => { y[0] = 1; };\n`,
    );
    writeFileSync(file('inside.bench.mjs'), `export default { ...${job}, reference: ([y]) => { y[0] = 1; } };\n`);
    writeFileSync(
      file('both.bench.mjs'),
      `export default { ...${job}, reference: () => {} };\nexport const reference = () => {};\n`,
    );
    for (const name of ['named.bench.mjs', 'inside.bench.mjs']) {
      const plan = await planFromSpec(file(name), values());
      expect(typeof plan.reference).toBe('function');
      expect(plan.job).not.toHaveProperty('reference');
    }
    await expect(planFromSpec(file('both.bench.mjs'), values())).rejects.toThrow(/two JavaScript references/);
    // --ref replaces the spec's reference, whichever it is; its path is the command line's (from the cwd).
    const ref = relative(process.cwd(), file('good.cu'));
    const plan = await planFromSpec(
      file('named.bench.mjs'),
      values('--ref', ref, '--compare', ref, '--compare-kernel', 'saxpy'),
    );
    expect(plan.reference).toBeUndefined();
    expect(plan.job.reference).toEqual({ source: { file: file('good.cu'), name: ref }, kernel: 'k' });
    expect(plan.job.compare).toEqual({ source: { file: file('good.cu'), name: ref }, kernel: 'saxpy' });
  });

  it('reports every problem of a spec, one line each', async () => {
    writeFileSync(
      file('many.bench.mjs'),
      "export default { source: 1, kernel: 'k', grid: 0, block: 1, args: ['f33=1'] };\n",
    );
    const r = await cli(['bench', file('many.bench.mjs')]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(
        /^cudakit: .*many\.bench\.mjs: Expected CUDA source text, .* for job\.source but received 1 of type number$/,
      ),
      expect.stringMatching(
        /^cudakit: .*many\.bench\.mjs: Expected a positive integer for job\.grid but received 0 of type number$/,
      ),
      expect.stringMatching(
        new RegExp(
          /^cudakit: .*many\.bench\.mjs: Expected a type such as f32 or ptr:f32\[N\] for job\.args\[0\] /.source +
            /but received 'f33=1'/.source,
        ),
      ),
    ]);
  });
});
