// SPDX-License-Identifier: MIT
// Shared by the GPU-slot tests: a fake GPU's facts, jobs for the fake worker (server/src/worker/fake.ts), slots that
// are stopped after each test, and process checks that see through zombies (a SIGKILLed orphan stays a zombie until
// init reaps it, and kill(pid, 0) still succeeds on a zombie).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import type { EvalJob } from 'cudakit';
import { afterEach } from 'vitest';
import type { Deadlines, DeviceFacts } from '../../server/src/gpu/protocol.js';
import { GpuSlot, type SlotOptions } from '../../server/src/gpu/slot.js';
import { until } from '../support/until.js';
import { H200_LAUNCH } from './fake-pool.js';

export const FACTS: DeviceFacts = {
  ordinal: 0,
  uuid: 'GPU-fa4e0000-0000-4000-8000-000000000000',
  name: 'NVIDIA H200',
  arch: 'sm_90',
  totalMemoryBytes: 150_000_000_000,
  multiprocessorCount: 132,
  driverVersion: '13.0',
  nvrtcVersion: '12.8',
  launch: H200_LAUNCH,
};

/** A job whose name tells the fake worker what to do ('fake:pass:80ms', 'fake:hang:check' ...). */
export function fakeJob(name: string): EvalJob {
  return { name, source: 'extern "C" __global__ void k() {}', kernel: 'k', grid: 1, block: 1, args: [] };
}

export function deadlines(jobMs = 8_000, phaseMs: Deadlines['phaseMs'] = {}): Deadlines {
  return { jobMs, phaseMs };
}

/** Quick limits for tests; the GPU counts as released at once unless a test says otherwise. */
export const TEST_SLOT: Omit<SlotOptions, 'facts' | 'classes'> = {
  worker: 'fake',
  startTimeoutMs: 8_000,
  restartDelayMs: 10,
  exitGraceMs: 2_000,
  killWaitMs: 3_000,
  releaseTimeoutMs: 1_000,
  gpuReleased: () => Promise.resolve(true),
};

const slots: GpuSlot[] = [];
afterEach(async () => {
  await Promise.all(slots.splice(0).map((s) => s.stop()));
});

/** A slot on the fake GPU, stopped after the test. */
export function fakeSlot(options: Partial<SlotOptions> = {}): GpuSlot {
  const slot = new GpuSlot({ ...TEST_SLOT, facts: FACTS, classes: ['H200', 'sm_90', 'any'], ...options });
  slots.push(slot);
  return slot;
}

const proc = existsSync('/proc/self/stat');

/** Whether `pid` is a live process (a zombie is dead). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (!proc) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Polls until `pid` is dead; throws when it still lives after `timeoutMs`. */
export function untilDead(pid: number, timeoutMs = 3_000): Promise<void> {
  return until(() => !isAlive(pid), { timeoutMs, what: `process ${pid} to end`, pollMs: 20 });
}

/** `--import <tsx>` for running a TypeScript file in a child. */
export function tsxImport(): string[] {
  return ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href];
}
