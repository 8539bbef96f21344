// SPDX-License-Identifier: MIT
// `npm run bench:ab -w server -- --before <checkout>`: the service's overhead per job, another checkout's build
// ("before") against this repository's ("after"), on one machine with an NVIDIA GPU, in one run of about four minutes.
//
// gpu.ts's overhead per job is a difference of two wall times taken in different processes (submit → result through
// the service, minus evaluate() in a process of its own), and a fresh process's evaluate() varies from one process to
// the next by a good part of that overhead: one gpu.ts run before a change and one after cannot tell a 10 % change.
// Here both builds run in one run, in rounds of ABBA order (before then after, then after then before, …), so that a
// drift of the machine falls on both alike, and every figure is compared round by round:
//
//   1. Both servers start, each from its own checkout's sources under tsx, in that checkout (its own cudakit), with
//      the arguments of gpu.ts's process-isolation phase, on the same GPU; they stay up, but only one of them or the
//      in-process child runs anything at a time, and each step begins with both slots idle (an idle slot's
//      pre-started worker holds no CUDA context).
//   2. In each round, for each build in the round's order: evaluate() of gpu.ts's small job (saxpy over 3M elements,
//      quick preset) in a child process, by that checkout's server/bench/gpu-evaluate.ts (a cold run, then warm
//      ones); then N of the same job through that build's server, back to back (one client).
//   3. Each figure's median over the rounds for each build; after − before as the median of the rounds' paired
//      differences, with its distribution-free interval.
//
// Rounds go on while the budget allows, a pair at a time (so that both orders count alike), at least two. --fake runs
// the same flow against each build's own fake worker (no GPU: the figures mean nothing, the code paths run).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ROOT, type ServerProcess, buildFakeWorker, childrenOf, startServer, stillAliveAfter } from './binary.js';
import {
  Budget,
  GPU_ARG,
  type GpuFacts,
  exitWith,
  fmt,
  median,
  nvidiaSmi,
  outcomeOf,
  runChild,
  runServiceJob,
  saxpyJob,
  serverLaunch,
  settle,
  slots,
  writeOutputs,
} from './gpu.js';
import type { EvaluateTimes } from './gpu-evaluate.js';
import { RESULTS_FILE } from './results.js';

const USAGE = `Usage: npx tsx server/bench/ab.ts --before <dir> [options]
       (npm run bench:ab -w server -- --before <dir> [options])

  --before <dir>      another checkout of this repository, built (dist/), with its node_modules: "before"; this
                      repository is "after"
  --rounds <n>        at most this many rounds (default: as many as the budget allows; at least 2)
  --jobs <n>          jobs per build and round through its server (default 4)
  --budget <s>        time budget of the whole run in seconds (default 230, 60 with --fake)
  --gpu <index|uuid>  the GPU both servers use (default 0)
  --fake              against the fake worker, no GPU needed (a dry run: the figures mean nothing)
  --write             replace the before-after section of server/bench/RESULTS.md (--results <file> for another file)
  --json <file>       the raw numbers, round by round
  --keep              keep the temporary directory (job stores, fake workers)
  -h, --help          this text
`;

const SIDES = ['before', 'after'] as const;
type Side = (typeof SIDES)[number];

const MIN_ROUNDS = 2;
/** The in-process child's warm runs, within EVAL_MAX_MS; a round's in-process figure is their median. */
const EVAL_RUNS = 4;
const EVAL_MAX_MS = 8_000;
/** Left in the budget for stopping both servers (each drains for up to 5 s) and writing the results. */
const STOP_RESERVE_MS = 10_000;
/** What this file reads of a gpu-evaluate.ts: its options, and the fields of the JSON line it prints. */
const EVALUATE_INTERFACE = ["'max-ms'", 'runs:', 'coldMs', 'warmMs', 'phasesMs', 'skipped'];
/**
 * The fake job's nominal time (its name's `:20ms`). evaluate() needs a GPU, so with --fake the in-process child
 * answers 'skipped' and this stands in for its figure: the overhead's arithmetic runs too.
 */
const FAKE_EVALUATE_MS = Number(/:(\d+)ms$/.exec(String(saxpyJob(true).name))?.[1]);

// ---------------------------------------------------------------------------------------------------------------
// Options

interface Options {
  before: string;
  /** undefined: as many as the budget allows. */
  maxRounds: number | undefined;
  jobs: number;
  budgetMs: number;
  gpu: string;
  fake: boolean;
  write: boolean;
  results: string;
  json: string | undefined;
  keep: boolean;
}

function integer(name: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} expects an integer from ${min} to ${max}`);
  return n;
}

/** The options, or the exit code when there is nothing to run: 0 after --help, 2 after a usage error. */
function cliOptions(argv: readonly string[]): Options | number {
  const string = { type: 'string' } as const;
  const flag = { type: 'boolean' } as const;
  try {
    const { values: v } = parseArgs({
      args: [...argv],
      options: {
        before: string,
        rounds: string,
        jobs: string,
        budget: string,
        gpu: string,
        results: string,
        json: string,
        fake: flag,
        write: flag,
        keep: flag,
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    });
    if (v.help === true) {
      process.stdout.write(USAGE);
      return 0;
    }
    if (v.before === undefined) throw new Error('--before <dir> is required');
    const fake = v.fake === true;
    const budgetS = Number(v.budget ?? (fake ? 60 : 230));
    if (!(budgetS >= 30 && budgetS <= 3600)) throw new Error('--budget expects seconds from 30 to 3600');
    const gpu = v.gpu ?? '0';
    if (!GPU_ARG.test(gpu)) throw new Error(`--gpu expects an index or a GPU UUID, not '${gpu}'`);
    // Fake figures never land in the repository's table by accident.
    if (fake && v.write === true && v.results === undefined) {
      throw new Error('--fake --write needs --results <file>: fake figures are not written to server/bench/RESULTS.md');
    }
    // Paths as the user typed them: npm run -w server runs this in server/, INIT_CWD is where npm was started.
    const cwd = process.env.INIT_CWD ?? process.cwd();
    return {
      before: checkout(resolve(cwd, v.before)),
      maxRounds: v.rounds === undefined ? undefined : integer('rounds', v.rounds, MIN_ROUNDS, 1000),
      jobs: v.jobs === undefined ? 4 : integer('jobs', v.jobs, 1, 50),
      budgetMs: budgetS * 1000,
      gpu,
      fake,
      write: v.write === true,
      results: v.results === undefined ? RESULTS_FILE : resolve(cwd, v.results),
      json: v.json === undefined ? undefined : resolve(cwd, v.json),
      keep: v.keep === true,
    };
  } catch (e) {
    process.stderr.write(`bench:ab: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
}

/** `dir`'s realpath once it looks like a built checkout that can run its server from its sources; else why not. */
function checkout(dir: string): string {
  const needs = (ok: () => unknown, why: string): void => {
    try {
      ok();
    } catch {
      throw new Error(`--before: ${dir} ${why}`);
    }
  };
  needs(
    () => realpathSync(join(dir, 'server/src/main.ts')),
    'has no server/src/main.ts: not a checkout of this repository',
  );
  needs(() => createRequire(join(dir, 'server/src/main.ts')).resolve('cudakit'), 'has no built cudakit in reach');
  needs(() => createRequire(join(dir, 'package.json')).resolve('tsx'), 'has no tsx in reach (npm install there)');
  return realpathSync(dir);
}

// ---------------------------------------------------------------------------------------------------------------
// The two builds

interface Build {
  side: Side;
  root: string;
  /** `git rev-parse --short HEAD`, with '+' when tracked files differ from it; undefined outside git. */
  rev: string | undefined;
  /** sha256 of server/src and dist/ (paths and contents), 12 hex digits: tells two trees apart without git. */
  codeHash: string;
  /** The cudakit its server/src imports (a realpath): its own dist/index.js, else a problem of the run. */
  lib: string;
  /** dist/ is older than a file under lib/: the server runs the library as last built, not as lib/ is now. */
  libStale: boolean;
  /**
   * The .node files outside node_modules the server's processes mapped (/proc/<pid>/maps): cudakit's addon. The API
   * process never loads it; a real worker does before any job (its probe), a fake one never.
   */
  addons: string[];
  /** The in-process child's script, and which one it is, in words. */
  evaluateScript: string;
  evaluateWords: string;
}

function git(root: string, args: readonly string[]): Promise<string | undefined> {
  return new Promise((done) => {
    execFile('git', ['-C', root, ...args], { timeout: 10_000 }, (e, out) => done(e === null ? out.trim() : undefined));
  });
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const entries = readdirSync(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

/**
 * The in-process child's script for the build in `root`: its own gpu-evaluate.ts when that takes the same options and
 * prints the same fields (it imports its own checkout's cudakit); else this repository's, with this one's cudakit.
 */
function evaluateScript(side: Side, root: string): { script: string; words: string } {
  const mine = join(ROOT, 'server/bench/gpu-evaluate.ts');
  const theirs = join(root, 'server/bench/gpu-evaluate.ts');
  if (side === 'after') return { script: mine, words: 'its server/bench/gpu-evaluate.ts' };
  const fallback = `after's gpu-evaluate.ts, so after's cudakit:`;
  if (!existsSync(theirs)) return { script: mine, words: `${fallback} before has no server/bench/gpu-evaluate.ts` };
  const text = readFileSync(theirs, 'utf8');
  if (text === readFileSync(mine, 'utf8'))
    return { script: theirs, words: "its own gpu-evaluate.ts (identical to after's)" };
  if (EVALUATE_INTERFACE.some((word) => !text.includes(word))) {
    return { script: mine, words: `${fallback} before's takes other options or prints other fields` };
  }
  return { script: theirs, words: "its own gpu-evaluate.ts (not after's file; the same options and fields)" };
}

async function describeBuild(side: Side, root: string): Promise<Build> {
  const rev = await git(root, ['rev-parse', '--short', 'HEAD']);
  const dirty = rev === undefined ? '' : await git(root, ['status', '--porcelain', '--untracked-files=no']);
  const hash = createHash('sha256');
  for (const file of [...filesUnder(join(root, 'server/src')), ...filesUnder(join(root, 'dist'))]) {
    hash.update(`${relative(root, file)}\0`).update(readFileSync(file));
  }
  const builtMs = existsSync(join(root, 'dist/index.js')) ? statSync(join(root, 'dist/index.js')).mtimeMs : 0;
  const { script, words } = evaluateScript(side, root);
  return {
    side,
    root,
    rev: rev === undefined ? undefined : `${rev}${dirty === '' ? '' : '+'}`,
    codeHash: hash.digest('hex').slice(0, 12),
    lib: realpathSync(createRequire(join(root, 'server/src/main.ts')).resolve('cudakit')),
    libStale: filesUnder(join(root, 'lib')).some((f) => statSync(f).mtimeMs > builtMs),
    addons: [],
    evaluateScript: script,
    evaluateWords: words,
  };
}

/** The .node files outside node_modules that process `pid` or any of its descendants has mapped (Linux). */
function loadedAddons(pid: number): string[] {
  const pids = [pid];
  for (let level = [pid]; level.length > 0; pids.push(...level)) level = level.flatMap(childrenOf);
  const files = pids.flatMap((p) => {
    try {
      return [...readFileSync(`/proc/${p}/maps`, 'utf8').matchAll(/\s(\/\S+\.node)$/gm)].map((m) => m[1]!);
    } catch {
      return []; // exited since
    }
  });
  return [...new Set(files)].filter((f) => !f.includes('/node_modules/'));
}

const inside = (root: string, file: string): boolean => !relative(root, file).startsWith('..');

/**
 * The fake worker for `build`, as JavaScript: built by that checkout's own server/bench/binary.ts (its worker's files
 * and protocol are that checkout's), else 'fake' (its server runs its fake.ts under tsx).
 */
async function fakeWorkerOf(build: Build, dir: string): Promise<string> {
  const out = join(dir, `fake-worker-${build.side}`);
  if (build.side === 'after') return buildFakeWorker(out);
  const helpers = join(build.root, 'server/bench/binary.ts');
  if (!existsSync(helpers)) return 'fake';
  const theirs = (await import(pathToFileURL(helpers).href)) as { buildFakeWorker?: unknown };
  return typeof theirs.buildFakeWorker === 'function' ? String(theirs.buildFakeWorker(out)) : 'fake';
}

// ---------------------------------------------------------------------------------------------------------------
// A round

interface InProcessRun {
  script: string;
  /** What the child printed; undefined when it failed. */
  times: EvaluateTimes | undefined;
  /** The child's reason when it ran nothing (no GPU). */
  skipped: string | undefined;
  /** The round's in-process figure: the warm runs' median (with --fake and no GPU, FAKE_EVALUATE_MS). */
  figureMs: number;
}

interface JobRun {
  id: string;
  outcome: string;
  /** NaN for a job that did not pass: it timed something else, and counts in no figure. */
  wallMs: number;
  workerEvaluateMs: number;
  workerPhasesMs: Record<string, number>;
  runMs: number;
  queueWaitMs: number;
}

/** One build's part of a round; each figure a median over the round's jobs (or the child's warm runs), ms. */
interface BuildRound {
  inProcess: InProcessRun;
  jobs: JobRun[];
  wallMs: number;
  workerEvaluateMs: number;
  outsideMs: number;
  inProcessMs: number;
  overheadMs: number;
}

interface Round {
  index: number;
  order: readonly [Side, Side];
  elapsedMs: number;
  before: BuildRound;
  after: BuildRound;
}

interface Context {
  o: Options;
  dir: string;
  jobFile: string;
  builds: Record<Side, Build>;
  servers: Partial<Record<Side, ServerProcess>>;
  /** The GPU's UUID as the slots have it; the in-process child gets it as CUDA_VISIBLE_DEVICES. */
  uuid: string;
  problems: string[];
}

/** Adds a problem of the run once, however many rounds meet it. */
function problem(ctx: Context, text: string): void {
  if (!ctx.problems.includes(text)) ctx.problems.push(text);
}

/** evaluate() of the small job in a child process of the build's own, run in its checkout (as gpu.ts's phase 1). */
async function inProcess(ctx: Context, build: Build): Promise<InProcessRun> {
  const script = build.evaluateScript;
  const args = ['--import', 'tsx', script, ctx.jobFile, '--runs', String(EVAL_RUNS), '--max-ms', String(EVAL_MAX_MS)];
  const r = await runChild(args, { CUDA_VISIBLE_DEVICES: ctx.uuid }, EVAL_MAX_MS + 120_000, build.root);
  let out: Partial<EvaluateTimes> & { skipped?: unknown };
  try {
    out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as typeof out;
  } catch {
    out = {};
  }
  if (r.code === 0 && typeof out.skipped === 'string') {
    if (!ctx.o.fake) problem(ctx, `evaluate() in-process (${build.side}) skipped: ${out.skipped}`);
    return { script, times: undefined, skipped: out.skipped, figureMs: ctx.o.fake ? FAKE_EVALUATE_MS : NaN };
  }
  if (r.code !== 0 || typeof out.coldMs !== 'number' || !Array.isArray(out.warmMs)) {
    const said = (r.stderr || r.stdout).trimEnd().split('\n').slice(-3).join(' | ') || 'no JSON line';
    problem(ctx, `evaluate() in-process (${build.side}): exit ${r.code ?? r.signal}: ${said}`);
    return { script, times: undefined, skipped: undefined, figureMs: NaN };
  }
  const times = out as EvaluateTimes;
  if (!times.passed) problem(ctx, `evaluate() in-process (${build.side}): the job failed: ${times.error}`);
  return { script, times, skipped: undefined, figureMs: median(times.warmMs) };
}

/** Both slots idle: no worker of either build holds a CUDA context, the last one's freed. */
async function settleBoth(ctx: Context): Promise<void> {
  await Promise.all(SIDES.map((side) => settle(ctx.servers[side]!.url)));
}

async function buildRound(ctx: Context, side: Side): Promise<BuildRound> {
  const url = ctx.servers[side]!.url;
  await settleBoth(ctx);
  const inP = await inProcess(ctx, ctx.builds[side]);
  await settle(url); // the child's context gone too
  const body = { ...saxpyJob(ctx.o.fake), timeoutSeconds: 60 };
  const jobs: JobRun[] = [];
  for (let i = 0; i < ctx.o.jobs; i++) {
    const r = await runServiceJob(url, body);
    const passed = r.evaluation.verdict === 'PASSED';
    if (!passed) problem(ctx, `the small job (${side}): ${outcomeOf(r.evaluation)}`);
    jobs.push({
      id: r.id,
      outcome: outcomeOf(r.evaluation),
      wallMs: passed ? r.wallMs : NaN,
      workerEvaluateMs: passed ? r.workerEvaluateMs : NaN,
      workerPhasesMs: r.workerPhasesMs,
      runMs: r.runMs,
      queueWaitMs: r.evaluation.queueWaitMs ?? NaN,
    });
  }
  const wallMs = median(jobs.map((j) => j.wallMs));
  return {
    inProcess: inP,
    jobs,
    wallMs,
    workerEvaluateMs: median(jobs.map((j) => j.workerEvaluateMs)),
    outsideMs: median(jobs.map((j) => j.wallMs - j.workerEvaluateMs)),
    inProcessMs: inP.figureMs,
    overheadMs: wallMs - inP.figureMs,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The run

interface Results {
  date: string;
  options: Options;
  node: string;
  gpu: GpuFacts | undefined;
  builds: Record<Side, Build>;
  rounds: Round[];
  totalMs: number;
  problems: string[];
}

/** Starts both servers at once (nothing is timed yet); a failed start is the run's error, the other is stopped. */
async function startBoth(ctx: Context): Promise<void> {
  const started = await Promise.allSettled(
    SIDES.map(async (side) => {
      const build = ctx.builds[side];
      const dataDir = mkdtempSync(join(ctx.dir, `data-${side}-`));
      const fakeWorker = ctx.o.fake ? await fakeWorkerOf(build, ctx.dir) : '';
      const { args, env } = serverLaunch(ctx.o.fake, dataDir, 'process', ctx.o.gpu, () => fakeWorker);
      // Both are node --import tsx <checkout>/server/src/main.ts, run in their checkout.
      const own = side === 'after' ? {} : { nodeArgs: ['--import', 'tsx'], cwd: build.root };
      const main = side === 'after' ? 'source' : join(build.root, 'server/src/main.ts');
      ctx.servers[side] = await startServer({ main, ...own, args, env, startTimeoutMs: 90_000 });
    }),
  );
  const failed = started.find((s) => s.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

/** SIGTERM, then SIGKILL after 15 s (a problem of the run), as gpu.ts's withServer stops its server. */
async function stopBoth(ctx: Context): Promise<void> {
  const stop = async (side: Side, server: ServerProcess): Promise<void> => {
    server.child.kill('SIGTERM');
    if ((await stillAliveAfter([server.pid], 15_000)).length > 0) {
      problem(ctx, `the ${side} server did not exit within 15 s of SIGTERM: killed`);
      server.child.kill('SIGKILL');
      await server.exited;
    }
  };
  await Promise.all(SIDES.flatMap((side) => (ctx.servers[side] === undefined ? [] : stop(side, ctx.servers[side]))));
  ctx.servers = {};
}

/** Set once a signal stopped the run: resolves to the exit code once the children are gone. */
interface Interruption {
  exitCode?: Promise<number>;
}

/**
 * On SIGINT or SIGTERM: every child of this process (the servers, whose workers die with them, and the in-process
 * child) gets SIGTERM, then SIGKILL after 6 s; the temporary directory goes (unless --keep); the exit code is 128 + the
 * signal's number, whether or not the run's own flow, failing on the stopped servers, gets there first.
 */
function onSignals(ctx: Context, stop: Interruption): () => void {
  const kill = (pids: readonly number[], signal: NodeJS.Signals): void => {
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // gone already
      }
    }
  };
  const handler = (signal: NodeJS.Signals): void => {
    if (stop.exitCode !== undefined) return;
    process.stderr.write(`\nbench:ab: ${signal}: stopping the servers\n`);
    const known = SIDES.flatMap((side) => ctx.servers[side]?.pid ?? []);
    const pids = [...new Set([...known, ...childrenOf(process.pid)])];
    kill(pids, 'SIGTERM');
    const code = signal === 'SIGINT' ? 130 : 143;
    stop.exitCode = stillAliveAfter(pids, 6_000).then((alive) => {
      kill(alive, 'SIGKILL');
      if (!ctx.o.keep) rmSync(ctx.dir, { recursive: true, force: true });
      return code;
    });
    void stop.exitCode.then(() => process.exit(code));
  };
  process.on('SIGINT', handler).on('SIGTERM', handler);
  return () => process.off('SIGINT', handler).off('SIGTERM', handler);
}

/** The GPU both servers use, and which cudakit each build's processes loaded (a problem when another's). */
async function checkServers(ctx: Context): Promise<GpuFacts> {
  const [before, after] = await Promise.all(SIDES.map(async (side) => (await slots(ctx.servers[side]!.url)).gpus));
  const slot = after?.[0];
  if (slot === undefined) throw new Error('the after server lists no GPU');
  if (before?.[0]?.uuid !== slot.uuid) problem(ctx, `the servers' GPUs differ: ${before?.[0]?.uuid}, ${slot.uuid}`);
  ctx.uuid = slot.uuid;
  for (const b of SIDES.map((side) => ctx.builds[side])) {
    b.addons = loadedAddons(ctx.servers[b.side]!.pid);
    const foreign = [b.lib, ...b.addons.map((a) => realpathSync(a))].filter((f) => !inside(b.root, f));
    if (foreign.length > 0) problem(ctx, `the ${b.side} build loaded ${foreign.join(', ')}, outside ${b.root}`);
  }
  const smi = await nvidiaSmi(slot.uuid);
  console.log(`  GPU ${slot.name} (${slot.arch}) ${slot.uuid}${smi === undefined ? '' : `, driver ${smi.driver}`}`);
  return { name: slot.name, arch: slot.arch, uuid: slot.uuid, driver: smi?.driver, memory: smi?.memory };
}

async function run(o: Options, stop: Interruption): Promise<Results> {
  const t0 = performance.now();
  const budget = new Budget(o.budgetMs);
  const builds = {
    before: await describeBuild('before', o.before),
    after: await describeBuild('after', resolve(ROOT)),
  };
  for (const b of SIDES.map((side) => builds[side])) {
    console.log(`${b.side}: ${b.root} (${b.rev ?? 'no git'}; code ${b.codeHash}), cudakit ${b.lib}`);
    if (b.libStale) console.log(`  ${b.root}/dist is older than its lib/: its server runs the library as last built`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-bench-ab-'));
  const jobFile = join(dir, 'saxpy.json');
  writeFileSync(jobFile, JSON.stringify(saxpyJob(o.fake)));
  const ctx: Context = { o, dir, jobFile, builds, servers: {}, uuid: '', problems: [] };
  const r: Results = {
    date: new Date().toISOString().slice(0, 10),
    options: o,
    node: process.version,
    gpu: undefined,
    builds,
    rounds: [],
    totalMs: NaN,
    problems: ctx.problems,
  };
  const offSignals = onSignals(ctx, stop);
  try {
    console.log(`starting both servers (${fmt(budget.leftMs() / 1000, 0)} s of the budget left)`);
    await startBoth(ctx);
    await settleBoth(ctx);
    r.gpu = await checkServers(ctx);
    let longestRoundMs = 0;
    const maxRounds = o.maxRounds ?? Infinity;
    for (let index = 1; index <= maxRounds; index++) {
      // A new pair of rounds (AB, then BA) needs room for both, so that both orders count alike.
      const need = index % 2 === 1 && index < maxRounds ? 2 : 1;
      if (index > MIN_ROUNDS && budget.leftMs() < need * longestRoundMs + STOP_RESERVE_MS) break;
      const order = index % 2 === 1 ? (['before', 'after'] as const) : (['after', 'before'] as const);
      const start = performance.now();
      const parts: Partial<Record<Side, BuildRound>> = {};
      for (const side of order) parts[side] = await buildRound(ctx, side);
      const [a, b] = [parts.before!, parts.after!];
      r.rounds.push({ index, order, elapsedMs: performance.now() - start, before: a, after: b });
      longestRoundMs = Math.max(longestRoundMs, r.rounds.at(-1)!.elapsedMs);
      console.log(
        `round ${index} (${order.join(', ')}): overhead ${ms(a.overheadMs)} → ${ms(b.overheadMs)}, submit → ` +
          `result ${ms(a.wallMs)} → ${ms(b.wallMs)}, in-process ${ms(a.inProcessMs)} → ${ms(b.inProcessMs)} ` +
          `(${fmt(r.rounds.at(-1)!.elapsedMs / 1000, 1)} s; ${fmt(budget.leftMs() / 1000, 0)} s left)`,
      );
    }
  } catch (e) {
    if (stop.exitCode !== undefined) return r; // the servers were stopped under it: nothing of theirs failed
    problem(ctx, (e as Error).message.split('\n')[0]!);
    console.error(`  failed: ${(e as Error).stack ?? String(e)}`);
    for (const side of SIDES) {
      const out = ctx.servers[side]?.output().trimEnd().split('\n').slice(-20).join('\n');
      if (out !== undefined) console.error(`  the ${side} server's last lines:\n${out}`);
    }
  } finally {
    await stopBoth(ctx);
    offSignals();
    if (o.keep) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
    r.totalMs = performance.now() - t0;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------------------------
// Statistics and the report

type Metric = 'wallMs' | 'workerEvaluateMs' | 'outsideMs' | 'inProcessMs' | 'overheadMs';

const METRICS: Readonly<Record<Metric, string>> = {
  wallMs: 'submit → result (POST, then long-poll; one client)',
  workerEvaluateMs: "the worker's evaluate() (its report's phases)",
  outsideMs: "outside the worker's evaluate()",
  inProcessMs: 'evaluate() in-process (a process of its own, context warm)',
  overheadMs: 'overhead per job: submit → result − evaluate() in-process',
};

interface Interval {
  lowMs: number;
  highMs: number;
  /** 'order': order statistics k and n + 1 − k; 'range': min … max, with fewer than 6 differences. */
  kind: 'order' | 'range';
  /** The chance that it covers the differences' median, whatever their (continuous) distribution. */
  coverage: number;
}

/**
 * The distribution-free interval of the median of `values`: order statistics k and n + 1 − k of the n sorted values,
 * k the largest with P(Bin(n, ½) ≤ k − 1) ≤ 2.5 %, which covers the median with at least 95 %. Below 6 values no k
 * qualifies (min … max covers with 1 − 2·½ⁿ, under 95 %): then min … max, marked 'range'.
 */
function medianInterval(values: readonly number[]): Interval {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return { lowMs: NaN, highMs: NaN, kind: 'range', coverage: NaN };
  let k = 0;
  let cdf = 0; // P(B ≤ k − 1)
  let pmf = 0.5 ** n; // P(B = k)
  while (k < n >> 1 && cdf + pmf <= 0.025) {
    cdf += pmf;
    pmf *= (n - k) / (k + 1);
    k++;
  }
  if (k === 0) return { lowMs: s[0]!, highMs: s[n - 1]!, kind: 'range', coverage: 1 - 2 * 0.5 ** n };
  return { lowMs: s[k - 1]!, highMs: s[n - k]!, kind: 'order', coverage: 1 - 2 * cdf };
}

interface Summary {
  metric: Metric;
  /** Each build's median over the rounds. */
  beforeMs: number;
  afterMs: number;
  /** The median of the rounds' after − before, and its interval. */
  diffMs: number;
  interval: Interval;
  /** diffMs relative to beforeMs, %. */
  changePct: number;
}

function summaries(rounds: readonly Round[]): Summary[] {
  return Object.keys(METRICS).map((key) => {
    const metric = key as Metric;
    const beforeMs = median(rounds.map((r) => r.before[metric]));
    const diffs = rounds.map((r) => r.after[metric] - r.before[metric]);
    const diffMs = median(diffs);
    const afterMs = median(rounds.map((r) => r.after[metric]));
    return { metric, beforeMs, afterMs, diffMs, interval: medianInterval(diffs), changePct: (diffMs / beforeMs) * 100 };
  });
}

/**
 * The criterion: the overhead's 95 % interval, relative to before's overhead, lies within ±10 % ('yes') or wholly
 * outside it ('no'); an interval across a bound, or a mere range (fewer than 6 rounds), settles nothing.
 */
function criterion(s: Summary): string {
  const [low, high] = [(s.interval.lowMs / s.beforeMs) * 100, (s.interval.highMs / s.beforeMs) * 100];
  if (!Number.isFinite(low) || !Number.isFinite(high) || !(s.beforeMs > 0)) return 'n/a';
  if (s.interval.kind === 'range') return 'not settled (fewer than 6 rounds)';
  if (low >= -10 && high <= 10) return 'yes';
  if (low > 10 || high < -10) return '**no**';
  return 'not settled (the interval crosses ±10 %)';
}

const ms = (x: number): string => (Number.isFinite(x) ? `${fmt(x, Math.abs(x) < 100 ? 1 : 0)} ms` : '—');
const signed = (x: number, text: string): string => (Number.isFinite(x) && x >= 0 ? `+${text}` : text);
const signedMs = (x: number): string => signed(x, ms(x));
const signedPct = (x: number): string => signed(x, Number.isFinite(x) ? `${fmt(x, 1)} %` : '—');

function buildWords(b: Build): string {
  // Paths within each checkout: where a checkout lies says nothing of what was measured.
  const inside = (path: string): string => relative(b.root, path) || '.';
  const where = b.side === 'after' ? 'this repository' : 'another checkout';
  const rev = b.rev === undefined ? 'no git revision' : `rev ${b.rev.replace(/\+$/, ' with uncommitted changes')}`;
  const stale = b.libStale ? ' (dist/ older than lib/)' : '';
  const addon = b.addons.length === 0 ? '' : `, its worker's addon \`${b.addons.map(inside).join('`, `')}\``;
  return (
    `${b.side}: ${where} (${rev}; server/src and dist/ hash ${b.codeHash}): its server's cudakit \`${inside(b.lib)}\`` +
    `${stale}${addon}; in-process evaluate() by ${b.evaluateWords}`
  );
}

function markdown(r: Results): string {
  const [g, n, s] = [r.gpu, r.rounds.length, summaries(r.rounds)];
  const overhead = s.find((x) => x.metric === 'overheadMs')!;
  const spread = (side: Side): string => {
    const values = r.rounds.map((x) => x[side].overheadMs).filter((v) => Number.isFinite(v));
    return values.length === 0 ? '—' : `${ms(Math.min(...values))} … ${ms(Math.max(...values))}`;
  };
  const pctOfBefore = (x: number): string => signedPct((x / overhead.beforeMs) * 100);
  const where =
    `${r.date}, ${g === undefined ? 'no GPU' : `${g.name} (${g.arch})`}` +
    `${g?.driver === undefined ? '' : `, driver ${g.driver}`}, Node ${r.node}; both servers from their sources ` +
    `(tsx), process isolation, on one GPU; ${n} round${n === 1 ? '' : 's'} of ${r.options.jobs} jobs per build` +
    `${r.options.fake ? '; **fake worker: the figures mean nothing**' : ''}. Run time ${fmt(r.totalMs / 1000, 0)} s.`;
  const table = [
    '| per job | before | after | after − before | 95 % interval | change |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...s.map((x) => {
      const interval = `${signedMs(x.interval.lowMs)} … ${signedMs(x.interval.highMs)}`;
      const range = x.interval.kind === 'range' ? ' (range)' : '';
      return (
        `| ${METRICS[x.metric]} | ${ms(x.beforeMs)} | ${ms(x.afterMs)} | ${signedMs(x.diffMs)} | ` +
        `${interval}${range} | ${signedPct(x.changePct)} |`
      );
    }),
  ].join('\n');
  const verdict =
    `Overhead per job within ±10 % of before (the criterion: its whole interval): ${criterion(overhead)}; after − ` +
    `before ${signedMs(overhead.diffMs)} (${signedPct(overhead.changePct)}), interval ` +
    `${pctOfBefore(overhead.interval.lowMs)} … ${pctOfBefore(overhead.interval.highMs)}. Over the rounds the ` +
    `overhead ranged ${spread('before')} before, ${spread('after')} after.`;
  const coverage = `${fmt(overhead.interval.coverage * 100, 1)} %`;
  const method =
    `Rounds in ABBA order (before then after, then after then before, …). In a round each build ran evaluate() in ` +
    `a child process (a cold run, then ${EVAL_RUNS} warm ones, whose median is the in-process figure), then ` +
    `${r.options.jobs} jobs back to back through its own server; both servers stayed up, only one of them or the ` +
    `child ran at a time, each step beginning with both slots idle. Before and after: medians over the rounds of ` +
    `each round's medians; after − before: the median of the rounds' paired differences, with ` +
    (overhead.interval.kind === 'order'
      ? `their order-statistic interval (distribution-free, coverage ${coverage}).`
      : `their min … max ("range": below 6 rounds no order-statistic interval reaches 95 %; ` +
        `this one covers ` +
        `${coverage}).`) +
    (r.options.fake
      ? ` No GPU: the fake job's nominal ${ms(FAKE_EVALUATE_MS)} stands in for evaluate() in-process.`
      : '');
  const problems =
    r.problems.length === 0 ? [] : ['Problems in this run:', '', ...r.problems.map((p) => `- ${p.split('\n')[0]}`)];
  const builds = SIDES.map((side) => `- ${buildWords(r.builds[side])}`);
  const title = "## Before and after: the service's overhead per job, interleaved";
  const phases = phaseTable(r.rounds);
  return [title, '', where, '', ...builds, '', table, '', verdict, '', ...phases, method, '', ...problems].join('\n');
}

/**
 * Where the worker's evaluate() spends its time, per phase and build: the median over every passing job of the
 * rounds (a change of evaluate() itself shows here, apart from the service's overhead).
 */
function phaseTable(rounds: readonly Round[]): string[] {
  const jobs = (side: Side) => rounds.flatMap((x) => x[side].jobs).filter((j) => Number.isFinite(j.wallMs));
  const names = [...new Set(SIDES.flatMap((side) => jobs(side).flatMap((j) => Object.keys(j.workerPhasesMs))))];
  if (names.length === 0) return [];
  const of = (side: Side, phase: string): string => {
    const values = jobs(side)
      .map((j) => j.workerPhasesMs[phase])
      .filter((v): v is number => typeof v === 'number');
    return values.length === 0 ? '—' : ms(median(values));
  };
  return [
    "The worker's evaluate() by phase (median over the passing jobs):",
    '',
    '| phase | before | after |',
    '| --- | ---: | ---: |',
    ...names.map((phase) => `| ${phase} | ${of('before', phase)} | ${of('after', phase)} |`),
    '',
  ];
}

async function main(argv: readonly string[]): Promise<number> {
  const o = cliOptions(argv);
  if (typeof o === 'number') return o;
  const stop: Interruption = {};
  const r = await run(o, stop);
  if (stop.exitCode !== undefined) return stop.exitCode;
  if (r.rounds.length === 0) {
    console.error(`bench:ab: no round ran: ${r.problems.join('; ')}`);
    return 1;
  }
  writeOutputs(o, 'before-after', markdown(r), { ...r, summaries: summaries(r.rounds) });
  return r.problems.length === 0 ? 0 : 1;
}

// Run as a script.
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  exitWith('ab', main(process.argv.slice(2)));
}
