// SPDX-License-Identifier: MIT
// A launch loop to profile (bench/profile-launch.sh runs it under perf): an empty kernel enqueued in batches of 1000,
// synchronized between batches, for `seconds` (default 3) through Kernel.launch, then as long through the raw
// layer's native().launchKernel(slot). Prints the median µs per launch of each.
//   node --perf-basic-prof --import tsx bench/launch-loop.ts [seconds]
import { Device, Program, native } from '../lib/index.js';

const seconds = Number(process.argv[2] ?? '3');
const device = Device.get(0);
using module = device.loadModule(new Program('extern "C" __global__ void empty() {}').compile());
const empty = module.getKernel('empty', []);
using stream = device.createStream();
const cfg = { grid: 1, block: 1, stream };
const n = native();
const slotBuffer = new ArrayBuffer(72);
new Uint32Array(slotBuffer, 0, 6).set([1, 1, 1, 1, 1, 1]);
new BigUint64Array(slotBuffer, 0, 5)[4] = stream.handle;
const rawSlot = n.kernelSlotCreate(device.ctx, empty.handle, slotBuffer, []);

function loop(name: string, launch: () => void): void {
  const per: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) launch();
    per.push(performance.now() - t0); // ms per 1000 = µs per launch
    stream.synchronize();
  }
  per.sort((a, b) => a - b);
  console.log(`${name}: ${per[per.length >> 1]!.toFixed(3)} µs per launch (${per.length} batches)`);
}
loop('Kernel.launch', () => empty.launch(cfg));
loop('native().launchKernel', () => n.launchKernel(rawSlot));
n.kernelSlotDestroy(rawSlot);
