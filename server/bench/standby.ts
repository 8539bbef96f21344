// SPDX-License-Identifier: MIT
// `npm run bench:standby -w server -- [--rounds n] [--write]`, on a machine with an NVIDIA GPU: whether what a
// pipelined GPU slot does beside a job being timed changes that job's timing. The service times one job on a GPU at
// a time; pipelining would run, beside that timing, the next job's worker starting (its CUDA context created, then
// idle until its job comes), its compile (NVRTC, no GPU work) and the last job's worker exiting (its context torn
// down). Each of those is a neighbour here, a process of its own on the same GPU:
//
//   alone    no other process on the GPU;
//   idle     a process whose CUDA context exists and does nothing (a standby worker);
//   churn    processes started one after another, each creating its context and exiting (workers coming and going);
//   compile  NVRTC compiles one after another, no context (the next job's CPU work).
//
// A job is timed by evaluate() in this process with the service's timer (CUPTI where it loads), once per neighbour per
// round; the rounds rotate the order so that no neighbour always follows another. A neighbour changes nothing when
// the job's median beside it agrees with its median alone (the same round's) within ±1 % in every round.
import { spawn, type ChildProcess } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Device, type EvalJob, Program, evaluate } from 'cudakit';
import { OUTPUT_ARGS, noGpu, positiveInt } from './cli.js';
import { exitWith, median, writeOutputs } from './gpu.js';
import { RESULTS_FILE } from './results.js';

const USAGE = `Usage: npx tsx bench/standby.ts [--rounds n] [--write] [--json FILE]
  --rounds n   rounds, each timing every job once beside every neighbour (default 4)
  --write      replace the standby section of server/bench/RESULTS.md
`;

const NEIGHBOURS = ['alone', 'idle', 'churn', 'compile'] as const;
type Neighbour = (typeof NEIGHBOURS)[number];
/** Where a neighbour counts as changing nothing: each round's ratio to alone. */
const BOUND = 0.01;
const BLOCK = 256;

const COPY_SOURCE = `extern "C" __global__ void copy(const float* __restrict__ a, float* __restrict__ c, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i];
}
`;
/** A kernel of a few µs (16 MiB moved), and one of tens of µs or more (256 MiB moved). */
const SIZES = [1 << 21, 1 << 25];

function copyJob(n: number): EvalJob {
  return {
    name: `copy-${n}`,
    source: COPY_SOURCE,
    kernel: 'copy',
    grid: Math.ceil(n / BLOCK),
    block: BLOCK,
    args: [`ptr:f32[${n}]=arange`, `ptr:f32[${n}]:out`, `i64=${n}`],
    check: { skip: true },
    timing: { preset: 'default' },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The neighbours, each this script run with --neighbour MODE. It prints `ready` once it is in its steady state and
// stops when its stdin closes.

const COMPILE_SOURCE = `${COPY_SOURCE}
extern "C" __global__ void stencil(const float* a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n - 1) b[i] = 0.25f * a[i - 1] + 0.5f * a[i] + 0.25f * a[i + 1];
}
`;

async function neighbour(mode: string): Promise<number> {
  let stopping = false;
  process.stdin.on('end', () => (stopping = true)).resume();
  const ready = () => process.stdout.write('ready\n');
  const device = Device.get(0);
  switch (mode) {
    case 'once':
      await device.createContextAsync();
      return 0;
    case 'idle':
      await device.createContextAsync();
      ready();
      await new Promise((resolve) => process.stdin.on('end', resolve));
      return 0;
    case 'churn': {
      let made = 0;
      while (!stopping) {
        const child = spawn(
          process.execPath,
          [...process.execArgv, fileURLToPath(import.meta.url), '--neighbour', 'once'],
          {
            stdio: 'ignore',
          },
        );
        const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
        if (code !== 0) throw new Error(`a churn child exited with ${code}`);
        if (made++ === 0) ready();
      }
      process.stderr.write(`contexts ${made}\n`);
      return 0;
    }
    case 'compile': {
      let made = 0;
      ready();
      while (!stopping) {
        await new Program(COMPILE_SOURCE, { name: 'neighbour.cu' }).compileAsync({ arch: device.arch, cache: false });
        made++;
      }
      process.stderr.write(`compiles ${made}\n`);
      return 0;
    }
    default:
      throw new RangeError(`--neighbour expects once, idle, churn or compile: ${mode}`);
  }
}

interface Running {
  child: ChildProcess;
  /** What it did meanwhile, from its last stderr line ('contexts 12', 'compiles 40'). */
  stopped: Promise<string>;
}

async function startNeighbour(mode: Neighbour): Promise<Running | undefined> {
  if (mode === 'alone') return undefined;
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--neighbour', mode], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-4096)));
  const stopped = new Promise<string>((resolve, reject) =>
    child.on('close', (code) =>
      code === 0 ? resolve(stderr.trim().split('\n').pop() ?? '') : reject(new Error(`${mode}: ${code} ${stderr}`)),
    ),
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (s: string) => s.includes('ready') && resolve());
    stopped.catch(reject);
  });
  return { child, stopped };
}

// ---------------------------------------------------------------------------------------------------------------

interface Row {
  n: number;
  kernelUs: Record<Neighbour, number[]>;
  /** What each neighbour did while the job was timed, per round. */
  work: Record<Neighbour, string[]>;
}

/** The order of round `r`: the neighbours rotated by r, reversed in odd rounds. */
export function roundOrder(r: number): Neighbour[] {
  const k = r % NEIGHBOURS.length;
  const rotated = [...NEIGHBOURS.slice(k), ...NEIGHBOURS.slice(0, k)];
  return r % 2 === 1 ? rotated.reverse() : rotated;
}

async function main(): Promise<number> {
  const { values: v } = parseArgs({
    options: {
      neighbour: { type: 'string' },
      rounds: { type: 'string', default: '4' },
      ...OUTPUT_ARGS,
    },
  });
  if (v.neighbour !== undefined) return neighbour(v.neighbour);
  if (v.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const rounds = positiveInt('rounds', v.rounds);
  if (noGpu('standby')) return 1;
  const device = Device.get(0);
  const t0 = performance.now();
  const rows: Row[] = SIZES.map((n) => ({
    n,
    kernelUs: { alone: [], idle: [], churn: [], compile: [] },
    work: { alone: [], idle: [], churn: [], compile: [] },
  }));
  let timer = '';
  for (const row of rows) await evaluate(copyJob(row.n)); // compiles once; its first context and pool warm up
  for (let r = 0; r < rounds; r++) {
    for (const mode of roundOrder(r)) {
      const running = await startNeighbour(mode);
      try {
        for (const row of rows) {
          const report = await evaluate(copyJob(row.n));
          if (report.timing === undefined) throw new Error(`copy-${row.n} was not timed: ${report.error?.message}`);
          row.kernelUs[mode].push(report.timing.stats.median * 1000);
          timer = report.timing.timer ?? timer;
        }
      } finally {
        running?.child.stdin!.end();
      }
      const work = running === undefined ? '' : await running.stopped;
      for (const row of rows) row.work[mode].push(work);
    }
    console.log(`round ${r + 1}/${rounds} done`);
  }
  const seconds = Math.round((performance.now() - t0) / 1000);
  const text = markdown(rows, device.name, rounds, timer, seconds);
  writeOutputs({ json: v.json, write: v.write === true, results: RESULTS_FILE }, 'standby', text, { rows });
  return 0;
}

function markdown(rows: readonly Row[], gpu: string, rounds: number, timer: string, seconds: number): string {
  const date = new Date().toISOString().slice(0, 10);
  const lines = [
    "## A job timed beside a pipelined slot's other work",
    '',
    `${date}, ${gpu}, Node ${process.version}; ${rounds} rounds, timer ${timer || 'unknown'}. Run time ${seconds} s.`,
    '',
    '| copy, elements | neighbour | kernel median | ÷ alone (median) | ÷ alone, each round (min … max) ' +
      '| within ±1 % |',
    '| ---: | --- | ---: | ---: | ---: | --- |',
  ];
  for (const row of rows) {
    const alone = row.kernelUs.alone;
    for (const mode of NEIGHBOURS) {
      const us = row.kernelUs[mode];
      const ratios = us.map((x, i) => x / alone[i]!);
      const within = mode === 'alone' ? '' : ratios.every((q) => Math.abs(q - 1) <= BOUND) ? 'yes' : '**no**';
      const range = mode === 'alone' ? '' : `${Math.min(...ratios).toFixed(4)} … ${Math.max(...ratios).toFixed(4)}`;
      const ratio = mode === 'alone' ? '' : `${median(ratios).toFixed(4)}×`;
      lines.push(`| ${row.n} | ${mode} | ${median(us).toFixed(2)} µs | ${ratio} | ${range} | ${within} |`);
    }
  }
  const work = (mode: Neighbour) => rows[0]!.work[mode].join(', ');
  lines.push(
    '',
    'Each job is a copy (one float read and one written per thread), checked by nothing, timed with the default ' +
      "preset; a figure is the median over the rounds of each run's median, and a round's ratio compares a run " +
      "with the same round's run alone. The neighbours, a process of their own each: `idle` a CUDA context that " +
      'does nothing (a standby worker); `churn` processes one after another, each creating a context and exiting ' +
      `(per round: ${work('churn')}); \`compile\` NVRTC compiles back to back, no context (per round: ` +
      `${work('compile')}).`,
  );
  return lines.join('\n');
}

if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  exitWith('standby', main());
}
