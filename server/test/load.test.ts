// SPDX-License-Identifier: MIT
// The service under load on loopback (server/bench/loadgen.ts): the real binary, 4 fake GPUs, fake jobs of 20-100 ms
// in process-per-job isolation, 64 clients submitting 2 000 jobs on a 60 s schedule and long-polling each to its end.
// Only the correctness bounds are asserted (no 5xx, every job accepted and ended exactly once within 240 s, no GPU
// running two jobs at once, no worker reused or left behind); the speed of the run is the benchmark's
// (server/bench/load.ts, RESULTS.md). Also: the benchmark's writer replaces only its own section of RESULTS.md.
import { describe, expect, it } from 'vitest';
import { replaceSection } from '../bench/results.js';
import { failedChecks, overlapsOf, runLoad } from '../bench/loadgen.js';

describe('load', () => {
  it('2,000 jobs from 64 clients on 4 fake GPUs: no 5xx, each ends exactly once within 240 s, no overlap', async () => {
    const report = await runLoad({
      jobs: 2000,
      clients: 64,
      gpus: 4,
      jobMs: [20, 100],
      submitWindowMs: 60_000,
      // Submissions that the queue's cap holds back may go on past the window. The whole run's bound is liveness,
      // not speed: 2,000 worker processes started on 2 cores take 150 to 180 s on this machine class.
      submitDeadlineMs: 240_000,
      deadlineMs: 240_000,
      main: 'source',
      logLevel: 'warn',
    });
    const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
    console.log(
      `load: last submission ${seconds(report.submitPhaseMs)}, last end ${seconds(report.durationMs)}, ` +
        `${report.jobsPerSecond.toFixed(1)} jobs/s, submit p99 ${report.submitMs.p99.toFixed(1)} ms, ` +
        `at most ${report.maxOpen} open`,
    );
    expect(failedChecks(report)).toEqual([]);
    // The same, spelled out: what the checks above are made of.
    expect(report.accepted).toBe(2000);
    expect(report.fiveXx).toEqual([]);
    expect(report.unfinished).toEqual([]);
    expect(report.endToEndMs.n).toBe(2000);
    expect(report.durationMs).toBeLessThanOrEqual(240_000);
    expect(report.doneNotOnce).toEqual([]);
    expect(report.runNotOnce).toEqual([]);
    expect(report.workerOverlaps).toEqual([]);
    expect(report.leaseOverlaps).toEqual([]);
    expect(report.workersReused).toEqual([]);
    expect(report.orphans).toEqual([]);
    expect(report.server.exit).toEqual({ code: 0, signal: null });
    // Every GPU took work; the clients kept the queue under its cap (its 503 would be a 5xx).
    expect(Object.keys(report.perGpu)).toHaveLength(4);
    expect(report.maxOpen).toBeLessThanOrEqual(1000);
  }, 300_000);

  it('finds two jobs at once on a GPU, and allows one to start where the other ended', () => {
    const gpu = 'GPU-0';
    expect(
      overlapsOf([
        { gpu, id: 'a', start: 0, end: 10 },
        { gpu, id: 'b', start: 10, end: 20 },
        { gpu: 'GPU-1', id: 'c', start: 5, end: 15 },
      ]),
    ).toEqual([]);
    const found = overlapsOf([
      { gpu, id: 'a', start: 0, end: 100 },
      { gpu, id: 'b', start: 10, end: 20 },
      { gpu, id: 'c', start: 50, end: 60 },
    ]);
    expect(found).toHaveLength(2);
    expect(found[0]).toMatch(/b .* began before a/);
    expect(found[1]).toMatch(/c .* began before a/);
  });

  it("the benchmark's writer replaces only its own section of RESULTS.md, and begins the file if absent", () => {
    const fresh = replaceSection(undefined, 'load', 'LOAD 1');
    expect(fresh).toMatch(/^# Service benchmark results\n/);
    expect(fresh).toContain('<!-- begin:load -->\nLOAD 1\n<!-- end:load -->\n');
    const withGpu = `${fresh}\n<!-- begin:gpu -->\nGPU\n<!-- end:gpu -->\n`;
    const again = replaceSection(withGpu, 'load', 'LOAD 2\n');
    expect(again).toBe(withGpu.replace('LOAD 1', 'LOAD 2'));
    const gpuOnly = '# Service benchmark results\n\nintro\n\n<!-- begin:gpu -->\nGPU\n<!-- end:gpu -->\n';
    expect(replaceSection(gpuOnly, 'load', 'LOAD')).toBe(`${gpuOnly}\n<!-- begin:load -->\nLOAD\n<!-- end:load -->\n`);
  });
});
