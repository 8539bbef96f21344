// SPDX-License-Identifier: MIT
// The real binary (server/src/main.ts under tsx) on loopback port 0 with a temporary data directory: configuration
// errors, jobs run by the GPU engineer's fake worker (CUDAKIT_SERVER_WORKER=fake), a process that never maps the CUDA
// addon, and a SIGTERM drain that exits 0 and leaves the store consistent for the next start.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { tokenDigest } from '../src/http/auth.js';
import { ConfigError, DEFAULT_PROBLEMS_DIR, parseConfig } from '../src/config.js';
import { jobBody } from '../../test/support/jobs.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'server/src/main.ts');
const FAKE_WORKER = join(ROOT, 'server/src/run/worker/fake.ts');
const dirs: string[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-server-main-'));
  dirs.push(dir);
  return dir;
}

interface Server {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/**
 * Runs the binary; resolves once it prints where it listens and /readyz answers 200 (or fails with its output when it
 * exits first). On a loaded host under-pressure may shed the first requests until it has sampled the event loop.
 */
async function start(args: string[], env: Record<string, string> = {}): Promise<Server> {
  const server = await listening(args, env);
  await expect
    .poll(async () => (await fetch(`${server.url}/readyz`).catch(() => undefined))?.status, { timeout: 30_000 })
    .toBe(200);
  return server;
}

function listening(args: string[], env: Record<string, string>): Promise<Server> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, CUDAKIT_SERVER_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise<Server>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no 'listening' line within 30 s:\n${out}\n${err}`)), 30_000);
    const onData = (): void => {
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url === undefined) return;
      clearTimeout(timer);
      resolve({ child, url, stdout: () => out, stderr: () => err, exited });
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${out}\n${err}`));
    });
  });
}

/** Runs the binary to its exit. */
async function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, out, err };
}

async function api(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers } });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** The job body named `name`, as the request's text. */
function job(name: string): string {
  return JSON.stringify(jobBody(name));
}

describe('configuration', () => {
  it('refuses a non-loopback --host without --tokens-file', async () => {
    const { code, err } = await run(['--host', '0.0.0.0', '--port', '0', '--data-dir', tempDir()]);
    expect(code).toBe(2);
    expect(err).toContain('Refusing to listen on 0.0.0.0 without --tokens-file');
  });

  it('names every bad flag and environment variable, and prints its usage with --help', async () => {
    const bad = await run(['--port', 'eighty', '--isolation', 'none', '--max-device-bytes', '8G'], {
      CUDAKIT_SERVER_RETENTION_DAYS: '-1',
    });
    expect(bad.code).toBe(2);
    expect(bad.err).toContain(
      `Expected an integer from 1 to ${Number.MAX_SAFE_INTEGER} for --max-device-bytes but received '8G'`,
    );
    expect(bad.err).toContain("Expected an integer from 0 to 65535 for --port but received 'eighty'");
    expect(bad.err).toContain("Expected one of process, warm for --isolation but received 'none'");
    expect(bad.err).toContain("for CUDAKIT_SERVER_RETENTION_DAYS but received '-1'");
    const unknown = await run(['--colour', 'red']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/Unknown option '--colour'/);
    const tokens = join(tempDir(), 'tokens');
    writeFileSync(tokens, 'alice:not-a-digest\n');
    const badTokens = await run(['--tokens-file', tokens, '--port', '0', '--data-dir', tempDir()]);
    expect(badTokens.code).toBe(2);
    expect(badTokens.err).toContain(`${tokens}:1: expected the token's sha256`);
    const problems = tempDir();
    mkdirSync(join(problems, 'broken'));
    const badProblems = await run(['--problems-dir', problems, '--port', '0', '--data-dir', tempDir()]);
    expect(badProblems.code).toBe(2);
    expect(badProblems.err).toContain(
      `Problem 'broken' (${join(problems, 'broken', 'problem.json')}): no problem.json`,
    );
    // A Python that cannot serve is a start error naming what is missing, before the server listens.
    const noPython = await run(['--python', '/no/such/python', '--port', '0', '--data-dir', tempDir()]);
    expect(noPython.code).toBe(2);
    expect(noPython.err).toContain('--python /no/such/python cannot serve Python jobs: there is no such file');
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/^Usage: cudakit-server/);
    expect(help.out).toContain('--problems-dir <dir>');
  });
});

describe('parseConfig', () => {
  it('serves the problem set the server ships unless --problems-dir names another folder', () => {
    const of = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(argv, env) as { problemsDir: string };
    expect(DEFAULT_PROBLEMS_DIR).toBe(fileURLToPath(new URL('../problems', import.meta.url)));
    expect(existsSync(join(DEFAULT_PROBLEMS_DIR, 'vector-add', 'problem.json'))).toBe(true);
    expect(of([]).problemsDir).toBe(DEFAULT_PROBLEMS_DIR);
    expect(of(['--problems-dir', 'elsewhere']).problemsDir).toBe(join(process.cwd(), 'elsewhere'));
    expect(of([], { CUDAKIT_SERVER_PROBLEMS_DIR: '/srv/problems' }).problemsDir).toBe('/srv/problems');
  });

  it('takes --python or CUDAKIT_SERVER_PYTHON as an absolute path, on the hosts with GPUs only', () => {
    const of = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(argv, env) as { python?: string };
    expect(of([]).python).toBeUndefined();
    expect(of(['--python', '/usr/bin/python3']).python).toBe('/usr/bin/python3');
    expect(of([], { CUDAKIT_SERVER_PYTHON: 'venv/bin/python' }).python).toBe(join(process.cwd(), 'venv/bin/python'));
    const urls = ['--redis-url', 'redis://localhost', '--database-url', 'postgres://localhost/x'];
    expect(() => of(['--role', 'api', ...urls, '--python', '/usr/bin/python3'])).toThrow(
      '--python is for the hosts with GPUs: the embedded mode or --role agent',
    );
  });

  it('takes --lanes (1 to 4, 1 with warm isolation) and --standby (process or context)', () => {
    type Lanes = { lanes: number; standby: string };
    const of = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(argv, env) as Lanes;
    expect(of([])).toMatchObject({ lanes: 1, standby: 'process' });
    expect(of(['--lanes', '2', '--standby', 'context'])).toMatchObject({ lanes: 2, standby: 'context' });
    expect(of([], { CUDAKIT_SERVER_LANES: '3' }).lanes).toBe(3);
    expect(() => of(['--lanes', '5'])).toThrow("Expected an integer from 1 to 4 for --lanes but received '5'");
    expect(() => of(['--lanes', '2', '--isolation', 'warm'])).toThrow('--lanes 2 needs --isolation process');
    expect(() => of(['--standby', 'warm'])).toThrow(
      "Expected one of process, context for --standby but received 'warm'",
    );
  });

  it('takes --max-device-bytes, or CUDAKIT_SERVER_MAX_DEVICE_BYTES; without either the GPUs decide', () => {
    const of = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(argv, env) as { maxDeviceBytes?: number };
    expect(of([]).maxDeviceBytes).toBeUndefined();
    expect(of(['--max-device-bytes', '4294967296']).maxDeviceBytes).toBe(2 ** 32);
    expect(of([], { CUDAKIT_SERVER_MAX_DEVICE_BYTES: '1000' }).maxDeviceBytes).toBe(1000);
    expect(of(['--max-device-bytes', '2000'], { CUDAKIT_SERVER_MAX_DEVICE_BYTES: '1000' }).maxDeviceBytes).toBe(2000);
    expect(() => of([], { CUDAKIT_SERVER_MAX_DEVICE_BYTES: '0' })).toThrow(ConfigError);
    expect(() => of([], { CUDAKIT_SERVER_MAX_DEVICE_BYTES: '0' })).toThrow(
      `for CUDAKIT_SERVER_MAX_DEVICE_BYTES but received '0'`,
    );
  });

  it('takes the distributed roles with their Redis and PostgreSQL URLs, and says what each role lacks', () => {
    const redis = ['--redis-url', 'redis://127.0.0.1:6379/0'];
    const database = ['--database-url', 'postgres://cudakit@127.0.0.1/cudakit'];
    const config = parseConfig(['--role', 'agent', ...redis, ...database, '--gpu-class', 'H200-nvl,lab'], {});
    expect(config).toMatchObject({
      mode: 'agent',
      redisUrl: 'redis://127.0.0.1:6379/0',
      databaseUrl: 'postgres://cudakit@127.0.0.1/cudakit',
      redisPrefix: 'cudakit',
      gpuClasses: ['H200-nvl', 'lab'],
      lockSeconds: 30,
    });
    expect(
      parseConfig([], {
        CUDAKIT_SERVER_ROLE: 'api',
        CUDAKIT_SERVER_REDIS_URL: 'rediss://q:6380',
        CUDAKIT_SERVER_DATABASE_URL: 'postgresql://db/x',
      }),
    ).toMatchObject({ mode: 'api' });
    const problems = (argv: string[]) => {
      try {
        parseConfig(argv, {});
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as Error).message;
      }
      return '';
    };
    expect(problems(['--role', 'api'])).toBe(
      'Expected --redis-url (or CUDAKIT_SERVER_REDIS_URL) with --role api\n' +
        'Expected --database-url (or CUDAKIT_SERVER_DATABASE_URL) with --role api',
    );
    expect(problems([...redis])).toContain('--redis-url is for --role api or agent');
    expect(problems(['--role', 'api', '--redis-url', 'http://q', ...database])).toContain(
      "Expected a redis://… or rediss://… URL for --redis-url but received 'http://q'",
    );
    expect(problems(['--role', 'api', ...redis, ...database, '--gpu-class', 'H200'])).toContain(
      '--gpu-class is for --role agent',
    );
    expect(problems(['--role', 'leader'])).toContain(
      "Expected one of embedded, api, agent for --role but received 'leader'",
    );
    expect(problems(['--role', 'api', ...redis, ...database, '--lock-seconds', '1'])).toContain(
      "Expected a number from 2 to 3600 for --lock-seconds but received '1'",
    );
    // An agent's port serves health and metrics only: another host may scrape it without tokens.
    expect(parseConfig(['--role', 'agent', ...redis, ...database, '--host', '0.0.0.0'], {})).toMatchObject({
      host: '0.0.0.0',
    });
    expect(problems(['--role', 'api', ...redis, ...database, '--host', '0.0.0.0'])).toContain('without --tokens-file');
  });
});

describe.skipIf(!existsSync(FAKE_WORKER))('with the fake GPU worker', () => {
  // The workers run as the test's user: a checkout may sit where another user cannot read it
  // (security/containment.test.ts starts them as another user).
  const env = {
    CUDAKIT_SERVER_WORKER: 'fake',
    CUDAKIT_FAKE_GPUS: '1',
    CUDAKIT_SERVER_WORKER_USER: String(process.getuid?.() ?? ''),
  };

  it('runs jobs on loopback without ever mapping the CUDA addon, drains on SIGTERM, and recovers', async () => {
    const dataDir = tempDir();
    const tokensFile = join(dataDir, 'tokens');
    writeFileSync(tokensFile, `ci:${tokenDigest('ci-token')}\n`);
    const args = ['--port', '0', '--data-dir', dataDir, '--tokens-file', tokensFile, '--drain-seconds', '1'];
    const auth = { authorization: 'Bearer ci-token' };
    const server = await start(args, env);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await api(`${server.url}/v1/gpus`)).status).toBe(401);
    const gpus = await api(`${server.url}/v1/gpus`, { headers: auth });
    expect(gpus.body.gpus).toHaveLength(1);
    // A job may declare a quarter of the GPU's memory (the fake probe's GPU has 150 GB).
    const big = JSON.stringify(jobBody('big', { args: ['ptr:f32[8941M]:out', 'i32=32'] }));
    const refused = await api(`${server.url}/v1/evaluations`, { method: 'POST', headers: auth, body: big });
    expect(refused.status).toBe(400);
    expect(refused.body.details[0].message).toBe(
      `Expected buffers of at most 37500000000 bytes in all for job.args but received ${8941 * 2 ** 22} bytes ` +
        `(the limit is a quarter of the memory of the smallest GPU here: NVIDIA H200 (${gpus.body.gpus[0].uuid}), ` +
        '150000000000 bytes)',
    );

    const ids: Record<string, string> = {};
    for (const name of ['fake:pass:40ms', 'fake:crash:check', 'fake:pass']) {
      const res = await api(`${server.url}/v1/evaluations`, { method: 'POST', headers: auth, body: job(name) });
      expect(res.status).toBe(202);
      ids[name] = res.body.id;
    }
    for (const [name, id] of Object.entries(ids)) {
      const res = await api(`${server.url}/v1/evaluations/${id}?wait=30`, { headers: auth });
      expect(['succeeded', 'failed'], name).toContain(res.body.status);
    }
    expect((await api(`${server.url}/v1/evaluations/${ids['fake:pass:40ms']}`, { headers: auth })).body.verdict).toBe(
      'PASSED',
    );
    expect(
      (await api(`${server.url}/v1/evaluations/${ids['fake:crash:check']}`, { headers: auth })).body,
    ).toMatchObject({
      status: 'failed',
      verdict: 'CRASHED',
    });

    // The process that took and ran those jobs has nothing of CUDA mapped (the children had it, if anyone).
    if (process.platform === 'linux') {
      const maps = readFileSync(`/proc/${server.child.pid}/maps`, 'utf8');
      expect(maps).not.toMatch(/cudakit\.node|libcuda\.so|libnvrtc/);
      expect(maps).toMatch(/better_sqlite3\.node/); // the check can see addons: the store's is there
    }

    // A job that hangs holds the one GPU; another waits behind it. SIGTERM: the hang is killed after the 1 s
    // grace and fails as interrupted; the waiting one stays queued for the next start.
    const hang = (
      await api(`${server.url}/v1/evaluations`, { method: 'POST', headers: auth, body: job('fake:hang:time') })
    ).body.id;
    await expect
      .poll(async () => (await api(`${server.url}/v1/evaluations/${hang}`, { headers: auth })).body.status, {
        timeout: 15_000,
      })
      .toBe('running');
    const waiting = (
      await api(`${server.url}/v1/evaluations`, { method: 'POST', headers: auth, body: job('fake:pass') })
    ).body.id;
    const t0 = Date.now();
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(15_000);

    const again = await start(args, env);
    expect((await api(`${again.url}/v1/evaluations/${hang}`, { headers: auth })).body).toMatchObject({
      status: 'failed',
      error: { code: 'INTERRUPTED' },
    });
    const resumed = await api(`${again.url}/v1/evaluations/${waiting}?wait=30`, { headers: auth });
    expect(resumed.body).toMatchObject({ status: 'succeeded', verdict: 'PASSED' });
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });
});
