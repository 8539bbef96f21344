// SPDX-License-Identifier: MIT
// test/tiers.ts: one line per skipped tier in the default output, with the reason from probe(); none for a tier that
// runs, or that must run (CUDAKIT_REQUIRE_*: it fails instead).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { ProbeResult } from '../../lib/index.js';
import { skippedTierLines } from '../tiers.js';

const NO_DRIVER =
  'CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library (libcuda.so.1) could not be loaded. (tried: libcuda.so.1: gone)';
const NO_NVRTC = 'NVRTC_NOT_FOUND: The NVRTC library (libnvrtc) could not be loaded. (tried: libnvrtc.so.12: gone)';
const machine = (p: Partial<ProbeResult>): ProbeResult => ({
  ok: false,
  driverVersion: undefined,
  nvrtcVersion: undefined,
  deviceCount: 0,
  reason: undefined,
  remedy: undefined,
  ...p,
});
const free = { gpu: false, nvrtc: false, gpus: 0 };

describe('skipped tier lines', () => {
  it('says why the gpu and nvrtc tiers skip, without the paths tried', () => {
    const bare = machine({ reason: `${NO_DRIVER}\n${NO_NVRTC}` });
    expect(skippedTierLines('gpu', bare, free)).toEqual([
      'gpu tier skipped: no GPU: CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library (libcuda.so.1) could not be loaded.',
    ]);
    expect(skippedTierLines('nvrtc', bare, free)).toEqual([
      'nvrtc tier skipped: no NVRTC: NVRTC_NOT_FOUND: The NVRTC library (libnvrtc) could not be loaded.',
    ]);
    expect(skippedTierLines('unit', bare, free)).toEqual([]);
    expect(skippedTierLines('server', bare, free)).toEqual([]);
    // NVRTC without a driver (CI): the nvrtc tier runs.
    const ci = machine({ nvrtcVersion: '11.8', reason: NO_DRIVER });
    expect(skippedTierLines('nvrtc', ci, free)).toEqual([]);
    expect(skippedTierLines('gpu', ci, free)).toHaveLength(1);
  });

  it('says so when the two-GPU tests skip on a machine with one', () => {
    const one = machine({ ok: true, nvrtcVersion: '12.8', driverVersion: '12.8', deviceCount: 1 });
    expect(skippedTierLines('gpu', one, free)).toEqual(['gpu tier: two-GPU tests skipped: this machine has 1 GPU']);
    expect(skippedTierLines('gpu', { ...one, deviceCount: 2 }, free)).toEqual([]);
    expect(skippedTierLines('nvrtc', one, free)).toEqual([]);
  });

  it('prints nothing for a tier that must run (it fails instead)', () => {
    const bare = machine({ reason: `${NO_DRIVER}\n${NO_NVRTC}` });
    expect(skippedTierLines('gpu', bare, { gpu: true, nvrtc: true, gpus: 0 })).toEqual([]);
    expect(skippedTierLines('nvrtc', bare, { gpu: false, nvrtc: true, gpus: 0 })).toEqual([]);
    const one = machine({ ok: true, nvrtcVersion: '12.8', driverVersion: '12.8', deviceCount: 1 });
    expect(skippedTierLines('gpu', one, { gpu: true, nvrtc: true, gpus: 2 })).toEqual([]);
  });

  it("is in vitest's default output, one line per tier (no driver and no NVRTC, in a child)", () => {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!/^(VITEST|CUDAKIT_REQUIRE)/.test(k)) env[k] = v;
    Object.assign(env, { CUDAKIT_LIBCUDA_PATH: '/nonexistent/libcuda.so.1', CUDAKIT_NVRTC_PATH: '/nonexistent/x.so' });
    const vitest = ['node_modules/vitest/vitest.mjs', 'run', '--project', 'nvrtc', '--project', 'gpu'];
    const files = ['test/nvrtc/sampler.test.ts', 'test/gpu/event.test.ts'];
    const r = spawnSync(process.execPath, [...vitest, ...files], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { ...env, NO_COLOR: '1' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.split('\n').filter((line) => / tier skipped: /.test(line));
    expect(lines.sort()).toEqual([
      'gpu tier skipped: no GPU: CUDA_DRIVER_NOT_FOUND: The NVIDIA driver library (libcuda.so.1) could not be loaded.',
      'nvrtc tier skipped: no NVRTC: NVRTC_NOT_FOUND: The NVRTC library (libnvrtc) could not be loaded.',
    ]);
  }, 60_000);
});
