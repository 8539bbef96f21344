// SPDX-License-Identifier: MIT
// One job inside a worker: evaluate() with the inputs' seed mixed with the job's secret salt, phases and progress
// reported as they happen, the report made plain JSON (formatJson: 64-bit values become strings) for the parent.
import { createHash } from 'node:crypto';
import {
  Device,
  type EvalJob,
  type EvalPhase,
  type EvalProgress,
  type EvalReport,
  evaluate,
  formatJson,
} from 'cudakit';
import type { DeviceFacts } from '../gpu/protocol.js';
import { deviceFacts } from './facts.js';

export interface RunJobOptions {
  signal?: AbortSignal;
  onPhase?: (phase: EvalPhase) => void;
  onProgress?: (progress: EvalProgress) => void;
  /** Scrub device buffers before they are freed (a warm worker: the next job must read nothing of this one). */
  zeroOnFree?: boolean;
}

/** check()'s default seed, mixed like any other when the job names none. */
const DEFAULT_SEED = 42;

/**
 * The seed the inputs are drawn from: a hash of the job's public seed and the secret salt, so a kernel cannot know
 * its inputs in advance from the seed it was given (a 32-bit value: validateJob wants a non-negative integer).
 */
export function mixSeed(seed: number, salt: string): number {
  return createHash('sha256').update(`${seed}\0${salt}`).digest().readUInt32LE(0);
}

/** The job as the worker runs it: the mixed seed, and zeroOnFree when asked. Leaves `job` as it is. */
export function prepareForRun(job: EvalJob, seedSalt: string, zeroOnFree: boolean): EvalJob {
  const check = typeof job.check === 'object' && job.check !== null ? job.check : {};
  const seed = typeof check.seed === 'number' ? check.seed : DEFAULT_SEED;
  const run: EvalJob = { ...job, check: { ...check, seed: mixSeed(seed, seedSalt) } };
  if (zeroOnFree) run.zeroOnFree = true;
  return run;
}

let facts: DeviceFacts | undefined;

/** This worker's GPU (ordinal 0 under CUDA_VISIBLE_DEVICES), or undefined where it cannot be seen. No context. */
export function workerDevice(): DeviceFacts | undefined {
  try {
    facts ??= deviceFacts(Device.get(0));
  } catch {
    // no driver or no device: the report says why
  }
  return facts;
}

/** Runs one job and returns its report as plain JSON, with the device it ran on. */
export async function runJob(
  job: EvalJob,
  seedSalt: string,
  options: RunJobOptions = {},
): Promise<{ report: EvalReport; device: DeviceFacts | undefined }> {
  const { signal, onPhase, onProgress, zeroOnFree = false } = options;
  const report = await evaluate(prepareForRun(job, seedSalt, zeroOnFree), {
    ...(signal === undefined ? {} : { signal }),
    onProgress: (p) => {
      if (p.kind === 'phase') onPhase?.(p.phase);
      else onProgress?.(p);
    },
  });
  const plain = JSON.parse(formatJson(report as unknown as Record<string, unknown>)) as EvalReport;
  return { report: plain, device: workerDevice() };
}
