// SPDX-License-Identifier: MIT
// An app over a fake pool, with the tests' tokens, for the route tests (app.test.ts, compat.test.ts).
import { buildApp, type AppDeps } from '../../src/http/app.js';
import { type App } from '../../src/http/shared.js';
import { parseTokens, tokenDigest } from '../../src/http/auth.js';
import { pseudonymOf } from '../../src/schedule/leaderboard.js';
import type { EvalService } from '../../src/service.js';
import type { FakePool } from './fake-pool.js';
import { setup } from './helpers.js';

/** alice: every scope but admin (the default); bob: submit and read; root: everything; viewer: read only. */
export const TOKENS = parseTokens(
  [
    `alice:${tokenDigest('alice-token')}`,
    `bob:${tokenDigest('bob-token')}:submit,read`,
    `root:${tokenDigest('root-token')}:submit,read,admin`,
    `viewer:${tokenDigest('viewer-token')}:read`,
  ].join('\n'),
  'tokens',
);
export type Who = 'alice' | 'bob' | 'root' | 'viewer';
export const auth = (who: Who) => ({ authorization: `Bearer ${who}-token` });

/** The names this app's boards show for principals (under its store's key). */
export async function namer(app: App): Promise<(principal: string) => string> {
  const key = await app.service.store.pseudonymKey();
  return (principal) => pseudonymOf(principal, key);
}

export interface Harness {
  app: App;
  service: EvalService;
  pool: FakePool;
}
const apps: Harness[] = [];

/** Closes every app harness() made: each test file calls it after each test. */
export async function closeApps(): Promise<void> {
  for (const h of apps.splice(0)) {
    h.service.close();
    await h.app.close();
  }
}

/** Leaves `h` open after each test (a describe that keeps one app for all its tests closes it itself). */
export function keepApp(h: Harness): void {
  apps.splice(apps.indexOf(h), 1);
}

/** An app over a fake pool; with TOKENS unless `tokens` is given (undefined: no auth). */
export async function harness(options: Partial<AppDeps> & Parameters<typeof setup>[0] = {}): Promise<Harness> {
  const { service, pool } = await setup(options);
  const tokens = 'tokens' in options ? options.tokens : TOKENS;
  const app = await buildApp({ underPressure: false, sseHeartbeatMs: 20, ...options, service, tokens });
  const h = { app, service, pool };
  apps.push(h);
  return h;
}

/**
 * POSTs `body` to /v1/evaluations (it must be accepted: 202), waits for the job to end (at most `timeoutMs`) and
 * returns it as GET /v1/evaluations/{id} answers, report included.
 */
export async function evaluationThrough(
  app: App,
  body: Record<string, unknown>,
  timeoutMs: number,
): Promise<Record<string, any>> {
  const res = await app.inject({ method: 'POST', url: '/v1/evaluations', payload: body });
  if (res.statusCode !== 202) throw new Error(`expected 202 for the submission, got ${res.statusCode}: ${res.body}`);
  const { id } = res.json() as { id: string };
  const end = Date.now() + timeoutMs;
  while (!['succeeded', 'failed', 'cancelled'].includes((await app.service.get(id))?.status ?? '')) {
    if (Date.now() > end) throw new Error(`${id} did not end within ${timeoutMs / 1000} s`);
    await app.service.waitForEnd(id, 5000);
  }
  return (await app.inject({ method: 'GET', url: `/v1/evaluations/${id}` })).json() as Record<string, any>;
}
