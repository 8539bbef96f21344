// SPDX-License-Identifier: MIT
// The distributed queue's fair share (cluster/fair.ts under cluster/queue.ts) on a real Redis: an API node's queue
// and agents' queues in this process, each with its own connections, as the processes of a deployment have. Turns
// between principals, priority only within one, one turn across a slot's classes, positions that match the order
// jobs are taken in, two agents taking at once (no job twice, no turn skipped), removal and expiry, a job put back,
// a job lost between the fair-share take and BullMQ, queued again by the reconciler, and a job being submitted, which
// the reconciler leaves to its submission.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { RedisClusterBus } from '../../src/cluster/bus.js';
import { RedisFairShare } from '../../src/cluster/fair.js';
import { AgentQueue, ApiQueue, queueName } from '../../src/cluster/queue.js';
import { queuedJobOf, type QueuedJob } from '../../src/schedule/queue.js';
import { MemoryJobStore } from '../../src/store/memory.js';
import { jobRecord } from '../store/store.contract.js';
import { describeWithServices, startRedis, type ServiceServer } from '../support/services.js';
import { Redis } from 'ioredis';

const H200_SLOT = ['H200', 'sm_90', 'any'];
const H100_SLOT = ['H100', 'sm_90', 'any'];
const LOCK_MS = 2000;

describeWithServices('distributed queue: fair share on Redis', ['redis'], () => {
  let redis: ServiceServer;
  const closers: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    redis = await startRedis();
  }, 60_000);
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  /** An API node's queue, and agents serving `slots` (one agent per entry), all under a fresh key prefix. */
  function deployment(slots: string[][] = [['any']], lockMs = LOCK_MS) {
    const prefix = `fair-${randomUUID().slice(0, 8)}`;
    const store = new MemoryJobStore();
    const bus = new RedisClusterBus(redis.url, prefix);
    const timing = { url: redis.url, prefix, lockMs, stalledIntervalMs: 1000, lostGraceMs: 2 * lockMs };
    const api = new ApiQueue({ ...timing, store, bus });
    const agents = slots.map((classes, i) => {
      const agent = new AgentQueue({ ...timing, agentId: `agent-${i}`, pollMs: 60_000 });
      agent.serve(classes);
      return agent;
    });
    closers.push(
      () => bus.close(),
      () => api.close(),
      ...agents.map((a) => () => a.close()),
    );
    return { prefix, store, api, agents };
  }

  let n = 0;
  function job(principal: string, more: Partial<QueuedJob> = {}): QueuedJob {
    n++;
    const id = `ev_${String(n).padStart(6, '0')}`;
    return { id, principal, priority: 0, gpu: 'any', enqueuedAtMs: 1000 + n, expiresAtMs: 1e13, ...more };
  }

  /**
   * A take that gets a job where one is queued: a take gives up after a few fetches that other agents' won, which in
   * a deployment the next wake-up makes good.
   */
  async function takeOne(agent: AgentQueue, classes: readonly string[]): Promise<QueuedJob | undefined> {
    for (let i = 0; i < 10; i++) {
      const j = await agent.take(classes);
      if (j !== undefined) return j;
    }
    return undefined;
  }

  /** Takes and settles jobs with `classes` until none is left; the ids in the order they were taken. */
  async function drain(agent: AgentQueue, classes: readonly string[]): Promise<string[]> {
    const ids: string[] = [];
    for (let j = await agent.take(classes); j !== undefined; j = await agent.take(classes)) {
      ids.push(j.id);
      await agent.settle(j.id);
    }
    return ids;
  }

  it("takes turns: a principal with 32 jobs queued delays another's job by one, not 32", async () => {
    const { api, agents } = deployment();
    const alice = Array.from({ length: 32 }, () => job('alice'));
    for (const j of alice) await api.enqueue(j);
    const bob = job('bob');
    expect(await api.arrivalPosition(bob)).toBe(2);
    await api.enqueue(bob);
    expect(await api.position(bob.id)).toBe(2);
    expect(await api.position(alice[1]!.id)).toBe(3);
    expect(await api.position(alice[31]!.id)).toBe(33);
    expect((await drain(agents[0]!, ['any'])).slice(0, 3)).toEqual([alice[0]!.id, bob.id, alice[1]!.id]);
  });

  it('orders by priority only within a principal, and one that returns joins at the back', async () => {
    const { api, agents } = deployment();
    const aOld = job('alice');
    const aUrgent = job('alice', { priority: 10 });
    const bUrgent = job('bob', { priority: 10 });
    const bPlain = job('bob');
    for (const j of [aOld, bUrgent, bPlain, aUrgent]) await api.enqueue(j);
    expect(await api.position(bUrgent.id)).toBe(2);
    expect(await api.position(aOld.id)).toBe(3);
    const agent = agents[0]!;
    const first = (await agent.take(['any']))!;
    expect(first.id).toBe(aUrgent.id);
    await agent.settle(first.id);
    // carol arrives after alice was served: behind her in the turns.
    const carol = job('carol');
    await api.enqueue(carol);
    expect(await api.position(carol.id)).toBe(3);
    expect(await drain(agent, ['any'])).toEqual([bUrgent.id, aOld.id, carol.id, bPlain.id]);
  });

  it("gives a principal one turn across a slot's classes, and one turn on every kind of slot", async () => {
    const { api, agents } = deployment([H200_SLOT, H100_SLOT]);
    const [h200, h100] = agents as [AgentQueue, AgentQueue];
    const spread = [job('alice'), job('alice', { gpu: 'H200' }), job('alice', { gpu: 'sm_90' })];
    const bob = [job('bob'), job('bob'), job('bob')];
    for (const j of [...spread, ...bob]) await api.enqueue(j);
    expect(await drain(h200, H200_SLOT)).toEqual(
      [spread[0], bob[0], spread[1], bob[1], spread[2], bob[2]].map((j) => j!.id),
    );

    const aAny = job('alice');
    const aH200 = job('alice', { gpu: 'H200' });
    const bH200 = job('bob', { gpu: 'H200' });
    for (const j of [aAny, aH200, bH200]) await api.enqueue(j);
    expect((await h100.take(H100_SLOT))?.id).toBe(aAny.id); // alice's turn, spent on an H100
    expect((await h200.take(H200_SLOT))?.id).toBe(bH200.id); // so bob's comes first on an H200
    expect((await h200.take(H200_SLOT))?.id).toBe(aH200.id);
  });

  it('reports as position the place each job is taken at, and sizes per class', async () => {
    const { api, agents } = deployment([H200_SLOT]);
    const jobs = [
      ...Array.from({ length: 5 }, () => job('alice')),
      job('bob'),
      job('bob'),
      job('bob', { priority: 3 }),
      job('carol'),
    ];
    const other = job('dave', { gpu: 'H200' });
    for (const j of [...jobs, other]) await api.enqueue(j);
    expect(await agents[0]!.sizeByClass()).toEqual({ any: 9, H200: 1 });
    const positions = new Map<string, number | undefined>();
    for (const j of jobs) positions.set(j.id, await api.position(j.id));
    expect(await api.position(other.id)).toBe(1);
    const order = await drain(agents[0]!, ['any']);
    const [a0, a1, a2, a3, a4, b0, b1, bUrgent, c0] = jobs.map((j) => j.id);
    expect(order).toEqual([a0, bUrgent, c0, a1, b0, a2, b1, a3, a4]);
    for (const [i, id] of order.entries()) expect(positions.get(id), id).toBe(i + 1);
    expect(await api.position(jobs[0]!.id)).toBeUndefined();
    expect(await agents[0]!.sizeByClass()).toEqual({ H200: 1 });
  });

  it('two agents taking at once never take a job twice, and keep the turns', async () => {
    const { api, agents } = deployment([['any'], ['any']]);
    const principals = ['alice', 'bob', 'carol'];
    for (const p of principals) for (let i = 0; i < 8; i++) await api.enqueue(job(p));
    const taken: QueuedJob[] = [];
    for (let round = 0; round < 4; round++) {
      // Six takes at once, three per agent: six consecutive turns, two per principal however they interleave.
      const batch = await Promise.all(Array.from({ length: 6 }, (_, i) => takeOne(agents[i % 2]!, ['any'])));
      expect(batch.every((j) => j !== undefined)).toBe(true);
      const perPrincipal = principals.map((p) => batch.filter((j) => j!.principal === p).length);
      expect(perPrincipal, `round ${round}`).toEqual([2, 2, 2]);
      for (const [i, j] of batch.entries()) await agents[i % 2]!.settle(j!.id);
      taken.push(...(batch as QueuedJob[]));
    }
    expect(new Set(taken.map((j) => j.id)).size).toBe(24);
    expect(await agents[0]!.take(['any'])).toBeUndefined();
    expect(await agents[0]!.sizeByClass()).toEqual({});
  });

  it('keeps the turns when jobs are removed or expire, and a job put back is taken next', async () => {
    const { api, agents, store } = deployment();
    const agent = agents[0]!;
    // bob's second job may queue 5 s, the others 100 s.
    const rows = ['alice', 'alice', 'bob', 'bob', 'carol', 'carol'].map((principal, i) =>
      jobRecord({
        principal,
        createdAt: 1000 + i,
        options: { ...jobRecord().options, maxQueueSeconds: i === 3 ? 5 : 100 },
      }),
    );
    for (const r of rows) await store.insert(r);
    const [a0, a1, b0, b1, c0, c1] = rows.map((r) => r.id);
    for (const r of rows) await api.enqueue({ ...job(r.principal), id: r.id, enqueuedAtMs: r.createdAt });
    expect((await agent.take(['any']))?.id).toBe(a0); // turns now: bob, carol, alice
    await store.markRunning(a0!, 'GPU-0', 1500);
    expect(await api.remove(b0!)).toBe(true);
    expect(await api.remove(a0!)).toBe(false); // an agent holds it
    expect(await api.position(b1!)).toBe(1);
    expect(await api.position(a1!)).toBe(3);
    // bob's last job expires: bob leaves the turns, carol's and alice's keep their order.
    const cancelled = {
      status: 'cancelled',
      verdict: undefined,
      phase: undefined,
      report: undefined,
      error: undefined,
    };
    await store.finish(b0!, { ...cancelled, status: 'cancelled', atMs: 1600 });
    const expired = await api.expire(1003 + 5000);
    expect(expired.map((j) => j.id)).toEqual([b1]);
    expect([await api.position(c0!), await api.position(a1!), await api.position(c1!)]).toEqual([1, 2, 3]);
    // A job an agent took but could not start goes back to BullMQ, and is taken before any other.
    const c0Job = (await agent.take(['any']))!;
    expect(c0Job.id).toBe(c0);
    await agent.putBack(c0Job);
    expect((await agent.take(['any']))?.id).toBe(c0);
    await agent.settle(c0!);
    expect(await drain(agent, ['any'])).toEqual([a1, c1]);
  });

  it('queues again a job whose agent died between the fair-share take and BullMQ', async () => {
    const lockMs = 60_000;
    const { api, agents, store, prefix } = deployment([['any']], lockMs);
    // Stored a lock ago: no submission of its own is on its way to the queue any more.
    const row = jobRecord({ principal: 'alice', createdAt: Date.now() - lockMs });
    await store.insert(row);
    await api.enqueue({ ...job('alice'), id: row.id, enqueuedAtMs: row.createdAt });
    // The dead agent: a take of its own, never added to BullMQ.
    const connection = new Redis(redis.url);
    closers.push(async () => connection.disconnect());
    const dead = new RedisFairShare(connection, prefix, `${prefix}:${queueName('')}`);
    expect((await dead.take(['any']))?.kind).toBe('fair');
    expect(await api.position(row.id)).toBeUndefined();
    // Within a lock it may still be on its way to BullMQ: left alone.
    await api.expire(Date.now());
    expect(await api.position(row.id)).toBeUndefined();
    expect(await agents[0]!.take(['any'])).toBeUndefined();
    // A lock later (its release dated back by Redis's clock, as the reconciler reads it): queued again.
    const [seconds] = await connection.time();
    await connection.zadd(dead.keys.leaving, Number(seconds) * 1000 - lockMs - 1000, row.id);
    await api.expire(Date.now());
    expect(await api.position(row.id)).toBe(1);
    expect((await agents[0]!.take(['any']))?.id).toBe(row.id);
  });

  it('leaves a job being submitted to its submission: its arrival position never counts itself', async () => {
    const { api, store } = deployment();
    // A submission stores its row, reads its arrival position for its 'queued' event, then queues it; the
    // reconciler's pass comes in between.
    const row = jobRecord({ principal: 'alice', createdAt: Date.now() });
    await store.insert(row);
    await api.expire(Date.now());
    expect(await api.position(row.id)).toBeUndefined();
    expect(await api.arrivalPosition(queuedJobOf(row))).toBe(1);
    await api.enqueue(queuedJobOf(row));
    expect(await api.position(row.id)).toBe(1);

    // One whose API node died before it queued it is lost: queued again a lock after it was stored, behind the first.
    const orphan = jobRecord({ principal: 'alice', createdAt: row.createdAt + 1 });
    await store.insert(orphan);
    await api.expire(orphan.createdAt + LOCK_MS - 1);
    expect(await api.position(orphan.id)).toBeUndefined();
    await api.expire(orphan.createdAt + LOCK_MS);
    expect(await api.position(orphan.id)).toBe(2);
  });
});
