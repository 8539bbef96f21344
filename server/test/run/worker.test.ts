// SPDX-License-Identifier: MIT
// The real worker (server/src/run/worker/) on a machine without a GPU: its start (cudakit imported, the guard on, the
// driver probed) ends in a `fatal` with the probe's reason, which the slot counts as a failed start; and one job run
// in-process as the worker runs it: the seed mixed with the secret salt, the report made plain JSON. On a GPU host,
// server/test/run/worker.gpu.test.ts runs it for real.
import type { EvalJob } from 'cudakit';
import { describe, expect, it } from 'vitest';
import { machine } from '../../../test/helpers.js';
import { mixSeed, prepareForRun, runJob } from '../../src/run/worker/run.js';
import { SAXPY } from '../../../test/support/kernels.js';
import { fakeSlot } from '../support/slot-helpers.js';

const T = 10_000;

const job: EvalJob = {
  name: 'saxpy',
  source: SAXPY,
  kernel: 'saxpy',
  grid: 1,
  block: 32,
  args: ['f32=2', 'ptr:f32[32]=uniform(-1,1)', 'ptr:f32[32]:out', 'i32=32'],
};

describe('the worker without a GPU', () => {
  it.skipIf(machine.ok)(
    'never becomes capacity: its start fails with the probe reason',
    async () => {
      const slot = fakeSlot({ worker: 'real', maxFailedStarts: 1 });
      await slot.start();
      expect(slot.info()).toMatchObject({ state: 'quarantined', restarts: 1 });
      expect(slot.info().lastError).toMatch(/^the worker did not start: it reported NO_DEVICE before ready: \S/);
      expect(slot.info().lastError).toContain(machine.reason!.split('\n')[0]!.slice(0, 40));
    },
    T,
  );
});

describe('a job as the worker runs it', () => {
  it('mixes the public seed with the secret salt, and leaves the job as it was', () => {
    const mixed = prepareForRun({ ...job, check: { seed: 7, trials: 2 } }, 'salt-a', false);
    expect(mixed.check).toEqual({ seed: mixSeed(7, 'salt-a'), trials: 2 });
    expect(mixed.zeroOnFree).toBeUndefined();
    expect(prepareForRun(job, 'salt-a', false).check!.seed).toBe(mixSeed(42, 'salt-a')); // check()'s default seed
    expect(prepareForRun(job, 'salt-a', true).zeroOnFree).toBe(true);
    expect(job.check).toBeUndefined();

    expect(mixSeed(7, 'salt-a')).toBe(mixSeed(7, 'salt-a'));
    expect(mixSeed(7, 'salt-a')).not.toBe(mixSeed(7, 'salt-b'));
    expect(mixSeed(7, 'salt-a')).not.toBe(mixSeed(8, 'salt-a'));
    for (const s of [0, 1, 42, 2 ** 40]) {
      const m = mixSeed(s, 'x');
      expect(Number.isInteger(m) && m >= 0 && m < 2 ** 32).toBe(true);
    }
  });

  it('reports an invalid job as plain JSON, with phases, and no GPU touched', async () => {
    const phases: string[] = [];
    const bad = { ...job, args: ['f32=2'], grid: 0 };
    const { report } = await runJob(bad, 'salt', { onPhase: (p) => void phases.push(p) });
    expect(phases).toEqual(['validate']);
    expect(report).toMatchObject({ name: 'saxpy', passed: false, phase: 'validate', error: { kind: 'invalid-job' } });
    expect(JSON.parse(JSON.stringify(report))).toEqual(report); // nothing that JSON cannot carry
    expect('timing' in report).toBe(false); // formatJson drops what is undefined
  });

  it('stops before the next phase when its signal is aborted', async () => {
    const abort = new AbortController();
    abort.abort(new Error('shutdown'));
    const { report } = await runJob(job, 'salt', { signal: abort.signal });
    expect(report).toMatchObject({ passed: false, phase: 'validate', error: { kind: 'aborted', code: 'ABORT_ERR' } });
  });
});
