// SPDX-License-Identifier: MIT
// Tier gates: GPU tests skip with a visible reason where there is no GPU, and fail instead when
// CUDAKIT_REQUIRE_GPU=1 (a machine with an NVIDIA GPU). NVRTC tests likewise with CUDAKIT_REQUIRE_NVRTC=1 (CI).
// Tests of two or more GPUs skip with the count on a one-GPU machine, and fail there with CUDAKIT_REQUIRE_GPUS=2.
// The reasons come from test/tiers.ts, which also prints one line per skipped tier.
import { describe, it } from 'vitest';
import { probe } from '../../lib/index.js';
import { gateReasons, requirements } from '../tiers.js';

export const machine = probe();
const why = gateReasons(machine);
const required = requirements();

function gate(reason: string | undefined, required: boolean, what: string) {
  return (name: string, body: () => void): void => {
    if (reason === undefined) describe(name, body);
    else if (required) {
      describe(name, () => {
        it(`needs ${what}`, () => {
          throw new Error(`${what} is required here but unavailable: ${machine.reason ?? reason}`);
        });
      });
    } else describe.skip(`${name} [skipped: no ${what}: ${reason}]`, body);
  };
}

export const describeGpu = gate(why.gpu, required.gpu, 'GPU');
/** Two or more GPUs: skipped with the count where fewer are present, unless CUDAKIT_REQUIRE_GPUS asks for them. */
export const describeMultiGpu = gate(why.twoGpus, required.gpus >= 2, 'two GPUs');
export const describeNvrtc = gate(why.nvrtc, required.nvrtc, 'NVRTC');
