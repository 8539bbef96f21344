// SPDX-License-Identifier: MIT
// The service's one table of error codes (server/src/errors.ts): the server README lists it as it is, every code in it
// is one the server can answer, and every error body the app builds carries one of them.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// The server's cudakit (the package), whose InvalidJobError errorBodyOf knows.
import { InvalidJobError } from 'cudakit';
import { errorBodyOf } from '../src/http/shared.js';
import { API_ERRORS, ServiceError, isApiErrorCode } from '../src/errors.js';

const SERVER = join(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Codes Fastify itself raises (its content-type parsers): no source of the server names them. */
const FASTIFY_OWN = new Set([
  'FST_ERR_CTP_INVALID_JSON_BODY',
  'FST_ERR_CTP_EMPTY_JSON_BODY',
  'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
  'FST_ERR_CTP_INVALID_MEDIA_TYPE',
]);

describe('the error table', () => {
  it("is the server README's table, row for row", () => {
    const readme = readFileSync(join(SERVER, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### Errors'));
    const rows = [...section.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \| (\w+) \| (.*) \|$/gm)].map((m) => ({
      code: m[1]!,
      status: Number(m[2]),
      retryAfter: m[3]!,
      meaning: m[4]!,
    }));
    const table = Object.entries(API_ERRORS).map(([code, s]) => ({ code, ...s }));
    expect(rows).toEqual(table);
  });

  it('has no code the server never answers: each is named in a source besides the table, or raised by Fastify', () => {
    const text = sources(join(SERVER, 'src'))
      .filter((f) => !f.endsWith('errors.ts'))
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const unused = Object.keys(API_ERRORS).filter((c) => !FASTIFY_OWN.has(c) && !text.includes(`'${c}'`));
    // ERR_INVALID_JOB is cudakit's InvalidJobError's own code.
    expect(unused).toEqual(['ERR_INVALID_JOB']);
  });

  it('takes the status from the table', () => {
    const e = new ServiceError('QUEUE_FULL', 'full', 12);
    expect([e.statusCode, e.code, e.retryAfterSeconds]).toEqual([503, 'QUEUE_FULL', 12]);
  });

  it('every error body carries a code of the table, an unknown client error a plain 400', () => {
    const bodies = [
      errorBodyOf(new InvalidJobError([{ path: 'job.grid', message: 'bad', type: 'RangeError' }])),
      errorBodyOf(Object.assign(new Error('x'), { statusCode: 400, validation: [], validationContext: 'body' })),
      errorBodyOf(new ServiceError('NO_GPU', 'none')),
      errorBodyOf(Object.assign(new Error('odd'), { statusCode: 406, code: 'FST_ERR_SOMETHING_NEW' })),
      errorBodyOf(Object.assign(new Error('media'), { statusCode: 415, code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' })),
      errorBodyOf(new Error('a bug')),
    ];
    for (const b of bodies) expect(isApiErrorCode(b.code), b.code).toBe(true);
    expect(bodies.map((b) => [b.statusCode, b.code])).toEqual([
      [400, 'ERR_INVALID_JOB'],
      [400, 'FST_ERR_VALIDATION'],
      [503, 'NO_GPU'],
      [400, 'BAD_REQUEST'],
      [415, 'FST_ERR_CTP_INVALID_MEDIA_TYPE'],
      [500, 'INTERNAL'],
    ]);
  });
});
