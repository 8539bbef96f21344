// SPDX-License-Identifier: MIT
// The embedded queue: priority then FIFO, a slot taking from the classes it serves, positions counted within a class,
// sizes per principal, expiry, removal, the rebuild from stored jobs, and a property test against a reference model.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EmbeddedQueue } from '../../server/src/queue/embedded.js';
import { type QueuedJob, queuedJobOf } from '../../server/src/queue/queue.js';
import { jobRecord } from './store.contract.js';

const H200_SLOT = ['H200', 'sm_90', 'any'];
const H100_SLOT = ['H100', 'sm_90', 'any'];

function job(id: string, more: Partial<QueuedJob> = {}): QueuedJob {
  return { id, principal: 'alice', priority: 0, gpu: 'any', enqueuedAtMs: 0, expiresAtMs: 1e12, ...more };
}

function queueOf(...jobs: QueuedJob[]): EmbeddedQueue {
  const queue = new EmbeddedQueue();
  for (const j of jobs) queue.enqueue(j);
  return queue;
}

function drain(queue: EmbeddedQueue, classes: readonly string[]): string[] {
  const ids: string[] = [];
  for (let j = queue.take(classes); j !== undefined; j = queue.take(classes)) ids.push(j.id);
  return ids;
}

describe('EmbeddedQueue', () => {
  it('takes the highest priority first, then the oldest, then the first to arrive', () => {
    const queue = queueOf(
      job('a', { priority: 0, enqueuedAtMs: 10 }),
      job('b', { priority: 1, enqueuedAtMs: 20 }),
      job('c', { priority: 0, enqueuedAtMs: 5 }),
      job('d', { priority: 1, enqueuedAtMs: 20 }),
      job('e', { priority: -1, enqueuedAtMs: 0 }),
      job('f', { priority: 0, enqueuedAtMs: 10 }),
    );
    expect(drain(queue, ['any'])).toEqual(['b', 'd', 'c', 'a', 'f', 'e']);
    expect(queue.take(['any'])).toBeUndefined();
  });

  it('gives a slot only the jobs of the classes it serves, the best of them first', () => {
    const queue = queueOf(
      job('h100', { gpu: 'H100', priority: 5 }),
      job('any', { gpu: 'any', enqueuedAtMs: 3 }),
      job('sm90', { gpu: 'sm_90', enqueuedAtMs: 2 }),
      job('h200', { gpu: 'H200', enqueuedAtMs: 4 }),
      job('h200-urgent', { gpu: 'H200', priority: 1, enqueuedAtMs: 9 }),
      job('b200', { gpu: 'B200', priority: 9 }),
    );
    expect(queue.take(H200_SLOT)?.id).toBe('h200-urgent');
    expect(queue.take(H200_SLOT)?.id).toBe('sm90');
    expect(queue.take(H100_SLOT)?.id).toBe('h100');
    expect(drain(queue, H100_SLOT)).toEqual(['any']);
    expect(drain(queue, H200_SLOT)).toEqual(['h200']);
    expect(queue.size()).toBe(1); // B200: no slot here serves it
    expect(queue.take([])).toBeUndefined();
  });

  it('counts a position among the jobs of the same class that run before it', () => {
    const queue = queueOf(
      job('a', { gpu: 'H200', enqueuedAtMs: 1 }),
      job('x', { gpu: 'any', enqueuedAtMs: 0, priority: 9 }), // another class: not ahead of H200 jobs
      job('b', { gpu: 'H200', enqueuedAtMs: 2 }),
      job('c', { gpu: 'H200', enqueuedAtMs: 3 }),
    );
    expect(['a', 'b', 'c', 'x'].map((id) => queue.position(id))).toEqual([1, 2, 3, 1]);
    queue.enqueue(job('urgent', { gpu: 'H200', enqueuedAtMs: 4, priority: 1 }));
    expect(['urgent', 'a', 'b', 'c'].map((id) => queue.position(id))).toEqual([1, 2, 3, 4]);
    queue.remove('a');
    expect(queue.take(['H200'])?.id).toBe('urgent');
    expect(['b', 'c'].map((id) => queue.position(id))).toEqual([1, 2]);
    expect(queue.position('a')).toBeUndefined();
    expect(queue.position('nope')).toBeUndefined();
  });

  it('sizes the queue in all, per principal and per class', () => {
    const queue = queueOf(
      job('a1', { principal: 'alice' }),
      job('a2', { principal: 'alice', gpu: 'H200' }),
      job('b1', { principal: 'bob', gpu: 'H200' }),
    );
    expect([queue.size(), queue.size('alice'), queue.size('bob'), queue.size('carol')]).toEqual([3, 2, 1, 0]);
    expect(queue.sizeByClass()).toEqual({ any: 1, H200: 2 });
    queue.take(['H200']);
    queue.remove('b1');
    expect([queue.size(), queue.size('alice'), queue.size('bob')]).toEqual([1, 1, 0]);
    expect(queue.sizeByClass()).toEqual({ any: 1 });
  });

  it('expires the jobs whose deadline has come, the first to expire first, and keeps the rest', () => {
    const queue = queueOf(
      job('late', { expiresAtMs: 300 }),
      job('b', { expiresAtMs: 200, gpu: 'H200' }),
      job('a', { expiresAtMs: 100, principal: 'bob' }),
      job('edge', { expiresAtMs: 250 }),
    );
    expect(queue.expire(99)).toEqual([]);
    expect(queue.expire(250).map((j) => j.id)).toEqual(['a', 'b', 'edge']);
    expect(queue.size()).toBe(1);
    expect(queue.size('bob')).toBe(0);
    expect(queue.position('b')).toBeUndefined();
    expect(drain(queue, H200_SLOT)).toEqual(['late']);
  });

  it('removes a queued job once, and never hands it out', () => {
    const queue = queueOf(job('a'), job('b', { enqueuedAtMs: 1 }));
    expect(queue.remove('a')).toBe(true);
    expect(queue.remove('a')).toBe(false);
    expect(queue.remove('nope')).toBe(false);
    expect(drain(queue, ['any'])).toEqual(['b']);
    expect(queue.remove('b')).toBe(false); // taken: no longer queued
  });

  it('keeps its own copy of a job, and hands out copies', () => {
    const mine = job('a', { priority: 1 });
    const queue = queueOf(mine, job('b', { enqueuedAtMs: 1 }));
    mine.priority = -5;
    mine.gpu = 'H200';
    const taken = queue.take(['any'])!;
    expect(taken).toEqual(job('a', { priority: 1 }));
    expect(taken).not.toBe(mine);
  });

  it('refuses a job queued twice and a job it cannot order', () => {
    const queue = queueOf(job('a'));
    expect(() => queue.enqueue(job('a', { gpu: 'H200' }))).toThrow("Cannot enqueue job 'a': it is already queued");
    expect(() => queue.enqueue(job('b', { priority: Number.NaN }))).toThrow(
      new RangeError('Expected a finite number for job.priority of b but received NaN'),
    );
    expect(() => queue.enqueue(job('c', { gpu: '' }))).toThrow(TypeError);
    expect(() => queue.enqueue(job(''))).toThrow(TypeError);
    expect(queue.size()).toBe(1);
  });

  it('is rebuilt from the store’s queued jobs in their order, with their deadlines', () => {
    const t0 = Date.UTC(2026, 0, 1);
    const options = { timeoutSeconds: 60, maxQueueSeconds: 30, priority: 0, gpu: 'H200', deviceMetrics: false };
    const records = [0, 0, 1].map((dt, i) =>
      jobRecord({ createdAt: t0 + dt, principal: i === 2 ? 'bob' : 'alice', options }),
    );
    records.push(jobRecord({ createdAt: t0 + 2, options: { ...options, priority: 2, gpu: 'sm_90' } }));
    expect(queuedJobOf(records[0]!)).toStrictEqual({
      id: records[0]!.id,
      principal: 'alice',
      priority: 0,
      gpu: 'H200',
      enqueuedAtMs: t0,
      expiresAtMs: t0 + 30_000,
    });
    const queue = EmbeddedQueue.rebuild(records);
    expect(queue.size('alice')).toBe(3);
    expect(queue.position(records[1]!.id)).toBe(2);
    expect(drain(queue, H200_SLOT)).toEqual([records[3]!.id, records[0]!.id, records[1]!.id, records[2]!.id]);
  });
});

describe('EmbeddedQueue against a reference model (fast-check)', () => {
  const CLASSES = ['any', 'H200', 'H100', 'sm_90'];
  const PRINCIPALS = ['alice', 'bob'];
  type Op =
    | { op: 'enqueue'; priority: number; gpu: string; principal: string; enqueuedAtMs: number; ttlMs: number }
    | { op: 'take'; classes: string[] }
    | { op: 'remove'; pick: number }
    | { op: 'expire'; nowMs: number };

  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('enqueue' as const),
        priority: fc.integer({ min: -1, max: 2 }),
        gpu: fc.constantFrom(...CLASSES),
        principal: fc.constantFrom(...PRINCIPALS),
        enqueuedAtMs: fc.integer({ min: 0, max: 5 }), // few values: many ties for the arrival order to break
        ttlMs: fc.integer({ min: 0, max: 30 }),
      }),
    },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('take' as const), classes: fc.subarray(CLASSES) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('expire' as const), nowMs: fc.integer({ min: 0, max: 40 }) }) },
  );

  /** The model: every queued job with its arrival number, searched in full for each answer. */
  interface ModelEntry {
    job: QueuedJob;
    seq: number;
  }
  const runsBefore = (a: ModelEntry, b: ModelEntry): boolean =>
    a.job.priority !== b.job.priority
      ? a.job.priority > b.job.priority
      : a.job.enqueuedAtMs !== b.job.enqueuedAtMs
        ? a.job.enqueuedAtMs < b.job.enqueuedAtMs
        : a.seq < b.seq;

  it('takes, removes, expires, counts and positions as the model does', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const queue = new EmbeddedQueue();
        let model: ModelEntry[] = [];
        let seq = 0;
        const ever: string[] = [];
        for (const o of ops) {
          if (o.op === 'enqueue') {
            const { priority, gpu, principal, enqueuedAtMs, ttlMs } = o;
            const j = { id: `j${seq}`, principal, priority, gpu, enqueuedAtMs, expiresAtMs: enqueuedAtMs + ttlMs };
            queue.enqueue(j);
            model.push({ job: j, seq: seq++ });
            ever.push(j.id);
          } else if (o.op === 'take') {
            const candidates = model.filter((e) => o.classes.includes(e.job.gpu));
            const best = candidates.reduce<ModelEntry | undefined>(
              (b, e) => (b && runsBefore(b, e) ? b : e),
              undefined,
            );
            expect(queue.take(o.classes)?.id).toBe(best?.job.id);
            model = model.filter((e) => e !== best);
          } else if (o.op === 'remove') {
            const id = ever.length === 0 ? 'none' : ever[o.pick % ever.length]!;
            expect(queue.remove(id)).toBe(model.some((e) => e.job.id === id));
            model = model.filter((e) => e.job.id !== id);
          } else {
            const expired = model.filter((e) => e.job.expiresAtMs <= o.nowMs);
            expect(new Set(queue.expire(o.nowMs).map((j) => j.id))).toEqual(new Set(expired.map((e) => e.job.id)));
            model = model.filter((e) => !expired.includes(e));
          }
          expect(queue.size()).toBe(model.length);
          for (const p of PRINCIPALS) expect(queue.size(p)).toBe(model.filter((e) => e.job.principal === p).length);
          for (const e of model) {
            const ahead = model.filter((x) => x.job.gpu === e.job.gpu && runsBefore(x, e)).length;
            expect(queue.position(e.job.id)).toBe(ahead + 1);
          }
        }
        // What is left comes out in the model's order too.
        const rest = [...model].sort((a, b) => (runsBefore(a, b) ? -1 : 1)).map((e) => e.job.id);
        expect(drain(queue, CLASSES)).toEqual(rest);
      }),
      { numRuns: 200 },
    );
  });
});
