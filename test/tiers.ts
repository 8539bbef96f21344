// SPDX-License-Identifier: MIT
// Why a tier skips, in one place: the gates of test/support/gates.ts name it in the suites they skip, and vitest's
// globalSetup of the nvrtc and gpu projects (vitest.config.mts) prints it as one line per skipped tier, so the
// default output says why without --reporter=verbose. Where CUDAKIT_REQUIRE_* asks for the hardware, the tier fails
// instead of skipping, and nothing is printed here.
import { shortReason } from '../lib/cli/output.js';
import { type ProbeResult, probe } from '../lib/index.js';

/** What the gates need to know of the environment. */
export interface TierRequirements {
  /** CUDAKIT_REQUIRE_GPU=1: a missing GPU (or NVRTC) fails instead of skipping. */
  gpu: boolean;
  /** CUDAKIT_REQUIRE_NVRTC=1 (or CUDAKIT_REQUIRE_GPU=1): a missing NVRTC fails instead of skipping. */
  nvrtc: boolean;
  /** CUDAKIT_REQUIRE_GPUS: fewer GPUs fail the two-GPU tests instead of skipping them. */
  gpus: number;
}

export function requirements(env: NodeJS.ProcessEnv = process.env): TierRequirements {
  return {
    gpu: env.CUDAKIT_REQUIRE_GPU === '1',
    nvrtc: env.CUDAKIT_REQUIRE_NVRTC === '1' || env.CUDAKIT_REQUIRE_GPU === '1',
    gpus: Number(env.CUDAKIT_REQUIRE_GPUS ?? '0'),
  };
}

/** Why each gate is closed on this machine (undefined: open), as one short line: probe()'s, without the paths tried. */
export function gateReasons(p: ProbeResult): { gpu?: string; nvrtc?: string; twoGpus?: string } {
  const lines = (p.reason ?? '').split('\n');
  const nvrtcLine = lines.find((l) => l.startsWith('NVRTC')) ?? p.reason;
  const count = `this machine has ${p.deviceCount} GPU${p.deviceCount === 1 ? '' : 's'}`;
  return {
    ...(p.ok ? {} : { gpu: shortReason(p.reason) }),
    ...(p.nvrtcVersion !== undefined ? {} : { nvrtc: shortReason(nvrtcLine) }),
    ...(p.deviceCount >= 2 ? {} : { twoGpus: p.ok ? count : shortReason(p.reason) }),
  };
}

/** The lines a project prints when its tier (or part of it) skips: none for a tier that runs or must run. */
export function skippedTierLines(project: string, p: ProbeResult, required: TierRequirements): string[] {
  const why = gateReasons(p);
  if (project === 'nvrtc' && why.nvrtc !== undefined && !required.nvrtc) {
    return [`nvrtc tier skipped: no NVRTC: ${why.nvrtc}`];
  }
  if (project !== 'gpu') return [];
  if (why.gpu !== undefined) return required.gpu ? [] : [`gpu tier skipped: no GPU: ${why.gpu}`];
  if (why.twoGpus !== undefined && required.gpus < 2) return [`gpu tier: two-GPU tests skipped: ${why.twoGpus}`];
  return [];
}

/** vitest globalSetup (the nvrtc and gpu projects): one line per skipped tier, before the tests run. */
export default function setup(project: { name: string }): void {
  for (const line of skippedTierLines(project.name, probe(), requirements())) console.log(line);
}
