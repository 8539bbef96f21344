// SPDX-License-Identifier: MIT
// The host-file reads of the security suite (server/test/security/host-files.nvrtc.test.ts) through the real service
// on a GPU: the cudakit-server binary with its real workers (as root, they run as nobody), a secret in its working
// folder and in its environment, and each trick through /v1/evaluations and the compatible /evaluate. No answer
// carries the secret or /etc/passwd, and a correct job still passes after them.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ROOT, type ServerProcess, startServer } from '../../bench/binary.js';
import { describeGpu } from '../../../test/helpers.js';
import { until } from '../../../test/support/until.js';
import { SCALE, scaleJob } from '../../../test/gpu/fault-kernels.js';

const SECRET = `S${randomBytes(12).toString('hex')}`;
const SENTINEL = `cudakit-sentinel-${randomBytes(6).toString('hex')}.txt`;
const PASSWD = /root:x?:0:0/;
/** NVRTC's words for an include it did not find (11.8: could not, 13: cannot). */
const NOT_FOUND = /(could not|cannot) open source file/;
const include = (name: string): string => `#include "${name}"\n${SCALE}`;

describeGpu('security: the service reads no host file, on a GPU', () => {
  let server: ServerProcess | undefined;
  let dataDir = '';

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'cudakit-security-'));
    writeFileSync(join(ROOT, SENTINEL), `#error ${SECRET}\n`); // the server's working folder
    server = await startServer({
      args: ['--port', '0', '--data-dir', dataDir, '--gpus', '0', '--log-level', 'warn'],
      env: {
        CUDAKIT_SERVER_WORKER: 'real',
        CUDAKIT_SERVER_WORKER_USER: '', // the command line's default: as root, nobody
        CUDAKIT_SERVER_TEST_SECRET: SECRET,
        DATABASE_URL: `pg://${SECRET}`,
      },
      startTimeoutMs: 90_000,
    });
  }, 120_000);

  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    rmSync(join(ROOT, SENTINEL), { force: true });
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function json(path: string, init?: RequestInit): Promise<{ status: number; body: string }> {
    const res = await fetch(`${server!.url}${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', ...init?.headers },
    });
    return { status: res.status, body: await res.text() };
  }

  /** Submits a v1 job and returns everything the service says of it once it is done. */
  async function evaluate(body: Record<string, unknown>): Promise<string> {
    const submitted = await json('/v1/evaluations', { method: 'POST', body: JSON.stringify(body) });
    expect([200, 201, 202], submitted.body).toContain(submitted.status);
    const { id } = JSON.parse(submitted.body) as { id: string };
    let job = '';
    await until(
      async () => {
        job = (await json(`/v1/evaluations/${id}?wait=30`)).body;
        return /"status":"(succeeded|failed|cancelled)"/.test(job);
      },
      { timeoutMs: 120_000, what: () => `${id} to end: ${job}` },
    );
    const events = (await json(`/v1/evaluations/${id}/events`)).body;
    return `${submitted.body}\n${job}\n${events}`;
  }

  it('through /v1/evaluations: program names and relative includes reach no file', async () => {
    const tricks = [
      { what: "/etc/x.cu + 'passwd'", source: { text: include('passwd'), name: '/etc/x.cu' } },
      { what: "/proc/self/x.cu + 'environ'", source: { text: include('environ'), name: '/proc/self/x.cu' } },
      { what: "'etc/passwd'", source: include('etc/passwd') },
      { what: "'proc/self/environ'", source: include('proc/self/environ') },
      { what: 'a file in the server folder', source: include(SENTINEL) },
      {
        what: 'a reference named into the server folder',
        source: SCALE,
        reference: { source: { text: include(SENTINEL), name: `${ROOT}/ref.cu` }, kernel: 'scale' },
      },
    ];
    for (const t of tricks) {
      const { what, ...fields } = t;
      const said = await evaluate(scaleJob(`security ${what}`, SCALE, fields));
      expect(said, what).not.toContain(SECRET);
      expect(said, what).not.toMatch(PASSWD);
      expect(said, what).toMatch(NOT_FOUND);
    }
    const fine = await evaluate(scaleJob('after the tricks', SCALE));
    expect(fine).toMatch(/"verdict":"(PASSED|SUSPICIOUS)"/);
  }, 600_000);

  it('through the compatible /evaluate: no name needed, none reached', async () => {
    const custom = JSON.parse(
      readFileSync(join(ROOT, 'server/test/fixtures/compat/vector_add.cuda-ref.json'), 'utf8'),
    ) as { custom_kernel: { source_code: string } };
    const five = Buffer.from(new Float32Array(1024).fill(5).buffer).toString('base64');
    for (const name of [SENTINEL, 'etc/passwd', 'proc/self/environ']) {
      const kernel = {
        ...custom.custom_kernel,
        source_code: `#include "${name}"\n${custom.custom_kernel.source_code}`,
      };
      const said = await json('/evaluate', {
        method: 'POST',
        body: JSON.stringify({
          kernel,
          cudakit: { timing: { preset: 'quick' }, expected: { c: { data_b64: five, shape: [1024] } } },
        }),
      });
      expect(said.status, said.body).toBe(200);
      expect(said.body, name).not.toContain(SECRET);
      expect(said.body, name).not.toMatch(PASSWD);
      expect(said.body, name).toMatch(NOT_FOUND);
    }
  }, 600_000);
});
