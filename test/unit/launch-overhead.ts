// SPDX-License-Identifier: MIT
// `npx tsx test/unit/launch-overhead.ts`: the host cost that Kernel.launch() adds in JavaScript on top of the native
// call it ends in, measured without a GPU.
//
// A launch is about 4 µs of host time, nearly all of it in native code and the CUDA driver (cuLaunchKernel); that
// part needs a GPU and is measured by `npm run bench`. What a contributor changes in lib/core/kernel.ts and
// lib/core/args.ts is the JavaScript part in front of it: validating the config (known keys, grid, block, shared
// memory, stream), the lost-context and disposed checks, and packing the arguments into the slot buffer. That part
// is a few tens of nanoseconds, too small to see next to the driver's jitter, so it is measured here on its own:
//
//   - the addon is loaded (it loads without CUDA) and the Native methods a Kernel calls are replaced: the slot and
//     function-attribute calls by JavaScript stubs, launchKernel by the addon's nop(), an N-API call that does
//     nothing. The launch therefore still crosses into native code once, as a real one does, and no driver is called.
//   - a real Device, Kernel, Stream and DeviceBuffer are built over the stubs and a stand-in module (as
//     test/unit/kernel.test.ts builds its Kernel over vi.mock), so every check on the launch path runs as on a GPU.
//
// Cases, each timed as ns per call, the median of several batches of 1e6 calls after warm-up:
//   (a) native.launchKernel(slot) alone, through the same Native object: the floor.
//   (b) kernel.launch(cfg) of a kernel without parameters, cfg one object { grid: 1, block: 1, stream } reused;
//   (c) the same with a ['ptr', 'f32', 'i32'] kernel and (buffer, 1.5, 1024), buffer a DeviceBuffer;
//   (d) as (c), with a fresh config object literal at every call;
//   (e), (f) as (b) and (c), with a frozen config (Object.freeze), which a Kernel checks once and then keeps.
// (b)-(f) minus (a) is what Kernel.launch() adds. Every case is warmed up before any is timed and the batches are
// interleaved, so all of them run with the type feedback a program launching several kernels would give launch().
// `--shapes` first launches with configs of several shapes (other keys, other key orders), as a program with many
// launch sites does: property lookups on the config then see more shapes than V8 specializes for (megamorphic).
//
// Numbers vary with the CPU and Node version; compare runs on one machine, and on a noisy one (a VM with other
// work) compare the min columns too. `--batches N` (default 15). Run it from the repository, as above: tsx keeps
// these files ES modules there, as the built dist/ is.
import { Device } from '../../lib/core/device.js';
import { DeviceBuffer } from '../../lib/core/memory.js';
import { Kernel, type LaunchConfig } from '../../lib/core/kernel.js';
import { INTERNAL } from '../../lib/core/lifetime.js';
import type { Module } from '../../lib/core/module.js';
import { getNative, type Native } from '../../lib/core/native.js';
import { Stream } from '../../lib/core/stream.js';

const CALLS = 1_000_000;
const WARMUP_BATCHES = 3;
const batchesArg = process.argv.indexOf('--batches');
const BATCHES = batchesArg > 0 ? Number(process.argv[batchesArg + 1]) : 15;
const SHAPES = process.argv.includes('--shapes');

// The addon, with everything a Device and a Kernel ask of the driver stubbed out (see the header comment).
const native: Native = getNative();
const DEVICE_ATTRIBUTES = new Map([
  [1, 1024], // MAX_THREADS_PER_BLOCK
  [2, 1024], // MAX_BLOCK_DIM_X, Y, Z
  [3, 1024],
  [4, 64],
  [5, 2 ** 31 - 1], // MAX_GRID_DIM_X, Y, Z
  [6, 65535],
  [7, 65535],
  [97, 227 * 1024], // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
]);
Object.assign(native, {
  devicePrimaryCtxRetain: () => 1n,
  deviceGetAttribute: (_device: number, id: number) => DEVICE_ATTRIBUTES.get(id) ?? 0,
  funcGetParamInfo: () => null, // no driver parameter info: offsets come from the signature
  funcGetAttribute: (_ctx: bigint, _fn: bigint, id: number) => (id === 0 ? 1024 : id === 8 ? 48 * 1024 : 0),
  kernelSlotCreate: () => 1,
  kernelSlotDestroy: () => {},
  launchKernel: native.nop,
} satisfies Partial<Native>);

const device = new Device(INTERNAL, 0, 0);
const module = { device, disposed: false } as unknown as Module;
const stream = new Stream(INTERNAL, device, 0x5000n, false, false, 0); // borrowed: never destroyed
const buffer = DeviceBuffer.fromPointer(0x7000_0000n, 4096, device);

const empty = new Kernel(INTERNAL, module, 2n, 'empty', []);
const axpy = new Kernel(INTERNAL, module, 3n, 'axpy', ['ptr', 'f32', 'i32']);
const cfg: LaunchConfig = { grid: 1, block: 1, stream };
const frozen: LaunchConfig = Object.freeze({ grid: 1, block: 1, stream });

/** Each case: one batch of CALLS calls. Separate functions, so each loop is optimized on its own. */
const cases: { name: string; run: () => void }[] = [
  {
    name: '(a) native.launchKernel(slot) (no-op)',
    run: () => {
      const n = native;
      for (let i = 0; i < CALLS; i++) n.launchKernel(1);
    },
  },
  {
    name: '(b) empty kernel, reused config',
    run: () => {
      for (let i = 0; i < CALLS; i++) empty.launch(cfg);
    },
  },
  {
    name: "(c) ['ptr', 'f32', 'i32'], reused config",
    run: () => {
      for (let i = 0; i < CALLS; i++) axpy.launch(cfg, buffer, 1.5, 1024);
    },
  },
  {
    name: "(d) ['ptr', 'f32', 'i32'], fresh config",
    run: () => {
      for (let i = 0; i < CALLS; i++) axpy.launch({ grid: 1, block: 1, stream }, buffer, 1.5, 1024);
    },
  },
  {
    name: '(e) empty kernel, frozen config',
    run: () => {
      for (let i = 0; i < CALLS; i++) empty.launch(frozen);
    },
  },
  {
    name: "(f) ['ptr', 'f32', 'i32'], frozen config",
    run: () => {
      for (let i = 0; i < CALLS; i++) axpy.launch(frozen, buffer, 1.5, 1024);
    },
  },
];

const median = (v: readonly number[]): number => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

if (SHAPES) {
  const shapes: LaunchConfig[] = [
    { grid: 1, block: 1 },
    { block: 1, grid: 1 },
    { grid: 1, block: 1, sharedMemBytes: 0 },
    { grid: 1, block: 1, sharedMemBytes: 0, stream },
    { stream, grid: 1, block: 1 },
    { grid: [1, 1], block: 1, stream },
    { grid: 1, block: [1], cooperative: false },
  ];
  for (let i = 0; i < 20_000; i++) {
    for (const shape of shapes) {
      empty.launch(shape);
      axpy.launch(shape, buffer, 1.5, 1024);
    }
  }
}

const samples = cases.map((): number[] => []);
for (let round = 0; round < WARMUP_BATCHES + BATCHES; round++) {
  cases.forEach((c, i) => {
    const t0 = process.hrtime.bigint();
    c.run();
    const ns = Number(process.hrtime.bigint() - t0) / CALLS;
    if (round >= WARMUP_BATCHES) samples[i]!.push(ns);
  });
}

const floor = median(samples[0]!);
const floorMin = Math.min(...samples[0]!);
const shapes = SHAPES ? ', configs of several shapes first' : '';
console.log(`Kernel.launch() host overhead, Node ${process.version}, ${BATCHES} batches of ${CALLS} calls${shapes}`);
console.log('');
const head = ['ns/call', 'min', 'max', '- (a)', 'min - (a)'];
console.log(`${'case'.padEnd(42)} ${head.map((h, j) => h.padStart(j === 0 ? 8 : j === 4 ? 10 : 7)).join(' ')}`);
cases.forEach((c, i) => {
  const s = samples[i]!;
  const [m, lo, hi] = [median(s), Math.min(...s), Math.max(...s)];
  const over = i === 0 ? ['', ''] : [(m - floor).toFixed(1), (lo - floorMin).toFixed(1)];
  const row = [m, lo, hi].map((x, j) => x.toFixed(1).padStart(j === 0 ? 8 : 7)).join(' ');
  console.log(`${c.name.padEnd(42)} ${row} ${over[0]!.padStart(7)} ${over[1]!.padStart(10)}`);
});
