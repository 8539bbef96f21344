// SPDX-License-Identifier: MIT
// Security, tokens and principals (SECURITY.md's attack table): every route that needs a token refuses none, a wrong
// one and Basic auth; a read token submits nothing by any route; another principal's job is invisible by every way
// to it; the admin routes refuse a submit token; a token anywhere but the Authorization header counts for nothing;
// and tokens are compared as fixed-length digests, every entry each time. Each answer is checked for its status and
// for leaks (no path of this host, no stack trace); after each row the server still runs a correct job.
import { describe, expect, it, vi } from 'vitest';
import { TokenVerifier, parseTokens, tokenDigest } from '../../src/http/auth.js';
import type { Harness } from '../support/app-harness.js';
import { evaluateBody, settled } from '../support/helpers.js';
import {
  CHECKER,
  SECURITY_TOKENS,
  auth,
  body,
  expectAnswer,
  expectError,
  mcpCall,
  mcpResult,
  sharedHarness,
  compatPost,
  submit,
  writer,
} from './helpers.js';

// Every timingSafeEqual the server makes, with its operands' lengths (the real one answers).
const crypto = vi.hoisted(() => ({ comparisons: [] as Array<[number, number]> }));
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
      crypto.comparisons.push([a.byteLength, b.byteLength]);
      return real.timingSafeEqual(a, b);
    },
  };
});

let h: Harness;
sharedHarness((x) => (h = x));

/** An address that is not loopback: /metrics is open to loopback, and must be asked for from elsewhere. */
const REMOTE = { remoteAddress: '203.0.113.7' };
const ID = 'ev_01ARZ3NDEKTSV4RRFFQ69G5FAV';
const GPU = 'GPU-00000000-0000-0000-0000-000000000000';

/**
 * Every operation the OpenAPI document lists that needs a token (the open ones are liveness, readiness, the health
 * summary and the document itself), with its path parameters filled in, and the dashboard's result page (hidden).
 */
async function protectedRoutes(): Promise<Array<{ method: 'GET' | 'POST' | 'DELETE'; url: string }>> {
  const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, unknown>>;
  };
  const open = new Set(['/healthz', '/readyz', '/v1/health']);
  const routes: Array<{ method: 'GET' | 'POST' | 'DELETE'; url: string }> = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    if (open.has(path)) continue;
    const url = path.replace('{id}', ID).replace('{job_id}', ID).replace('{uuid}', GPU);
    for (const method of Object.keys(operations)) routes.push({ method: method.toUpperCase() as 'GET', url });
  }
  routes.push({ method: 'GET', url: `/evaluations/${ID}` });
  // The document lists every route of the API: a new one is covered here without being named.
  expect(routes.length).toBeGreaterThanOrEqual(20);
  return routes;
}

/** Each protected route with `headers`: every answer `status`, in the route's shape, and a job taken by none. */
async function everyRoute(headers: Record<string, string>, status: number, what: string) {
  const before = (await h.service.store.counts()).queued + h.pool.runs.length;
  for (const { method, url } of await protectedRoutes()) {
    const res = await h.app.inject({
      method,
      url,
      headers: { 'content-type': 'application/json', ...headers },
      ...(method === 'POST' ? { payload: JSON.stringify(url === '/mcp' ? {} : body()) } : {}),
      ...REMOTE,
    });
    expectAnswer(res, status, `${what}: ${method} ${url}`);
    if (status === 401) expect(res.headers['www-authenticate'], `${method} ${url}`).toMatch(/^Bearer realm="cudakit"/);
  }
  expect((await h.service.store.counts()).queued + h.pool.runs.length).toBe(before);
}

describe('security: tokens', () => {
  it('no token: every route but the open ones answers 401 with a Bearer challenge', async () => {
    await everyRoute({}, 401, 'no token');
  });

  it('a wrong token: 401 (invalid_token) everywhere, whatever its length', async () => {
    for (const token of ['nope', 'alice-token-', 'Alice-token', 'x'.repeat(512)]) {
      await everyRoute({ authorization: `Bearer ${token}` }, 401, `wrong token ${token.slice(0, 20)}`);
    }
  });

  it('Basic auth, even with a valid token as its user or password: 401 everywhere', async () => {
    for (const pair of ['alice:alice-token', 'alice-token:', ':alice-token', 'alice-token']) {
      const basic = `Basic ${Buffer.from(pair).toString('base64')}`;
      await everyRoute({ authorization: basic }, 401, `Basic ${pair}`);
    }
  });

  it('a read token submitting: 403 on POST /v1/evaluations, /evaluate, /compare, / and the MCP tools', async () => {
    const viewer = auth('viewer');
    const runs = h.pool.runs.length;
    const before = await h.service.store.counts();
    expectError(await submit(h, body(), viewer), 403, 'FORBIDDEN', 'POST /v1/evaluations');
    const compare = { ref_kernel: evaluateBody().kernel, custom_kernel: evaluateBody().kernel };
    for (const [url, payload] of [
      ['/evaluate', evaluateBody()],
      ['/compare', compare],
      ['/', compare],
    ] as const) {
      expectAnswer(await compatPost(h, url, payload, viewer), 403, `POST ${url}`);
    }
    for (const [tool, args] of [
      ['evaluate_kernel', evaluateBody()],
      ['compare_kernels', compare],
    ] as const) {
      const res = await mcpCall(h, tool, args, viewer);
      expectAnswer(res, 403, `MCP ${tool}`);
      expect(res.body).toContain(`lacks the 'submit' scope, which ${tool} needs`);
    }
    // The read scope still reads.
    const list = await mcpCall(h, 'list_gpus', {}, viewer);
    expectAnswer(list, 200, 'MCP list_gpus');
    expect(mcpResult(list).isError).toBe(false);
    expect(await h.service.store.counts()).toEqual(before);
    expect(h.pool.runs.length).toBe(runs);
  });

  it("another principal's job: 404 by id, events, /job, page, MCP; no cancel or purge; 403 ?principal=", async () => {
    const done = (await submit(h, body('pass', { name: 'alices-secret-job' }))).json().id as string;
    await settled(h.service, done);
    const live = (await submit(h, body('hang'))).json().id as string;
    const bob = auth('bob');
    const unknown = await h.app.inject({ method: 'GET', url: `/v1/evaluations/${ID}`, headers: bob });
    for (const id of [done, live]) {
      const got = await h.app.inject({ method: 'GET', url: `/v1/evaluations/${id}?wait=1`, headers: bob });
      const b = expectError(got, 404, 'EVALUATION_NOT_FOUND', 'GET by id');
      // Nothing tells a job of someone else from no job at all.
      expect(b.message).toBe(unknown.json().message.replace(ID, id));
      expectError(
        await h.app.inject({ method: 'GET', url: `/v1/evaluations/${id}/events`, headers: bob }),
        404,
        'EVALUATION_NOT_FOUND',
        'events',
      );
      expectAnswer(await h.app.inject({ method: 'GET', url: `/job/${id}`, headers: bob }), 404, 'GET /job');
      const page = await h.app.inject({
        method: 'GET',
        url: `/evaluations/${id}`,
        headers: { ...bob, accept: 'text/html' },
      });
      expectAnswer(page, 404, 'dashboard page');
      expect(page.body).not.toContain('alices-secret-job');
      const tool = await mcpCall(h, 'get_evaluation', { id }, bob);
      expectAnswer(tool, 200, 'MCP get_evaluation');
      expect(mcpResult(tool)).toEqual({ isError: true, text: `EVALUATION_NOT_FOUND: No evaluation '${id}'` });
    }
    expectError(
      await h.app.inject({ method: 'DELETE', url: `/v1/evaluations/${done}?purge=true`, headers: bob }),
      404,
      'EVALUATION_NOT_FOUND',
      'purge',
    );
    expectError(
      await h.app.inject({ method: 'DELETE', url: `/v1/evaluations/${live}`, headers: bob }),
      404,
      'EVALUATION_NOT_FOUND',
      'cancel',
    );
    expectError(
      await h.app.inject({ method: 'GET', url: '/v1/evaluations?principal=alice', headers: bob }),
      403,
      'FORBIDDEN',
      '?principal=',
    );
    const list = await h.app.inject({ method: 'GET', url: '/v1/evaluations?limit=100', headers: bob });
    expectAnswer(list, 200, 'own list');
    expect(list.body).not.toContain(done);
    const dashboard = await h.app.inject({
      method: 'GET',
      url: '/?principal=alice',
      headers: { ...bob, accept: 'text/html' },
    });
    expectAnswer(dashboard, 200, 'dashboard ?principal=');
    expect(dashboard.body).not.toContain(done);
    expect(dashboard.body).not.toContain('alices-secret-job');
    // Both jobs are still there and as they were; the admin scope sees them (the ids were real).
    expect((await h.service.get(done))?.status).toBe('succeeded');
    expect((await h.service.get(live))?.status).toBe('running');
    const admin = await h.app.inject({ method: 'GET', url: `/v1/evaluations/${done}`, headers: auth('root') });
    expect(admin.json().principal).toBe('alice');
    await h.app.inject({ method: 'DELETE', url: `/v1/evaluations/${live}`, headers: auth('alice') });
    expect((await settled(h.service, live)).status).toBe('cancelled');
  });

  it('the admin routes refuse a token with submit (and read) but not admin: 403, and nothing done', async () => {
    const finished = (await submit(h, body('pass'), CHECKER)).json().id as string;
    await settled(h.service, finished);
    const uuid = h.pool.slots()[0]!.uuid;
    for (const headers of [auth('alice'), writer]) {
      const who = headers.authorization;
      for (const [method, url] of [
        ['POST', `/v1/gpus/${uuid}/reprobe`],
        ['POST', '/admin/cleanup-jobs'],
        ['GET', '/metrics'],
        ['GET', '/v1/evaluations?principal=bob'],
      ] as const) {
        const res = await h.app.inject({ method, url, headers, ...REMOTE });
        expectAnswer(res, 403, `${who}: ${method} ${url}`);
        // A scope the token lacks is named in the challenge; listing another's jobs is the route's own refusal.
        if (!url.includes('?')) expect(res.headers['www-authenticate'], url).toContain('scope="admin"');
      }
    }
    // The submit scope alone does not read either.
    expectAnswer(await h.app.inject({ method: 'GET', url: '/v1/evaluations', headers: writer }), 403, 'writer list');
    expect(h.pool.reprobed).toEqual([]);
    expect(await h.service.get(finished)).toBeDefined();
    // The admin scope may.
    const root = await h.app.inject({ method: 'GET', url: '/metrics', headers: auth('root'), ...REMOTE });
    expectAnswer(root, 200, 'root /metrics');
  });

  it('a token in the query, a cookie, another header or the body counts for nothing: 401', async () => {
    const queries = ['token', 'access_token', 'authorization', 'bearer', 'api_key'];
    for (const q of queries) {
      for (const value of ['alice-token', 'Bearer alice-token']) {
        const url = `/v1/evaluations?${q}=${encodeURIComponent(value)}`;
        expectAnswer(await h.app.inject({ method: 'GET', url, ...REMOTE }), 401, `query ${q}`);
      }
    }
    for (const cookie of [
      'token=alice-token',
      'access_token=alice-token',
      'authorization=Bearer alice-token',
      'cudakit_session=alice-token',
      'cudakit_csrf=alice-token',
    ]) {
      for (const url of ['/v1/evaluations', '/', `/evaluations/${ID}`, '/metrics']) {
        const res = await h.app.inject({ method: 'GET', url, headers: { cookie }, ...REMOTE });
        expectAnswer(res, 401, `cookie ${cookie} on ${url}`);
      }
    }
    for (const headers of [
      { 'x-api-key': 'alice-token' },
      { 'x-auth-token': 'alice-token' },
      { authorization: 'alice-token' },
      { authorization: 'Token alice-token' },
      { 'proxy-authorization': 'Bearer alice-token' },
    ]) {
      expectAnswer(await h.app.inject({ method: 'GET', url: '/v1/gpus', headers }), 401, JSON.stringify(headers));
    }
    const inBody = await submit(h, { ...body(), token: 'alice-token' }, {});
    expectAnswer(inBody, 401, 'token in the body');
  });

  it('tokens are compared as 32-byte sha256 digests against every entry, whatever their length or prefix', async () => {
    const verifier = new TokenVerifier(SECURITY_TOKENS);
    const count = SECURITY_TOKENS.length;
    const tokens = ['a', 'alice-toke', 'alice-token', 'alice-tokenX', 'blice-token', 'x'.repeat(512), 'root-token'];
    for (const token of tokens) {
      crypto.comparisons.length = 0;
      const principal = verifier.verify(token);
      expect(principal?.name, token).toBe({ 'alice-token': 'alice', 'root-token': 'root' }[token]);
      // Every entry, each time (a match does not stop the loop), over digests of one fixed length.
      expect(crypto.comparisons, token).toEqual(Array<[number, number]>(count).fill([32, 32]));
    }
    // The same through HTTP: one verification per request, and the same answer for every wrong token.
    let first: string | undefined;
    for (const token of tokens.filter((t) => !t.endsWith('-token'))) {
      crypto.comparisons.length = 0;
      const res = await h.app.inject({ method: 'GET', url: '/v1/gpus', headers: { authorization: `Bearer ${token}` } });
      expectAnswer(res, 401, token);
      expect(crypto.comparisons).toEqual(Array<[number, number]>(count).fill([32, 32]));
      first ??= res.body;
      expect(res.body).toBe(first);
    }
    // A token past the header's bound is refused unread: no comparison at all.
    crypto.comparisons.length = 0;
    const long = await h.app.inject({
      method: 'GET',
      url: '/v1/gpus',
      headers: { authorization: `Bearer ${'a'.repeat(513)}` },
    });
    expectAnswer(long, 401, 'a 513-character token');
    expect(crypto.comparisons).toEqual([]);
    // The server holds digests only: a tokens line with the token itself is refused.
    expect(() => parseTokens('alice:alice-token', 'tokens')).toThrow(/sha256 as 64 hex digits/);
    expect(SECURITY_TOKENS.every((t) => t.digest.length === 32)).toBe(true);
    expect(tokenDigest('alice-token')).toMatch(/^[0-9a-f]{64}$/);
  });
});
