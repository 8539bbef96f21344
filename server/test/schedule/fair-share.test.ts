// SPDX-License-Identifier: MIT
// Fair share between clients, end to end, in both modes: a client that fills its queue cap (32 jobs) must not push
// another client's job behind all of them. Client A holds the only GPU with a hanging job and queues 32 more (the
// 33rd is refused); client B queues one: B's job is 2nd in the queue, and among the next two to start. Embedded: the
// app over a fake pool; distributed: an API node and an agent with one fake GPU on a real Redis and PostgreSQL.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tokenDigest } from '../../src/http/auth.js';
import { DEFAULT_LIMITS } from '../../src/service.js';
import { until } from '../../../test/support/until.js';
import { auth, closeApps, harness, type Who } from '../support/app-harness.js';
import { Cluster, type ClusterNode } from '../support/cluster-harness.js';
import { body } from '../support/helpers.js';
import { describeWithServices, startPostgres, startRedis, type ServiceServer } from '../support/services.js';

const CAP = DEFAULT_LIMITS.maxQueuedPerPrincipal;

interface Submitted {
  id: string;
  queue: { position: number; ahead: number };
}

describe('fair share, embedded mode', () => {
  afterEach(closeApps);

  it("a client at its queue cap: another's job is 2nd in the queue and among the next two to start", async () => {
    const { app, service, pool } = await harness(); // one fake GPU
    const started: string[] = [];
    service.onStarted((job) => started.push(job.id));
    const submit = (who: Who) =>
      app.inject({ method: 'POST', url: '/v1/evaluations', headers: auth(who), payload: body('hang') });
    const accepted = async (who: Who): Promise<Submitted> => {
      const res = await submit(who);
      expect(res.statusCode, res.body).toBe(202);
      return res.json();
    };

    const running = (await accepted('alice')).id;
    await until(() => started.includes(running), { timeoutMs: 5000, what: 'the first job to start' });
    const alice: string[] = [];
    for (let i = 0; i < CAP; i++) alice.push((await accepted('alice')).id);
    expect((await submit('alice')).statusCode).toBe(429); // alice is at her cap
    const bob = await accepted('bob');
    expect(bob.queue).toMatchObject({ position: 2, ahead: 1 });
    const read = await app.inject({ method: 'GET', url: `/v1/evaluations/${bob.id}`, headers: auth('bob') });
    expect(read.json().queue).toMatchObject({ position: 2, ahead: 1 });
    const html = { ...auth('bob'), accept: 'text/html' };
    const page = await app.inject({ method: 'GET', url: `/evaluations/${bob.id}`, headers: html });
    expect(page.body).toContain('2nd in the queue');
    expect(page.body).toContain('Clients take turns: 1 job starts before this one');

    // Each run ends in turn, and the GPU takes the next job.
    const next: string[] = [];
    for (let i = 0; i < 2; i++) {
      pool.finish(started.at(-1)!);
      await until(() => started.length === 2 + i, { timeoutMs: 5000, what: `start ${i + 2}` });
      next.push(started.at(-1)!);
    }
    expect(next).toContain(bob.id);
    expect(next).toEqual([alice[0], bob.id]); // alice queued first, so her turn came first
    pool.finish(started.at(-1)!);
    for (const id of alice) await service.cancel(id);
  });
});

/** The data of the first event of `type` on a job's stream (read as it comes: a queued job's stream stays open). */
async function firstEvent(node: ClusterNode, who: Who, id: string, type: string): Promise<unknown> {
  const response = await fetch(`${node.url}/v1/evaluations/${id}/events`, {
    headers: { ...auth(who), accept: 'text/event-stream' },
  });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  try {
    for (;;) {
      const pattern = new RegExp(`^event: ${type}\\n(?:.*\\n)*?data: (.*)$`, 'm');
      const match = pattern.exec(text);
      if (match !== null) return JSON.parse(match[1]!);
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream of ${id} ended without a '${type}' event:\n${text}`);
      text += value;
    }
  } finally {
    await reader.cancel();
  }
}

describeWithServices('fair share, distributed mode', ['redis', 'postgres'], () => {
  let redis: ServiceServer;
  let postgres: ServiceServer;
  let cluster: Cluster | undefined;
  let dir: string;

  beforeAll(async () => {
    [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
    dir = mkdtempSync(join(tmpdir(), 'cudakit-tokens-'));
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await Promise.all([redis?.stop(), postgres?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("a client at its queue cap: another's job is 2nd in the queue and among the next two to start", async () => {
    const tokensFile = join(dir, 'tokens');
    writeFileSync(tokensFile, `alice:${tokenDigest('alice-token')}\nbob:${tokenDigest('bob-token')}\n`);
    cluster = await Cluster.create({ redisUrl: redis.url, postgresUrl: postgres.url });
    const c = cluster;
    const api = await c.start('api', { args: ['--tokens-file', tokensFile] });
    await c.start('agent', { fakeHost: 'f001', gpus: 1 });

    const call = async (node: ClusterNode, who: Who, method: string, path: string, payload?: unknown) => {
      const response = await fetch(`${node.url}${path}`, {
        method,
        headers: { ...auth(who), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
      });
      const text = await response.text();
      return { status: response.status, body: (text === '' ? undefined : JSON.parse(text)) as Record<string, unknown> };
    };
    await expect
      .poll(async () => ((await call(api, 'alice', 'GET', '/v1/gpus')).body?.gpus as unknown[] | undefined)?.length, {
        timeout: 30_000,
        interval: 200,
      })
      .toBe(1);
    const accepted = async (who: Who): Promise<Submitted> => {
      const r = await call(api, who, 'POST', '/v1/evaluations', body('fake:hang:time'));
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      return r.body as unknown as Submitted;
    };
    /** The jobs the agent's worker started, in order (the fake worker's log). */
    const starts = () =>
      c
        .fakeEvents()
        .filter((e) => e.event === 'start')
        .map((e) => e.id!);
    const startsToBe = async (count: number) => {
      await expect.poll(() => starts().length, { timeout: 20_000, interval: 50 }).toBe(count);
      return starts();
    };

    const running = (await accepted('alice')).id;
    expect(await startsToBe(1)).toEqual([running]);
    const alice: string[] = [];
    for (let i = 0; i < CAP; i++) alice.push((await accepted('alice')).id);
    expect((await call(api, 'alice', 'POST', '/v1/evaluations', body('fake:hang:time'))).status).toBe(429);
    const bob = await accepted('bob');
    expect(bob.queue).toMatchObject({ position: 2, ahead: 1 });
    const read = await call(api, 'bob', 'GET', `/v1/evaluations/${bob.id}`);
    expect(read.body.queue).toMatchObject({ position: 2, ahead: 1 });
    // The 'queued' event, stored before the job entered the queue, says where it arrived.
    expect(await firstEvent(api, 'bob', bob.id, 'queued')).toEqual({ position: 2 });

    // Each run is cancelled in turn, and the agent takes the next job.
    let order = [running];
    for (let i = 0; i < 2; i++) {
      const id = order.at(-1)!;
      expect((await call(api, id === bob.id ? 'bob' : 'alice', 'DELETE', `/v1/evaluations/${id}`)).status).toBe(202);
      order = await startsToBe(2 + i);
    }
    expect(order.slice(1)).toContain(bob.id);
    expect(order.slice(1)).toEqual([alice[0], bob.id]);
  }, 120_000);
});
