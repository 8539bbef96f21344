#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// cudakit-server. The embedded mode (default) is one process for the API and the GPU supervisors: configuration →
// the job store (SQLite in the data directory) → the queue, rebuilt from it → the GPU pool (a probe child finds the
// GPUs; this process never loads the CUDA addon) → the scheduler (start-up recovery; a job's device memory capped
// relative to the GPUs) → the HTTP app → listen. The distributed mode's roles put the same parts on other
// backends: --role api (PostgreSQL store, BullMQ queue on Redis, the agents' GPUs seen through a registry, no GPU
// of its own) and --role agent (the same store and queue, this host's GPUs, an HTTP port for health and metrics
// only). SIGTERM or SIGINT drains: no new submissions, running jobs get --drain-seconds to finish, then the
// process exits 0.
import { mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from './http/app.js';
import { type App } from './http/shared.js';
import { loadTokens, type TokenEntry } from './http/auth.js';
import { RedisClusterBus, RedisConnections } from './cluster/bus.js';
import { ClusterPool } from './cluster/pool.js';
import { AgentQueue, ApiQueue, clusterHorizons } from './cluster/queue.js';
import { USAGE, parseConfig, type ServerConfig } from './config.js';
import { CompileChecker } from './run/compile-check.js';
import { type Containment, serviceContainment } from './run/containment.js';
import type { GpuPool } from './run/pool.js';
import { LocalGpuPool } from './run/local-pool.js';
import { type PythonFacts, checkPython, pythonHidden } from './run/python.js';
import type { PythonService } from './run/python-relay.js';
import { EmbeddedQueue } from './schedule/embedded-queue.js';
import type { QueueConnection, RunQueue, SubmitQueue } from './schedule/queue.js';
import { ProblemRegistry } from './submit/problems.js';
import { EvalService, type ServiceLog } from './service.js';
import { addressOf } from './reachability.js';
import { PostgresJobStore } from './store/postgres.js';
import { SqliteJobStore } from './store/sqlite.js';
import type { JobStore } from './store/store.js';

/** Log records kept until the logger exists (the first seconds of a start); more are dropped. */
const EARLY_LOG_RECORDS = 100;

function fail(message: string, code: number): number {
  process.stderr.write(`cudakit-server: ${message}\n`);
  return code;
}

export async function main(argv: readonly string[]): Promise<number> {
  let config: ServerConfig | 'help';
  let tokens: TokenEntry[] | undefined;
  let problems: ProblemRegistry;
  let sessionSecret: Buffer | undefined;
  let containment: Containment | undefined;
  try {
    config = parseConfig(argv, process.env);
    if (config === 'help') {
      process.stdout.write(USAGE);
      return 0;
    }
    tokens = config.tokensFile === undefined ? undefined : loadTokens(config.tokensFile);
    problems = ProblemRegistry.load(config.problemsDir);
    sessionSecret = config.sessionSecretFile === undefined ? undefined : readSecret(config.sessionSecretFile);
    // The API node runs no worker.
    containment = config.mode === 'api' ? undefined : serviceContainment(config.workerUser);
  } catch (e) {
    // A bad flag, tokens file or problem registry: the usage error's exit code.
    return fail((e as Error).message, 2);
  }
  // The Python of the Python kernel types, checked once in the sandbox its jobs run in: one that cannot serve is a
  // start error naming what is missing.
  let python: { facts: PythonFacts; service: PythonService } | undefined;
  if (config.python !== undefined && containment !== undefined) {
    try {
      const hidden = pythonHidden(containment, [config.dataDir, config.problemsDir]);
      const facts = await checkPython(config.python, containment, hidden);
      python = { facts, service: { path: config.python, hidden } };
    } catch (e) {
      return fail((e as Error).message, 2);
    }
  }

  // Everything logs through the app's pino logger, which exists only once the app does: what comes before it (a
  // connection lost while the parts start) waits for it.
  let app: App | undefined;
  const early: Array<[level: keyof ServiceLog, obj: object, msg: string | undefined]> = [];
  const logAt =
    (level: keyof ServiceLog) =>
    (obj: object, msg?: string): void => {
      if (app !== undefined) app.log[level](obj, msg);
      else if (early.length < EARLY_LOG_RECORDS) early.push([level, obj, msg]);
    };
  const log: ServiceLog = { info: logAt('info'), warn: logAt('warn'), error: logAt('error') };
  let parts: Parts;
  try {
    parts = await assemble(config, containment, python, log);
  } catch (e) {
    return fail((e as Error).message, 1);
  }
  const { store, submitQueue, runQueue, pool, bus, compileCheck, poolStarted } = parts;
  const service = new EvalService({
    ...(bus === undefined ? {} : { bus }),
    store,
    ...(submitQueue === undefined ? {} : { submitQueue }),
    ...(runQueue === undefined ? {} : { runQueue }),
    pool,
    retentionDays: config.retentionDays,
    log,
    problems,
    ...(compileCheck === undefined ? {} : { compileCheck }),
    ...(config.maxDeviceBytes === undefined ? {} : { limits: { maxDeviceBytes: config.maxDeviceBytes } }),
  });
  app = await buildApp({
    service,
    tokens,
    logger: { level: config.logLevel },
    submitsPerMinute: config.submitsPerMinute,
    largeBodies: config.maxLargeBodies,
    trustProxy: config.trustProxy,
    metricsPublic: config.metricsPublic,
    ...(config.mode === 'embedded'
      ? {}
      : {
          endpoints: {
            store: `PostgreSQL at ${addressOf(config.databaseUrl!, 5432)}`,
            queue: `Redis at ${addressOf(config.redisUrl!, 6379)}`,
          },
        }),
    ...(sessionSecret === undefined ? {} : { sessionSecret }),
    ...(bus === undefined ? {} : { rateLimitRedis: bus.redis }),
    opsOnly: config.mode === 'agent',
    ...(config.mode === 'api'
      ? { compatSyncWaitMs: (job) => clusterHorizons(job, lockMsOf(config), stalledIntervalMsOf(config)).httpWaitMs }
      : {}),
  });

  for (const [level, obj, msg] of early.splice(0)) app.log[level](obj, msg);

  await poolStarted;
  const announcer = config.mode === 'agent' ? announce(pool as LocalGpuPool, bus!) : undefined;
  const closeParts = async (): Promise<void> => {
    announcer?.stop();
    if (announcer !== undefined) await bus?.withdraw(announcer.agentId).catch(() => {});
    for (const q of new Set<QueueConnection | undefined>([submitQueue, runQueue])) await q?.close();
    await bus?.close();
    await store.close();
  };
  try {
    await service.start();
    await app.listen({ host: config.host, port: config.port });
  } catch (e) {
    await pool.stop(0);
    await closeParts();
    return fail(`cannot start on ${config.host}:${config.port}: ${(e as Error).message}`, 1);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  const gpus = pool.slots().length;
  const gpuText =
    pool.unavailableReason === undefined ? `${gpus} GPU${gpus === 1 ? '' : 's'}` : `no GPU: ${pool.unavailableReason}`;
  const auth = tokens === undefined ? 'no tokens (loopback only)' : `${tokens.length} tokens`;
  const where =
    config.mode === 'embedded'
      ? `data in ${config.dataDir}`
      : `role ${config.mode}; queue ${redactUrl(config.redisUrl!)}; store ${redactUrl(config.databaseUrl!)}`;
  const gpuPart = config.mode === 'api' ? `${gpus} GPU${gpus === 1 ? '' : 's'} on agents` : gpuText;
  process.stdout.write(`cudakit-server listening on http://${host}:${port} (${gpuPart}; ${auth}; ${where})\n`);

  const drainMs = config.drainSeconds * 1000;
  await new Promise<void>((resolve) => {
    let draining = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (draining) {
        app!.log.warn({ signal }, 'second signal during the drain: exiting now');
        process.exit(1);
      }
      draining = true;
      app!.log.info({ signal, drainMs }, 'draining: no new evaluations; running ones may finish');
      void (async () => {
        try {
          await service.drain(drainMs);
          await app!.close();
          await closeParts();
        } catch (e) {
          app!.log.error({ err: e }, 'drain failed');
          process.exitCode = 1;
        }
        resolve();
      })();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  return process.exitCode === undefined ? 0 : Number(process.exitCode);
}

interface Parts {
  store: JobStore;
  /** The mode's sides of the queue: both (embedded), the submitting one (an API node) or the running one (an agent). */
  submitQueue: SubmitQueue | undefined;
  runQueue: RunQueue | undefined;
  pool: GpuPool;
  bus: RedisClusterBus | undefined;
  /** Where no GPU can take a job: whether it compiles (the embedded server: NVRTC is on its host). */
  compileCheck?: CompileChecker;
  /** Resolves once the pool knows its GPUs. */
  poolStarted: Promise<void>;
}

/** The store, the queue's sides, the pool and the bus of the configured mode. */
async function assemble(
  config: ServerConfig,
  containment: Containment | undefined,
  python: { facts: PythonFacts; service: PythonService } | undefined,
  log: ServiceLog,
): Promise<Parts> {
  // The worker reads where Nsight Compute is (or 'off') from its environment; the fake worker's kill-agent job
  // reads the agent's pid.
  const env = { CUDAKIT_SERVER_NCU: config.ncu, CUDAKIT_SERVER_AGENT_PID: String(process.pid) };
  const localPool = (): LocalGpuPool =>
    new LocalGpuPool({
      ...(config.gpus === 'all' ? {} : { gpus: config.gpus.map((g) => (/^\d+$/.test(g) ? Number(g) : g)) }),
      isolation: config.isolation,
      lanes: config.lanes,
      ...(config.standby === 'context' ? { slot: { context: 'standby' as const } } : {}),
      env,
      ...(containment === undefined ? {} : { containment }),
      ...(python === undefined ? {} : { python: python.facts, pythonService: python.service }),
      extraClasses: config.gpuClasses,
    });
  if (config.mode === 'embedded') {
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
    const store = SqliteJobStore.open(join(config.dataDir, 'jobs.sqlite'));
    const pool = localPool();
    const compileCheck = new CompileChecker({ env, ...(containment === undefined ? {} : { containment }) });
    const queue = new EmbeddedQueue();
    const poolStarted = pool.start();
    return { store, submitQueue: queue, runQueue: queue, pool, bus: undefined, compileCheck, poolStarted };
  }
  let store: JobStore;
  try {
    store = await PostgresJobStore.open(config.databaseUrl!, { log });
  } catch (e) {
    throw new Error(`cannot open the job store at ${redactUrl(config.databaseUrl!)}: ${(e as Error).message}`);
  }
  // Every connection to Redis reports to one place, which logs an outage once (cluster/bus.ts).
  RedisConnections.of(config.redisUrl!).reachability.log = log;
  const bus = new RedisClusterBus(config.redisUrl!, config.redisPrefix);
  const lockMs = lockMsOf(config);
  const timing = {
    url: config.redisUrl!,
    prefix: config.redisPrefix,
    lockMs,
    stalledIntervalMs: stalledIntervalMsOf(config),
    lostGraceMs: 2 * lockMs,
  };
  if (config.mode === 'api') {
    const pool = new ClusterPool({ bus });
    const submitQueue = new ApiQueue({ ...timing, store, bus });
    return { store, submitQueue, runQueue: undefined, pool, bus, poolStarted: pool.start() };
  }
  const pool = localPool();
  const runQueue = new AgentQueue({ ...timing, agentId: agentIdOf() });
  const poolStarted = pool.start().then(() => runQueue.serve([...new Set(pool.slots().flatMap((s) => s.classes))]));
  return { store, submitQueue: undefined, runQueue, pool, bus, poolStarted };
}

function lockMsOf(config: ServerConfig): number {
  return config.lockSeconds * 1000;
}

/** The stalled-job check runs twice per lock: a dead host's job is back within 1.5 locks. */
function stalledIntervalMsOf(config: ServerConfig): number {
  return config.lockSeconds * 500;
}

function agentIdOf(): string {
  return `${hostname()}:${process.pid}`;
}

/** An agent's heartbeat: its entry in the GPU registry, every second, and its GPUs' reprobes asked by API nodes. */
function announce(pool: LocalGpuPool, bus: RedisClusterBus): { agentId: string; stop(): void } {
  const agentId = agentIdOf();
  const classes = [...new Set(pool.slots().flatMap((s) => s.classes))];
  const beat = (): void => {
    const entry = {
      agentId,
      host: hostname(),
      pid: process.pid,
      classes,
      slots: pool.slots(),
      unavailableReason: pool.unavailableReason,
      atMs: Date.now(),
    };
    bus.announce(entry).catch(() => {}); // Redis down: the next beat tries again
  };
  beat();
  const timer = setInterval(beat, 1000);
  timer.unref();
  bus.onReprobe((uuid) => {
    if (pool.slots().some((s) => s.uuid === uuid)) void pool.reprobe(uuid).then(beat);
  });
  return { agentId, stop: () => clearInterval(timer) };
}

/** The session key's file, its trailing newline dropped. */
function readSecret(file: string): Buffer {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`cannot read --session-secret-file ${file}: ${(e as Error).message}`);
  }
  const secret = Buffer.from(text.replace(/\r?\n$/, ''), 'utf8');
  if (secret.length < 32) {
    throw new RangeError(`Expected at least 32 bytes in --session-secret-file ${file} but received ${secret.length}`);
  }
  return secret;
}

/** A URL without its password, for logs. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
}

/** Whether this module is the process's entry (the bin, through its symlink), not a module a test imports. */
function isEntry(): boolean {
  try {
    return (
      process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
    );
  } catch {
    return false;
  }
}

/**
 * Runs the server as a command: exits with main()'s code once it has closed, whatever still holds the event loop (a
 * stuck socket, tsx's esbuild service when run from sources). The bin (bin/cudakit-server.mjs) calls it.
 */
export function runCommand(argv: readonly string[]): void {
  main(argv).then(
    (code) => {
      process.exitCode = code;
      setTimeout(() => process.exit(code), 250).unref();
    },
    (e: unknown) => {
      process.stderr.write(`cudakit-server: ${(e as Error).stack ?? String(e)}\n`);
      process.exit(1);
    },
  );
}

if (isEntry()) runCommand(process.argv.slice(2));
