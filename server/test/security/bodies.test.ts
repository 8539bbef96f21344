// SPDX-License-Identifier: MIT
// Security, request bodies (SECURITY.md's attack table): large bodies on either side of the limit, compression bombs
// and other encodings, JSON nested 100,000 deep in every object field, invalid UTF-8, hostile numbers in every
// numeric field, 10,000 buffers, a 50 MB source, problem names that look like paths, unknown fields and __proto__;
// on POST /v1/evaluations and, where the route differs, the compatible POST /evaluate and the MCP tools. (Bodies of a
// gigabyte, chunked or declared, need a socket: connections.test.ts.) Each answer is checked for its status and for
// leaks; after each row the server still runs a correct job.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { ProblemRegistry } from '../../src/submit/problems.js';
import type { Harness } from '../support/app-harness.js';
import { evaluateBody, settled } from '../support/helpers.js';
import {
  auth,
  body,
  expectAnswer,
  expectError,
  mcpCall,
  mcpResult,
  securityHarness,
  sharedHarness,
  compatPost,
  submit,
} from './helpers.js';

let h: Harness;
const own: Harness[] = [];
sharedHarness((x) => (h = x), own);
afterEach(() => {
  // No body, however hostile, reached Object.prototype.
  expect(Object.keys(Object.prototype)).toEqual([]);
});

const JSON_TYPE = { 'content-type': 'application/json' };
const MB = 1_000_000;

/** A JSON text of `bytes` bytes: `json` with blanks before its last brace. */
function padded(json: string, bytes: number): string {
  return `${json.slice(0, -1)}${' '.repeat(bytes - json.length)}}`;
}

/** The job's text with `"field": <json>` added at the top level (or in place of a field it has). */
function withField(field: string, json: string, base: Record<string, unknown> = body()): string {
  const rest = { ...base };
  delete rest[field];
  return `${JSON.stringify(rest).slice(0, -1)},"${field}":${json}}`;
}

describe('security: request bodies', () => {
  // MCP's limit is the same route option (mcp.test.ts: 'a body over the submitting routes' limit is a 413').
  it('bodies of 60 MB are taken and run; of 70 MB are 413, on /v1 and on the compatible route', async () => {
    // Blanks make up the size: read whole and parsed (long literal strings are server/test/http/body.test.ts's).
    const taken = await submit(h, padded(JSON.stringify(body()), 60 * MB));
    expectAnswer(taken, 202, '60 MB on /v1/evaluations');
    expect((await settled(h.service, taken.json().id as string)).status).toBe('succeeded');
    const compatible = await compatPost(h, '/evaluate', padded(JSON.stringify(evaluateBody()), 60 * MB));
    expectAnswer(compatible, 200, '60 MB on /evaluate');
    expect(compatible.json()).toMatchObject({ status: 'success' });

    const seventy = padded(JSON.stringify(body()), 70 * MB);
    expectError(await submit(h, seventy), 413, 'FST_ERR_CTP_BODY_TOO_LARGE', '70 MB on /v1/evaluations');
    expectAnswer(
      await compatPost(h, '/evaluate', padded(JSON.stringify(evaluateBody()), 70 * MB)),
      413,
      '70 MB /evaluate',
    );
  });

  it('gzip and deflate bombs are 413; br, double and unknown encodings 415; garbage gzip 400', async () => {
    // 65 MiB of spaces: a gzip stream of 65 members of 1 MiB each (one inflates as all of them), and one deflate.
    const mib = gzipSync(Buffer.alloc(2 ** 20, 0x20), { level: 9 });
    const post = (url: string, payload: Buffer | string, encoding: string) =>
      h.app.inject({
        method: url.startsWith('/v1/evaluations/') ? 'DELETE' : 'POST',
        url,
        headers: { ...auth('alice'), ...JSON_TYPE, 'content-encoding': encoding },
        payload,
      });
    const bombs: Array<[string, Buffer]> = [
      ['gzip', Buffer.concat(Array<Buffer>(65).fill(mib))],
      ['deflate', deflateSync(Buffer.alloc(65 * 2 ** 20, 0x20), { level: 1 })],
    ];
    for (const [encoding, bomb] of bombs) {
      expect(bomb.length).toBeLessThan(2 ** 20);
      for (const url of encoding === 'gzip' ? ['/v1/evaluations', '/mcp'] : ['/v1/evaluations']) {
        expectAnswer(await post(url, bomb, encoding), 413, `${encoding} bomb on ${url}`);
      }
    }
    // On a route of 1 MiB, two inflated MiB are too many.
    const small = gzipSync(Buffer.alloc(2 * 2 ** 20, 0x20));
    expectAnswer(await post(`/v1/evaluations/ev_01ARZ3NDEKTSV4RRFFQ69G5FAV`, small, 'gzip'), 413, 'gzip on DELETE');
    const valid = Buffer.from(JSON.stringify(body()));
    for (const encoding of ['br', 'compress', 'gzip, gzip', 'gzip,deflate', 'identity, gzip', 'zstd', 'x-bomb']) {
      expectError(
        await post('/v1/evaluations', gzipSync(gzipSync(valid)), encoding),
        415,
        'UNSUPPORTED_CONTENT_ENCODING',
        encoding,
      );
    }
    // Twice compressed but said once: inflated once, it is not JSON.
    expectAnswer(await post('/v1/evaluations', gzipSync(gzipSync(valid)), 'gzip'), 400, 'gzip of gzip');
    const gz = gzipSync(valid);
    for (const [what, garbage] of [
      ['random bytes', Buffer.from('this is not gzip at all')],
      ['a truncated stream', gz.subarray(0, gz.length - 12)],
      ['a bad checksum', Buffer.concat([gz.subarray(0, gz.length - 8), Buffer.alloc(8, 0xff)])],
      ['deflate said gzip', deflateSync(valid)],
    ] as const) {
      expectAnswer(await post('/v1/evaluations', garbage, 'gzip'), 400, `garbage gzip: ${what}`);
    }
    expectAnswer(await post('/v1/evaluations', Buffer.from('garbage'), 'deflate'), 400, 'garbage deflate');
    // What fits is taken: the encodings work.
    expectAnswer(await post('/v1/evaluations', gz, 'gzip'), 202, 'a gzip body that fits');
  });

  it('JSON nested 100,000 deep in every object field: 400 before anything recurses over it', async () => {
    const deep = (open: string, close: string, leaf = '1') => open.repeat(100_000) + leaf + close.repeat(100_000);
    const objects = deep('{"a":', '}');
    const arrays = deep('[', ']');
    const fields = [
      'grid',
      'block',
      'sharedMemBytes',
      'clusterDim',
      'signature',
      'args',
      'reference',
      'compare',
      'check',
      'timing',
      'headers',
      'source',
      'compile',
      'mode',
      'preset',
      'bytes',
      'flops',
    ];
    // A field that takes a number or a list gets arrays; one that takes an object gets an object whose one member
    // nests arrays, or (three of them) objects all the way down. Each is an Unknown or a shape to the schema; the
    // first check to walk them is admission's, which does not recurse.
    const inObject = `{"a":${arrays}}`;
    const takesObject = new Set(['reference', 'compare', 'check', 'timing', 'headers', 'source', 'compile']);
    const allObjects = new Set(['check', 'compile', 'reference']);
    for (const field of fields) {
      const json = allObjects.has(field) ? objects : takesObject.has(field) ? inObject : arrays;
      expectAnswer(await submit(h, withField(field, json)), 400, `${field}: ${json.slice(0, 12)}`);
    }
    // Inside the fields that take objects: an argument, a reference's, the defines.
    const inner: Array<[string, string, string]> = [
      ['an argument', 'args', `[${arrays},"i32=32"]`],
      ['an argument object', 'args', `[{"kind":"buffer","dtype":"f32","length":32,"init":${inObject}},"i32=32"]`],
      ['the reference', 'reference', `{"source":"x","kernel":"k","args":${arrays}}`],
      ['the defines', 'compile', `{"defines":${inObject}}`],
    ];
    for (const [what, field, json] of inner) expectAnswer(await submit(h, withField(field, json)), 400, what);
    expectAnswer(await submit(h, arrays), 400, 'the body itself');
    // The compatible route takes unknown keys as the original does, and ignores them: nesting there is never walked
    // (the job run has none of it); where its schema has a shape, nesting is a 400. MCP's arguments too.
    const request = evaluateBody();
    const kernel = JSON.stringify(request.kernel).slice(0, -1);
    const ignored = [
      `{"kernel":${kernel.replace('"metadata":{', `"metadata":{"x":${objects},`)}},"extra":${arrays}}`,
      `{"kernel":${kernel.replace('"launch":{', `"launch":{"x":${inObject},`)}}}`,
    ];
    for (const payload of ignored) {
      const res = await compatPost(h, '/evaluate', payload);
      expectAnswer(res, 200, `/evaluate, ignored: ${payload.slice(0, 60)}`);
      const job = (await h.service.get(res.json().job_id as string))!.job;
      expect(JSON.stringify(job).length).toBeLessThan(4096);
    }
    const shaped = [
      `{"kernel":${kernel}},"num_trials":${arrays}}`,
      `{"kernel":${kernel}},"num_trials":${inObject}}`,
      `{"kernel":${kernel.replace('"io":{', `"io":{"args":${inObject},"x":`)}}}`,
      `{"kernel":${kernel.replace('"launch":{', `"launch":{"grid":${arrays},"x":`)}}}`,
      `{"kernel":${kernel}},"cudakit":${objects}}`,
    ];
    for (const payload of shaped) {
      expectAnswer(await compatPost(h, '/evaluate', payload), 400, `/evaluate, shaped: ${payload.slice(0, 60)}`);
    }
    const mcp = await mcpCall(
      h,
      'evaluate_kernel',
      `${JSON.stringify(request).slice(0, -1)},"num_trials":${inObject}}`,
    );
    expectAnswer(mcp, 200, 'MCP arguments');
    expect(mcpResult(mcp).isError).toBe(true);
  });

  it('invalid UTF-8 in text fields becomes U+FFFD (taken as text); outside strings it is a 400', async () => {
    const bad = [
      Buffer.from([0xff, 0xfe]),
      Buffer.from([0xc3, 0x28]),
      Buffer.from([0xc0, 0xaf]), // an overlong '/'
      Buffer.from([0xed, 0xa0, 0x80]), // a surrogate, UTF-8 encoded
      Buffer.from([0xf4, 0x90, 0x80, 0x80]), // beyond U+10FFFF
      Buffer.from([0xe2, 0x82]), // truncated
    ];
    const decoder = new TextDecoder('utf-8', { fatal: true });
    for (const bytes of bad) {
      const what = bytes.toString('hex');
      const text = JSON.stringify(body('pass', { name: 'utf8-NAME', source: `// SRC\n${String(body().source)}` }));
      const [a, b] = text.split('NAME');
      const [c, d] = b!.split('SRC');
      const payload = Buffer.concat([Buffer.from(a!), bytes, Buffer.from(c!), bytes, Buffer.from(d!)]);
      const res = await submit(h, payload);
      expectAnswer(res, 202, `invalid UTF-8 ${what}`);
      const id = res.json().id as string;
      expect((await settled(h.service, id)).status).toBe('succeeded');
      // What comes back, as JSON and as a page, is UTF-8 with U+FFFD where the bytes were.
      for (const [url, headers] of [
        [`/v1/evaluations/${id}`, auth('alice')],
        [`/evaluations/${id}`, { ...auth('alice'), accept: 'text/html' }],
      ] as const) {
        const got = await h.app.inject({ method: 'GET', url, headers });
        expectAnswer(got, 200, `${url} ${what}`);
        expect(() => decoder.decode(got.rawPayload), `${url} ${what}`).not.toThrow();
        expect(got.body).toContain('utf8-\ufffd');
      }
      // The compatible route takes the source as text too.
      const source = Buffer.from(JSON.stringify(evaluateBody()));
      const at = source.indexOf('__global__');
      const compat = Buffer.concat([source.subarray(0, at), Buffer.from('// '), bytes, source.subarray(at)]);
      const answer = await compatPost(h, '/evaluate', compat);
      expectAnswer(answer, 200, `/evaluate ${what}`);
      expect(() => decoder.decode(answer.rawPayload)).not.toThrow();
      // Outside a string the bytes are no JSON at all.
      const outside = Buffer.concat([Buffer.from(JSON.stringify(body()).slice(0, -1)), bytes, Buffer.from('}')]);
      expectError(await submit(h, outside), 400, 'FST_ERR_CTP_INVALID_JSON_BODY', `outside a string ${what}`);
    }
    // Lone surrogates and NUL written as escapes: text, kept and given back as JSON escapes.
    for (const escape of ['\\ud800', '\\udfff', '\\u0000', '\\ud800\\u0000\\udfff']) {
      const payload = JSON.stringify(body('pass', { name: 'esc-NAME' })).replace('NAME', escape);
      const res = await submit(h, payload);
      expectAnswer(res, 202, `escape ${escape}`);
      const id = res.json().id as string;
      await settled(h.service, id);
      const got = await h.app.inject({ method: 'GET', url: `/v1/evaluations/${id}`, headers: auth('alice') });
      expectAnswer(got, 200, `escape ${escape}`);
      expect(() => decoder.decode(got.rawPayload)).not.toThrow();
    }
  });

  it('huge, negative, NaN and Infinity numbers in every numeric field: 400, never a 5xx', async () => {
    const INF = '1e999'; // JSON.parse reads it as Infinity
    const ALL = [INF, `-${INF}`, 'NaN', '"NaN"', '"Infinity"', '1e300', '9007199254740993', '-1'];
    const job = (args: unknown[]) => body('pass', { args });
    const arg = (o: Record<string, unknown>) =>
      job([{ kind: 'buffer', dtype: 'f32', length: 32, role: 'out', ...o }, 'i32=32']);
    /** [field, the job with NUMBER where the value goes, the values it refuses]. */
    const table: Array<[string, Record<string, unknown>, string[]]> = [
      ['grid', body('pass', { grid: 'NUMBER' }), ALL],
      ['grid.y', body('pass', { grid: [1, 'NUMBER', 1] }), ALL],
      ['block', body('pass', { block: 'NUMBER' }), ALL],
      ['block.z', body('pass', { block: [32, 1, 'NUMBER'] }), ALL],
      ['sharedMemBytes', body('pass', { sharedMemBytes: 'NUMBER' }), ALL],
      ['clusterDim', body('pass', { clusterDim: 'NUMBER' }), ALL],
      ['timeoutSeconds', body('pass', { timeoutSeconds: 'NUMBER' }), ALL],
      ['maxQueueSeconds', body('pass', { maxQueueSeconds: 'NUMBER' }), ALL],
      ['priority', body('pass', { priority: 'NUMBER' }), ALL.filter((v) => v !== '-1')],
      ['compile.maxRegisters', body('pass', { compile: { maxRegisters: 'NUMBER' } }), ALL],
      ['check.atol', body('pass', { check: { atol: 'NUMBER' } }), [INF, `-${INF}`, 'NaN', '"NaN"', '-1']],
      ['check.rtol', body('pass', { check: { rtol: 'NUMBER' } }), [INF, `-${INF}`, 'NaN', '"NaN"', '-1']],
      ['check.trials', body('pass', { check: { trials: 'NUMBER' } }), ALL],
      ['check.seed', body('pass', { check: { seed: 'NUMBER' } }), ALL],
      ['timing.bytes', body('pass', { timing: { bytes: 'NUMBER' } }), [INF, `-${INF}`, 'NaN', '"NaN"', '-1']],
      ['timing.flops', body('pass', { timing: { flops: 'NUMBER' } }), [INF, `-${INF}`, 'NaN', '"NaN"', '-1']],
      ['bytes', body('pass', { bytes: 'NUMBER' }), [INF, `-${INF}`, 'NaN', '"NaN"', '-1']],
      ['args[].length', arg({ length: 'NUMBER' }), ALL],
      ['args[].shape', arg({ length: undefined, shape: [4, 'NUMBER'] }), ALL],
      ['args[].init.lo', arg({ init: { kind: 'uniform', lo: 'NUMBER', hi: 2 } }), [INF, `-${INF}`, 'NaN', '"NaN"']],
      [
        'args[].init.value',
        arg({ init: { kind: 'const', value: 'NUMBER' } }),
        [INF, `-${INF}`, 'NaN', '"NaN"', '1e300'],
      ],
      ['args[].init.seed', arg({ init: { kind: 'uniform', lo: 0, hi: 1, seed: 'NUMBER' } }), ALL],
      [
        'scalar i32',
        job(['ptr:f32[32]:out', { kind: 'scalar', type: 'i32', value: 'NUMBER' }]),
        ALL.filter((v) => v !== '-1'),
      ],
      [
        'scalar f32',
        job(['ptr:f32[32]:out', { kind: 'scalar', type: 'f32', value: 'NUMBER' }]),
        [INF, `-${INF}`, 'NaN', '"NaN"', '1e300'],
      ],
      ['argspec length', job(['ptr:f32[NUMBER]:out', 'i32=32']), ['1e999', '-1', '1e300', '9007199254740993', 'NaN']],
      [
        'argspec i32',
        job(['ptr:f32[32]:out', 'i32=NUMBER']),
        ['1e999', '1e300', '9007199254740993', 'NaN', 'Infinity'],
      ],
      ['argspec f32', job(['ptr:f32[32]:out', 'f32=NUMBER']), ['1e999', '-1e999', '1e300', 'NaN', 'Infinity']],
    ];
    const runs = h.pool.runs.length;
    for (const [field, template, refused] of table) {
      const text = JSON.stringify(template);
      for (const value of refused) {
        // In an argspec string the number is text; elsewhere it replaces the quoted placeholder.
        const payload = text.includes('"NUMBER"')
          ? text.replace('"NUMBER"', value)
          : text.replace('NUMBER', value.replaceAll('"', ''));
        const res = await submit(h, payload);
        expectAnswer(res, 400, `${field} = ${value}`);
      }
    }
    expect(h.pool.runs.length).toBe(runs);
    // The compatible route's numbers.
    const compatBody = (kernel: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      JSON.stringify(evaluateBody(extra, kernel));
    const io = evaluateBody().kernel.io;
    const compat: Array<[string, string, string[]]> = [
      ['num_trials', compatBody({}, { num_trials: 'NUMBER' }), ALL],
      ['timeout', compatBody({}, { timeout: 'NUMBER' }), ALL],
      ['launch.grid.y', compatBody({ io: { ...io, launch: { grid: { x: 1, y: 'NUMBER' }, block: { x: 32 } } } }), ALL],
      ['launch.block.x', compatBody({ io: { ...io, launch: { grid: { x: 1 }, block: { x: 'NUMBER' } } } }), ALL],
      [
        'shared_mem_bytes',
        compatBody({ io: { ...io, launch: { grid: { x: 1 }, block: { x: 32 }, shared_mem_bytes: 'NUMBER' } } }),
        ALL,
      ],
      [
        'tensor shape',
        compatBody({
          io: {
            ...io,
            args: [
              { name: 'y', type: 'tensor', role: 'output', tensor_spec: { shape: ['NUMBER'], dtype: 'float32' } },
              io.args[1],
            ],
          },
        }),
        ALL,
      ],
      [
        'int value',
        compatBody({ io: { ...io, args: [io.args[0], { name: 'n', type: 'int', value: 'NUMBER' }] } }),
        // 2^53 + 1 is an i64 argument for the original: not refused.
        [INF, `-${INF}`, 'NaN', '1e300'],
      ],
    ];
    for (const [field, text, refused] of compat) {
      for (const value of refused) {
        const res = await compatPost(h, '/evaluate', text.replace('"NUMBER"', value));
        expectAnswer(res, 400, `/evaluate ${field} = ${value}`);
      }
    }
    expect(h.pool.runs.length).toBe(runs);
  });

  it('10,000 buffers: 400 in the arguments, a signature, a reference, the compatible route and MCP', async () => {
    const many = Array.from({ length: 10_000 }, () => 'ptr:f32[1]');
    for (const [what, payload] of [
      ['args', body('pass', { args: many })],
      ['signature', body('pass', { signature: many.map(() => 'float*') })],
      ['reference.args', body('pass', { reference: { source: 'x', kernel: 'k', args: many } })],
    ] as const) {
      expectAnswer(await submit(h, payload), 400, what);
    }
    const tensors = Array.from({ length: 10_000 }, (_, i) => ({
      name: `t${i}`,
      type: 'tensor',
      role: 'input',
      tensor_spec: { shape: [1], dtype: 'float32' },
    }));
    const request = evaluateBody({}, { io: { ...evaluateBody().kernel.io, args: tensors } });
    expectAnswer(await compatPost(h, '/evaluate', request), 400, '/evaluate io.args');
    const mcp = await mcpCall(h, 'evaluate_kernel', request);
    expectAnswer(mcp, 200, 'MCP');
    expect(mcpResult(mcp).isError).toBe(true);
  });

  it('a 50 MB source: 400, as a string, as { text }, as a header, as a reference and on the other routes', async () => {
    const huge = `// ${'x'.repeat(50 * MB)}\n${String(body().source)}`;
    // Past both bounds (a string of 262,144 characters, 4 MiB of source in all), for the other places a source goes.
    const large = `// ${'x'.repeat(5 * MB)}\n${String(body().source)}`;
    for (const [what, payload] of [
      ['source', body('pass', { source: huge })],
      ['the reference', body('pass', { reference: { source: huge, kernel: 'k' } })],
      ['{ text }', body('pass', { source: { text: large, name: 'big.cu' } })],
      ['a header', body('pass', { headers: { 'big.h': large } })],
      ['the baseline', body('pass', { compare: { source: { text: large }, kernel: 'k' } })],
      [
        'headers in all',
        body('pass', {
          headers: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`h${i}.h`, large.slice(0, 250_000)])),
        }),
      ],
    ] as const) {
      expectAnswer(await submit(h, payload), 400, what);
    }
    expectAnswer(await compatPost(h, '/evaluate', evaluateBody({}, { source_code: huge })), 400, '/evaluate');
    const mcp = await mcpCall(h, 'evaluate_kernel', evaluateBody({}, { source_code: large }));
    expectAnswer(mcp, 200, 'MCP');
    expect(mcpResult(mcp).isError).toBe(true);
  });

  it('problem names with ../, absolute, %2e%2e, __proto__ or NUL name no problem: 400, no file read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-security-problems-'));
    try {
      mkdirSync(join(dir, 'fill'));
      writeFileSync(
        join(dir, 'fill', 'problem.json'),
        JSON.stringify({ description: 'y = 1', args: ['y@ptr:f32[32]:out', 'n@i32=32'] }),
      );
      writeFileSync(join(dir, 'fill', 'reference.mjs'), 'export const reference = ([y]) => y.fill(1);\n');
      const ph = await securityHarness({ problems: ProblemRegistry.load(dir) });
      own.push(ph);
      const { args: _none, ...job } = body('pass');
      const names = [
        '../fill',
        'fill/../fill',
        './fill',
        '/etc/passwd',
        `${dir}/fill`,
        '%2e%2e/fill',
        '%2e%2e%2ffill',
        '..%2ffill',
        '__proto__',
        'constructor',
        'toString',
        'hasOwnProperty',
        'fill\u0000',
        '\u0000',
        'fill/',
        'FILL',
        '',
        'x'.repeat(10_000),
      ];
      for (const name of names) {
        const res = await submit(ph, { ...job, reference: { problem: name } });
        const what = `problem ${JSON.stringify(name.slice(0, 40))}`;
        // A name holding the registry's folder is quoted back: the check below must not take it for a leak.
        if (name.startsWith(dir)) expect(res.statusCode, what).toBe(400);
        else expectError(res, 400, 'ERR_INVALID_JOB', what);
        expect(res.json().details, what).toContainEqual({
          path: 'body.reference.problem',
          message: expect.stringContaining('installed: fill'),
        });
      }
      expect(ph.pool.runs).toEqual([]);
      // The name of the one problem installed runs.
      const ok = await submit(ph, { ...job, reference: { problem: 'fill' } });
      expectAnswer(ok, 202, 'fill');
      expect((await settled(ph.service, ok.json().id as string)).status).toBe('succeeded');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('unknown fields and __proto__ (at the top, nested, in arguments, each route): refused; no pollution', async () => {
    const cases: Array<[string, string]> = [
      ['an unknown field', withField('colour', '"red"')],
      ['__proto__', withField('__proto__', '{"polluted":1}')],
      ['constructor.prototype', withField('constructor', '{"prototype":{"polluted":1}}')],
      ['__proto__ in check', withField('check', '{"__proto__":{"polluted":1}}')],
      ['__proto__ in compile', withField('compile', '{"__proto__":{"polluted":1}}')],
      ['__proto__ in an argument', withField('args', '[{"kind":"buffer","__proto__":{"polluted":1}},"i32=32"]')],
      ['__proto__ in headers', withField('headers', '{"__proto__":"x"}')],
      ['__proto__ in the reference', withField('reference', '{"__proto__":{"source":"x","kernel":"k"}}')],
      ['escaped __proto__', withField('\\u005f_proto__', '{"polluted":1}')],
      ['an unknown compile option', withField('compile', '{"includePaths":["/etc"]}')],
      ['an unknown source field', withField('source', '{"text":"x","file":"/etc/passwd"}')],
    ];
    const runs = h.pool.runs.length;
    for (const [what, payload] of cases) {
      const res = await submit(h, payload);
      expectAnswer(res, 400, what);
      expect(({} as Record<string, unknown>).polluted, what).toBeUndefined();
    }
    const compatText = JSON.stringify(evaluateBody());
    for (const [what, payload, status] of [
      ['/evaluate __proto__', `{"__proto__":{"polluted":1},${compatText.slice(1)}`, 400],
      ['/evaluate constructor', `{"constructor":{"prototype":{"polluted":1}},${compatText.slice(1)}`, 400],
      ['/evaluate nested', compatText.replace('"metadata":{', '"metadata":{"__proto__":{"polluted":1},'), 400],
      ['/evaluate unknown kernel field', compatText.replace('"kernel":{', '"kernel":{"colour":"red",'), 400],
      ['/evaluate unknown cudakit option', compatText.replace(/}$/, ',"cudakit":{"colour":"red"}}'), 400],
      // The original ignores unknown keys elsewhere (pydantic's default), and so does this route: taken, unused.
      ['/evaluate unknown top-level field', compatText.replace(/}$/, ',"colour":"red"}'), 200],
      ['/evaluate unknown launch field', compatText.replace('"launch":{', '"launch":{"colour":"red",'), 200],
    ] as const) {
      const res = await compatPost(h, '/evaluate', payload);
      expectAnswer(res, status, what);
      if (status === 200)
        expect(JSON.stringify((await h.service.get(res.json().job_id as string))!.job)).not.toContain('red');
    }
    const mcp = await h.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...auth('alice'), ...JSON_TYPE, accept: 'application/json, text/event-stream' },
      payload:
        '{"jsonrpc":"2.0","id":1,"method":"tools/call",' +
        '"params":{"name":"list_gpus","arguments":{"__proto__":{"polluted":1}}}}',
    });
    expectAnswer(mcp, 400, 'MCP __proto__');
    expect(h.pool.runs.length).toBe(runs + 2);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
