// SPDX-License-Identifier: MIT
// One measurement (docs/benchmarking.md): warm-up until the clock has ramped, then batches of samples until the
// stopping rule says stop ('The stopping rule', stats.ts), rejecting throttled samples ('Clock and throttling'), with
// the drift probe before and after (drift.ts) and, for preset 'rigorous', the run taken again after a drift.
import { setTimeout as sleep } from 'node:timers/promises';
import type { DriftProbe } from '../core/sampler.js';
import type { BenchOptions } from './bench-options.js';
import { MAX_RETAKES, driftOf, driftWarning, settle } from './drift.js';
import { type Session, named } from './session.js';
import { type StoppingRule, shouldStop, throttled } from './stats.js';
import type { BenchSample, BenchTimer, DriftReport } from './types.js';

/** @internal One measurement's samples and how it ended. */
export interface Run {
  samples: BenchSample[];
  accepted: number[];
  rejected: number;
  warmupRuns: number;
  wallMs: number;
  converged: boolean;
  stopReason: string;
  launchesPerSample: number;
  /** The timer of every sample in `accepted` ('events' once the session fell back from CUPTI: all of them). */
  timer: BenchTimer;
  /** CUPTI's tick in a sample's unit (ms per launch), as the traces told it; 0 when unknown or timed by events. */
  tickMs: number;
  /** The drift probe around the run (measure() sets it). */
  drift?: DriftReport;
  warnings: string[];
}

/**
 * @internal The run with every sample timed by its events: compare() puts both sides on one timer when one side's
 * CUPTI trace failed.
 */
export function onEvents(run: Run): Run {
  if (run.timer === 'events') return run;
  return { ...run, accepted: toEventTimes(run.samples), timer: 'events', tickMs: 0 };
}

/** Puts every sample on its event time (gpuMs = eventMs) and returns the accepted samples' times. */
function toEventTimes(samples: BenchSample[]): number[] {
  for (const x of samples) x.gpuMs = x.eventMs;
  return samples.filter((x) => !x.rejected).map((x) => x.gpuMs);
}

/**
 * @internal Warm-up, then samples until the stopping rule says stop. A CudaError (a kernel that faults, say) is
 * rethrown naming `label` and the phase: '<label>: warm-up' or '<label>: timing'.
 */
export async function measure(
  s: Session,
  rule: StoppingRule,
  onProgress: BenchOptions['onProgress'],
  label: string,
  retakeOnDrift = false,
): Promise<Run> {
  const at = { phase: 'calibration' };
  try {
    for (let retaken = 0; ; retaken++) {
      const { run, before } = await takeSamples(s, rule, onProgress, at);
      at.phase = 'calibration';
      const drift = driftOf(before, s.sampler.driftProbe(), run.accepted, retaken);
      if (!drift.significant || !retakeOnDrift || retaken >= MAX_RETAKES) {
        if (drift.significant) run.warnings.push(driftWarning(drift, retakeOnDrift));
        return { ...run, drift };
      }
      await settle(s.sampler);
      s.dropGraph(); // the next run builds its own
    }
  } catch (e) {
    throw named(e, `${label}: ${at.phase}`);
  }
}

/** Warm-up, then samples until the stopping rule says stop; `at.phase` follows along ('warm-up', then 'timing'). */
async function takeSamples(
  s: Session,
  rule: StoppingRule,
  onProgress: BenchOptions['onProgress'],
  at: { phase: string },
): Promise<{ run: Run; before: DriftProbe }> {
  at.phase = 'warm-up';
  const t0 = performance.now();
  const flush = s.mode === 'cold';
  const warnings = s.warnings;
  s.prime();
  // Warm-up: ≥ warmupMinRuns runs and ≥ warmupMinMs of GPU time, and until the clock has ramped (≥ 90 % of the
  // highest seen), capped at warmupMaxMs.
  let warmRuns = 0;
  let warmMs = 0;
  let estimateMs = 0;
  for (;;) {
    const batch = s.take(Math.max(1, Math.min(16, rule.warmupMinRuns)), flush);
    for (const x of batch) {
      warmRuns++;
      warmMs += x.gpuMs;
      estimateMs = x.gpuMs;
      s.maxClockSeen = Math.max(s.maxClockSeen, x.clockMHz);
    }
    const ramped = batch.every((x) => x.clockMHz === 0 || x.clockMHz >= 0.9 * s.maxClockSeen);
    const elapsed = performance.now() - t0;
    if ((warmRuns >= rule.warmupMinRuns && warmMs >= rule.warmupMinMs && ramped) || elapsed >= rule.warmupMaxMs) break;
  }
  at.phase = 'timing';
  if (s.mode === 'graph') {
    // Enough launches per replay that a replay lasts ~10 ms, at most 1000 (docs/benchmarking.md, 'Timing modes').
    const launches = Math.max(1, Math.min(1000, Math.round(10 / Math.max(estimateMs, 1e-4))));
    s.buildGraph(launches);
    s.take(2, false); // warm the graph
  }
  // The drift probe, right before the first timed sample (after the warm-up, which may itself change the GPU's state).
  at.phase = 'calibration';
  const before = s.sampler.driftProbe();
  at.phase = 'timing';
  const samples: BenchSample[] = [];
  const accepted: number[] = [];
  const history: number[] = [];
  let rejected = 0;
  let accumulatedMs = 0;
  let recoveryMs = 50;
  let decision = { stop: false, converged: false, reason: '' as string };
  const start = performance.now();
  while (!decision.stop) {
    const perSampleMs = Math.max(estimateMs * (s.graph?.launches ?? 1), 0.02) + 0.05;
    const count = Math.max(1, Math.min(64, Math.floor(25 / perSampleMs)));
    const timerBefore = s.timer;
    const batch = s.take(count, flush);
    if (s.timer !== timerBefore) {
      // CUPTI failed in this batch (timed by its events): the run's earlier samples go on the events' times too.
      accepted.length = 0;
      for (const ms of toEventTimes(samples)) accepted.push(ms); // (not spread: a run can hold 50,000 samples)
      accumulatedMs = accepted.reduce((t, ms) => t + ms, 0) * (s.graph?.launches ?? 1);
    }
    let rejectedNow = 0;
    for (const x of batch) {
      s.maxClockSeen = Math.max(s.maxClockSeen, x.clockMHz);
      x.rejected = throttled(x.clockMHz, s.maxClockSeen, rule.throttleRatio);
      samples.push(x);
      if (x.rejected) {
        rejected++;
        rejectedNow++;
      } else {
        accepted.push(x.gpuMs);
        accumulatedMs += x.gpuMs * (s.graph?.launches ?? 1);
      }
    }
    if (rejectedNow > 0) {
      await sleep(recoveryMs); // let the clock recover, waiting longer each time (nvbench's rule)
      recoveryMs = Math.min(recoveryMs + Math.min(1.5 * recoveryMs, 500), 2000);
    } else {
      recoveryMs = 50;
    }
    const wall = performance.now() - start;
    decision =
      accepted.length > 0
        ? shouldStop(accepted, accumulatedMs, wall, rule, history)
        : { stop: wall >= rule.timeoutMs, converged: false, reason: 'timeout' };
    if (onProgress !== undefined) {
      const last = history[history.length - 1] ?? Number.NaN;
      onProgress({ samples: accepted.length, rejected, elapsedMs: performance.now() - t0, relCI: last });
    }
    await new Promise((r) => setImmediate(r)); // between batches only: never between a start and a stop event
  }
  if (accepted.length === 0) {
    // Never return zero samples silently: take every sample and say why they were all rejected.
    for (const x of samples) {
      x.rejected = false;
      accepted.push(x.gpuMs);
    }
    rejected = 0;
    warnings.push(
      `every sample was taken below ${Math.round(rule.throttleRatio * 100)} % of the highest clock seen; ` +
        'kept them all (the GPU may be power- or thermally-limited)',
    );
  } else if (rejected > 0.1 * samples.length) {
    warnings.push(`${rejected} of ${samples.length} samples were rejected as throttled`);
  }
  if (!decision.converged) warnings.push(`stopped by '${decision.reason}' before the precision target was met`);
  const run: Run = {
    samples,
    accepted,
    rejected,
    warmupRuns: warmRuns,
    wallMs: performance.now() - t0,
    converged: decision.converged,
    stopReason: decision.reason,
    launchesPerSample: s.graph?.launches ?? 1,
    timer: s.timer,
    tickMs: s.timer === 'cupti' ? (s.tickNs ?? 0) / 1e6 / (s.graph?.launches ?? 1) : 0,
    warnings: [...warnings],
  };
  return { run, before };
}
