// SPDX-License-Identifier: MIT
// Two lanes of one GPU with the real worker, on a GPU: standby workers that made their CUDA context before their job,
// jobs leased two at a time, every one passing, and the GPU work of any two jobs never overlapping (a job's from its
// load phase to its result; the next one's load phase begins after the last worker has gone). Skipped without a GPU.
import type { EvalJob, EvalReport } from 'cudakit';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { workerScript } from '../../src/run/child.js';
import { GpuGate } from '../../src/run/gpu-gate.js';
import { jobDeadlines } from '../../src/run/deadlines.js';
import { runProbe } from '../../src/run/local-pool.js';
import type { DeviceFacts } from '../../src/run/protocol.js';
import { GpuSlot } from '../../src/run/slot.js';
import { describeGpu } from '../../../test/helpers.js';
import { SAXPY } from '../../../test/support/kernels.js';

const N = 1 << 20;
const JOB: EvalJob = {
  source: SAXPY,
  kernel: 'saxpy',
  grid: N / 256,
  block: 256,
  args: ['f32=2.5', `ptr:f32[${N}]=uniform(-1,1)`, `ptr:f32[${N}]=uniform(-1,1):out`, `i32=${N}`],
  reference: { source: { text: SAXPY, name: 'ref.cu' }, kernel: 'saxpy' },
  check: { trials: 1 },
  timing: { preset: 'quick' },
};

let facts: DeviceFacts;
const lanes: GpuSlot[] = [];
afterEach(async () => {
  await Promise.all(lanes.splice(0).map((l) => l.stop()));
});

describeGpu('two lanes of one GPU, the real worker', () => {
  beforeAll(async () => {
    const probe = await runProbe(workerScript('probe', 'real'), {}, 60_000);
    expect(probe.devices.length).toBeGreaterThan(0);
    facts = probe.devices[0]!;
  });

  it('runs jobs two at a time with standby contexts, their GPU work one job after another', async () => {
    const gate = new GpuGate();
    for (let i = 0; i < 2; i++) {
      lanes.push(
        new GpuSlot({ facts, classes: ['any'], worker: 'real', gate, context: 'standby', startTimeoutMs: 60_000 }),
      );
    }
    await Promise.all(lanes.map((l) => l.start()));
    const gpuWork: [number, number][] = [];
    const loadMs: number[] = [];
    const runs: Promise<void>[] = [];
    let started = 0;
    await new Promise<void>((done) => {
      const next = (): void => {
        for (const lane of lanes) {
          if (started === 6) return;
          const lease = lane.lease();
          if (lease === undefined) continue;
          const id = `job-${started++}`;
          let loadAt = NaN;
          const run = lease.run(id, JOB, 'salt', jobDeadlines(JOB, 60), {
            onPhase: (phase) => {
              if (phase === 'load') loadAt = performance.now();
            },
          });
          runs.push(
            run.then((o) => {
              expect(o.kind, JSON.stringify(o)).toBe('report');
              const report = (o as { report: EvalReport }).report;
              expect(report.passed, JSON.stringify(report.error)).toBe(true);
              gpuWork.push([loadAt, performance.now()]);
              loadMs.push(report.phases.find((p) => p.phase === 'load')!.ms);
              if (gpuWork.length === 6) done();
            }),
          );
        }
      };
      for (const lane of lanes) lane.onIdle(next);
      next();
    });
    await Promise.all(runs);
    gpuWork.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < gpuWork.length; i++) expect(gpuWork[i]![0]).toBeGreaterThan(gpuWork[i - 1]![1]);
    // With a standby context a job's load phase makes none: module loads alone, not a context's 100 ms and more.
    expect(Math.max(...loadMs), `load phases ${loadMs.map((x) => x.toFixed(1)).join(', ')} ms`).toBeLessThan(50);
    expect(gate.holder).toBeUndefined();
  }, 240_000);
});
