// SPDX-License-Identifier: MIT
// Hostile input never gets a 5xx: random and mutated JSON bodies, deep nesting, huge arrays, non-JSON, wrong content
// types and encodings, random headers and paths (fast-check, bounded runs). Every answer is a 2xx or a 4xx in the
// one error shape, and the server still answers afterwards.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { type App } from '../../src/http/shared.js';
import { parseTokens, tokenDigest } from '../../src/http/auth.js';
import type { EvalService } from '../../src/service.js';
import { body, setup } from '../support/helpers.js';

let app: App;
let service: EvalService;
const AUTH = { authorization: 'Bearer fuzz-token' };

beforeAll(async () => {
  const s = await setup({ limits: { maxQueuedPerPrincipal: 100_000, maxQueued: 100_000 } });
  service = s.service;
  // Every accepted job hangs until cancelled: the queue grows, nothing runs for long.
  s.pool.script = () => ({ delayMs: 1, outcome: { kind: 'cancelled' } });
  const tokens = parseTokens(`fuzz:${tokenDigest('fuzz-token')}:submit,read,admin`, 'tokens');
  app = await buildApp({ service, tokens, underPressure: false, submitsPerMinute: 1_000_000 });
});

afterAll(async () => {
  service.close();
  await app.close();
});

interface Answer {
  statusCode: number;
  body: string;
  headers: Record<string, unknown>;
}

/** The invariant: no 5xx, and every error in the one shape. */
function check(res: Answer, what: string): void {
  expect(res.statusCode, `${what}: ${res.body.slice(0, 300)}`).toBeLessThan(500);
  if (res.statusCode >= 400 && res.headers['content-type']?.toString().startsWith('application/json')) {
    const b = JSON.parse(res.body) as Record<string, unknown>;
    expect(b).toMatchObject({
      statusCode: res.statusCode,
      code: expect.any(String),
      error: expect.any(String),
      message: expect.any(String),
    });
    if (b.details !== undefined) {
      for (const d of b.details as unknown[])
        expect(d).toEqual({ path: expect.any(String), message: expect.any(String) });
    }
  }
}

const KEYS = [
  ...Object.keys(body()),
  'timeoutSeconds',
  'maxQueueSeconds',
  'priority',
  'gpu',
  'deviceMetrics',
  'reference',
  'compare',
  'check',
  'timing',
  'compile',
  'headers',
  'signature',
  'clusterDim',
  'sharedMemBytes',
];
const json = fc.jsonValue({ maxDepth: 4 });
const hostileString = fc.oneof(
  fc.string({ maxLength: 64 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '__proto__',
    'constructor',
    '../../etc/passwd',
    'ptr:f32[99999999999999]',
    'f32=NaN',
    'ptr:f32[1M]=uniform(',
    'i64=99999999999999999999999',
    'ptr:u8[-1]:out',
    '%s%n',
    '"\\',
  ),
);
const hostileValue = fc.oneof(json, hostileString, fc.constantFrom(null, true, -1, 0, 1e308, -1e-308, 2 ** 53 + 1));

/** A valid body with one field replaced (or added) by something random, or removed. */
const mutated = fc.tuple(fc.constantFrom(...KEYS), hostileValue, fc.boolean()).map(([key, value, remove]) => {
  const b: Record<string, unknown> = body();
  if (remove) delete b[key];
  else b[key] = value;
  return b;
});

/** Nested arguments and options: deeper mutations where validateJob does the work. */
const deepMutation = fc
  .tuple(
    fc.constantFrom('args', 'reference', 'compare', 'check', 'timing', 'compile', 'signature', 'headers'),
    fc.oneof(
      fc.array(
        fc.oneof(
          hostileString,
          fc.dictionary(
            fc.constantFrom(
              'kind',
              'dtype',
              'length',
              'shape',
              'role',
              'init',
              'name',
              'type',
              'value',
              'source',
              'kernel',
              'expected',
              'base64',
              'compress',
            ),
            hostileValue,
          ),
        ),
        { maxLength: 6 },
      ),
      fc.dictionary(
        fc.constantFrom(
          'source',
          'kernel',
          'args',
          'expected',
          'grid',
          'block',
          'compile',
          'trials',
          'seed',
          'atol',
          'preset',
          'mode',
          'bytes',
          'rule',
          'extraFlags',
          'includePaths',
          'defines',
          'file',
          'text',
        ),
        hostileValue,
      ),
    ),
  )
  .map(([key, value]) => ({ ...body(), [key]: value }));

describe('hostile bodies', () => {
  it('random JSON, mutated and deeply mutated bodies: never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(json, mutated, deepMutation), async (payload) => {
        const res = await app.inject({
          method: 'POST',
          url: '/v1/evaluations',
          headers: { ...AUTH, 'content-type': 'application/json' },
          payload: JSON.stringify(payload),
        });
        check(res, JSON.stringify(payload).slice(0, 200));
      }),
      { numRuns: 400 },
    );
  });

  it('non-JSON, truncated JSON, deep nesting, huge arrays, wrong content types and encodings: 4xx', async () => {
    const raw = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.integer({ min: 1, max: 200_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
      fc.integer({ min: 1, max: 100_000 }).map((n) => `{"args":[${'"f32=1",'.repeat(n)}"f32=1"]}`),
      fc
        .integer({ min: 33, max: 3000 })
        .map((n) => JSON.stringify({ ...body(), signature: [JSON.parse('{"a":'.repeat(n) + '1' + '}'.repeat(n))] })),
      fc.constant(JSON.stringify(body()).slice(0, 40)),
      fc.constant('{"__proto__":{"polluted":1},"source":"x"}'),
      fc.constant('{"constructor":{"prototype":{"polluted":1}}}'),
    );
    const contentType = fc.constantFrom(
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=utf-16',
      '',
      'application/octet-stream',
    );
    const encoding = fc.constantFrom(undefined, 'gzip', 'deflate', 'br', 'identity', 'gzip, gzip', 'compress');
    await fc.assert(
      fc.asyncProperty(raw, contentType, encoding, async (payload, type, enc) => {
        const headers: Record<string, string> = { ...AUTH };
        if (type !== '') headers['content-type'] = type;
        if (enc !== undefined) headers['content-encoding'] = enc;
        const res = await app.inject({ method: 'POST', url: '/v1/evaluations', headers, payload });
        check(res, `${type} ${enc} ${payload.slice(0, 80)}`);
        expect(res.statusCode).not.toBe(202);
      }),
      { numRuns: 150 },
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('hostile headers and paths', () => {
  it('random headers on every route: never a 5xx', async () => {
    const headerValue = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.constantFrom(
        'Bearer ',
        'Bearer fuzz-token extra',
        'bearer fuzz-token',
        'Bearer ' + 'a'.repeat(600),
        '-1',
        '99999999999999999999999',
        'NaN',
      ),
    );
    const routes = fc.constantFrom(
      ['POST', '/v1/evaluations'],
      ['GET', '/v1/evaluations'],
      ['GET', '/v1/evaluations/ev_01ARZ3NDEKTSV4RRFFQ69G5FAV'],
      ['GET', '/v1/evaluations/ev_01ARZ3NDEKTSV4RRFFQ69G5FAV/events'],
      ['DELETE', '/v1/evaluations/ev_01ARZ3NDEKTSV4RRFFQ69G5FAV'],
      ['GET', '/v1/gpus'],
      ['GET', '/metrics'],
      ['GET', '/readyz'],
    );
    const names = fc.constantFrom(
      'authorization',
      'idempotency-key',
      'last-event-id',
      'content-encoding',
      'accept',
      'x-forwarded-for',
    );
    await fc.assert(
      fc.asyncProperty(routes, fc.dictionary(names, headerValue, { maxKeys: 3 }), async ([method, url], extra) => {
        // Header values must be sendable at all (Node refuses control characters before the server sees them).
        const headers = Object.fromEntries(
          Object.entries({ ...AUTH, ...extra }).filter(([, v]) => /^[\x20-\x7e]*$/.test(v)),
        );
        const res = await app.inject({
          method: method as 'GET',
          url,
          headers,
          ...(method === 'POST' ? { payload: body() } : {}),
        });
        check(res, `${method} ${url} ${JSON.stringify(headers).slice(0, 200)}`);
      }),
      { numRuns: 300 },
    );
  });

  it('random paths and query strings: never a 5xx', async () => {
    const segment = fc.oneof(
      fc.string({ maxLength: 30 }).map(encodeURIComponent),
      fc.constantFrom('ev_', '..', '%00', '%ff', 'ev_01ARZ3NDEKTSV4RRFFQ69G5FAV'),
    );
    const query = fc.dictionary(
      fc.constantFrom('wait', 'limit', 'cursor', 'status', 'verdict', 'purge', 'principal', 'lastEventId', 'x'),
      fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('-1', '1e9', '0', '60', 'true', 'NaN', '[]')),
      { maxKeys: 3 },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'DELETE'),
        fc.array(segment, { maxLength: 4 }),
        query,
        async (method, parts, q) => {
          // wait > 0 would hold the request open: the long-poll is the one query that takes time by design.
          if ('wait' in q) q.wait = '0';
          const url = `/v1/evaluations/${parts.join('/')}?${new URLSearchParams(q).toString()}`;
          const res = await app.inject({ method: method as 'GET', url, headers: AUTH });
          check(res, `${method} ${url}`);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('is alive afterwards', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const ok = await app.inject({ method: 'POST', url: '/v1/evaluations', headers: AUTH, payload: body() });
    expect(ok.statusCode).toBe(202);
  });
});
