// SPDX-License-Identifier: MIT
// The load run on loopback, shared by the benchmark (load.ts) and the test tier (server/test/load.test.ts): the real
// binary with fake GPUs in process-per-job isolation, N clients (one bearer token each) that submit fake jobs of a
// random length on a schedule spread over the submission window and long-poll each to its end (GET ?wait=),
// retrying a 429 after its Retry-After. Then the checks: no 5xx, every job accepted within the submission deadline,
// every accepted job ended exactly once within the deadline (one 'done' event in the store, one start and one end in
// the fake workers' log), no GPU ran two jobs at once (by the workers' own log and by the store's lease intervals),
// no worker ran two jobs, and none outlived the server. The server's event-loop delay, memory and CPU come from its
// /metrics and /proc.
//
// Submissions do not wait for the jobs before them: with one worker process per job, a 2-core host runs about 20 fake
// jobs a second (a worker costs about 80 ms of CPU, most of it Node's start), so a 60 s submission window leaves a
// backlog that the queue absorbs and works off afterwards. Each client keeps at most `maxOpenPerClient` jobs open
// (submitted, end not seen yet): the clients together never fill the server's queue, whose 503 QUEUE_FULL would count
// as a 5xx.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { tokenDigest } from '../src/http/auth.js';
import { DEFAULT_LIMITS } from '../src/service.js';
import { SqliteJobStore } from '../src/store/sqlite.js';
import {
  type FakeLogEvent,
  type ServerExit,
  buildFakeWorker,
  childrenOf,
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
  /** Job k of n is due (may be submitted) k × submitWindowMs / n after the start. */
  submitWindowMs: number;
  /** Every job must be accepted within this long of the start. */
  submitDeadlineMs: number;
  /** Every accepted job must end within this long of the start. */
  deadlineMs: number;
  /** Jobs a client may have open at once. Default: the server's queue cap over the clients (so it never fills). */
  maxOpenPerClient?: number;
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
  /** Date.now() when its first POST began. */
  submittedAtMs: number;
  gpu: string | undefined;
  startedAtMs: number | undefined;
  finishedAtMs: number | undefined;
}

export interface LoadReport {
  options: LoadOptions;
  /** From the first submission to the last job's end (the store's finishedAt). */
  durationMs: number;
  /** From the first submission to the last 202. */
  submitPhaseMs: number;
  accepted: number;
  /** Accepted jobs that ended, per second of durationMs. */
  jobsPerSecond: number;
  /** Every POST, 202 or not, as the clients timed it, ms. */
  submitMs: Quantiles;
  /** POSTs as the server timed them (its request histogram): the smallest bucket bound holding the p99, ms. */
  serverSubmitP99AtMostMs: number;
  /** First POST to the job's finishedAt, ms. */
  endToEndMs: Quantiles;
  /** The most jobs the clients had open at once (submitted, end not seen yet), in all. */
  maxOpen: number;
  /** The cap on a client's open jobs. */
  maxOpenPerClient: number;
  /** 429s answered (each retried after its Retry-After). */
  retried429: number;
  /** Responses with a 5xx status: 'METHOD path: status code'. */
  fiveXx: string[];
  /** Anything else that went wrong on the client side: other 4xx, network errors. */
  clientErrors: string[];
  /** Jobs not accepted by the submission deadline (their indices). */
  notSubmitted: number[];
  /** Accepted jobs not seen ended by the deadline, or ended after it. */
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
  /** Worker processes (and the forker) still alive after the server exited. */
  orphans: number[];
  /** Jobs per GPU. */
  perGpu: Record<string, number>;
  /** Worker processes started during the whole life of the server. */
  workersStarted: number;
  /** Workers that took more than one job (none in process-per-job isolation). */
  workersReused: string[];
  server: {
    exit: ServerExit;
    /** nodejs_eventloop_lag_p50/p99/max_seconds over the run, ms (prom-client samples every 10 ms, and a sample
     * is the whole interval between two ticks: an idle loop reads ~10 ms). */
    eventLoopP50Ms: number;
    eventLoopP99Ms: number;
    eventLoopMaxMs: number;
    rssBeforeMb: number;
    rssAfterMb: number;
    /** Linux: the most RSS the process ever had (VmHWM). */
    rssPeakMb: number;
    /** CPU the server process used during the run (its children not included). */
    cpuSeconds: number;
    /** Linux: how long its main thread was ready to run but waited for a CPU during the run (NaN elsewhere). */
    runQueueWaitSeconds: number;
  };
  /** Linux: CPU of the forker itself and of the workers it reaped during the run; of the load generator. */
  cpu: {
    forkerSeconds: number;
    workersSeconds: number;
    loadGeneratorSeconds: number;
    /** The host's CPU busy during the run, all processes: seconds, and the fraction of what its CPUs had. */
    hostBusySeconds: number;
    hostBusyFraction: number;
    /** The host's 1-minute load average when the run began (another run beside this one shows here). */
    loadAverageBefore: number;
  };
  /** The load generator's own event-loop delay p99, ms (as the server's: an idle loop reads ~10 ms). */
  clientEventLoopP99Ms: number;
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
/** Linux's USER_HZ: /proc's CPU times are in these ticks. */
const TICKS_PER_SECOND = 100;

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
  return fakeJobNamed(`fake:pass:${ms}ms`);
}

/** A job the fake worker runs as its name says (run/worker/fake.ts: 'fake:hang:time', 'fake:pass:80ms' ...). */
export function fakeJobNamed(name: string): string {
  return JSON.stringify({
    name,
    source: 'extern "C" __global__ void k(float* y) {}',
    kernel: 'k',
    grid: 1,
    block: 32,
    args: ['ptr:f32[32]:out'],
  });
}

export interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/** One request over the agent's kept-alive connections; a network error rejects. */
export function request(
  agent: Agent | undefined,
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Response> {
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

/** The smallest bucket bound (ms) of a histogram's series that holds the p99; `labels`: the series' labels but le. */
export function histogramP99AtMostMs(text: string, name: string, labels: Readonly<Record<string, string>>): number {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  const buckets: { le: number; count: number }[] = [];
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{([^}]*)\\} (\\S+)`, 'gm'))) {
    const pairs = m[1]!.split(',');
    const le = pairs.find((p) => p.startsWith('le='))?.slice(4, -1);
    const rest = pairs
      .filter((p) => !p.startsWith('le='))
      .sort()
      .join(',');
    if (le !== undefined && rest === want) {
      buckets.push({ le: le === '+Inf' ? Infinity : Number(le) * 1000, count: Number(m[2]) });
    }
  }
  buckets.sort((a, b) => a.le - b.le);
  const total = buckets[buckets.length - 1]?.count ?? 0;
  return total === 0 ? NaN : buckets.find((b) => b.count >= 0.99 * total)!.le;
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
    if (e.event === 'start') r.starts.push(e);
    else if (e.event === 'end') r.ends.push(e);
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

/** Workers that started more than one job: 'pid: id, id'. */
export function reusedWorkers(events: readonly FakeLogEvent[]): string[] {
  const jobs = new Map<number, string[]>();
  for (const e of events) if (e.event === 'start') jobs.set(e.pid, [...(jobs.get(e.pid) ?? []), e.id ?? '?']);
  return [...jobs].filter(([, ids]) => ids.length > 1).map(([pid, ids]) => `${pid}: ${ids.join(', ')}`);
}

/** Linux: /proc/<pid>/stat's CPU ticks: the process's own (utime + stime) and its reaped children's. */
function cpuTicks(pid: number | undefined): { self: number; children: number } {
  if (pid === undefined) return { self: NaN, children: NaN };
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    // After the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    return { self: f[11]! + f[12]!, children: f[13]! + f[14]! };
  } catch {
    return { self: NaN, children: NaN };
  }
}

/** Linux: the host's busy and total CPU ticks (/proc/stat's first line). */
function hostTicks(): { busy: number; total: number } {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    return { busy: total - f[3]! - (f[4] ?? 0), total }; // idle and iowait are not busy
  } catch {
    return { busy: NaN, total: NaN };
  }
}

/** Linux: seconds the process's main thread has spent runnable but not running (schedstat's second field). */
function runQueueWaitSeconds(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
  } catch {
    return NaN;
  }
}

/** Linux: the most resident memory the process ever had, MiB. */
function peakRssMb(pid: number): number {
  try {
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? NaN : Number(kb) / 1024;
  } catch {
    return NaN;
  }
}

/** The server's forker (run/forker.ts): its child whose command line names forker-main. */
export function forkerOf(serverPid: number): number | undefined {
  return childrenOf(serverPid).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('forker-main');
    } catch {
      return false;
    }
  });
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
    // Submissions per token per minute well above what a client makes here; the queue caps as they are.
    env: {
      CUDAKIT_SERVER_WORKER: worker,
      CUDAKIT_FAKE_GPUS: String(o.gpus),
      CUDAKIT_FAKE_LOG: fakeLog,
      CUDAKIT_SERVER_LOG_LEVEL: o.logLevel,
      CUDAKIT_SERVER_SUBMITS_PER_MINUTE: '6000',
      CUDAKIT_SERVER_DRAIN_SECONDS: '10',
    },
  });
  // Two connections per client: its submissions and its long-poll.
  const agent = new Agent({ keepAlive: true, maxSockets: 2 * o.clients + 4 });
  try {
    const scrape = async (): Promise<string> => (await request(agent, `${server.url}/metrics`, 'GET', {})).body;
    await untilIdle(agent, server.url, tokens[0]!, o.gpus);
    const forker = forkerOf(server.pid);
    // The first scrape starts the run's event-loop histogram (each scrape reads it and starts it over).
    const before = await scrape();
    const waitedBefore = runQueueWaitSeconds(server.pid);
    const forkerBefore = cpuTicks(forker);
    const hostBefore = hostTicks();
    const loadAverageBefore = loadavg()[0]!;
    const ownBefore = process.cpuUsage();
    const clientLoop = monitorEventLoopDelay({ resolution: 10 });
    clientLoop.enable();
    const run = await clients(agent, server.url, tokens, o);
    clientLoop.disable();
    const own = process.cpuUsage(ownBefore);
    const hostAfter = hostTicks();
    const forkerAfter = cpuTicks(forker);
    const waitedAfter = runQueueWaitSeconds(server.pid);
    const after = await scrape();
    const rssPeakMb = peakRssMb(server.pid);
    agent.destroy();
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    const events = readFakeLog(fakeLog);
    const workerPids = [...new Set(events.map((e) => e.pid))];
    const orphans = await stillAliveAfter([...workerPids, ...(forker === undefined ? [] : [forker])], 5000);

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
    const ended = run.accepted.filter((a) => TERMINAL.has(a.status) && a.finishedAtMs !== undefined);
    const lastEndMs = Math.max(run.t0WallMs, ...ended.map((a) => a.finishedAtMs!));
    const durationMs = lastEndMs - run.t0WallMs;
    const late = ended.filter((a) => a.finishedAtMs! - run.t0WallMs > o.deadlineMs);
    return {
      options: o,
      durationMs,
      submitPhaseMs: run.submitPhaseMs,
      accepted: run.accepted.length,
      jobsPerSecond: (ended.length / durationMs) * 1000,
      submitMs: quantiles(run.submitMs),
      serverSubmitP99AtMostMs: histogramP99AtMostMs(after, 'cudakit_http_request_duration_seconds', {
        method: 'POST',
        route: '/v1/evaluations',
        status_code: '202',
      }),
      endToEndMs: quantiles(ended.map((a) => a.finishedAtMs! - a.submittedAtMs)),
      maxOpen: run.maxOpen,
      maxOpenPerClient: run.maxOpenPerClient,
      retried429: run.retried429,
      fiveXx: run.fiveXx,
      clientErrors: run.clientErrors,
      notSubmitted: run.notSubmitted,
      unfinished: [
        ...run.accepted.filter((a) => !TERMINAL.has(a.status)).map((a) => `${a.id}: ${a.status}`),
        ...late.map((a) => `${a.id}: ended ${a.finishedAtMs! - run.t0WallMs} ms after the start`),
      ],
      notSucceeded: ended.filter((a) => a.status !== 'succeeded').map((a) => `${a.id}: ${a.status} (${a.error})`),
      doneNotOnce,
      runNotOnce: worked.notOnce,
      workerOverlaps: overlapsOf(worked.intervals),
      leaseOverlaps: overlapsOf(leases),
      orphans,
      perGpu,
      workersStarted: events.filter((e) => e.event === 'spawn').length,
      workersReused: reusedWorkers(events),
      server: {
        exit,
        eventLoopP50Ms: metric(after, 'nodejs_eventloop_lag_p50_seconds') * 1000,
        eventLoopP99Ms: metric(after, 'nodejs_eventloop_lag_p99_seconds') * 1000,
        eventLoopMaxMs: metric(after, 'nodejs_eventloop_lag_max_seconds') * 1000,
        rssBeforeMb: metric(before, 'process_resident_memory_bytes') / 2 ** 20,
        rssAfterMb: metric(after, 'process_resident_memory_bytes') / 2 ** 20,
        rssPeakMb,
        cpuSeconds: metric(after, 'process_cpu_seconds_total') - metric(before, 'process_cpu_seconds_total'),
        runQueueWaitSeconds: waitedAfter - waitedBefore,
      },
      cpu: {
        forkerSeconds: (forkerAfter.self - forkerBefore.self) / TICKS_PER_SECOND,
        workersSeconds: (forkerAfter.children - forkerBefore.children) / TICKS_PER_SECOND,
        loadGeneratorSeconds: (own.user + own.system) / 1e6,
        hostBusySeconds: (hostAfter.busy - hostBefore.busy) / TICKS_PER_SECOND,
        hostBusyFraction: (hostAfter.busy - hostBefore.busy) / (hostAfter.total - hostBefore.total),
        loadAverageBefore,
      },
      clientEventLoopP99Ms: clientLoop.percentile(99) / 1e6,
    };
  } catch (e) {
    (e as Error).message += `\nserver output:\n${server.output()}`;
    throw e;
  } finally {
    agent.destroy();
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  }
}

/** Waits (up to 30 s) until every GPU's first worker is ready: the run measures a server that can take work. */
async function untilIdle(agent: Agent, url: string, token: string, gpus: number): Promise<void> {
  const deadlineMs = Date.now() + 30_000;
  for (;;) {
    const r = await request(agent, `${url}/v1/gpus`, 'GET', { authorization: `Bearer ${token}` });
    const slots = (r.body as { gpus?: { state: string }[] } | undefined)?.gpus ?? [];
    if (slots.length === gpus && slots.every((s) => s.state === 'idle')) return;
    if (Date.now() > deadlineMs) throw new Error(`the GPUs are not all idle after 30 s: ${JSON.stringify(r.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A promise with its resolve function, for a loop to wait on the other's progress. */
function signal(): { wait: Promise<void>; wake: () => void } {
  let wake!: () => void;
  const wait = new Promise<void>((resolve) => (wake = resolve));
  return { wait, wake };
}

/**
 * The clients. Client i owns jobs i, i + clients, ...; its submitter posts each once it is due and the client has
 * fewer than maxOpenPerClient open (a 429 is retried after its Retry-After), and its poller long-polls the oldest
 * open job to its end (jobs start in submission order, so the oldest is the one to end next).
 */
async function clients(agent: Agent, url: string, tokens: readonly string[], o: LoadOptions) {
  const rand = random(o.seed ?? 1);
  const [minMs, maxMs] = o.jobMs;
  const lengths = Array.from({ length: o.jobs }, () => minMs + Math.floor(rand() * (maxMs - minMs + 1)));
  const waitSeconds = o.waitSeconds ?? 30;
  const maxOpenPerClient = o.maxOpenPerClient ?? Math.floor(DEFAULT_LIMITS.maxQueued / o.clients);
  const submitMs: number[] = [];
  const accepted: Accepted[] = [];
  const fiveXx: string[] = [];
  const clientErrors: string[] = [];
  const notSubmitted: number[] = [];
  let retried429 = 0;
  let open = 0;
  let maxOpen = 0;
  const t0 = performance.now();
  const t0WallMs = Date.now();
  const submitDeadline = t0 + o.submitDeadlineMs;
  const deadline = t0 + o.deadlineMs;
  let lastAccepted = t0;

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
  const sleepUntil = (at: number): Promise<void> =>
    new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())));

  /** Submits job k; its record when accepted, undefined when not (recorded as not submitted). */
  const submit = async (token: string, k: number): Promise<Accepted | undefined> => {
    const body = fakeJob(lengths[k]!);
    const submittedAtMs = Date.now();
    while (performance.now() < submitDeadline) {
      const t = performance.now();
      const r = await call(token, 'POST', '/v1/evaluations', body);
      submitMs.push(performance.now() - t);
      if (r?.status === 202) {
        lastAccepted = Math.max(lastAccepted, performance.now());
        const id = (r.body as { id: string }).id;
        return {
          id,
          status: 'queued',
          error: undefined,
          submittedAtMs,
          gpu: undefined,
          startedAtMs: undefined,
          finishedAtMs: undefined,
        };
      }
      if (r?.status !== 429) {
        if (r !== undefined && r.status < 500) clientErrors.push(`POST: ${r.status} ${JSON.stringify(r.body)}`);
        break;
      }
      retried429++;
      const afterS = Number(r.headers['retry-after']);
      if (!Number.isFinite(afterS)) clientErrors.push(`POST: 429 without a Retry-After`);
      await new Promise((resolve) => setTimeout(resolve, 1000 * (Number.isFinite(afterS) ? afterS : 1)));
    }
    notSubmitted.push(k);
    return undefined;
  };

  /** Long-polls `job` until it ends or the deadline passes; false when a request failed. */
  const follow = async (token: string, job: Accepted): Promise<boolean> => {
    while (!TERMINAL.has(job.status) && performance.now() < deadline) {
      const wait = Math.max(1, Math.min(waitSeconds, Math.ceil((deadline - performance.now()) / 1000)));
      const r = await call(token, 'GET', `/v1/evaluations/${job.id}?wait=${wait}`);
      if (r?.status !== 200) {
        if (r !== undefined && r.status < 500)
          clientErrors.push(`GET ${job.id}: ${r.status} ${JSON.stringify(r.body)}`);
        return false; // recorded: the job counts as unfinished
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
      job.gpu = e.gpu?.uuid;
      job.startedAtMs = e.startedAt === null ? undefined : Date.parse(e.startedAt);
      job.finishedAtMs = e.finishedAt === null ? undefined : Date.parse(e.finishedAt);
    }
    return TERMINAL.has(job.status);
  };

  const client = async (i: number): Promise<void> => {
    const token = tokens[i]!;
    const mine: number[] = [];
    for (let k = i; k < o.jobs; k += o.clients) mine.push(k);
    const openJobs: Accepted[] = [];
    let submitting = true;
    let toPoller = signal();
    let toSubmitter = signal();

    const submitter = async (): Promise<void> => {
      for (const k of mine) {
        await sleepUntil(t0 + (k * o.submitWindowMs) / o.jobs);
        while (openJobs.length >= maxOpenPerClient && performance.now() < submitDeadline) {
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<void>(
            (resolve) => (timer = setTimeout(resolve, submitDeadline - performance.now())),
          );
          await Promise.race([toSubmitter.wait, late]);
          clearTimeout(timer);
          toSubmitter = signal();
        }
        const job = openJobs.length < maxOpenPerClient ? await submit(token, k) : undefined;
        if (job === undefined) {
          if (!notSubmitted.includes(k)) notSubmitted.push(k);
          continue;
        }
        accepted.push(job);
        openJobs.push(job);
        maxOpen = Math.max(maxOpen, ++open);
        toPoller.wake();
      }
      submitting = false;
      toPoller.wake();
    };

    const poller = async (): Promise<void> => {
      for (;;) {
        const job = openJobs[0];
        if (job === undefined) {
          if (!submitting) return;
          await toPoller.wait;
          toPoller = signal();
          continue;
        }
        const ended = await follow(token, job);
        openJobs.shift();
        open--;
        toSubmitter.wake();
        // A failed request or the deadline: what is still open counts as unfinished.
        if (!ended && performance.now() >= deadline) return;
      }
    };

    await Promise.all([submitter(), poller()]);
  };

  await Promise.all(Array.from({ length: o.clients }, (_, i) => client(i)));
  return {
    t0WallMs,
    submitPhaseMs: lastAccepted - t0,
    submitMs,
    accepted,
    notSubmitted: notSubmitted.sort((a, b) => a - b),
    fiveXx,
    clientErrors,
    retried429,
    maxOpen,
    maxOpenPerClient,
  };
}

/** The report's failed checks, one line each; [] when the run met every one. */
export function failedChecks(r: LoadReport): string[] {
  const list = (name: string, items: readonly unknown[]): string[] =>
    items.length === 0 ? [] : [`${name} (${items.length}): ${items.slice(0, 5).map(String).join('; ')}`];
  const o = r.options;
  return [
    ...(r.accepted === o.jobs ? [] : [`accepted ${r.accepted} of ${o.jobs} jobs`]),
    ...list(`not accepted within ${o.submitDeadlineMs} ms`, r.notSubmitted),
    ...list('5xx responses', r.fiveXx),
    ...list('client errors', r.clientErrors),
    ...list(`not ended within ${o.deadlineMs} ms`, r.unfinished),
    ...list('ended otherwise than succeeded', r.notSucceeded),
    ...list("'done' not exactly once", r.doneNotOnce),
    ...list('not run exactly once by a worker', r.runNotOnce),
    ...list('workers that ran more than one job', r.workersReused),
    ...list('two jobs at once on a GPU (workers)', r.workerOverlaps),
    ...list('two jobs at once on a GPU (leases)', r.leaseOverlaps),
    ...list('workers or the forker alive after the server exited', r.orphans),
    ...(r.server.exit.code === 0 ? [] : [`the server exited with ${JSON.stringify(r.server.exit)} after SIGTERM`]),
  ];
}
