// SPDX-License-Identifier: MIT
// The real binary (server/src/main.ts under tsx) with the fake worker built to JavaScript and a SQLite data
// directory, stopped the two ways a server stops: SIGKILL mid-job (no worker or forker outlives it; on restart the
// jobs it was running fail as interrupted, exactly once, and the queued ones run) and SIGTERM (running jobs finish
// within the grace, one that outlasts it is interrupted, submissions are refused meanwhile, the exit code is 0 and the
// queued jobs stay queued in the store).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { tokenDigest } from '../src/http/auth.js';
import { SqliteJobStore } from '../src/store/sqlite.js';
import {
  type ServerProcess,
  buildFakeWorker,
  childrenOf,
  readFakeLog,
  startServer,
  stillAliveAfter,
} from '../bench/binary.js';
import { fakeJobNamed, forkerOf } from '../bench/loadgen.js';

const TOKEN = 'recovery-token';
const dirs: string[] = [];
const servers: ServerProcess[] = [];

afterEach(() => {
  for (const s of servers.splice(0))
    if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
});
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Setup {
  dataDir: string;
  fakeLog: string;
  start: (extraArgs?: readonly string[]) => Promise<ServerProcess>;
}

/** A temporary folder with a tokens file, the fake worker as JavaScript and a data directory; `start` runs it. */
function setup(gpus: number): Setup {
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-recovery-'));
  dirs.push(dir);
  const tokensFile = join(dir, 'tokens');
  writeFileSync(tokensFile, `ci:${tokenDigest(TOKEN)}\n`);
  const dataDir = join(dir, 'data');
  const fakeLog = join(dir, 'fake.log');
  const worker = buildFakeWorker(join(dir, 'worker'));
  const start = async (extraArgs: readonly string[] = []): Promise<ServerProcess> => {
    const server = await startServer({
      args: ['--port', '0', '--data-dir', dataDir, '--tokens-file', tokensFile, ...extraArgs],
      env: {
        CUDAKIT_SERVER_WORKER: worker,
        CUDAKIT_FAKE_GPUS: String(gpus),
        CUDAKIT_FAKE_LOG: fakeLog,
        CUDAKIT_SERVER_LOG_LEVEL: 'warn',
      },
    });
    servers.push(server);
    return server;
  };
  return { dataDir, fakeLog, start };
}

async function api(url: string, method: string, path: string, body?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${url}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

async function submit(url: string, name: string): Promise<string> {
  const res = await api(url, 'POST', '/v1/evaluations', fakeJobNamed(name));
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body.id as string;
}

async function statusOf(url: string, id: string): Promise<string> {
  return (await api(url, 'GET', `/v1/evaluations/${id}`)).body.status as string;
}

/** Waits until the server's `gpus` slots each have a worker ready. */
async function untilIdle(url: string, gpus: number): Promise<void> {
  await expect
    .poll(async () => (await api(url, 'GET', '/v1/gpus')).body.gpus.map((g: { state: string }) => g.state), POLL)
    .toEqual(Array<string>(gpus).fill('idle'));
}

/** Every process below `pid` (Linux; [] elsewhere). */
function descendantsOf(pid: number): number[] {
  const found: number[] = [];
  for (let next = [pid]; next.length > 0;) {
    next = next.flatMap((p) => childrenOf(p));
    found.push(...next);
  }
  return found;
}

/** The store as the server left it: each job's status, error code and number of 'done' events. */
async function storeState(dataDir: string, ids: readonly string[]) {
  const store = SqliteJobStore.open(join(dataDir, 'jobs.sqlite'));
  try {
    const state: Record<string, { status: string; error: string | undefined; finishedAt: number | undefined }> = {};
    const dones: Record<string, number> = {};
    for (const id of ids) {
      const r = await store.get(id);
      state[id] = { status: r?.status ?? 'missing', error: r?.error?.code, finishedAt: r?.finishedAt };
      dones[id] = (await store.events(id, 0)).filter((e) => e.type === 'done').length;
    }
    return { state, dones, counts: await store.counts() };
  } finally {
    await store.close();
  }
}

const POLL = { timeout: 15_000, interval: 50 } as const;

describe('the binary stopped mid-job', () => {
  it('SIGKILL: no child outlives it; on restart running jobs are interrupted, queued ones run', async () => {
    const { dataDir, fakeLog, start } = setup(2);
    const first = await start();
    // Both GPUs busy with jobs that would never end on their own; three more wait behind them.
    const running = [await submit(first.url, 'fake:hang:time'), await submit(first.url, 'fake:pass:600000ms')];
    for (const id of running) await expect.poll(() => statusOf(first.url, id), POLL).toBe('running');
    const queued: string[] = [];
    for (let i = 0; i < 3; i++) queued.push(await submit(first.url, `fake:pass:${20 + 10 * i}ms`));
    for (const id of queued) expect(await statusOf(first.url, id)).toBe('queued');
    // Each running job's worker, and the next one pre-started beside it, are up.
    await expect.poll(() => readFakeLog(fakeLog).filter((e) => e.event === 'spawn').length, POLL).toBe(4);
    const forker = forkerOf(first.pid);
    const tree = descendantsOf(first.pid);
    const workers = readFakeLog(fakeLog).map((e) => e.pid);
    const runners = readFakeLog(fakeLog)
      .filter((e) => e.event === 'start')
      .map((e) => e.pid);
    expect(runners).toHaveLength(2);
    if (process.platform === 'linux') {
      expect(forker).toBeDefined();
      expect(tree).toEqual(expect.arrayContaining([forker!, ...workers]));
    }

    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const everyPid = [...new Set([...tree, ...workers])];
    expect(everyPid.length).toBeGreaterThanOrEqual(4);
    expect(await stillAliveAfter(everyPid, 5000)).toEqual([]);

    const second = await start();
    for (const id of running) {
      const { body } = await api(second.url, 'GET', `/v1/evaluations/${id}`);
      expect(body).toMatchObject({ status: 'failed', verdict: null, error: { code: 'INTERRUPTED' } });
    }
    for (const id of queued) {
      const { body } = await api(second.url, 'GET', `/v1/evaluations/${id}?wait=30`);
      expect(body).toMatchObject({ status: 'succeeded', verdict: 'PASSED' });
    }
    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });

    const { state, dones } = await storeState(dataDir, [...running, ...queued]);
    for (const id of [...running, ...queued]) expect(dones[id], `'done' events of ${id}`).toBe(1);
    for (const id of running) expect(state[id]).toMatchObject({ status: 'failed', error: 'INTERRUPTED' });
    // The queued jobs ran once each, on the second server's workers; the interrupted ones never ran again.
    const starts = readFakeLog(fakeLog).filter((e) => e.event === 'start');
    for (const id of queued) {
      const mine = starts.filter((e) => e.id === id);
      expect(mine).toHaveLength(1);
      expect(workers).not.toContain(mine[0]!.pid);
    }
    for (const id of running) expect(starts.filter((e) => e.id === id)).toHaveLength(1);
  }, 60_000);

  it('SIGTERM: running jobs finish in the grace, submissions get 503, exit 0, queued jobs stay queued', async () => {
    const graceMs = 5000;
    const { dataDir, fakeLog, start } = setup(3);
    const server = await start(['--drain-seconds', String(graceMs / 1000)]);
    await untilIdle(server.url, 3);
    // One job that never ends, two that end within the grace (2 s from their start), and two queued behind them.
    const hang = await submit(server.url, 'fake:hang:time');
    const finishing = [await submit(server.url, 'fake:pass:2000ms'), await submit(server.url, 'fake:pass:2000ms')];
    for (const id of [hang, ...finishing]) await expect.poll(() => statusOf(server.url, id), POLL).toBe('running');
    const queued = [await submit(server.url, 'fake:pass'), await submit(server.url, 'fake:pass')];
    for (const id of queued) expect(await statusOf(server.url, id)).toBe('queued');

    const signalledAtMs = Date.now();
    server.child.kill('SIGTERM');
    await expect
      .poll(async () => (await api(server.url, 'GET', '/readyz')).body, { timeout: 2000, interval: 20 })
      .toMatchObject({ status: 'not ready', reasons: ['shutting down'] });
    const refused = await api(server.url, 'POST', '/v1/evaluations', fakeJobNamed('fake:pass'));
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ code: 'SHUTTING_DOWN' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);

    expect(await server.exited).toEqual({ code: 0, signal: null });
    const drainMs = Date.now() - signalledAtMs;
    expect(drainMs).toBeGreaterThanOrEqual(graceMs);
    expect(drainMs).toBeLessThan(graceMs + 10_000);
    const everyPid = [...new Set(readFakeLog(fakeLog).map((e) => e.pid))];
    expect(await stillAliveAfter(everyPid, 5000)).toEqual([]);

    const { state, dones, counts } = await storeState(dataDir, [...finishing, hang, ...queued]);
    for (const id of finishing) {
      expect(state[id]!.status).toBe('succeeded');
      // It was running at the signal and ended within the grace.
      expect(state[id]!.finishedAt! - signalledAtMs).toBeGreaterThan(0);
      expect(state[id]!.finishedAt! - signalledAtMs).toBeLessThan(graceMs);
      expect(dones[id]).toBe(1);
    }
    expect(state[hang]).toMatchObject({ status: 'failed', error: 'INTERRUPTED' });
    expect(dones[hang]).toBe(1);
    for (const id of queued) {
      expect(state[id]).toMatchObject({ status: 'queued' });
      expect(dones[id]).toBe(0);
    }
    // The refused submission was not stored; the queued jobs never reached a worker.
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(5);
    const started = readFakeLog(fakeLog).filter((e) => e.event === 'start');
    expect(started.map((e) => e.id).sort()).toEqual([...finishing, hang].sort());
  }, 60_000);
});
