// SPDX-License-Identifier: MIT
// Confirmation re-runs of leaderboard entries, the submitting side's half (schedule/leaderboard.ts settles them when
// they end). An entry is provisional until its job, run again, agrees with it: a sweep queues one re-run per
// provisional entry whose job is still stored, on the class of its board, and an admin's re-verify queues another at
// any time. A re-run is the same job under the same principal (it sees what the principal's own jobs show, and no
// more), marked in its options as the re-run of that job; it waits in the queue as long as a job may (a busy queue
// delays a confirmation, it does not lose it) and is queued whatever the principal's queue cap (it counts among the
// principal's queued jobs while it waits).
//
// Which re-runs exist is read from the store, so the sweep needs no state of its own and survives restarts: a re-run
// carries an idempotency key with a space in it, which no client's Idempotency-Key header can hold.
import type { GpuPool } from '../run/pool.js';
import type { LeaderboardEntry } from '../store/leaderboard.js';
import { newJobId } from '../store/ids.js';
import { type JobRecord, type JobStore, queuedRecord } from '../store/store.js';
import { MAX_QUEUE_SECONDS } from './fields.js';
import { hashOf } from './idempotency.js';

/** The key of the sweep's one re-run of job `jobId`. */
export const confirmKeyOf = (jobId: string): string => `confirm ${jobId}`;
/** The key of an admin's re-verify of job `jobId` at `nowMs`. */
export const reverifyKeyOf = (jobId: string, nowMs: number): string => `reverify ${jobId} ${nowMs}`;

/** The most re-runs one sweep queues: a burst of new entries is confirmed over several sweeps. */
export const CONFIRMATIONS_PER_SWEEP = 8;

/** A re-run of `original` on `gpuClass` (the class of the board its entry is on), queued now, under `key`. */
export function rerunRecordOf(original: JobRecord, gpuClass: string, key: string, nowMs: number): JobRecord {
  const rerunOptions = {
    ...original.options,
    gpu: gpuClass,
    maxQueueSeconds: MAX_QUEUE_SECONDS.max,
    confirms: original.id,
  };
  return queuedRecord({
    id: newJobId(nowMs),
    principal: original.principal,
    job: original.job,
    options: rerunOptions,
    idempotencyKey: key,
    bodyHash: hashOf({ job: original.job, options: rerunOptions }),
    createdAt: nowMs,
  });
}

/** The classes of the boards to look at: every class a GPU here gives, 'any' aside. */
export function boardClassesOf(pool: GpuPool): string[] {
  return [...new Set(pool.slots().flatMap((s) => s.classes))].filter((c) => c !== 'any').sort();
}

/** The entries of one board, best first, page by page. */
async function* boardEntries(store: JobStore, problem: string, gpuClass: string): AsyncGenerator<LeaderboardEntry> {
  let offset: number | undefined = 0;
  while (offset !== undefined) {
    const page: Awaited<ReturnType<JobStore['leaderboard']>> = await store.leaderboard({
      problem,
      gpuClass,
      limit: 100,
      offset,
    });
    yield* page.entries;
    offset = page.next;
  }
}

/** Every provisional entry on the boards of `problems` × `classes`, best first within a board. */
export async function provisionalEntries(
  store: JobStore,
  problems: readonly string[],
  classes: readonly string[],
): Promise<LeaderboardEntry[]> {
  const found: LeaderboardEntry[] = [];
  for (const problem of problems) {
    for (const gpuClass of classes) {
      for await (const e of boardEntries(store, problem, gpuClass)) if (e.status === 'provisional') found.push(e);
    }
  }
  return found;
}

/** An entry on a board, named by its principal or by the name it shows (a principal first, as a remove does). */
export async function findEntry(
  store: JobStore,
  problem: string,
  gpuClass: string,
  who: string,
): Promise<LeaderboardEntry | undefined> {
  const own = await store.leaderboardEntry(problem, gpuClass, who);
  if (own !== undefined) return own;
  for await (const e of boardEntries(store, problem, gpuClass)) if (e.displayName === who) return e;
  return undefined;
}
