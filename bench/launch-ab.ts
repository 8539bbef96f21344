// SPDX-License-Identifier: MIT
// `npm run bench:launch-ab -- --before <checkout>`: the launch path of another checkout's build ("before") against
// this repository's ("after"), both loaded into one process, on one machine with an NVIDIA GPU, in about half a minute.
//
// run.ts's launch rows compare cudakit with C in one process; a change to the launch path shows as a change of
// Kernel.launch over the raw layer (native().launchKernel(slot)), tens of nanoseconds, which the host's drift between
// two runs of run.ts outweighs. Here both builds' dist/ are imported side by side (each with its own addon), each
// compiles and loads the same empty kernel on device 0, and batches of 100 launches run interleaved: in every round,
// each build's raw layer, Kernel.launch with a frozen config and with a plain config, the order rotating from round to
// round. Each round gives each build's Kernel.launch − raw; after − before is the median over the rounds of their
// paired differences, with its distribution-free interval.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { transcript, writeSection } from './results.js';
import { medianCI } from '../lib/index.js';

type Lib = typeof import('../lib/index.js');
type Side = 'before' | 'after';
/** The three ways one build enqueues the empty kernel, µs per launch of one batch. */
type Way = 'raw' | 'frozen' | 'plain';

const USAGE = `Usage: npx tsx bench/launch-ab.ts --before <dir> [--rounds n] [--write]
  --before <dir>  another checkout of this repository with its dist/ and addon built: "before"; this one is "after"
  --rounds <n>    interleaved rounds (default 401)
  --write         replace the launch-ab section of bench/RESULTS.md
`;
// Well below the launches a stream may hold pending: a batch that fills the queue waits for the GPU to drain it, and
// then times the GPU's pace, not the host's cost per launch.
const BATCH = 100;
const SOURCE = 'extern "C" __global__ void empty() {}\n';

interface Launcher {
  side: Side;
  root: string;
  /** µs per launch of one batch of BATCH launches, the stream synchronized after it (outside the time). */
  batch: Record<Way, () => number>;
  dispose: () => void;
}

const nowUs = (): number => Number(process.hrtime.bigint()) / 1e3;

async function launcher(side: Side, root: string): Promise<Launcher> {
  const entry = join(root, 'dist/index.js');
  if (!existsSync(entry)) throw new Error(`${side}: ${root} has no dist/index.js (npm run build:ts there)`);
  const lib = (await import(pathToFileURL(entry).href)) as Lib;
  const device = lib.Device.get(0);
  const code = new lib.Program(SOURCE, { name: `empty-${side}.cu` }).compile({ arch: device.arch, cache: false });
  const module = device.loadModule(code);
  const empty = module.getKernel('empty', []);
  const stream = device.createStream();
  const plain = { grid: 1, block: 1, stream };
  const frozen = Object.freeze({ grid: 1, block: 1, stream });
  const n = lib.native();
  // The raw layer's slot for the same function, as run.ts makes it: grid and block 1, the stream at word 4.
  const slotBuffer = new ArrayBuffer(72);
  new Uint32Array(slotBuffer, 0, 6).set([1, 1, 1, 1, 1, 1]);
  new BigUint64Array(slotBuffer, 0, 5)[4] = stream.handle;
  const slot = n.kernelSlotCreate(device.ctx, empty.handle, slotBuffer, []);
  const timed = (loop: () => void): (() => number) => {
    return () => {
      const t0 = nowUs();
      loop();
      const us = (nowUs() - t0) / BATCH;
      stream.synchronize();
      return us;
    };
  };
  // Each loop written out, so that no build pays for a call site shared with the other.
  const batch: Record<Way, () => number> = {
    raw: timed(() => {
      for (let i = 0; i < BATCH; i++) n.launchKernel(slot);
    }),
    frozen: timed(() => {
      for (let i = 0; i < BATCH; i++) empty.launch(frozen);
    }),
    plain: timed(() => {
      for (let i = 0; i < BATCH; i++) empty.launch(plain);
    }),
  };
  // Warm: every loop compiled by the JIT, the stream's first launches behind it.
  for (const way of Object.keys(batch) as Way[]) for (let i = 0; i < 50; i++) batch[way]();
  return {
    side,
    root,
    batch,
    dispose: () => {
      stream.dispose();
      module.dispose();
    },
  };
}

const median = (v: readonly number[]): number => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** A checkout's git revision, '+' when it has uncommitted changes; 'unknown' without git. */
function revOf(root: string): string {
  const git = (...args: string[]): string =>
    execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const changed = git('status', '--porcelain', '--untracked-files=no') !== '';
    return `${git('rev-parse', '--short', 'HEAD')}${changed ? '+' : ''}`;
  } catch {
    return 'unknown';
  }
}

const ns = (us: number): string => `${(us * 1000).toFixed(0)} ns`;
const signedNs = (us: number): string => `${us >= 0 ? '+' : '−'}${Math.abs(us * 1000).toFixed(0)} ns`;

async function main(): Promise<number> {
  const { values: v } = parseArgs({
    options: {
      before: { type: 'string' },
      rounds: { type: 'string', default: '401' },
      write: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (v.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const rounds = Number(v.rounds);
  if (v.before === undefined || !Number.isInteger(rounds) || rounds < 5) {
    process.stderr.write(`bench:launch-ab: --before <dir> is required, --rounds an integer ≥ 5\n\n${USAGE}`);
    return 2;
  }
  const after = await launcher('after', resolve(new URL('..', import.meta.url).pathname));
  const before = await launcher('before', resolve(v.before));
  const sides = [before, after];
  const steps = sides.flatMap((s) => (['raw', 'frozen', 'plain'] as Way[]).map((way) => ({ s, way })));
  const perRound: Record<Side, Record<Way, number>>[] = [];
  for (let r = 0; r < rounds; r++) {
    const us = { before: {}, after: {} } as Record<Side, Record<Way, number>>;
    // Rotate the six batches' order, and reverse it every other round, so that no step always follows another.
    const order = steps.map((_, i) => steps[(i + r) % steps.length]!);
    if (r % 2 === 1) order.reverse();
    for (const { s, way } of order) us[s.side][way] = s.batch[way]();
    perRound.push(us);
  }
  for (const s of sides) s.dispose();

  const { lines, say } = transcript();
  const date = new Date().toISOString().slice(0, 10);
  say('## Launch path, before and after');
  say('');
  say(
    `${date}, device 0, Node ${process.version}; before: another checkout (rev ${revOf(before.root)}), after: ` +
      `this repository (rev ${revOf(after.root)}); ${rounds} ` +
      `rounds of batches of ${BATCH} empty-kernel launches, both builds in one process, interleaved.`,
  );
  say('');
  say('| per launch | before | after | after − before | 95 % interval |');
  say('| --- | ---: | ---: | ---: | ---: |');
  const row = (label: string, of: (r: Record<Way, number>) => number): { diff: number; low: number; high: number } => {
    const b = perRound.map((r) => of(r.before));
    const a = perRound.map((r) => of(r.after));
    const diffs = perRound.map((r) => of(r.after) - of(r.before));
    const [low, high] = medianCI([...diffs].sort((x, y) => x - y));
    say(
      `| ${label} | ${ns(median(b))} | ${ns(median(a))} | ${signedNs(median(diffs))} | ` +
        `${signedNs(low)} … ${signedNs(high)} |`,
    );
    return { diff: median(diffs), low, high };
  };
  row('raw layer (native().launchKernel(slot))', (r) => r.raw);
  const frozen = row('Kernel.launch over the raw layer, frozen config', (r) => r.frozen - r.raw);
  const plain = row('Kernel.launch over the raw layer, plain config', (r) => r.plain - r.raw);
  const within = (x: { low: number; high: number }): boolean => x.low >= -0.05 && x.high <= 0.05;
  say('');
  say(
    `Kernel.launch over the raw layer within ±50 ns of before (the whole interval): frozen config ` +
      `${within(frozen) ? 'yes' : 'no'}, plain config ${within(plain) ? 'yes' : 'no'}. Each figure is the median ` +
      `over the rounds of its round's value; after − before the median of the rounds' paired differences, with ` +
      `its distribution-free 95 % interval (medianCI).`,
  );
  if (v.write) writeSection('launch-ab', lines.join('\n'));
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench:launch-ab: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
