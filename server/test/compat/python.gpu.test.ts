// SPDX-License-Identifier: MIT
// The original server's own payloads, unchanged, on a GPU with --python: each compares a CUDA kernel with a PyTorch
// reference, which runs in the job's runner (sandboxed, as the worker user) on the candidate's input bytes. Each must
// answer 200, compiled and correct, with both runtimes; a reference that computes something else makes the kernel
// incorrect; one that raises says so. Needs root (the sandbox) and a Python with torch that sees the GPU: $CUDAKIT_
// TEST_PYTHON, else python3 on PATH. Without them the suite skips and says why, unless CUDAKIT_REQUIRE_PYTHON=1.
import { readFileSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { type App } from '../../src/http/shared.js';
import { serviceContainment } from '../../src/run/containment.js';
import { LocalGpuPool } from '../../src/run/local-pool.js';
import { checkPython, pythonHidden, type PythonFacts } from '../../src/run/python.js';
import { findExecutable } from '../../src/run/which.js';
import { EmbeddedQueue } from '../../src/schedule/embedded-queue.js';
import { EvalService } from '../../src/service.js';
import { MemoryJobStore } from '../../src/store/memory.js';
import { describeGpu } from '../../../test/helpers.js';

const FIXTURES = new URL('../fixtures/compat/', import.meta.url);
const ORIGINALS = readdirSync(FIXTURES)
  .filter((f) => /^[a-z_]+\.json$/.test(f))
  .sort();
const fixture = (file: string): Record<string, any> =>
  JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as Record<string, any>;

interface Answer {
  status: string;
  kernel_exec_result: {
    compiled: boolean;
    correctness: boolean;
    runtime: number;
    validation_error?: string;
    metadata: { cudakit: { verdict: string; warnings: string[] } };
  };
  ref_runtime?: Record<string, number>;
}

describeGpu('the original server’s payloads with a PyTorch reference (--python)', () => {
  let app: App | undefined;
  let service: EvalService | undefined;
  let why: string | undefined;
  const store = new MemoryJobStore();

  beforeAll(async () => {
    const python = process.env.CUDAKIT_TEST_PYTHON ?? (await findExecutable('python3'));
    let facts: PythonFacts | undefined;
    let hidden: string[] = [];
    const containment = process.getuid?.() === 0 ? serviceContainment('nobody') : undefined;
    if (containment === undefined) why = 'not root (the sandbox of Python jobs needs root)';
    else if (python === undefined) why = 'no python3 on PATH';
    else {
      hidden = pythonHidden(containment, []);
      facts = await checkPython(python, containment, hidden).catch((e: Error) => {
        why = e.message;
        return undefined;
      });
    }
    if (why !== undefined) {
      if (process.env.CUDAKIT_REQUIRE_PYTHON === '1') throw new Error(`CUDAKIT_REQUIRE_PYTHON=1, but ${why}`);
      console.log(`python GPU tests skipped: ${why}`);
      return;
    }
    console.log(`python GPU tests: Python ${facts!.python}, torch ${facts!.torch}, triton ${facts!.triton}`);
    const pool = new LocalGpuPool({
      isolation: 'process',
      containment: containment!,
      python: facts!,
      pythonService: { path: python!, hidden },
    });
    const queue = new EmbeddedQueue();
    service = new EvalService({ store, submitQueue: queue, runQueue: queue, pool });
    app = await buildApp({ service, underPressure: false });
    await pool.start();
    await service.start();
    expect(pool.unavailableReason).toBeUndefined();
  }, 180_000);

  afterAll(async () => {
    await service?.drain(5000);
    await app?.close();
    await store.close();
  });

  async function post(payload: unknown): Promise<Answer> {
    const res = await app!.inject({ method: 'POST', url: '/compare', payload: payload as object });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Answer;
  }

  it.each(ORIGINALS)(
    '%s, posted as it is: compiled, correct, both timed',
    async (file) => {
      if (app === undefined) return;
      const payload = fixture(file);
      // The original's sum_reduction declares extern __shared__ memory and gives none (the original launched it with
      // 0 bytes): as it is, the kernel faults (CUDA_ERROR_ILLEGAL_ADDRESS), reported as its failure; with the bytes
      // it needs (this server's shared_mem_bytes), it is correct.
      if (file === 'sum_reduction.json') {
        const faulted = (await post(payload)).kernel_exec_result;
        expect(faulted, JSON.stringify(faulted)).toMatchObject({ compiled: true, correctness: false });
        expect(faulted.validation_error).toMatch(/^RUNTIME_ERROR: CUDA_ERROR_ILLEGAL_ADDRESS/);
        payload.custom_kernel.io.launch.shared_mem_bytes = 1024;
      }
      const answer = await post(payload);
      const r = answer.kernel_exec_result;
      expect(answer.status).toBe('success');
      expect(r, JSON.stringify(r)).toMatchObject({ compiled: true, correctness: true });
      expect(r.metadata.cudakit.verdict).toMatch(/^(PASSED|SUSPICIOUS)$/);
      expect(r.runtime).toBeGreaterThan(0);
      expect(answer.ref_runtime!.mean, JSON.stringify(answer)).toBeGreaterThan(0);
      expect(answer.ref_runtime!.min).toBeLessThanOrEqual(answer.ref_runtime!.median!);
    },
    240_000,
  );

  describe('a reference that is wrong, or fails', () => {
    it.each([
      ['computes something else: the kernel is incorrect', 'return a - b', /mismatch|INCORRECT/],
      ['raises: the answer says what it raised', 'raise ValueError("reference broke")', /ValueError|reference broke/],
    ])(
      'a reference that %s',
      async (_, body, message) => {
        if (app === undefined) return;
        const payload = fixture('vector_add.json');
        payload.ref_kernel.source_code = payload.ref_kernel.source_code.replace('return a + b', body);
        const r = (await post(payload)).kernel_exec_result;
        expect(r, JSON.stringify(r)).toMatchObject({ compiled: true, correctness: false });
        expect(r.validation_error).toMatch(message);
      },
      240_000,
    );
  });
});
