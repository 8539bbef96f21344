// SPDX-License-Identifier: MIT
// The queue between the API and the GPU slots: a priority FIFO per GPU class. The embedded mode keeps it in memory
// and rebuilds it from the store's queued rows at start (queue/embedded.ts); the distributed mode is BullMQ.
import type { JobRecord } from '../store/store.js';

export interface QueuedJob {
  id: string;
  principal: string;
  priority: number;
  /** 'any' or a class ('H200', 'sm_90'). */
  gpu: string;
  enqueuedAtMs: number;
  /** When it fails with QUEUE_TIMEOUT if still queued. */
  expiresAtMs: number;
}

export interface JobQueue {
  enqueue(job: QueuedJob): void;
  /** The next job a slot of these classes may run (highest priority, then oldest), removed from the queue. */
  take(classes: readonly string[]): QueuedJob | undefined;
  /** Removes a queued job (cancelled); false when it was not queued. */
  remove(id: string): boolean;
  /** 1-based position among the jobs a slot of its class would take before it, or undefined when not queued. */
  position(id: string): number | undefined;
  /** Jobs queued, in all, and per principal (admission limits). */
  size(principal?: string): number;
  /** Removes and returns the jobs whose expiresAtMs has passed. */
  expire(nowMs: number): QueuedJob[];
}

/**
 * A stored job as the queue sees it: enqueued at its creation, so a queue rebuilt from the store at start keeps each
 * job's place in its FIFO and its QUEUE_TIMEOUT deadline (the time the server was down counts as time queued).
 */
export function queuedJobOf(record: JobRecord): QueuedJob {
  return {
    id: record.id,
    principal: record.principal,
    priority: record.options.priority,
    gpu: record.options.gpu,
    enqueuedAtMs: record.createdAt,
    expiresAtMs: record.createdAt + record.options.maxQueueSeconds * 1000,
  };
}
