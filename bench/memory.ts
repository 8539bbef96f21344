// SPDX-License-Identifier: MIT
// `npm run bench:memory` (node --expose-gc): how much device memory the process keeps after the sequences that used
// to keep it (a failed allocation, a large buffer disposed, buffers left to the garbage collector), under the
// pool's bounded cache and under an unbounded one (the behaviour before the cache was bounded), and the cost of
// alloc / free cycles per cache limit, which is what the default limit is chosen from.
// `--write` records the figures in bench/RESULTS.md.
import { writeSection } from './results.js';
import { CudaError, DEFAULT_POOL_CACHE_LIMIT_BYTES, Device, native, probe } from '../lib/index.js';

const MiB = 1 << 20;
const GiB = 1 << 30;
const UNBOUNDED = Number.MAX_SAFE_INTEGER;
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error('bench:memory needs --expose-gc (npm run bench:memory passes it)');
  process.exit(1);
}

const p = probe();
if (!p.ok) {
  console.error(`bench:memory: needs a CUDA GPU: ${p.reason}`);
  process.exit(1);
}
const device = Device.get(0);
if (!device.usesMemoryPools) {
  console.error('bench:memory: this device has no stream-ordered memory pools; nothing to measure');
  process.exit(1);
}
const nowUs = (): number => Number(process.hrtime.bigint()) / 1e3;
const median = (v: number[]): number => [...v].sort((a, b) => a - b)[v.length >> 1]!;

/** Free device memory after a synchronize, in bytes. */
function freeAfterSync(): number {
  device.synchronize();
  return device.memoryInfo().freeBytes;
}

/** Starts every sequence from the same state: nothing cached. */
function reset(threshold: number): number {
  device.setPoolCacheLimit(threshold);
  device.synchronize();
  device.trimMemory();
  return device.memoryInfo().freeBytes;
}

async function collectGarbage(): Promise<void> {
  gc!();
  // finalizers run in tasks of their own
  for (let turn = 0; turn < 20; turn++) await new Promise((r) => setImmediate(r));
}

type Sequence = { name: string; run: (before: boolean) => Promise<void> | void };
const sequences: Sequence[] = [
  {
    name: 'failed allocation of free + 1 GiB',
    run: (before) => {
      const bytes = device.memoryInfo().freeBytes + GiB;
      try {
        // Before: the allocation as it was made, with no trim and no retry (the raw layer's cuMemAllocAsync).
        if (before) native().memAllocAsync(device.ctx, bytes, 0n);
        else device.alloc(bytes);
        throw new Error('bench:memory: the oversized allocation succeeded');
      } catch (e) {
        if (!(e instanceof CudaError) || e.code !== 'CUDA_ERROR_OUT_OF_MEMORY') throw e;
      }
    },
  },
  {
    name: '20 GiB allocated and disposed',
    run: () => {
      device
        .alloc(20 * GiB)
        .fill(0)
        .dispose();
    },
  },
  {
    name: '100 000 × 1 MiB left to the garbage collector (yielding every 1000)',
    run: async () => {
      for (let batch = 0; batch < 100; batch++) {
        for (let i = 0; i < 1000; i++) device.alloc(MiB).fill(0, { elementBytes: 4 });
        await new Promise((r) => setImmediate(r));
      }
      await collectGarbage();
    },
  },
];

const rows: string[] = [];
const gib = (bytes: number): string => (bytes / GiB).toFixed(3);
for (const s of sequences) {
  const figures: string[] = [];
  for (const before of [true, false]) {
    const start = reset(before ? UNBOUNDED : DEFAULT_POOL_CACHE_LIMIT_BYTES);
    await s.run(before);
    const end = freeAfterSync();
    figures.push(`${gib(start)} → ${gib(end)} GiB (${((start - end) / MiB).toFixed(0)} MiB held)`);
  }
  rows.push(`| ${s.name} | ${figures[0]} | ${figures[1]} |`);
}

// Explicit dispose in a loop: cost per cycle and drift.
reset(DEFAULT_POOL_CACHE_LIMIT_BYTES);
const driftStart = device.memoryInfo().freeBytes;
for (let i = 0; i < 1000; i++) device.alloc(MiB).dispose();
const t0 = nowUs();
for (let i = 0; i < 100_000; i++) device.alloc(MiB).dispose();
const disposeUs = (nowUs() - t0) / 100_000;
const drift = driftStart - freeAfterSync();

// alloc / fill / dispose / synchronize cycles per cache limit, with 1 GiB live throughout: the cost of giving memory
// back at every synchronize.
const thresholds: [string, number][] = [
  ['0', 0],
  [`${DEFAULT_POOL_CACHE_LIMIT_BYTES / MiB} MiB (default)`, DEFAULT_POOL_CACHE_LIMIT_BYTES],
  ['unbounded', UNBOUNDED],
];
const live = device.alloc(GiB);
const sizes = [1, 16, 64, 256];
const stream = device.createStream();
const cycleRows: string[] = [];
for (const [label, threshold] of thresholds) {
  const cells: string[] = [];
  for (const mib of sizes) {
    reset(threshold);
    const cycle = (): void => {
      const b = device.alloc(mib * MiB, { stream });
      b.fill(1, { stream });
      b.dispose();
      stream.synchronize();
    };
    for (let i = 0; i < 20; i++) cycle();
    const us: number[] = [];
    for (let r = 0; r < 5; r++) {
      const n = mib >= 256 ? 40 : 200;
      const t = nowUs();
      for (let i = 0; i < n; i++) cycle();
      us.push((nowUs() - t) / n);
    }
    cells.push(`${median(us).toFixed(1)} µs`);
  }
  cycleRows.push(`| ${label} | ${cells.join(' | ')} |`);
}
stream.dispose();
live.dispose();
reset(DEFAULT_POOL_CACHE_LIMIT_BYTES);

const context =
  `${new Date().toISOString().slice(0, 10)}, ${device.name} (${device.arch}), ${gib(device.totalMemoryBytes)} GiB, ` +
  `driver CUDA ${p.driverVersion}, Node ${process.version}`;
const table1 = [
  '| sequence | unbounded cache, no trim on failure (before) | bounded cache, trim + retry on failure (now) |',
  '| --- | --- | --- |',
  ...rows,
].join('\n');
const table2 = [
  `| cache limit | ${sizes.map((m) => `${m} MiB`).join(' | ')} |`,
  `| --- | ${sizes.map(() => '---:').join(' | ')} |`,
  ...cycleRows,
].join('\n');
const text =
  `## Device memory\n\n${context}.\n\n` +
  'Free device memory (after a synchronize) before and after each sequence, each started with an empty pool:\n\n' +
  `${table1}\n\n` +
  'Explicit dispose() in a loop (100 000 × alloc(1 MiB) + dispose, no synchronize): ' +
  `${disposeUs.toFixed(2)} µs a cycle, ` +
  `${(drift / MiB).toFixed(0)} MiB drift.\n\n` +
  "alloc + fill + dispose + synchronize, per cycle, with 1 GiB live throughout, by the pool's cache limit (what " +
  'it may keep cached beyond live memory across a synchronize):\n\n' +
  `${table2}\n\n` +
  'A cycle whose buffer fits in the cache reuses cached memory; a larger one maps fresh memory from the driver ' +
  'after every synchronize. The default limit keeps cycles of up to its size at the unbounded cost while every ' +
  'larger buffer goes back to the driver for other processes; `device.setPoolCacheLimit(bytes)` raises it for ' +
  'loops of larger buffers.\n';
console.log(`\n${text}`);
if (process.argv.includes('--write')) writeSection('memory', text);
