// SPDX-License-Identifier: MIT
// `npx tsx bench/drift.ts [--write]`: reproduces the GPU's slow state and shows what puts it there. A probe (one
// graph replay of 100 launches of an empty kernel, timed by events, 20 replays: a few ms) is taken before and after
// each step; the steps are what bench() does to a GPU (a bench() of a tiny kernel, in hot and graph mode), a burst of
// queued launches of the empty kernel (no synchronize for N ms, so the queue is as deep as the driver allows), the
// same launches synchronized one by one, and idle time. Each line: the probe's per-launch time after the step, and
// its ratio to the first probe of the run.
import { setTimeout as sleep } from 'node:timers/promises';
import { Device, Event, Program, bench, formatDuration, probe } from '../lib/index.js';
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
say(machineLine(device, p));
say('');
say('| step | probe after (µs per launch) | ratio to the first probe | detail |');
say('| --- | ---: | ---: | --- |');
probeUs(); // warm
const first = probeUs();
const line = (step: string, detail = ''): void => {
  const now = probeUs();
  say(`| ${step} | ${now.toFixed(3)} | ${(now / first).toFixed(3)} | ${detail} |`);
};
line('start');
await sleep(200);
line('200 ms idle');
for (const mode of ['hot', 'graph'] as const) {
  for (let i = 1; i <= 2; i++) {
    const r = await bench(tiny, { grid: 1, block: 256 }, [x], { mode, preset: 'quick' });
    line(`bench() ${mode} #${i}`, `median ${formatDuration(r.stats.median)} (${r.timer}), ${r.samples.length} samples`);
  }
}
for (const ms of [100, 1000, 3000]) {
  const n = burst(ms, false);
  line(`${ms} ms burst of queued launches`, `${n} launches`);
  for (const idle of [10, 100, 1000]) {
    await sleep(idle);
    line(`… then ${idle} ms idle`);
  }
}
const n = burst(3000, true);
line('3000 ms of launches synchronized every 100', `${n} launches`);
await sleep(1000);
line('… then 1000 ms idle');
const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)} %`;
for (const timer of ['cupti', 'events'] as const) {
  const medians: number[] = [];
  for (let i = 1; i <= 2; i++) {
    const r = await bench(tiny, { grid: 1, block: 256 }, [x], { mode: 'hot', preset: 'default', timer });
    medians.push(r.stats.median);
    const d = r.env.drift;
    const drift = d === undefined ? '' : `, probe ${pct(d.change)} (limit ±${(100 * d.limit).toFixed(1)} %)`;
    line(`bench() hot, ${r.timer}, again #${i}`, `median ${formatDuration(r.stats.median)}${drift}`);
  }
  say(`| two bench() calls in a row, ${timer} | | ${(medians[1]! / medians[0]!).toFixed(4)} | second / first median |`);
}
if (process.argv.includes('--write')) writeSection('drift', `## The GPU's slow state\n\n${lines.join('\n')}\n`);
