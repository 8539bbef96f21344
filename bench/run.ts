// SPDX-License-Identifier: MIT
// `npm run bench`: cudakit's core costs side by side with a C baseline (bench/native/baseline.c) built and run in
// the same session on the same GPU. Speed is measured here, never in tests. `--write` records bench/RESULTS.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Device, Event, Program, clearMemoryCache, native, nvrtcVersion, probe } from '../lib/index.js';

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

interface Baseline {
  launchEnqueueUs: number;
  roundTripUs: number;
  graphPerKernelUs: number;
  h2dPinnedGBs: number;
  d2hPinnedGBs: number;
  h2dPageableGBs: number;
  d2hPageableGBs: number;
  compileColdMs: number;
  ctxGetCurrentNs: number;
}

function buildBaseline(): string {
  const cuda = [process.env.CUDA_PATH, process.env.CUDA_HOME, '/usr/local/cuda'].find((d) => d && existsSync(join(d, 'include', 'cuda.h')));
  if (cuda === undefined) throw new Error('bench: no CUDA toolkit (cuda.h) found to build the C baseline; set CUDA_PATH');
  const out = join(here, 'native', 'out');
  mkdirSync(out, { recursive: true });
  const exe = join(out, 'baseline');
  const lib = existsSync(join(cuda, 'lib64')) ? join(cuda, 'lib64') : join(cuda, 'lib');
  execFileSync('cc', ['-O2', `-I${cuda}/include`, join(here, 'native', 'baseline.c'), `-L${lib}`, `-L${lib}/stubs`, '-lcuda', '-lnvrtc', '-o', exe], { stdio: 'inherit' });
  return exe;
}

async function main(): Promise<void> {
  const p = probe();
  if (!p.ok) {
    console.error(`bench: needs a CUDA GPU: ${p.reason}`);
    process.exit(1);
  }
  const device = Device.get(0);
  const arch = device.arch;

  const exe = buildBaseline();
  const program0 = new Program(COMPILE_SOURCE, { name: 'bench.cu' }).compile({ arch, cache: false });
  const before = JSON.parse(execFileSync(exe, [...program0.options], { encoding: 'utf8' })) as Baseline;

  // --- NVRTC ---
  const program = new Program(COMPILE_SOURCE, { name: 'bench.cu' });
  const coldMs: number[] = [];
  let code = program.compile({ arch, cache: false });
  for (let i = 0; i < 8; i++) {
    const t0 = nowUs();
    code = program.compile({ arch, cache: false });
    coldMs.push((nowUs() - t0) / 1e3);
  }
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
  clearMemoryCache();
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
      cwd: root, encoding: 'utf8', env: { ...process.env, CUDAKIT_BENCH_CHILD: '1' },
    });
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { ms: number; cached: string };
    if (out.cached !== 'disk') throw new Error(`bench: expected a disk cache hit in the child, got ${r.stdout} ${r.stderr}`);
    diskMs.push(out.ms);
  }

  // --- launches ---
  using module = device.loadModule(code);
  const empty = module.getKernel('empty', []);
  using stream = device.createStream();
  const cfg = { grid: 1, block: 1, stream };
  for (let i = 0; i < 2000; i++) empty.launch(cfg);
  stream.synchronize();
  const enqueueUs: number[] = [];
  for (let b = 0; b < 30; b++) {
    const t0 = nowUs();
    for (let i = 0; i < 1000; i++) empty.launch(cfg);
    enqueueUs.push((nowUs() - t0) / 1000);
    stream.synchronize();
  }
  const tripUs: number[] = [];
  for (let i = 0; i < 3000; i++) {
    const t0 = nowUs();
    empty.launch(cfg);
    stream.synchronize();
    tripUs.push(nowUs() - t0);
  }
  const asyncUs: number[] = [];
  for (let i = 0; i < 3000; i++) {
    const t0 = nowUs();
    empty.launch(cfg);
    await stream.synchronizeAsync();
    asyncUs.push(nowUs() - t0);
  }

  // --- graph replay ---
  stream.beginCapture();
  for (let i = 0; i < 100; i++) empty.launch(cfg);
  using graph = stream.endCapture();
  using exec = graph.instantiate();
  for (let i = 0; i < 5; i++) exec.launch(stream);
  const graphUs: number[] = [];
  for (let k = 0; k < 30; k++) {
    const e0 = stream.record();
    for (let r = 0; r < 20; r++) exec.launch(stream);
    const e1 = stream.record();
    graphUs.push((Event.elapsedMs(e0, e1) * 1e3) / (20 * 100));
    e0.dispose();
    e1.dispose();
  }

  // --- 256 MiB copies ---
  const bytes = 256 << 20;
  using dev = device.alloc(bytes);
  const pinned = device.allocHost(Uint8Array, bytes).fill(1);
  const pageable = new Uint8Array(bytes).fill(1);
  const gbs = (us: number): number => bytes / (us * 1e3);
  const copies = { h2dPinned: [] as number[], d2hPinned: [] as number[], h2dPageable: [] as number[], d2hPageable: [] as number[] };
  for (let i = 0; i < 11; i++) {
    const t0 = nowUs();
    dev.copyFromHost(pinned);
    const t1 = nowUs();
    dev.copyToHost(pinned);
    const t2 = nowUs();
    dev.copyFromHost(pageable);
    const t3 = nowUs();
    dev.copyToHost(pageable);
    const t4 = nowUs();
    if (i === 0) continue;
    copies.h2dPinned.push(gbs(t1 - t0));
    copies.d2hPinned.push(gbs(t2 - t1));
    copies.h2dPageable.push(gbs(t3 - t2));
    copies.d2hPageable.push(gbs(t4 - t3));
  }

  // --- where launch time goes: one N-API call, measured here; cuCtxGetCurrent, measured by the baseline ---
  const n = native();
  for (let i = 0; i < 1e5; i++) n.nop();
  const t0 = nowUs();
  for (let i = 0; i < 1e6; i++) n.nop();
  const napiCallNs = (nowUs() - t0) * 1e3 / 1e6;

  // --- the C baseline, same flags, same machine, same session: once before and once after cudakit's runs ---
  const baselines = [before, JSON.parse(execFileSync(exe, [...code.options], { encoding: 'utf8' })) as Baseline];
  const base = Object.fromEntries(
    Object.keys(before).map((k) => [k, (baselines[0]![k as keyof Baseline] + baselines[1]![k as keyof Baseline]) / 2]),
  ) as unknown as Baseline;

  type Row = [metric: string, unit: string, baseline: number, ours: number, target: string, pass: boolean, ratio: number];
  const rows: Row[] = [];
  const lowerIsBetter = (metric: string, unit: string, b: number, o: number, max: number): void => {
    rows.push([metric, unit, b, o, `≤ ${max.toFixed(2)}×`, o / b <= max, o / b]);
  };
  const higherIsBetter = (metric: string, unit: string, b: number, o: number, min: number): void => {
    rows.push([metric, unit, b, o, `≥ ${min.toFixed(2)}×`, o / b >= min, o / b]);
  };
  lowerIsBetter('empty-kernel launch enqueue', 'µs', base.launchEnqueueUs, median(enqueueUs), 1.05);
  lowerIsBetter('launch + synchronize round trip', 'µs', base.roundTripUs, median(tripUs), 1.05);
  const asyncMedian = median(asyncUs);
  rows.push(['launch + synchronizeAsync round trip', 'µs', base.roundTripUs, asyncMedian, '≤ baseline + 10 µs', asyncMedian <= base.roundTripUs + 10, asyncMedian / base.roundTripUs]);
  higherIsBetter('256 MiB H2D from allocHost', 'GB/s', base.h2dPinnedGBs, median(copies.h2dPinned), 0.97);
  higherIsBetter('256 MiB D2H to allocHost', 'GB/s', base.d2hPinnedGBs, median(copies.d2hPinned), 0.97);
  higherIsBetter('256 MiB H2D from a TypedArray (vs pageable)', 'GB/s', base.h2dPageableGBs, median(copies.h2dPageable), 2);
  higherIsBetter('256 MiB D2H to a TypedArray (vs pageable)', 'GB/s', base.d2hPageableGBs, median(copies.d2hPageable), 1.5);
  lowerIsBetter('NVRTC compile, cold', 'ms', base.compileColdMs, median(coldMs), 1.05);
  const mem = median(memoryUs);
  rows.push(['compile, in-memory cache hit', 'µs', Number.NaN, mem, '≤ 20 µs', mem <= 20, Number.NaN]);
  const disk = median(diskMs);
  rows.push(['compile, disk cache hit (new process)', 'ms', Number.NaN, disk, '≤ 2 ms', disk <= 2, Number.NaN]);
  lowerIsBetter('graph replay, per kernel', 'µs', base.graphPerKernelUs, median(graphUs), 1.05);

  const fmt = (v: number): string => (Number.isNaN(v) ? '—' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  const header = '| metric | unit | C baseline | cudakit | cudakit / baseline | target | met |';
  const lines = [header, '| --- | --- | ---: | ---: | ---: | --- | --- |'];
  for (const [metric, unit, b, o, target, pass, ratio] of rows) {
    lines.push(`| ${metric} | ${unit} | ${fmt(b)} | ${fmt(o)} | ${Number.isNaN(ratio) ? '—' : `${ratio.toFixed(3)}×`} | ${target} | ${pass ? 'yes' : '**no**'} |`);
  }
  const table = lines.join('\n');
  const context =
    `${new Date().toISOString().slice(0, 10)}, ${device.name} (${arch}), driver CUDA ${p.driverVersion}, ` +
    `NVRTC ${nvrtcVersion()}, Node ${process.version}`;
  const notes =
    `Baseline figures are the mean of two runs of the C program, one before and one after cudakit's. ` +
    `Launch cost breakdown on this machine: one N-API call ${napiCallNs.toFixed(0)} ns, cuCtxGetCurrent ` +
    `${base.ctxGetCurrentNs.toFixed(0)} ns (cudakit checks the current context before each call).`;
  console.log(`\n${context}\n\n${table}\n\n${notes}\n`);
  if (process.argv.includes('--json')) console.log(JSON.stringify({ context, base, rows }));
  if (process.argv.includes('--write')) {
    writeFileSync(
      join(here, 'RESULTS.md'),
      `# Core benchmark\n\n${context}. Medians; ratios are cudakit over the C baseline of the same run.\n\n${table}\n\n${notes}\n`,
    );
  }
}

if (process.env.CUDAKIT_BENCH_CHILD !== '1') await main();
