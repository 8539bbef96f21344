// SPDX-License-Identifier: MIT
// Default deadlines from a job: per phase, timing by preset (or the rule's own timeoutMs) and for a comparison, every
// phase capped by the job's limit, and the presets kept equal to cudakit's; the distributed mode's nesting around
// them (the queue lock's horizon, the HTTP wait).
import type { EvalJob } from 'cudakit';
import { describe, expect, it } from 'vitest';
import { PRESETS } from '../../../lib/index.js';
import { clusterHorizons } from '../../src/cluster/queue.js';
import { PHASE_DEFAULTS_MS, PRESET_TIMEOUT_MS, jobDeadlines } from '../../src/run/deadlines.js';

const job = (more: Partial<EvalJob> = {}): EvalJob => ({
  source: 'x',
  kernel: 'k',
  grid: 1,
  block: 1,
  args: [],
  ...more,
});

describe('jobDeadlines', () => {
  it('gives every phase its default within a long job', () => {
    expect(jobDeadlines(job(), 600)).toEqual({
      jobMs: 600_000,
      phaseMs: {
        validate: 30_000,
        compile: 60_000,
        load: 60_000,
        check: 60_000,
        time: 2 * 10_000 + 30_000,
        recheck: 60_000,
        profile: 120_000,
      },
    });
  });

  it('times by the preset: 2 × its timeoutMs + 30 s, 4 × for a comparison', () => {
    const time = (more: Partial<EvalJob>): number | undefined => jobDeadlines(job(more), 600).phaseMs.time;
    expect(time({ timing: { preset: 'quick' } })).toBe(2 * 2_000 + 30_000);
    expect(time({ timing: { preset: 'default' } })).toBe(2 * 10_000 + 30_000);
    expect(time({ timing: { preset: 'rigorous' } })).toBe(2 * 60_000 + 30_000);
    expect(time({ preset: 'quick' })).toBe(2 * 2_000 + 30_000); // BenchSpec's place of it
    const compare = { source: 'y', kernel: 'k' };
    expect(time({ compare, timing: { preset: 'quick' } })).toBe(4 * 2_000 + 30_000);
    expect(time({ compare, timing: { preset: 'rigorous' } })).toBe(4 * 60_000 + 30_000);
    expect(time({ timing: { preset: 'quick', rule: { timeoutMs: 5_000 } } })).toBe(2 * 5_000 + 30_000);
  });

  it('caps every phase by the whole job, which is timeoutSeconds', () => {
    const d = jobDeadlines(job({ timing: { preset: 'rigorous' } }), 45);
    expect(d.jobMs).toBe(45_000);
    expect(Object.values(d.phaseMs).every((ms) => ms <= 45_000)).toBe(true);
    expect(d.phaseMs).toMatchObject({ validate: 30_000, compile: 45_000, check: 45_000, time: 45_000 });
    expect(jobDeadlines(job(), 5).phaseMs.check).toBe(5_000);
    // A rule without a finite limit: the job's limit is timing's.
    expect(jobDeadlines(job({ timing: { rule: { timeoutMs: Infinity } } }), 90).phaseMs.time).toBe(90_000);
  });

  it('refuses a timeout that is not a positive number of seconds', () => {
    for (const bad of [0, -1, NaN, Infinity]) {
      expect(() => jobDeadlines(job(), bad)).toThrow(RangeError);
    }
    expect(() => jobDeadlines(job(), 0)).toThrow(
      'Expected a positive number of seconds for timeoutSeconds but received 0',
    );
  });

  it("keeps the presets' timeoutMs equal to cudakit's PRESETS", () => {
    for (const [name, rule] of Object.entries(PRESETS)) {
      expect(PRESET_TIMEOUT_MS[name as keyof typeof PRESET_TIMEOUT_MS]).toBe(rule.timeoutMs);
    }
    expect(Object.keys(PRESET_TIMEOUT_MS).sort()).toEqual(Object.keys(PRESETS).sort());
    expect(PHASE_DEFAULTS_MS.compile).toBe(60_000);
  });
});

describe('clusterHorizons (the distributed mode)', () => {
  it('nests every phase < the job < the queue lock horizon < the HTTP wait, for short and long jobs and locks', () => {
    for (const timeoutSeconds of [1, 30, 120, 3600]) {
      for (const maxQueueSeconds of [1, 300, 3600]) {
        for (const lockMs of [2000, 30_000, 300_000]) {
          const deadlines = jobDeadlines(job({ timing: { preset: 'rigorous' } }), timeoutSeconds);
          const h = clusterHorizons({ timeoutSeconds, maxQueueSeconds }, lockMs, lockMs / 2);
          for (const phaseMs of Object.values(deadlines.phaseMs)) expect(phaseMs).toBeLessThanOrEqual(h.jobMs);
          expect(deadlines.jobMs).toBe(h.jobMs);
          expect(h.lockHorizonMs).toBeGreaterThan(h.jobMs);
          // The wait outlasts the queue time plus a first run that dies at its horizon and a redelivered one.
          const redelivery = lockMs + lockMs / 2;
          expect(h.httpWaitMs).toBeGreaterThan(maxQueueSeconds * 1000 + 2 * h.lockHorizonMs + redelivery);
        }
      }
    }
  });
});
