// SPDX-License-Identifier: MIT
// measure()'s answer to a drift, without a GPU: a session whose samples and drift probe are scripted. Preset
// 'rigorous' (retakeOnDrift) takes a run whose probe moved again once two probes agree, at most twice, and reports
// the run it kept; otherwise the run stands with a warning.
import { describe, expect, it } from 'vitest';
import { measure } from '../../lib/measure/sampling.js';
import type { Session } from '../../lib/measure/session.js';
import type { BenchSample } from '../../lib/measure/types.js';
import { PRESETS, type StoppingRule } from '../../lib/measure/stats.js';

/** Stops after 20 samples of 10 µs, tightly spread. */
const RULE: StoppingRule = { ...PRESETS.quick, minSamples: 20, maxSamples: 20, warmupMinRuns: 1, warmupMinMs: 0 };

/**
 * A session whose drift probe reads `probes` in turn (the last one from then on) and whose samples read the run's
 * number in microseconds, so the test can tell which run measure() kept.
 */
function scripted(probes: number[]): { session: Session; probesRead: () => number; runsTaken: () => number } {
  let probe = 0;
  let run = 0;
  let inRun = false;
  const session = {
    mode: 'hot',
    graph: undefined,
    timer: 'events',
    tickNs: undefined,
    maxClockSeen: 0,
    warnings: [] as string[],
    prime: (): void => {
      run++;
      inRun = true;
    },
    dropGraph: (): void => {},
    take: (count: number): BenchSample[] =>
      Array.from({ length: count }, (_, i) => {
        const ms = (run + (i % 3) * 1e-4) / 1e3;
        return { gpuMs: ms, eventMs: ms, launchUs: 3, clockMHz: 1980, inputSet: 0, rejected: false };
      }),
    sampler: {
      driftProbe: () => {
        expect(inRun || probe > 0).toBe(true);
        const usPerLaunch = probes[Math.min(probe, probes.length - 1)]!;
        probe++;
        return { usPerLaunch, relCI: 0.002 };
      },
    },
  };
  return { session: session as unknown as Session, probesRead: () => probe, runsTaken: () => run };
}

describe('measure() and the drift probe', () => {
  it('keeps a run whose probe did not move, with no warning', async () => {
    const { session, runsTaken } = scripted([0.8, 0.801]);
    const run = await measure(session, RULE, undefined, 'bench()', true);
    expect(runsTaken()).toBe(1);
    expect(run.drift).toMatchObject({ beforeUs: 0.8, afterUs: 0.801, significant: false, retaken: 0 });
    expect(run.warnings.join('\n')).not.toMatch(/changed during the run/);
  });

  it('without retakes, keeps a run whose probe moved and says so', async () => {
    const { session, runsTaken } = scripted([0.8, 1.0]);
    const run = await measure(session, RULE, undefined, 'bench()', false);
    expect(runsTaken()).toBe(1);
    expect(run.drift).toMatchObject({ significant: true, retaken: 0 });
    expect(run.drift!.change).toBeCloseTo(0.25, 12);
    expect(run.warnings.join('\n')).toMatch(
      /the GPU changed during the run: .* 0\.800 → 1\.000 µs per launch \(\+25\.0 %\)/,
    );
    expect(run.warnings.join('\n')).toMatch(/preset 'rigorous' takes such a run again/);
  });

  it('with retakes, waits for the GPU to settle and keeps the run taken again', async () => {
    // Run 1: 0.8 → 1.0 (the slow state began under it). Settling: 1.0, then 1.0 again 100 ms later (agree). Run 2:
    // 1.0 → 1.0.
    const { session, runsTaken, probesRead } = scripted([0.8, 1.0, 1.0, 1.0, 1.0, 1.0]);
    const run = await measure(session, RULE, undefined, 'bench()', true);
    expect(runsTaken()).toBe(2);
    expect(probesRead()).toBe(6);
    expect(run.drift).toMatchObject({ beforeUs: 1.0, afterUs: 1.0, significant: false, retaken: 1 });
    expect(run.accepted.every((ms) => ms > 0.0019 && ms < 0.0021)).toBe(true); // the second run's samples (2 µs)
    expect(run.warnings.join('\n')).not.toMatch(/changed during the run/);
  });

  it('with retakes, stops after two and warns when the probe keeps moving', async () => {
    // Every run moves the probe by 25 %; settling finds two agreeing probes each time.
    const probes = [0.8, 1.0, 1.0, 1.0, 1.0, 1.25, 1.25, 1.25, 1.25, 1.5625];
    const { session, runsTaken } = scripted(probes);
    const run = await measure(session, RULE, undefined, 'bench()', true);
    expect(runsTaken()).toBe(3);
    expect(run.drift).toMatchObject({ beforeUs: 1.25, afterUs: 1.5625, significant: true, retaken: 2 });
    expect(run.warnings.join('\n')).toMatch(/changed during the run: .*after 2 retakes/);
  });
});
