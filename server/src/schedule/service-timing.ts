// SPDX-License-Identifier: MIT
// The service's timing defaults. A verdict is wanted at the GPU's pace: the library's default preset times to ±0.5 %
// with no cap on GPU time, so a kernel whose interval cannot narrow that far (a very short one) runs on to the
// preset's sample cap. The service times a job that asks for nothing else to ±1 %, and stops it once its samples add
// up to 250 ms of GPU time, with the precision it reached in the report. A job that names its preset, precision or
// cap keeps them ('rigorous' keeps its rigour, uncapped), and a leaderboard's confirmation run keeps the library's
// rules: a rank is confirmed at full precision.
import type { EvalProblem, EvalTimingOptions } from 'cudakit';

/** The service's precision target for a job that sets none: the 95 % interval's half-width relative to the median. */
export const SERVICE_PRECISION = 0.01;
/** The service's cap on a job's timed GPU time, ms (all of a problem's cases together). */
export const SERVICE_MAX_GPU_MS = 250;

/** `timing` with the service's defaults where it sets nothing of its own. */
export function serviceTiming(timing: EvalTimingOptions | undefined): EvalTimingOptions {
  const t = timing ?? {};
  const out: EvalTimingOptions = { ...t };
  const ownTarget = t.precision !== undefined || t.rule?.targetRelCI !== undefined;
  if (t.preset === undefined && !ownTarget) out.precision = SERVICE_PRECISION;
  if (t.preset !== 'rigorous' && t.rule?.maxGpuMs === undefined) out.rule = { ...t.rule, maxGpuMs: SERVICE_MAX_GPU_MS };
  return out;
}

/** A job, or a problem's timing, with the service's timing defaults (not for a confirmation run: see the top). */
export function withServiceTiming<T extends { timing?: EvalTimingOptions } | EvalProblem>(job: T): T {
  return { ...job, timing: serviceTiming(job.timing as EvalTimingOptions | undefined) };
}
