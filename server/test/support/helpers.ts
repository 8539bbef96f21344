// SPDX-License-Identifier: MIT
// Shared by the service's tests: the job bodies, a service over a fake pool and the in-memory store, and the wait for a
// job's end.
import { EmbeddedQueue } from '../../src/schedule/embedded-queue.js';
import { EvalService, type ServiceConfig } from '../../src/service.js';
import { MemoryJobStore } from '../../src/store/memory.js';
import type { JobStore } from '../../src/store/store.js';
import { until } from '../../../test/support/until.js';
import { FakePool, fakeGpus, type FakeGpu } from './fake-pool.js';

// The job bodies are test/support/jobs.ts's; `body` is jobBody by the short name the service tests call it by.
export { evaluateBody, jobBody as body } from '../../../test/support/jobs.js';

export interface Setup {
  pool: FakePool;
  store: JobStore;
  queue: EmbeddedQueue;
  service: EvalService;
}

export async function setup(
  options: { gpus?: FakeGpu[]; store?: JobStore; unavailableReason?: string } & Partial<ServiceConfig> = {},
): Promise<Setup> {
  const pool = new FakePool(options.gpus ?? fakeGpus(1), options.unavailableReason);
  const store = options.store ?? new MemoryJobStore();
  const queue = new EmbeddedQueue();
  const service = new EvalService({
    expiryIntervalMs: 10,
    // Re-runs of leaderboard entries are queued when a test calls sweepConfirmations(), not on a timer.
    confirmIntervalMs: 3_600_000,
    progressIntervalMs: 0,
    ...options,
    store,
    submitQueue: queue,
    runQueue: queue,
    pool,
  });
  await service.start();
  return { pool, store, queue, service };
}

/** Resolves when the job is terminal, and returns its record. */
export async function settled(service: EvalService, id: string, timeoutMs = 5000) {
  await until(async () => ['succeeded', 'failed', 'cancelled'].includes((await service.get(id))?.status ?? ''), {
    timeoutMs,
    what: `${id} to end`,
  });
  return (await service.get(id))!;
}
