// SPDX-License-Identifier: MIT
// A job's place on a leaderboard: when a submission to a problem with cases ends PASSED with a score, its result is
// recorded on the board of its problem and GPU class (the store keeps each principal's best: store/leaderboard.ts).
// SUSPICIOUS and every other verdict are never recorded. The class is the model of the GPU that ran it ('H200', as
// the pool names a GPU's class), whatever the job asked for: timings of two models never share a board. What the board
// shows for a principal is a pseudonym made from it (pseudonymOf): never the principal, nor a token.
//
// An entry is 'provisional' until a re-run of its job (submit/confirmations.ts queues it, ServiceOptions.confirms
// names the job) passes with a score whose interval overlaps the entry's: then 'confirmed'. A re-run that fails, or
// whose interval lies apart, leaves the entry provisional, and sets a confirmed one provisional again (an admin's
// re-verify). A re-run's result is never an entry itself.
import { createHmac } from 'node:crypto';
import type { FinishOutcome } from '../judge/outcome.js';
import { gpuClasses } from '../run/local-pool.js';
import { GPU_CLASS_PATTERN } from '../run/pool.js';
import { type LeaderboardEntry, checkLeaderboardEntry } from '../store/leaderboard.js';
import { type JobRecord, type JobStore, isProblemJob } from '../store/store.js';

/**
 * The name a board shows for `principal`: 'anon-' and 10 hex digits of an HMAC of it under the store's key
 * (LeaderboardStore.pseudonymKey()), the same at every record and on every process of the server. It says nothing of
 * a token (tokens never reach the store); without the key, a list of likely names cannot be tried against it; two
 * principals share one only by a 1-in-2^40 chance.
 */
export function pseudonymOf(principal: string, key: Uint8Array): string {
  return `anon-${createHmac('sha256', key).update(principal, 'utf8').digest('hex').slice(0, 10)}`;
}

const positive = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0;

type ScoredReport = { passed?: unknown; score?: unknown; scoreLow?: unknown; scoreHigh?: unknown; device?: unknown };

/** The stored report's fields a board reads, or undefined where there is no report or it is not JSON. */
function scoredReportOf(record: JobRecord): ScoredReport | undefined {
  if (record.report === undefined) return undefined;
  try {
    return JSON.parse(record.report) as ScoredReport;
  } catch {
    return undefined;
  }
}

/**
 * The entry a finished job gives the board, or undefined: only a succeeded PASSED submission to a problem with cases
 * whose report passed with a score and names the GPU that ran it.
 */
export function leaderboardEntryOf(record: JobRecord, key: Uint8Array): LeaderboardEntry | undefined {
  if (record.status !== 'succeeded' || record.verdict !== 'PASSED' || !isProblemJob(record.job)) return undefined;
  if (record.options.confirms !== undefined) return undefined;
  const report = scoredReportOf(record);
  if (report === undefined) return undefined;
  const { score, scoreLow, scoreHigh } = report;
  if (report.passed !== true || !positive(score)) return undefined;
  const device = report.device as { name?: unknown; arch?: unknown } | undefined;
  const model =
    typeof device?.name === 'string' && typeof device.arch === 'string'
      ? gpuClasses({ name: device.name, arch: device.arch })[0]
      : undefined;
  // The model that ran it, whatever class the job asked for: 'sm_90' or an operator's class may span models.
  const gpuClass = model;
  if (gpuClass === undefined || !GPU_CLASS_PATTERN.test(gpuClass) || gpuClass === 'any') return undefined;
  return {
    problem: record.job.problem,
    gpuClass,
    principal: record.principal,
    displayName: pseudonymOf(record.principal, key),
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
 * The board entry job `id`'s end (`outcome`, not stored yet) gives, or undefined: its record is read (its principal,
 * submission time, problem and options) only for a PASSED end whose report has a score. The store records it with
 * the end, in one transaction (JobStore.finish).
 */
export async function entryOfEnd(
  store: JobStore,
  id: string,
  outcome: Pick<FinishOutcome, 'status' | 'verdict' | 'report'>,
): Promise<LeaderboardEntry | undefined> {
  // A plain job's report (which may be several MB) is not read back, and its record only where it may score.
  if (outcome.verdict !== 'PASSED' || outcome.report?.includes('"scoreHigh"') !== true) return undefined;
  const record = await store.get(id);
  if (record === undefined) return undefined;
  const { status, verdict, report } = outcome;
  const entry = leaderboardEntryOf({ ...record, status, verdict, report }, await store.pseudonymKey());
  if (entry === undefined) return undefined;
  checkLeaderboardEntry(entry);
  return entry;
}

/** What a confirmation re-run did to the entry it re-checked. */
export type Confirmation =
  | { kind: 'confirmed'; jobId: string }
  /** It failed, or its interval lies apart from the entry's: the entry is (again) provisional. */
  | { kind: 'disagreed'; jobId: string; why: string }
  /** The entry is gone, or is another job's by now (a better result came): nothing to confirm. */
  | { kind: 'stale'; jobId: string };

/** Whether two scores agree: their intervals overlap. */
export function scoresAgree(a: { scoreLow: number; scoreHigh: number }, b: { scoreLow: number; scoreHigh: number }) {
  return a.scoreLow <= b.scoreHigh && b.scoreLow <= a.scoreHigh;
}

/**
 * Settles confirmation re-run `id` (a job whose options name the job it confirms), once its end is stored: the entry
 * of the job it confirms becomes 'confirmed' when the re-run PASSED with a score whose interval overlaps the entry's,
 * and 'provisional' otherwise. Resolves undefined for a job that is no re-run.
 */
export async function settleConfirmation(store: JobStore, id: string): Promise<Confirmation | undefined> {
  const rerun = await store.get(id);
  const confirms = rerun?.options.confirms;
  if (rerun === undefined || confirms === undefined || !isProblemJob(rerun.job)) return undefined;
  const { problem } = rerun.job;
  // A re-run is queued on the class of the board it confirms.
  const gpuClass = rerun.options.gpu;
  const entry = await store.leaderboardEntry(problem, gpuClass, rerun.principal);
  if (entry === undefined || entry.jobId !== confirms) return { kind: 'stale', jobId: confirms };
  const report = rerun.status === 'succeeded' && rerun.verdict === 'PASSED' ? scoredReportOf(rerun) : undefined;
  const score = report?.passed === true && positive(report.score) ? report.score : undefined;
  let why: string | undefined;
  if (score === undefined) {
    const code = rerun.error === undefined ? '' : ` (${rerun.error.code})`;
    why = `the re-run ended ${rerun.verdict ?? rerun.status}${code}`;
  } else {
    const low = positive(report!.scoreLow) ? report!.scoreLow : score;
    const high = positive(report!.scoreHigh) ? report!.scoreHigh : score;
    if (!scoresAgree({ scoreLow: low, scoreHigh: high }, entry)) {
      const theirs = `${entry.score} [${entry.scoreLow}, ${entry.scoreHigh}]`;
      why = `the re-run's score ${score} [${low}, ${high}] lies apart from ${theirs}`;
    }
  }
  const status = why === undefined ? 'confirmed' : 'provisional';
  const set = await store.setLeaderboardStatus(problem, gpuClass, rerun.principal, confirms, status);
  if (!set) return { kind: 'stale', jobId: confirms };
  return why === undefined ? { kind: 'confirmed', jobId: confirms } : { kind: 'disagreed', jobId: confirms, why };
}
