// SPDX-License-Identifier: MIT
// The adversarial suite (test/adversarial/) through evaluate(): every kernel that games a benchmark fails its job,
// and every honest kernel, look-alikes included, passes. One kernel is right on every launch and can only cheat the
// clock (replay_elementwise: a per-element memo that turns repeated inputs into lookups): it passes, and a
// comparison with the task's reference must show it no faster.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { Device, evaluate, type EvalJob } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

interface Entry {
  file: string;
  kernel: string;
  task: 'map' | 'dot' | 'dot-policy';
  family: string;
  expect: 'pass' | 'fail';
}

const SUITE = new URL('../adversarial/', import.meta.url);
const baseDir = fileURLToPath(SUITE);
const read = (path: string): string => readFileSync(new URL(path, SUITE), 'utf8');
const manifest = JSON.parse(read('manifest.json')) as Entry[];
const tasks = JSON.parse(read('tasks.json')) as Record<Entry['task'], { job: Omit<EvalJob, 'source' | 'kernel'> }>;
/** Right on every launch, wrong only on the clock: judged by a comparison, not by the verdict. */
const CLOCK_ONLY = new Set(['replay_elementwise']);

const jobOf = (e: Entry, extra: Partial<EvalJob> = {}): EvalJob => ({
  ...tasks[e.task].job,
  source: { file: e.file },
  kernel: e.kernel,
  timing: { preset: 'quick' },
  ...extra,
});

describeGpu('the adversarial suite through evaluate()', () => {
  it.each(manifest.filter((e) => !CLOCK_ONLY.has(e.kernel)).map((e) => [e.kernel, e.family, e.expect, e] as const))(
    '%s (%s) is judged %s',
    async (_, __, verdict, e) => {
      const report = await evaluate(jobOf(e), { baseDir, device: Device.get(0) });
      // A kernel that fails must fail on its results, never on an error of the harness.
      expect(report.error?.kind ?? 'none', report.error?.message).toBe(verdict === 'pass' ? 'none' : 'verdict');
      expect(report.passed, report.error?.message).toBe(verdict === 'pass');
      if (verdict === 'pass') expect(report.timing!.stats.n).toBeGreaterThanOrEqual(10);
      else expect(['check', 'recheck']).toContain(report.phase);
    },
    60_000,
  );

  it.each([...CLOCK_ONLY])(
    '%s passes, and is no faster than the reference it memoises',
    async (kernel) => {
      const e = manifest.find((m) => m.kernel === kernel)!;
      const reference = tasks[e.task].job.reference as NonNullable<EvalJob['compare']>;
      const report = await evaluate(jobOf(e, { compare: reference, timing: { preset: 'quick', rounds: 3 } }), {
        baseDir,
        device: Device.get(0),
      });
      expect(report.passed, report.error?.message).toBe(true);
      // speedup = reference / candidate: fresh inputs leave the memo nothing to hit, so it does the work and then some.
      expect(report.comparison!.speedup).toBeLessThan(1.1);
    },
    120_000,
  );

  // dot-policy: the dot task's kernels under a tolerance that lets the downgrades through, with the precision policy.
  const judged = manifest.filter((e) => e.task === 'dot' && (e.family === 'honest' || e.family === 'precision'));
  it.each(judged.map((e) => [e.kernel, e.expect, e] as const))(
    '%s under the precision policy is judged %s',
    async (_, verdict, e) => {
      const report = await evaluate(jobOf({ ...e, task: 'dot-policy' }, { timing: { skip: true } }), {
        baseDir,
        device: Device.get(0),
      });
      expect(report.passed, report.error?.message).toBe(verdict === 'pass');
      if (verdict === 'pass') return;
      // Inside the tolerance but for the truncated bf16 accumulator: the policy is what stops them.
      const defence = e.kernel === 'dot_bf16_accum' ? ['mismatch', 'precision'] : ['precision'];
      expect(report.error?.kind).toBe('verdict');
      expect(defence).toContain(report.error?.code);
    },
    60_000,
  );
});
