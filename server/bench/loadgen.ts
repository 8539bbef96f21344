// SPDX-License-Identifier: MIT
// The load run on loopback, shared by the benchmark (load.ts: 2 000 jobs) and the test tier (test/server/load.test.ts:
// fewer): the real binary with fake GPUs in process-per-job isolation, N clients (one bearer token each) that submit
// fake jobs of a random length and long-poll each to its end (GET ?wait=), retrying a 429 after its Retry-After.
// Then the checks: no 5xx, every accepted job ended exactly once (one 'done' event in the store, one start and one
// end in the fake workers' log), and no GPU ran two jobs at once, both by the workers' own log and by the store's
// lease intervals. The server's event-loop delay, memory and CPU come from its /metrics.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tokenDigest } from '../src/api/auth.js';
import { SqliteJobStore } from '../src/store/sqlite.js';
import {
  type FakeLogEvent,
  type ServerExit,
  buildFakeWorker,
  readFakeLog,
  startServer,
  stillAliveAfter,
} from './binary.js';

export interface LoadOptions {
  /** Jobs submitted in all. */
  jobs: number;
  /** Concurrent clients, each with its own token (principal). */
  clients: number;
  /** Fake GPUs. */
  gpus: number;
  /** Each job's run time is drawn uniformly from [min, max] ms. */
  jobMs: readonly [min: number, max: number];
  /** Every accepted job must end within this long of the start. */
  deadlineMs: number;
  /** 'source': server/src/main.ts under tsx, with the fake worker built to JavaScript; or a built main.js. */
  main: 'source' | string;
  /** The server's --log-level. */
  logLevel: string;
  /** Node flags for the server (--cpu-prof ...). */
  nodeArgs?: readonly string[];
  /** Seeds the jobs' lengths. Default 1. */
  seed?: number;
  /** ?wait= of each poll. Default 30. */
  waitSeconds?: number;
}

export interface Quantiles {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

/** What the clients saw of one accepted job. */
interface Accepted {
  id: string;
  status: string;
  /** The error of a job that did not succeed. */
  error: string | undefined;
  gpu: string | undefined;
  startedAtMs: number | undefined;
  finishedAtMs: number | undefined;
}

export interface LoadReport {
  options: LoadOptions;
  /** From the first submission to the last job's end, as the clients saw it. */
  durationMs: number;
  accepted: number;
  /** Accepted jobs that ended, per minute of durationMs. */
  jobsPerMinute: number;
  /** Every POST, 202 or not, ms. */
  submitMs: Quantiles;
  /** First POST to the end seen by the client's long-poll, ms. */
  endToEndMs: Quantiles;
  /** 429s answered (each retried after its Retry-After). */
  retried429: number;
  /** Responses with a 5xx status: 'METHOD path: status code'. */
  fiveXx: string[];
  /** Anything else that went wrong on the client side: other 4xx, network errors. */
  clientErrors: string[];
  /** Accepted jobs not ended by the deadline. */
  unfinished: string[];
  /** Ended jobs whose status is not 'succeeded' (every fake job here passes). */
  notSucceeded: string[];
  /** Jobs whose 'done' events in the store are not exactly one. */
  doneNotOnce: string[];
  /** Jobs the fake workers did not start and end exactly once. */
  runNotOnce: string[];
  /** Overlapping jobs on one GPU, by the workers' log (job start to its end, before the worker exits). */
  workerOverlaps: string[];
  /** Overlapping jobs on one GPU, by the store's lease intervals (startedAt to finishedAt). */
  leaseOverlaps: string[];
  /** Worker processes still alive after the server exited. */
  orphans: number[];
  /** Jobs per GPU. */
  perGpu: Record<string, number>;
  server: {
    exit: ServerExit;
    /** nodejs_eventloop_lag_p99_seconds over the run (prom-client, 10 ms resolution: an idle loop reads ~10 ms). */
    eventLoopP99Ms: number;
    eventLoopMaxMs: number;
    rssBeforeMb: number;
    rssAfterMb: number;
    /** CPU the server process used during the run (its children not included). */
    cpuSeconds: number;
    /** Linux: how long its main thread was ready to run but waited for a CPU during the run (NaN elsewhere). */
    runQueueWaitSeconds: number;
  };
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

/** Nearest-rank quantiles. */
export function quantiles(values: readonly number[]): Quantiles {
  const s = [...values].sort((a, b) => a - b);
  const at = (q: number): number => (s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!);
  return { n: s.length, p50: at(0.5), p99: at(0.99), max: s.length === 0 ? NaN : s[s.length - 1]! };
}

/** mulberry32: a small seeded generator, so a run's job lengths can be repeated. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** A job the fake worker runs for `ms` and passes. */
export function fakeJob(ms: number): string {
  return JSON.stringify({
    name: `fake:pass:${ms}ms`,
    source: 'extern "C" __global__ void k(float* y) {}',
    kernel: 'k',
    grid: 1,
    block: 32,
    args: ['ptr:f32[32]:out'],
  });
}

interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/** One request over the agent's kept-alive connections; a network error rejects. */
function request(agent: Agent, url: string, method: string, headers: Record<string, string>, body?: string) {
  return new Promise<Response>((resolve, reject) => {
    const req = httpRequest(
      url,
      { agent, method, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = text === '' ? undefined : JSON.parse(text);
          } catch {
            // not JSON: kept as text
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The value of an unlabelled sample in Prometheus text. */
export function metric(text: string, name: string): number {
  const m = new RegExp(`^${name} ([^\\s]+)`, 'm').exec(text);
  return m === null ? NaN : Number(m[1]);
}

/** Pairs of overlapping intervals on one GPU (an interval may start where the one before ended). */
export function overlapsOf(intervals: readonly { gpu: string; id: string; start: number; end: number }[]): string[] {
  const byGpu = new Map<string, { id: string; start: number; end: number }[]>();
  for (const i of intervals) {
    let list = byGpu.get(i.gpu);
    if (list === undefined) byGpu.set(i.gpu, (list = []));
    list.push(i);
  }
  const found: string[] = [];
  for (const [gpu, list] of byGpu) {
    list.sort((a, b) => a.start - b.start || a.end - b.end);
    let last: { id: string; start: number; end: number } | undefined;
    for (const i of list) {
      if (last !== undefined && i.start < last.end) {
        found.push(`${gpu}: ${i.id} [${i.start}, ${i.end}] began before ${last.id} [${last.start}, ${last.end}] ended`);
      }
      if (last === undefined || i.end > last.end) last = i;
    }
  }
  return found;
}

/** Jobs not started and ended exactly once by the workers, and the workers' job intervals per GPU. */
export function workerRuns(events: readonly FakeLogEvent[], ids: readonly string[]) {
  const runs = new Map<string, { starts: FakeLogEvent[]; ends: FakeLogEvent[] }>();
  for (const e of events) {
    if (e.id === undefined) continue;
    let r = runs.get(e.id);
    if (r === undefined) runs.set(e.id, (r = { starts: [], ends: [] }));
    (e.event === 'start' ? r.starts : r.ends).push(e);
  }
  const notOnce = ids.filter((id) => runs.get(id)?.starts.length !== 1 || runs.get(id)?.ends.length !== 1);
  const intervals = [...runs].map(([id, r]) => ({
    id,
    gpu: r.starts[0]?.gpu ?? 'unknown',
    start: Math.min(...r.starts.map((e) => e.atMs)),
    // A job without an end holds its GPU for ever.
    end: r.ends.length === 0 ? Infinity : Math.max(...r.ends.map((e) => e.atMs)),
  }));
  return { notOnce, intervals };
}

/** Linux: seconds the process's main thread has spent runnable but not running (schedstat's second field). */
function runQueueWaitSeconds(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
  } catch {
    return NaN;
  }
}

/** Runs the whole scenario: the server, the clients, the drain, the checks. The temporary files are removed. */
export async function runLoad(o: LoadOptions): Promise<LoadReport> {
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-load-'));
  try {
    return await runIn(dir, o);
  } finally {
    if (process.env.KEEP === undefined) rmSync(dir, { recursive: true, force: true });
    else console.log('kept', dir);
  }
}

async function runIn(dir: string, o: LoadOptions): Promise<LoadReport> {
  const tokens = Array.from({ length: o.clients }, () => randomBytes(24).toString('base64url'));
  const tokensFile = join(dir, 'tokens');
  writeFileSync(tokensFile, tokens.map((t, i) => `client${i}:${tokenDigest(t)}\n`).join(''));
  const fakeLog = join(dir, 'fake.log');
  const dataDir = join(dir, 'data');
  const worker = o.main === 'source' ? buildFakeWorker(join(dir, 'worker')) : 'fake';
  const server = await startServer({
    main: o.main,
    ...(o.nodeArgs === undefined ? {} : { nodeArgs: o.nodeArgs }),
    args: ['--port', '0', '--data-dir', dataDir, '--tokens-file', tokensFile],
    // Submissions per token per minute well above what a client can make here; queue caps as they are.
    env: {
      CUDAKIT_SERVER_WORKER: worker,
      CUDAKIT_FAKE_GPUS: String(o.gpus),
      CUDAKIT_FAKE_LOG: fakeLog,
      CUDAKIT_SERVER_LOG_LEVEL: o.logLevel,
      CUDAKIT_SERVER_SUBMITS_PER_MINUTE: '6000',
      CUDAKIT_SERVER_DRAIN_SECONDS: '10',
    },
  });
  const agent = new Agent({ keepAlive: true, maxSockets: o.clients + 4 });
  try {
    const scrape = async (): Promise<string> => (await request(agent, `${server.url}/metrics`, 'GET', {})).body;
    // The first scrape starts the run's event-loop histogram (each scrape reads it and starts it over).
    const before = await scrape();
    const waitedBefore = runQueueWaitSeconds(server.pid);
    const run = await clients(agent, server.url, tokens, o);
    const waitedAfter = runQueueWaitSeconds(server.pid);
    const after = await scrape();
    agent.destroy();
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    const events = readFakeLog(fakeLog);
    const orphans = await stillAliveAfter([...new Set(events.map((e) => e.pid))], 5000);

    const ids = run.accepted.map((a) => a.id);
    const store = SqliteJobStore.open(join(dataDir, 'jobs.sqlite'));
    const doneNotOnce: string[] = [];
    try {
      for (const id of ids) {
        const done = (await store.events(id, 0)).filter((e) => e.type === 'done').length;
        if (done !== 1) doneNotOnce.push(`${id}: ${done} 'done' events`);
      }
    } finally {
      await store.close();
    }
    const worked = workerRuns(events, ids);
    const leases = run.accepted
      .filter((a) => a.gpu !== undefined && a.startedAtMs !== undefined && a.finishedAtMs !== undefined)
      .map((a) => ({ id: a.id, gpu: a.gpu!, start: a.startedAtMs!, end: a.finishedAtMs! }));
    const perGpu: Record<string, number> = {};
    for (const a of run.accepted) if (a.gpu !== undefined) perGpu[a.gpu] = (perGpu[a.gpu] ?? 0) + 1;
    const ended = run.accepted.filter((a) => TERMINAL.has(a.status));
    return {
      options: o,
      durationMs: run.durationMs,
      accepted: run.accepted.length,
      jobsPerMinute: (ended.length / run.durationMs) * 60_000,
      submitMs: quantiles(run.submitMs),
      endToEndMs: quantiles(run.endToEndMs),
      retried429: run.retried429,
      fiveXx: run.fiveXx,
      clientErrors: run.clientErrors,
      unfinished: run.accepted.filter((a) => !TERMINAL.has(a.status)).map((a) => a.id),
      notSucceeded: ended.filter((a) => a.status !== 'succeeded').map((a) => `${a.id}: ${a.status} (${a.error})`),
      doneNotOnce,
      runNotOnce: worked.notOnce,
      workerOverlaps: overlapsOf(worked.intervals),
      leaseOverlaps: overlapsOf(leases),
      orphans,
      perGpu,
      server: {
        exit,
        eventLoopP99Ms: metric(after, 'nodejs_eventloop_lag_p99_seconds') * 1000,
        eventLoopMaxMs: metric(after, 'nodejs_eventloop_lag_max_seconds') * 1000,
        rssBeforeMb: metric(before, 'process_resident_memory_bytes') / 2 ** 20,
        rssAfterMb: metric(after, 'process_resident_memory_bytes') / 2 ** 20,
        cpuSeconds: metric(after, 'process_cpu_seconds_total') - metric(before, 'process_cpu_seconds_total'),
        runQueueWaitSeconds: waitedAfter - waitedBefore,
      },
    };
  } catch (e) {
    (e as Error).message += `\nserver output:\n${server.output()}`;
    throw e;
  } finally {
    agent.destroy();
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  }
}

/** The clients: each takes the next job, submits it (a 429 is retried after its Retry-After) and waits for its end. */
async function clients(agent: Agent, url: string, tokens: readonly string[], o: LoadOptions) {
  const rand = random(o.seed ?? 1);
  const [minMs, maxMs] = o.jobMs;
  const lengths = Array.from({ length: o.jobs }, () => minMs + Math.floor(rand() * (maxMs - minMs + 1)));
  const waitSeconds = o.waitSeconds ?? 30;
  const submitMs: number[] = [];
  const endToEndMs: number[] = [];
  const accepted: Accepted[] = [];
  const fiveXx: string[] = [];
  const clientErrors: string[] = [];
  let retried429 = 0;
  let next = 0;
  const t0 = performance.now();
  const deadline = t0 + o.deadlineMs;
  let lastEnd = t0;

  const call = async (token: string, method: string, path: string, body?: string): Promise<Response | undefined> => {
    try {
      const r = await request(agent, `${url}${path}`, method, { authorization: `Bearer ${token}` }, body);
      if (r.status >= 500) fiveXx.push(`${method} ${path}: ${r.status} ${r.body?.code ?? ''}`);
      return r;
    } catch (e) {
      clientErrors.push(`${method} ${path}: ${(e as Error).message}`);
      return undefined;
    }
  };

  const client = async (token: string): Promise<void> => {
    while (next < o.jobs && performance.now() < deadline) {
      const body = fakeJob(lengths[next++]!);
      const first = performance.now();
      let id: string | undefined;
      while (id === undefined && performance.now() < deadline) {
        const t = performance.now();
        const r = await call(token, 'POST', '/v1/evaluations', body);
        submitMs.push(performance.now() - t);
        if (r?.status === 202) id = (r.body as { id: string }).id;
        else if (r?.status === 429) {
          retried429++;
          const afterS = Number(r.headers['retry-after']);
          if (!Number.isFinite(afterS)) clientErrors.push(`POST: 429 without a Retry-After`);
          await new Promise((resolve) => setTimeout(resolve, 1000 * (Number.isFinite(afterS) ? afterS : 1)));
        } else {
          if (r !== undefined && r.status < 500) clientErrors.push(`POST: ${r.status} ${JSON.stringify(r.body)}`);
          break;
        }
      }
      if (id === undefined) continue;
      const job: Accepted = {
        id,
        status: 'queued',
        error: undefined,
        gpu: undefined,
        startedAtMs: undefined,
        finishedAtMs: undefined,
      };
      accepted.push(job);
      while (!TERMINAL.has(job.status) && performance.now() < deadline) {
        const wait = Math.max(1, Math.min(waitSeconds, Math.ceil((deadline - performance.now()) / 1000)));
        const r = await call(token, 'GET', `/v1/evaluations/${id}?wait=${wait}`);
        if (r?.status !== 200) {
          if (r !== undefined && r.status < 500) clientErrors.push(`GET ${id}: ${r.status} ${JSON.stringify(r.body)}`);
          break; // recorded: the job counts as unfinished
        }
        const e = r.body as {
          status: string;
          error: { code: string; message: string } | null;
          gpu: { uuid: string } | null;
          startedAt: string | null;
          finishedAt: string | null;
        };
        job.status = e.status;
        job.error = e.error === null ? undefined : `${e.error.code}: ${e.error.message}`;
        if (TERMINAL.has(e.status)) {
          const now = performance.now();
          endToEndMs.push(now - first);
          lastEnd = Math.max(lastEnd, now);
          job.gpu = e.gpu?.uuid;
          job.startedAtMs = e.startedAt === null ? undefined : Date.parse(e.startedAt);
          job.finishedAtMs = e.finishedAt === null ? undefined : Date.parse(e.finishedAt);
        }
      }
    }
  };

  await Promise.all(Array.from({ length: o.clients }, (_, i) => client(tokens[i % tokens.length]!)));
  return { durationMs: lastEnd - t0, submitMs, endToEndMs, accepted, fiveXx, clientErrors, retried429 };
}

/** The report's failed checks, one line each; [] when the run met every one. */
export function failedChecks(r: LoadReport): string[] {
  const list = (name: string, items: readonly unknown[]): string[] =>
    items.length === 0 ? [] : [`${name} (${items.length}): ${items.slice(0, 5).map(String).join('; ')}`];
  return [
    ...(r.accepted === r.options.jobs ? [] : [`accepted ${r.accepted} of ${r.options.jobs} jobs`]),
    ...list('5xx responses', r.fiveXx),
    ...list('client errors', r.clientErrors),
    ...list('not ended by the deadline', r.unfinished),
    ...list('ended otherwise than succeeded', r.notSucceeded),
    ...list("'done' not exactly once", r.doneNotOnce),
    ...list('not run exactly once by a worker', r.runNotOnce),
    ...list('two jobs at once on a GPU (workers)', r.workerOverlaps),
    ...list('two jobs at once on a GPU (leases)', r.leaseOverlaps),
    ...list('workers alive after the server exited', r.orphans),
    ...(r.server.exit.code === 0 ? [] : [`the server exited with ${JSON.stringify(r.server.exit)} after SIGTERM`]),
  ];
}
