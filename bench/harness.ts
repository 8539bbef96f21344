// SPDX-License-Identifier: MIT
// `npm run bench:harness`: figures for the benchmark harness itself (the method: docs/benchmarking.md):
//  1. agreement of bench()'s cold median with Nsight Compute's gpu__time_duration.sum, kernels from ~3 µs to ~1 ms;
//  2. run-to-run spread of the median over 10 runs;
//  3. wall time each preset needs to converge, for a ~10 µs and a ~1 ms kernel.
// `--write` records them in bench/RESULTS.md.
import { Device, Program, bench, formatDuration, probe } from '../lib/index.js';
import { COPY_SOURCE, copyConfig } from './ncu-child.js';
import { ncuAvailable, ncuCopyMs } from './ncu.js';
import { writeSection } from './results.js';

const p = probe();
if (!p.ok) {
  console.error(`bench:harness needs a CUDA GPU: ${p.reason}`);
  process.exit(1);
}
const device = Device.get(0);
using module = device.loadModule(new Program(COPY_SOURCE).compile());
const copy = module.getKernel('copy', ['ptr', 'ptr', 'i64']);
const cfg = copyConfig(device);
const maxMiB = 2048;
using a = device.alloc(maxMiB * 2 ** 20).fill(1);
using b = device.alloc(maxMiB * 2 ** 20);
const args = (mib: number): [typeof a, typeof b, number] => [a, b, (mib * 2 ** 20) / 16];
const lines: string[] = [];
const say = (s: string): void => {
  console.log(s);
  lines.push(s);
};

say(
  `${new Date().toISOString().slice(0, 10)}, ${device.name} (${device.arch}), driver CUDA ${p.driverVersion}, ` +
    `NVRTC ${p.nvrtcVersion}, Node ${process.version}. ` +
    'Kernel: a grid-stride float4 copy (memory-bound), sizes below are the bytes copied.',
);
say('');
say('### bench() cold median vs Nsight Compute (gpu__time_duration.sum, --cache-control all --clock-control none)');
say('');
say('| copy size | cudakit cold median | ncu | cudakit / ncu | (median − event pair) / ncu |');
say('| ---: | ---: | ---: | ---: | ---: |');
if (ncuAvailable()) {
  let overhead = 0;
  for (const mib of [1, 8, 64, 256, 2048]) {
    const r = await bench(copy, cfg, args(mib), { mode: 'cold' });
    overhead = r.env.eventOverheadMs;
    const ours = r.stats.median;
    const ncu = ncuCopyMs(mib);
    say(
      `| ${mib} MiB | ${formatDuration(ours)} | ${formatDuration(ncu)} | ` +
        `${(ours / ncu).toFixed(3)} | ${((ours - overhead) / ncu).toFixed(3)} |`,
    );
  }
  say('');
  say(
    'The event pair itself (start and stop events with nothing between, queued the same way) ' +
      `takes ${formatDuration(overhead)} of GPU time here; ` +
      "every event-timed sample includes it and Nsight Compute's kernel duration does not, which is " +
      'most of the gap for short kernels. BenchResult.env.eventOverheadMs reports it so callers can subtract it.',
  );
} else {
  say('| — | ncu not found on this machine | | |');
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
