// SPDX-License-Identifier: MIT
// Security, connections (SECURITY.md's attack table), where a real socket is the attack: the real binary
// (server/src/main.ts with the fake worker built to JavaScript, a SQLite data directory, a tokens file) against 500
// idle connections, slow headers and bodies, a gigabyte sent chunked, a gigabyte declared, and 200 event-stream
// watchers; and a burst of 1,000 submissions against the embedded app. Each answer is checked for its status and for
// leaks; after each row the server still answers and runs a correct job.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tokenDigest } from '../../src/http/auth.js';
import { type ServerProcess, buildFakeWorker, startServer } from '../../bench/binary.js';
import { until } from '../../../test/support/until.js';
import { closeApps, type Harness } from '../support/app-harness.js';
import { settled } from '../support/helpers.js';
import { type Answer, auth, body, expectAlive, expectAnswer, securityHarness } from './helpers.js';

let dir = '';
let server: ServerProcess;
let port = 0;
const own: Harness[] = [];
const sockets: Socket[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cudakit-security-'));
  const tokens = join(dir, 'tokens');
  const names = ['alice', 'bob', 'checker'];
  writeFileSync(tokens, names.map((n) => `${n}:${tokenDigest(`${n}-token`)}:submit,read\n`).join(''));
  server = await startServer({
    // The slow requests below count as submissions (the budget is taken before a body is read): no budget here.
    args: ['--port', '0', '--data-dir', join(dir, 'data'), '--tokens-file', tokens, '--submits-per-minute', '100000'],
    env: {
      CUDAKIT_SERVER_WORKER: buildFakeWorker(join(dir, 'worker')),
      CUDAKIT_FAKE_GPUS: '2',
      CUDAKIT_SERVER_LOG_LEVEL: 'warn',
    },
  });
  port = Number(new URL(server.url).port);
}, 60_000);

afterAll(() => {
  if (server !== undefined && server.child.exitCode === null) server.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await expectBinaryAlive();
  for (const h of own.splice(0)) await expectAlive(h);
  await closeApps();
});

/** The binary answers /healthz, and a correct job (helpers' body('pass')) is taken and succeeds. */
async function expectBinaryAlive(): Promise<void> {
  expect(server.child.exitCode, server.output()).toBeNull();
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  const headers = { authorization: 'Bearer checker-token', 'content-type': 'application/json' };
  const res = await fetch(`${server.url}/v1/evaluations`, { method: 'POST', headers, body: JSON.stringify(body()) });
  const submitted = (await res.json()) as { id: string };
  expect(res.status, JSON.stringify(submitted)).toBe(202);
  let status = '';
  await until(
    async () => {
      const got = await fetch(`${server.url}/v1/evaluations/${submitted.id}?wait=5`, { headers });
      status = ((await got.json()) as { status: string }).status;
      return ['succeeded', 'failed', 'cancelled'].includes(status);
    },
    { timeoutMs: 30_000, what: 'the correct job' },
  );
  expect(status).toBe('succeeded');
}

/** A socket to the binary, destroyed after the row. */
function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
    sockets.push(s);
  });
}

/** A raw socket and what it has received so far; a write failing once the server closed it is ignored. */
async function rawSocket(): Promise<{ s: Socket; got: () => string; closed: () => boolean }> {
  const s = await open();
  let got = '';
  let closed = false;
  s.on('data', (d: Buffer) => (got += d.toString('latin1')));
  s.on('close', () => (closed = true));
  s.on('error', () => {});
  return { s, got: () => got, closed: () => closed };
}

/** What a raw socket receives once the server ends its answer or closes (bounded by `until`'s wait). */
async function exchange(text: string | Buffer): Promise<string> {
  const { s, got, closed } = await rawSocket();
  s.write(text);
  await until(() => closed() || complete(got()), { timeoutMs: 10_000, what: 'an answer' });
  return got();
}

/** Whether `raw` holds a whole answer: its head, and as many body bytes as its Content-Length says. */
function complete(raw: string): boolean {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(raw.slice(0, end))?.[1];
  return length !== undefined && raw.length - end - 4 >= Number(length);
}

/** An HTTP answer's status line and body out of what a socket read. */
function parse(raw: string): Answer {
  const [head = '', ...rest] = raw.split('\r\n\r\n');
  const statusCode = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0);
  const headers = Object.fromEntries(
    head
      .split('\r\n')
      .slice(1)
      .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { statusCode, body: rest.join('\r\n\r\n'), headers };
}

/** The server's peak resident memory, bytes (Linux: VmHWM). */
function peakRss(pid: number): number {
  const kb = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

describe('security: connections', () => {
  it('500 idle connections: the server keeps answering, and its timeouts close idle sockets', async () => {
    const idle = await Promise.all(Array.from({ length: 500 }, open));
    expect(idle.every((s) => !s.destroyed)).toBe(true);
    await expectBinaryAlive();
    // Node closes a connection that sends no complete request within the headers timeout, and the app's own limits
    // bound a request and an idle keep-alive: none is held forever.
    const h = await securityHarness();
    own.push(h);
    await h.app.ready();
    expect(h.app.server.headersTimeout).toBeGreaterThan(0);
    expect(h.app.server.headersTimeout).toBeLessThanOrEqual(60_000);
    expect(h.app.server.requestTimeout).toBe(120_000);
    expect(h.app.server.keepAliveTimeout).toBeLessThanOrEqual(120_000);
    // A connection that never sends a byte is closed at the headers timeout too (Node closes only one that sent part
    // of a request): shortened here, so that the wait is on the close, not on the clock.
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    h.app.server.headersTimeout = 200;
    const silent = connect((h.app.server.address() as { port: number }).port, '127.0.0.1');
    let closed = false;
    silent.on('close', () => (closed = true));
    silent.on('error', () => {});
    sockets.push(silent);
    await until(() => closed, { timeoutMs: 10_000, what: 'the server to close a connection that sent nothing' });
  });

  it('slowloris: slow headers and slow bodies hold their own sockets only; others are answered', async () => {
    const slow = [
      ...Array.from({ length: 60 }, () => 'POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nAuthorization: Bear'),
      ...Array.from(
        { length: 40 },
        () =>
          'POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-token\r\n' +
          'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"name":"slow","source":"',
      ),
      ...Array.from(
        { length: 20 },
        () =>
          'POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-token\r\n' +
          'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n',
      ),
    ];
    const answered: number[] = [];
    await Promise.all(
      slow.map(async (text, i) => {
        const s = await open();
        s.on('data', () => answered.push(i));
        s.on('error', () => {});
        await new Promise<void>((resolve) => s.write(text, () => resolve()));
      }),
    );
    await expectBinaryAlive();
    // None of them has had an answer: each waits for the rest of its request, on its own socket.
    expect(answered).toEqual([]);
  });

  it('a gigabyte sent chunked: 413 once past 64 MiB, without the server holding it', async () => {
    const before = peakRss(server.pid);
    const chunk = Buffer.alloc(2 ** 20, 0x20);
    const limit = 2 ** 30;
    let sent = 0;
    // A raw socket: the server may close it once it has answered, and a write failing then must not hide the answer.
    const { s, got, closed } = await rawSocket();
    s.write(
      'POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-token\r\n' +
        'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n',
    );
    const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    while (got() === '' && !closed() && sent < limit) {
      sent += chunk.length;
      if (!s.write(frame)) {
        await new Promise<void>((resolve) => {
          s.once('drain', resolve);
          s.once('data', resolve);
          s.once('close', resolve);
        });
      }
    }
    await until(() => complete(got()) || closed(), { timeoutMs: 30_000, what: 'the answer' });
    const answer = parse(got());
    const res = { status: answer.statusCode, text: answer.body };
    expectAnswer({ statusCode: res.status, body: res.text, headers: {} }, 413, 'a chunked gigabyte');
    expect(JSON.parse(res.text)).toMatchObject({ code: 'FST_ERR_CTP_BODY_TOO_LARGE' });
    // Answered long before the gigabyte was sent, and the server's memory grew by far less than it.
    expect(sent).toBeLessThan(limit);
    expect(peakRss(server.pid) - before).toBeLessThan(256 * 2 ** 20);
  });

  it('a gigabyte declared: 413 at once, before any of it is read; conflicting lengths are 400', async () => {
    const head = (path: string, extra: string) =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-token\r\nContent-Type: application/json\r\n` +
      `${extra}Connection: close\r\n\r\n{"name":`;
    for (const [path, extra, status] of [
      ['/v1/evaluations', 'Content-Length: 1073741824\r\n', 413],
      ['/v1/evaluations', 'Content-Length: 1073741824\r\nContent-Encoding: gzip\r\n', 413],
      ['/evaluate', 'Content-Length: 1073741824\r\n', 413],
      ['/v1/evaluations/ev_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'Content-Length: 1073741824\r\n', 413],
      ['/v1/evaluations', 'Content-Length: 99999999999999999999\r\n', 400],
      ['/v1/evaluations', 'Content-Length: -1\r\n', 400],
      ['/v1/evaluations', 'Content-Length: 10\r\nContent-Length: 20\r\n', 400],
      ['/v1/evaluations', 'Content-Length: 10\r\nTransfer-Encoding: chunked\r\n', 400],
    ] as const) {
      const method = path.startsWith('/v1/evaluations/') ? 'DELETE' : 'POST';
      const raw = await exchange(head(path, extra).replace('POST', method));
      const res = parse(raw);
      expectAnswer(res, status, `${method} ${path} ${extra.trim()}`);
    }
  });

  it('200 event-stream watchers: every job stream is served to its end; summary streams are capped', async () => {
    const headers = { authorization: 'Bearer alice-token', 'content-type': 'application/json' };
    const res = await fetch(`${server.url}/v1/evaluations`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body('fake:pass:1500ms')),
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    const streams: Array<{ status: number; text: string; ended: boolean }> = [];
    const watch = (path: string) => {
      const seen = { status: 0, text: '', ended: false };
      streams.push(seen);
      const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (r) => {
        seen.status = r.statusCode!;
        r.setEncoding('utf8').on('data', (c: string) => (seen.text += c));
        r.on('end', () => (seen.ended = true));
        r.on('error', () => {});
      });
      req.on('error', () => {});
      req.on('socket', (s: Socket) => sockets.push(s));
      req.end();
      return seen;
    };
    const jobStreams = Array.from({ length: 200 }, () => watch(`/v1/evaluations/${id}/events`));
    const summaries = Array.from({ length: 100 }, () => watch('/v1/stream'));
    await until(() => jobStreams.every((s) => s.ended), { timeoutMs: 30_000, what: 'every job stream to end' });
    for (const s of jobStreams) {
      expect(s.status).toBe(200);
      expect(s.text.match(/^event: done$/gm)).toHaveLength(1);
      expectAnswer({ statusCode: s.status, body: s.text, headers: {} }, 200, 'a job stream');
    }
    await until(() => summaries.every((s) => s.status !== 0), {
      timeoutMs: 30_000,
      what: 'every summary stream to answer',
    });
    const served = summaries.filter((s) => s.status === 200);
    expect(served).toHaveLength(64);
    await until(() => served.every((s) => s.text.includes('event: summary')), {
      timeoutMs: 30_000,
      what: 'every served stream to speak',
    });
    for (const s of served) expectAnswer({ statusCode: s.status, body: s.text, headers: {} }, 200, 'a summary stream');
    for (const s of summaries.filter((x) => x.status !== 200)) {
      expectAnswer({ statusCode: s.status, body: s.text, headers: {} }, 503, 'a summary stream past the cap');
    }
  });

  it('1,000 submissions in a burst: 60 a minute are taken, the rest 429 with Retry-After', async () => {
    // The budget alone (the queue caps are app.test.ts's): 60 a minute per principal.
    const h = await securityHarness({ submitsPerMinute: 60, limits: { maxQueuedPerPrincipal: 1000, maxQueued: 5000 } });
    own.push(h);
    const post = (who: 'alice' | 'bob' | 'root') =>
      h.app.inject({ method: 'POST', url: '/v1/evaluations', headers: auth(who), payload: body() });
    const expectRefusal = (a: Answer & { json(): { code: string } }) => {
      expectAnswer(a, [202, 429], 'a submission of the burst');
      if (a.statusCode === 429) {
        expect(a.json().code).toBe('RATE_LIMITED');
        expect(Number(a.headers['retry-after'])).toBeGreaterThan(0);
      }
    };
    // All at once (one event-loop turn): exactly the budget is taken, each request counted on its own.
    const burst = await Promise.all(Array.from({ length: 1000 }, () => post('alice')));
    for (const a of burst) expectRefusal(a);
    const taken = burst.filter((a) => a.statusCode === 202);
    expect(taken).toHaveLength(60);
    // One after the other: exactly the budget is taken, then 429.
    const serial: Array<Awaited<ReturnType<typeof post>>> = [];
    for (let i = 0; i < 100; i++) serial.push(await post('root'));
    for (const a of serial) expectRefusal(a);
    expect(serial.slice(0, 60).map((a) => a.statusCode)).toEqual(Array<number>(60).fill(202));
    expect(serial.slice(60).map((a) => a.json().code)).toEqual(Array<string>(40).fill('RATE_LIMITED'));
    // Another client is not held up by either.
    const bob = await post('bob');
    expectAnswer(bob, 202, "bob's job after the bursts");
    expect((await settled(h.service, bob.json().id as string)).status).toBe('succeeded');
    for (const a of [...taken, ...serial.slice(0, 60)]) {
      expect((await settled(h.service, a.json().id as string, 20_000)).status).toBe('succeeded');
    }
  });
});
