// SPDX-License-Identifier: MIT
// The examples without a GPU (forced in a child process, so on any machine): they say what is missing. The tour and
// the cuBLAS example in one line, exit 0; the main job (`npm start`) and the spec file do what needs no GPU (compile
// the kernel), say plainly that running it needs a machine with an NVIDIA GPU and what to do, and exit 2, as
// `cudakit bench` does. With a GPU, test/gpu/examples.test.ts runs them for their results.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { probe } from '../../lib/index.js';

const root = new URL('../..', import.meta.url).pathname;
/** NVRTC here, as the child finds it (only the driver is forced missing). */
const nvrtc = probe().nvrtcVersion;

/** Runs an example with the driver forced missing (and NVRTC too with `noNvrtc`). */
function withoutGpu(file: string, noNvrtc = false): { status: number | null; stdout: string; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, CUDAKIT_LIBCUDA_PATH: '/nonexistent/libcuda.so.1' };
  if (noNvrtc) env.CUDAKIT_NVRTC_PATH = '/nonexistent/libnvrtc.so.12';
  const r = spawnSync(process.execPath, ['--import', 'tsx', file], {
    cwd: root,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const NO_DRIVER = 'CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library (libcuda.so.1) could not be loaded.';
const DRIVER_REMEDY = 'Remedy: Install the NVIDIA driver (it provides libcuda.so.1), or point CUDAKIT_LIBCUDA_PATH at';

it('npm start is examples/vector-add.ts', () => {
  const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: Record<string, string> };
  expect(pkg.scripts.start).toBe('tsx examples/vector-add.ts');
});

it.skipIf(nvrtc === undefined)(
  `vector-add.ts (npm start) compiles the kernel, says running it needs a GPU and what to do, exit 2${
    nvrtc === undefined ? ' [skipped: no NVRTC]' : ''
  }`,
  () => {
    const r = withoutGpu('examples/vector-add.ts');
    expect(r.stdout).toMatch(
      new RegExp(`^vector_add compiles: NVRTC ${nvrtc!.replace('.', '\\.')} made \\d+ bytes of PTX\n$`),
    );
    expect(r.stderr.split('\n')).toEqual([
      `Running vector_add needs a machine with an NVIDIA GPU, and this one has none usable: ${NO_DRIVER}`,
      expect.stringMatching(new RegExp(`^${DRIVER_REMEDY.replace(/[()]/g, '\\$&')}`)) as string,
      '',
    ]);
    expect(r.status).toBe(2);
  },
);

it('vector-add.ts without NVRTC either says it cannot compile the kernel, and what to do for both, exit 2', () => {
  const r = withoutGpu('examples/vector-add.ts', true);
  expect(r.stdout).toBe('');
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^vector_add cannot be compiled here either: NVRTC_NOT_FOUND: /);
  expect(lines[1]).toBe(
    `Running vector_add needs a machine with an NVIDIA GPU, and this one has none usable: ${NO_DRIVER}`,
  );
  expect(lines.slice(2).map((l) => /^Remedy: Install (the NVIDIA driver|NVRTC) /.exec(l)?.[1])).toEqual([
    'the NVIDIA driver',
    'NVRTC',
  ]);
  expect(r.status).toBe(2);
});

it.skipIf(nvrtc === undefined)(
  `saxpy.bench.ts run directly says checking and timing need a GPU, not which arch to pass, exit 2${
    nvrtc === undefined ? ' [skipped: no NVRTC]' : ''
  }`,
  () => {
    const r = withoutGpu('examples/saxpy.bench.ts');
    expect(r.stdout).toBe(`saxpy compiles: NVRTC ${nvrtc} made PTX\n`);
    const needs = 'Checking and timing saxpy need a machine with an NVIDIA GPU; this one has none usable: ';
    expect(r.stderr.startsWith(`${needs}${NO_DRIVER}\n`)).toBe(true);
    expect(r.stderr).toContain(`\n${DRIVER_REMEDY}`);
    expect(r.stderr).not.toMatch(/arch/);
    expect(r.status).toBe(2);
  },
);

it('readme-tour.ts ends with one line saying it needs a GPU, and why', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'examples/readme-tour.ts'], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: { ...process.env, CUDAKIT_LIBCUDA_PATH: '/nonexistent/libcuda.so.1' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  expect(r.stdout).toMatch(
    /^needs a CUDA GPU: CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library \(libcuda\.so\.1\) could not be loaded\./,
  );
  expect(r.stdout.split('\n')).toHaveLength(2); // one line, and its end
});

it('cublas-gemm.ts says it needs a GPU before it looks for koffi or cuBLAS', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'examples/cublas-gemm.ts'], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: { ...process.env, CUDAKIT_LIBCUDA_PATH: '/nonexistent/libcuda.so.1', CUDAKIT_CUBLAS_PATH: '/nonexistent' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  expect(r.stdout).toMatch(/^needs a CUDA GPU: CUDA_DRIVER_NOT_FOUND: /);
  expect(r.stdout.split('\n')).toHaveLength(2);
});
