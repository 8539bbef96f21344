// SPDX-License-Identifier: MIT
// The service's real GPU worker (server/src/run/worker/main.ts) under its slot, on a GPU: a job that passes (and the
// pre-started child holding no context meanwhile), a kernel that never ends (TIMEOUT, its PID leaves the GPU, the next
// job passes), and an illegal address (RUNTIME_ERROR with the sticky flag, the child replaced, the next job passes),
// in both isolations. Skipped without a GPU (describeGpu).
import type { EvalJob, EvalReport } from 'cudakit';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { workerScript } from '../../src/run/child.js';
import { jobDeadlines } from '../../src/run/deadlines.js';
import { runProbe } from '../../src/run/local-pool.js';
import { computeApps } from '../../src/run/nvidia-smi.js';
import type { SlotOutcome } from '../../src/run/pool.js';
import type { DeviceFacts } from '../../src/run/protocol.js';
import { GpuSlot, type Isolation } from '../../src/run/slot.js';
import { verdictOf } from '../../src/judge/verdict.js';
import { describeGpu } from '../../../test/helpers.js';
import { SAXPY, SAXPY_ILLEGAL } from '../../../test/support/kernels.js';
import { untilIdle } from '../../../test/support/until.js';

const N = 1 << 16;
// clock64() is never negative in practice: the loop never ends, and the compiler cannot drop it.
const ENDLESS = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  long long t = 0;
  while (t >= 0) t = clock64();
  y[0] = (float)t;
}
`;
const job = (source: string): EvalJob => ({
  source,
  kernel: 'saxpy',
  grid: N / 256,
  block: 256,
  args: ['f32=2.5', `ptr:f32[${N}]=uniform(-1,1)`, `ptr:f32[${N}]=uniform(-1,1):out`, `i32=${N}`],
  reference: { source: { text: SAXPY, name: 'ref.cu' }, kernel: 'saxpy' },
  check: { trials: 2 },
  timing: { preset: 'quick' },
});

function report(o: SlotOutcome): EvalReport {
  if (o.kind !== 'report') throw new Error(`expected a report, got ${JSON.stringify(o)}`);
  return o.report as EvalReport; // these jobs are EvalJobs
}

let facts: DeviceFacts;
const slots: GpuSlot[] = [];

async function readySlot(isolation: Isolation): Promise<GpuSlot> {
  const slot = new GpuSlot({ facts, classes: ['any'], isolation, worker: 'real', startTimeoutMs: 60_000 });
  slots.push(slot);
  await slot.start();
  expect(slot.info()).toMatchObject({ state: 'idle', lastError: undefined });
  return slot;
}

describeGpu('the GPU worker under its slot', () => {
  beforeAll(async () => {
    const probe = await runProbe(workerScript('probe', 'real'), {}, 60_000);
    expect(probe.devices.length).toBeGreaterThan(0);
    facts = probe.devices[0]!;
  });
  afterEach(async () => {
    await Promise.all(slots.splice(0).map((s) => s.stop()));
  });

  it('runs a passing job; the pre-started child holds no CUDA context meanwhile', async () => {
    const slot = await readySlot('process');
    let spareHadContext: boolean | undefined;
    const r = report(
      await slot.lease()!.run('pass', job(SAXPY), 'salt', jobDeadlines(job(SAXPY), 120), {
        onPhase: (phase) => {
          if (phase !== 'time') return;
          void computeApps().then((apps) => {
            const spare = slot.pids().others[0]?.pid;
            if (apps !== undefined && spare !== undefined) spareHadContext = apps.some((a) => a.pid === spare);
          });
        },
      }),
    );
    expect(r.error).toBeUndefined();
    expect(verdictOf(r)).toBe('PASSED');
    expect(r.phases.map((p) => p.phase)).toEqual(['validate', 'compile', 'load', 'check', 'time', 'recheck']);
    expect(typeof r.timing?.stats.median).toBe('number');
    expect(spareHadContext).not.toBe(true);
    await untilIdle(slot, 60_000);
  });

  for (const isolation of ['process', 'warm'] as const) {
    it(`times out a kernel that never ends, frees the GPU, and the next job passes (${isolation})`, async () => {
      const slot = await readySlot(isolation);
      const pid = slot.pids().current!;
      const d = jobDeadlines(job(ENDLESS), 120);
      d.phaseMs.check = 3_000;
      const t0 = performance.now();
      const outcome = await slot.lease()!.run('endless', job(ENDLESS), 'salt', d, {});
      expect(outcome).toEqual({ kind: 'timeout', phase: 'check', limitMs: 3_000, scope: 'phase' });
      expect(performance.now() - t0).toBeLessThan(3_000 + 30_000); // load included
      await untilIdle(slot, 60_000); // not quarantined: the GPU dropped the PID
      expect((await computeApps())?.some((a) => a.pid === pid) ?? false).toBe(false);
      const next = report(await slot.lease()!.run('after', job(SAXPY), 'salt', jobDeadlines(job(SAXPY), 120), {}));
      expect(verdictOf(next)).toBe('PASSED');
    });

    it(`reports an illegal address as RUNTIME_ERROR and replaces the child (${isolation})`, async () => {
      const slot = await readySlot(isolation);
      const pid = slot.pids().current!;
      const r = report(
        await slot.lease()!.run('fault', job(SAXPY_ILLEGAL), 'salt', jobDeadlines(job(SAXPY_ILLEGAL), 120), {}),
      );
      expect(verdictOf(r)).toBe('RUNTIME_ERROR');
      expect(r).toMatchObject({ passed: false, phase: 'check', error: { kind: 'cuda', sticky: true } });
      await untilIdle(slot, 60_000);
      expect(slot.pids().current).not.toBe(pid);
      const next = report(await slot.lease()!.run('after', job(SAXPY), 'salt', jobDeadlines(job(SAXPY), 120), {}));
      expect(verdictOf(next)).toBe('PASSED');
    });
  }
});
