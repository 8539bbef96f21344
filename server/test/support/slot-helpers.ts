// SPDX-License-Identifier: MIT
// Shared by the GPU-slot tests: deadlines, slots on the fake GPU (test/support/devices.ts) with the fake worker
// (server/src/run/worker/fake.ts) that are stopped after each test, and process checks that see through zombies (a
// SIGKILLed orphan stays a zombie until init reaps it, and kill(pid, 0) still succeeds on a zombie).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterEach } from 'vitest';
import type { Deadlines } from '../../src/run/protocol.js';
import { GpuSlot, type SlotOptions } from '../../src/run/slot.js';
import { H200_FACTS } from '../../../test/support/devices.js';
import { until } from '../../../test/support/until.js';

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
  const slot = new GpuSlot({ ...TEST_SLOT, facts: H200_FACTS, classes: ['H200', 'sm_90', 'any'], ...options });
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
