// SPDX-License-Identifier: MIT
// `npm run bench:gpu -w server`: the service's performance table on a machine with an NVIDIA GPU, in one run of about
// four minutes. The real binary runs as a child (binary.ts), restricted to one GPU; this process never loads CUDA.
//
//   1. evaluate() in a child process of its own, on the small job (saxpy, 3M elements, quick preset), while the
//      server is idle: the per-job time without the service.
//   2. Library vs service: a 256 MiB f32 copy (default preset, cold, checked against a reference kernel), timed by
//      `cudakit bench` (the CLI as a child process, its --json) and by the service, interleaved CLI, service, service,
//      CLI ...; the ratio of their medians.
//   3. An infinite kernel with timeoutSeconds 5: from the kill to a ready slot (GET /v1/gpus), then the copy through
//      the service again: the ratio after / before.
//   4. The small job through the service, one client then N clients, process isolation (a pre-started child):
//      submit → result per job (long-poll), overhead = that − evaluate() in-process, jobs per minute.
//   5. The same with --isolation warm.
//
// --fake runs the same flow against the fake worker (no GPU: the figures mean nothing, the code paths run);
// --quick shortens every phase; --write replaces the gpu section of server/bench/RESULTS.md; --json writes the raw
// numbers. Only one CUDA process is ever alive while a kernel is timed: the CLI, the in-process child and the server's
// jobs never overlap, and the warm phase (whose worker keeps its context between jobs) comes last.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ROOT, type ServerProcess, buildFakeWorker, startServer } from './binary.js';
import type { EvaluateTimes } from './gpu-evaluate.js';
import { RESULTS_FILE, replaceSection } from './results.js';

const USAGE = `Usage: npx tsx server/bench/gpu.ts [options]   (npm run bench:gpu -w server -- [options])

  --quick             shorter phases and fewer rounds (about 2 minutes)
  --fake              against the fake worker, no GPU needed (a dry run: the figures mean nothing)
  --write             replace the gpu section of server/bench/RESULTS.md (--results <file> for another file)
  --json <file>       the raw numbers
  --clients <n>       concurrent clients of the throughput run (default 4)
  --gpu <index|uuid>  the GPU the server uses (default 0)
  --main <path>       the server's built main.js (default: server/src/main.ts under tsx)
  --budget <s>        time budget of the whole run in seconds (default 230, 110 with --quick)
  --keep              keep the temporary directory (kernels, job store, CLI output)
  -h, --help          this text
`;

// ---------------------------------------------------------------------------------------------------------------
// The kernels and jobs

const COPY_ELEMENTS = 64 * 2 ** 20; // 256 MiB of f32: about 130 µs cold on an H200, past the 100 µs the target asks
export const COPY_BYTES_MOVED = 2 * 4 * COPY_ELEMENTS;
const SAXPY_ELEMENTS = 3 * 2 ** 20; // 36 MiB moved: about 10 µs cold
const BLOCK = 256;
const SPIN_TIMEOUT_S = 5; // the smallest timeoutSeconds the API takes

const COPY_SOURCE = `extern "C" __global__ void copy(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
`;
const COPY_REF_SOURCE = `extern "C" __global__ void copy_ref(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i];
}
`;
const SAXPY_SOURCE = `extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;
const SAXPY_REF_SOURCE = `extern "C" __global__ void saxpy_ref(float a, const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
}
`;
// clock64() is never negative in practice: the loop never ends, and the compiler cannot drop it (a loop on a
// volatile local can be: an infinite loop without side effects is undefined behaviour in C++).
const SPIN_SOURCE = `extern "C" __global__ void spin(float* y) {
  long long t = 0;
  while (t >= 0) t = clock64();
  y[threadIdx.x] = (float)t;
}
`;

export type Job = Record<string, unknown>;

/**
 * The 256 MiB copy: the same job for the CLI (as a spec file) and for the service. evaluate() fills, poisons and
 * compares every buffer on the host in JavaScript, a second or more per pass over 64M elements, for the check and
 * for each of the 4 timed input sets: hence one check trial, and `arange` inputs rather than a random fill (the
 * copy's time does not depend on the values).
 */
export function copyJob(fake: boolean): Job {
  return {
    name: fake ? 'fake:pass:150ms' : 'copy-256MiB',
    source: COPY_SOURCE,
    kernel: 'copy',
    grid: COPY_ELEMENTS / BLOCK,
    block: BLOCK,
    args: ['ptr:f32[64M]=arange', 'ptr:f32[64M]:out', `i32=${COPY_ELEMENTS}`],
    reference: { source: COPY_REF_SOURCE, kernel: 'copy_ref' },
    check: { trials: 1 },
    timing: { preset: 'default' },
  };
}

/**
 * The small job. Cheap fills and one check trial for the same reason as the copy's, and because the overhead is a
 * difference of two wall times: the less host work evaluate() does, the less its noise hides the service's share.
 */
export function saxpyJob(fake: boolean): Job {
  return {
    name: fake ? 'fake:pass:20ms' : 'saxpy-3M',
    source: SAXPY_SOURCE,
    kernel: 'saxpy',
    grid: SAXPY_ELEMENTS / BLOCK,
    block: BLOCK,
    args: ['f32=2.5', 'ptr:f32[3M]=arange', 'ptr:f32[3M]=seq(0.5,2):out', `i32=${SAXPY_ELEMENTS}`],
    reference: { source: SAXPY_REF_SOURCE, kernel: 'saxpy_ref' },
    check: { trials: 1 },
    timing: { preset: 'quick' },
  };
}

export function spinJob(fake: boolean): Job {
  return {
    name: fake ? 'fake:hang:check' : 'spin-forever',
    source: SPIN_SOURCE,
    kernel: 'spin',
    grid: 1,
    block: 32,
    args: ['ptr:f32[32]:out'],
    timeoutSeconds: SPIN_TIMEOUT_S,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Options and the time budget

/** The options this benchmark and multi-gpu.ts share. */
export interface CommonOptions {
  quick: boolean;
  fake: boolean;
  write: boolean;
  results: string;
  json: string | undefined;
  clients: number;
  main: 'source' | string;
  budgetMs: number;
  keep: boolean;
}

interface Options extends CommonOptions {
  gpu: string;
}

/** How long each phase may take. Windows shrink when the run is behind its budget. */
interface Plan {
  /** evaluate() in-process: this many processes, each this many warm runs (within evalMaxMs). */
  evalProcesses: number;
  evalRuns: number;
  evalMaxMs: number;
  /** Copy runs before the incident, CLI and service alternating (at least one of each). */
  copyBeforeMax: number;
  copyBeforeMs: number;
  /** Service copy runs after the incident (at least one). */
  copyAfterMax: number;
  copyAfterMs: number;
  oneClientMs: number;
  manyClientsMs: number;
  warmMs: number;
}

const FULL_PLAN: Plan = {
  evalProcesses: 3,
  evalRuns: 5,
  evalMaxMs: 10_000,
  copyBeforeMax: 6,
  copyBeforeMs: 105_000,
  copyAfterMax: 3,
  copyAfterMs: 35_000,
  oneClientMs: 25_000,
  manyClientsMs: 20_000,
  warmMs: 15_000,
};

const QUICK_PLAN: Plan = {
  evalProcesses: 2,
  evalRuns: 3,
  evalMaxMs: 6_000,
  copyBeforeMax: 2,
  copyBeforeMs: 30_000,
  copyAfterMax: 1,
  copyAfterMs: 15_000,
  oneClientMs: 8_000,
  manyClientsMs: 8_000,
  warmMs: 6_000,
};

/** parseArgs' spec of the options this benchmark and multi-gpu.ts share. */
const COMMON_ARGS = {
  quick: { type: 'boolean' },
  fake: { type: 'boolean' },
  write: { type: 'boolean' },
  results: { type: 'string' },
  json: { type: 'string' },
  clients: { type: 'string' },
  main: { type: 'string' },
  budget: { type: 'string' },
  keep: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** A GPU as the server's --gpus names it: an index (nvidia-smi's order) or a UUID. */
export const GPU_ARG = /^(\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-fA-F-]+)$/;

/** The defaults of a benchmark's common options: `budgetS` is the full run's, `quickBudgetS` --quick's or --fake's. */
export interface CommonDefaults {
  clients: number;
  budgetS: number;
  quickBudgetS: number;
}

/** COMMON_ARGS' values, checked. */
function commonOptions(
  values: {
    quick?: boolean;
    fake?: boolean;
    write?: boolean;
    results?: string;
    json?: string;
    clients?: string;
    main?: string;
    budget?: string;
    keep?: boolean;
  },
  defaults: CommonDefaults,
): CommonOptions {
  const quick = values.quick === true;
  const fake = values.fake === true;
  const clients = Number(values.clients ?? defaults.clients);
  if (!Number.isInteger(clients) || clients < 1 || clients > 32) {
    throw new Error(`--clients expects an integer from 1 to 32, not '${values.clients}'`);
  }
  const budgetS = Number(values.budget ?? (quick || fake ? defaults.quickBudgetS : defaults.budgetS));
  if (!(budgetS >= 30 && budgetS <= 3600)) throw new Error(`--budget expects seconds from 30 to 3600`);
  // Fake figures never land in the repository's table by accident.
  if (fake && values.write === true && values.results === undefined) {
    throw new Error('--fake --write needs --results <file>: fake figures are not written to server/bench/RESULTS.md');
  }
  // Paths as the user typed them: npm run -w server runs this in server/, INIT_CWD is where npm was started.
  const cwd = process.env.INIT_CWD ?? process.cwd();
  const main = values.main === undefined ? 'source' : resolve(cwd, values.main);
  if (main !== 'source' && !existsSync(main)) throw new Error(`--main: no such file ${main}`);
  return {
    quick,
    fake,
    write: values.write === true,
    results: values.results === undefined ? RESULTS_FILE : resolve(cwd, values.results),
    json: values.json === undefined ? undefined : resolve(cwd, values.json),
    clients,
    main,
    budgetMs: budgetS * 1000,
    keep: values.keep === true,
  };
}

/**
 * A benchmark's options from its command line: the common ones, and the string option `extra` (this file's --gpu,
 * multi-gpu.ts's --gpus) that `finish` checks and adds; or the exit code when there is nothing to run: 0 after
 * printing `usage` for --help, 2 after a usage error.
 */
export function cliOptions<T extends CommonOptions>(
  bench: string,
  usage: string,
  argv: readonly string[],
  extra: string,
  defaults: CommonDefaults,
  finish: (common: CommonOptions, extra: string | undefined) => T,
): T | number {
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: { ...COMMON_ARGS, [extra]: { type: 'string' } },
      strict: true,
      allowPositionals: false,
    });
    if (values.help === true) {
      process.stdout.write(usage);
      return 0;
    }
    const extraValue = (values as Record<string, unknown>)[extra];
    return finish(commonOptions(values, defaults), typeof extraValue === 'string' ? extraValue : undefined);
  } catch (e) {
    process.stderr.write(`bench:${bench}: ${(e as Error).message}\n\n${usage}`);
    return 2;
  }
}

export class Budget {
  readonly #endMs: number;
  constructor(totalMs: number) {
    this.#endMs = performance.now() + totalMs;
  }
  leftMs(): number {
    return this.#endMs - performance.now();
  }
  /** A window of up to `plannedMs` that leaves `reserveMs` for what follows, but at least `minMs`. */
  window(plannedMs: number, reserveMs: number, minMs = 3_000): number {
    return Math.max(minMs, Math.min(plannedMs, this.leftMs() - reserveMs));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Small helpers

export function median(values: readonly number[]): number {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export const fmt = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : '—');
const fmtMs = (ms: number): string => (Number.isFinite(ms) ? `${fmt(ms, ms < 100 ? 1 : 0)} ms` : '—');
export const fmtUs = (us: number): string => (Number.isFinite(us) ? `${fmt(us, 2)} µs` : '—');
export const fmtRatio = (r: number): string => (Number.isFinite(r) ? `${r.toFixed(4)}×` : '—');
export const met = (ok: boolean | undefined): string => (ok === undefined ? 'n/a' : ok ? 'yes' : '**no**');
export const withinPct = (ratio: number, pct: number): boolean | undefined =>
  Number.isFinite(ratio) ? Math.abs(ratio - 1) <= pct / 100 : undefined;

/** The first sentence of a message, at most 80 characters. */
function short(text: string): string {
  const first = text.split('\n')[0]!.split(/(?<=\.) /)[0]!;
  return first.length > 80 ? `${first.slice(0, 79)}…` : first;
}

function lastLines(text: string, n: number): string {
  return text.trimEnd().split('\n').slice(-n).join('\n');
}

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  elapsedMs: number;
}

/**
 * Runs a child (node `args`, in `cwd`) to its end (SIGKILL after `timeoutMs`), keeping the last 64 KiB of each stream.
 */
export function runChild(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs: number,
  cwd = ROOT,
): Promise<ChildResult> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout = (stdout + s).slice(-65_536)));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-65_536)));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve, reject) => {
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, elapsedMs: performance.now() - t0 });
    });
  });
}

// ---------------------------------------------------------------------------------------------------------------
// The service's API, as a client sees it

interface BenchJson {
  stats: { median: number; ciLow: number; ciHigh: number; n: number };
  stopReason: string;
  converged: boolean;
  env: { device: string; arch: string; driverVersion: string; nvrtcVersion?: string; cudakitVersion: string };
}

export interface Evaluation {
  id: string;
  status: string;
  verdict: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  queueWaitMs: number | null;
  /** The phase it is in (running), or ended in. */
  phase: string | null;
  /** The GPU that ran it (its slot's), once leased. */
  gpu: { uuid: string } | null;
  report: { passed: boolean; phases: { phase: string; ms: number }[]; timing?: BenchJson | null } | null;
  error: { code: string; message: string } | null;
}

export interface Slot {
  uuid: string;
  name: string;
  arch: string;
  state: string;
  jobs: number;
  restarts: number;
  lastError: string | null;
  /** Jobs on it now (a GPU with several lanes is idle while one of them is). */
  running?: number;
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

/** 503 UNDER_PRESSURE answers (the server's event loop was late by over a second), retried after 200 ms. */
const shed = { count: 0 };

export async function call(
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; body: unknown; retryS: number }> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  const deadline = performance.now() + 60_000;
  for (;;) {
    const r = await fetch(url, init);
    const text = await r.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    const pressure = r.status === 503 && (parsed as { code?: unknown } | undefined)?.code === 'UNDER_PRESSURE';
    if (pressure && performance.now() < deadline) {
      shed.count++;
      await sleep(200);
      continue;
    }
    return { status: r.status, body: parsed, retryS: Number(r.headers.get('retry-after') ?? 1) };
  }
}

export async function slots(url: string): Promise<{ gpus: Slot[]; reason: string | null }> {
  const r = await call('GET', `${url}/v1/gpus`);
  if (r.status !== 200) throw new Error(`GET /v1/gpus: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as { gpus: Slot[]; reason: string | null };
}

/**
 * Polls GET /v1/gpus every 10 ms until every slot is idle with no job on it; when they were first seen so (both
 * clocks), and the first slot (the only one, on a server of one GPU).
 */
export async function waitIdle(url: string, timeoutMs: number): Promise<{ atMs: number; epochMs: number; slot: Slot }> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const { gpus, reason } = await slots(url);
    const slot = gpus[0];
    if (slot !== undefined && gpus.every((s) => s.state === 'idle' && (s.running ?? 0) === 0)) {
      return { atMs: performance.now(), epochMs: Date.now(), slot };
    }
    const quarantined = gpus.find((s) => s.state === 'quarantined');
    if (quarantined !== undefined) {
      throw new Error(`the slot of ${quarantined.uuid} is quarantined: ${quarantined.lastError}`);
    }
    if (performance.now() > deadline) {
      const seen = gpus.length === 1 ? gpus[0] : gpus.length > 1 ? gpus : reason;
      throw new Error(`the slots were not idle within ${timeoutMs} ms: ${JSON.stringify(seen)}`);
    }
    await sleep(10);
  }
}

export interface ServiceRun {
  id: string;
  /** Submit → the long-poll's answer with the result, client side. */
  wallMs: number;
  evaluation: Evaluation;
  /** Lease → result, by the server's clock. */
  runMs: number;
  /** The worker's evaluate() phases, summed. */
  workerEvaluateMs: number;
  /** The same, phase by phase. */
  workerPhasesMs: Record<string, number>;
  /** The kernel's median as the report gives it, µs. */
  medianUs: number;
  ciRelPct: number;
}

/** One job through the service: POST (a 429 waits its Retry-After), then long-polls to its end. */
export async function runServiceJob(url: string, body: Job): Promise<ServiceRun> {
  const t0 = performance.now();
  return waitForEnd(url, await submitJob(url, body), t0);
}

/** POSTs a job (a 429 waits its Retry-After); its id. */
export async function submitJob(url: string, body: Job): Promise<string> {
  for (;;) {
    const r = await call('POST', `${url}/v1/evaluations`, body);
    if (r.status === 202) return (r.body as { id: string }).id;
    if (r.status === 429) await sleep(1000 * (Number.isFinite(r.retryS) ? r.retryS : 1));
    else throw new Error(`POST /v1/evaluations: ${r.status} ${JSON.stringify(r.body)}`);
  }
}

/** Long-polls job `id` to its end; `t0` is when it was submitted (performance.now()). */
export async function waitForEnd(url: string, id: string, t0: number): Promise<ServiceRun> {
  let e: Evaluation;
  for (;;) {
    const r = await call('GET', `${url}/v1/evaluations/${id}?wait=60`);
    if (r.status !== 200) throw new Error(`GET /v1/evaluations/${id}: ${r.status} ${JSON.stringify(r.body)}`);
    e = r.body as Evaluation;
    if (TERMINAL.has(e.status)) break;
  }
  const wallMs = performance.now() - t0;
  const stats = e.report?.timing?.stats;
  const started = e.startedAt === null ? NaN : Date.parse(e.startedAt);
  const finished = e.finishedAt === null ? NaN : Date.parse(e.finishedAt);
  return {
    id,
    wallMs,
    evaluation: e,
    runMs: finished - started,
    workerEvaluateMs: e.report === null ? NaN : e.report.phases.reduce((sum, p) => sum + p.ms, 0),
    workerPhasesMs: Object.fromEntries((e.report?.phases ?? []).map((p) => [p.phase, p.ms])),
    medianUs: stats === undefined ? NaN : stats.median * 1000,
    ciRelPct: stats === undefined ? NaN : ((stats.ciHigh - stats.ciLow) / 2 / stats.median) * 100,
  };
}

export function outcomeOf(e: Evaluation): string {
  return `${e.status}/${e.verdict}${e.error === null ? '' : ` (${e.error.code}: ${e.error.message.split('\n')[0]})`}`;
}

// ---------------------------------------------------------------------------------------------------------------
// The run

/** What starting a server and running jobs through it need of a run (this file's, and multi-gpu.ts's). */
export interface RunContext {
  o: Pick<CommonOptions, 'fake' | 'main' | 'keep'>;
  /** The run's temporary directory. */
  dir: string;
  problems: string[];
  /** The running server's output, for a phase that failed. */
  serverOutput: (() => string) | undefined;
}

interface Context extends RunContext {
  o: Options;
  plan: Plan;
  budget: Budget;
  /** The GPU's UUID, as the server's slot has it (the CLI and the in-process child get it as CUDA_VISIBLE_DEVICES). */
  uuid: string;
}

interface Service {
  url: string;
  process: ServerProcess;
}

/** How many fake GPUs the fake probe must list for `gpus` (the server's --gpus: indices, or UUIDs that match none). */
export function fakeGpuCount(gpus: string): number {
  return Math.max(1, ...gpus.split(',').map((g) => (/^\d+$/.test(g) ? Number(g) + 1 : 1)));
}

/**
 * The server's arguments and environment in a benchmark: `isolation` on `gpus` (its --gpus), its job store in
 * `dataDir`; with `fake`, the worker `fakeWorker()` names (CUDAKIT_SERVER_WORKER) and as many fake GPUs as `gpus`
 * needs. withServer starts its server so, and ab.ts both of its servers.
 */
export function serverLaunch(
  fake: boolean,
  dataDir: string,
  isolation: 'process' | 'warm',
  gpus: string,
  fakeWorker: () => string,
): { args: string[]; env: Record<string, string> } {
  const env: Record<string, string> = {
    // Many more submissions than the clients here make; the queue's caps as they are.
    CUDAKIT_SERVER_SUBMITS_PER_MINUTE: '6000',
  };
  if (fake) {
    env.CUDAKIT_SERVER_WORKER = fakeWorker();
    env.CUDAKIT_FAKE_GPUS = String(fakeGpuCount(gpus));
  }
  const args = ['--port', '0', '--data-dir', dataDir, '--isolation', isolation, '--gpus', gpus, '--ncu', 'off'];
  return { args: [...args, '--log-level', 'warn', '--drain-seconds', '5'], env };
}

/**
 * Starts the server on `gpus` (its --gpus: indices or UUIDs, comma-separated) with `isolation`, waits for every slot
 * to be idle, runs `f`, then stops the server (SIGTERM; SIGKILL after 15 s, which is a problem of the run).
 */
export async function withServer<T>(
  ctx: RunContext,
  isolation: 'process' | 'warm',
  gpus: string,
  f: (s: Service) => Promise<T>,
): Promise<T> {
  const { o, dir } = ctx;
  const { args, env } = serverLaunch(o.fake, mkdtempSync(join(dir, `data-${isolation}-`)), isolation, gpus, () =>
    o.main === 'source' ? buildFakeWorker(join(dir, 'fake-worker')) : 'fake',
  );
  const server = await startServer({ main: o.main, args, env, startTimeoutMs: 90_000 });
  ctx.serverOutput = server.output;
  try {
    await waitIdle(server.url, 60_000);
    return await f({ url: server.url, process: server });
  } catch (e) {
    (e as Error).message += `\nserver output (last lines):\n${lastLines(server.output(), 20)}`;
    throw e;
  } finally {
    ctx.serverOutput = undefined;
    server.child.kill('SIGTERM');
    const stopped = await Promise.race([server.exited.then(() => true), sleep(15_000).then(() => false)]);
    if (!stopped) {
      ctx.problems.push(`the ${isolation} server did not exit within 15 s of SIGTERM: killed`);
      server.child.kill('SIGKILL');
      await server.exited;
    }
  }
}

/** Waits for the slot to be idle and the GPU quiet: the last worker gone and its context freed. */
export async function settle(url: string): Promise<void> {
  await waitIdle(url, 60_000);
  await sleep(300);
}

// ---- 1. evaluate() in-process ----------------------------------------------------------------------------------

interface InProcess {
  skipped?: string;
  /** One entry per process, in order. */
  processes: EvaluateTimes[];
  /** The median of every process's warm runs together. */
  medianMs: number;
  /** The median of the processes' first (cold) evaluate(). */
  coldMs: number;
}

/**
 * evaluate() of the small job in processes of their own, one after another: a process's warm runs differ from
 * another's by more than the overhead being measured (where the process and its memory landed), so the baseline is
 * taken over several processes, as the service's fresh workers are.
 */
async function inProcess(ctx: Context): Promise<InProcess> {
  const file = join(ctx.dir, 'saxpy.json');
  writeFileSync(file, JSON.stringify(saxpyJob(ctx.o.fake)));
  const script = join(ROOT, 'server/bench/gpu-evaluate.ts');
  const args = ['--import', 'tsx', script, file, '--runs', String(ctx.plan.evalRuns)];
  const processes: EvaluateTimes[] = [];
  for (let i = 0; i < ctx.plan.evalProcesses; i++) {
    const r = await runChild(
      [...args, '--max-ms', String(ctx.plan.evalMaxMs)],
      { CUDA_VISIBLE_DEVICES: ctx.uuid },
      ctx.plan.evalMaxMs + 120_000,
    );
    const line = r.stdout.trim().split('\n').pop() ?? '';
    let out: (EvaluateTimes & { skipped?: undefined }) | { skipped: string } | undefined;
    try {
      out = JSON.parse(line) as typeof out;
    } catch {
      out = undefined;
    }
    if (r.code !== 0 || out === undefined) {
      ctx.problems.push(`evaluate() in-process: exit ${r.code ?? r.signal}: ${lastLines(r.stderr || r.stdout, 5)}`);
      return { skipped: 'failed', processes, medianMs: NaN, coldMs: NaN };
    }
    if (out.skipped !== undefined) return { skipped: out.skipped, processes, medianMs: NaN, coldMs: NaN };
    if (!out.passed) ctx.problems.push(`evaluate() in-process: the job failed: ${out.error}`);
    processes.push(out);
  }
  return {
    processes,
    medianMs: median(processes.flatMap((p) => p.warmMs)),
    coldMs: median(processes.map((p) => p.coldMs)),
  };
}

function warmRuns(p: InProcess | undefined): number {
  return p?.processes.reduce((n, x) => n + x.warmMs.length, 0) ?? 0;
}

function processMedians(p: InProcess | undefined): string {
  return (p?.processes ?? []).map((x) => fmtMs(median(x.warmMs))).join(', ') || '—';
}

/** Each phase's median duration over `reports`, ms: where a fresh worker's first evaluate() spends its time. */
function phaseMedians(reports: readonly Record<string, number>[]): Record<string, number> {
  const names = [...new Set(reports.flatMap((r) => Object.keys(r)))];
  return Object.fromEntries(names.map((n) => [n, median(reports.map((r) => r[n] ?? 0))]));
}

function fmtPhases(phases: Record<string, number>): string {
  return Object.entries(phases)
    .map(([n, ms]) => `${n} ${fmtMs(ms)}`)
    .join(', ');
}

// ---- 2. and 3. the copy: CLI vs service, the incident ----------------------------------------------------------

interface CopyRun {
  side: 'cli' | 'service';
  medianUs: number;
  ciRelPct: number;
  /** The whole run: the CLI process, or the service's submit → result. */
  wallMs: number;
  note?: string;
}

interface CliEnv {
  device: string;
  arch: string;
  driverVersion: string;
  nvrtcVersion: string | undefined;
  cudakitVersion: string;
}

/** `cudakit bench <spec> --json <file>`: the built CLI when there is one, else its sources under tsx. */
function cliArgs(): string[] {
  const built = join(ROOT, 'dist/cli/main.js');
  return existsSync(built) ? [built] : ['--import', 'tsx', join(ROOT, 'lib/cli/main.ts')];
}

/** Which CLI runs, in words. */
function cliWords(): string {
  return existsSync(join(ROOT, 'dist/cli/main.js')) ? 'the built CLI, dist/cli/main.js' : 'lib/cli/main.ts under tsx';
}

async function runCli(ctx: Context, spec: string, n: number): Promise<{ run: CopyRun; env?: CliEnv }> {
  const json = join(ctx.dir, `cli-${n}.json`);
  const r = await runChild(
    [...cliArgs(), 'bench', spec, '--json', json],
    { CUDA_VISIBLE_DEVICES: ctx.uuid, NO_COLOR: '1' },
    240_000,
  );
  const base = { side: 'cli' as const, wallMs: r.elapsedMs, medianUs: NaN, ciRelPct: NaN };
  if (r.code !== 0) {
    const said = lastLines(r.stderr || r.stdout, 3);
    // Without a GPU the CLI reads and validates the whole job first, then refuses: that is the dry run's pass.
    if (ctx.o.fake && r.code === 2 && /needs a CUDA GPU/.test(said)) return { run: { ...base, note: 'no GPU' } };
    ctx.problems.push(`cudakit bench: exit ${r.code ?? r.signal}: ${said}`);
    return { run: { ...base, note: 'failed' } };
  }
  const out = JSON.parse(readFileSync(json, 'utf8')) as BenchJson;
  const s = out.stats;
  const run = { ...base, medianUs: s.median * 1000, ciRelPct: ((s.ciHigh - s.ciLow) / 2 / s.median) * 100 };
  const e = out.env;
  return {
    run,
    env: {
      device: e.device,
      arch: e.arch,
      driverVersion: e.driverVersion,
      nvrtcVersion: e.nvrtcVersion,
      cudakitVersion: e.cudakitVersion,
    },
  };
}

async function serviceCopy(ctx: Context, url: string, body: Job): Promise<CopyRun> {
  const r = await runServiceJob(url, body);
  const passed = r.evaluation.verdict === 'PASSED';
  if (!passed) ctx.problems.push(`the copy through the service: ${outcomeOf(r.evaluation)}`);
  // The fake worker's reports carry no timing: no median, and that is expected.
  if (passed && !Number.isFinite(r.medianUs) && !ctx.o.fake) ctx.problems.push('the copy report has no timing');
  return {
    side: 'service',
    medianUs: r.medianUs,
    ciRelPct: r.ciRelPct,
    wallMs: r.wallMs,
    ...(passed ? {} : { note: outcomeOf(r.evaluation) }),
  };
}

interface CopyResult {
  before: CopyRun[];
  after: CopyRun[];
  cliEnv: CliEnv | undefined;
  incident: Incident | undefined;
}

/**
 * Runs `order` (sides in turn), the first `min` runs always, then while `fits` says the next one still fits the
 * budget, estimated from the longest runs so far. With `pairs`, runs go two at a time (a CLI run and a service run),
 * so both sides keep the same number of runs.
 */
async function copyRuns(
  ctx: Context,
  url: string,
  order: readonly ('cli' | 'service')[],
  min: number,
  pairs: boolean,
  state: { cliRuns: number; cliEnv: CliEnv | undefined; longestServiceMs: number },
  fits: (nextMs: number, phaseElapsedMs: number) => boolean,
): Promise<CopyRun[]> {
  const spec = join(ctx.dir, 'copy.bench.mjs');
  const body = { ...copyJob(ctx.o.fake), timeoutSeconds: 180 };
  const t0 = performance.now();
  const runs: CopyRun[] = [];
  const longestMs = (side: 'cli' | 'service'): number =>
    Math.max(0, ...runs.filter((r) => r.side === side).map((r) => r.wallMs));
  for (const [i, side] of order.entries()) {
    if (i >= min && (!pairs || i % 2 === 0)) {
      const nextMs = pairs ? longestMs('cli') + longestMs('service') : longestMs(side);
      if (!fits(nextMs, performance.now() - t0)) break;
    }
    await settle(url);
    if (side === 'cli') {
      const { run, env } = await runCli(ctx, spec, state.cliRuns++);
      state.cliEnv ??= env;
      runs.push(run);
    } else runs.push(await serviceCopy(ctx, url, body));
    const last = runs[runs.length - 1]!;
    if (side === 'service') state.longestServiceMs = Math.max(state.longestServiceMs, last.wallMs);
    console.log(
      `  ${side.padEnd(7)} median ${fmtUs(last.medianUs)} (±${fmt(last.ciRelPct, 2)} %), ` +
        `run ${fmtMs(last.wallMs)}${last.note === undefined ? '' : ` [${last.note}]`}`,
    );
  }
  return runs;
}

interface Incident {
  outcome: string;
  /** The job's timeoutSeconds passed → the job ended TIMEOUT (kill, exit), by the server's clock. */
  deadlineToEndMs: number;
  /** The job's timeoutSeconds passed → GET /v1/gpus shows the slot idle. */
  killToReadyMs: number;
  /** The client saw TIMEOUT → the slot idle. */
  endSeenToReadyMs: number;
  /** Submit → TIMEOUT, client side. */
  wallMs: number;
  slotAfter: Slot;
}

/**
 * A kernel that never ends, with timeoutSeconds 5: the slot kills the worker's process group at the deadline, waits
 * for the GPU to drop its PID, and brings up the pre-started child. The kill's moment is taken as the lease (the
 * job's startedAt) + timeoutSeconds: the slot arms that timer right after the lease, a few ms later.
 */
async function incident(ctx: Context, url: string): Promise<Incident> {
  await settle(url);
  const r = await runServiceJob(url, spinJob(ctx.o.fake));
  const endSeenMs = performance.now();
  const idle = await waitIdle(url, 120_000);
  const e = r.evaluation;
  if (e.verdict !== 'TIMEOUT') ctx.problems.push(`the infinite kernel ended ${outcomeOf(e)}, not TIMEOUT`);
  const killMs = (e.startedAt === null ? NaN : Date.parse(e.startedAt)) + SPIN_TIMEOUT_S * 1000;
  const finishedMs = e.finishedAt === null ? NaN : Date.parse(e.finishedAt);
  return {
    outcome: outcomeOf(e),
    deadlineToEndMs: finishedMs - killMs,
    killToReadyMs: idle.epochMs - killMs,
    endSeenToReadyMs: idle.atMs - endSeenMs,
    wallMs: r.wallMs,
    slotAfter: idle.slot,
  };
}

// ---- 4. and 5. the small job: overhead and jobs per minute ----------------------------------------------------

export interface JobsWindow {
  clients: number;
  windowMs: number;
  jobs: number;
  /** First submit → last result. */
  elapsedMs: number;
  jobsPerMinute: number;
  wallMs: number[];
  runMs: number[];
  queueWaitMs: number[];
  workerEvaluateMs: number[];
  /** The median of each phase of the workers' evaluate(). */
  workerPhasesMs: Record<string, number>;
  kernelMedianUs: number[];
  /** One job's result → the next job's lease on the slot, for jobs that waited in the queue (several clients). */
  turnaroundMs: number[];
}

/** `clients` clients, each submitting the next job once its last one ended, for `windowMs`. */
export async function jobsWindow(ctx: RunContext, url: string, clients: number, windowMs: number): Promise<JobsWindow> {
  const body = { ...saxpyJob(ctx.o.fake), timeoutSeconds: 60 };
  const runs: ServiceRun[] = [];
  const t0 = performance.now();
  let lastEnd = t0;
  const client = async (): Promise<void> => {
    while (performance.now() - t0 < windowMs) {
      const r = await runServiceJob(url, body);
      lastEnd = Math.max(lastEnd, performance.now());
      if (r.evaluation.verdict !== 'PASSED') ctx.problems.push(`the small job: ${outcomeOf(r.evaluation)}`);
      runs.push(r);
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  const elapsedMs = lastEnd - t0;
  // Back to back on the slot: a job leased after the one before it ended, having been queued before that end.
  const byStart = runs
    .map((r) => ({
      created: Date.parse(r.evaluation.createdAt),
      started: Date.parse(r.evaluation.startedAt ?? ''),
      finished: Date.parse(r.evaluation.finishedAt ?? ''),
    }))
    .filter((x) => Number.isFinite(x.started) && Number.isFinite(x.finished))
    .sort((a, b) => a.started - b.started);
  const turnaroundMs: number[] = [];
  for (let i = 1; i < byStart.length; i++) {
    const [prev, next] = [byStart[i - 1]!, byStart[i]!];
    if (next.created < prev.finished) turnaroundMs.push(next.started - prev.finished);
  }
  return {
    clients,
    windowMs,
    jobs: runs.length,
    elapsedMs,
    jobsPerMinute: (runs.length / elapsedMs) * 60_000,
    wallMs: runs.map((r) => r.wallMs),
    runMs: runs.map((r) => r.runMs),
    queueWaitMs: runs.map((r) => r.evaluation.queueWaitMs ?? NaN),
    workerEvaluateMs: runs.map((r) => r.workerEvaluateMs),
    workerPhasesMs: phaseMedians(runs.map((r) => r.workerPhasesMs)),
    kernelMedianUs: runs.map((r) => r.medianUs),
    turnaroundMs,
  };
}

export function describeWindow(w: JobsWindow): string {
  return (
    `  ${w.clients} client${w.clients === 1 ? '' : 's'}: ${w.jobs} jobs in ${fmtMs(w.elapsedMs)} ` +
    `(${fmt(w.jobsPerMinute, 1)}/min); submit → result ${fmtMs(median(w.wallMs))}, lease → result ` +
    `${fmtMs(median(w.runMs))}, worker's evaluate() ${fmtMs(median(w.workerEvaluateMs))}, kernel ` +
    `${fmtUs(median(w.kernelMedianUs))}`
  );
}

// ---------------------------------------------------------------------------------------------------------------
// GPU facts, the table, RESULTS.md

export interface GpuFacts {
  name: string;
  arch: string;
  uuid: string;
  /** nvidia-smi's driver version, when there is nvidia-smi. */
  driver: string | undefined;
  memory: string | undefined;
}

export function nvidiaSmi(uuid: string): Promise<{ driver: string; memory: string } | undefined> {
  const args = ['--query-gpu=uuid,driver_version,memory.total', '--format=csv,noheader'];
  return new Promise((resolve) => {
    execFile('nvidia-smi', args, { timeout: 10_000 }, (error, stdout) => {
      if (error !== null) return resolve(undefined);
      const row = stdout
        .split('\n')
        .map((l) => l.split(',').map((s) => s.trim()))
        .find((cells) => cells[0] === uuid);
      resolve(row === undefined ? undefined : { driver: row[1] ?? '?', memory: row[2] ?? '?' });
    });
  });
}

export interface Row {
  metric: string;
  figure: string;
  target: string;
  met: string;
}

/** The rows as RESULTS.md's Markdown table. */
export function tableOf(rows: readonly Row[]): string {
  return [
    '| measurement | figure | target | met |',
    '| --- | ---: | --- | --- |',
    ...rows.map((x) => `| ${x.metric} | ${x.figure} | ${x.target} | ${x.met} |`),
  ].join('\n');
}

interface Results {
  date: string;
  options: Options;
  gpu: GpuFacts | undefined;
  cliEnv: CliEnv | undefined;
  node: string;
  inProcess: InProcess | undefined;
  copy: CopyResult | undefined;
  processOne: JobsWindow | undefined;
  processMany: JobsWindow | undefined;
  warmOne: JobsWindow | undefined;
  totalMs: number;
  problems: string[];
}

/** The figures the table and --json share. */
function figures(r: Results) {
  const sideMedian = (runs: readonly CopyRun[] | undefined, side: 'cli' | 'service'): number =>
    median((runs ?? []).filter((x) => x.side === side).map((x) => x.medianUs));
  const cliUs = sideMedian(r.copy?.before, 'cli');
  const serviceUs = sideMedian(r.copy?.before, 'service');
  const afterUs = sideMedian(r.copy?.after, 'service');
  const evalMs = r.inProcess?.medianMs ?? NaN;
  const processWallMs = median(r.processOne?.wallMs ?? []);
  const warmWallMs = median(r.warmOne?.wallMs ?? []);
  return {
    cliUs,
    serviceUs,
    serviceOverCli: serviceUs / cliUs,
    afterUs,
    afterOverBefore: afterUs / serviceUs,
    evalMs,
    processWallMs,
    processOverheadMs: processWallMs - evalMs,
    /** Outside the worker's own evaluate() (that one includes the fresh worker's CUDA context). */
    processOutsideWorkerMs: median((r.processOne?.wallMs ?? []).map((w, i) => w - r.processOne!.workerEvaluateMs[i]!)),
    warmWallMs,
    warmOverheadMs: warmWallMs - evalMs,
    turnaroundMs: median(r.processMany?.turnaroundMs ?? []),
  };
}

function runsText(runs: readonly CopyRun[] | undefined, side: 'cli' | 'service'): string {
  const mine = (runs ?? []).filter((x) => x.side === side);
  const timed = mine.some((x) => Number.isFinite(x.medianUs));
  const list = timed ? `: ${mine.map((x) => fmt(x.medianUs, 2)).join(', ')} µs` : '';
  return `${mine.length} run${mine.length === 1 ? '' : 's'}${list}`;
}

function rows(r: Results): Row[] {
  const f = figures(r);
  const copyGbPerS = (us: number): string =>
    Number.isFinite(us) ? `, ${fmt(COPY_BYTES_MOVED / us / 1e3, 0)} GB/s` : '';
  const saxpyUs = median(r.processOne?.kernelMedianUs ?? []);
  const clients = r.processMany?.clients ?? r.options.clients;
  const incident = r.copy?.incident;
  return [
    {
      metric: `256 MiB f32 copy, cold median, \`cudakit bench\` (default preset; ${runsText(r.copy?.before, 'cli')})`,
      figure: `${fmtUs(f.cliUs)}${copyGbPerS(f.cliUs)}`,
      target: '—',
      met: '',
    },
    {
      metric: `the same job through the service (${runsText(r.copy?.before, 'service')})`,
      figure: `${fmtUs(f.serviceUs)}${copyGbPerS(f.serviceUs)}`,
      target: '—',
      met: '',
    },
    { metric: 'service / `cudakit bench`', figure: fmtRatio(f.serviceOverCli), ...pct(f.serviceOverCli) },
    {
      metric: `the service after an infinite-kernel incident / before (after: ${runsText(r.copy?.after, 'service')})`,
      figure: fmtRatio(f.afterOverBefore),
      ...pct(f.afterOverBefore),
    },
    {
      metric: `infinite kernel (timeoutSeconds ${SPIN_TIMEOUT_S}): deadline → job ended TIMEOUT`,
      figure: fmtMs(incident?.deadlineToEndMs ?? NaN),
      target: '—',
      met: '',
    },
    {
      metric: 'kill → slot ready again (GET /v1/gpus idle)',
      figure: fmtMs(incident?.killToReadyMs ?? NaN),
      target: '—',
      met: '',
    },
    {
      metric:
        `saxpy 3M (${fmtUs(saxpyUs)} cold), quick preset: evaluate() in-process (median of ` +
        `${warmRuns(r.inProcess)} runs in ${r.inProcess?.processes.length ?? 0} processes, context warm)`,
      figure: r.inProcess?.skipped === undefined ? fmtMs(f.evalMs) : `— (${short(r.inProcess.skipped)})`,
      target: '—',
      met: '',
    },
    {
      metric: `submit → result, process isolation, 1 client (median of ${r.processOne?.jobs ?? 0})`,
      figure: fmtMs(f.processWallMs),
      target: '—',
      met: '',
    },
    {
      metric: 'overhead per job, process isolation (pre-started child): submit → result − evaluate()',
      figure: fmtMs(f.processOverheadMs),
      target: '≤ 300 ms',
      met: met(Number.isFinite(f.processOverheadMs) ? f.processOverheadMs <= 300 : undefined),
    },
    {
      metric: `overhead per job, warm isolation (median of ${r.warmOne?.jobs ?? 0}, after one warm-up job)`,
      figure: fmtMs(f.warmOverheadMs),
      target: '—',
      met: '',
    },
    {
      metric: 'jobs per minute, process isolation, 1 client',
      figure: fmt(r.processOne?.jobsPerMinute ?? NaN, 1),
      target: '—',
      met: '',
    },
    {
      metric: `jobs per minute, process isolation, ${clients} clients`,
      figure: fmt(r.processMany?.jobsPerMinute ?? NaN, 1),
      target: '—',
      met: '',
    },
    {
      metric: 'jobs per minute, warm isolation, 1 client',
      figure: fmt(r.warmOne?.jobsPerMinute ?? NaN, 1),
      target: '—',
      met: '',
    },
  ];
}

function pct(ratio: number): { target: string; met: string } {
  return { target: 'within ±1 %', met: met(withinPct(ratio, 1)) };
}

function markdown(r: Results): string {
  const f = figures(r);
  const g = r.gpu;
  const e = r.cliEnv;
  const driver = [g?.driver, e === undefined ? undefined : `CUDA ${e.driverVersion}`].filter((x) => x !== undefined);
  const where =
    `${r.date}, ${g === undefined ? 'no GPU' : `${g.name} (${g.arch})`}` +
    `${driver.length > 0 ? `, driver ${driver.join(', ')}` : ''}` +
    `${e?.nvrtcVersion === undefined ? '' : `, NVRTC ${e.nvrtcVersion}`}, Node ${r.node}; ` +
    `the server ${r.options.main === 'source' ? 'from its sources (tsx)' : 'built'}, on one GPU` +
    `${r.options.fake ? '; **fake worker: the figures mean nothing**' : ''}` +
    `${r.options.quick ? '; --quick' : ''}. Run time ${fmt(r.totalMs / 1000, 0)} s.`;
  const table = tableOf(rows(r));
  const inc = r.copy?.incident;
  const copyWall = (side: 'cli' | 'service'): number[] =>
    [...(r.copy?.before ?? []), ...(r.copy?.after ?? [])].filter((x) => x.side === side).map((x) => x.wallMs);
  const p1 = r.processOne;
  const pn = r.processMany;
  const notes = [
    'The copy (64M f32, one thread per element, checked against a grid-stride copy: one trial, then every timed ' +
      'input set re-checked) is the same EvalJob for both: a spec file for `cudakit bench --json` (a child ' +
      `process: ${cliWords()}) and the request body for the service. Runs alternate CLI, service, service, CLI …, ` +
      'each starting with the slot idle and no other CUDA process alive; each figure is the median of the runs’ ' +
      `cold medians. A copy run took ${fmtMs(median(copyWall('cli')))} through the CLI and ` +
      `${fmtMs(median(copyWall('service')))} through the service, end to end (median): most of it evaluate() ` +
      'building, checking and re-checking 64M-element buffers on the host.',
    `The infinite kernel's job ended ${inc?.outcome ?? '—'}; the slot killed the worker's process group at the ` +
      `deadline, waited for its exit (${fmtMs(inc?.deadlineToEndMs ?? NaN)} after the deadline the job was stored ` +
      `as ended), for the GPU to drop the PID (nvidia-smi, polled), and made the pre-started child current: the slot ` +
      `was idle ${fmtMs(inc?.endSeenToReadyMs ?? NaN)} after the client saw the TIMEOUT. The kill's moment is the ` +
      "job's lease + timeoutSeconds.",
    `Overhead: submit → result (POST, then GET ?wait=60 until the end; one client, jobs back to back) minus the ` +
      `median evaluate() of the same job in processes of their own whose CUDA context already exists ` +
      `(${fmtMs(f.evalMs)}; the processes' medians ${processMedians(r.inProcess)}; their first, cold evaluate() ` +
      `${fmtMs(r.inProcess?.coldMs ?? NaN)}). Phase by phase (medians), a warm in-process evaluate(): ` +
      `${fmtPhases(phaseMedians(r.inProcess?.processes.map((p) => p.phasesMs) ?? []))}; the worker's: ` +
      `${fmtPhases(p1?.workerPhasesMs ?? {})}. Of the ` +
      `${fmtMs(f.processWallMs)} a job took, the worker's own evaluate() (whose load phase makes the fresh ` +
      `process's CUDA context) took ${fmtMs(median(p1?.workerEvaluateMs ?? []))}, lease → result ` +
      `${fmtMs(median(p1?.runMs ?? []))}, queue wait ${fmtMs(median(p1?.queueWaitMs ?? []))}; outside the ` +
      `worker's evaluate(): ${fmtMs(f.processOutsideWorkerMs)}. With ${pn?.clients ?? '—'} clients (jobs queued), ` +
      `a job's result → the next job's lease on the slot: ${fmtMs(f.turnaroundMs)} (median). Warm isolation keeps ` +
      'one worker and its context between jobs (buffers zeroed before they are freed).',
    `The small job: saxpy over 3M f32 (arange and seq inputs, one check trial, checked against a grid-stride ` +
      'saxpy), quick preset. Jobs per minute: jobs ended over first submit → last result, each client submitting ' +
      'its next job when its last one ended.',
  ];
  const problems =
    r.problems.length === 0 ? [] : ['Problems in this run:', '', ...r.problems.map((p) => `- ${p.split('\n')[0]}`)];
  return [
    `## On a GPU: the service's timing, overhead and throughput`,
    '',
    where,
    '',
    table,
    '',
    ...notes.flatMap((n) => [n, '']),
    ...problems,
  ].join('\n');
}

/** The file's head when this script creates it (the load benchmark, server/bench/load.ts, writes the same). */

// ---------------------------------------------------------------------------------------------------------------

/**
 * A runner of a benchmark's phases: each says its name and the budget left, and a phase that fails is recorded as a
 * problem of the run (with the server's last lines) and resolves undefined, so the next phase still runs: one bad
 * figure should not cost the others.
 */
export function phaseRunner(
  ctx: RunContext,
  budget: Budget,
): <T>(name: string, f: () => Promise<T>) => Promise<T | undefined> {
  return async (name, f) => {
    console.log(`${name} (${fmt(budget.leftMs() / 1000, 0)} s of the budget left)`);
    try {
      return await f();
    } catch (e) {
      ctx.problems.push(`${name}: ${(e as Error).message}`);
      console.error(`  failed: ${(e as Error).message}`);
      const output = ctx.serverOutput?.();
      if (output !== undefined) console.error(`  server output (last lines):\n${lastLines(output, 20)}`);
      return undefined;
    }
  };
}

async function run(o: Options): Promise<Results> {
  const t0 = performance.now();
  const plan = o.quick || o.fake ? QUICK_PLAN : FULL_PLAN;
  const budget = new Budget(o.budgetMs);
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-bench-gpu-'));
  const problems: string[] = [];
  const results: Results = {
    date: new Date().toISOString().slice(0, 10),
    options: o,
    gpu: undefined,
    cliEnv: undefined,
    node: process.version,
    inProcess: undefined,
    copy: undefined,
    processOne: undefined,
    processMany: undefined,
    warmOne: undefined,
    totalMs: NaN,
    problems,
  };
  writeFileSync(join(dir, 'copy.bench.mjs'), `export default ${JSON.stringify(copyJob(o.fake), null, 2)};\n`);
  const ctx: Context = { o, plan, budget, dir, problems, uuid: '', serverOutput: undefined };
  const phase = phaseRunner(ctx, budget);
  try {
    await phase('process isolation', () =>
      withServer(ctx, 'process', o.gpu, async ({ url }) => {
        const slot = (await slots(url)).gpus[0]!;
        ctx.uuid = slot.uuid;
        const smi = await nvidiaSmi(slot.uuid);
        results.gpu = { name: slot.name, arch: slot.arch, uuid: slot.uuid, driver: smi?.driver, memory: smi?.memory };
        console.log(
          `  GPU ${slot.name} (${slot.arch}) ${slot.uuid}${smi === undefined ? '' : `, driver ${smi.driver}`}`,
        );

        results.inProcess = await phase('evaluate() in-process (a child process; the server idle)', () =>
          inProcess(ctx),
        );
        const inP = results.inProcess;
        console.log(
          inP?.skipped !== undefined
            ? `  skipped: ${inP.skipped.split('\n')[0]}`
            : `  cold ${fmtMs(inP?.coldMs ?? NaN)}, warm median ${fmtMs(inP?.medianMs ?? NaN)} over ` +
                `${warmRuns(inP)} runs (per process ${processMedians(inP)}), kernel ` +
                `${fmtUs(inP?.processes.at(-1)?.kernelMedianUs ?? NaN)}`,
        );

        // What the phases after the copy need at the least: the incident, one copy after it (as long as the longest
        // through the service before it), the three windows at their shortest, the warm server's start and stop.
        const afterCopyMs = (serviceCopyMs: number): number => 15_000 + serviceCopyMs + 3 * 3_000 + 15_000;
        const copy: CopyResult = { before: [], after: [], cliEnv: undefined, incident: undefined };
        results.copy = copy;
        const state = { cliRuns: 0, cliEnv: undefined as CliEnv | undefined, longestServiceMs: 0 };
        const order = ['cli', 'service', 'service', 'cli', 'cli', 'service'] as const;
        const fitsBefore = (nextMs: number, elapsedMs: number): boolean =>
          elapsedMs + nextMs <= plan.copyBeforeMs && budget.leftMs() - nextMs >= afterCopyMs(state.longestServiceMs);
        await phase('256 MiB copy: `cudakit bench` and the service, alternating', async () => {
          copy.before = await copyRuns(ctx, url, order.slice(0, plan.copyBeforeMax), 2, true, state, fitsBefore);
        });
        copy.cliEnv = state.cliEnv;
        results.cliEnv = state.cliEnv;
        copy.incident = await phase('an infinite kernel, timeoutSeconds 5', () => incident(ctx, url));
        const inc = copy.incident;
        if (inc !== undefined) {
          console.log(
            `  ${inc.outcome}; deadline → ended ${fmtMs(inc.deadlineToEndMs)}, kill → slot ready ` +
              `${fmtMs(inc.killToReadyMs)} (restarts ${inc.slotAfter.restarts})`,
          );
        }
        const fitsAfter = (nextMs: number, elapsedMs: number): boolean =>
          elapsedMs + nextMs <= plan.copyAfterMs && budget.leftMs() - nextMs >= afterCopyMs(0) - 15_000;
        await phase('256 MiB copy through the service after the incident', async () => {
          const sides = Array<'service'>(plan.copyAfterMax).fill('service');
          copy.after = await copyRuns(ctx, url, sides, 1, false, state, fitsAfter);
        });

        results.processOne = await phase('the small job, 1 client', async () => {
          const w = await jobsWindow(ctx, url, 1, budget.window(plan.oneClientMs, 3_000 + 15_000 + 3_000));
          console.log(describeWindow(w));
          return w;
        });
        results.processMany = await phase(`the small job, ${o.clients} clients`, async () => {
          const w = await jobsWindow(ctx, url, o.clients, budget.window(plan.manyClientsMs, 15_000 + 3_000));
          console.log(describeWindow(w));
          return w;
        });
      }),
    );
    await phase('warm isolation', () =>
      withServer(ctx, 'warm', o.gpu, async ({ url }) => {
        // The first job makes the worker's CUDA context: a warm-up, not counted.
        const first = await runServiceJob(url, { ...saxpyJob(o.fake), timeoutSeconds: 60 });
        console.log(`  warm-up job: submit → result ${fmtMs(first.wallMs)}`);
        results.warmOne = await jobsWindow(ctx, url, 1, budget.window(plan.warmMs, 2_000));
        console.log(describeWindow(results.warmOne));
      }),
    );
  } finally {
    results.totalMs = endRun(ctx, t0);
  }
  return results;
}

/**
 * The end of a run however it went: the server's load-shedding answers become a problem of the run, the temporary
 * directory goes (or stays, with --keep); the run's time since `t0`.
 */
export function endRun(ctx: RunContext, t0: number): number {
  if (shed.count > 0) {
    ctx.problems.push(`the server answered 503 UNDER_PRESSURE ${shed.count} times (each retried after 200 ms)`);
  }
  if (ctx.o.keep) console.log(`kept ${ctx.dir}`);
  else rmSync(ctx.dir, { recursive: true, force: true });
  return performance.now() - t0;
}

async function main(argv: readonly string[]): Promise<number> {
  const defaults = { clients: 4, budgetS: 230, quickBudgetS: 110 };
  const o = cliOptions('gpu', USAGE, argv, 'gpu', defaults, (common, gpu = '0'): Options => {
    if (!GPU_ARG.test(gpu)) throw new Error(`--gpu expects an index or a GPU UUID, not '${gpu}'`);
    return { ...common, gpu };
  });
  if (typeof o === 'number') return o;
  const r = await run(o);
  writeOutputs(o, 'gpu', markdown(r), { ...r, figures: figures(r), rows: rows(r) });
  return r.problems.length === 0 ? 0 : 1;
}

/** Prints the section; writes the raw numbers to --json's file, and the section into --results' file with --write. */
export function writeOutputs(
  o: { json: string | undefined; write: boolean; results: string },
  section: 'gpu' | 'multi-gpu' | 'before-after' | 'python-aa' | 'standby' | 'pipeline',
  text: string,
  raw: object,
): void {
  console.log(`\n${text}`);
  if (o.json !== undefined) {
    writeFileSync(o.json, `${JSON.stringify(raw, null, 2)}\n`);
    console.log(`wrote ${o.json}`);
  }
  if (o.write) {
    const before = existsSync(o.results) ? readFileSync(o.results, 'utf8') : undefined;
    writeFileSync(o.results, replaceSection(before, section, text));
    console.log(`wrote the ${section} section of ${o.results}`);
  }
}

/** Exits with the code `main` resolves to, or 1 after its error's stack. */
export function exitWith(bench: string, main: Promise<number>): void {
  main.then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`bench:${bench}: ${(e as Error).stack ?? String(e)}\n`);
      process.exit(1);
    },
  );
}

// Run as a script; multi-gpu.ts and the tests import its jobs and helpers.
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  exitWith('gpu', main(process.argv.slice(2)));
}
