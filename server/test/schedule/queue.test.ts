// SPDX-License-Identifier: MIT
// The embedded queue: turns between principals (fair share), priority then age within a principal, a slot taking from
// the classes it serves with one turn per principal across them, positions under the turns, sizes per principal,
// expiry, removal, the rebuild from stored jobs, and a property test against a reference model.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EmbeddedQueue } from '../../src/schedule/embedded-queue.js';
import { type QueuedJob, queuedJobOf } from '../../src/schedule/queue.js';
import { jobRecord } from '../store/store.contract.js';

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
    // alice came first, so her turn comes first: her H200 jobs are 1st and 3rd, bob's between them.
    expect(records.slice(0, 3).map((r) => queue.position(r.id))).toEqual([1, 3, 2]);
    expect(drain(queue, H200_SLOT)).toEqual([records[3]!.id, records[2]!.id, records[0]!.id, records[1]!.id]);
  });
});

describe('EmbeddedQueue: fair share between principals', () => {
  /** `n` jobs of `principal`, named `<prefix><i>`, enqueued at ms `t0 + i`. */
  function jobsOf(principal: string, n: number, prefix: string, more: Partial<QueuedJob> = {}): QueuedJob[] {
    return Array.from({ length: n }, (_, i) => job(`${prefix}${i}`, { principal, enqueuedAtMs: i, ...more }));
  }

  it("takes turns: a principal with 32 jobs queued delays another's job by one, not 32", () => {
    const queue = queueOf(...jobsOf('alice', 32, 'a'));
    queue.enqueue(job('b0', { principal: 'bob', enqueuedAtMs: 100 }));
    expect(queue.position('b0')).toBe(2);
    expect(queue.position('a1')).toBe(3);
    expect(queue.position('a31')).toBe(33);
    expect(drain(queue, ['any']).slice(0, 4)).toEqual(['a0', 'b0', 'a1', 'a2']);
  });

  it('serves the principals in strict rotation, each joining at the back of it', () => {
    const queue = queueOf(...jobsOf('alice', 3, 'a'), ...jobsOf('bob', 2, 'b'));
    expect(queue.take(['any'])?.id).toBe('a0');
    queue.enqueue(job('c0', { principal: 'carol', enqueuedAtMs: 50 }));
    queue.enqueue(job('c1', { principal: 'carol', enqueuedAtMs: 51 }));
    // bob was waiting, alice was just served, carol arrived after that: bob, alice, carol, then round again.
    expect(drain(queue, ['any'])).toEqual(['b0', 'a1', 'c0', 'b1', 'a2', 'c1']);
  });

  it('orders by priority only within a principal: it never jumps another principal’s turn', () => {
    const queue = queueOf(
      job('a-old', { principal: 'alice', enqueuedAtMs: 0 }),
      job('a-low', { principal: 'alice', enqueuedAtMs: 1, priority: -5 }),
      job('b-urgent', { principal: 'bob', enqueuedAtMs: 2, priority: 10 }),
      job('b-plain', { principal: 'bob', enqueuedAtMs: 3 }),
      job('a-urgent', { principal: 'alice', enqueuedAtMs: 4, priority: 10 }),
    );
    expect(queue.position('b-urgent')).toBe(2);
    expect(queue.position('a-old')).toBe(3);
    expect(drain(queue, ['any'])).toEqual(['a-urgent', 'b-urgent', 'a-old', 'b-plain', 'a-low']);
  });

  it('gives a principal one turn across the classes a slot serves, not one per class', () => {
    // alice spreads her jobs over the three classes an H200 slot serves; bob has one class.
    const queue = queueOf(
      job('a-any', { principal: 'alice', gpu: 'any', enqueuedAtMs: 0 }),
      job('a-h200', { principal: 'alice', gpu: 'H200', enqueuedAtMs: 1 }),
      job('a-sm90', { principal: 'alice', gpu: 'sm_90', enqueuedAtMs: 2 }),
      ...jobsOf('bob', 3, 'b', { gpu: 'any', enqueuedAtMs: 10 }),
    );
    expect(drain(queue, H200_SLOT)).toEqual(['a-any', 'b0', 'a-h200', 'b1', 'a-sm90', 'b2']);
  });

  it('moves a principal served by one kind of slot to the back for every other slot too', () => {
    const queue = queueOf(
      job('a-any', { principal: 'alice', gpu: 'any' }),
      job('a-h200', { principal: 'alice', gpu: 'H200', enqueuedAtMs: 1 }),
      job('b-h200', { principal: 'bob', gpu: 'H200', enqueuedAtMs: 2 }),
    );
    expect(queue.take(H100_SLOT)?.id).toBe('a-any'); // an H100 slot took alice's turn
    expect(queue.take(H200_SLOT)?.id).toBe('b-h200'); // so bob's comes first on an H200
    expect(queue.take(H200_SLOT)?.id).toBe('a-h200');
  });

  it('keeps the rotation when jobs are removed or expire, and drops a principal left with none', () => {
    const queue = queueOf(
      ...jobsOf('alice', 2, 'a'),
      ...jobsOf('bob', 2, 'b', { expiresAtMs: 500 }),
      ...jobsOf('carol', 2, 'c'),
    );
    expect(queue.take(['any'])?.id).toBe('a0'); // turns now: bob, carol, alice
    expect(queue.remove('b0')).toBe(true); // bob keeps his turn with his next job
    expect(queue.position('b1')).toBe(1);
    expect(queue.position('a1')).toBe(3);
    expect(queue.expire(500).map((j) => j.id)).toEqual(['b1']); // bob has none left: out of the turns
    expect([queue.position('c0'), queue.position('a1'), queue.position('c1')]).toEqual([1, 2, 3]);
    queue.enqueue(job('b2', { principal: 'bob', enqueuedAtMs: 600 })); // back, at the back
    expect(queue.position('b2')).toBe(3);
    expect(drain(queue, ['any'])).toEqual(['c0', 'a1', 'b2', 'c1']);
  });

  it('gives a job handed back right after its take its place, and its principal its turn', () => {
    const queue = queueOf(...jobsOf('alice', 2, 'a'), ...jobsOf('bob', 2, 'b'), ...jobsOf('carol', 2, 'c'));
    const ids = ['a0', 'a1', 'b0', 'b1', 'c0', 'c1'];
    const before = ids.map((id) => queue.position(id));
    const taken = queue.take(['any'])!;
    expect(taken.id).toBe('a0');
    queue.enqueue(taken); // no slot after all
    expect(ids.map((id) => queue.position(id))).toEqual(before);
    // Handed back after another take, it is an arrival like any other: alice's turn is spent, carol's comes first.
    expect(queue.take(['any'])?.id).toBe('a0');
    expect(queue.take(['any'])?.id).toBe('b0');
    queue.enqueue(job('a0', { principal: 'alice' }));
    expect(drain(queue, ['any'])).toEqual(['c0', 'a0', 'b1', 'c1', 'a1']);
  });

  it('reports as position the place each job starts at when the queue drains', () => {
    const queue = queueOf(
      ...jobsOf('alice', 5, 'a'),
      ...jobsOf('bob', 2, 'b', { enqueuedAtMs: 1 }),
      job('b-urgent', { principal: 'bob', priority: 3, enqueuedAtMs: 9 }),
      ...jobsOf('carol', 1, 'c'),
      job('other-class', { principal: 'dave', gpu: 'H200' }),
    );
    queue.take(['any']); // alice served: her turn moves behind carol's
    const ids = [...'a1 a2 a3 a4 b0 b1 b-urgent c0'.split(' ')];
    const positions = new Map(ids.map((id) => [id, queue.position(id)]));
    const order = drain(queue, ['any']);
    expect(order).toEqual(['b-urgent', 'c0', 'a1', 'b0', 'a2', 'b1', 'a3', 'a4']);
    for (const [i, id] of order.entries()) expect(positions.get(id), id).toBe(i + 1);
    expect(queue.position('other-class')).toBe(1);
  });
});

describe('EmbeddedQueue against a reference model (fast-check)', () => {
  const CLASSES = ['any', 'H200', 'H100', 'sm_90'];
  const PRINCIPALS = ['alice', 'bob', 'carol'];
  type Op =
    | { op: 'enqueue'; priority: number; gpu: string; principal: string; enqueuedAtMs: number; ttlMs: number }
    | { op: 'take'; classes: string[] }
    | { op: 'takeAndHandBack'; classes: string[] }
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
    { weight: 1, arbitrary: fc.record({ op: fc.constant('takeAndHandBack' as const), classes: fc.subarray(CLASSES) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('expire' as const), nowMs: fc.integer({ min: 0, max: 40 }) }) },
  );

  /**
   * The model: every queued job with its arrival number, and each principal's turn, searched in full for each
   * answer; a position is found by draining a copy with slots of the job's class.
   */
  interface ModelEntry {
    job: QueuedJob;
    seq: number;
  }
  interface Model {
    entries: ModelEntry[];
    turns: Map<string, number>;
    nextTurn: number;
  }
  const runsBefore = (a: ModelEntry, b: ModelEntry): boolean =>
    a.job.priority !== b.job.priority
      ? a.job.priority > b.job.priority
      : a.job.enqueuedAtMs !== b.job.enqueuedAtMs
        ? a.job.enqueuedAtMs < b.job.enqueuedAtMs
        : a.seq < b.seq;
  const hasJobs = (m: Model, principal: string) => m.entries.some((e) => e.job.principal === principal);

  function modelEnqueue(m: Model, entry: ModelEntry): void {
    if (!hasJobs(m, entry.job.principal)) m.turns.set(entry.job.principal, m.nextTurn++);
    m.entries.push(entry);
  }

  function modelDrop(m: Model, dropped: (e: ModelEntry) => boolean): void {
    m.entries = m.entries.filter((e) => !dropped(e));
    for (const p of [...m.turns.keys()]) if (!hasJobs(m, p)) m.turns.delete(p);
  }

  function modelTake(m: Model, classes: readonly string[]): ModelEntry | undefined {
    const candidates = m.entries.filter((e) => classes.includes(e.job.gpu));
    if (candidates.length === 0) return undefined;
    const principal = candidates
      .map((e) => e.job.principal)
      .reduce((a, b) => (m.turns.get(a)! <= m.turns.get(b)! ? a : b));
    const best = candidates.filter((e) => e.job.principal === principal).reduce((b, e) => (runsBefore(b, e) ? b : e));
    modelDrop(m, (e) => e === best);
    if (hasJobs(m, principal)) m.turns.set(principal, m.nextTurn++);
    return best;
  }

  function modelPosition(m: Model, entry: ModelEntry): number {
    const copy: Model = { entries: [...m.entries], turns: new Map(m.turns), nextTurn: m.nextTurn };
    let position = 1;
    while (modelTake(copy, [entry.job.gpu]) !== entry) position++;
    return position;
  }

  it('takes, removes, expires, counts and positions as the model does', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const queue = new EmbeddedQueue();
        const model: Model = { entries: [], turns: new Map(), nextTurn: 0 };
        let seq = 0;
        const ever: string[] = [];
        for (const o of ops) {
          if (o.op === 'enqueue') {
            const { priority, gpu, principal, enqueuedAtMs, ttlMs } = o;
            const j = { id: `j${seq}`, principal, priority, gpu, enqueuedAtMs, expiresAtMs: enqueuedAtMs + ttlMs };
            queue.enqueue(j);
            modelEnqueue(model, { job: j, seq: seq++ });
            ever.push(j.id);
          } else if (o.op === 'take') {
            expect(queue.take(o.classes)?.id).toBe(modelTake(model, o.classes)?.job.id);
          } else if (o.op === 'takeAndHandBack') {
            // The model does nothing: a job handed back at once is as if never taken.
            const taken = queue.take(o.classes);
            if (taken !== undefined) queue.enqueue(taken);
          } else if (o.op === 'remove') {
            const id = ever.length === 0 ? 'none' : ever[o.pick % ever.length]!;
            expect(queue.remove(id)).toBe(model.entries.some((e) => e.job.id === id));
            modelDrop(model, (e) => e.job.id === id);
          } else {
            const expired = model.entries.filter((e) => e.job.expiresAtMs <= o.nowMs).map((e) => e.job.id);
            expect(new Set(queue.expire(o.nowMs).map((j) => j.id))).toEqual(new Set(expired));
            modelDrop(model, (e) => expired.includes(e.job.id));
          }
          expect(queue.size()).toBe(model.entries.length);
          for (const p of PRINCIPALS)
            expect(queue.size(p)).toBe(model.entries.filter((e) => e.job.principal === p).length);
          for (const gpu of CLASSES) {
            expect(queue.sizeByClass()[gpu] ?? 0).toBe(model.entries.filter((e) => e.job.gpu === gpu).length);
          }
          for (const e of model.entries) expect(queue.position(e.job.id), e.job.id).toBe(modelPosition(model, e));
        }
        // What is left comes out in the model's order too.
        const rest: string[] = [];
        for (let e = modelTake(model, CLASSES); e !== undefined; e = modelTake(model, CLASSES)) rest.push(e.job.id);
        expect(drain(queue, CLASSES)).toEqual(rest);
      }),
      { numRuns: 200 },
    );
  });
});
