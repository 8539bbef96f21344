// SPDX-License-Identifier: MIT
// Shared by the service's tests: a valid request body, a service over a fake pool and the in-memory store, and the
// wait for a job's end.
import { EmbeddedQueue } from '../../server/src/queue/embedded.js';
import { EvalService, type ServiceConfig } from '../../server/src/service.js';
import { MemoryJobStore } from '../../server/src/store/memory.js';
import type { JobStore } from '../../server/src/store/store.js';
import { until } from '../support/until.js';
import { FakePool, fakeGpus, type FakeGpu } from './fake-pool.js';

/** A request body that validateJob accepts; `name` picks the fake pool's behaviour. */
export function body(name = 'pass', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    source: 'extern "C" __global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }',
    kernel: 'k',
    grid: 1,
    block: 32,
    args: ['ptr:f32[32]:out', 'i32=32'],
    ...extra,
  };
}

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
  const service = new EvalService({ expiryIntervalMs: 10, progressIntervalMs: 0, ...options, store, queue, pool });
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

/** A small valid body of the compatible POST /evaluate: y = 1 over 32 floats; `kernel` replaces its fields. */
export function evaluateBody(extra: Record<string, unknown> = {}, kernel: Record<string, unknown> = {}) {
  return {
    kernel: {
      source_code: '__global__ void fill(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }',
      kernel_type: 'cuda',
      io: {
        args: [
          { name: 'y', type: 'tensor', role: 'output', tensor_spec: { shape: [32], dtype: 'float32' } },
          { name: 'n', type: 'int', value: 32 },
        ],
        launch: { grid: { x: 1 }, block: { x: 32 } },
      },
      metadata: { kernel_name: 'fill' },
      ...kernel,
    },
    ...extra,
  };
}
