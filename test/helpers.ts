// SPDX-License-Identifier: MIT
// Tier gates: GPU tests skip with a visible reason where there is no GPU, and fail instead when
// CUDAKIT_REQUIRE_GPU=1 (a machine with an NVIDIA GPU). NVRTC tests likewise with CUDAKIT_REQUIRE_NVRTC=1 (CI).
// Tests of two or more GPUs skip with the count on a one-GPU machine, and fail there with CUDAKIT_REQUIRE_GPUS=2.
import { describe, it } from 'vitest';
import { main } from '../lib/cli/main.js';
import { probe } from '../lib/index.js';

export const machine = probe();

function gate(ok: boolean, required: boolean, what: string, reason: string | undefined) {
  return (name: string, body: () => void): void => {
    if (ok) describe(name, body);
    else if (required) {
      describe(name, () => {
        it(`needs ${what}`, () => {
          throw new Error(`${what} is required here but unavailable: ${reason ?? 'unknown reason'}`);
        });
      });
    } else describe.skip(`${name} [skipped: no ${what}: ${(reason ?? '').split('\n')[0]}]`, body);
  };
}

export const describeGpu = gate(machine.ok, process.env.CUDAKIT_REQUIRE_GPU === '1', 'GPU', machine.reason);
const gpuCount = machine.deviceCount;
const requiredGpus = Number(process.env.CUDAKIT_REQUIRE_GPUS ?? '0');
/** Two or more GPUs: skipped with the count where fewer are present, unless CUDAKIT_REQUIRE_GPUS asks for them. */
export const describeMultiGpu = gate(
  gpuCount >= 2,
  requiredGpus >= 2,
  'two GPUs',
  machine.ok ? `this machine has ${gpuCount} GPU${gpuCount === 1 ? '' : 's'}` : machine.reason,
);

export const describeNvrtc = gate(
  machine.nvrtcVersion !== undefined,
  process.env.CUDAKIT_REQUIRE_NVRTC === '1' || process.env.CUDAKIT_REQUIRE_GPU === '1',
  'NVRTC',
  machine.reason,
);

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the cudakit command line in-process with captured output; `isTTY` stands for a terminal. */
export async function cli(args: string[], isTTY = false): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    isTTY,
  });
  return { code, stdout, stderr };
}

export const VECTOR_ADD = `
extern "C" __global__ void vector_add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
`;
