// SPDX-License-Identifier: MIT
// `npm run bench:load -w server`: the service under load without a GPU (loadgen.ts): the real binary, 4 fake GPUs,
// fake jobs of 20-100 ms in process-per-job isolation, 64 clients submitting 2 000 jobs over 60 s and long-polling
// each to its end. Prints the figures against the targets (submit latency p99 < 50 ms, event-loop delay p99 < 20 ms on
// 2 cores) and the run's checks; --write replaces the load section of server/bench/RESULTS.md (or --results <file>).
// The exit code is 1 when a check failed (a figure that misses its target is reported, not an error).
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { cpus, release, type } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { RESULTS_FILE, replaceSection } from './results.js';
import { type LoadOptions, type LoadReport, failedChecks, runLoad } from './loadgen.js';

const USAGE = `Usage: npx tsx server/bench/load.ts [options]   (npm run bench:load -w server -- [options])
  --jobs <n>          jobs in all (default 2000)
  --clients <n>       concurrent clients, one token each (default 64)
  --gpus <n>          fake GPUs (default 4)
  --window <s>        the submissions are spread over this many seconds (default 60)
  --main <path>       a built main.js instead of server/src/main.ts under tsx
  --cpu-prof <dir>    profile the server (node --cpu-prof) into this folder
  --write             replace the load section of server/bench/RESULTS.md
  --results <file>    the file --write writes instead
  -h, --help          this text
`;

/** The service's targets without a GPU, on 2 cores, ms. */
const TARGETS = { submitP99Ms: 50, eventLoopP99Ms: 20 } as const;
/** prom-client's event-loop sampling interval: each sample is the whole interval, so an idle loop reads this. */
const EVENT_LOOP_RESOLUTION_MS = 10;

function fixed(x: number, digits = 1): string {
  return Number.isFinite(x) ? x.toFixed(digits) : '—';
}

/** The section's markdown: where and when, the figures against the targets, and what the run shows. */
export function section(r: LoadReport, date: Date): string {
  const o = r.options;
  const cpu = cpus();
  const model = cpu[0]?.model.trim() ?? 'unknown CPU';
  const host = `${cpu.length} × ${model}, ${type()} ${release()}, Node ${process.version}`;
  const met = (ok: boolean): string => (ok ? 'yes' : '**no**');
  const loopDelayP99Ms = r.server.eventLoopP99Ms - EVENT_LOOP_RESOLUTION_MS;
  const durationS = r.durationMs / 1000;
  const workerMs = (r.cpu.workersSeconds * 1000) / Math.max(1, r.workersStarted);
  const usedSeconds = r.cpu.workersSeconds + r.server.cpuSeconds + r.cpu.forkerSeconds + r.cpu.loadGeneratorSeconds;
  const rows: [string, string, string, string][] = [
    ['submit latency p50 (client)', `${fixed(r.submitMs.p50)} ms`, '', ''],
    [
      'submit latency p99 (client)',
      `${fixed(r.submitMs.p99)} ms`,
      `< ${TARGETS.submitP99Ms} ms`,
      met(r.submitMs.p99 < TARGETS.submitP99Ms),
    ],
    ['submit latency p99 (server, its request histogram)', `≤ ${fixed(r.serverSubmitP99AtMostMs, 0)} ms`, '', ''],
    ['event-loop lag p50 (nodejs_eventloop_lag_p50)', `${fixed(r.server.eventLoopP50Ms)} ms`, '', ''],
    [
      'event-loop lag p99 (nodejs_eventloop_lag_p99)',
      `${fixed(r.server.eventLoopP99Ms)} ms`,
      `< ${TARGETS.eventLoopP99Ms} ms`,
      met(r.server.eventLoopP99Ms < TARGETS.eventLoopP99Ms),
    ],
    [
      `event-loop delay p99 beyond the ${EVENT_LOOP_RESOLUTION_MS} ms sampling interval`,
      `${fixed(loopDelayP99Ms)} ms`,
      `< ${TARGETS.eventLoopP99Ms} ms`,
      met(loopDelayP99Ms < TARGETS.eventLoopP99Ms),
    ],
    ['event-loop lag max', `${fixed(r.server.eventLoopMaxMs)} ms`, '', ''],
    ['jobs accepted / ended', `${r.accepted} / ${r.endToEndMs.n}`, `${o.jobs}`, met(r.endToEndMs.n === o.jobs)],
    [
      'last submission accepted',
      `${fixed(r.submitPhaseMs / 1000)} s`,
      `≤ ${o.submitWindowMs / 1000} s`,
      met(r.submitPhaseMs <= o.submitWindowMs),
    ],
    ['last job ended', `${fixed(durationS)} s`, `≤ ${o.deadlineMs / 1000} s`, met(r.durationMs <= o.deadlineMs)],
    ['throughput', `${fixed(r.jobsPerSecond)} jobs/s`, '', ''],
    ['submit → end p50 / p99', `${fixed(r.endToEndMs.p50 / 1000)} s / ${fixed(r.endToEndMs.p99 / 1000)} s`, '', ''],
    [
      'server RSS before / peak / after',
      `${fixed(r.server.rssBeforeMb, 0)} / ${fixed(r.server.rssPeakMb, 0)} / ${fixed(r.server.rssAfterMb, 0)} MiB`,
      '',
      '',
    ],
    [
      'server CPU',
      `${fixed(r.server.cpuSeconds)} s (${fixed((100 * r.server.cpuSeconds) / durationS, 0)} % of a core)`,
      '',
      '',
    ],
    ['server main thread waiting for a CPU', `${fixed(r.server.runQueueWaitSeconds)} s`, '', ''],
    [
      'workers CPU',
      `${fixed(r.cpu.workersSeconds)} s (${r.workersStarted} workers, ${fixed(workerMs, 0)} ms each)`,
      '',
      '',
    ],
    [
      'forker CPU / load generator CPU',
      `${fixed(r.cpu.forkerSeconds)} s / ${fixed(r.cpu.loadGeneratorSeconds)} s`,
      '',
      '',
    ],
    [
      'host CPU busy (of it, processes other than this run)',
      `${fixed(100 * r.cpu.hostBusyFraction, 0)} % (${fixed(Math.max(0, r.cpu.hostBusySeconds - usedSeconds))} s)`,
      '',
      '',
    ],
    ['host load average (1 min) when the run began', fixed(r.cpu.loadAverageBefore, 2), '', ''],
  ];
  const table = [
    '| measurement | figure | target | met |',
    '| --- | ---: | --- | --- |',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
  const failed = failedChecks(r);
  const checks =
    failed.length === 0
      ? 'Checks: no 5xx, every job accepted and ended exactly once (store and workers agree), no GPU ran two jobs at ' +
        'once, no worker ran two jobs, none outlived the server, which exited 0 after SIGTERM.'
      : `Checks that failed:\n\n${failed.map((f) => `- ${f}`).join('\n')}`;
  const main = o.main === 'source' ? 'server/src/main.ts under tsx' : o.main;
  const share = (seconds: number): string => `${fixed((100 * seconds) / usedSeconds, 0)} %`;
  return [
    '## Load without a GPU: submit latency and event-loop delay',
    '',
    `${date.toISOString().slice(0, 10)}, ${host}. ${main}, ${o.gpus} fake GPUs, one worker process per job (the ` +
      `fake worker built to JavaScript), ${o.clients} clients submitting ${o.jobs} jobs of ` +
      `${o.jobMs[0]}-${o.jobMs[1]} ms on a schedule spread over ${o.submitWindowMs / 1000} s, each client with at ` +
      `most ${r.maxOpenPerClient} jobs open (so that the queue never reaches its cap) and one long-poll at a time; ` +
      `log level ${o.logLevel}.`,
    '',
    table,
    '',
    checks,
    '',
    `Each worker is a Node process: starting it, its job and its exit cost about ${fixed(workerMs, 0)} ms of CPU. ` +
      `Of the CPU the run used, the workers took ${share(r.cpu.workersSeconds)}, the server ` +
      `${share(r.server.cpuSeconds)}, the forker ${share(r.cpu.forkerSeconds)} and the load generator ` +
      `${share(r.cpu.loadGeneratorSeconds)}: on 2 cores, process starts bound the throughput, and the jobs ` +
      `submitted faster wait in the queue (${r.maxOpen} open at most). The server's main thread shares the cores ` +
      `with the workers: it waited ${fixed(r.server.runQueueWaitSeconds)} s of the ${fixed(durationS)} s run for ` +
      "a CPU. The event-loop figures are prom-client's (monitorEventLoopDelay at 10 ms resolution over the run): " +
      'a sample is the whole interval between two ticks, so an idle loop reads about 10 ms; the row beyond the ' +
      "interval subtracts it. The client-side submit latency includes the load generator's own event-loop delay " +
      `(p99 ${fixed(r.clientEventLoopP99Ms)} ms, read the same way).`,
  ].join('\n');
}

/** The figures as a plain-text table for the terminal. */
function summary(r: LoadReport): string {
  const lines = section(r, new Date())
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| ---'));
  return lines.map((l) => l.replace(/\*\*/g, '')).join('\n');
}

/** A bad flag: its message and the usage, exit code 2. */
class UsageError extends Error {}

async function main(argv: readonly string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        jobs: { type: 'string' },
        clients: { type: 'string' },
        gpus: { type: 'string' },
        window: { type: 'string' },
        main: { type: 'string' },
        'cpu-prof': { type: 'string' },
        write: { type: 'boolean' },
        results: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.help === true) {
    process.stdout.write(USAGE);
    return 0;
  }
  // Paths are the caller's: npm -w runs this in server/ and says where it was called from in INIT_CWD.
  const cwd = process.env.INIT_CWD ?? process.cwd();
  const int = (name: string, raw: string | undefined, fallback: number): number => {
    const n = raw === undefined ? fallback : Number(raw);
    if (!Number.isInteger(n) || n < 1) {
      throw new UsageError(`Expected a positive integer for --${name} but received '${raw}'`);
    }
    return n;
  };
  const windowMs = int('window', values.window, 60) * 1000;
  const options: LoadOptions = {
    jobs: int('jobs', values.jobs, 2000),
    clients: int('clients', values.clients, 64),
    gpus: int('gpus', values.gpus, 4),
    jobMs: [20, 100],
    submitWindowMs: windowMs,
    // The whole run's bound; submissions may go on past the window while the clients' share of the queue is full.
    submitDeadlineMs: 180_000,
    deadlineMs: 180_000,
    main: values.main === undefined ? 'source' : resolve(cwd, values.main),
    logLevel: 'warn',
    ...(values['cpu-prof'] === undefined
      ? {}
      : { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', resolve(cwd, values['cpu-prof'])] }),
  };
  process.stderr.write(
    `bench:load: ${options.jobs} jobs, ${options.clients} clients, ${options.gpus} fake GPUs over ` +
      `${windowMs / 1000} s (about ${Math.round(options.jobs / 20 + 10)} s on 2 cores)\n`,
  );
  const report = await runLoad(options);
  process.stdout.write(`${summary(report)}\n`);
  const failed = failedChecks(report);
  for (const f of failed) process.stdout.write(`FAILED: ${f}\n`);
  if (values.write === true) {
    const file = values.results === undefined ? RESULTS_FILE : resolve(cwd, values.results);
    const text = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
    writeFileSync(file, replaceSection(text, 'load', section(report, new Date())));
    process.stdout.write(`wrote the load section of ${file}\n`);
  }
  return failed.length === 0 ? 0 : 1;
}

/** Whether this module is the process's entry, not a module a test imports. */
function isEntry(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (isEntry()) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      if (e instanceof UsageError) process.stderr.write(`bench:load: ${e.message}\n\n${USAGE}`);
      else process.stderr.write(`bench:load: ${(e as Error).stack ?? String(e)}\n`);
      process.exit(2);
    },
  );
}
