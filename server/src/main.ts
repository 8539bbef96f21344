#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// cudakit-server: the embedded mode, one process for the API and the GPU supervisors. Configuration → the job store
// (SQLite in the data directory) → the queue, rebuilt from it → the GPU pool (a probe child finds the GPUs; this
// process never loads the CUDA addon) → the scheduler (start-up recovery; a job's device memory capped relative to
// the GPUs) → the HTTP app → listen. SIGTERM or SIGINT drains: no new submissions, running jobs get --drain-seconds
// to finish, then the process exits 0.
import { mkdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp, type App } from './api/app.js';
import { loadTokens, type TokenEntry } from './api/auth.js';
import { ConfigError, USAGE, parseConfig, type ServerConfig } from './config.js';
import { LocalGpuPool } from './gpu/local-pool.js';
import { EmbeddedQueue } from './queue/embedded.js';
import { ProblemRegistry } from './problems.js';
import { EvalService, type ServiceLog } from './service.js';
import { SqliteJobStore } from './store/sqlite.js';

function fail(message: string, code: number): number {
  process.stderr.write(`cudakit-server: ${message}\n`);
  return code;
}

export async function main(argv: readonly string[]): Promise<number> {
  let config: ServerConfig | 'help';
  let tokens: TokenEntry[] | undefined;
  let problems: ProblemRegistry;
  try {
    config = parseConfig(argv, process.env);
    if (config === 'help') {
      process.stdout.write(USAGE);
      return 0;
    }
    tokens = config.tokensFile === undefined ? undefined : loadTokens(config.tokensFile);
    problems = config.problemsDir === undefined ? ProblemRegistry.empty() : ProblemRegistry.load(config.problemsDir);
  } catch (e) {
    // A bad flag, tokens file or problem registry: the usage error's exit code.
    return fail((e as Error).message, 2);
  }

  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const store = SqliteJobStore.open(join(config.dataDir, 'jobs.sqlite'));
  const queue = new EmbeddedQueue();
  // The worker reads where Nsight Compute is (or 'off') from its environment.
  const env = { CUDAKIT_SERVER_NCU: config.ncu };
  const pool = new LocalGpuPool({
    ...(config.gpus === 'all' ? {} : { gpus: config.gpus.map((g) => (/^\d+$/.test(g) ? Number(g) : g)) }),
    isolation: config.isolation,
    env,
  });
  const poolStarted = pool.start();
  // The service logs through the app's pino logger, which exists only once the app does.
  let app: App | undefined;
  const log: ServiceLog = {
    info: (obj, msg) => app?.log.info(obj, msg),
    warn: (obj, msg) => app?.log.warn(obj, msg),
    error: (obj, msg) => app?.log.error(obj, msg),
  };
  const service = new EvalService({
    store,
    queue,
    pool,
    retentionDays: config.retentionDays,
    log,
    problems,
    ...(config.maxDeviceBytes === undefined ? {} : { limits: { maxDeviceBytes: config.maxDeviceBytes } }),
  });
  app = await buildApp({
    service,
    tokens,
    logger: { level: config.logLevel },
    submitsPerMinute: config.submitsPerMinute,
  });

  await poolStarted;
  await service.start();
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (e) {
    await pool.stop(0);
    await store.close();
    return fail(`cannot listen on ${config.host}:${config.port}: ${(e as Error).message}`, 1);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  const gpus = pool.slots().length;
  const gpuText =
    pool.unavailableReason === undefined ? `${gpus} GPU${gpus === 1 ? '' : 's'}` : `no GPU: ${pool.unavailableReason}`;
  const auth = tokens === undefined ? 'no tokens (loopback only)' : `${tokens.length} tokens`;
  process.stdout.write(
    `cudakit-server listening on http://${host}:${port} (${gpuText}; ${auth}; data in ${config.dataDir})\n`,
  );

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
          await store.close();
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

if (isEntry()) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
      // Everything is closed: whatever still holds the event loop (a stuck socket, tsx's esbuild service when run
      // from sources) does not hold the exit.
      setTimeout(() => process.exit(code), 250).unref();
    },
    (e: unknown) => {
      process.stderr.write(`cudakit-server: ${(e as Error).stack ?? String(e)}\n`);
      process.exit(1);
    },
  );
}
