// SPDX-License-Identifier: MIT
// The compatible routes' one table of error answers (server/src/compat/errors.ts, COMPAT_ERRORS): server/docs/compat.md
// lists it as it is; the service's codes it names are answered with their own status and Retry-After, and every code
// a compatible request can meet on its way (auth, the body's reading, the submission) has its entry; and each entry a
// test can provoke without a GPU is answered over HTTP with its status, its shape, its text and its Retry-After.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidJobError } from 'cudakit';
import { afterEach, describe, expect, it } from 'vitest';
import { API_ERRORS, ServiceError } from '../../src/errors.js';
import {
  COMPAT_ERRORS,
  CompatClientError,
  CompatValidationError,
  compatErrorOf,
  compatMessage,
  type CompatErrorName,
  type CompatShape,
} from '../../src/compat/errors.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { until } from '../../../test/support/until.js';
import { auth, closeApps, harness, type Who } from '../support/app-harness.js';
import { scriptByName } from '../support/fake-pool.js';
import { evaluateBody } from '../support/helpers.js';

const SERVER = join(import.meta.dirname, '..', '..');

afterEach(closeApps);

const entries = Object.entries(COMPAT_ERRORS) as [CompatErrorName, (typeof COMPAT_ERRORS)[CompatErrorName]][];

describe('the error table', () => {
  it("is server/docs/compat.md's table, row for row", () => {
    const doc = readFileSync(join(SERVER, 'docs', 'compat.md'), 'utf8');
    const section = doc.split('\n## Errors\n')[1]!.split('\n## ')[0]!;
    const unquote = (c: string): string => c.replace(/^`|`$/g, '');
    const list = (cell: string): string[] => (cell === '—' ? [] : cell.split(', ').map(unquote));
    const rows = [
      ...section.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \| (\w+) \| (\w+) \| (.+?) \| (—|`[^`]+`) \| (.+) \|$/gm),
    ].map((m) => ({
      name: m[1]!,
      status: Number(m[2]),
      shape: m[3]!,
      retryAfter: m[4]!,
      codes: list(m[5]!),
      message: m[6] === '—' ? '' : unquote(m[6]!),
      when: m[7]!,
    }));
    expect(rows).toEqual(entries.map(([name, spec]) => ({ name, ...spec })));
  });

  it("answers each of the service's codes with the code's own status and Retry-After, each code once", () => {
    const seen = new Set<string>();
    for (const [name, spec] of entries) {
      for (const code of spec.codes) {
        expect(seen.has(code), `${code} is in two entries`).toBe(false);
        seen.add(code);
        const api = API_ERRORS[code];
        expect([name, api.status, api.retryAfter]).toEqual([name, spec.status, spec.retryAfter]);
      }
    }
  });

  it('has an entry for every code a compatible request can meet: auth, the body, the budget, the submission', () => {
    // The code of every ServiceError and Fastify body error raised on that way: the app's hooks, the body's reading,
    // the service's submission (the queue's two sides included), and these routes.
    const files = [
      'src/http/app.ts',
      'src/http/body.ts',
      'src/http/body-slots.ts',
      'src/service.ts',
      ...readdirSync(join(SERVER, 'src/submit')).map((f) => `src/submit/${f}`),
      ...readdirSync(join(SERVER, 'src/compat')).map((f) => `src/compat/${f}`),
    ].filter((f) => f.endsWith('.ts'));
    const thrown = new Set<string>();
    for (const file of files) {
      const text = readFileSync(join(SERVER, file), 'utf8');
      for (const m of text.matchAll(/new ServiceError\(\s*'([A-Z_]+)'/g)) thrown.add(m[1]!);
      for (const m of text.matchAll(/new (FST_ERR_CTP_[A-Z_]+)\(/g)) thrown.add(m[1]!);
    }
    expect(thrown.size).toBeGreaterThan(10);
    const answered = new Set<string>(entries.flatMap(([, spec]) => spec.codes));
    // The compatible routes submit without an Idempotency-Key.
    expect([...thrown].filter((code) => !answered.has(code))).toEqual(['IDEMPOTENCY_KEY_REUSED']);
  });

  it("picks an error's entry: the original's errors, then by code; other client errors 400, the rest INTERNAL", () => {
    const odd = Object.assign(new Error('odd'), { statusCode: 406, code: 'FST_ERR_SOMETHING_NEW' });
    const cases: [unknown, CompatErrorName][] = [
      [new CompatValidationError([]), 'INVALID_REQUEST'],
      [
        Object.assign(new Error('x'), { statusCode: 400, code: 'FST_ERR_VALIDATION', validation: [] }),
        'INVALID_REQUEST',
      ],
      [Object.assign(new Error('x'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }), 'INVALID_REQUEST'],
      [new CompatClientError('num_trials must be at least 1', { num_trials: 0 }), 'CLIENT_ERROR'],
      [new InvalidJobError([{ path: 'job.grid', message: 'bad', type: 'RangeError' }]), 'CLIENT_ERROR'],
      [new ServiceError('CLIENT_CLOSED', 'gone'), 'BAD_REQUEST'],
      [odd, 'BAD_REQUEST'],
      [new ServiceError('TOO_MANY_LARGE_BODIES', 'busy', 5), 'TOO_MANY_LARGE_BODIES'],
      [new ServiceError('UNSUPPORTED_CONTENT_ENCODING', 'br'), 'UNSUPPORTED_MEDIA_TYPE'],
      // A code no compatible request meets (a dashboard's) is no answer of these routes': a fault if it came.
      [new ServiceError('TOO_MANY_STREAMS', 'streams', 10), 'INTERNAL'],
      [new StoreUnavailableError('down', { cause: undefined }), 'INTERNAL'],
      [new Error('a bug'), 'INTERNAL'],
      [undefined, 'INTERNAL'],
    ];
    expect(cases.map(([error]) => compatErrorOf(error))).toEqual(cases.map(([, name]) => name));
  });

  it('fills a message template once: a value that holds a placeholder stays as it is', () => {
    expect(compatMessage('JOB_NOT_FOUND', { job_id: 'ev_{job_id}' })).toBe('Job ev_{job_id} not found');
    expect(compatMessage('JOB_FAILED', { code: 'QUEUE_TIMEOUT', message: '{code}' })).toBe('QUEUE_TIMEOUT: {code}');
  });
});

// ---------------------------------------------------------------------------------------------------------------

interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  json: () => Record<string, unknown>;
}

/** The shape of an error answer, told from its body as a client of the original tells it. */
function shapeOf(body: Record<string, unknown>): CompatShape | 'other' {
  if (body.status === 'unhealthy') return 'unhealthy';
  if ('kernel_exec_result' in body && body.status === 'error') return 'job_error';
  if (body.status === 'client_error') return 'validation_errors' in body ? 'validation' : 'client_error';
  return body.status === 'error' && Object.keys(body).sort().join() === 'error,status' ? 'error' : 'other';
}

const post = (h: Awaited<ReturnType<typeof harness>>, url: string, payload: unknown, who: Who = 'alice') =>
  h.app.inject({
    method: 'POST',
    url,
    headers: { ...auth(who), 'content-type': 'application/json' },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });

/** Each entry provoked over HTTP, without a GPU (the fake pool's), through the routes as a client meets them. */
const PROVOKED: Partial<Record<CompatErrorName, () => Promise<Answer>>> = {
  INVALID_REQUEST: async () => post(await harness(), '/evaluate', { num_trials: 5 }),
  CLIENT_ERROR: async () => post(await harness(), '/evaluate', evaluateBody({ timeout: 4 })),
  BAD_REQUEST: async () => {
    const { app } = await harness();
    const headers = { ...auth('alice'), 'content-type': 'application/json', 'content-encoding': 'gzip' };
    return app.inject({ method: 'POST', url: '/evaluate', headers, payload: 'not gzip at all' });
  },
  UNKNOWN_GPU_CLASS: async () => post(await harness(), '/evaluate', evaluateBody({ cudakit: { gpu: 'A100' } })),
  UNAUTHORIZED: async () => (await harness()).app.inject({ method: 'GET', url: '/stats' }),
  FORBIDDEN: async () => post(await harness(), '/evaluate', evaluateBody(), 'viewer'),
  JOB_NOT_FOUND: async () => (await harness()).app.inject({ method: 'GET', url: '/job/nope', headers: auth('alice') }),
  BODY_TOO_LARGE: async () => post(await harness(), '/admin/cleanup-jobs', ' '.repeat(2 ** 20 + 1), 'root'),
  UNSUPPORTED_MEDIA_TYPE: async () => {
    const { app } = await harness();
    const headers = { ...auth('alice'), 'content-type': 'text/plain' };
    return app.inject({ method: 'POST', url: '/evaluate', headers, payload: JSON.stringify(evaluateBody()) });
  },
  RATE_LIMITED: async () => {
    const h = await harness({ submitsPerMinute: 1 });
    await post(h, '/evaluate', {}); // counted before its body is read
    return post(h, '/evaluate', {});
  },
  QUEUE_FULL_FOR_PRINCIPAL: async () =>
    post(await harness({ limits: { maxQueuedPerPrincipal: 0 } }), '/evaluate', evaluateBody()),
  JOB_TIMED_OUT: async () => {
    const h = await harness({ compatSyncWaitMs: () => 20 });
    h.pool.script = () => ({ delayMs: Infinity, outcome: { kind: 'cancelled' } });
    return post(h, '/evaluate', evaluateBody());
  },
  JOB_FAILED: async () => {
    const h = await harness();
    h.pool.script = (job) => scriptByName({ ...job, name: 'crash-outside' });
    return post(h, '/evaluate', evaluateBody());
  },
  JOB_CANCELLED: async () => {
    const h = await harness();
    h.pool.script = () => ({ delayMs: Infinity, outcome: { kind: 'cancelled' } });
    const answer = post(h, '/evaluate', evaluateBody());
    await until(() => h.pool.running().length === 1);
    await h.service.cancel(h.pool.running()[0]!);
    return answer;
  },
  UNHEALTHY: async () => {
    const h = await harness();
    h.service.store.counts = () => Promise.reject(new Error('the disk is gone'));
    return h.app.inject({ method: 'GET', url: '/health', headers: auth('alice') });
  },
  INTERNAL: async () => {
    const h = await harness();
    h.service.store.counts = () => Promise.reject(new Error('the disk is gone'));
    return h.app.inject({ method: 'GET', url: '/stats', headers: auth('alice') });
  },
  NO_GPU: async () =>
    post(await harness({ unavailableReason: 'CUDA_DRIVER_NOT_FOUND: no driver' }), '/evaluate', evaluateBody()),
  NO_GPU_OF_CLASS: async () => {
    const h = await harness();
    h.pool.setState(h.pool.slots()[0]!.uuid, 'quarantined');
    return post(h, '/evaluate', evaluateBody());
  },
  QUEUE_FULL: async () => post(await harness({ limits: { maxQueued: 0 } }), '/evaluate', evaluateBody()),
  SHUTTING_DOWN: async () => {
    const h = await harness();
    h.service.close();
    return post(h, '/evaluate', evaluateBody());
  },
};

describe('each entry, as the routes answer it', () => {
  it('provokes every entry but TOO_MANY_LARGE_BODIES, which needs many large bodies in flight at once', () => {
    const left = entries.map(([name]) => name).filter((name) => PROVOKED[name] === undefined);
    expect(left).toEqual(['TOO_MANY_LARGE_BODIES']);
  });

  it.each(entries.filter(([name]) => PROVOKED[name] !== undefined))(
    '%s: its status, shape, text and Retry-After',
    async (name, spec) => {
      const res = await PROVOKED[name]!();
      const body = res.json();
      expect([res.statusCode, shapeOf(body)], JSON.stringify(body)).toEqual([spec.status, spec.shape]);
      // The table's name is never sent (but as the v1 code it also is), and every answer keeps the no-cache headers.
      if (!(spec.codes as readonly string[]).includes(name)) expect(JSON.stringify(body)).not.toContain(`"${name}"`);
      expect(res.headers['cache-control']).toBe('no-cache, no-store, must-revalidate');
      if (spec.message !== '') {
        const template = spec.message.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '.+');
        expect(body.error).toMatch(new RegExp(`^${template}$`));
      }
      if (spec.shape === 'client_error' && spec.codes.length > 0 && name !== 'CLIENT_ERROR') {
        expect(spec.codes).toContain((body.details as { code: string }).code);
      }
      if (spec.retryAfter === 'always') expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      if (spec.retryAfter === 'never') expect(res.headers['retry-after']).toBeUndefined();
    },
  );

  it("leaves a job_id over 100 characters to the router's 414, before the routes' handler (the doc says)", async () => {
    const { app } = await harness();
    const res = await app.inject({ method: 'GET', url: `/job/${'x'.repeat(101)}`, headers: auth('alice') });
    expect([res.statusCode, res.json().code]).toEqual([414, 'FST_ERR_MAX_PARAM_LENGTH']);
  });
});
