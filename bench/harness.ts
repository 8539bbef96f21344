// SPDX-License-Identifier: MIT
// `npm run bench:harness`: figures for the benchmark harness itself (the method: docs/benchmarking.md):
//  1. agreement of bench()'s cold median, by the CUPTI and the events timer, with Nsight Compute's
//     gpu__time_duration.sum: copies from ~3 µs to ~1 ms, spin kernels of 5, 20 and 200 µs;
//  2. run-to-run spread of the median over 10 runs;
//  3. wall time each preset needs to converge, for a ~10 µs and a ~1 ms kernel.
// `--write` records them in bench/RESULTS.md.
import {
  type BenchResult,
  type BenchTimer,
  Device,
  Program,
  bench,
  cuptiStatus,
  formatDuration,
  probe,
} from '../lib/index.js';
import { COPY_SOURCE, SPIN_SOURCE, copyConfig } from './ncu-child.js';
import { ncuAvailable, ncuCopyMs, ncuSpinMs } from './ncu.js';
import { machineLine, transcript, writeSection } from './results.js';

const p = probe();
if (!p.ok) {
  console.error(`bench:harness needs a CUDA GPU: ${p.reason}`);
  process.exit(1);
}
const device = Device.get(0);
using module = device.loadModule(new Program(COPY_SOURCE).compile());
const copy = module.getKernel('copy', ['ptr', 'ptr', 'i64']);
using spinModule = device.loadModule(new Program(SPIN_SOURCE).compile());
const spin = spinModule.getKernel('spin', ['u64']);
const cfg = copyConfig(device);
const maxMiB = 2048;
using a = device.alloc(maxMiB * 2 ** 20).fill(1);
using b = device.alloc(maxMiB * 2 ** 20);
const args = (mib: number): [typeof a, typeof b, number] => [a, b, (mib * 2 ** 20) / 16];
const { lines, say } = transcript();

say(`${machineLine(device, p)} Kernel: a grid-stride float4 copy (memory-bound), sizes below are the bytes copied.`);
say('');
say('### Agreement with Nsight Compute: the CUPTI timer, the events timer and ncu');
say('');
say(
  "bench() cold medians (default preset) by each timer against ncu's gpu__time_duration.sum " +
    '(--cache-control all --clock-control none; the median of 5 launches after a first): a grid-stride float4 copy ' +
    'over each size, and a spin kernel that waits the given time on %globaltimer.',
);
say('');
say('| kernel | cudakit, CUPTI | cudakit, events | ncu | CUPTI / ncu | events / ncu | (events − event pair) / ncu |');
say('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
const cupti = cuptiStatus();
if (!cupti.available) say(`| — | CUPTI unavailable: ${cupti.reason} | | | | | |`);
if (ncuAvailable()) {
  let overhead = 0;
  const row = async (label: string, time: (timer: BenchTimer) => Promise<BenchResult>, ncu: number): Promise<void> => {
    const c = cupti.available ? (await time('cupti')).stats.median : Number.NaN;
    const e = await time('events');
    overhead = e.env.eventOverheadMs;
    const ev = e.stats.median;
    say(
      `| ${label} | ${cupti.available ? formatDuration(c) : '—'} | ${formatDuration(ev)} | ${formatDuration(ncu)} | ` +
        `${cupti.available ? (c / ncu).toFixed(3) : '—'} | ${(ev / ncu).toFixed(3)} | ` +
        `${((ev - overhead) / ncu).toFixed(3)} |`,
    );
  };
  for (const mib of [1, 8, 64, 256, 2048]) {
    await row(`copy ${mib} MiB`, (timer) => bench(copy, cfg, args(mib), { mode: 'cold', timer }), ncuCopyMs(mib));
  }
  for (const us of [5, 20, 200]) {
    const ns = BigInt(us * 1000);
    await row(
      `spin ${us} µs`,
      (timer) => bench(spin, { grid: 1, block: 1 }, [ns], { mode: 'cold', timer }),
      ncuSpinMs(us),
    );
  }
  say('');
  say(
    'The event pair itself (start and stop events with nothing between, queued the same way) ' +
      `takes ${formatDuration(overhead)} of GPU time here; ` +
      "every event-timed sample includes it and Nsight Compute's kernel duration does not, nor do CUPTI's kernel " +
      'timestamps (BenchResult.env.eventOverheadMs).',
  );
} else {
  say('| — | ncu not found on this machine | | | | | |');
}

say('');
say('### Run-to-run spread of the median (10 runs, default preset, cold)');
say('');
say('| kernel | median of medians | min … max | spread (max − min) / median |');
say('| --- | ---: | ---: | ---: |');
for (const mib of [16, 2048]) {
  const medians: number[] = [];
  for (let i = 0; i < 10; i++) medians.push((await bench(copy, cfg, args(mib), { mode: 'cold' })).stats.median);
  medians.sort((x, y) => x - y);
  const mid = medians[5]!;
  say(
    `| copy ${mib} MiB | ${formatDuration(mid)} | ${formatDuration(medians[0]!)} … ${formatDuration(medians[9]!)} | ` +
      `${((100 * (medians[9]! - medians[0]!)) / mid).toFixed(2)} % |`,
  );
}

say('');
say('### Wall time to converge, per preset (cold)');
say('');
say('| kernel | preset | wall time | samples | stopped by | 95 % CI of the median |');
say('| --- | --- | ---: | ---: | --- | ---: |');
for (const mib of [16, 2048]) {
  for (const preset of ['quick', 'default', 'rigorous'] as const) {
    const r = await bench(copy, cfg, args(mib), { mode: 'cold', preset });
    const half = ((r.stats.ciHigh - r.stats.ciLow) / 2 / r.stats.median) * 100;
    say(
      `| copy ${mib} MiB (${formatDuration(r.stats.median)}) | ${preset} | ${formatDuration(r.wallMs)} | ` +
        `${r.stats.n} | ${r.stopReason} | ±${half.toFixed(2)} % |`,
    );
  }
}

if (process.argv.includes('--write')) writeSection('harness', `## Benchmark harness\n\n${lines.join('\n')}\n`);
