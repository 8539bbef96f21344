// SPDX-License-Identifier: MIT
// The adversarial suite (test/adversarial/) through the service on a GPU: each kernel is a stranger's /v1/evaluations
// job (source and reference as text, the task's arguments, launch and tolerances), run by the real worker in its own
// process. Every gaming kernel ends with a verdict on its results (never PASSED or SUSPICIOUS, never a harness
// error), every honest one PASSED, and none is flagged; the per-element memo, right on every launch, passes and reads
// no faster than the reference it memoises. test/gpu/adversarial.test.ts runs the same kernels through evaluate().
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { type App } from '../../src/http/shared.js';
import { LocalGpuPool } from '../../src/run/local-pool.js';
import { EmbeddedQueue } from '../../src/schedule/embedded-queue.js';
import { EvalService } from '../../src/service.js';
import { MemoryJobStore } from '../../src/store/memory.js';
import { describeGpu } from '../../../test/helpers.js';
import { evaluationThrough } from '../support/app-harness.js';

interface Entry {
  file: string;
  kernel: string;
  task: 'map' | 'dot';
  family: string;
  expect: 'pass' | 'fail';
}
interface Task {
  job: { args: string[]; grid: number; block: number; reference: { source: { file: string }; kernel: string } };
}

const SUITE = new URL('../../../test/adversarial/', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, SUITE), 'utf8');
const manifest = JSON.parse(read('manifest.json')) as Entry[];
const tasks = JSON.parse(read('tasks.json')) as Record<Entry['task'], Task>;
/** Verdicts on a kernel's results: what a gaming kernel must get. */
const ON_RESULTS = ['INCORRECT', 'UNWRITTEN', 'INPUT_MODIFIED', 'NON_FINITE', 'ALL_ZERO', 'NONDETERMINISTIC'];
/** Right on every launch, wrong only on the clock: it passes, and its time is what is judged. */
const CLOCK_ONLY = new Set(['replay_elementwise']);

let app: App;
let service: EvalService;
let store: MemoryJobStore;
const medianMs = new Map<string, number>();

/** The stranger's request: every file inlined as text, nothing for the service to read. */
function requestOf(e: Entry): Record<string, unknown> {
  const { reference, ...job } = tasks[e.task].job;
  return {
    ...job,
    source: { text: read(e.file), name: e.file.slice('kernels/'.length) },
    kernel: e.kernel,
    reference: { source: { text: read(reference.source.file), name: 'reference.cu' }, kernel: reference.kernel },
    timing: { preset: 'quick' },
    timeoutSeconds: 120,
  };
}

const evaluation = (body: Record<string, unknown>) => evaluationThrough(app, body, 150_000);

describeGpu('the adversarial suite through the service', () => {
  beforeAll(async () => {
    const pool = new LocalGpuPool({ isolation: 'process', gpus: [0], worker: 'real' });
    store = new MemoryJobStore();
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
    await store?.close();
  });

  it.each(manifest.map((e) => [e.kernel, e.family, e.expect, e] as const))(
    '%s (%s): %s',
    async (_, __, verdict, e) => {
      const ev = await evaluation(requestOf(e));
      const said = JSON.stringify({ verdict: ev.verdict, status: ev.status, error: ev.error });
      if (verdict === 'pass' || CLOCK_ONLY.has(e.kernel)) {
        expect(ev.verdict, said).toBe('PASSED');
        medianMs.set(e.kernel, ev.report.timing.stats.median as number);
      } else {
        expect(ON_RESULTS, said).toContain(ev.verdict);
      }
    },
    180_000,
  );

  it('the per-element memo reads no faster than the reference it memoises', () => {
    // Fresh inputs leave replay_elementwise's memo nothing to hit: it does the reference's work, and a lookup more.
    const memo = manifest.find((e) => CLOCK_ONLY.has(e.kernel))!;
    const reference = tasks.map.job.reference.kernel;
    expect(medianMs.get(reference)).toBeGreaterThan(0);
    expect(medianMs.get(memo.kernel)!).toBeGreaterThan(0.9 * medianMs.get(reference)!);
  });
});
