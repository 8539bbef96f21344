// SPDX-License-Identifier: MIT
// The drift probe around every run (docs/benchmarking.md, 'Drift'): a fixed, tiny workload timed before and after,
// whose change beyond the run's own precision says the GPU changed state while it was measured.
import { setTimeout as sleep } from 'node:timers/promises';
import { Device, typeError } from '../core/index.js';
import { type DriftProbe, Sampler } from '../core/sampler.js';
import { summarize } from './stats.js';
import type { DriftReport } from './types.js';

/**
 * The drift probe bench() takes before and after every run, on `device` (default device 0): replays of a graph of 100
 * launches of an empty kernel, queued behind the harness's spin kernel as samples are, a few ms in all. A reading that
 * moved between two calls says the GPU changed state (docs/benchmarking.md, 'Drift').
 */
export function driftProbe(device?: Device): DriftProbe {
  if (device !== undefined && !(device instanceof Device)) throw typeError('device', 'a Device', device);
  return Sampler.for(device ?? Device.get(0)).driftProbe();
}

/**
 * The least change of the drift probe that counts: its replays are timed by events on a coarse tick, so 20 of them
 * can all read the same and claim no noise at all, while probes of an unchanged GPU differ by up to a few tenths of a
 * percent (bench/drift.ts); the slow state moves it by 20 % and more.
 */
const PROBE_FLOOR = 0.01;

/** @internal Runs taken again after a drift, at most (preset 'rigorous'). */
export const MAX_RETAKES = 2;

/**
 * @internal The drift probe before and after a run against the run's own precision: a change beyond the largest of
 * the run's 95 % interval (relative half-width), the probe's own and 1 % is significant.
 */
export function driftOf(before: DriftProbe, after: DriftProbe, accepted: number[], retaken: number): DriftReport {
  const stats = accepted.length > 0 ? summarize(accepted) : undefined;
  const runCI = stats !== undefined && stats.median > 0 ? (stats.ciHigh - stats.ciLow) / 2 / stats.median : 0;
  const change = after.usPerLaunch / before.usPerLaunch - 1;
  const limit = Math.max(runCI, before.relCI, after.relCI, PROBE_FLOOR);
  return {
    beforeUs: before.usPerLaunch,
    afterUs: after.usPerLaunch,
    change,
    limit,
    significant: Math.abs(change) > limit,
    retaken,
  };
}

/** @internal The warning for a run whose probe moved (`retook`: after its retakes). */
export function driftWarning(d: DriftReport, retook: boolean): string {
  const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)} %`;
  return (
    `the GPU changed during the run: a fixed probe (an empty kernel's launches) read ${d.beforeUs.toFixed(3)} → ` +
    `${d.afterUs.toFixed(3)} µs per launch (${pct(d.change)}), beyond the run's ±${(100 * d.limit).toFixed(1)} %` +
    (retook
      ? ` after ${d.retaken} retakes`
      : "; preset 'rigorous' takes such a run again once the GPU settles (docs/benchmarking.md, 'Drift')")
  );
}

/**
 * @internal Waits until two drift probes 100 ms apart agree within their own noise (at most 2 s): the GPU has settled.
 */
export async function settle(sampler: Sampler): Promise<void> {
  let last = sampler.driftProbe();
  for (let waited = 0; waited < 2000; waited += 100) {
    await sleep(100);
    const now = sampler.driftProbe();
    if (Math.abs(now.usPerLaunch / last.usPerLaunch - 1) <= Math.max(now.relCI, last.relCI)) return;
    last = now;
  }
}
