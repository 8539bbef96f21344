// SPDX-License-Identifier: MIT
// `npm run bench:python-aa -w server -- [--python PATH] [--write]`: the A/A test of the service's two timing paths,
// on a machine with an NVIDIA GPU and a Python with torch. The same CUBIN (a copy kernel, compiled once by NVRTC) is
// timed by cudakit (evaluate(): the harness's L2 flush, the stream held, events or CUPTI) and by the Python runner
// that times Python kernels (run/worker/python-reference.ts: the kernel launched through ctypes → libcuda on torch's
// stream, its L2 flushed by the runner, its raw timestamps turned into statistics here with the same stopping rule).
// The two medians must agree within ±2 % for kernels of 20 µs and more; a plain torch copy of the same bytes
// (`c.copy_(a)`) is reported beside them, without a bound. Rounds alternate the two paths, so a drift of the clock
// falls on both; each figure is the median over the rounds. cudakit is also timed before any runner starts: the
// runners' contexts sit idle beside its timing in the service (a Python reference's), and the two cudakit figures
// say whether that costs anything.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Device, PRESETS, Program, type HostValue, evaluate } from 'cudakit';
import { childLink } from '../src/run/python-runner.js';
import { RUNNER_PATH } from '../src/run/python.js';
import type { PythonKernelSpec } from '../src/run/protocol.js';
import { PythonReference } from '../src/run/worker/python-reference.js';
import { OUTPUT_ARGS, noGpu, positiveInt } from './cli.js';
import { exitWith, writeOutputs } from './gpu.js';
import { RESULTS_FILE } from './results.js';

const USAGE = `Usage: npx tsx bench/python-aa.ts [--python PATH] [--rounds n] [--write] [--json FILE]
  --python PATH  a Python with torch that sees the GPU (default: python3 on PATH)
  --rounds n     rounds per size, each timing both paths once (default 5)
  --write        replace the python-aa section of server/bench/RESULTS.md
`;

const SOURCE = `extern "C" __global__ void copy(const float* __restrict__ a, float* __restrict__ c, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i];
}
`;
/** Elements copied: the larger two take 20 µs and more on today's GPUs (their bytes read and written twice the L2). */
const SIZES = [1 << 18, 1 << 23, 1 << 25];
const BLOCK = 256;
/** Where the two paths must agree. */
const BOUND = 0.02;
const MIN_BOUNDED_MS = 0.02;

/** The runner's kernel: the CUBIN, loaded with ctypes into torch's context, launched on torch's current stream. */
function ctypesSource(cubin: Uint8Array): string {
  return `import base64, ctypes, torch
CUBIN = base64.b64decode("${Buffer.from(cubin).toString('base64')}")
cuda = ctypes.CDLL("libcuda.so.1")
torch.empty(1, device="cuda")  # torch's primary context, current on this thread
def ok(status, what):
    if status != 0:
        raise RuntimeError(f"{what} failed: CUresult {status}")
module = ctypes.c_void_p()
ok(cuda.cuModuleLoadData(ctypes.byref(module), CUBIN), "cuModuleLoadData")
function = ctypes.c_void_p()
ok(cuda.cuModuleGetFunction(ctypes.byref(function), module, b"copy"), "cuModuleGetFunction")

def custom_kernel(a, c):
    n = a.numel()
    values = [ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(c.data_ptr()), ctypes.c_longlong(n)]
    params = (ctypes.c_void_p * 3)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    grid = (n + ${BLOCK} - 1) // ${BLOCK}
    ok(cuda.cuLaunchKernel(function, grid, 1, 1, ${BLOCK}, 1, 1, 0, stream, params, None), "cuLaunchKernel")
    return c
`;
}

const TORCH_COPY = 'def custom_kernel(a, c):\n    c.copy_(a)\n    return c\n';

interface Row {
  n: number;
  /** cudakit's medians with no runner alive; `cudakitMs` with both runners alive and idle beside it. */
  aloneMs: number[];
  cudakitMs: number[];
  runnerMs: number[];
  torchMs: number[];
}

const median = (v: readonly number[]): number => {
  const s = [...v].filter(Number.isFinite).sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const us = (ms: number): string => (Number.isFinite(ms) ? `${(ms * 1000).toFixed(2)} µs` : '—');

/** A runner of the Python kernel `source` (copy a → c, n floats), unsandboxed, in a folder of its own. */
function runnerOf(python: string, source: string, n: number, flushBytes: number) {
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-python-aa-'));
  const child = spawn(python, ['-I', RUNNER_PATH, '--serve'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const spec: PythonKernelSpec = {
    type: 'torch',
    source,
    metadata: { function_name: 'custom_kernel' },
    launch: null,
    args: [
      { name: 'a', kind: 'tensor', dtype: 'float32', shape: [n], role: 'input', from: 0 },
      { name: 'c', kind: 'tensor', dtype: 'float32', shape: [n], role: 'inout', from: 1 },
    ],
    outputs: [1],
  };
  const kernel = new PythonReference(childLink(child), dir, spec, { role: 'candidate', flushBytes });
  return {
    kernel,
    close: () => {
      kernel.close();
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<number> {
  const { values: v } = parseArgs({
    options: {
      python: { type: 'string', default: 'python3' },
      rounds: { type: 'string', default: '5' },
      ...OUTPUT_ARGS,
    },
  });
  if (v.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const rounds = positiveInt('rounds', v.rounds);
  if (noGpu('python-aa')) return 1;
  const device = Device.get(0);
  const cubin = new Program(SOURCE, { name: 'copy.cu' }).compile({ arch: device.arch, target: 'cubin' }).bytes;
  const rule = PRESETS.default;
  const flushBytes = 2 * device.l2CacheBytes;
  const rows: Row[] = [];
  for (const n of SIZES) {
    const row: Row = { n, aloneMs: [], cudakitMs: [], runnerMs: [], torchMs: [] };
    const job = {
      source: SOURCE,
      kernel: 'copy',
      grid: [Math.ceil(n / BLOCK)] as const,
      block: [BLOCK] as const,
      args: [`ptr:f32[${n}]=uniform(-1,1)`, `ptr:f32[${n}]:out`, `i64=${n}`],
      check: { skip: true },
      timing: { preset: 'default' as const },
    };
    // First with no other process on the GPU: what a runner's idle context beside cudakit's timing costs, if anything.
    for (let round = 0; round < rounds; round++) row.aloneMs.push((await evaluate(job)).timing?.stats.median ?? NaN);
    const ctypesRunner = runnerOf(v.python!, ctypesSource(cubin), n, flushBytes);
    const torchRunner = runnerOf(v.python!, TORCH_COPY, n, flushBytes);
    try {
      const inputs: HostValue[] = [Float32Array.from({ length: n }, (_, i) => (i % 1000) / 1000), new Float32Array(n)];
      for (const r of [ctypesRunner, torchRunner]) {
        // Two calls: the runner times its kernel on the input sets of its first two (prepare()).
        await r.kernel.call(inputs.map((x) => (x as Float32Array).slice()));
        await r.kernel.call(inputs.map((x) => (x as Float32Array).slice()));
      }
      for (let round = 0; round < rounds; round++) {
        // Alternate which path goes first, so that neither always follows the other.
        const paths = [
          async () => row.cudakitMs.push((await evaluate(job)).timing?.stats.median ?? NaN),
          async () => row.runnerMs.push((await ctypesRunner.kernel.time(rule)).stats.median),
        ];
        if (round % 2 === 1) paths.reverse();
        for (const path of paths) await path();
        row.torchMs.push((await torchRunner.kernel.time(rule)).stats.median);
      }
    } finally {
      ctypesRunner.close();
      torchRunner.close();
    }
    rows.push(row);
    const ratio = median(row.runnerMs) / median(row.cudakitMs);
    console.log(
      `n = ${n}: cudakit ${us(median(row.cudakitMs))}, runner ${us(median(row.runnerMs))} (×${ratio.toFixed(3)})`,
    );
  }
  const text = markdown(rows, device.name, rounds);
  writeOutputs({ json: v.json, write: v.write === true, results: RESULTS_FILE }, 'python-aa', text, { rows });
  return 0;
}

function markdown(rows: readonly Row[], gpu: string, rounds: number): string {
  const date = new Date().toISOString().slice(0, 10);
  const lines = [
    '## The two timing paths, A/A: cudakit and the Python runner on the same CUBIN',
    '',
    `${date}, ${gpu}, Node ${process.version}; a copy kernel (one float read and one written per thread, blocks of ` +
      `${BLOCK}), compiled once by NVRTC; ${rounds} rounds per size, the two paths alternating, the default preset's ` +
      'stopping rule for both; each figure the median over the rounds of the run medians.',
    '',
    '| elements | cudakit | Python runner (ctypes → libcuda) | runner ÷ cudakit | within ±2 % | torch `c.copy_(a)` ' +
      '| cudakit, no runner alive | with ÷ without |',
    '| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const a = median(r.cudakitMs);
    const b = median(r.runnerMs);
    const bounded = a >= MIN_BOUNDED_MS;
    const within = !bounded ? 'not bounded (< 20 µs)' : Math.abs(b / a - 1) <= BOUND ? 'yes' : 'no';
    const alone = median(r.aloneMs);
    lines.push(
      `| ${r.n} | ${us(a)} | ${us(b)} | ${(b / a).toFixed(3)} | ${within} | ${us(median(r.torchMs))} ` +
        `| ${us(alone)} | ${(a / alone).toFixed(3)} |`,
    );
  }
  return lines.join('\n');
}

exitWith('python-aa', main());
