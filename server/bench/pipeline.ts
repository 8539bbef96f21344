// SPDX-License-Identifier: MIT
// `npm run bench:pipeline -w server -- [--gpu 0] [--seconds 20] [--rounds 1] [--write]`, on a machine with an NVIDIA
// GPU: the service with one lane per GPU (each job's worker pre-started, its CUDA context made once the job has its
// turn) against two lanes with standby contexts (the next job's worker starts, validates and compiles while a job
// uses the GPU, its context already made), in turns: one server of each kind per round, ABBA over the rounds. Each
// runs the small job of gpu.ts (a saxpy over 3M floats, quick preset) for one client, then for --clients clients in
// closed loops, each for --seconds. Reported: submit → result with one client, jobs per minute with several, and
// whether the pipeline leaves a job's timing as it is: the kernel's median over the jobs run with the GPU otherwise
// idle (one client, one lane) against those run with the pipeline full (several clients, two lanes), within ±1 %.
// With --fake, the fake worker on a fake GPU (no timings): the run's plumbing only, never written to RESULTS.md.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildFakeWorker, startServer } from './binary.js';
import {
  type ServiceRun,
  exitWith,
  fmt,
  median,
  runServiceJob,
  saxpyJob,
  serverLaunch,
  slots,
  waitIdle,
  writeOutputs,
} from './gpu.js';
import { OUTPUT_ARGS, positiveInt } from './cli.js';
import { RESULTS_FILE } from './results.js';

const USAGE = `Usage: npx tsx bench/pipeline.ts [--gpu N|UUID] [--seconds s] [--clients n] [--rounds n] [--fake]
                                     [--write]
  --gpu       the GPU, as the server's --gpus takes it (default 0)
  --seconds   each window's length (default 20)
  --clients   clients of the busy window (default 4)
  --rounds    rounds, each starting one server of each kind (default 1)
  --fake      the fake worker on a fake GPU: plumbing only (never written)
  --write     replace the pipeline section of server/bench/RESULTS.md
`;

interface Variant {
  name: string;
  args: string[];
}

const VARIANTS: readonly Variant[] = [
  { name: 'one lane', args: ['--lanes', '1', '--standby', 'process'] },
  { name: 'two lanes, standby context', args: ['--lanes', '2', '--standby', 'context'] },
];

interface Window {
  jobs: ServiceRun[];
  wallMs: number;
}

interface VariantRuns {
  one: Window[];
  many: Window[];
  /** The GPU memory /v1/gpus shows nothing of: nvidia-smi's reading with the server idle, MiB. */
  idleMemoryMiB: number[];
}

/** Clients in closed loops for `seconds`: each submits its next job when its last one ended. */
async function window(url: string, clients: number, seconds: number, fake: boolean): Promise<Window> {
  const jobs: ServiceRun[] = [];
  const t0 = performance.now();
  const endAt = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < endAt) {
        const run = await runServiceJob(url, { ...saxpyJob(fake), timeoutSeconds: 60 });
        if (run.evaluation.verdict !== 'PASSED') {
          throw new Error(
            `a job ended ${run.evaluation.status}/${run.evaluation.verdict}: ${run.evaluation.error?.message}`,
          );
        }
        jobs.push(run);
      }
    }),
  );
  return { jobs, wallMs: performance.now() - t0 };
}

async function smiMemoryMiB(): Promise<number> {
  const { execFile } = await import('node:child_process');
  return new Promise((resolve) =>
    execFile('nvidia-smi', ['--query-gpu=memory.used', '--format=csv,noheader,nounits', '-i', '0'], (e, out) =>
      resolve(e === null ? Number(out.trim().split('\n')[0]) : NaN),
    ),
  );
}

async function runVariant(
  v: Variant,
  o: { gpu: string; seconds: number; clients: number; fake: boolean; dir: string },
  into: VariantRuns,
): Promise<void> {
  const launch = serverLaunch(o.fake, mkdtempSync(join(o.dir, 'data-')), 'process', o.gpu, () =>
    buildFakeWorker(join(o.dir, 'fake-worker')),
  );
  const server = await startServer({ args: [...launch.args, ...v.args], env: launch.env, startTimeoutMs: 90_000 });
  try {
    await waitIdle(server.url, 60_000);
    await runServiceJob(server.url, { ...saxpyJob(o.fake), timeoutSeconds: 60 }); // NVRTC's disk cache, warm
    await waitIdle(server.url, 60_000);
    if (!o.fake) into.idleMemoryMiB.push(await smiMemoryMiB());
    into.one.push(await window(server.url, 1, o.seconds, o.fake));
    await waitIdle(server.url, 60_000);
    into.many.push(await window(server.url, o.clients, o.seconds, o.fake));
    const gpus = (await slots(server.url)).gpus;
    console.log(`  ${v.name}: ${gpus.map((g) => `${g.uuid} ${g.jobs} jobs, ${g.restarts} restarts`).join('; ')}`);
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
  }
}

const jobsPerMinute = (ws: readonly Window[]): number => median(ws.map((w) => (w.jobs.length / w.wallMs) * 60_000));
const wallMedian = (ws: readonly Window[]): number => median(ws.flatMap((w) => w.jobs.map((j) => j.wallMs)));
const kernelMedian = (ws: readonly Window[]): number => median(ws.flatMap((w) => w.jobs.map((j) => j.medianUs)));

async function main(): Promise<number> {
  const { values: v } = parseArgs({
    options: {
      gpu: { type: 'string', default: '0' },
      seconds: { type: 'string', default: '20' },
      clients: { type: 'string', default: '4' },
      rounds: { type: 'string', default: '1' },
      fake: { type: 'boolean', default: false },
      ...OUTPUT_ARGS,
    },
  });
  if (v.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const seconds = Number(v.seconds);
  const clients = Number(v.clients);
  const rounds = positiveInt('rounds', v.rounds);
  if (!(seconds >= 2 && seconds <= 600)) throw new RangeError('--seconds expects 2 to 600');
  if (!Number.isInteger(clients) || clients < 2 || clients > 32) throw new RangeError('--clients expects 2 to 32');
  if (v.fake && v.write) throw new Error('--fake figures are not written to server/bench/RESULTS.md');
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-bench-pipeline-'));
  const runs = VARIANTS.map((): VariantRuns => ({ one: [], many: [], idleMemoryMiB: [] }));
  const t0 = performance.now();
  try {
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        console.log(`round ${r + 1}: ${VARIANTS[i]!.name}`);
        await runVariant(VARIANTS[i]!, { gpu: v.gpu, seconds, clients, fake: v.fake, dir }, runs[i]!);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const text = markdown(runs, clients, seconds, rounds, Math.round((performance.now() - t0) / 1000));
  writeOutputs({ json: v.json, write: v.write, results: RESULTS_FILE }, 'pipeline', text, { runs });
  return 0;
}

function markdown(runs: readonly VariantRuns[], clients: number, seconds: number, rounds: number, s: number): string {
  const [a, b] = runs as [VariantRuns, VariantRuns];
  const date = new Date().toISOString().slice(0, 10);
  const ratio = (x: number, y: number) => (Number.isFinite(x / y) ? `${(x / y).toFixed(3)}×` : '—');
  const ms = (x: number) => `${fmt(x, 0)} ms`;
  const us = (x: number) => `${fmt(x, 2)} µs`;
  const idle = kernelMedian(b.one);
  const full = kernelMedian(b.many);
  const within = Number.isFinite(full / idle) ? (Math.abs(full / idle - 1) <= 0.01 ? 'yes' : '**no**') : '—';
  const rows = [
    [
      'submit → result, 1 client (median)',
      ms(wallMedian(a.one)),
      ms(wallMedian(b.one)),
      ratio(wallMedian(b.one), wallMedian(a.one)),
    ],
    [
      `jobs per minute, ${clients} clients`,
      fmt(jobsPerMinute(a.many), 1),
      fmt(jobsPerMinute(b.many), 1),
      ratio(jobsPerMinute(b.many), jobsPerMinute(a.many)),
    ],
    [
      'jobs per minute, 1 client',
      fmt(jobsPerMinute(a.one), 1),
      fmt(jobsPerMinute(b.one), 1),
      ratio(jobsPerMinute(b.one), jobsPerMinute(a.one)),
    ],
    [
      'kernel median, 1 client (the GPU otherwise idle)',
      us(kernelMedian(a.one)),
      us(idle),
      ratio(idle, kernelMedian(a.one)),
    ],
    [
      `kernel median, ${clients} clients (the pipeline full)`,
      us(kernelMedian(a.many)),
      us(full),
      ratio(full, kernelMedian(a.many)),
    ],
    [
      'GPU memory used, server idle (nvidia-smi)',
      `${fmt(median(a.idleMemoryMiB), 0)} MiB`,
      `${fmt(median(b.idleMemoryMiB), 0)} MiB`,
      '',
    ],
  ];
  return [
    '## Pipelined lanes: one lane against two with standby contexts',
    '',
    `${date}, Node ${process.version}; ${rounds} round(s) of one server each, windows of ${seconds} s. ` +
      `Run time ${s} s.`,
    '',
    '| measurement | one lane | two lanes, standby context | two ÷ one |',
    '| --- | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    `The pipeline full against the GPU otherwise idle, two lanes: ${us(full)} against ${us(idle)} ` +
      `(${ratio(full, idle)}), within ±1 %: ${within}.`,
    '',
    "The job is gpu.ts's small one (a saxpy over 3M floats, quick preset). Each server is started, takes one job to " +
      'warm the disk cache, then runs one client for the window and the clients in closed loops for another. A ' +
      "figure is the median over the jobs of every round (jobs per minute: over the rounds' windows).",
  ].join('\n');
}

exitWith('pipeline', main());
