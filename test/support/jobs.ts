// SPDX-License-Identifier: MIT
// The small job the service's tests submit, in each shape that takes it: a native body (POST /v1/evaluations), an
// EvalJob (what a GPU slot runs), and the compatible routes' body (POST /evaluate). A fake pool or worker does what the
// job's name says ('fake:pass:80ms', 'fake:hang:check' ...); the rest is a job that validateJob accepts.
import type { EvalJob } from 'cudakit';
import { FILL } from './kernels.js';

/** The job but its name: y = 1 over 32 floats, FILL on one block of 32 threads. */
export const SMALL_JOB: Readonly<EvalJob> = {
  source: FILL,
  kernel: 'k',
  grid: 1,
  block: 32,
  args: ['ptr:f32[32]:out', 'i32=32'],
};
/** A copy of its arguments for each job: a test may change its own. */
const args = (): EvalJob['args'] => [...SMALL_JOB.args!];

/** The job as a native request body named `name`; `overrides` replaces or adds fields, a test's bad values too. */
export function jobBody(name = 'pass', overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, ...SMALL_JOB, args: args(), ...overrides };
}

/** The job as an EvalJob named `name`, for what takes one directly (a GPU slot and its worker). */
export function fakeJob(name: string): EvalJob {
  return { ...SMALL_JOB, args: args(), name };
}

/** The same job as a body of the compatible POST /evaluate; `extra` adds top-level fields, `kernel` kernel fields. */
export function evaluateBody(extra: Record<string, unknown> = {}, kernel: Record<string, unknown> = {}) {
  return {
    kernel: {
      source_code: '__global__ void fill(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }',
      kernel_type: 'cuda',
      io: {
        args: [
          { name: 'y', type: 'tensor', role: 'output', tensor_spec: { shape: [32], dtype: 'float32' } },
          { name: 'n', type: 'int', value: 32 },
        ],
        launch: { grid: { x: 1 }, block: { x: 32 } },
      },
      metadata: { kernel_name: 'fill' },
      ...kernel,
    },
    ...extra,
  };
}
