// SPDX-License-Identifier: MIT
// The HTTP API (server/src/http) through inject(), and a real loopback socket for the live event stream: every route's
// status codes and shapes, auth and scopes, principal isolation, idempotency, body limits (compressed bodies counted
// inflated), 503 without a GPU after validation, the OpenAPI document, the long-poll, server-sent events with
// Last-Event-ID, metrics; and that the API process never loads the CUDA addon.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { deflateSync, gzipSync } from 'node:zlib';
import type { EvalJob } from 'cudakit';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/shared.js';
import { ProblemRegistry } from '../../src/submit/problems.js';
import { until } from '../../../test/support/until.js';
import { auth, closeApps, harness } from '../support/app-harness.js';
import { fakeGpus, passedReport } from '../support/fake-pool.js';
import { body, settled } from '../support/helpers.js';

// Every shared object the process opens goes through process.dlopen: watch it from the first line on (cudakit loads
// its addon lazily, on the first native call, so any load would come after this).
const dlopened: string[] = [];
const realDlopen = process.dlopen;
process.dlopen = function (this: unknown, module: { exports: unknown }, filename: string, ...rest: unknown[]) {
  dlopened.push(filename);
  return (realDlopen as (...a: unknown[]) => unknown).call(this, module, filename, ...rest);
} as typeof process.dlopen;
afterAll(() => {
  process.dlopen = realDlopen;
});

afterEach(closeApps);

async function submit(app: App, who: 'alice' | 'bob' | 'root', payload: object = body(), headers = {}) {
  return app.inject({ method: 'POST', url: '/v1/evaluations', headers: { ...auth(who), ...headers }, payload });
}

function expectError(res: { statusCode: number; json(): unknown }, statusCode: number, code: string) {
  expect(res.statusCode).toBe(statusCode);
  const b = res.json() as Record<string, unknown>;
  expect(b).toMatchObject({ statusCode, code, error: expect.any(String), message: expect.any(String) });
  return b as { details?: { path: string; message: string }[]; message: string };
}

describe('auth', () => {
  it('asks for a bearer token, rejects bad ones, and checks scopes', async () => {
    const { app } = await harness();
    const none = await app.inject({ method: 'GET', url: '/v1/gpus' });
    expectError(none, 401, 'UNAUTHORIZED');
    expect(none.headers['www-authenticate']).toBe('Bearer realm="cudakit"');
    const basic = await app.inject({ method: 'GET', url: '/v1/gpus', headers: { authorization: 'Basic YTpi' } });
    expectError(basic, 401, 'UNAUTHORIZED');
    const wrong = await app.inject({ method: 'GET', url: '/v1/gpus', headers: { authorization: 'Bearer nope' } });
    expectError(wrong, 401, 'UNAUTHORIZED');
    expect(wrong.headers['www-authenticate']).toContain('error="invalid_token"');
    const viewer = await app.inject({
      method: 'POST',
      url: '/v1/evaluations',
      headers: auth('viewer'),
      payload: body(),
    });
    expectError(viewer, 403, 'FORBIDDEN');
    expect(viewer.headers['www-authenticate']).toContain('scope="submit"');
    expect((await app.inject({ method: 'GET', url: '/v1/gpus', headers: auth('viewer') })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('serves /metrics to loopback, or elsewhere to the admin scope', async () => {
    const { app } = await harness();
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
    const remote = { remoteAddress: '10.1.2.3' };
    expectError(await app.inject({ method: 'GET', url: '/metrics', ...remote }), 401, 'UNAUTHORIZED');
    expectError(
      await app.inject({ method: 'GET', url: '/metrics', headers: auth('alice'), ...remote }),
      403,
      'FORBIDDEN',
    );
    expect((await app.inject({ method: 'GET', url: '/metrics', headers: auth('root'), ...remote })).statusCode).toBe(
      200,
    );
  });

  it("is the principal 'local' with every scope without a tokens file", async () => {
    const { app } = await harness({ tokens: undefined });
    const res = await app.inject({ method: 'POST', url: '/v1/evaluations', payload: body() });
    expect(res.statusCode).toBe(202);
    const got = await app.inject({ method: 'GET', url: res.json().links.self });
    expect(got.json().principal).toBe('local');
  });
});

describe('POST /v1/evaluations', () => {
  it('answers 202 with the id, the queue and links', async () => {
    const { app, service } = await harness();
    const res = await submit(app, 'alice', body('sleep:20'));
    expect(res.statusCode).toBe(202);
    const b = res.json();
    expect(b).toEqual({
      id: expect.stringMatching(/^ev_[0-9A-HJKMNP-TV-Z]{26}$/),
      status: 'queued',
      queue: { position: 1, ahead: 0, running: 0, gpus: 1 },
      links: { self: `/v1/evaluations/${b.id}`, events: `/v1/evaluations/${b.id}/events` },
    });
    expect(res.headers.location).toBe(b.links.self);
    await settled(service, b.id);
  });

  it('validates the body: shapes (schema), then the job (validateJob), each with its path', async () => {
    const { app } = await harness();
    const schema = expectError(
      await submit(app, 'alice', { ...body(), timeoutSeconds: 601 }),
      400,
      'FST_ERR_VALIDATION',
    );
    expect(schema.details).toEqual([{ path: 'body.timeoutSeconds', message: 'must be <= 600' }]);
    const unknown = expectError(await submit(app, 'alice', { ...body(), colour: 'red' }), 400, 'FST_ERR_VALIDATION');
    expect(unknown.details).toEqual([{ path: 'body.colour', message: 'is not a known field' }]);
    const missing = expectError(await submit(app, 'alice', { source: 'x' }), 400, 'FST_ERR_VALIDATION');
    expect(missing.details![0]!.message).toBe('is required');
    const typed = expectError(await submit(app, 'alice', { ...body(), priority: '5' }), 400, 'FST_ERR_VALIDATION');
    expect(typed.details![0]!.path).toBe('body.priority');
    const job = expectError(
      await submit(app, 'alice', body('x', { grid: 0, args: ['ptr:f32[4]:out', 'q7=1'] })),
      400,
      'ERR_INVALID_JOB',
    );
    expect(job.details!.map((d) => d.path)).toEqual(expect.arrayContaining(['body.grid', 'body.args[1]']));
    expect(job.details!.every((d) => d.message.startsWith('Expected '))).toBe(true);
    const file = expectError(
      await submit(app, 'alice', body('x', { source: { file: '/etc/passwd' } })),
      400,
      'FST_ERR_VALIDATION',
    );
    expect(file.details![0]!.path).toBe('body.source');
    const flags = expectError(
      await submit(app, 'alice', body('x', { compile: { extraFlags: ['-I/etc'] } })),
      400,
      'ERR_INVALID_JOB',
    );
    expect(flags.details).toEqual([{ path: 'body.compile.extraFlags[0]', message: expect.stringContaining('-I/etc') }]);
    expectError(
      await app.inject({
        method: 'POST',
        url: '/v1/evaluations',
        headers: { ...auth('alice'), 'content-type': 'application/json' },
        payload: '{"a":',
      }),
      400,
      'FST_ERR_CTP_INVALID_JSON_BODY',
    );
  });

  it('returns the same evaluation for a retried Idempotency-Key, and 422 for another body under it', async () => {
    const { app } = await harness();
    const first = await submit(app, 'alice', body('sleep:10'), { 'idempotency-key': 'req-1' });
    const again = await submit(app, 'alice', body('sleep:10'), { 'idempotency-key': 'req-1' });
    expect(again.statusCode).toBe(202);
    expect(again.json().id).toBe(first.json().id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const other = await submit(app, 'alice', body('sleep:11'), { 'idempotency-key': 'req-1' });
    expect(expectError(other, 422, 'IDEMPOTENCY_KEY_REUSED').message).toContain(first.json().id);
    // Keys are per principal.
    const bob = await submit(app, 'bob', body('sleep:11'), { 'idempotency-key': 'req-1' });
    expect(bob.statusCode).toBe(202);
    expect(bob.json().id).not.toBe(first.json().id);
    expectError(await submit(app, 'alice', body(), { 'idempotency-key': 'has space' }), 400, 'FST_ERR_VALIDATION');
  });

  it('limits bodies: 64 MiB here, 1 MiB elsewhere, gzip and deflate counted inflated (413)', async () => {
    const { app } = await harness();
    const big = Buffer.alloc(64 * 2 ** 20 + 1, 0x20);
    const headers = { ...auth('alice'), 'content-type': 'application/json' };
    const tooBig = await app.inject({ method: 'POST', url: '/v1/evaluations', headers, payload: big });
    expectError(tooBig, 413, 'FST_ERR_CTP_BODY_TOO_LARGE');
    const bomb = gzipSync(big);
    expect(bomb.length).toBeLessThan(1 << 20);
    const inflated = await app.inject({
      method: 'POST',
      url: '/v1/evaluations',
      headers: { ...headers, 'content-encoding': 'gzip' },
      payload: bomb,
    });
    expectError(inflated, 413, 'FST_ERR_CTP_BODY_TOO_LARGE');
    // 1 MiB on a route without literals, compressed or not.
    const mib = Buffer.alloc(2 ** 20 + 1, 0x20);
    const url = '/v1/evaluations/ev_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    expectError(await app.inject({ method: 'DELETE', url, headers, payload: mib }), 413, 'FST_ERR_CTP_BODY_TOO_LARGE');
    const small = await app.inject({
      method: 'DELETE',
      url,
      headers: { ...headers, 'content-encoding': 'deflate' },
      payload: deflateSync(mib),
    });
    expectError(small, 413, 'FST_ERR_CTP_BODY_TOO_LARGE');
    // Compressed bodies that fit are accepted.
    for (const [encoding, pack] of [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
    ] as const) {
      const ok = await app.inject({
        method: 'POST',
        url: '/v1/evaluations',
        headers: { ...headers, 'content-encoding': encoding },
        payload: pack(Buffer.from(JSON.stringify(body()))),
      });
      expect(ok.statusCode).toBe(202);
    }
    const broken = { ...headers, 'content-encoding': 'gzip' };
    expectError(
      await app.inject({ method: 'POST', url: '/v1/evaluations', headers: broken, payload: 'not gzip' }),
      400,
      'INVALID_CONTENT_ENCODING',
    );
    const br = { ...headers, 'content-encoding': 'br' };
    expectError(
      await app.inject({ method: 'POST', url: '/v1/evaluations', headers: br, payload: '{}' }),
      415,
      'UNSUPPORTED_CONTENT_ENCODING',
    );
  });

  it('answers 503 with the reason without a GPU, but only after the body is valid', async () => {
    const { app } = await harness({ unavailableReason: 'CUDA_DRIVER_NOT_FOUND: libcuda.so.1 could not be loaded' });
    expectError(await submit(app, 'alice', { ...body(), grid: 'x' }), 400, 'ERR_INVALID_JOB');
    const res = await submit(app, 'alice');
    expect(expectError(res, 503, 'NO_GPU').message).toContain('CUDA_DRIVER_NOT_FOUND');
    // No driver here: waiting brings no GPU, so no Retry-After invites clients to come back.
    expect(res.headers['retry-after']).toBeUndefined();
    const gpus = await app.inject({ method: 'GET', url: '/v1/gpus', headers: auth('alice') });
    expect(gpus.json()).toEqual({ gpus: [], reason: 'CUDA_DRIVER_NOT_FOUND: libcuda.so.1 could not be loaded' });
  });

  it('rate-limits submissions per principal (429 with Retry-After)', async () => {
    const { app } = await harness({ submitsPerMinute: 2 });
    expect((await submit(app, 'alice')).statusCode).toBe(202);
    expect((await submit(app, 'alice')).statusCode).toBe(202);
    const third = await submit(app, 'alice');
    expectError(third, 429, 'RATE_LIMITED');
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
    expect((await submit(app, 'bob')).statusCode).toBe(202);
  });

  it('caps the queue per principal (429) and in all (503), with Retry-After', async () => {
    const { app, pool } = await harness({ limits: { maxQueuedPerPrincipal: 1, maxQueued: 2 } });
    expect((await submit(app, 'alice', body('hang'))).statusCode).toBe(202);
    await until(() => pool.running().length === 1);
    expect((await submit(app, 'alice')).statusCode).toBe(202);
    const mine = await submit(app, 'alice');
    expectError(mine, 429, 'QUEUE_FULL_FOR_PRINCIPAL');
    expect(Number(mine.headers['retry-after'])).toBeGreaterThan(0);
    expect((await submit(app, 'bob')).statusCode).toBe(202);
    const all = await submit(app, 'root');
    expectError(all, 503, 'QUEUE_FULL');
    expect(all.headers['retry-after']).toBeDefined();
  });
});

describe('GET /v1/evaluations/:id', () => {
  it('shows a principal its own jobs only (404 for others), and every job to admin', async () => {
    const { app, service } = await harness();
    const { id } = (await submit(app, 'alice', body('incorrect'))).json();
    await settled(service, id);
    const mine = await app.inject({ method: 'GET', url: `/v1/evaluations/${id}`, headers: auth('alice') });
    expect(mine.statusCode).toBe(200);
    expect(mine.json()).toMatchObject({
      id,
      principal: 'alice',
      status: 'succeeded',
      verdict: 'INCORRECT',
      phase: 'check',
      createdAt: expect.stringMatching(/Z$/),
      startedAt: expect.any(String),
      finishedAt: expect.any(String),
      queueWaitMs: expect.any(Number),
      queue: null,
      gpu: { uuid: expect.stringMatching(/^GPU-/), name: 'NVIDIA H200', arch: 'sm_90' },
      options: { timeoutSeconds: 120, maxQueueSeconds: 300, priority: 0, gpu: 'any', deviceMetrics: false },
      report: { name: 'incorrect', passed: false },
      error: { code: 'mismatch', phase: 'check' },
    });
    expectError(
      await app.inject({ method: 'GET', url: `/v1/evaluations/${id}`, headers: auth('bob') }),
      404,
      'EVALUATION_NOT_FOUND',
    );
    expect((await app.inject({ method: 'GET', url: `/v1/evaluations/${id}`, headers: auth('root') })).statusCode).toBe(
      200,
    );
    expectError(
      await app.inject({ method: 'GET', url: '/v1/evaluations/nope', headers: auth('alice') }),
      404,
      'EVALUATION_NOT_FOUND',
    );
  });

  it('long-polls with ?wait=N until the end, or N seconds', async () => {
    const { app, pool } = await harness();
    const { id } = (await submit(app, 'alice', body('sleep:150'))).json();
    const t0 = Date.now();
    const done = await app.inject({ method: 'GET', url: `/v1/evaluations/${id}?wait=10`, headers: auth('alice') });
    expect(done.json().status).toBe('succeeded');
    expect(Date.now() - t0).toBeLessThan(5000);
    const hang = (await submit(app, 'alice', body('hang'))).json().id;
    await until(() => pool.running().length === 1);
    const t1 = Date.now();
    const still = await app.inject({ method: 'GET', url: `/v1/evaluations/${hang}?wait=1`, headers: auth('alice') });
    expect(still.json().status).toBe('running');
    expect(Date.now() - t1).toBeGreaterThanOrEqual(900);
    const tooLong = await app.inject({ method: 'GET', url: `/v1/evaluations/${hang}?wait=61`, headers: auth('alice') });
    expect(expectError(tooLong, 400, 'FST_ERR_VALIDATION').details![0]!.path).toBe('querystring.wait');
    pool.finish(hang);
  });
});

describe('GET /v1/evaluations/:id/events', () => {
  function parse(text: string): { id: number; event: string; data: unknown }[] {
    return text
      .split('\n\n')
      .filter((block) => block.includes('event: '))
      .map((block) => {
        const field = (name: string) =>
          block
            .split('\n')
            .find((l) => l.startsWith(`${name}: `))!
            .slice(name.length + 2);
        return { id: Number(field('id')), event: field('event'), data: JSON.parse(field('data')) };
      });
  }

  it('replays a finished job and resumes after Last-Event-ID', async () => {
    const { app, service } = await harness();
    const { id } = (await submit(app, 'alice', body())).json();
    await settled(service, id);
    await until(async () => (await service.store.events(id, 0)).length === 5);
    const all = await app.inject({ method: 'GET', url: `/v1/evaluations/${id}/events`, headers: auth('alice') });
    expect(all.statusCode).toBe(200);
    expect(all.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const events = parse(all.body);
    expect(events.map((e) => [e.id, e.event])).toEqual([
      [1, 'queued'],
      [2, 'started'],
      [3, 'phase'],
      [4, 'phase'],
      [5, 'done'],
    ]);
    expect(events[4]!.data).toMatchObject({ status: 'succeeded', verdict: 'PASSED' });
    const resumed = await app.inject({
      method: 'GET',
      url: `/v1/evaluations/${id}/events`,
      headers: { ...auth('alice'), 'last-event-id': '3' },
    });
    expect(parse(resumed.body).map((e) => e.id)).toEqual([4, 5]);
    const byQuery = await app.inject({
      method: 'GET',
      url: `/v1/evaluations/${id}/events?lastEventId=4`,
      headers: auth('alice'),
    });
    expect(parse(byQuery.body).map((e) => e.id)).toEqual([5]);
    const after = await app.inject({
      method: 'GET',
      url: `/v1/evaluations/${id}/events`,
      headers: { ...auth('alice'), 'last-event-id': '5' },
    });
    expect(parse(after.body)).toEqual([]);
    expectError(
      await app.inject({
        method: 'GET',
        url: `/v1/evaluations/${id}/events`,
        headers: { ...auth('alice'), 'last-event-id': 'x' },
      }),
      400,
      'FST_ERR_VALIDATION',
    );
    expectError(
      await app.inject({ method: 'GET', url: `/v1/evaluations/${id}/events`, headers: auth('bob') }),
      404,
      'EVALUATION_NOT_FOUND',
    );
  });

  it('streams live events with heartbeats over a socket, and ends after done', async () => {
    const { app, pool } = await harness();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const { id } = (await submit(app, 'alice', body('hang'))).json();
    let text = '';
    const ended = new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, path: `/v1/evaluations/${id}/events`, headers: auth('alice') },
        (res) => {
          expect(res.statusCode).toBe(200);
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end();
    });
    await until(() => text.includes('event: started'));
    await until(() => text.includes(': heartbeat'));
    pool.finish(id, { kind: 'report', report: passedReport('hang'), device: undefined });
    await ended;
    expect(parse(text).map((e) => e.event)).toEqual(['queued', 'started', 'phase', 'phase', 'done']);
  });
});

describe('DELETE /v1/evaluations/:id', () => {
  it('cancels queued (202 cancelled) and running (202 cancelling) jobs, 409 once finished; purges', async () => {
    const { app, service } = await harness();
    const running = (await submit(app, 'alice', body('hang'))).json().id;
    const queued = (await submit(app, 'alice', body())).json().id;
    const del = (id: string, who: 'alice' | 'bob' = 'alice', query = '') =>
      app.inject({ method: 'DELETE', url: `/v1/evaluations/${id}${query}`, headers: auth(who) });
    expectError(await del(queued, 'bob'), 404, 'EVALUATION_NOT_FOUND');
    expect((await del(queued)).json()).toEqual({ id: queued, status: 'cancelled' });
    await until(async () => (await service.get(running))!.status === 'running');
    expectError(await del(running, 'alice', '?purge=true'), 409, 'NOT_FINISHED');
    const cancelling = await del(running);
    expect(cancelling.statusCode).toBe(202);
    expect(cancelling.json()).toEqual({ id: running, status: 'cancelling' });
    expect((await settled(service, running)).status).toBe('cancelled');
    expectError(await del(running), 409, 'ALREADY_FINISHED');
    const purged = await del(running, 'alice', '?purge=true');
    expect(purged.statusCode).toBe(204);
    expect(purged.body).toBe('');
    expectError(
      await app.inject({ method: 'GET', url: `/v1/evaluations/${running}`, headers: auth('alice') }),
      404,
      'EVALUATION_NOT_FOUND',
    );
  });
});

describe('GET /v1/evaluations', () => {
  it("lists one principal's jobs newest first, with filters and a cursor", async () => {
    const { app, service } = await harness();
    const ids: string[] = [];
    for (const name of ['a', 'incorrect', 'c']) ids.push((await submit(app, 'alice', body(name))).json().id);
    const bobs = (await submit(app, 'bob', body('b'))).json().id;
    for (const id of [...ids, bobs]) await settled(service, id);
    const list = (url: string, who: 'alice' | 'bob' | 'root' = 'alice') =>
      app.inject({ method: 'GET', url, headers: auth(who) });
    const first = (await list('/v1/evaluations?limit=2')).json();
    expect(first.items.map((i: { id: string }) => i.id)).toEqual([ids[2], ids[1]]);
    expect(first.items[0]).toEqual({
      id: ids[2],
      status: 'succeeded',
      verdict: 'PASSED',
      phase: null,
      name: 'c',
      createdAt: expect.any(String),
      finishedAt: expect.any(String),
      links: expect.any(Object),
    });
    const second = (await list(`/v1/evaluations?limit=2&cursor=${first.next}`)).json();
    expect(second).toEqual({ items: [expect.objectContaining({ id: ids[0] })], next: null });
    const incorrect = (await list('/v1/evaluations?verdict=INCORRECT')).json();
    expect(incorrect.items.map((i: { id: string }) => i.id)).toEqual([ids[1]]);
    expect((await list('/v1/evaluations', 'bob')).json().items.map((i: { id: string }) => i.id)).toEqual([bobs]);
    expectError(await list('/v1/evaluations?principal=alice', 'bob'), 403, 'FORBIDDEN');
    expect((await list('/v1/evaluations?principal=alice', 'root')).json().items).toHaveLength(3);
    expect((await list('/v1/evaluations', 'root')).json().items).toHaveLength(4);
    expectError(await list('/v1/evaluations?cursor=zzz'), 400, 'INVALID_CURSOR');
    expectError(await list('/v1/evaluations?limit=0'), 400, 'FST_ERR_VALIDATION');
    expectError(await list('/v1/evaluations?status=lost'), 400, 'FST_ERR_VALIDATION');
  });
});

describe('operations', () => {
  it('sheds load with 503 UNDER_PRESSURE in the error shape, /readyz included (never a 500)', async () => {
    const { app } = await harness({ underPressure: { maxHeapUsedBytes: 1, sampleInterval: 5 } });
    let ready = await app.inject({ method: 'GET', url: '/readyz' });
    await until(async () => {
      ready = await app.inject({ method: 'GET', url: '/readyz' });
      return ready.statusCode !== 200;
    });
    expect(expectError(ready, 503, 'UNDER_PRESSURE').message).toContain('The server is overloaded (heapUsedBytes');
    expect(ready.headers['retry-after']).toBe('10');
    expectError(await submit(app, 'alice'), 503, 'UNDER_PRESSURE');
  });

  it('/v1/gpus, /v1/health, /healthz, /readyz', async () => {
    const { app, service, pool } = await harness();
    const gpus = (await app.inject({ method: 'GET', url: '/v1/gpus', headers: auth('alice') })).json();
    expect(gpus).toEqual({
      gpus: [
        {
          uuid: expect.any(String),
          name: 'NVIDIA H200',
          arch: 'sm_90',
          classes: ['H200', 'sm_90', 'any'],
          state: 'idle',
          jobs: 0,
          restarts: 0,
          lastError: null,
          shared: false,
          totalMemoryBytes: 150_000_000_000,
          python: null,
        },
      ],
      reason: null,
    });
    expect((await app.inject({ method: 'GET', url: '/v1/health' })).json()).toEqual({
      status: 'ok',
      gpus: 1,
      reason: null,
      python: [],
    });
    expect((await app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ready', reasons: [] });
    pool.setState(gpus.gpus[0].uuid, 'quarantined');
    const notReady = await app.inject({ method: 'GET', url: '/readyz' });
    expect(notReady.statusCode).toBe(503);
    expect(notReady.json().reasons).toEqual(['every GPU is quarantined']);
    expect((await app.inject({ method: 'GET', url: '/v1/health' })).json().status).toBe('unavailable');
    await service.drain(0);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json().reasons).toContain('shutting down');
  });

  it("/v1/gpus shows each GPU's host Python (--python) with its versions", async () => {
    const python = {
      path: '/opt/py/bin/python3',
      python: '3.12.3',
      torch: '2.11.0+cu130',
      triton: null,
      cudaVersion: '13.0',
    };
    const [gpu] = fakeGpus(1);
    const { app } = await harness({ gpus: [{ ...gpu!, python }] });
    const gpus = (await app.inject({ method: 'GET', url: '/v1/gpus', headers: auth('alice') })).json();
    expect(gpus.gpus[0].python).toEqual(python);
  });

  it('POST /v1/gpus/{uuid}/reprobe brings a quarantined GPU back: admin only, 404 for a GPU not here', async () => {
    const { app, pool } = await harness();
    const uuid = pool.slots()[0]!.uuid;
    const url = `/v1/gpus/${uuid}/reprobe`;
    pool.setState(uuid, 'quarantined');
    expectError(await submit(app, 'alice'), 503, 'NO_GPU_OF_CLASS');
    expectError(await app.inject({ method: 'POST', url }), 401, 'UNAUTHORIZED');
    const bob = await app.inject({ method: 'POST', url, headers: auth('bob') });
    expectError(bob, 403, 'FORBIDDEN');
    expect(bob.headers['www-authenticate']).toContain('scope="admin"');
    expect(pool.reprobed).toEqual([]);
    const unknown = await app.inject({ method: 'POST', url: '/v1/gpus/GPU-0000/reprobe', headers: auth('root') });
    expect(expectError(unknown, 404, 'GPU_NOT_FOUND').message).toBe("No GPU 'GPU-0000' in this server's pool");

    pool.reprobeOutcome = 'quarantined'; // the GPU still holds what it held
    const still = await app.inject({ method: 'POST', url, headers: auth('root') });
    expect(still.statusCode).toBe(200);
    expect(still.json()).toMatchObject({ uuid, state: 'quarantined' });
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);

    pool.reprobeOutcome = 'idle';
    const back = await app.inject({ method: 'POST', url, headers: auth('root') });
    expect(back.statusCode).toBe(200);
    const shown = (await app.inject({ method: 'GET', url: '/v1/gpus', headers: auth('alice') })).json().gpus[0];
    expect(back.json()).toEqual(shown);
    expect(shown).toMatchObject({ uuid, state: 'idle', lastError: null });
    expect(pool.reprobed).toEqual([uuid, uuid]);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const { id } = (await submit(app, 'alice')).json();
    const done = await app.inject({ method: 'GET', url: `/v1/evaluations/${id}?wait=10`, headers: auth('alice') });
    expect(done.json()).toMatchObject({ status: 'succeeded', verdict: 'PASSED', gpu: { uuid } });
    // One in service is left as it is.
    await until(() => pool.slots()[0]!.state === 'idle');
    const idle = await app.inject({ method: 'POST', url, headers: auth('root') });
    expect(idle.json()).toMatchObject({ uuid, state: 'idle', jobs: 1 });
  });

  it("caps a job's declared device bytes at a quarter of the smallest GPU's memory, naming that GPU", async () => {
    const [h200, other] = fakeGpus(2);
    const gpus = [
      { ...h200!, totalMemoryBytes: 150_000_000_000 },
      { ...other!, name: 'NVIDIA H100 80GB HBM3', totalMemoryBytes: 80_000_000_000 },
    ];
    const refused = (res: { statusCode: number; json(): unknown }): string => {
      const b = expectError(res, 400, 'ERR_INVALID_JOB');
      expect(b.details?.map((d) => d.path)).toEqual(['body.args']);
      return b.details![0]!.message;
    };
    // 20 GB is the cap: 4768 Mi f32 (19.998 GB) pass, 4769 Mi (20.003 GB) do not.
    const { app } = await harness({ gpus });
    const under = body('x', { args: ['ptr:f32[4768M]:out', 'i32=32'] });
    expect((await submit(app, 'alice', under)).statusCode).toBe(202);
    const over = await submit(app, 'alice', body('x', { args: ['ptr:f32[4769M]:out', 'i32=32'] }));
    expect(refused(over)).toBe(
      `Expected buffers of at most 20000000000 bytes in all for job.args but received ${4769 * 2 ** 22} bytes ` +
        `(the limit is a quarter of the memory of the smallest GPU here: NVIDIA H100 80GB HBM3 (${gpus[1]!.uuid}), ` +
        '80000000000 bytes)',
    );
    // A configured cap applies whatever the GPUs.
    const { app: capped } = await harness({ gpus, limits: { maxDeviceBytes: 4096 } });
    expect((await submit(capped, 'alice', body('x', { args: ['ptr:f32[1k]:out', 'i32=32'] }))).statusCode).toBe(202);
    const overCap = await submit(capped, 'alice', body('x', { args: ['ptr:f32[1025]:out', 'i32=32'] }));
    expect(refused(overCap)).toBe(
      'Expected buffers of at most 4096 bytes in all for job.args but received 4100 bytes ' +
        '(the limit configured for this server)',
    );
    // Without the GPUs' memory (a probe that could not read it): the fixed default.
    const { app: unknown } = await harness({ gpus: gpus.map((g) => ({ ...g, totalMemoryBytes: 0 })) });
    const overDefault = await submit(unknown, 'alice', body('x', { args: ['ptr:f32[2049M]:out', 'i32=32'] }));
    expect(refused(overDefault)).toContain(`at most ${8 * 2 ** 30} bytes in all for job.args but received`);
    expect(refused(overDefault)).toContain("(the default limit: the GPUs' memory is not known here)");
  });

  it('/metrics: jobs by status and verdict, queue depth, slot states, durations, process metrics', async () => {
    const { app, service } = await harness();
    const { id } = (await submit(app, 'alice', body('incorrect'))).json();
    await settled(service, id);
    await until(() => service.slots().every((s) => s.state === 'idle'));
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const text = res.body;
    expect(text).toContain('cudakit_jobs{status="succeeded"} 1');
    expect(text).toContain('cudakit_evaluations_total{status="succeeded",verdict="INCORRECT",gpu_class="any"} 1');
    expect(text).toContain('cudakit_gpu_slots{state="idle"} 1');
    expect(text).toMatch(/cudakit_queue_depth/);
    expect(text).toMatch(/cudakit_job_duration_seconds_count\{verdict="INCORRECT"\} 1/);
    expect(text).toMatch(/cudakit_queue_wait_seconds_count\{gpu_class="any"\} 1/);
    expect(text).toMatch(
      /cudakit_http_request_duration_seconds_count\{method="POST",route="\/v1\/evaluations",status_code="202"\} 1/,
    );
    expect(text).toMatch(/process_cpu_user_seconds_total/);
  });

  it('publishes a valid OpenAPI document listing every route, and the docs UI', async () => {
    const { app } = await harness();
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    const routes = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(routes.sort()).toEqual(
      [
        'POST /v1/evaluations',
        'GET /v1/evaluations',
        'GET /v1/evaluations/{id}',
        'DELETE /v1/evaluations/{id}',
        'GET /v1/evaluations/{id}/events',
        'GET /v1/gpus',
        'POST /v1/gpus/{uuid}/reprobe',
        'GET /v1/problems',
        // The problems' leaderboards (server/test/http/leaderboard.test.ts).
        'GET /v1/problems/{name}/leaderboard',
        'DELETE /v1/problems/{name}/leaderboard/{who}',
        'POST /v1/problems/{name}/leaderboard/{who}/reverify',
        'GET /v1/health',
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
        // Tools for models (server/test/http/routes/mcp.test.ts).
        'POST /mcp',
        // The dashboard's summary and live stream (server/test/dashboard/dashboard.test.ts); its pages are not API.
        'GET /',
        'GET /v1/stream',
        // The original server's routes (server/test/compat/compat.test.ts).
        'POST /evaluate',
        'POST /compare',
        'POST /',
        'GET /health',
        'GET /job/{job_id}',
        'GET /stats',
        'POST /admin/cleanup-jobs',
      ].sort(),
    );
    // Structurally valid: every operation answers something, every path template has its required parameter,
    // every $ref resolves inside the document.
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Record<string, unknown>>>)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(
          Object.keys(op.responses as object).every((k) => /^[1-5]\d\d$|^default$/.test(k)),
          `${method} ${path}`,
        ).toBe(true);
        for (const name of path.match(/\{(\w+)\}/g) ?? []) {
          const params = (op.parameters ?? []) as { name: string; in: string; required?: boolean }[];
          expect(params.find((p) => p.in === 'path' && p.name === name.slice(1, -1))?.required).toBe(true);
        }
      }
    }
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of refs) {
      const pointer = ref.slice(8, -1);
      expect(pointer.startsWith('#/')).toBe(true);
      const target = pointer
        .slice(2)
        .split('/')
        .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
      expect(target, pointer).toBeDefined();
    }
    const post = doc.paths['/v1/evaluations'].post;
    expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(['202', '400', '413', '422', '429', '503']));
    expect(post.requestBody.content['application/json'].schema.properties.timeoutSeconds).toMatchObject({
      minimum: 5,
      maximum: 600,
      description: expect.stringMatching(/\(default 120; 600 for a submission to a problem with cases\)$/),
    });
    expect((await app.inject({ method: 'GET', url: '/docs' })).statusCode).toBeLessThan(400);
  });

  it('answers unknown routes 404 in the one error shape', async () => {
    const { app } = await harness();
    expectError(await app.inject({ method: 'GET', url: '/v2/nothing' }), 404, 'NOT_FOUND');
  });
});

describe('the problem registry through the API', () => {
  function registryDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-api-problems-'));
    mkdirSync(join(dir, 'fill'));
    writeFileSync(
      join(dir, 'fill', 'problem.json'),
      JSON.stringify({ description: 'y = 1', args: ['y@ptr:f32[32]:out', 'n@i32=32'], timing: { bytes: 128 } }),
    );
    writeFileSync(join(dir, 'fill', 'reference.mjs'), 'export const reference = ([y]) => y.fill(1);\n');
    return dir;
  }

  it('lists the problems, runs a job on one with its args, and hands the worker its reference module', async () => {
    const dir = registryDir();
    try {
      const { app, pool } = await harness({ problems: ProblemRegistry.load(dir) });
      const list = await app.inject({ method: 'GET', url: '/v1/problems', headers: auth('alice') });
      expect(list.statusCode).toBe(200);
      expect(list.json()).toEqual({
        problems: [
          {
            name: 'fill',
            description: 'y = 1',
            args: ['y@ptr:f32[32]:out', 'n@i32=32'],
            reference: 'javascript',
            bytes: 128,
          },
        ],
      });
      const { args: _ignored, ...withoutArgs } = body('pass');
      const res = await submit(app, 'alice', { ...withoutArgs, reference: { problem: 'fill' }, deviceMetrics: true });
      expect(res.statusCode).toBe(202);
      await until(() => pool.runs.length === 1);
      const run = pool.runs[0]!;
      const job = run.job as EvalJob;
      expect(job.args).toEqual(['y@ptr:f32[32]:out', 'n@i32=32']);
      expect(job.reference).toBeUndefined();
      expect(job.timing).toMatchObject({ bytes: 128 });
      expect(run.extras).toEqual({ deviceMetrics: true, referenceModule: join(dir, 'fill', 'reference.mjs') });

      const unknown = await submit(app, 'alice', { ...withoutArgs, reference: { problem: 'gemm' } });
      const e = expectError(unknown, 400, 'ERR_INVALID_JOB');
      expect(e.details).toContainEqual({
        path: 'body.reference.problem',
        message: expect.stringContaining("received 'gemm' (installed: fill)"),
      });
      const withArgs = await submit(app, 'alice', { ...body('pass'), reference: { problem: 'fill' } });
      expect(expectError(withArgs, 400, 'ERR_INVALID_JOB').details).toContainEqual({
        path: 'body.args',
        message: expect.stringContaining("the problem 'fill' defines them"),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('without a registry, names none installed; a job without deviceMetrics asks none of its worker', async () => {
    const { app, pool } = await harness();
    expect((await app.inject({ method: 'GET', url: '/v1/problems', headers: auth('alice') })).json()).toEqual({
      problems: [],
    });
    const { args: _ignored, ...withoutArgs } = body('pass');
    const res = await submit(app, 'alice', { ...withoutArgs, reference: { problem: 'fill' } });
    expect(expectError(res, 400, 'ERR_INVALID_JOB').details![0]!.message).toContain('no problem is installed');
    expect((await submit(app, 'alice')).statusCode).toBe(202);
    await until(() => pool.runs.length === 1);
    expect(pool.runs[0]!.extras).toEqual({ deviceMetrics: false });
  });
});

describe('the API process', () => {
  it('never loads the CUDA addon while it takes, runs and reports jobs', async () => {
    const { app, service } = await harness();
    const ids: string[] = [];
    for (const name of ['pass', 'incorrect', 'timeout', 'crash'])
      ids.push((await submit(app, 'alice', body(name))).json().id);
    ids.push((await submit(app, 'alice', body('x', { grid: 0 }))).json().id ?? 'invalid');
    for (const id of ids.slice(0, 4)) await settled(service, id);
    for (const id of ids.slice(0, 4)) {
      await app.inject({ method: 'GET', url: `/v1/evaluations/${id}`, headers: auth('alice') });
      await app.inject({ method: 'GET', url: `/v1/evaluations/${id}/events`, headers: auth('alice') });
    }
    await app.inject({ method: 'GET', url: '/metrics' });
    expect(dlopened.filter((f) => /cudakit|libcuda|nvrtc/i.test(f))).toEqual([]);
    // And nothing of it is mapped into this process at all (Linux: every shared object loaded shows here).
    if (process.platform === 'linux') {
      expect(readFileSync('/proc/self/maps', 'utf8')).not.toMatch(/cudakit\.node|libcuda\.so|libnvrtc/);
    }
  });
});
