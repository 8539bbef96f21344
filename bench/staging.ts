// SPDX-License-Identifier: MIT
// Tuning aid for staged pageable copies: GB/s for 256 MiB over chunk sizes and helper-thread counts.
//   npx tsx bench/staging.ts
import { availableParallelism } from 'node:os';
import { Device, native } from '../lib/index.js';

const device = Device.get(0);
const bytes = 256 << 20;
using dev = device.alloc(bytes);
const host = new Uint8Array(bytes).fill(1);
const n = native();
const nowUs = (): number => Number(process.hrtime.bigint()) / 1e3;
const median = (v: number[]): number => [...v].sort((a, b) => a - b)[v.length >> 1]!;
console.log(`cores: ${availableParallelism()}`);
console.log('chunk MiB | threads | H2D GB/s | D2H GB/s');
for (const chunk of [2, 4, 8]) {
  for (const threads of [2, 4, 6, 8, 12]) {
    const h2d: number[] = [];
    const d2h: number[] = [];
    for (let i = 0; i < 6; i++) {
      const t0 = nowUs();
      n.memcpyHtoDStaged(device.ctx, dev.ptr, host, 0n, chunk << 20, threads);
      const t1 = nowUs();
      n.memcpyDtoHStaged(device.ctx, host, dev.ptr, 0n, chunk << 20, threads);
      const t2 = nowUs();
      if (i > 0) {
        h2d.push(bytes / ((t1 - t0) * 1e3));
        d2h.push(bytes / ((t2 - t1) * 1e3));
      }
    }
    console.log(`${chunk} | ${threads} | ${median(h2d).toFixed(1)} | ${median(d2h).toFixed(1)}`);
  }
}
