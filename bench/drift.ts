// SPDX-License-Identifier: MIT
// `npx tsx bench/drift.ts [--write]`: the GPU's slow state, and bench()'s drift probe catching a GPU that changed
// under a run. After each step, two probes (20 replays of a graph of 100 empty-kernel launches): unheld, and held
// behind the spin kernel as bench() takes its samples (the drift probe). The steps: idle time, bench() of a tiny
// kernel by each timer (events first: CUPTI, once enabled, changes unheld launches), a burst of queued launches (no
// synchronize for 1 s: the queue as deep as the driver allows) in the middle of a run (by preset 'default', which
// warns, and 'rigorous', which takes the run again once the GPU is steady), each in a fresh process (the slow state
// lasts as long as the process), and two bench() calls in a row by each timer in the slow state that leaves.
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  type BenchOptions,
  type BenchResult,
  Device,
  Event,
  Program,
  bench,
  driftProbe,
  formatDuration,
  probe,
} from '../lib/index.js';
import { machineLine, transcript, writeSection } from './results.js';

const p = probe();
if (!p.ok) {
  console.error(`bench/drift.ts needs a CUDA GPU: ${p.reason}`);
  process.exit(1);
}
const device = Device.get(0);
using module = device.loadModule(
  new Program(
    'extern "C" __global__ void empty() {}\nextern "C" __global__ void tiny(float* x) { x[threadIdx.x] += 1.0f; }',
  ).compile(),
);
const empty = module.getKernel('empty', []);
const tiny = module.getKernel('tiny', ['ptr']);
using x = device.alloc(4096).fill(0);
using stream = device.createStream({ nonBlocking: true });
const LAUNCHES = 100;
stream.beginCapture({ mode: 'threadLocal' });
for (let i = 0; i < LAUNCHES; i++) empty.launch({ grid: 1, block: 32, stream });
using graph = stream.endCapture();
using exec = graph.instantiate();
using e0 = stream.record();
using e1 = stream.record();

/** Per-launch µs of the probe: median over 20 replays of the 100-launch graph. */
function probeUs(): number {
  const us: number[] = [];
  for (let i = 0; i < 20; i++) {
    e0.record(stream);
    exec.launch(stream);
    e1.record(stream);
    us.push((Event.elapsedMs(e0, e1) * 1000) / LAUNCHES);
  }
  us.sort((a, b) => a - b);
  return us[10]!;
}

/** Launches the empty kernel for `ms` of host time without synchronizing (the queue fills), then waits. */
function burst(ms: number, sync: boolean): number {
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < ms) {
    for (let i = 0; i < 100; i++) empty.launch({ grid: 1, block: 32, stream });
    n += 100;
    if (sync) stream.synchronize();
  }
  stream.synchronize();
  return n;
}

const { lines, say } = transcript();
const line = (step: string, detail = ''): void => {
  say(`| ${step} | ${probeUs().toFixed(3)} | ${driftProbe(device).usPerLaunch.toFixed(3)} | ${detail} |`);
};
const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)} %`;
const driftOf = (r: BenchResult): string => {
  const d = r.env.drift;
  if (d === undefined) return '';
  const retaken = d.retaken > 0 ? `, retaken ${d.retaken}×` : '';
  const read = `${d.beforeUs.toFixed(3)} → ${d.afterUs.toFixed(3)} µs, ${pct(d.change)}`;
  return `; drift probe ${read} (limit ±${(100 * d.limit).toFixed(2)} %${retaken})`;
};
const tinyBench = async (options: BenchOptions): Promise<BenchResult> =>
  bench(tiny, { grid: 1, block: 256 }, [x], { mode: 'hot', preset: 'quick', ...options });

// A burst of queued launches in the middle of a run (an async task 300 ms in, between two of bench()'s batches):
// the GPU goes into the slow state under the run, and the drift probe after the run reads it. With preset
// 'rigorous' the run is taken again once the probe is steady. Run in a process of its own (`--burst <preset>`), which
// begins in the normal state, and printed as table rows for the parent to collect.
const burstAt = process.argv.indexOf('--burst');
if (burstAt >= 0) {
  const preset = process.argv[burstAt + 1] as 'default' | 'rigorous';
  line(`a fresh process, for preset ${preset}`);
  const timed = tinyBench({ preset, timer: 'events', rule: { minTimeMs: 1500, timeoutMs: 4000 } });
  await sleep(300);
  const launches = burst(1000, false);
  const r = await timed;
  const warned = r.warnings.some((w) => w.startsWith('the GPU changed during the run'));
  line(
    `bench() hot, events, preset ${preset}, a 1000 ms burst of queued launches (${launches}) 300 ms in`,
    `median ${formatDuration(r.stats.median)}${driftOf(r)}${warned ? '; warned' : ''}`,
  );
  await sleep(1000);
  line('… then 1000 ms idle');
  process.exit(0);
}

say(machineLine(device, p));
say('');
say(
  'Two probes after each step, each the median per-launch time of 20 replays of a graph of 100 empty-kernel ' +
    'launches: unheld (each replay timed as it is submitted) and held (the replays queued behind the spin kernel, as ' +
    "bench() takes samples; this is bench()'s drift probe, driftProbe()). A drift probe detail reads before → " +
    'after the accepted run.',
);
say('');
say('| step | unheld probe (µs per launch) | held probe (µs per launch) | detail |');
say('| --- | ---: | ---: | --- |');

line('start (a fresh process)');
await sleep(500);
line('500 ms idle');
let r = await tinyBench({ timer: 'events' });
line('bench() hot, events timer (no CUPTI yet)', `median ${formatDuration(r.stats.median)}${driftOf(r)}`);
r = await tinyBench({ timer: 'cupti' });
line(`bench() hot, ${r.timer} timer`, `median ${formatDuration(r.stats.median)}${driftOf(r)}`);
r = await tinyBench({ mode: 'graph', timer: 'cupti' });
line(`bench() graph, ${r.timer} timer`, `median ${formatDuration(r.stats.median)}${driftOf(r)}`);
for (const preset of ['default', 'rigorous'] as const) {
  const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--burst', preset], {
    encoding: 'utf8',
  });
  const rows = child.stdout.split('\n').filter((row) => row.startsWith('| '));
  if (child.status !== 0 || rows.length === 0)
    throw new Error(`bench/drift.ts --burst ${preset} failed (exit ${child.status}):\n${child.stderr}`);
  for (const row of rows) say(row);
}
// Then this process into the slow state with a burst of its own, for the runs in a row below.
burst(1000, false);
line('this process, after a 1000 ms burst of queued launches');
await sleep(1000);
line('… then 1000 ms idle');

// bench() in the slow state: two runs in a row by each timer.
for (const timer of ['cupti', 'events'] as const) {
  const medians: number[] = [];
  for (let i = 1; i <= 2; i++) {
    r = await tinyBench({ preset: 'default', timer });
    medians.push(r.stats.median);
    line(`bench() hot, ${r.timer}, #${i} of two in a row`, `median ${formatDuration(r.stats.median)}${driftOf(r)}`);
  }
  say(`| two bench() in a row, ${timer}: second / first median | | | ${(medians[1]! / medians[0]!).toFixed(4)} |`);
}
if (process.argv.includes('--write')) writeSection('drift', `## The GPU's slow state\n\n${lines.join('\n')}\n`);
