// SPDX-License-Identifier: MIT
// `npm run bench:multi-gpu -w server`: the service on two GPUs, on a machine with two NVIDIA GPUs, in at most about
// four minutes. As in gpu.ts, whose jobs, client and server harness this uses, the real binary runs as a child
// (binary.ts) and this process never loads CUDA (a probe child counts the GPUs).
//
//   1. Throughput: gpu.ts's small job (saxpy over 3M elements, quick preset) through the server on GPU A alone, then
//      on GPUs A and B, each time with N clients that submit their next job when their last one ended (N well above
//      two: both slots always have a job queued): jobs per minute, and two GPUs / one (target ≥ 1.8×).
//   2. Isolation, on the two-GPU server: gpu.ts's 256 MiB f32 copy (about 130 µs cold) timed on GPU B while GPU A is
//      quiet (its slot idle, its pre-started worker holding no CUDA context), and while GPU A runs gpu.ts's kernel
//      that never ends, in ABBA order (quiet, noisy, noisy, quiet) so that a drift cancels out: each run's cold
//      median, and noisy / quiet of their medians (target within ±1 %). The server lists GPU B first (--gpus B,A)
//      and leases the first idle slot: the copy, submitted first, lands on GPU B, and the endless kernel, submitted
//      next, on GPU A. The endless kernel must be running before the copy's time phase begins and still be running
//      when the copy ends (else the run does not count); its job is then cancelled, which kills its worker as a
//      deadline would (its timeoutSeconds is the backstop), and the next run waits for GPU A's slot to be idle again.
//
// A and B are --gpus (default 0,1). With fewer than two GPUs it says why and exits 0, writing nothing. --fake runs the
// same flow against the fake worker and two fake GPUs (the figures mean nothing, the code paths run); --quick
// shortens both phases; --write replaces the multi-gpu section of server/bench/RESULTS.md; --json writes the raw
// numbers.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { workerScript } from '../src/run/child.js';
import { runProbe } from '../src/run/local-pool.js';
import {
  Budget,
  COPY_BYTES_MOVED,
  type CommonOptions,
  type Evaluation,
  GPU_ARG,
  type GpuFacts,
  type Job,
  type JobsWindow,
  type Row,
  type RunContext,
  type ServiceRun,
  type Slot,
  call,
  cliOptions,
  copyJob,
  describeWindow,
  endRun,
  exitWith,
  fakeGpuCount,
  fmt,
  fmtRatio,
  fmtUs,
  jobsWindow,
  median,
  met,
  nvidiaSmi,
  outcomeOf,
  phaseRunner,
  runServiceJob,
  saxpyJob,
  settle,
  slots,
  spinJob,
  submitJob,
  tableOf,
  waitForEnd,
  withServer,
  withinPct,
  writeOutputs,
} from './gpu.js';

const USAGE = `Usage: npx tsx server/bench/multi-gpu.ts [options]   (npm run bench:multi-gpu -w server -- [options])

  --quick             shorter throughput windows and one quiet/noisy pair (about 2 minutes)
  --fake              against the fake worker and two fake GPUs (a dry run: the figures mean nothing)
  --write             replace the multi-gpu section of server/bench/RESULTS.md (--results <file> for another file)
  --json <file>       the raw numbers
  --clients <n>       concurrent clients of the throughput runs (default 6)
  --gpus <a,b>        the two GPUs, indices or UUIDs (default 0,1): a alone, then both; the copy is timed on b
  --main <path>       the server's built main.js (default: server/src/main.ts under tsx)
  --budget <s>        time budget of the whole run in seconds (default 250, 150 with --quick or --fake)
  --keep              keep the temporary directory (job stores)
  -h, --help          this text
`;

/** Two GPUs / one, at least. */
const SPEEDUP_TARGET = 1.8;
/** The endless kernel's timeoutSeconds: a backstop past the copy's own 180 s; the run cancels it sooner. */
const SPIN_BACKSTOP_S = 240;
/** The copy's phases before its time phase: the endless kernel must be running while the copy is in one of them. */
const BEFORE_TIME = new Set(['queued', 'running', 'validate', 'compile', 'load', 'check']);

interface Options extends CommonOptions {
  /** [A, B]: A alone, then both; the copy is timed on B while A is quiet or runs the endless kernel. */
  gpus: [string, string];
}

/** How long each phase may take. The throughput windows shrink when the run is behind its budget. */
interface Plan {
  windowMs: number;
  /** Copy runs in ABBA order (quiet, noisy, noisy, quiet ...): at least one pair, more while the budget allows. */
  isolationRunsMax: number;
}

const FULL_PLAN: Plan = { windowMs: 25_000, isolationRunsMax: 4 };
const QUICK_PLAN: Plan = { windowMs: 8_000, isolationRunsMax: 2 };
const ABBA = ['quiet', 'noisy', 'noisy', 'quiet'] as const;

function withGpus(common: CommonOptions, value = '0,1'): Options {
  const gpus = value.split(',');
  if (gpus.length !== 2 || !gpus.every((g) => GPU_ARG.test(g)) || gpus[0] === gpus[1]) {
    throw new Error(`--gpus expects two different GPUs (indices or UUIDs) separated by a comma, not '${value}'`);
  }
  return { ...common, gpus: [gpus[0]!, gpus[1]!] };
}

// ---------------------------------------------------------------------------------------------------------------
// The GPUs

/**
 * Why this machine cannot run the benchmark (fewer than two GPUs), as the server's own probe sees them; undefined
 * when it can. A GPU of --gpus that the probe does not list is an error.
 */
async function missingGpus(o: Options): Promise<string | undefined> {
  const env = o.fake ? { CUDAKIT_FAKE_GPUS: String(fakeGpuCount(o.gpus.join(','))) } : {};
  const probe = await runProbe(workerScript('probe', o.fake ? 'fake' : 'real'), env, 60_000);
  const n = probe.devices.length;
  if (n < 2) {
    const why = probe.reason === undefined ? '' : ` (${probe.reason.split('\n')[0]!.replace(/\.$/, '')})`;
    return `this machine has ${n} GPU${n === 1 ? '' : 's'}${why}; the benchmark needs two`;
  }
  for (const g of o.gpus) {
    if (!probe.devices.some((d) => (/^\d+$/.test(g) ? d.ordinal === Number(g) : d.uuid === g))) {
      throw new Error(
        `--gpus: the probe found no GPU ${g} (it found ${probe.devices.map((d) => d.ordinal).join(', ')})`,
      );
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Throughput

interface Throughput {
  /** The server's --gpus. */
  gpus: string;
  window: JobsWindow;
  /** Jobs of the window per GPU (the slots' job counters before and after it). */
  perGpu: { uuid: string; name: string; jobs: number }[];
}

/** One warm-up job per slot (not counted: the compile cache fills), then `clients` clients for `windowMs`. */
async function throughput(ctx: RunContext, url: string, gpus: string, clients: number, windowMs: number) {
  const before = (await slots(url)).gpus;
  const warmUp = await Promise.all(
    before.map(() => runServiceJob(url, { ...saxpyJob(ctx.o.fake), timeoutSeconds: 60 })),
  );
  for (const r of warmUp) {
    if (r.evaluation.verdict !== 'PASSED') ctx.problems.push(`a warm-up job: ${outcomeOf(r.evaluation)}`);
  }
  await settle(url);
  const start = (await slots(url)).gpus;
  const window = await jobsWindow(ctx, url, clients, windowMs);
  const end = (await slots(url)).gpus;
  const perGpu = end.map((s) => ({
    uuid: s.uuid,
    name: s.name,
    jobs: s.jobs - (start.find((x) => x.uuid === s.uuid)?.jobs ?? 0),
  }));
  console.log(`${describeWindow(window)}; per GPU ${perGpu.map((g) => g.jobs).join(' + ')}`);
  return { gpus, window, perGpu } satisfies Throughput;
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Isolation

type Condition = 'quiet' | 'noisy';

interface CopyRun {
  condition: Condition;
  /** The copy's cold median as its report gives it, µs. */
  medianUs: number;
  ciRelPct: number;
  /** Submit → result, client side. */
  wallMs: number;
  /** The GPU the copy ran on. */
  gpu: string | undefined;
  /** Noisy: the copy's phase when the endless kernel was first seen running. */
  copyPhaseAtSpin?: string;
  /** Whether the run counts: the copy passed on the timed GPU, and a noisy run's kernel ran all through its timing. */
  counts: boolean;
  note?: string;
}

/** The 256 MiB copy, as gpu.ts times it through the service. The fake one lasts long enough to overlap the spin. */
function copyBody(fake: boolean): Job {
  return { ...copyJob(fake), ...(fake ? { name: 'fake:pass:2000ms' } : {}), timeoutSeconds: 180 };
}

async function evaluation(url: string, id: string): Promise<Evaluation> {
  const r = await call('GET', `${url}/v1/evaluations/${id}`);
  if (r.status !== 200) throw new Error(`GET /v1/evaluations/${id}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as Evaluation;
}

/**
 * Polls the endless kernel's job every 50 ms until it is in its check phase (the kernel is launched then); the copy's
 * phase (or status) at that moment.
 */
async function untilSpinning(url: string, spinId: string, copyId: string): Promise<string> {
  const deadline = performance.now() + 60_000;
  for (;;) {
    const spin = await evaluation(url, spinId);
    if (spin.status === 'running' && spin.phase === 'check') {
      const copy = await evaluation(url, copyId);
      return copy.status === 'running' ? (copy.phase ?? 'running') : copy.status;
    }
    if (spin.status !== 'queued' && spin.status !== 'running') {
      throw new Error(`the endless kernel's job ended before its kernel ran: ${outcomeOf(spin)}`);
    }
    if (performance.now() > deadline) throw new Error(`the endless kernel's job was not in its check phase in 60 s`);
    await sleep(50);
  }
}

/** One copy run: alone on the two GPUs (quiet), or beside the endless kernel on the other GPU (noisy). */
async function copyRun(ctx: RunContext, url: string, condition: Condition, timed: Slot, other: Slot): Promise<CopyRun> {
  const t0 = performance.now();
  const copyId = await submitJob(url, copyBody(ctx.o.fake));
  let r: ServiceRun;
  const checks: string[] = [];
  let copyPhaseAtSpin: string | undefined;
  if (condition === 'quiet') r = await waitForEnd(url, copyId, t0);
  else {
    const spinId = await submitJob(url, { ...spinJob(ctx.o.fake), timeoutSeconds: SPIN_BACKSTOP_S });
    try {
      copyPhaseAtSpin = await untilSpinning(url, spinId, copyId);
      if (!BEFORE_TIME.has(copyPhaseAtSpin)) {
        checks.push(`the copy was already ${copyPhaseAtSpin} when the endless kernel began`);
      }
      r = await waitForEnd(url, copyId, t0);
      const spin = await evaluation(url, spinId);
      if (spin.status !== 'running') checks.push(`the endless kernel's job ended first: ${outcomeOf(spin)}`);
      if (spin.gpu?.uuid !== other.uuid) checks.push(`the endless kernel ran on ${spin.gpu?.uuid}, not ${other.uuid}`);
    } finally {
      await call('DELETE', `${url}/v1/evaluations/${spinId}`);
    }
    const spin = await waitForEnd(url, spinId, t0);
    if (spin.evaluation.status !== 'cancelled') {
      ctx.problems.push(`the endless kernel's job ended ${outcomeOf(spin.evaluation)}, not cancelled`);
    }
  }
  const e = r.evaluation;
  const passed = e.verdict === 'PASSED';
  if (!passed) checks.push(`the copy: ${outcomeOf(e)}`);
  if (e.gpu?.uuid !== timed.uuid) checks.push(`the copy ran on ${e.gpu?.uuid}, not ${timed.uuid}`);
  // The fake worker's reports carry no timing: no median, and that is expected.
  if (passed && !Number.isFinite(r.medianUs) && !ctx.o.fake) checks.push('the copy report has no timing');
  for (const c of checks) ctx.problems.push(`a ${condition} run: ${c}`);
  const run: CopyRun = {
    condition,
    medianUs: r.medianUs,
    ciRelPct: r.ciRelPct,
    wallMs: r.wallMs,
    gpu: e.gpu?.uuid,
    counts: checks.length === 0,
    ...(copyPhaseAtSpin === undefined ? {} : { copyPhaseAtSpin }),
    ...(checks.length === 0 ? {} : { note: checks.join('; ') }),
  };
  console.log(
    `  ${condition} median ${fmtUs(run.medianUs)} (±${fmt(run.ciRelPct, 2)} %), run ${fmt(run.wallMs, 0)} ms` +
      `${copyPhaseAtSpin === undefined ? '' : `, the copy in ${copyPhaseAtSpin} when the kernel began`}` +
      `${run.note === undefined ? '' : ` [${run.note}]`}`,
  );
  return run;
}

/**
 * Copy runs in ABBA order, added to `runs` as they end (a run that fails keeps those before it): the first pair
 * always, each further pair while the budget keeps `reserveMs` after it (its length estimated from the longest run
 * so far), up to `maxRuns`.
 */
async function isolation(
  ctx: RunContext,
  url: string,
  budget: Budget,
  maxRuns: number,
  reserveMs: number,
  runs: CopyRun[],
): Promise<void> {
  const { gpus } = await slots(url);
  const [timed, other] = gpus;
  if (timed === undefined || other === undefined) throw new Error(`the server has ${gpus.length} GPU(s), not 2`);
  for (let i = 0; i < maxRuns; i++) {
    const longestMs = Math.max(0, ...runs.map((r) => r.wallMs));
    if (i >= 2 && i % 2 === 0 && budget.leftMs() - 2 * (longestMs + 2_000) < reserveMs) break;
    await settle(url);
    runs.push(await copyRun(ctx, url, ABBA[i % ABBA.length]!, timed, other));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The table, RESULTS.md

interface Results {
  date: string;
  options: Options;
  node: string;
  /** The two-GPU server's GPUs, in its order: the timed one (B), then A. */
  gpus: GpuFacts[];
  one: Throughput | undefined;
  two: Throughput | undefined;
  isolation: CopyRun[];
  totalMs: number;
  problems: string[];
}

/** The figures the table and --json share. */
function figures(r: Results) {
  const oneJobsPerMinute = r.one?.window.jobsPerMinute ?? NaN;
  const twoJobsPerMinute = r.two?.window.jobsPerMinute ?? NaN;
  const counted = (c: Condition): number[] =>
    r.isolation.filter((x) => x.counts && x.condition === c).map((x) => x.medianUs);
  const quietUs = median(counted('quiet'));
  const noisyUs = median(counted('noisy'));
  return {
    oneJobsPerMinute,
    twoJobsPerMinute,
    twoOverOne: twoJobsPerMinute / oneJobsPerMinute,
    quietUs,
    noisyUs,
    noisyOverQuiet: noisyUs / quietUs,
  };
}

/** 'GPU 1 (NVIDIA H200)'. */
function gpuWords(r: Results, which: 'A' | 'B'): string {
  const [a, b] = r.options.gpus;
  const facts = r.gpus[which === 'B' ? 0 : 1];
  return `GPU ${which === 'A' ? a : b}${facts === undefined ? '' : ` (${facts.name})`}`;
}

function runsText(r: Results, c: Condition): string {
  const mine = r.isolation.filter((x) => x.condition === c);
  const list = mine.map((x) => `${fmt(x.medianUs, 2)}${x.counts ? '' : ' (not counted)'}`).join(', ');
  return `${mine.length} run${mine.length === 1 ? '' : 's'}${mine.length === 0 ? '' : `: ${list} µs`}`;
}

function rows(r: Results): Row[] {
  const f = figures(r);
  const [a, b] = r.options.gpus;
  const window = (t: Throughput | undefined): string =>
    t === undefined
      ? 'not run'
      : `${t.window.clients} clients, ${t.window.jobs} jobs${
          t.perGpu.length > 1 ? `: ${t.perGpu.map((g) => g.jobs).join(' + ')} per GPU` : ''
        }`;
  const gbPerS = (us: number): string => (Number.isFinite(us) ? `, ${fmt(COPY_BYTES_MOVED / us / 1e3, 0)} GB/s` : '');
  return [
    {
      metric: `jobs per minute, the small job, the server on GPU ${a} (${window(r.one)})`,
      figure: fmt(f.oneJobsPerMinute, 1),
      target: '—',
      met: '',
    },
    {
      metric: `jobs per minute, the server on GPUs ${b} and ${a} (${window(r.two)})`,
      figure: fmt(f.twoJobsPerMinute, 1),
      target: '—',
      met: '',
    },
    {
      metric: 'two GPUs / one',
      figure: Number.isFinite(f.twoOverOne) ? `${f.twoOverOne.toFixed(2)}×` : '—',
      target: `≥ ${SPEEDUP_TARGET}×`,
      met: met(Number.isFinite(f.twoOverOne) ? f.twoOverOne >= SPEEDUP_TARGET : undefined),
    },
    {
      metric: `256 MiB f32 copy on ${gpuWords(r, 'B')}, cold median, GPU ${a} quiet (${runsText(r, 'quiet')})`,
      figure: `${fmtUs(f.quietUs)}${gbPerS(f.quietUs)}`,
      target: '—',
      met: '',
    },
    {
      metric: `the same while GPU ${a} runs a kernel that never ends (${runsText(r, 'noisy')})`,
      figure: `${fmtUs(f.noisyUs)}${gbPerS(f.noisyUs)}`,
      target: '—',
      met: '',
    },
    {
      metric: 'noisy / quiet',
      figure: fmtRatio(f.noisyOverQuiet),
      target: 'within ±1 %',
      met: met(withinPct(f.noisyOverQuiet, 1)),
    },
  ];
}

function markdown(r: Results): string {
  const [a, b] = r.options.gpus;
  const names = r.gpus.map((g) => `${g.name} (${g.arch})`);
  const drivers = [...new Set(r.gpus.map((g) => g.driver).filter((d) => d !== undefined))];
  const where =
    `${r.date}, ${names.length === 0 ? 'no GPU' : names.join(' and ')}` +
    `${drivers.length === 0 ? '' : `, driver ${drivers.join(', ')}`}, Node ${r.node}; the server ` +
    `${r.options.main === 'source' ? 'from its sources (tsx)' : 'built'}, process isolation` +
    `${r.options.fake ? '; **fake worker: the figures mean nothing**' : ''}` +
    `${r.options.quick ? '; --quick' : ''}. Run time ${fmt(r.totalMs / 1000, 0)} s.`;
  const order = r.isolation.map((x) => `${x.condition} ${fmt(x.medianUs, 2)}`).join(', ');
  const notes = [
    `Throughput: gpu.ts's small job (saxpy over 3M f32, one check trial, quick preset), ${r.options.clients} ` +
      `clients each submitting its next job when its last one ended, through the server on GPU ${a} alone ` +
      `(--gpus ${a}), then on both (--gpus ${b},${a}, the server the isolation runs used too); after one warm-up ` +
      'job per GPU, jobs ended over first submit → last result. The per-GPU split is the slots’ job counters.',
    `Isolation: gpu.ts's 256 MiB copy (64M f32, default preset, one check trial) on GPU ${b} through the ` +
      `two-GPU server, in ABBA order (${order === '' ? 'no runs' : `${order} µs`}), each run starting with both ` +
      `slots idle. Quiet: GPU ${a}'s slot idle, its pre-started worker holding no CUDA context. Noisy: the copy ` +
      `submitted first (the server lists GPU ${b} first and leases the first idle slot), then gpu.ts's kernel ` +
      `that never ends (one block of 32 threads spinning on clock64()), leased to GPU ${a}; the kernel was running ` +
      'before the copy left its check phase and still running when the copy ended, then its job was cancelled ' +
      `(its worker killed as at a deadline; timeoutSeconds ${SPIN_BACKSTOP_S} as a backstop). Each figure is the ` +
      'median of the counted runs’ cold medians.',
  ];
  const problems =
    r.problems.length === 0 ? [] : ['Problems in this run:', '', ...r.problems.map((p) => `- ${p.split('\n')[0]}`)];
  return [
    "## On two GPUs: the service's throughput, and one GPU's timing while the other runs an endless kernel",
    '',
    where,
    '',
    tableOf(rows(r)),
    '',
    ...notes.flatMap((n) => [n, '']),
    ...problems,
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------------------

async function run(o: Options): Promise<Results> {
  const t0 = performance.now();
  const plan = o.quick || o.fake ? QUICK_PLAN : FULL_PLAN;
  const budget = new Budget(o.budgetMs);
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-bench-multi-gpu-'));
  const problems: string[] = [];
  const results: Results = {
    date: new Date().toISOString().slice(0, 10),
    options: o,
    node: process.version,
    gpus: [],
    one: undefined,
    two: undefined,
    isolation: [],
    totalMs: NaN,
    problems,
  };
  const ctx: RunContext = { o, dir, problems, serverOutput: undefined };
  const phase = phaseRunner(ctx, budget);
  const [a, b] = o.gpus;
  // What the isolation runs need at the least: one quiet/noisy pair (a real copy run takes about 33 s) and a stop.
  const isolationMinMs = o.fake ? 20_000 : 2 * 33_000 + 10_000;
  // After a throughput window: its last jobs (one per client), the next server's start and warm-up.
  const afterWindowMs = 25_000;
  try {
    await phase(`throughput, the server on GPU ${a}`, () =>
      withServer(ctx, 'process', a, async ({ url }) => {
        const windowMs = budget.window(plan.windowMs, afterWindowMs + plan.windowMs + isolationMinMs);
        results.one = await throughput(ctx, url, a, o.clients, windowMs);
      }),
    );
    await phase(`the server on GPUs ${b} and ${a}`, () =>
      withServer(ctx, 'process', `${b},${a}`, async ({ url }) => {
        for (const s of (await slots(url)).gpus) {
          const smi = await nvidiaSmi(s.uuid);
          results.gpus.push({ name: s.name, arch: s.arch, uuid: s.uuid, driver: smi?.driver, memory: smi?.memory });
          console.log(`  GPU ${s.name} (${s.arch}) ${s.uuid}${smi === undefined ? '' : `, driver ${smi.driver}`}`);
        }
        results.two = await phase('throughput, both GPUs', () => {
          const windowMs = budget.window(plan.windowMs, afterWindowMs + isolationMinMs);
          return throughput(ctx, url, `${b},${a}`, o.clients, windowMs);
        });
        await phase(`isolation: the copy on GPU ${b}, GPU ${a} quiet or running an endless kernel`, () =>
          isolation(ctx, url, budget, plan.isolationRunsMax, 15_000, results.isolation),
        );
      }),
    );
  } finally {
    results.totalMs = endRun(ctx, t0);
  }
  return results;
}

async function main(argv: readonly string[]): Promise<number> {
  const defaults = { clients: 6, budgetS: 250, quickBudgetS: 150 };
  const o = cliOptions('multi-gpu', USAGE, argv, 'gpus', defaults, withGpus);
  if (typeof o === 'number') return o;
  let missing: string | undefined;
  try {
    missing = await missingGpus(o);
  } catch (e) {
    process.stderr.write(`bench:multi-gpu: ${(e as Error).message}\n`);
    return 2;
  }
  if (missing !== undefined) {
    console.log(`bench:multi-gpu: ${missing}: nothing measured, nothing written`);
    return 0;
  }
  const r = await run(o);
  writeOutputs(o, 'multi-gpu', markdown(r), { ...r, figures: figures(r), rows: rows(r) });
  return r.problems.length === 0 ? 0 : 1;
}

exitWith('multi-gpu', main(process.argv.slice(2)));
