// SPDX-License-Identifier: MIT
// The examples without a GPU (forced in a child process, so on any machine): one line saying what is missing, exit 0.
// With a GPU, test/gpu/examples.test.ts runs them for their results.
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';

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
