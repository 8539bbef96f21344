// SPDX-License-Identifier: MIT
// `npm run bench`: cudakit's core costs side by side with a C baseline (bench/native/baseline.c) built and run
// alongside it on the same GPU, then, where there are two GPUs, copies between them and both running at once. Speed
// is measured here, never in tests. `--write` records bench/RESULTS.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { writeSection } from './results.js';
import { Device, Event, Program, clearMemoryCache, freeHost, native, nvrtcVersion, probe } from '../lib/index.js';

const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..');

// Kept identical to COMPILE_SOURCE in bench/native/baseline.c.
export const COMPILE_SOURCE =
  'template <typename T> __global__ void axpy(T a, const T* x, T* y, int n) {\n' +
  '  int i = blockIdx.x * blockDim.x + threadIdx.x;\n' +
  '  if (i < n) y[i] = a * x[i] + y[i];\n' +
  '}\n' +
  'extern "C" __global__ void empty() {}\n' +
  'template __global__ void axpy<float>(float, const float*, float*, int);\n' +
  'template __global__ void axpy<double>(double, const double*, double*, int);\n';

const median = (v: number[]): number => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const nowUs = (): number => Number(process.hrtime.bigint()) / 1e3;

type Sample = Record<string, number>;

/**
 * One round of the C baseline: a fresh process runs every command and exits. A process per round (not one kept
 * alive) matters: a second CUDA context on the GPU, even idle, slows multi-stream copies in the other process.
 */
function baselineRound(exe: string, flags: readonly string[], commands: readonly string[]): Sample {
  const out = execFileSync(exe, [...flags], { input: `${commands.join('\n')}\nquit\n`, encoding: 'utf8' });
  const sample: Sample = {};
  for (const line of out.trim().split('\n')) Object.assign(sample, JSON.parse(line) as Sample);
  return sample;
}

interface Baseline {
  /** The C program (baseline.c), run in a process of its own each round. */
  exe: string;
  /** The C launch loop in this process (enqueue-lib.c through koffi): µs per launch of `count` launches. */
  enqueueUs: (fn: bigint, stream: bigint, count: number) => number;
  /** One cuLaunchKernel through koffi (enqueue-lib.c): the CUresult. */
  launchOnce: (fn: bigint, stream: bigint) => number;
  /** A C function that does nothing, through koffi: what a koffi call costs alone. */
  nothing: () => number;
}

function buildBaseline(): Baseline {
  const cuda = [process.env.CUDA_PATH, process.env.CUDA_HOME, '/usr/local/cuda'].find(
    (d) => d && existsSync(join(d, 'include', 'cuda.h')),
  );
  if (cuda === undefined)
    throw new Error('bench: no CUDA toolkit (cuda.h) found to build the C baseline; set CUDA_PATH');
  const out = join(here, 'native', 'out');
  mkdirSync(out, { recursive: true });
  const exe = join(out, 'baseline');
  const lib = existsSync(join(cuda, 'lib64')) ? join(cuda, 'lib64') : join(cuda, 'lib');
  // Link the very libnvrtc cudakit loaded (it may not be the toolkit's), so both sides compile with the same one.
  const nvrtc = native().nvrtcStatus().path;
  execFileSync(
    'cc',
    [
      '-O2',
      `-I${cuda}/include`,
      join(here, 'native', 'baseline.c'),
      `-L${lib}`,
      `-L${lib}/stubs`,
      '-lcuda',
      nvrtc,
      `-Wl,-rpath,${dirname(nvrtc)}`,
      '-ldl',
      '-o',
      exe,
    ],
    { stdio: 'inherit' },
  );
  // A copy of the same NVRTC for the baseline's dlopen variant (a copy, so it loads as a separate instance).
  const copy = join(out, 'libnvrtc-copy.so');
  copyFileSync(nvrtc, copy);
  process.env.BASELINE_NVRTC_COPY = copy;

  const so = join(out, 'libenqueue.so');
  const source = join(here, 'native', 'enqueue-lib.c');
  execFileSync('cc', ['-O2', '-shared', '-fPIC', `-I${cuda}/include`, source, `-L${lib}/stubs`, '-lcuda', '-o', so], {
    stdio: 'inherit',
  });
  type Koffi = { load(path: string): { func(prototype: string): (...args: unknown[]) => unknown } };
  let koffi: Koffi;
  try {
    // koffi (a dev dependency) loads the C loop; required here, not imported, so the message below can say so.
    koffi = createRequire(import.meta.url)('koffi') as Koffi;
  } catch (e) {
    throw new Error(`bench: koffi, the FFI library the in-process C baseline is loaded with, is missing: npm install`, {
      cause: e,
    });
  }
  const enqueueLib = koffi.load(so);
  const enqueue = enqueueLib.func('double baseline_enqueue_us(uint64_t fn, uint64_t stream, int count)');
  const launchOnce = enqueueLib.func('int baseline_launch_once(uint64_t fn, uint64_t stream)') as (
    fn: bigint,
    stream: bigint,
  ) => number;
  const enqueueUs = (fn: bigint, stream: bigint, count: number): number => {
    const us = enqueue(fn, stream, count) as number;
    if (us < 0) throw new Error(`bench: cuLaunchKernel failed in the C loop with CUresult ${-1 - us}`);
    return us;
  };
  const nothing = enqueueLib.func('int baseline_nothing()') as () => number;
  return { exe, enqueueUs, launchOnce, nothing };
}

// y = a * x + y over 64M floats: 768 MiB of memory traffic per launch, for the two-GPU concurrency rows.
const TRIAD =
  'extern "C" __global__ void triad(float a, const float* x, float* y, int n) {\n' +
  '  int i = blockIdx.x * blockDim.x + threadIdx.x;\n' +
  '  if (i < n) y[i] = a * x[i] + y[i];\n' +
  '}\n';

interface TwoGpuFigures {
  /** Markdown: the table, or the line saying why there is none. */
  text: string;
  figures: Record<string, number | string>;
}

/**
 * Devices 0 and 1, where there are two: copyFrom() bandwidth between them both ways, through host memory and, where
 * the devices allow it, peer to peer; and one stream per device running at once, each device's wall time to finish
 * against its time alone. The host copies are measured first: peer access, once enabled, stays for the process.
 */
async function twoGpus(): Promise<TwoGpuFigures> {
  const count = Device.count();
  if (count < 2) {
    return {
      text: `Two-GPU rows skipped: this machine has ${count} GPU${count === 1 ? '' : 's'} (they need two).`,
      figures: {},
    };
  }
  const [d0, d1] = [Device.get(0), Device.get(1)];
  const bytes = 256 << 20;
  const figures: Record<string, number | string> = {};
  const rows: [metric: string, unit: string, value: string, target: string, met: string][] = [];
  const fmt = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

  const copyRow = (from: Device, to: Device): void => {
    using src = from.alloc(bytes).fill(1);
    using dst = to.alloc(bytes);
    let via = dst.copyFrom(src).via; // warm-up: staging threads, peer mappings
    const rates: number[] = [];
    for (let i = 0; i < 5; i++) {
      from.synchronize();
      to.synchronize();
      const t0 = nowUs();
      via = dst.copyFrom(src).via;
      to.synchronize(); // a copy between devices may return before it ends
      rates.push(bytes / ((nowUs() - t0) * 1e3));
    }
    const gbs = median(rates);
    figures[`copy${from.ordinal}to${to.ordinal}_${via}GBs`] = gbs;
    const how = via === 'peer' ? 'peer to peer' : 'through host memory';
    rows.push([`copyFrom 256 MiB, device ${from.ordinal} → ${to.ordinal}, ${how}`, 'GB/s', fmt(gbs), '—', '—']);
  };
  const pairs: [from: Device, to: Device][] = [
    [d0, d1],
    [d1, d0],
  ];
  for (const [from, to] of pairs) copyRow(from, to);
  for (const [from, to] of pairs) {
    if (to.canAccessPeer(from)) {
      to.enablePeerAccess(from);
      copyRow(from, to);
    } else {
      const metric = `copyFrom 256 MiB, device ${from.ordinal} → ${to.ordinal}, peer to peer`;
      rows.push([metric, 'GB/s', '—', `not possible: device ${to.ordinal} cannot access device ${from.ordinal}`, '—']);
    }
  }

  // One stream per device: LAUNCHES triad launches each, alone and then both devices at once (enqueued alternately,
  // so both start together); wall time from the first enqueue to the end of the device's own work.
  const n = 64 << 20;
  const LAUNCHES = 200;
  const program = new Program(TRIAD, { name: 'triad.cu' });
  const work = [d0, d1].map((d) => {
    const module = d.loadModule(program.compile({ arch: d.arch }));
    return {
      device: d,
      module,
      triad: module.getKernel('triad', ['f32', 'ptr', 'ptr', 'i32']),
      stream: d.createStream({ nonBlocking: true }),
      x: d.allocArray(Float32Array, n).fill(1),
      y: d.allocArray(Float32Array, n).fill(0),
    };
  });
  const enqueue = (w: (typeof work)[number]): void =>
    w.triad.launch({ grid: n / 256, block: 256, stream: w.stream }, 0.5, w.x, w.y, n);
  const run = async (which: (typeof work)[number][]): Promise<number[]> => {
    for (const w of which) w.device.synchronize();
    const t0 = nowUs();
    for (let i = 0; i < LAUNCHES; i++) for (const w of which) enqueue(w);
    return Promise.all(which.map((w) => w.stream.synchronizeAsync().then(() => (nowUs() - t0) / 1e3)));
  };
  await run(work); // warm-up
  const alone: number[][] = [[], []];
  const together: number[][] = [[], []];
  for (let r = 0; r < 7; r++) {
    for (const w of work) alone[w.device.ordinal]!.push((await run([w]))[0]!);
    const both = await run(work);
    for (const w of work) together[w.device.ordinal]!.push(both[w.device.ordinal]!);
  }
  for (const w of work) {
    const k = w.device.ordinal;
    const [a, t] = [median(alone[k]!), median(together[k]!)];
    const ratio = median(together[k]!.map((v, i) => v / alone[k]![i]!));
    Object.assign(figures, {
      [`concurrent${k}AloneMs`]: a,
      [`concurrent${k}TogetherMs`]: t,
      [`concurrent${k}Ratio`]: ratio,
    });
    rows.push([
      `both devices at once: device ${k}'s time over its time alone (${fmt(t)} / ${fmt(a)} ms)`,
      '×',
      ratio.toFixed(3),
      '≤ 1.10×',
      ratio <= 1.1 ? 'yes' : '**no**',
    ]);
    w.x.dispose();
    w.y.dispose();
    w.stream.dispose();
    w.module.dispose();
  }
  const peers = pairs.map(([from, to]) => `${to.ordinal} → ${from.ordinal}: ${to.canAccessPeer(from) ? 'yes' : 'no'}`);
  const table = [
    '| metric | unit | cudakit | target | met |',
    '| --- | --- | ---: | --- | --- |',
    ...rows.map((cells) => `| ${cells.join(' | ')} |`),
  ].join('\n');
  const text =
    `Devices 0 (${d0.name}) and 1 (${d1.name}); peer access possible (device → memory of) ${peers.join(', ')}.\n\n` +
    `${table}\n\n` +
    'Copies are medians of 5, timed until the destination device is idle; "through host memory" is copyFrom() ' +
    'without peer access (into a new host array, then out of it, staged as copyToHost and copyFromHost stage large ' +
    `copies). The concurrency rows are medians of 7 rounds of ${LAUNCHES} launches of a 64M-float triad per device, ` +
    'each round alone on each device, then on both at once; the ratio is the median of the per-round ratios.';
  return { text, figures };
}

async function main(): Promise<void> {
  const p = probe();
  if (!p.ok) {
    console.error(`bench: needs a CUDA GPU: ${p.reason}`);
    process.exit(1);
  }
  const device = Device.get(0);
  const arch = device.arch;
  const program = new Program(COMPILE_SOURCE, { name: 'bench.cu' });
  const code = program.compile({ arch, cache: false });
  const baseline = buildBaseline();

  using module = device.loadModule(code);
  const empty = module.getKernel('empty', []);
  using stream = device.createStream();
  const cfg = { grid: 1, block: 1, stream };
  // A frozen config is checked at its first launches and then kept by the kernel (lib/core/kernel.ts).
  const frozenCfg = Object.freeze({ grid: 1, block: 1, stream });
  for (let i = 0; i < 2000; i++) empty.launch(cfg);
  for (let i = 0; i < 2000; i++) empty.launch(frozenCfg);
  stream.synchronize();

  // The raw layer's launch, for the breakdown: a slot of our own for the same function, then native calls only.
  const n = native();
  const slotBuffer = new ArrayBuffer(72);
  new Uint32Array(slotBuffer, 0, 6).set([1, 1, 1, 1, 1, 1]);
  new BigUint64Array(slotBuffer, 0, 5)[4] = stream.handle;
  const rawSlot = n.kernelSlotCreate(device.ctx, empty.handle, slotBuffer, []);

  stream.beginCapture();
  for (let i = 0; i < 100; i++) empty.launch(cfg);
  using graph = stream.endCapture();
  using exec = graph.instantiate();
  for (let i = 0; i < 5; i++) exec.launch(stream);

  const bytes = 256 << 20;
  const gbs = (us: number): number => bytes / (us * 1e3);

  // µs per launch of batches of 1000, the three sides interleaved batch by batch (the order rotating), so that the
  // host's slow moments, which last longer than a batch, fall on all three alike.
  // Each loop written out, so neither pays for a call site shared with the other.
  const BATCH = 1000;
  const enqueueSides: Record<string, () => number> = {
    launchEnqueueInProcessCUs: () => baseline.enqueueUs(empty.handle, stream.handle, BATCH),
    rawLaunchEnqueueUs: () => {
      const t0 = nowUs();
      for (let i = 0; i < BATCH; i++) n.launchKernel(rawSlot);
      return (nowUs() - t0) / BATCH;
    },
    launchEnqueueUs: () => {
      const t0 = nowUs();
      for (let i = 0; i < BATCH; i++) empty.launch(cfg);
      return (nowUs() - t0) / BATCH;
    },
    frozenLaunchEnqueueUs: () => {
      const t0 = nowUs();
      for (let i = 0; i < BATCH; i++) empty.launch(frozenCfg);
      return (nowUs() - t0) / BATCH;
    },
    // The same cuLaunchKernel as C's loop, one call from JavaScript per launch through koffi (a general FFI).
    koffiLaunchEnqueueUs: () => {
      const { launchOnce } = baseline;
      const fn = empty.handle;
      const s = stream.handle;
      const t0 = nowUs();
      for (let i = 0; i < BATCH; i++) {
        const status = launchOnce(fn, s);
        if (status !== 0) throw new Error(`bench: cuLaunchKernel failed through koffi with CUresult ${status}`);
      }
      return (nowUs() - t0) / BATCH;
    },
    // One more crossing into native code per launch (an empty N-API call): what any call between two launches
    // costs there, against its cost alone (napiCallNs).
    rawNopLaunchEnqueueUs: () => {
      const t0 = nowUs();
      for (let i = 0; i < BATCH; i++) {
        n.nop();
        n.launchKernel(rawSlot);
      }
      return (nowUs() - t0) / BATCH;
    },
  };
  const ours: Record<string, () => Sample | Promise<Sample>> = {
    compile: async () => {
      const ms: number[] = [];
      const nvrtcMs: number[] = [];
      const asyncMs: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t0 = nowUs();
        const c = program.compile({ arch, cache: false });
        ms.push((nowUs() - t0) / 1e3);
        nvrtcMs.push(c.compileMs!);
      }
      for (let i = 0; i < 3; i++) {
        const t0 = nowUs();
        await program.compileAsync({ arch, cache: false });
        asyncMs.push((nowUs() - t0) / 1e3);
      }
      return { compileColdMs: median(ms), compileNvrtcMs: median(nvrtcMs), compileAsyncMs: median(asyncMs) };
    },
    enqueue: () => {
      const keys = Object.keys(enqueueSides);
      const per: Record<string, number[]> = Object.fromEntries(keys.map((k) => [k, []]));
      for (let b = 0; b < 30; b++) {
        for (let j = 0; j < keys.length; j++) {
          const key = keys[(b + j) % keys.length]!;
          per[key]!.push(enqueueSides[key]!());
          stream.synchronize();
        }
      }
      return Object.fromEntries(keys.map((k) => [k, median(per[k]!)]));
    },
    trip: async () => {
      const sync: number[] = [];
      const asyncTrip: number[] = [];
      for (let b = 0; b < 20; b++) {
        // batches of 50, so reading the clock does not count
        const t0 = nowUs();
        for (let i = 0; i < 50; i++) {
          empty.launch(cfg);
          stream.synchronize();
        }
        sync.push((nowUs() - t0) / 50);
      }
      for (let i = 0; i < 1000; i++) {
        const t0 = nowUs();
        empty.launch(cfg);
        await stream.synchronizeAsync();
        asyncTrip.push(nowUs() - t0);
      }
      return { roundTripUs: median(sync), asyncRoundTripUs: median(asyncTrip) };
    },
    graph: () => {
      const us: number[] = [];
      for (let k = 0; k < 10; k++) {
        const e0 = stream.record();
        for (let r = 0; r < 20; r++) exec.launch(stream);
        const e1 = stream.record();
        us.push((Event.elapsedMs(e0, e1) * 1e3) / (20 * 100));
        e0.dispose();
        e1.dispose();
      }
      return { graphPerKernelUs: median(us) };
    },
    module: () => {
      // Batches of 20, as on the C side: load + dispose, load + getKernel + dispose, and the raw layer's pair.
      const plain: number[] = [];
      const withKernel: number[] = [];
      const raw: number[] = [];
      for (let b = 0; b < 15; b++) {
        const t0 = nowUs();
        for (let i = 0; i < 20; i++) device.loadModule(code).dispose();
        const t1 = nowUs();
        for (let i = 0; i < 20; i++) {
          const m = device.loadModule(code);
          m.getKernel('empty', []);
          m.dispose();
        }
        const t2 = nowUs();
        for (let i = 0; i < 20; i++) n.moduleUnload(n.moduleLoadData(device.ctx, code.bytes, [])[0]);
        const t3 = nowUs();
        plain.push((t1 - t0) / 20);
        withKernel.push((t2 - t1) / 20);
        raw.push((t3 - t2) / 20);
      }
      return {
        moduleLoadUnloadUs: median(plain),
        moduleLoadKernelUnloadUs: median(withKernel),
        rawModuleLoadUnloadUs: median(raw),
      };
    },
    copy: () => {
      // Buffers live only for this metric (as in the C side's command), so 768 MiB of memory that V8 is told about
      // does not add garbage-collection pressure to the other metrics.
      using dev = device.alloc(bytes);
      const pinned = device.allocHost(Uint8Array, bytes).fill(1);
      const pageable = new Uint8Array(bytes).fill(1);
      const c = {
        h2dPinnedGBs: [] as number[],
        d2hPinnedGBs: [] as number[],
        h2dPageableGBs: [] as number[],
        d2hPageableGBs: [] as number[],
      };
      for (let i = 0; i < 3; i++) {
        const t0 = nowUs();
        dev.copyFromHost(pinned);
        const t1 = nowUs();
        dev.copyToHost(pinned);
        const t2 = nowUs();
        dev.copyFromHost(pageable);
        const t3 = nowUs();
        dev.copyToHost(pageable);
        const t4 = nowUs();
        c.h2dPinnedGBs.push(gbs(t1 - t0));
        c.d2hPinnedGBs.push(gbs(t2 - t1));
        c.h2dPageableGBs.push(gbs(t3 - t2));
        c.d2hPageableGBs.push(gbs(t4 - t3));
      }
      freeHost(pinned);
      return Object.fromEntries(Object.entries(c).map(([k, v]) => [k, median(v)]));
    },
  };

  // Interleaved rounds, alternating which side goes first (ABBA), so drift and clock state hit both alike.
  const ROUNDS = 9;
  const cSide: Record<string, number[]> = {};
  const jsSide: Record<string, number[]> = {};
  const collect = (into: Record<string, number[]>, s: Sample): void => {
    for (const [k, v] of Object.entries(s)) if (k !== 'ready') (into[k] ??= []).push(v);
  };
  const commands = [...Object.keys(ours), 'enqueue-procaddress', 'compile-dlopen', 'ctx'];
  const oursRound = async (): Promise<void> => {
    for (const metric of Object.keys(ours)) collect(jsSide, await ours[metric]!());
  };
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      collect(cSide, baselineRound(baseline.exe, code.options, commands));
      await oursRound();
    } else {
      await oursRound();
      collect(cSide, baselineRound(baseline.exe, code.options, commands));
    }
  }
  n.kernelSlotDestroy(rawSlot);
  const C = (k: string): number => median(cSide[k]!);
  const JS = (k: string): number => median(jsSide[k]!);
  // Rounds are paired: the ratio is the median over rounds of (cudakit / C) within a round, which cancels the
  // machine's drift between rounds (up to ±10 % on a machine shared with other work).
  const ratio = (c: string, js = c): number => median(jsSide[js]!.map((v, i) => v / cSide[c]![i]!));

  // --- compile cache (cudakit only) ---
  const memoryUs: number[] = [];
  program.compile({ arch, cache: { disk: false } });
  for (let i = 0; i < 2000; i++) {
    const t0 = nowUs();
    program.compile({ arch, cache: { disk: false } });
    memoryUs.push(nowUs() - t0);
  }
  const cacheDir = mkdtempSync(join(tmpdir(), 'cudakit-bench-cache-'));
  clearMemoryCache(); // else the next call is a memory hit and never reaches the disk
  program.compile({ arch, cache: { dir: cacheDir } });
  const diskMs: number[] = [];
  const child = `
    import { Program, nvrtcVersion } from './lib/index.ts';
    import { COMPILE_SOURCE } from './bench/run.ts';
    nvrtcVersion(); // load NVRTC first: library loading is not the cache's cost
    const p = new Program(COMPILE_SOURCE, { name: 'bench.cu' });
    const t0 = process.hrtime.bigint();
    const code = p.compile({ arch: '${arch}', cache: { dir: '${cacheDir}' } });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    console.log(JSON.stringify({ ms, cached: code.cached }));`;
  for (let i = 0; i < 7; i++) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', child], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, CUDAKIT_BENCH_CHILD: '1' },
    });
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { ms: number; cached: string };
    if (out.cached !== 'disk')
      throw new Error(`bench: expected a disk cache hit in the child, got ${r.stdout} ${r.stderr}`);
    diskMs.push(out.ms);
  }
  /** ns per call of `call`, timed alone in a tight loop. */
  const callNs = (call: () => unknown): number => {
    for (let i = 0; i < 1e5; i++) call();
    const t0 = nowUs();
    for (let i = 0; i < 1e6; i++) call();
    return ((nowUs() - t0) * 1e3) / 1e6;
  };
  const napiCallNs = callNs(() => n.nop());
  const koffiCallNs = callNs(baseline.nothing);

  type Row = [
    metric: string,
    unit: string,
    baseline: number,
    ours: number,
    target: string,
    pass: boolean,
    ratio: number,
  ];
  const rows: Row[] = [];
  const lowerIsBetter = (metric: string, unit: string, key: string, max: number): void => {
    const r = ratio(key);
    rows.push([metric, unit, C(key), JS(key), `≤ ${max.toFixed(2)}×`, r <= max, r]);
  };
  const higherIsBetter = (metric: string, unit: string, key: string, min: number): void => {
    const r = ratio(key);
    rows.push([metric, unit, C(key), JS(key), `≥ ${min.toFixed(2)}×`, r >= min, r]);
  };
  // The launch enqueue against C's loop in this same process (the C program's own process reads what the host gives
  // that process: between processes, the same C loop varies by more than cudakit's share of a launch). Two configs:
  // a frozen one, which the kernel checks once and keeps, and a plain object, whose keys are checked at every launch.
  const perRoundUs = (a: string, b: string): number => median(jsSide[a]!.map((v, i) => v - jsSide[b]![i]!));
  const launchRows = (key: string, config: string): void => {
    const launchRatio = median(jsSide[key]!.map((v, i) => v / jsSide.launchEnqueueInProcessCUs![i]!));
    const label = `empty-kernel launch enqueue, ${config} (C in the same process)`;
    rows.push([label, 'µs', JS('launchEnqueueInProcessCUs'), JS(key), '≤ 1.05×', launchRatio <= 1.05, launchRatio]);
    const overRawUs = perRoundUs(key, 'rawLaunchEnqueueUs');
    rows.push([
      `Kernel.launch over the raw layer, ${config} (per-round difference)`,
      'µs',
      JS('rawLaunchEnqueueUs'),
      JS(key),
      '≤ raw + 0.05 µs',
      overRawUs <= 0.05,
      Number.NaN,
    ]);
  };
  launchRows('frozenLaunchEnqueueUs', 'frozen config');
  launchRows('launchEnqueueUs', 'config checked at every launch');
  const nopAmidLaunchesNs = perRoundUs('rawNopLaunchEnqueueUs', 'rawLaunchEnqueueUs') * 1e3;
  lowerIsBetter('launch + synchronize round trip', 'µs', 'roundTripUs', 1.05);
  const asyncTrip = JS('asyncRoundTripUs');
  rows.push([
    'launch + synchronizeAsync round trip',
    'µs',
    C('roundTripUs'),
    asyncTrip,
    '≤ baseline + 10 µs',
    asyncTrip <= C('roundTripUs') + 10,
    ratio('roundTripUs', 'asyncRoundTripUs'),
  ]);
  higherIsBetter('256 MiB H2D from allocHost', 'GB/s', 'h2dPinnedGBs', 0.97);
  higherIsBetter('256 MiB D2H to allocHost', 'GB/s', 'd2hPinnedGBs', 0.97);
  higherIsBetter('256 MiB H2D from a TypedArray (vs pageable)', 'GB/s', 'h2dPageableGBs', 2);
  higherIsBetter('256 MiB D2H to a TypedArray (vs pageable)', 'GB/s', 'd2hPageableGBs', 1.5);
  lowerIsBetter('NVRTC compile, cold', 'ms', 'compileColdMs', 1.05);
  const mem = median(memoryUs);
  rows.push(['compile, in-memory cache hit', 'µs', Number.NaN, mem, '≤ 20 µs', mem <= 20, Number.NaN]);
  const disk = median(diskMs);
  rows.push(['compile, disk cache hit (new process)', 'ms', Number.NaN, disk, '≤ 2 ms', disk <= 2, Number.NaN]);
  lowerIsBetter('graph replay, per kernel', 'µs', 'graphPerKernelUs', 1.05);
  lowerIsBetter('module load + unload (CUBIN)', 'µs', 'moduleLoadUnloadUs', 1.2);
  lowerIsBetter('module load + getKernel + unload', 'µs', 'moduleLoadKernelUnloadUs', 1.2);

  const fmt = (v: number): string =>
    Number.isNaN(v) ? '—' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
  const header = '| metric | unit | C baseline | cudakit | cudakit / baseline (paired) | target | met |';
  const lines = [header, '| --- | --- | ---: | ---: | ---: | --- | --- |'];
  for (const [metric, unit, b, o, target, pass, ratio] of rows) {
    lines.push(
      `| ${metric} | ${unit} | ${fmt(b)} | ${fmt(o)} | ` +
        `${Number.isNaN(ratio) ? '—' : `${ratio.toFixed(3)}×`} | ${target} | ${pass ? 'yes' : '**no**'} |`,
    );
  }
  const table = lines.join('\n');
  const context =
    `${new Date().toISOString().slice(0, 10)}, ${device.name} (${arch}), driver CUDA ${p.driverVersion}, ` +
    `NVRTC ${nvrtcVersion()} (${native().nvrtcStatus().path}), Node ${process.version}`;
  const notes =
    `Figures are medians over ${ROUNDS} interleaved rounds (C and cudakit alternating, ABBA), each round itself a ` +
    'median of many samples; the C side runs in a fresh process each round, so only one CUDA context is alive ' +
    'while either side measures. Ratios are the median of the per-round ratios.\n\n' +
    'Launch enqueue: batches of 1000 launches of an empty kernel, interleaved batch by batch in one process: ' +
    `C's cuLaunchKernel loop (bench/native/enqueue-lib.c) ${fmt(JS('launchEnqueueInProcessCUs'))} µs, cudakit's raw ` +
    `layer (native().launchKernel(slot)) ${fmt(JS('rawLaunchEnqueueUs'))} µs, Kernel.launch ` +
    `${fmt(JS('frozenLaunchEnqueueUs'))} µs with a frozen config (Object.freeze({ grid: 1, block: 1, stream })) and ` +
    `${fmt(JS('launchEnqueueUs'))} µs with the same config as a plain object; Kernel.launch over the raw layer ` +
    `${(perRoundUs('frozenLaunchEnqueueUs', 'rawLaunchEnqueueUs') * 1e3).toFixed(0)} and ` +
    `${(perRoundUs('launchEnqueueUs', 'rawLaunchEnqueueUs') * 1e3).toFixed(0)} ns ` +
    `(medians of the per-round differences), the raw layer over C ` +
    `${(perRoundUs('rawLaunchEnqueueUs', 'launchEnqueueInProcessCUs') * 1e3).toFixed(0)} ns. One more N-API call ` +
    `(empty) before each raw launch adds ${nopAmidLaunchesNs.toFixed(0)} ns to it, against ` +
    `${napiCallNs.toFixed(0)} ns for the call alone. C's cuLaunchKernel called once per launch from JavaScript ` +
    `through koffi (a general FFI): ${fmt(JS('koffiLaunchEnqueueUs'))} µs, where a koffi call alone costs ` +
    `${koffiCallNs.toFixed(0)} ns. The C program in its own process: cuLaunchKernel ${fmt(C('launchEnqueueUs'))} µs ` +
    `(${fmt(Math.min(...cSide.launchEnqueueUs!))}–${fmt(Math.max(...cSide.launchEnqueueUs!))} µs over the rounds, ` +
    `one process each), the same through the pointer cuGetProcAddress returns ` +
    `${fmt(C('launchEnqueueProcAddressUs'))} µs; cuCtxGetCurrent costs ${C('ctxGetCurrentNs').toFixed(0)} ns.\n\n` +
    `NVRTC compile: ${fmt(JS('compileColdMs'))} ms through Program.compile, of which the NVRTC calls themselves take ` +
    `${fmt(JS('compileNvrtcMs'))} ms (timed natively); compileAsync (NVRTC on a libuv pool thread) ` +
    `${fmt(JS('compileAsyncMs'))} ms; the C baseline ${fmt(C('compileColdMs'))} ms with NVRTC linked, ` +
    `${cSide.compileDlopenMs ? fmt(C('compileDlopenMs')) : '—'} ms ` +
    'with the same NVRTC loaded by dlopen as cudakit loads it.\n\n' +
    `Module load + unload of the same CUBIN: C ${fmt(C('moduleLoadUnloadUs'))} µs, cudakit's raw layer ` +
    `(native().moduleLoadData + moduleUnload) ${fmt(JS('rawModuleLoadUnloadUs'))} µs, device.loadModule + dispose ` +
    `${fmt(JS('moduleLoadUnloadUs'))} µs. ` +
    'With one kernel looked up (C: cuModuleGetFunction; cudakit: getKernel, which ' +
    `also reads the kernel's parameter list and limits): C ${fmt(C('moduleLoadKernelUnloadUs'))} µs, cudakit ` +
    `${fmt(JS('moduleLoadKernelUnloadUs'))} µs.`;
  const two = await twoGpus();
  console.log(`\n${context}\n\n${table}\n\n${notes}\n\nTwo GPUs\n\n${two.text}\n`);
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify({ context, c: cSide, cudakit: jsSide, rows, twoGpus: two.figures }));
  }
  if (process.argv.includes('--write')) {
    writeSection(
      'core',
      `## Core benchmark\n\n${context}. Ratios are cudakit over the C baseline of the same run.\n\n` +
        `${table}\n\n${notes}\n\n### Two GPUs\n\n${two.text}\n`,
    );
  }
}

if (process.env.CUDAKIT_BENCH_CHILD !== '1') await main();
