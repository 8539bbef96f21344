// SPDX-License-Identifier: MIT
// The distributed mode as separate processes on loopback: API nodes and GPU agents are the real binary
// (server/src/main.ts under tsx, --role api | agent) with the fake worker, on a throwaway Redis and PostgreSQL
// (services.ts). Each cluster gets its own PostgreSQL schema and Redis key prefix, so clusters of several tests share
// the two servers without seeing each other's jobs.
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { until } from '../../../test/support/until.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MAIN = join(ROOT, 'server/src/main.ts');

export interface ClusterNode {
  role: 'api' | 'agent';
  child: ChildProcess;
  /** http://127.0.0.1:<port> */
  url: string;
  /** The fake GPUs' UUID prefix of an agent ('GPU-a001…'). */
  fakeHost: string | undefined;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface ClusterOptions {
  redisUrl: string;
  /** postgresql://…/postgres: each cluster creates a schema of its own there. */
  postgresUrl: string;
  /** A job's queue lock; short in tests, so a dead host's job comes back within seconds. */
  lockSeconds?: number;
  logLevel?: string;
}

let clusterCount = 0;

/** One deployment: its own schema and key prefix; nodes started through it are killed by stop(). */
export class Cluster {
  readonly databaseUrl: string;
  readonly prefix: string;
  readonly nodes: ClusterNode[] = [];
  /** CUDAKIT_FAKE_LOG of every agent: which job ran on which GPU when. */
  readonly fakeLog: string;
  readonly #o: ClusterOptions;
  readonly #dir: string;

  private constructor(options: ClusterOptions, databaseUrl: string, prefix: string) {
    this.#o = options;
    this.databaseUrl = databaseUrl;
    this.prefix = prefix;
    this.#dir = mkdtempSync(join(tmpdir(), 'cudakit-cluster-'));
    this.fakeLog = join(this.#dir, 'fake.log');
    appendFileSync(this.fakeLog, '');
  }

  static async create(options: ClusterOptions): Promise<Cluster> {
    const n = ++clusterCount;
    // A schema per cluster, not a database: CREATE DATABASE writes megabytes of WAL that a restart must replay.
    const schema = `cluster_${process.pid}_${n}`;
    const client = new pg.Client({ connectionString: options.postgresUrl });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA ${schema}`);
    } finally {
      await client.end();
    }
    const databaseUrl = `${options.postgresUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    return new Cluster(options, databaseUrl, `t${process.pid}-${n}`);
  }

  /** Starts a node; resolves once it prints where it listens (an agent also once its GPUs are in the registry). */
  async start(
    role: 'api' | 'agent',
    options: {
      fakeHost?: string;
      gpus?: number;
      /** 'real': the cudakit worker on this host's GPUs (a machine with an NVIDIA GPU). Default 'fake'. */
      worker?: 'fake' | 'real';
      args?: string[];
      env?: Record<string, string>;
    } = {},
  ): Promise<ClusterNode> {
    const args = [
      '--role',
      role,
      '--port',
      '0',
      '--redis-url',
      this.#o.redisUrl,
      '--database-url',
      this.databaseUrl,
      '--redis-prefix',
      this.prefix,
      '--lock-seconds',
      String(this.#o.lockSeconds ?? 2),
      '--log-level',
      this.#o.logLevel ?? 'warn',
      ...(options.args ?? []),
    ];
    const fake =
      options.worker === 'real'
        ? {}
        : {
            CUDAKIT_SERVER_WORKER: 'fake',
            CUDAKIT_FAKE_GPUS: String(options.gpus ?? 4),
            CUDAKIT_FAKE_LOG: this.fakeLog,
            // The fake workers append to the log in this test's own folder: they run as the test's user.
            CUDAKIT_SERVER_WORKER_USER: String(process.getuid?.() ?? ''),
            ...(options.fakeHost === undefined ? {} : { CUDAKIT_FAKE_HOST: options.fakeHost }),
          };
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...fake,
      XDG_DATA_HOME: this.#dir,
      ...options.env,
    };
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${role} did not listen within 30 s:\n${stdout}\n${stderr}`)),
        30_000,
      );
      const onData = (): void => {
        const m = /listening on (http:\/\/\S+)/.exec(stdout);
        if (m !== null) {
          clearTimeout(timer);
          child.stdout!.off('data', onData);
          resolve(m[1]!);
        }
      };
      child.stdout!.on('data', onData);
      void exited.then((e) => {
        clearTimeout(timer);
        reject(new Error(`${role} exited (${e.code ?? e.signal}) before it listened:\n${stdout}\n${stderr}`));
      });
    });
    const node: ClusterNode = {
      role,
      child,
      url,
      fakeHost: options.fakeHost,
      stdout: () => stdout,
      stderr: () => stderr,
      exited,
    };
    this.nodes.push(node);
    return node;
  }

  /** Waits until `api` sees `count` GPUs in the registry (no expect: hooks may call it, not only tests). */
  async gpusSeen(api: ClusterNode, count: number, timeoutMs = 30_000): Promise<void> {
    let seen: number | undefined;
    await until(
      async () => {
        const r = await getJson(api, '/v1/gpus').catch(() => undefined);
        seen = (r?.body as { gpus?: unknown[] } | undefined)?.gpus?.length;
        return seen === count;
      },
      { timeoutMs, what: () => `${api.url} to see ${count} GPUs (it saw ${seen ?? 'none'})`, pollMs: 200 },
    );
  }

  /** The fake workers' log: { event: 'spawn' | 'start' | 'end', pid, gpu, id, atMs } lines. */
  fakeEvents(): Array<{ event: string; pid: number; gpu: string | undefined; id: string | undefined; atMs: number }> {
    return readFileSync(this.fakeLog, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as never);
  }

  /** Every node's output, for a failure's message. */
  logs(): string {
    return this.nodes
      .map((n) => `--- ${n.role} ${n.url}\n${n.stdout().slice(-2000)}${n.stderr().slice(-4000)}`)
      .join('\n');
  }

  async stop(): Promise<void> {
    for (const node of this.nodes) {
      if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGKILL');
    }
    await Promise.all(this.nodes.map((n) => n.exited));
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

export async function getJson(node: ClusterNode, path: string): Promise<JsonResponse> {
  const response = await fetch(`${node.url}${path}`);
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text) };
}

export async function sendJson(node: ClusterNode, method: string, path: string, body?: unknown): Promise<JsonResponse> {
  const response = await fetch(`${node.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text) };
}

export interface Evaluation {
  id: string;
  status: string;
  verdict: string | null;
  error: { code: string; message: string } | null;
  gpu: { uuid: string } | null;
}

/** Polls a job on `node` until it is terminal; returns it. */
export async function finished(node: ClusterNode, id: string, timeoutMs = 30_000): Promise<Evaluation> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await getJson(node, `/v1/evaluations/${id}`).catch(() => undefined);
    const e = r?.body as Evaluation | undefined;
    if (r?.status === 200 && e !== undefined && ['succeeded', 'failed', 'cancelled'].includes(e.status)) return e;
    if (Date.now() > deadline) throw new Error(`job ${id} did not finish within ${timeoutMs} ms: ${JSON.stringify(e)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The job's stored events, read from PostgreSQL through the API. */
export async function eventsOf(node: ClusterNode, id: string): Promise<Array<{ type: string; data: unknown }>> {
  const response = await fetch(`${node.url}/v1/evaluations/${id}/events`, {
    headers: { accept: 'text/event-stream' },
    signal: AbortSignal.timeout(5000),
  });
  const text = await response.text();
  return text
    .split('\n\n')
    .map((block) => {
      const type = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      return type === undefined ? undefined : { type, data: data === undefined ? undefined : JSON.parse(data) };
    })
    .filter((e): e is { type: string; data: unknown } => e !== undefined);
}
