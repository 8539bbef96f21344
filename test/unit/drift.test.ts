// SPDX-License-Identifier: MIT
// The drift probe's verdict without a GPU: a change of the probe beyond the run's own precision (or the probe's, the
// larger) is the GPU changing under the run; within it, noise.
import { describe, expect, it } from 'vitest';
import { driftOf } from '../../lib/measure/bench.js';

/** 200 samples around 10 µs, ±0.5 %: a run whose median is known to about ±0.1 %. */
const tight = Array.from({ length: 200 }, (_, i) => 0.01 * (1 + ((i % 11) - 5) * 0.001));
/** 30 samples scattered over ±20 %: a run whose median is known to a few %. */
const loose = Array.from({ length: 30 }, (_, i) => 0.01 * (1 + ((i * 7) % 41) / 100 - 0.2));

describe('driftOf', () => {
  it("is significant when the probe moved more than the run's interval and its own", () => {
    const d = driftOf({ usPerLaunch: 0.8, relCI: 0.002 }, { usPerLaunch: 1.04, relCI: 0.003 }, tight, 0);
    expect(d.beforeUs).toBe(0.8);
    expect(d.afterUs).toBe(1.04);
    expect(d.change).toBeCloseTo(0.3, 12);
    expect(d.limit).toBeLessThan(0.01);
    expect(d.significant).toBe(true);
    expect(d.retaken).toBe(0);
  });

  it("is noise when the change is within the run's interval", () => {
    const d = driftOf({ usPerLaunch: 1, relCI: 0.002 }, { usPerLaunch: 1.02, relCI: 0.002 }, loose, 1);
    expect(d.limit).toBeGreaterThan(0.02);
    expect(d.significant).toBe(false);
    expect(d.retaken).toBe(1);
  });

  it("is noise when the change is within the probe's own interval, however precise the run", () => {
    const d = driftOf({ usPerLaunch: 1, relCI: 0.05 }, { usPerLaunch: 1.04, relCI: 0.01 }, tight, 0);
    expect(d.limit).toBe(0.05);
    expect(d.significant).toBe(false);
  });

  it('reads a slowdown and a speedup alike', () => {
    expect(driftOf({ usPerLaunch: 1, relCI: 0 }, { usPerLaunch: 0.9, relCI: 0 }, tight, 0).significant).toBe(true);
    expect(driftOf({ usPerLaunch: 1, relCI: 0 }, { usPerLaunch: 1.1, relCI: 0 }, tight, 0).significant).toBe(true);
  });
});
