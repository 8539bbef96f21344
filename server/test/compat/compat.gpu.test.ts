// SPDX-License-Identifier: MIT
// The original server's routes on a GPU, end to end: the service with its real worker children (LocalGpuPool), the
// five CUDA-reference variants of the original's own payloads (server/test/fixtures/compat/*.cuda-ref.json) through
// POST /compare, each correct and timed against its reference; sum_reduction without its dynamic shared memory
// (as the original launched it) reported cleanly as the kernel's failure, with the GPU back for the next job;
// expected outputs through POST /evaluate; and the compare verdicts: FASTER against a baseline doing three times the
// work, SAME for a kernel against itself (A/A). Skipped without a GPU (describeGpu).
import { readFileSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { type App } from '../../src/http/shared.js';
import { LocalGpuPool } from '../../src/run/local-pool.js';
import { EmbeddedQueue } from '../../src/schedule/embedded-queue.js';
import { EvalService } from '../../src/service.js';
import { MemoryJobStore } from '../../src/store/memory.js';
import { describeGpu } from '../../../test/helpers.js';
import { SAXPY } from '../../../test/support/kernels.js';

const FIXTURES = new URL('../fixtures/compat/', import.meta.url);
const VARIANTS = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.cuda-ref.json'))
  .sort();
const fixture = (file: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as Record<string, unknown>;
/** The quick preset: a correct answer and a timing, not a publication-grade one. */
const QUICK = { cudakit: { timing: { preset: 'quick' } } };

interface Answer {
  status: string;
  kernel_exec_result: {
    compiled: boolean;
    correctness: boolean;
    runtime: number;
    runtime_stats?: Record<string, number>;
    validation_error?: string;
    compilation_error?: string;
    metadata: {
      gpu_type?: string;
      cudakit: {
        verdict: string;
        warnings: string[];
        compare_verdict?: string;
        speedup?: number | null;
        speedup_ci?: (number | null)[];
      };
    };
  };
  ref_runtime?: Record<string, number>;
}

const N = 1 << 20;
/**
 * y = x, reached by halving the distance to it `iterations` times: x to the last bit after about 30, but the compiler
 * cannot know that, so the time is the iterations' (compute-bound: a million threads of dependent FMAs).
 */
const settle = (iterations: number): string => `extern "C" __global__ void settle(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float half = 0.5f * x[i], v = 0.0f;
  for (int k = 0; k < ${iterations}; k++) v = fmaf(v, 0.5f, half);
  y[i] = v;
}
`;
const tensor = (name: string, role: string, init?: object) => ({
  name,
  type: 'tensor',
  role,
  tensor_spec: { shape: [N], dtype: 'float32', ...(init === undefined ? {} : { init }) },
});
const uniform = { kind: 'uniform', low: -1, high: 1 };
const launch = { grid: { x: N / 256, y: 1, z: 1 }, block: { x: 256, y: 1, z: 1 } };
/** A KernelCode; both sides of a compare get the same io, so the reference is the timed baseline. */
const cuda = (source: string, kernel: string, args: object[]) => ({
  source_code: source,
  kernel_type: 'cuda',
  io: { args, launch },
  metadata: { kernel_name: kernel },
});
const settleArgs = [tensor('x', 'input', uniform), tensor('y', 'output'), { name: 'n', type: 'int', value: N }];
const saxpyArgs = [
  { name: 'a', type: 'float', value: 2.5 },
  tensor('x', 'input', uniform),
  tensor('y', 'output', uniform),
  { name: 'n', type: 'int', value: N },
];

describeGpu('the compatible routes with the real worker', () => {
  let app: App;
  let service: EvalService;
  const store = new MemoryJobStore();

  beforeAll(async () => {
    const pool = new LocalGpuPool({ isolation: 'process' });
    const queue = new EmbeddedQueue();
    service = new EvalService({ store, submitQueue: queue, runQueue: queue, pool });
    app = await buildApp({ service, underPressure: false });
    await pool.start();
    await service.start();
    expect(pool.unavailableReason).toBeUndefined();
  }, 120_000);

  afterAll(async () => {
    await service?.drain(5000);
    await app?.close();
    await store.close();
  });

  async function post(url: string, payload: unknown): Promise<Answer> {
    const res = await app.inject({ method: 'POST', url, payload: payload as object });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Answer;
  }

  it.each(VARIANTS)(
    '%s: correct and timed against its CUDA reference',
    async (file) => {
      const answer = await post('/compare', { ...fixture(file), ...QUICK });
      const r = answer.kernel_exec_result;
      expect(answer.status).toBe('success');
      expect(r, JSON.stringify(r)).toMatchObject({ compiled: true, correctness: true });
      // A double-precision reference far slower than the kernel is no evidence of a cheat: no flag.
      expect(r.metadata.cudakit.verdict).toBe('PASSED');
      expect(r.runtime).toBeGreaterThan(0);
      expect(r.runtime_stats!.min).toBeLessThanOrEqual(r.runtime_stats!.median!);
      expect(r.runtime_stats!.median).toBeLessThanOrEqual(r.runtime_stats!.percentile_95!);
      expect(r.runtime_stats!.percentile_95).toBeLessThanOrEqual(r.runtime_stats!.percentile_99!);
      expect(r.runtime_stats!.percentile_99).toBeLessThanOrEqual(r.runtime_stats!.max!);
      expect(answer.ref_runtime!.mean).toBeGreaterThan(0);
    },
    120_000,
  );

  it('sum_reduction without shared_mem_bytes: the kernel’s failure, reported cleanly; the GPU is back', async () => {
    const payload = fixture('sum_reduction.cuda-ref.json') as {
      custom_kernel: { io: { launch: Record<string, unknown> } };
    };
    delete payload.custom_kernel.io.launch.shared_mem_bytes;
    const failed = await post('/compare', { ...payload, ...QUICK });
    expect(failed.status).toBe('success');
    expect(failed.kernel_exec_result).toMatchObject({ compiled: true, correctness: false });
    expect(failed.kernel_exec_result.metadata.cudakit.verdict).not.toMatch(/^(PASSED|SUSPICIOUS|CRASHED|TIMEOUT)$/);
    expect(failed.kernel_exec_result.validation_error).toMatch(/^[A-Z_]+: /);
    const next = await post('/compare', { ...fixture('sum_reduction.cuda-ref.json'), ...QUICK });
    expect(next.kernel_exec_result).toMatchObject({ compiled: true, correctness: true });
  }, 240_000);

  it('a compare against a baseline doing three times the work: FASTER, with the speedup near 3', async () => {
    const answer = await post('/compare', {
      ref_kernel: cuda(settle(3000), 'settle', settleArgs),
      custom_kernel: cuda(settle(1000), 'settle', settleArgs),
      ...QUICK,
    });
    const r = answer.kernel_exec_result;
    expect(r, JSON.stringify(r)).toMatchObject({ compiled: true, correctness: true });
    const c = r.metadata.cudakit;
    expect(c.verdict).toBe('PASSED');
    expect(c.compare_verdict, JSON.stringify(c)).toBe('FASTER');
    // 3× the FMAs; the memory traffic, the same on both sides, keeps it below 3.
    expect(c.speedup).toBeGreaterThan(1.5);
    expect(c.speedup).toBeLessThan(3.5);
    expect(c.speedup_ci![0]).toBeGreaterThan(1.01);
    expect(answer.ref_runtime!.median).toBeGreaterThan(r.runtime_stats!.median!);
  }, 120_000);

  it('A/A: a kernel compared with itself is SAME', async () => {
    const saxpy = cuda(SAXPY, 'saxpy', saxpyArgs);
    const answer = await post('/compare', { ref_kernel: saxpy, custom_kernel: saxpy, ...QUICK });
    const r = answer.kernel_exec_result;
    expect(r, JSON.stringify(r)).toMatchObject({ compiled: true, correctness: true });
    const c = r.metadata.cudakit;
    expect(c.verdict).toBe('PASSED');
    expect(c.compare_verdict, JSON.stringify(c)).toBe('SAME');
    expect(c.speedup).toBeGreaterThan(0.98);
    expect(c.speedup).toBeLessThan(1.02);
    expect(answer.ref_runtime!.median).toBeGreaterThan(0);
  }, 120_000);

  it('vector_add through POST /evaluate against expected outputs (no reference code at all)', async () => {
    const custom = (fixture('vector_add.cuda-ref.json') as { custom_kernel: unknown }).custom_kernel;
    const five = Buffer.from(new Float32Array(1024).fill(5).buffer).toString('base64');
    const right = await post('/evaluate', {
      kernel: custom,
      cudakit: { ...QUICK.cudakit, expected: { c: { data_b64: five, shape: [1024] } } },
    });
    expect(right.kernel_exec_result).toMatchObject({ compiled: true, correctness: true });
    const six = Buffer.from(new Float32Array(1024).fill(6).buffer).toString('base64');
    const wrong = await post('/evaluate', {
      kernel: custom,
      cudakit: { ...QUICK.cudakit, expected: { c: { data_b64: six, shape: [1024] } } },
    });
    expect(wrong.kernel_exec_result).toMatchObject({ compiled: true, correctness: false });
    expect(wrong.kernel_exec_result.validation_error).toMatch(/^INCORRECT: /);
  }, 240_000);
});
