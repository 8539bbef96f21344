// SPDX-License-Identifier: MIT
// The drift probe's verdict without a GPU: a change of the probe beyond the run's own precision (or the probe's, the
// larger) is the GPU changing under the run; within it, noise.
import { describe, expect, it } from 'vitest';
import { driftOf } from '../../lib/measure/drift.js';
import { timerTick, verdict, widenByTick } from '../../lib/measure/stats.js';

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
    expect(d.limit).toBe(0.01); // the floor: the run and the probes are tighter
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

  it('takes a probe that moved less than 1 % as noise, however tight the run and the probes', () => {
    const d = driftOf({ usPerLaunch: 0.996, relCI: 0 }, { usPerLaunch: 0.998, relCI: 0 }, tight, 0);
    expect(d.limit).toBe(0.01);
    expect(d.significant).toBe(false);
  });

  it('reads a slowdown and a speedup alike', () => {
    expect(driftOf({ usPerLaunch: 1, relCI: 0 }, { usPerLaunch: 0.9, relCI: 0 }, tight, 0).significant).toBe(true);
    expect(driftOf({ usPerLaunch: 1, relCI: 0 }, { usPerLaunch: 1.1, relCI: 0 }, tight, 0).significant).toBe(true);
  });
});

describe("a timer's tick in compare()", () => {
  it('finds the tick of samples on whole ticks, and none for samples that are not', () => {
    expect(timerTick([0.004896, 0.00496, 0.004928])).toBeCloseTo(0.000032, 12);
    expect(timerTick([0.004896, 0.004896])).toBe(0); // one value: no tick to tell
    expect(timerTick([0.0048961, 0.00496])).toBe(0); // not whole ns: an event timer's
    // graph mode: a replay of 100 launches is on whole ticks (489,632 and 489,664 ns), a launch is a hundredth
    expect(timerTick([0.00489632, 0.00489664], 100)).toBeCloseTo(0.00000032, 14);
  });

  it('widens a zero-width interval by half a tick on each median: an A/A 2 ticks apart is SAME, not FASTER', () => {
    const ci = { ratio: 4960 / 4896, low: 4960 / 4896, high: 4960 / 4896 };
    expect(verdict(ci)).toBe('FASTER');
    const wide = widenByTick(ci, 0.00496, 0.004896, 0.000032);
    expect(wide.low).toBeCloseTo(4944 / 4912, 9);
    expect(wide.high).toBeCloseTo(4976 / 4880, 9);
    expect(verdict(wide)).toBe('SAME');
    // a real difference stays one: 20 % apart on the same tick
    const far = { ratio: 1.2, low: 1.2, high: 1.2 };
    expect(verdict(widenByTick(far, 0.006, 0.005, 0.000032))).toBe('FASTER');
    expect(widenByTick(ci, 0.00496, 0.004896, 0)).toBe(ci);
  });
});
