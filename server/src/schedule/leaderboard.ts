// SPDX-License-Identifier: MIT
// A job's place on a leaderboard: when a submission to a problem with cases ends PASSED with a score, its result is
// recorded on the board of its problem and GPU class (the store keeps each principal's best: store/leaderboard.ts).
// SUSPICIOUS and every other verdict are never recorded. The class is the one the job was queued for; a job queued
// for 'any' goes on the board of the model that ran it ('H200', as the pool names a GPU's class). What the board
// shows for a principal is a pseudonym made from it (pseudonymOf): never the principal, nor a token.
import { createHash } from 'node:crypto';
import type { FinishOutcome } from '../judge/outcome.js';
import { gpuClasses } from '../run/local-pool.js';
import type { LeaderboardEntry } from '../store/leaderboard.js';
import { type JobRecord, type JobStore, isProblemJob } from '../store/store.js';

/** A GPU class as a job may name it (the v1 schema's `gpu` pattern): what a board's class must be. */
export const GPU_CLASS_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The name a board shows for `principal`: 'anon-' and 10 hex digits of a hash of it, the same at every record and on
 * every process. It says nothing of a token (tokens never reach the store), and two principals share one only by a
 * 1-in-2^40 chance.
 */
export function pseudonymOf(principal: string): string {
  return `anon-${createHash('sha256').update(`cudakit leaderboard\0${principal}`, 'utf8').digest('hex').slice(0, 10)}`;
}

const positive = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0;

/**
 * The entry a finished job gives the board, or undefined: only a succeeded PASSED submission to a problem with cases
 * whose report passed with a score. `gpu` is the class it was queued for.
 */
export function leaderboardEntryOf(record: JobRecord, gpu: string): LeaderboardEntry | undefined {
  if (record.status !== 'succeeded' || record.verdict !== 'PASSED' || !isProblemJob(record.job)) return undefined;
  if (record.report === undefined) return undefined;
  let report: { passed?: unknown; score?: unknown; scoreLow?: unknown; scoreHigh?: unknown; device?: unknown };
  try {
    report = JSON.parse(record.report) as typeof report;
  } catch {
    return undefined;
  }
  const { score, scoreLow, scoreHigh } = report;
  if (report.passed !== true || !positive(score)) return undefined;
  const device = report.device as { name?: unknown; arch?: unknown } | undefined;
  const model =
    typeof device?.name === 'string' && typeof device.arch === 'string'
      ? gpuClasses({ name: device.name, arch: device.arch })[0]
      : undefined;
  const gpuClass = gpu === 'any' ? model : gpu;
  if (gpuClass === undefined || !GPU_CLASS_PATTERN.test(gpuClass) || gpuClass === 'any') return undefined;
  return {
    problem: record.job.problem,
    gpuClass,
    principal: record.principal,
    displayName: pseudonymOf(record.principal),
    score,
    // The interval where the report has one; a score alone is its own interval.
    scoreLow: positive(scoreLow) ? scoreLow : score,
    scoreHigh: positive(scoreHigh) ? scoreHigh : score,
    jobId: record.id,
    submittedAt: record.createdAt,
    status: 'provisional',
  };
}

/**
 * Records job `id`'s result on its board, once its end (`outcome`) is stored: a PASSED job's record is read back
 * (its principal, submission time, problem and report), where its report has a score. Resolves whether the result
 * became its principal's entry.
 */
export async function recordOnLeaderboard(
  store: JobStore,
  id: string,
  gpu: string,
  outcome: Pick<FinishOutcome, 'verdict' | 'report'>,
): Promise<boolean> {
  // The record is read only for a PASSED end whose report may have a score: a plain job's report (which may be
  // several MB) is not read back.
  if (outcome.verdict !== 'PASSED' || outcome.report?.includes('"scoreHigh"') !== true) return false;
  const record = await store.get(id);
  const entry = record === undefined ? undefined : leaderboardEntryOf(record, gpu);
  return entry === undefined ? false : store.recordScore(entry);
}
