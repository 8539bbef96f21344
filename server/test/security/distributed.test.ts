// SPDX-License-Identifier: MIT
// Security, the distributed mode's API node (SECURITY.md's attack table), where its parts differ from the embedded
// server's: jobs in PostgreSQL (another principal's job, text the database might refuse), the submission budget
// counted in Redis (a burst), and the same tokens and admission in a process of its own. Real Redis and PostgreSQL
// (services.ts) and the real binary as an API node and a GPU agent (fake workers); skipped, saying why, without them
// unless CUDAKIT_REQUIRE_SERVICES=1. Each answer is checked for its status and for leaks; after each row the API node
// still runs a correct job.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { tokenDigest } from '../../src/http/auth.js';
import { until } from '../../../test/support/until.js';
import { Cluster, type ClusterNode } from '../support/cluster-harness.js';
import { describeWithServices, startPostgres, startRedis, type ServiceServer } from '../support/services.js';
import { type Answer, body, expectAnswer } from './helpers.js';

describeWithServices('security: the distributed API node', ['redis', 'postgres'], () => {
  let redis: ServiceServer;
  let postgres: ServiceServer;
  let cluster: Cluster;
  let api: ClusterNode;
  let dir = '';

  beforeAll(async () => {
    [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
    cluster = await Cluster.create({ redisUrl: redis.url, postgresUrl: postgres.url });
    dir = mkdtempSync(join(tmpdir(), 'cudakit-security-tokens-'));
    const tokens = join(dir, 'tokens');
    const lines = [
      `alice:${tokenDigest('alice-token')}:submit,read`,
      `bob:${tokenDigest('bob-token')}:submit,read`,
      `viewer:${tokenDigest('viewer-token')}:read`,
      `checker:${tokenDigest('checker-token')}:submit,read`,
    ];
    writeFileSync(tokens, `${lines.join('\n')}\n`);
    [api] = await Promise.all([
      cluster.start('api', { args: ['--tokens-file', tokens, '--submits-per-minute', '60'] }),
      cluster.start('agent', { fakeHost: 's001', gpus: 2 }),
    ]);
    // The agent's GPUs in the registry (cluster.gpusSeen asks without a token).
    await until(
      async () =>
        ((JSON.parse((await send('GET', '/v1/gpus', 'alice')).body) as { gpus?: unknown[] }).gpus ?? []).length === 2,
      { timeoutMs: 30_000, what: "the agent's GPUs" },
    );
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
    await Promise.all([redis?.stop(), postgres?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  afterEach(async () => {
    expect(api.child.exitCode, cluster.logs()).toBeNull();
    expect((await send('GET', '/healthz')).statusCode).toBe(200);
    const id = await submitted(body('pass'), 'checker');
    expect((await finished(id, 'checker')).status).toBe('succeeded');
  }, 60_000);

  /** A request to the API node as `who` (no Authorization header for undefined), answered as text. */
  async function send(method: string, path: string, who?: string, payload?: unknown, headers = {}): Promise<Answer> {
    const res = await fetch(`${api.url}${path}`, {
      method,
      headers: {
        ...(who === undefined ? {} : { authorization: `Bearer ${who}-token` }),
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(payload === undefined
        ? {}
        : { body: typeof payload === 'string' || payload instanceof Uint8Array ? payload : JSON.stringify(payload) }),
    });
    return { statusCode: res.status, body: await res.text(), headers: Object.fromEntries(res.headers) };
  }

  async function submitted(payload: unknown, who = 'alice'): Promise<string> {
    const res = await send('POST', '/v1/evaluations', who, payload);
    expectAnswer(res, 202, `a submission as ${who}`);
    return (JSON.parse(res.body) as { id: string }).id;
  }

  async function finished(id: string, who = 'alice'): Promise<{ status: string; name?: string }> {
    let job: { status: string } = { status: '' };
    await until(
      async () => {
        const res = await send('GET', `/v1/evaluations/${id}?wait=5`, who);
        job = JSON.parse(res.body) as { status: string };
        return ['succeeded', 'failed', 'cancelled'].includes(job.status);
      },
      { timeoutMs: 30_000, what: `${id} to end` },
    );
    return job;
  }

  it('tokens: none, a wrong one, Basic auth and a read token submitting are refused (401, 403)', async () => {
    for (const [method, path] of [
      ['GET', '/v1/evaluations'],
      ['POST', '/v1/evaluations'],
      ['GET', '/v1/gpus'],
      ['POST', '/evaluate'],
      ['POST', '/mcp'],
      ['POST', '/admin/cleanup-jobs'],
    ] as const) {
      const payload = method === 'POST' ? body() : undefined;
      expectAnswer(await send(method, path, undefined, payload), 401, `no token: ${method} ${path}`);
      expectAnswer(await send(method, path, 'wrong', payload), 401, `a wrong token: ${method} ${path}`);
      const basic = { authorization: `Basic ${Buffer.from('alice:alice-token').toString('base64')}` };
      expectAnswer(await send(method, path, undefined, payload, basic), 401, `Basic: ${method} ${path}`);
    }
    expectAnswer(await send('POST', '/v1/evaluations', 'viewer', body()), 403, 'a read token submitting');
    expectAnswer(await send('POST', '/admin/cleanup-jobs', 'alice'), 403, 'the admin route with a submit token');
  });

  it("another principal's job in PostgreSQL: 404 by id, events, /job and page; no purge; 403 ?principal=", async () => {
    const id = await submitted(body('pass', { name: 'alices-secret-job' }));
    await finished(id);
    for (const path of [`/v1/evaluations/${id}`, `/v1/evaluations/${id}/events`, `/job/${id}`, `/evaluations/${id}`]) {
      const res = await send('GET', path, 'bob', undefined, { accept: 'text/html' });
      expectAnswer(res, 404, path);
      expect(res.body).not.toContain('alices-secret-job');
    }
    expectAnswer(await send('DELETE', `/v1/evaluations/${id}?purge=true`, 'bob'), 404, 'purge');
    expectAnswer(await send('GET', '/v1/evaluations?principal=alice', 'bob'), 403, '?principal=');
    const list = await send('GET', '/v1/evaluations?limit=100', 'bob');
    expectAnswer(list, 200, "bob's list");
    expect(list.body).not.toContain(id);
    expect((await finished(id)).status).toBe('succeeded');
  });

  it('invalid UTF-8, NUL and lone surrogates: kept in PostgreSQL, given back as the embedded server does', async () => {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    for (const escape of ['\\u0000', '\\ud800', '\\udfff', '\\ud800\\u0000x']) {
      const text = JSON.stringify(body('pass', { name: 'esc-NAME', source: `// SRC\n${String(body().source)}` }));
      const payload = text.replace('NAME', escape).replace('SRC', escape);
      const res = await send('POST', '/v1/evaluations', 'alice', payload);
      expectAnswer(res, 202, `escape ${escape}`);
      const id = (JSON.parse(res.body) as { id: string }).id;
      expect((await finished(id)).status).toBe('succeeded');
      const raw = await fetch(`${api.url}/v1/evaluations/${id}`, { headers: { authorization: 'Bearer alice-token' } });
      expect(raw.status).toBe(200);
      const bytes = new Uint8Array(await raw.arrayBuffer());
      expect(() => decoder.decode(bytes)).not.toThrow();
    }
    const [before, after] = JSON.stringify(body('pass', { name: 'utf8-NAME' })).split('NAME');
    const bytes = Buffer.concat([
      Buffer.from(before!),
      Buffer.from([0xff, 0xed, 0xa0, 0x80, 0x00]),
      Buffer.from(after!),
    ]);
    const res = await send('POST', '/v1/evaluations', 'alice', new Uint8Array(bytes));
    expectAnswer(res, 400, 'a raw NUL byte in a string');
    const valid = Buffer.concat([Buffer.from(before!), Buffer.from([0xff, 0xed, 0xa0, 0x80]), Buffer.from(after!)]);
    const taken = await send('POST', '/v1/evaluations', 'alice', new Uint8Array(valid));
    expectAnswer(taken, 202, 'invalid UTF-8');
    const id = (JSON.parse(taken.body) as { id: string }).id;
    expect((await finished(id)).status).toBe('succeeded');
    // As the embedded server does: the bytes are U+FFFD, in the store and in what comes back.
    const list = await send('GET', '/v1/evaluations?limit=5', 'alice');
    expect(list.body).toContain('utf8-\ufffd');
  });

  it('includes, kernel-name smuggling and flags are refused by the API node before anything is queued', async () => {
    for (const [what, payload] of [
      ['an absolute include', body('pass', { source: `#include "/etc/passwd"\n${String(body().source)}` })],
      ['an include in a kernel name', body('pass', { kernel: 'k<1>\n#include "/etc/passwd"' })],
      ['a flag', body('pass', { compile: { extraFlags: ['--pre-include=/etc/passwd'] } })],
      ['a launch', body('pass', { block: 2048 })],
    ] as const) {
      expectAnswer(await send('POST', '/v1/evaluations', 'alice', payload), 400, what);
    }
  });

  // A burst of 200 is past the budget by far; the embedded server takes 1,000 (connections.test.ts).
  it('a burst of submissions, counted in Redis: at most 60 taken, the rest 429 with Retry-After', async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < 200; i += 100) {
      answers.push(
        ...(await Promise.all(Array.from({ length: 100 }, () => send('POST', '/v1/evaluations', 'bob', body())))),
      );
    }
    const taken = answers.filter((a) => a.statusCode === 202);
    for (const a of answers) {
      expectAnswer(a, [202, 429], 'a submission of the burst');
      if (a.statusCode === 429) expect(Number(a.headers['retry-after'])).toBeGreaterThan(0);
    }
    expect(taken.length).toBeLessThanOrEqual(60);
    expect(taken.length).toBeGreaterThan(0);
    // Each one taken is a job of bob's (cancelled here: sixty runs of a worker process would take the row's time).
    for (const a of taken) {
      const id = (JSON.parse(a.body) as { id: string }).id;
      expectAnswer(await send('DELETE', `/v1/evaluations/${id}`, 'bob'), [202, 409], `cancel ${id}`);
    }
  }, 60_000);
});
