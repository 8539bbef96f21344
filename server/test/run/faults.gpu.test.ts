// SPDX-License-Identifier: MIT
// The service on a GPU when kernels misbehave, end to end through the v1 API (buildApp and the scheduler over a
// LocalGpuPool of the real worker, pinned to GPU 0): illegal address, __trap() and assert(0) are RUNTIME_ERROR with
// the worker replaced and the next job passing; out-of-bounds writes, modified inputs, unwritten outputs and two
// cache-and-replay kernels each get their verdict; a kernel that never ends is TIMEOUT within its timeoutSeconds + 3 s;
// a worker SIGKILLed from outside is CRASHED; a kernel that reads the device memory around its buffers finds nothing
// of the jobs before it, in a fresh process per job and in one warm worker (zeroOnFree); and the real binary
// SIGKILLed while its worker runs a kernel that never ends leaves no worker alive and nothing on the GPU. Skipped
// without a GPU (describeGpu). Small buffers, the quick preset and 5 s deadlines keep it short.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ServerProcess, childrenOf, isAlive, startServer, stillAliveAfter } from '../../bench/binary.js';
import { buildApp } from '../../src/http/app.js';
import { type App } from '../../src/http/shared.js';
import { LocalGpuPool } from '../../src/run/local-pool.js';
import { type ComputeApp, computeApps, nvidiaSmiPath } from '../../src/run/nvidia-smi.js';
import type { GpuSlot, Isolation } from '../../src/run/slot.js';
import { EmbeddedQueue } from '../../src/schedule/embedded-queue.js';
import type { Evaluation } from '../../src/http/schemas/v1.js';
import { EvalService } from '../../src/service.js';
import { MemoryJobStore } from '../../src/store/memory.js';
import { describeGpu } from '../../../test/helpers.js';
import { until, untilIdle } from '../../../test/support/until.js';
import { ENDLESS, ILLEGAL, N, SCALE, scaleJob } from '../../../test/gpu/fault-kernels.js';

// ---------------------------------------------------------------------------------------------------------------
// Kernels: scale(a, x, y, n), y = a·x, checked against SCALE (fault-kernels.ts); y starts poisoned in every trial.

const TRAP = `extern "C" __global__ void scale(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 7) __trap();
  if (i < n) y[i] = a * x[i];
}
`;
// assert() as CUDA's <cassert> defines it for device code (NVRTC compiles without the host headers).
const ASSERT = `extern "C" __device__ void __assertfail(const char*, const char*, unsigned, const char*, size_t);
#undef assert
#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, "scale", 1))
extern "C" __global__ void scale(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 7) assert(0);
  if (i < n) y[i] = a * x[i];
}
`;
// Right everywhere, and one element past the end of y: into the guard zone after it.
const OUT_OF_BOUNDS = `extern "C" __global__ void scale(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
  if (i == 0) y[n] = 1.0f;
}
`;
// Right, and clears an input element after reading it.
const WRITES_INPUT = `extern "C" __global__ void scale(float a, float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
  if (i == 3) x[3] = 0.0f;
}
`;
const SKIPS_TAIL = `extern "C" __global__ void scale(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 7) y[i] = a * x[i];
}
`;
/**
 * Cache and replay: the first `honest` launches of a module compute y and keep it in device memory; every later one
 * writes the kept y back whatever its inputs. Launches on one stream run one after the other, so a launch's blocks
 * count k·gridDim.x up to (k + 1)·gridDim.x - 1 in a counter of the blocks run so far.
 */
const replay = (honest: number): string => `__device__ unsigned long long blocks_run;
__device__ float kept[${N}];
extern "C" __global__ void scale(float a, const float* x, float* y, int n) {
  __shared__ unsigned long long launch;
  if (threadIdx.x == 0) launch = atomicAdd(&blocks_run, 1ULL) / gridDim.x;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (launch < ${honest}) kept[i] = a * x[i];
  y[i] = kept[i];
}
`;

// ---------------------------------------------------------------------------------------------------------------
// Reading what a previous job left in device memory.
//
// A kernel reads only memory it is given, and the harness writes every byte of what it gives: inputs, poisoned
// outputs and random guard zones (64 KiB each side), in every trial and every timed input set. What a candidate can
// reach besides is the rest of the pages its buffers lie in: the driver maps device memory in whole 2 MiB pages, so
// the 2 MiB-aligned pages around a buffer are readable, and the harness never writes their other bytes. Whatever a
// previous allocation left there is what a job could steal. The writer fills 8 MiB with a 64-bit pattern; the scanner
// reads every word of the pages that hold its 1 MiB anchor and says (found[0] = 1) whether the pattern is there. Its
// reference is found = 0, so a scanner that sees the pattern is INCORRECT ('argument 1[0] = 1, expected 0'). A control
// whose anchor holds the pattern itself shows the scanner sees what is there.

const PATTERN = 0x7eadbeef5a17c0den;
const WRITTEN = 1 << 20; // u64: 8 MiB of the pattern
const ANCHOR = 1 << 17; // u64: 1 MiB
const WRITER = `extern "C" __global__ void fill(unsigned long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0x${PATTERN.toString(16)}ULL;
}
`;
const SCANNER = `#define PATTERN 0x${PATTERN.toString(16)}ULL
#define PAGE_BYTES (2ULL << 20)
extern "C" __global__ void scan(const unsigned long long* anchor, unsigned int* found, int n) {
  unsigned long long lo = (unsigned long long)anchor & ~(PAGE_BYTES - 1);
  unsigned long long hi = ((unsigned long long)(anchor + n) + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1);
  const unsigned long long* words = (const unsigned long long*)lo;
  int seen = 0;
  for (unsigned long long k = threadIdx.x; k < (hi - lo) / 8; k += blockDim.x) seen |= words[k] == PATTERN;
  seen = __syncthreads_or(seen);
  if (threadIdx.x == 0) found[0] = seen;
}
`;
const writerJob = {
  name: 'writer',
  source: WRITER,
  kernel: 'fill',
  grid: WRITTEN / 256,
  block: 256,
  args: [`out@ptr:u64[${WRITTEN}]:out`, `n@i32=${WRITTEN}`],
  check: { trials: 2 },
  timing: { preset: 'quick' },
};
const u32 = (v: number): string => Buffer.from(new Uint32Array([v]).buffer).toString('base64');
/** The scanner over a zeroed anchor, or over `anchor`. */
const scanJob = (name: string, anchor: unknown = `anchor@ptr:u64[${ANCHOR}]=zeros`): Record<string, unknown> => ({
  name,
  source: SCANNER,
  kernel: 'scan',
  grid: 1,
  block: 1024,
  args: [anchor, 'found@ptr:u32[1]:out', `n@i32=${ANCHOR}`],
  reference: { expected: { found: { base64: u32(0), compress: 'none' } } },
  check: { trials: 2 },
  timing: { preset: 'quick' },
});
const patternAnchor = (): unknown => {
  const words = new BigUint64Array(ANCHOR);
  words[4242] = PATTERN;
  const base64 = Buffer.from(words.buffer).toString('base64');
  return { kind: 'buffer', dtype: 'u64', length: ANCHOR, role: 'in', init: { kind: 'data', base64 }, name: 'anchor' };
};

// ---------------------------------------------------------------------------------------------------------------
// The in-process service

/** How long a real worker may take to be ready: a new process, CUDA's initialisation, the warm-up compile. */
const IDLE_MS = 60_000;

interface Harness {
  app: App;
  service: EvalService;
  store: MemoryJobStore;
  slot: GpuSlot;
}

async function startHarness(isolation: Isolation): Promise<Harness> {
  const pool = new LocalGpuPool({ isolation, gpus: [0], worker: 'real' });
  const store = new MemoryJobStore();
  const queue = new EmbeddedQueue();
  const service = new EvalService({ store, submitQueue: queue, runQueue: queue, pool });
  const app = await buildApp({ service, underPressure: false });
  await pool.start();
  await service.start();
  expect(pool.unavailableReason).toBeUndefined();
  const slot = pool.slotObjects()[0]!;
  await untilIdle(slot, IDLE_MS);
  return { app, service, store, slot };
}

async function stopHarness(h: Harness | undefined): Promise<void> {
  await h?.service.drain(5000);
  await h?.app.close();
  await h?.store.close();
}

async function submit(h: Harness, body: Record<string, unknown>): Promise<string> {
  const res = await h.app.inject({ method: 'POST', url: '/v1/evaluations', payload: body });
  expect(res.statusCode, res.body).toBe(202);
  return (res.json() as { id: string }).id;
}

/** The evaluation once it ended, as GET /v1/evaluations/{id} shows it. */
async function finished(h: Harness, id: string): Promise<Evaluation> {
  const end = Date.now() + 120_000;
  for (;;) {
    const status = (await h.service.get(id))?.status;
    if (status === 'succeeded' || status === 'failed' || status === 'cancelled') break;
    if (Date.now() > end) throw new Error(`${id} is still ${status} after 120 s`);
    await h.service.waitForEnd(id, 5000);
  }
  const res = await h.app.inject({ method: 'GET', url: `/v1/evaluations/${id}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Evaluation;
}

/** Runs a job on an idle slot; returns its evaluation and the pid of the worker that ran it. */
async function run(h: Harness, body: Record<string, unknown>): Promise<Evaluation & { pid: number }> {
  await untilIdle(h.slot, IDLE_MS);
  const pid = h.slot.pids().current!;
  expect(pid).toBeGreaterThan(0);
  const ev = await finished(h, await submit(h, body));
  return { ...ev, pid };
}

const brief = (ev: Evaluation): string => JSON.stringify({ ...ev, report: undefined });

async function expectPasses(h: Harness, name: string): Promise<void> {
  const ev = await run(h, scaleJob(name, SCALE));
  expect(ev, brief(ev)).toMatchObject({ status: 'succeeded', verdict: 'PASSED', error: null });
}

/** The writer, then the scanner, the control, and the scanner again; returns the pids of the workers that ran them. */
async function scanAfterWriter(h: Harness): Promise<number[]> {
  const writer = await run(h, writerJob);
  expect(writer, brief(writer)).toMatchObject({ status: 'succeeded', verdict: 'PASSED' });
  const scan = await run(h, scanJob('scan after the writer'));
  expect(scan, brief(scan)).toMatchObject({ status: 'succeeded', verdict: 'PASSED', error: null });
  const control = await run(h, scanJob('scan over the pattern', patternAnchor()));
  expect(control, brief(control)).toMatchObject({ status: 'succeeded', verdict: 'INCORRECT', phase: 'check' });
  expect(control.error!.message).toMatch(/^FAIL \(mismatch\) in trial 0; first: argument 1\[0\] = 1, expected 0$/);
  const again = await run(h, scanJob('scan after the control'));
  expect(again, brief(again)).toMatchObject({ status: 'succeeded', verdict: 'PASSED', error: null });
  return [writer.pid, scan.pid, control.pid, again.pid];
}

describeGpu('the service on a GPU, a process per job: faults and defences', () => {
  let h: Harness | undefined;
  const harness = (): Harness => h!;

  beforeAll(async () => {
    h = await startHarness('process');
  }, 120_000);
  afterAll(async () => {
    await stopHarness(h);
  });

  it.each<[string, string, string[]]>([
    ['an illegal address', ILLEGAL, ['CUDA_ERROR_ILLEGAL_ADDRESS']],
    ['__trap()', TRAP, ['CUDA_ERROR_LAUNCH_FAILED', 'CUDA_ERROR_ILLEGAL_INSTRUCTION']],
    ['assert(0)', ASSERT, ['CUDA_ERROR_ASSERT']],
  ])(
    '%s: RUNTIME_ERROR (sticky), the worker replaced, the next job passes',
    async (name, source, codes) => {
      const h = harness();
      const ev = await run(h, scaleJob(name, source));
      expect(ev, brief(ev)).toMatchObject({ status: 'succeeded', verdict: 'RUNTIME_ERROR', phase: 'check' });
      expect(codes).toContain(ev.error!.code);
      expect(ev.report).toMatchObject({ passed: false, error: { kind: 'cuda', sticky: true, defence: 'fault' } });
      await untilIdle(h.slot, IDLE_MS);
      expect(h.slot.pids().current).not.toBe(ev.pid);
      expect(isAlive(ev.pid)).toBe(false);
      await expectPasses(h, `after ${name}`);
    },
    120_000,
  );

  it.each<[string, string, string, string, RegExp]>([
    [
      'an out-of-bounds write',
      'OUT_OF_BOUNDS',
      'check',
      OUT_OF_BOUNDS,
      /^FAIL \(out-of-bounds\) in trial 0: argument 2: a write [0-3] bytes after its buffer/,
    ],
    [
      'a modified input',
      'INPUT_MODIFIED',
      'check',
      WRITES_INPUT,
      /^FAIL \(input-modified\) in trial 0: argument 1 \(an input\) changed at element 3/,
    ],
    ['unwritten outputs', 'UNWRITTEN', 'check', SKIPS_TAIL, /^FAIL \(unwritten\) in trial 0\b/],
    // The check's fresh inputs in trial 1 get trial 0's outputs back.
    ['a cache-and-replay kernel', 'INCORRECT', 'check', replay(1), /^FAIL \(mismatch\) in trial 1\b/],
    // Honest through the check's 3 launches; timing loads the module afresh, and its first 16 launches (warm-up) are
    // honest too, then the kept outputs of one input set are replayed into all: the re-check after timing compares
    // every set's outputs with the reference on that set's inputs.
    [
      'a kernel that replays only once timed',
      'INCORRECT',
      'recheck',
      replay(16),
      /^FAIL after timing \(mismatch\) in (input set \d+: its outputs are not those|a timed launch drawn at random)/,
    ],
  ])(
    '%s: %s in phase %s',
    async (name, verdict, phase, source, message) => {
      const ev = await run(harness(), scaleJob(name, source));
      expect(ev, brief(ev)).toMatchObject({ status: 'succeeded', verdict, phase, error: { phase } });
      expect(ev.error!.message).toMatch(message);
    },
    120_000,
  );

  it('a kernel that never ends: TIMEOUT within timeoutSeconds + 3 s, worker gone, next job passes', async () => {
    const h = harness();
    await untilIdle(h.slot, IDLE_MS);
    const t0 = Date.now();
    const ev = await run(h, scaleJob('endless', ENDLESS, { timeoutSeconds: 5 }));
    const wallMs = Date.now() - t0;
    expect(ev, brief(ev)).toMatchObject({
      status: 'succeeded',
      verdict: 'TIMEOUT',
      phase: 'check',
      error: { code: 'TIMEOUT', message: "killed after 5 s (the job's timeoutSeconds)", phase: 'check' },
    });
    const ranMs = Date.parse(ev.finishedAt!) - Date.parse(ev.startedAt!);
    expect(ranMs).toBeGreaterThanOrEqual(5000);
    expect(wallMs).toBeLessThan(5000 + 3000);
    await untilIdle(h.slot, IDLE_MS); // not quarantined: the GPU let go of the killed worker
    expect(isAlive(ev.pid)).toBe(false);
    expect((await computeApps())?.some((a) => a.pid === ev.pid) ?? false).toBe(false);
    await expectPasses(h, 'after endless');
  }, 120_000);

  it('a worker SIGKILLed from outside while its kernel runs: CRASHED, and the next job passes', async () => {
    const h = harness();
    await untilIdle(h.slot, IDLE_MS);
    const id = await submit(h, scaleJob('killed', ENDLESS));
    await until(async () => (await h.service.get(id))?.phase === 'check' && h.slot.state === 'busy', {
      timeoutMs: 60_000,
      what: 'the job to run its check',
      pollMs: 50,
    });
    const pid = h.slot.pids().current!;
    process.kill(pid, 'SIGKILL');
    const ev = await finished(h, id);
    expect(ev, brief(ev)).toMatchObject({
      status: 'failed',
      verdict: 'CRASHED',
      phase: 'check',
      error: { code: 'CRASHED', phase: 'check' },
    });
    expect(ev.error!.message).toMatch(/^the worker died in the check phase \(signal SIGKILL\)/);
    await expectPasses(h, 'after the kill');
  }, 120_000);

  it('a kernel reading the device memory around its buffers finds nothing of the jobs before it', async () => {
    const pids = await scanAfterWriter(harness());
    expect(new Set(pids).size).toBe(pids.length); // each job in a process of its own
  }, 240_000);
});

describeGpu('the service on a GPU, warm workers', () => {
  let h: Harness | undefined;
  const harness = (): Harness => h!;

  beforeAll(async () => {
    h = await startHarness('warm');
  }, 120_000);
  afterAll(async () => {
    await stopHarness(h);
  });

  it('a kernel reading the memory around its buffers finds nothing of the jobs before it in its worker', async () => {
    const pids = await scanAfterWriter(harness());
    // One worker, one CUDA context ran them all: only the scrubbing (zeroOnFree) stands between them.
    expect(new Set(pids).size).toBe(1);
  }, 240_000);

  it('a sticky fault costs the warm worker: RUNTIME_ERROR, a new worker, the next job passes', async () => {
    const h = harness();
    const before = await run(h, scaleJob('warm', SCALE));
    expect(before, brief(before)).toMatchObject({ verdict: 'PASSED' });
    const ev = await run(h, scaleJob('trap', TRAP));
    expect(ev.pid).toBe(before.pid); // the same warm worker, until the fault
    expect(ev, brief(ev)).toMatchObject({ status: 'succeeded', verdict: 'RUNTIME_ERROR', phase: 'check' });
    await untilIdle(h.slot, IDLE_MS);
    expect(h.slot.pids().current).not.toBe(ev.pid);
    expect(isAlive(ev.pid)).toBe(false);
    await expectPasses(h, 'after the trap');
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------------------------
// The binary, killed

interface GpuLoad {
  utilizationPercent: number | undefined;
  memoryUsedMiB: number | undefined;
}

/** What nvidia-smi says of one GPU's load; undefined for a figure it does not give ('[N/A]'). */
async function gpuLoad(uuid: string): Promise<GpuLoad> {
  const smi = await nvidiaSmiPath();
  const args = ['--query-gpu=utilization.gpu,memory.used', '--format=csv,noheader,nounits', '-i', uuid];
  const text = await new Promise<string>((resolve) => {
    if (smi === undefined) return resolve('');
    execFile(smi, args, { timeout: 5000 }, (error, stdout) => resolve(error === null ? stdout : ''));
  });
  const [u, m] = text
    .trim()
    .split(',')
    .map((s) => (/^\d+(\.\d+)?$/.test(s.trim()) ? Number(s.trim()) : undefined));
  return { utilizationPercent: u, memoryUsedMiB: m };
}

/** `pid`'s descendants (Linux /proc). */
function descendantsOf(pid: number): number[] {
  const found: number[] = [];
  let level = [pid];
  for (let depth = 0; depth < 4 && level.length > 0; depth++) {
    level = level.flatMap(childrenOf);
    found.push(...level);
  }
  return found;
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

async function getJson(url: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
  const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json' } });
  const body = (await res.json()) as Record<string, unknown>;
  expect(res.ok, JSON.stringify(body)).toBe(true);
  return body;
}

describeGpu('the server binary SIGKILLed while its worker runs a kernel', () => {
  it('leaves no worker alive and nothing of its own on the GPU within 15 s', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cudakit-server-faults-'));
    const seen: number[] = [];
    let server: ServerProcess | undefined;
    try {
      expect(await computeApps()).toBeDefined(); // nvidia-smi answers here
      server = await startServer({
        args: ['--port', '0', '--data-dir', dataDir, '--gpus', '0', '--log-level', 'warn'],
        env: { CUDAKIT_SERVER_WORKER: 'real' },
        startTimeoutMs: 90_000,
      });
      const gpus = (await getJson(`${server.url}/v1/gpus`)).gpus as { uuid: string }[];
      const uuid = gpus[0]!.uuid;
      const baseline = { pids: new Set((await computeApps())!.map((a) => a.pid)), load: await gpuLoad(uuid) };
      const { id } = (await getJson(`${server.url}/v1/evaluations`, {
        method: 'POST',
        body: JSON.stringify(scaleJob('endless', ENDLESS)),
      })) as { id: string };
      await until(async () => (await getJson(`${server!.url}/v1/evaluations/${id}`)).phase === 'check', {
        timeoutMs: 60_000,
        what: 'the job to run its check',
        pollMs: 50,
      });
      // The kernel is on the GPU: nvidia-smi lists a new process (by this namespace's pid or the host's), or shows
      // the GPU busy or a context's memory taken.
      let apps: ComputeApp[] = [];
      await until(
        async () => {
          apps = ((await computeApps()) ?? []).filter((a) => !baseline.pids.has(a.pid));
          const load = await gpuLoad(uuid);
          return (
            apps.length > 0 ||
            (load.utilizationPercent ?? 0) >= 50 ||
            (load.memoryUsedMiB ?? 0) >= (baseline.load.memoryUsedMiB ?? Infinity) + 100
          );
        },
        { timeoutMs: 30_000, what: 'the kernel to show on the GPU', pollMs: 50 },
      );
      const tree = descendantsOf(server.pid);
      const forkers = tree.filter((p) => commandLine(p).includes('forker-main'));
      const workers = tree.filter((p) => commandLine(p).includes('worker/main'));
      expect(forkers).toHaveLength(1);
      expect(workers.length).toBeGreaterThanOrEqual(1); // the one running, and the pre-started next one
      seen.push(...forkers, ...workers);
      const onGpu = new Set([...apps.map((a) => a.pid), ...workers]);

      process.kill(server.pid, 'SIGKILL');
      expect((await server.exited).signal).toBe('SIGKILL');
      const t0 = Date.now();
      expect(await stillAliveAfter(seen, 15_000)).toEqual([]);
      // And the GPU let go: none of those processes listed, the SMs idle, the context's memory back.
      let held: string | undefined;
      do {
        const listed = ((await computeApps()) ?? []).filter((a) => onGpu.has(a.pid)).map((a) => a.pid);
        const load = await gpuLoad(uuid);
        const busy = (load.utilizationPercent ?? 0) > Math.max(5, baseline.load.utilizationPercent ?? 0);
        const memory = (load.memoryUsedMiB ?? 0) > (baseline.load.memoryUsedMiB ?? Infinity) + 64;
        held =
          listed.length > 0
            ? `nvidia-smi still lists ${listed.join(', ')}`
            : busy || memory
              ? `the GPU still shows ${JSON.stringify(load)} (before the job: ${JSON.stringify(baseline.load)})`
              : undefined;
        if (held !== undefined) await new Promise((r) => setTimeout(r, 200));
      } while (held !== undefined && Date.now() - t0 < 15_000);
      expect(held).toBeUndefined();
    } finally {
      for (const pid of seen) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) {
        server.child.kill('SIGKILL');
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
