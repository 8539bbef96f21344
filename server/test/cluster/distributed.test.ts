// SPDX-License-Identifier: MIT
// The distributed mode, as separate processes on loopback: two API nodes and two GPU agents (4 fake GPUs each) on a
// real Redis and PostgreSQL. What each fault must cost: an agent SIGKILLed mid-job costs one redelivery and one
// result; a job that kills every agent it touches fails after one redelivery; Redis SIGKILLed and restarted loses no
// accepted job; PostgreSQL down is a 503 with Retry-After, not a 500. Lock times are 2 s here (30 s by default).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tokenDigest } from '../../src/http/auth.js';
import { jobBody } from '../../../test/support/jobs.js';
import {
  Cluster,
  eventsOf,
  finished,
  getJson,
  sendJson,
  type ClusterNode,
  type Evaluation,
} from '../support/cluster-harness.js';
import { describeWithServices, startPostgres, startRedis, type ServiceServer } from '../support/services.js';

describeWithServices('distributed mode', ['redis', 'postgres'], () => {
  let redis: ServiceServer;
  let postgres: ServiceServer;
  const clusters: Cluster[] = [];

  beforeAll(async () => {
    [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
  }, 60_000);
  afterAll(async () => {
    for (const c of clusters) await c.stop();
    await Promise.all([redis?.stop(), postgres?.stop()]);
  });

  async function cluster(): Promise<Cluster> {
    const c = await Cluster.create({ redisUrl: redis.url, postgresUrl: postgres.url });
    clusters.push(c);
    return c;
  }

  async function submit(api: ClusterNode, name: string, extra: Record<string, unknown> = {}): Promise<string> {
    const r = await sendJson(api, 'POST', '/v1/evaluations', jobBody(name, extra));
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    return (r.body as { id: string }).id;
  }

  /** The agent whose fake GPUs' UUIDs carry its host prefix. */
  function agentOf(agents: ClusterNode[], gpuUuid: string | undefined): ClusterNode | undefined {
    return agents.find((a) => gpuUuid?.startsWith(`GPU-${a.fakeHost}`) === true);
  }

  async function running(api: ClusterNode, id: string): Promise<Evaluation> {
    let job: Evaluation | undefined;
    await expect
      .poll(
        async () => {
          job = (await getJson(api, `/v1/evaluations/${id}`)).body as Evaluation;
          return job.status;
        },
        { timeout: 20_000, interval: 100 },
      )
      .toBe('running');
    return job!;
  }

  it('2 API nodes, 2 agents: a job sent to node 1 runs on an agent; read, streamed, cancelled on node 2', async () => {
    const c = await cluster();
    const [api1, api2] = await Promise.all([c.start('api'), c.start('api')]);
    const agents = await Promise.all([c.start('agent', { fakeHost: 'a001' }), c.start('agent', { fakeHost: 'a002' })]);
    await c.gpusSeen(api1, 8);
    await c.gpusSeen(api2, 8);

    const gpus = (await getJson(api2, '/v1/gpus')).body as { gpus: Array<{ uuid: string; classes: string[] }> };
    expect(new Set(gpus.gpus.map((g) => g.uuid)).size).toBe(8);
    expect(gpus.gpus.every((g) => g.classes.includes('H200') && g.classes.includes('any'))).toBe(true);

    const id = await submit(api1, 'fake:pass:200ms');
    const job = await finished(api2, id);
    expect(job).toMatchObject({ status: 'succeeded', verdict: 'PASSED' });
    const events = await eventsOf(api2, id);
    expect(events.map((e) => e.type).filter((t) => t !== 'phase' && t !== 'progress')).toEqual([
      'queued',
      'started',
      'done',
    ]);

    // Every role is ready and has its metrics: the agent that ran the job counts it, an API node its queues.
    for (const node of [api1, api2, ...agents]) expect((await getJson(node, '/readyz')).status).toBe(200);
    const scrape = async (node: ClusterNode) => (await fetch(`${node.url}/metrics`)).text();
    const agentMetrics = (await Promise.all(agents.map(scrape))).join('\n');
    expect(agentMetrics).toMatch(/cudakit_evaluations_total\{status="succeeded",verdict="PASSED",gpu_class="any"\} 1/);
    expect(agentMetrics).toMatch(/cudakit_phase_duration_seconds_count\{phase="time"\} 1/);
    expect(await scrape(api1)).toMatch(
      /cudakit_http_request_duration_seconds_count\{method="POST",route="\/v1\/evaluations"/,
    );
    // An agent's port serves operations only: nothing there takes a job.
    expect((await sendJson(agents[0]!, 'POST', '/v1/evaluations', jobBody('fake:pass'))).status).toBe(404);

    // A class no agent serves is refused on the spot, as in the embedded mode.
    const unknown = await sendJson(api2, 'POST', '/v1/evaluations', jobBody('fake:pass', { gpu: 'B200' }));
    expect(unknown.status).toBe(400);
    expect((unknown.body as { code: string }).code).toBe('UNKNOWN_GPU_CLASS');

    // Cancel through the other node: the agent holding the job kills its child.
    const hanging = await submit(api1, 'fake:hang:time');
    await running(api2, hanging);
    const cancel = await sendJson(api2, 'DELETE', `/v1/evaluations/${hanging}`);
    expect(cancel.status).toBeLessThan(300);
    expect(await finished(api1, hanging)).toMatchObject({ status: 'cancelled' });

    // A queued job cancelled before any agent took it: 8 hanging jobs fill the GPUs first.
    const blockers = await Promise.all(Array.from({ length: 8 }, () => submit(api1, 'fake:hang:time')));
    for (const b of blockers) await running(api1, b);
    const queued = await submit(api2, 'fake:pass');
    expect(
      ((await getJson(api1, `/v1/evaluations/${queued}`)).body as { queue: { position: number } }).queue.position,
    ).toBe(1);
    await sendJson(api1, 'DELETE', `/v1/evaluations/${queued}`);
    expect(await finished(api2, queued)).toMatchObject({ status: 'cancelled' });
    // Its 'queued' event, stored before the job entered the queue, says where it arrived: first in line.
    const queuedEvents = (await eventsOf(api2, queued)).filter((e) => e.type === 'queued');
    expect(queuedEvents.map((e) => e.data)).toEqual([{ position: 1 }]);
    for (const b of blockers) await sendJson(api2, 'DELETE', `/v1/evaluations/${b}`);
    for (const b of blockers) expect((await finished(api1, b)).status).toBe('cancelled');
    // No job ran after its cancel: the queued one never started.
    expect(c.fakeEvents().some((e) => e.event === 'start' && e.id === queued)).toBe(false);
  }, 120_000);

  it('the per-token submit budget holds across API nodes (counted in Redis)', async () => {
    const c = await cluster();
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-tokens-'));
    const tokensFile = join(dir, 'tokens');
    writeFileSync(tokensFile, `alice:${tokenDigest('alice-token')}\n`);
    const args = ['--tokens-file', tokensFile, '--submits-per-minute', '3'];
    const [api1, api2] = await Promise.all([c.start('api', { args }), c.start('api', { args })]);
    const post = (api: ClusterNode) =>
      fetch(`${api.url}/v1/evaluations`, {
        method: 'POST',
        headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json' },
        body: JSON.stringify(jobBody('fake:pass')),
      });
    // No agent yet: each submission is counted, then answered 503 NO_GPU.
    for (const api of [api1, api2, api1]) expect((await post(api)).status).toBe(503);
    const limited = await post(api2);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('an agent SIGKILLed while it holds a job: the other agent runs it after one redelivery, one result', async () => {
    const c = await cluster();
    const api = await c.start('api');
    const agents = await Promise.all([c.start('agent', { fakeHost: 'b001' }), c.start('agent', { fakeHost: 'b002' })]);
    await c.gpusSeen(api, 8);

    const id = await submit(api, 'fake:pass:3000ms');
    const first = await running(api, id);
    const victim = agentOf(agents, first.gpu?.uuid)!;
    expect(victim).toBeDefined();
    // Killed once its worker has the job (running in the store comes a moment before that).
    await expect
      .poll(() => c.fakeEvents().some((e) => e.event === 'start' && e.id === id), { timeout: 10_000 })
      .toBe(true);
    victim.child.kill('SIGKILL');
    await victim.exited;

    const job = await finished(api, id, 60_000);
    expect(job).toMatchObject({ status: 'succeeded', verdict: 'PASSED' });
    const survivor = agents.find((a) => a !== victim)!;
    expect(agentOf(agents, job.gpu?.uuid)).toBe(survivor);
    const types = (await eventsOf(api, id)).map((e) => e.type);
    expect(types.filter((t) => t === 'started')).toHaveLength(2);
    expect(types.filter((t) => t === 'done')).toHaveLength(1);
    // Two starts of the worker, one end: the dead agent's child died with it.
    const starts = c.fakeEvents().filter((e) => e.event === 'start' && e.id === id);
    expect(starts).toHaveLength(2);
  }, 120_000);

  it('a job that kills every agent it touches fails after one redelivery', async () => {
    const c = await cluster();
    const api = await c.start('api');
    await Promise.all([c.start('agent', { fakeHost: 'c001' }), c.start('agent', { fakeHost: 'c002' })]);
    await c.gpusSeen(api, 8);

    const id = await submit(api, 'fake:kill-agent');
    const job = await finished(api, id, 60_000);
    expect(job.status).toBe('failed');
    expect(job.error?.code).toBe('HOST_LOST');
    const starts = c.fakeEvents().filter((e) => e.event === 'start' && e.id === id);
    expect(starts).toHaveLength(2);
    for (const agent of c.nodes.filter((n) => n.role === 'agent')) {
      expect((await agent.exited).signal).toBe('SIGKILL');
    }
    // Another agent joins: the API still takes and runs work.
    await c.start('agent', { fakeHost: 'c003' });
    await c.gpusSeen(api, 4); // the dead agents' entries gone, the new one's in
    const after = await submit(api, 'fake:pass');
    expect(await finished(api, after)).toMatchObject({ status: 'succeeded' });
  }, 120_000);

  it('Redis SIGKILLed and restarted mid-run: every accepted job ends, none twice', async () => {
    const c = await cluster();
    const api = await c.start('api');
    await Promise.all([c.start('agent', { fakeHost: 'd001' }), c.start('agent', { fakeHost: 'd002' })]);
    await c.gpusSeen(api, 8);

    const accepted: string[] = [];
    for (let i = 0; i < 20; i++) accepted.push(await submit(api, 'fake:pass:300ms'));
    await redis.kill('SIGKILL');
    // Submissions while Redis is down are stored and answered 202: the reconciler queues them once it is back.
    for (let i = 0; i < 5; i++) accepted.push(await submit(api, 'fake:pass:100ms'));
    await redis.restart();
    // Right after the restart the registry is empty until the agents announce again (every second): a submission is
    // taken, or refused for a few seconds, never for a minute.
    const early = await sendJson(api, 'POST', '/v1/evaluations', jobBody('fake:pass:100ms'));
    if (early.status === 202) accepted.push((early.body as { id: string }).id);
    else {
      expect(early.status, JSON.stringify(early.body)).toBe(503);
      expect(Number(early.headers.get('retry-after'))).toBeLessThanOrEqual(5);
    }
    await c.gpusSeen(api, 8);
    for (let i = 0; i < 5; i++) accepted.push(await submit(api, 'fake:pass:100ms'));

    for (const id of accepted) {
      const job = await finished(api, id, 90_000);
      expect(job.status, `${id}: ${JSON.stringify(job.error)}`).toBe('succeeded');
    }
    for (const id of accepted) {
      const done = (await eventsOf(api, id)).filter((e) => e.type === 'done');
      expect(done, id).toHaveLength(1);
    }
  }, 180_000);

  it('PostgreSQL down: the API answers 503 with Retry-After, and takes work again once it is back', async () => {
    const c = await cluster();
    const api = await c.start('api');
    await c.start('agent', { fakeHost: 'e001' });
    await c.gpusSeen(api, 4);
    const before = await submit(api, 'fake:pass');
    await finished(api, before);

    await postgres.kill('SIGKILL');
    try {
      const submitted = await sendJson(api, 'POST', '/v1/evaluations', jobBody('fake:pass'));
      expect(submitted.status).toBe(503);
      expect(submitted.headers.get('retry-after')).toMatch(/^\d+$/);
      expect((submitted.body as { code: string }).code).toBe('STORE_UNAVAILABLE');
      const read = await getJson(api, `/v1/evaluations/${before}`);
      expect(read.status).toBe(503);
      const ready = await getJson(api, '/readyz');
      expect(ready.status).toBe(503);
      expect((ready.body as { reasons: string[] }).reasons).toContainEqual(
        expect.stringMatching(/^PostgreSQL at 127\.0\.0\.1:\d+ is not reachable$/),
      );
    } finally {
      await postgres.restart();
    }
    await expect.poll(async () => (await getJson(api, '/readyz')).status, { timeout: 30_000 }).toBe(200);
    const after = await submit(api, 'fake:pass');
    expect(await finished(api, after)).toMatchObject({ status: 'succeeded' });
  }, 120_000);
});
