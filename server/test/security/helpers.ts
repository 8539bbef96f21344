// SPDX-License-Identifier: MIT
// Shared by the security suite (server/test/security/*.test.ts): what every answer to an attack is checked for (its
// status, no path of this host, no stack trace), the liveness check after each row (the server answers and a correct
// job still succeeds), an app harness with one more principal for that check, and requests in the compatible
// routes' and MCP's shapes.
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { parseTokens, tokenDigest } from '../../src/http/auth.js';
import { TOKENS, auth, closeApps, harness, keepApp, type Harness } from '../support/app-harness.js';
import { fakeGpus } from '../support/fake-pool.js';
import { body, settled } from '../support/helpers.js';

/** The repository's root, as this host spells it. */
export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * What an answer must never hold: a path of this host (home folders, the repository, the temporary folder, the
 * dependencies), a source file position ('app.ts:42') or a stack frame. Attack payloads avoid these words, so that a
 * message quoting what the client sent cannot trip them.
 */
export const LEAKS: readonly string[] = [
  '/home',
  '/root',
  '/work',
  '/tmp/',
  ROOT.replace(/\/$/, ''),
  'node_modules',
  '.ts:',
  '.js:',
  '    at ',
];

/** An answer as inject() and the socket helpers give it. */
export interface Answer {
  statusCode: number;
  body: string;
  headers: Record<string, unknown>;
}

/** Fails naming the first leak `text` holds. */
export function expectNoLeak(text: string, what: string): void {
  for (const leak of LEAKS) {
    expect(text.includes(leak), `${what}: the answer holds '${leak}': ${text.slice(0, 400)}`).toBe(false);
  }
}

/** The answer's status is `status` (or one of them), and neither its headers nor its body leak anything. */
export function expectAnswer(res: Answer, status: number | readonly number[], what: string): void {
  const allowed = typeof status === 'number' ? [status] : status;
  expect(allowed, `${what}: ${res.statusCode} ${res.body.slice(0, 400)}`).toContain(res.statusCode);
  expectNoLeak(res.body, what);
  expectNoLeak(JSON.stringify(res.headers), `${what} (headers)`);
}

/** The answer is an error in the API's one shape, with `code`. */
export function expectError(res: Answer, status: number, code: string, what: string): Record<string, unknown> {
  expectAnswer(res, status, what);
  const b = JSON.parse(res.body) as Record<string, unknown>;
  expect(b, what).toMatchObject({ statusCode: status, code, error: expect.any(String), message: expect.any(String) });
  return b;
}

/** The principal of the liveness check: a job of its own is never behind a rate or queue cap an attack reached. */
export const CHECKER = { authorization: 'Bearer checker-token' };

/** The app harness's tokens, and the checker's; 'writer' has the submit scope only. */
export const SECURITY_TOKENS = [
  ...TOKENS,
  ...parseTokens(
    [`checker:${tokenDigest('checker-token')}:submit,read`, `writer:${tokenDigest('writer-token')}:submit`].join('\n'),
    'tokens',
  ),
];

export const writer = { authorization: 'Bearer writer-token' };
export { auth };

/**
 * An app over two fake GPUs with SECURITY_TOKENS, and no submission rate or queue cap that a row's many requests
 * would reach, unless `options` sets them.
 */
export async function securityHarness(options: Parameters<typeof harness>[0] = {}): Promise<Harness> {
  return harness({
    gpus: fakeGpus(2),
    tokens: SECURITY_TOKENS,
    submitsPerMinute: 1_000_000,
    limits: { maxQueuedPerPrincipal: 100_000, maxQueued: 100_000 },
    ...options,
  });
}

/** The server answers /healthz, and a correct job (helpers' body('pass')) is taken and succeeds. */
export async function expectAlive(h: Harness, what = 'after the attack'): Promise<void> {
  const health = await h.app.inject({ method: 'GET', url: '/healthz' });
  expect(health.statusCode, `${what}: /healthz`).toBe(200);
  const res = await h.app.inject({ method: 'POST', url: '/v1/evaluations', headers: CHECKER, payload: body('pass') });
  expect(res.statusCode, `${what}: a correct job: ${res.body}`).toBe(202);
  const record = await settled(h.service, res.json().id as string, 10_000);
  expect(record.status, `${what}: a correct job`).toBe('succeeded');
}

// ---------------------------------------------------------------------------------------------------------------
// Requests

/** POST /v1/evaluations as `who` (a harness token name or headers), the payload as JSON or as it is. */
export function submit(h: Harness, payload: unknown, headers: Record<string, string> = auth('alice')) {
  return h.app.inject({
    method: 'POST',
    url: '/v1/evaluations',
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload),
  });
}

/** A compatible POST (/evaluate, /compare, /) as `who`. */
export function compatPost(h: Harness, url: string, payload: unknown, headers: Record<string, string> = auth('alice')) {
  return h.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload),
  });
}

/**
 * One MCP tools/call over POST /mcp (stateless: no session needed), on a loopback socket: the tools answer through
 * the app's own inject(), which an outer inject() does not host well.
 */
export async function mcpCall(
  h: Harness,
  name: string,
  args: Record<string, unknown> | string,
  headers: Record<string, string> = auth('alice'),
): Promise<Answer> {
  // Arguments as JSON text: what JSON.stringify could not write (nesting past its stack).
  const json = typeof args === 'string' ? args : JSON.stringify(args);
  if (!h.app.server.listening) await h.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = h.app.server.address() as AddressInfo;
  const params = `{"name":${JSON.stringify(name)},"arguments":${json}}`;
  const res = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":${params}}`,
  });
  return { statusCode: res.status, body: await res.text(), headers: Object.fromEntries(res.headers) };
}

/** The text of an MCP tools/call answer, and whether it is a tool error. */
export function mcpResult(res: Answer): { isError: boolean; text: string } {
  const text = res.body.startsWith('event:') ? (/^data: (.*)$/m.exec(res.body)?.[1] ?? '') : res.body;
  const message = JSON.parse(text) as {
    result?: { isError?: boolean; content: { type: string; text?: string }[] };
    error?: { message: string };
  };
  if (message.error !== undefined) return { isError: true, text: message.error.message };
  return {
    isError: message.result?.isError === true,
    text: (message.result?.content ?? []).map((c) => c.text ?? '').join('\n'),
  };
}

/** The correct job's body, once more, for rows that submit it themselves. */
export { body };

/**
 * One app for all of a file's tests (`set` gets it before them; closed after them), and after each test that app and
 * those a row made for itself (`own`, emptied) still answer and run a correct job.
 */
export function sharedHarness(set: (h: Harness) => void, own: Harness[] = []): void {
  let shared: Harness | undefined;
  beforeAll(async () => {
    shared = await securityHarness();
    keepApp(shared);
    set(shared);
  });
  afterAll(async () => {
    shared?.service.close();
    await shared?.app.close();
  });
  afterEach(async () => {
    for (const x of [shared!, ...own.splice(0)]) await expectAlive(x);
    await closeApps();
  });
}
