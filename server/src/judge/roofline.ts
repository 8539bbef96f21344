// SPDX-License-Identifier: MIT
// The rules that mark a passing kernel SUSPICIOUS (faster than the device can be). A flagged result is kept and
// reviewable, not rejected: the reason is in its error, and a timing cheat (replaying cached outputs, fabricated
// times) is what these catch. Each rule stands on evidence, physics: a speedup over the baseline, however large, is
// none (an honest parallel sum reads 15× faster than a naive one), so the ratio stays in the report as information.
// The physics (each GPU's datasheet peaks, the shortest time a launch can take on it) is the library's,
// lib/measure/roofline.ts, so the service and cudakit's evaluations hold results to the same floor.
import { devicePeakOf, rooflineFloorMs, type EvalJob, type EvalReport, type BenchResult } from 'cudakit';

/**
 * Why a passing report is SUSPICIOUS, or [] when it is not: its bandwidth above the measured peak even at the low
 * end of its interval, or its median time (a Python candidate's, its runner's) below the roofline floor of the device
 * it ran on.
 */
export function suspicionsOf(
  report: EvalReport,
  job: EvalJob,
  device: { name?: string | undefined; arch?: string | undefined },
): string[] {
  const reasons: string[] = [];
  // The candidate's timing: bench()'s, or B of a comparison.
  const timing: BenchResult | undefined = report.timing ?? report.comparison?.b;
  const low = timing?.throughput?.percentOfPeakBandwidthLow;
  if (low !== undefined && low > 100) {
    reasons.push(`bandwidth above the measured peak: at least ${low.toFixed(1)}% of it`);
  }
  const name = device.name ?? timing?.env.device;
  const arch = device.arch ?? timing?.env.arch;
  const peak = devicePeakOf({ name, arch });
  const work = { bytes: job.timing?.bytes ?? job.bytes, flops: job.timing?.flops ?? job.flops };
  // A Python candidate is timed by its runner, which clears twice the L2 before each call: no byte it reads can be
  // in L2, so none is discounted from the floor.
  const python = (report as { pythonCandidate?: { timing?: { stats: { median: number } } } }).pythonCandidate?.timing;
  const timed =
    timing !== undefined
      ? { medianMs: timing.stats.median, l2Bytes: timing.env.l2Bytes }
      : python === undefined
        ? undefined
        : { medianMs: python.stats.median, l2Bytes: 0 };
  if (timed !== undefined && peak !== undefined) {
    const floorMs = rooflineFloorMs(work, peak, timed.l2Bytes);
    const { medianMs } = timed;
    if (floorMs !== undefined && medianMs < floorMs) {
      reasons.push(
        `median ${formatMs(medianMs)} is below the roofline floor of ${formatMs(floorMs)} on ${name ?? arch} ` +
          `(${peak.memoryGbPerS} GB/s, ${peak.peakTflopsPerS} TFLOP/s)`,
      );
    }
  }
  return reasons;
}

function formatMs(ms: number): string {
  return ms >= 1 ? `${ms.toPrecision(3)} ms` : `${(ms * 1e3).toPrecision(3)} µs`;
}
