// SPDX-License-Identifier: MIT
// Request bodies with bounded memory (server/src/http/body.ts, body-slots.ts, body-scan.ts): the slots large bodies
// are read with, the scanner that counts bounded strings as a body arrives, parseBody against JSON.parse, the routes'
// early refusals, and eight concurrent 60 MB bodies against the real binary on loopback, its peak memory read from
// /proc.
import { request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import type { EvalJob } from 'cudakit';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseBody } from '../../src/http/body.js';
import { JsonScanner, LONG_STRING_BYTES, stringBoundsOf } from '../../src/http/body-scan.js';
import { BodySlots, LARGE_BODY_BYTES, LARGE_BODY_SLOT_BYTES } from '../../src/http/body-slots.js';
import { ServiceError } from '../../src/errors.js';
import { SubmitBody } from '../../src/http/schemas/v1.js';
import { SOURCE_CHARS_MAX } from '../../src/submit/fields.js';
import { CompareRequest, EvaluationRequest } from '../../src/compat/schemas.js';
import { auth, closeApps, harness } from '../support/app-harness.js';
import { body } from '../support/helpers.js';
import { FAKE_GPU_ENV, peakRssBytes, startServer, type ServerProcess } from '../support/server-process.js';

afterEach(closeApps);

describe('BodySlots', () => {
  it('gives one slot per 32 MiB a body may reach, first come first served, and 503 past the wait', async () => {
    const slots = new BodySlots(2, 50, 2);
    expect(slots.slotsFor(LARGE_BODY_BYTES + 1)).toBe(1);
    expect(slots.slotsFor(LARGE_BODY_SLOT_BYTES)).toBe(1);
    expect(slots.slotsFor(LARGE_BODY_SLOT_BYTES + 1)).toBe(2);
    expect(slots.slotsFor(10 * LARGE_BODY_SLOT_BYTES)).toBe(2); // never more than there are
    const small = await slots.acquire(1);
    const order: string[] = [];
    // Two slots wanted while one is taken: it waits, and the one-slot body behind it waits too (no overtaking).
    const big = slots.acquire(2).then((release) => (order.push('big'), release));
    const next = slots.acquire(1).then((release) => (order.push('next'), release));
    expect(slots.waiting).toBe(2);
    await expect(slots.acquire(1)).rejects.toMatchObject({ statusCode: 503, code: 'TOO_MANY_LARGE_BODIES' });
    small();
    small(); // a second release gives nothing back
    (await big)();
    (await next)();
    expect(order).toEqual(['big', 'next']);
    expect(slots.inUse).toBe(0);

    const held = await slots.acquire(2);
    const late = await slots.acquire(1).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(ServiceError);
    expect(late).toMatchObject({ statusCode: 503, retryAfterSeconds: expect.any(Number) });
    held();
    expect(slots.inUse).toBe(0);
  });

  it('lets a waiting request go when its client leaves, and those behind it move up', async () => {
    const slots = new BodySlots(2, 10_000);
    const held = await slots.acquire(1);
    const gone = new AbortController();
    const leaving = slots.acquire(2, gone.signal);
    const behind = slots.acquire(1);
    gone.abort(new Error('gone'));
    await expect(leaving).rejects.toThrow('gone');
    (await behind)();
    held();
    expect([slots.inUse, slots.waiting]).toEqual([0, 0]);
  });
});

describe('stringBoundsOf', () => {
  it('finds the sources the routes bound, through unions and records, and nothing where any string goes', () => {
    const v1 = stringBoundsOf(SubmitBody)!;
    expect(v1.properties!.get('source')!.maxChars).toBe(SOURCE_CHARS_MAX);
    expect(v1.properties!.get('source')!.properties!.get('text')!.maxChars).toBe(SOURCE_CHARS_MAX);
    expect(v1.properties!.get('headers')!.other!.maxChars).toBe(SOURCE_CHARS_MAX);
    expect(v1.properties!.get('args')!.items!.maxChars).toBe(4096);
    // reference and compare take any object: nothing in them is bounded here.
    expect(v1.properties!.has('reference')).toBe(false);
    const evaluate = stringBoundsOf(EvaluationRequest)!;
    expect(evaluate.properties!.get('kernel')!.properties!.get('source_code')!.maxChars).toBe(SOURCE_CHARS_MAX);
    const compare = stringBoundsOf(CompareRequest)!;
    for (const side of ['ref_kernel', 'custom_kernel']) {
      expect(compare.properties!.get(side)!.properties!.get('source_code')!.maxChars).toBe(SOURCE_CHARS_MAX);
    }
    // A union with an unbounded string branch, or a branch of any type, bounds nothing.
    expect(stringBoundsOf({ anyOf: [{ type: 'string', maxLength: 3 }, { type: 'string' }] })).toBeUndefined();
    expect(stringBoundsOf({ anyOf: [{ type: 'string', maxLength: 3 }, {}] })).toBeUndefined();
    expect(stringBoundsOf({ anyOf: [{ type: 'string', maxLength: 3 }, { type: 'null' }] })).toEqual({ maxChars: 3 });
    expect(
      stringBoundsOf({
        anyOf: [
          { type: 'string', maxLength: 3 },
          { type: 'string', maxLength: 9 },
        ],
      }),
    ).toEqual({ maxChars: 9 });
  });
});

/** Feeds `text` to a scanner of `bounds` in pieces of `step` bytes; the first string over its bound. */
function scan(bounds: Parameters<typeof stringBoundsOf>[0], text: string | Buffer, step = 7) {
  const scanner = new JsonScanner(stringBoundsOf(bounds));
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  for (let at = 0; at < bytes.length; at += step) {
    const over = scanner.feed(bytes.subarray(at, at + step));
    if (over !== undefined) return { over, scanner };
  }
  return { over: undefined, scanner };
}

describe('JsonScanner', () => {
  const schema = {
    type: 'object',
    properties: {
      s: { type: 'string', maxLength: 4 },
      list: { type: 'array', items: { type: 'object', properties: { s: { type: 'string', maxLength: 4 } } } },
    },
  };

  it('counts characters as ajv does (code points) and names the string as ajv would', () => {
    for (const ok of [
      '"abcd"',
      '"a\\nbc"',
      '"\\u00e9\\u00e9\\u00e9\\u00e9"',
      '"éééé"',
      '"😀😀😀😀"',
      '"\\ud83d\\ude00abc"',
    ]) {
      expect(scan(schema, `{"s":${ok}}`, 1).over, ok).toBeUndefined();
    }
    for (const over of ['"abcde"', '"a\\n\\nbc"', '"ééééé"', '"😀😀😀😀😀"', '"\\"\\"\\"\\"\\""']) {
      expect(scan(schema, `{"s":${over}}`, 1).over, over).toEqual({ instancePath: '/s', maxChars: 4 });
    }
    expect(scan(schema, '{"x":"abcdefgh","list":[{"s":"ok"},{"t":"abcdefgh","s":"abcdefgh"}]}').over).toEqual({
      instancePath: '/list/1/s',
      maxChars: 4,
    });
    // Names: an unknown one, one with a quote escaped inside, a string that holds braces and quotes.
    expect(scan(schema, '{"q\\"s":"abcdefgh","z":"{\\"s\\":\\"abcdefgh","s":"abc"}').over).toBeUndefined();
  });

  it('notes each long string value, its bytes and whether it holds an escape', () => {
    const long = 'x'.repeat(LONG_STRING_BYTES);
    const text = `{"a":"${long}","${long}":1,"b":["short","${long}\\n"]}`;
    const { scanner } = scan({}, text, 4096);
    expect(scanner.longStrings).toEqual([
      { start: 6, end: 6 + LONG_STRING_BYTES, escaped: false },
      { start: text.lastIndexOf(long), end: text.lastIndexOf(long) + LONG_STRING_BYTES + 2, escaped: true },
    ]);
  });
});

/** parseBody over a whole text (as the reader hands it on, scanned in socket-sized pieces). */
function parseText(text: string, chunk = 65_536): unknown {
  const bytes = Buffer.from(text);
  const scanner = new JsonScanner(undefined);
  for (let at = 0; at < bytes.length; at += chunk) scanner.feed(bytes.subarray(at, at + chunk));
  let released = false;
  const result = parseBody(
    {
      get bytes() {
        if (released) throw new Error('read after release');
        return bytes;
      },
      release: () => (released = true),
    },
    scanner.longStrings,
    (t) => JSON.parse(t),
  );
  expect(released).toBe(true);
  return result;
}

describe('JsonScanner past the depth it follows', () => {
  it('counts deeper levels instead of keeping a frame each, and takes nothing out of them', () => {
    const long = 'd'.repeat(LONG_STRING_BYTES);
    // Deep enough to pass the followed depth, with a long name and a long value down there.
    const deep = `${'{"k":['.repeat(50)}{"${long}":"${long}"}${']}'.repeat(50)}`;
    expect(parseText(deep)).toEqual(JSON.parse(deep));
    const { scanner } = scan({}, deep, 65_536);
    expect(scanner.longStrings).toEqual([]);
    // A long value after the deep part is still taken out, and a megabyte of '[' is a counter.
    const after = `[${deep},"${long}"]`;
    expect(scan({}, after, 65_536).scanner.longStrings).toHaveLength(1);
    expect(parseText(after)).toEqual(JSON.parse(after));
    expect(scan({}, '['.repeat(2 ** 20), 65_536).over).toBeUndefined();
  });

  it('holds 8 MiB of nesting in a few bytes of memory', () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    expect(gc, 'the tests run with --expose-gc (vitest.config.mts)').toBeDefined();
    gc!();
    const before = process.memoryUsage().heapUsed;
    const scanner = new JsonScanner(undefined);
    const chunk = Buffer.alloc(65_536, '[');
    for (let i = 0; i < 128; i++) scanner.feed(chunk);
    gc!();
    const grown = process.memoryUsage().heapUsed - before;
    expect(scanner.longStrings).toEqual([]);
    expect(grown, `${(grown / 2 ** 20).toFixed(1)} MiB`).toBeLessThan(16 * 2 ** 20);
  });
});

describe('parseBody', () => {
  it('gives what JSON.parse gives, long strings included', () => {
    const long = fc
      .tuple(
        fc.constantFrom('A', 'é', '😀', '\\n', '\\"', '\\u0041', '\\ud83d\\ude00', '/'),
        fc.integer({ min: 1, max: 3 }),
      )
      .map(([piece, k]) => `"${piece.repeat(Math.ceil((LONG_STRING_BYTES * k) / piece.length))}"`);
    const value: fc.Arbitrary<string> = fc.letrec<{ v: string }>((tie) => ({
      v: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        long,
        fc.json({ maxDepth: 1 }),
        fc.array(tie('v'), { maxLength: 3 }).map((items) => `[${items.join(',')}]`),
        fc
          .array(fc.tuple(fc.string({ maxLength: 5 }), tie('v')), { maxLength: 3 })
          .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
      ),
    })).v;
    fc.assert(
      fc.property(value, fc.constantFrom(1000, 65_536), (text, chunk) => {
        expect(parseText(text, chunk)).toEqual(JSON.parse(text));
      }),
      { numRuns: 60 },
    );
    const long1 = 'b'.repeat(LONG_STRING_BYTES);
    // A name given twice keeps its last value, as JSON.parse does; a long root string is a long string too.
    expect(parseText(`{"a":"${long1}","a":"${long1}c"}`)).toEqual({ a: `${long1}c` });
    expect(parseText(`"${long1}"`)).toBe(long1);
  });

  it('refuses what JSON.parse refuses: a raw control character or a bad escape inside a long string', () => {
    const long = 'c'.repeat(LONG_STRING_BYTES);
    expect(() => parseText(`{"a":"${long}\t"}`)).toThrow(
      expect.objectContaining({ code: 'FST_ERR_CTP_INVALID_JSON_BODY' }),
    );
    expect(() => parseText(`{"a":"${long}\\x"}`)).toThrow(
      expect.objectContaining({ code: 'FST_ERR_CTP_INVALID_JSON_BODY' }),
    );
    expect(() => parseText(`{"a":"${long}"`)).toThrow(SyntaxError);
  });
});

describe('the routes', () => {
  const over = 'x'.repeat(SOURCE_CHARS_MAX + 1);

  it('refuse a source over its limit as their schema does, with the rest of the body not read', async () => {
    const { app } = await harness();
    // What follows the long source is not JSON at all: the answer is the source's, given before the end is read.
    const payload = `{"source":"${over}` + 'z'.repeat(2 * LARGE_BODY_BYTES);
    const headers = { ...auth('alice'), 'content-type': 'application/json' };
    const v1 = await app.inject({ method: 'POST', url: '/v1/evaluations', headers, payload });
    expect(v1.statusCode).toBe(400);
    expect(v1.json()).toEqual({
      statusCode: 400,
      code: 'FST_ERR_VALIDATION',
      error: 'Bad Request',
      message: `Invalid request: body.source must NOT have more than ${SOURCE_CHARS_MAX} characters`,
      details: [{ path: 'body.source', message: `must NOT have more than ${SOURCE_CHARS_MAX} characters` }],
    });
    const compat = await app.inject({
      method: 'POST',
      url: '/compare',
      headers,
      payload: `{"ref_kernel":{"kernel_type":"cuda","source_code":"${over}` + 'z'.repeat(2 * LARGE_BODY_BYTES),
    });
    expect(compat.statusCode).toBe(400);
    expect(compat.json()).toMatchObject({
      error: 'Invalid request format',
      status: 'client_error',
      validation_errors: [expect.objectContaining({ field: 'ref_kernel -> source_code' })],
    });
    // At the limit it is not refused for its length.
    const atLimit = { ...body(), source: 'x'.repeat(SOURCE_CHARS_MAX) };
    const res = await app.inject({ method: 'POST', url: '/v1/evaluations', headers, payload: atLimit });
    expect(res.json().details ?? []).not.toContainEqual(expect.objectContaining({ path: 'body.source' }));
  });

  it('read chunked and compressed bodies into the same objects, and a large body with long strings', async () => {
    const { app, service } = await harness();
    const literal = Buffer.alloc(4 * 300_000, 7).toString('base64');
    const job = body('pass', {
      source: 'extern "C" __global__ void k(const float* x, float* y, int n) { y[threadIdx.x] = x[threadIdx.x]; }',
      args: [
        { kind: 'buffer', dtype: 'f32', length: 300_000, role: 'in', init: { kind: 'data', base64: literal } },
        'ptr:f32[32]:out',
        'i32=32',
      ],
    });
    const text = JSON.stringify(job);
    expect(text.length).toBeGreaterThan(LARGE_BODY_BYTES);
    const server = await app.listen({ port: 0, host: '127.0.0.1' });
    const post = (chunks: Buffer[], extra: Record<string, string>): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        // No Content-Length: Node sends it chunked.
        const req = httpRequest(`${server}/v1/evaluations`, {
          method: 'POST',
          headers: { ...auth('alice'), 'content-type': 'application/json', ...extra },
        });
        req.on('response', (res) => {
          let out = '';
          res.setEncoding('utf8').on('data', (c: string) => (out += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: out }));
        });
        req.on('error', reject);
        for (const c of chunks) req.write(c);
        req.end();
      });
    const bytes = Buffer.from(text);
    const pieces = Array.from({ length: Math.ceil(bytes.length / 100_000) }, (_, i) =>
      bytes.subarray(i * 100_000, (i + 1) * 100_000),
    );
    const chunked = await post(pieces, {});
    expect(chunked.status, chunked.body).toBe(202);
    expect(((await service.get(JSON.parse(chunked.body).id))!.job as EvalJob).args).toEqual(job.args);
    const zipped = await post([gzipSync(bytes)], { 'content-encoding': 'gzip' });
    expect(zipped.status, zipped.body).toBe(202);
    expect(((await service.get(JSON.parse(zipped.body).id))!.job as EvalJob).args).toEqual(job.args);
  });
});

describe('eight concurrent 60 MB bodies against the real binary', () => {
  /**
   * What the bodies may add to the server's peak resident memory since its start (about 200 MiB on every Node line):
   * a 60 MB body takes both slots, so one is read at a time, and its bytes, its string and its parse (and the last
   * one's, until the collector runs) stay well under this. Unbounded, the peak reached 863 MB.
   */
  const PEAK_RSS_GROWTH_LIMIT_BYTES = 320 * 2 ** 20;
  const BODY_BYTES = 60 * 10 ** 6;
  let server: ServerProcess | undefined;
  afterAll(async () => server?.stop());

  it('reads them a few at a time: the rest wait or get 503 with Retry-After, and the server stays well', async () => {
    server = await startServer([], FAKE_GPU_ENV);
    const url = new URL('/v1/evaluations', server.url);
    const startPeak = peakRssBytes(server.pid);
    // A job whose one argument carries an unknown field holding 60 MB: read and parsed whole, then a 400.
    const head = Buffer.from(
      JSON.stringify({ ...body(), args: [{ kind: 'buffer', dtype: 'f32', length: 1, data: '' }] }).replace(
        /"data":""/,
        '"data":"',
      ),
    );
    const tail = Buffer.from(head.toString().slice(head.toString().indexOf('"data":"') + 8));
    const prefix = head.subarray(0, head.length - tail.length);
    const filler = Buffer.alloc(BODY_BYTES - prefix.length - tail.length - 1, 'A'.charCodeAt(0));
    const payload = Buffer.concat([prefix, filler, Buffer.from('"'), tail]);
    expect(payload.length).toBe(BODY_BYTES);
    expect(() => JSON.parse(payload.toString())).not.toThrow();

    const send = (): Promise<{ status: number; retryAfter: string | undefined; code: string | undefined }> =>
      new Promise((resolve, reject) => {
        const req = httpRequest(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': String(payload.length) },
        });
        req.setTimeout(60_000, () => req.destroy(new Error('no answer within 60 s')));
        req.on('response', (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => (text += c));
          res.on('end', () => {
            const retryAfter = res.headers['retry-after'];
            resolve({ status: res.statusCode!, retryAfter, code: (JSON.parse(text) as { code?: string }).code });
          });
        });
        req.on('error', reject);
        req.end(payload);
      });
    const answers = await Promise.all(Array.from({ length: 8 }, send));
    const peak = peakRssBytes(server.pid);

    for (const a of answers) {
      if (a.status === 503)
        expect(a).toMatchObject({ code: 'TOO_MANY_LARGE_BODIES', retryAfter: expect.stringMatching(/^\d+$/) });
      else expect(a).toMatchObject({ status: 400, code: 'ERR_INVALID_JOB' });
    }
    expect(answers.filter((a) => a.status === 400).length).toBeGreaterThan(0);
    const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
    expect(peak - startPeak, `peak RSS ${mib(peak)}, ${mib(startPeak)} at start`).toBeLessThan(
      PEAK_RSS_GROWTH_LIMIT_BYTES,
    );

    // Still alive, and a correct small request is taken.
    const ok = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body()),
    });
    expect(ok.status, await ok.clone().text()).toBe(202);
    expect(server.child.exitCode).toBeNull();
  }, 120_000);
});
