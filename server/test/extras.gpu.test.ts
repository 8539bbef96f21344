// SPDX-License-Identifier: MIT
// What a job asks of its worker beside evaluate(), on a GPU through the v1 API: device metrics of a copy kernel
// (one more launch under Nsight Compute after the verdict; null with a warning where there is no ncu), and a
// reference problem the operator installed with a JavaScript reference, which the worker imports. Skipped without a
// GPU (describeGpu).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { findNcu } from '../../lib/measure/profile.js';
import { buildApp } from '../src/http/app.js';
import { type App } from '../src/http/shared.js';
import { LocalGpuPool } from '../src/run/local-pool.js';
import { ProblemRegistry } from '../src/submit/problems.js';
import { EmbeddedQueue } from '../src/schedule/embedded-queue.js';
import { EvalService } from '../src/service.js';
import { MemoryJobStore } from '../src/store/memory.js';
import { describeGpu } from '../../test/helpers.js';
import { evaluationThrough } from './support/app-harness.js';

const N = 16 * 2 ** 20; // f32: 64 MiB per buffer, past L2
const BYTES = 4 * N;
const COPY = `extern "C" __global__ void copy(const float* __restrict__ in, float* __restrict__ out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
`;
const scale = (a: string) => `extern "C" __global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = ${a} * x[i];
}
`;

let dir = '';
let app: App;
let service: EvalService;
let store: MemoryJobStore;

const evaluation = (body: Record<string, unknown>) => evaluationThrough(app, body, 180_000);

describeGpu('the service with device metrics and reference problems', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cudakit-server-extras-'));
    mkdirSync(join(dir, 'scale'));
    writeFileSync(
      join(dir, 'scale', 'problem.json'),
      JSON.stringify({ args: ['x@ptr:f32[65536]=uniform(-1,1)', 'y@ptr:f32[65536]:out', 'n@i32=65536'] }),
    );
    writeFileSync(
      join(dir, 'scale', 'reference.mjs'),
      'export const reference = ([x, y, n]) => { for (let i = 0; i < n; i++) y[i] = 2.5 * x[i]; };\n',
    );
    const pool = new LocalGpuPool({ isolation: 'process', gpus: [0], worker: 'real' });
    store = new MemoryJobStore();
    const queue = new EmbeddedQueue();
    service = new EvalService({
      store,
      submitQueue: queue,
      runQueue: queue,
      pool,
      problems: ProblemRegistry.load(dir),
    });
    app = await buildApp({ service, underPressure: false });
    await pool.start();
    await service.start();
    expect(pool.unavailableReason).toBeUndefined();
  }, 120_000);
  afterAll(async () => {
    await service?.drain(5000);
    await app?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('collects device metrics of a copy kernel after its verdict, or says why not', async () => {
    const ev = await evaluation({
      source: COPY,
      kernel: 'copy',
      grid: N / 256,
      block: 256,
      args: [`ptr:f32[16M]=uniform(-1,1)`, 'ptr:f32[16M]:out', `i64=${N}`],
      reference: { source: { text: COPY, name: 'ref.cu' }, kernel: 'copy' },
      check: { trials: 1 },
      timing: { preset: 'quick' },
      deviceMetrics: true,
      timeoutSeconds: 300,
    });
    expect(ev, JSON.stringify({ ...ev, report: undefined })).toMatchObject({ status: 'succeeded', verdict: 'PASSED' });
    const report = ev.report as { deviceMetrics: any; warnings: string[] };
    if (findNcu(undefined) === undefined) {
      expect(report.deviceMetrics).toBeNull();
      expect(report.warnings.join('\n')).toMatch(/ncu/);
      return;
    }
    expect(report.deviceMetrics, report.warnings.join('\n')).not.toBeNull();
    const read = report.deviceMetrics.metrics['dram__bytes_read.sum'].value as number;
    expect(Math.abs(read / BYTES - 1), `read ${read} of ${BYTES}`).toBeLessThan(0.1);
    expect(report.deviceMetrics.metrics['launch__grid_size'].value).toBe(N / 256);
    // Nothing is timed under ncu: the timing comes from evaluate(), before the profile's launch.
    expect(ev.report.timing).toBeTruthy();
  }, 240_000);

  it("checks a kernel against an installed problem's JavaScript reference, in the worker", async () => {
    const job = (a: string) => ({
      source: scale(a),
      kernel: 'scale',
      grid: 256,
      block: 256,
      reference: { problem: 'scale' },
      check: { trials: 2 },
      timing: { preset: 'quick' },
    });
    const right = await evaluation(job('2.5f'));
    expect(right, JSON.stringify({ ...right, report: undefined })).toMatchObject({
      status: 'succeeded',
      verdict: 'PASSED',
    });
    expect(right.report.check.reference).toBe('the JavaScript reference');
    const wrong = await evaluation(job('2.4f'));
    expect(wrong, JSON.stringify({ ...wrong, report: undefined })).toMatchObject({
      status: 'succeeded',
      verdict: 'INCORRECT',
    });
  }, 240_000);
});
