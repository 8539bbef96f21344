// SPDX-License-Identifier: MIT
// What physics allows: each GPU's peak memory bandwidth and peak arithmetic rate from NVIDIA's datasheets, the
// shortest time a launch that moves `bytes` and computes `flops` can take on it, and the rules that mark a passing
// kernel SUSPICIOUS (faster than the device can be). A flagged result is kept and reviewable, not rejected: the
// reason is in its error, and a timing cheat (replaying cached outputs, fabricated times) is what these catch.
import type { EvalJob, EvalReport, BenchResult } from 'cudakit';

export interface DevicePeak {
  /** Matches the driver's device name ('NVIDIA H100 80GB HBM3'). */
  name: RegExp;
  arch: string;
  /** Peak DRAM bandwidth, GB/s (10^9 bytes). */
  memoryGbPerS: number;
  /**
   * The largest arithmetic rate the datasheet gives, TFLOP/s: tensor cores at the lowest precision, with sparsity. A
   * job's `flops` does not say which precision it counts, so the floor must hold for the fastest one.
   */
  peakTflopsPerS: number;
}

/**
 * Datasheet figures. Sources:
 * - H100 SXM5 / PCIe / NVL: NVIDIA H100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h100/
 *   (3.35 TB/s, 2 TB/s, 3.9 TB/s; FP8 with sparsity 3,958 / 3,026 / 3,341 TFLOPS).
 * - H200 SXM / NVL: NVIDIA H200 datasheet, https://www.nvidia.com/en-us/data-center/h200/ (4.8 TB/s; FP8 with
 *   sparsity 3,958 / 3,341 TFLOPS).
 * - GH200: https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/ (HBM3e 4.9 TB/s; FP8 3,958 TFLOPS).
 * - A100 SXM4 / PCIe: NVIDIA A100 datasheet, https://www.nvidia.com/en-us/data-center/a100/ (80 GB: 2,039 / 1,935
 *   GB/s, 40 GB: 1,555 GB/s; FP16 tensor with sparsity 624 TFLOPS).
 * - B200: NVIDIA HGX B200 datasheet, https://www.nvidia.com/en-us/data-center/hgx/ (8 TB/s; FP4 with sparsity 18
 *   PFLOPS per GPU).
 * - L40S: https://www.nvidia.com/en-us/data-center/l40s/ (864 GB/s; FP8 with sparsity 1,466 TFLOPS).
 * - L4: https://www.nvidia.com/en-us/data-center/l4/ (300 GB/s; FP8 with sparsity 485 TFLOPS).
 * Order matters: the first match wins ('H200 NVL' before 'H200', 'GH200' before both).
 */
export const DEVICE_PEAKS: readonly DevicePeak[] = [
  { name: /GH200/i, arch: 'sm_90', memoryGbPerS: 4900, peakTflopsPerS: 3958 },
  { name: /H200 NVL/i, arch: 'sm_90', memoryGbPerS: 4800, peakTflopsPerS: 3341 },
  { name: /H200/i, arch: 'sm_90', memoryGbPerS: 4800, peakTflopsPerS: 3958 },
  { name: /H100 NVL/i, arch: 'sm_90', memoryGbPerS: 3900, peakTflopsPerS: 3341 },
  { name: /H100 PCIe/i, arch: 'sm_90', memoryGbPerS: 2000, peakTflopsPerS: 3026 },
  { name: /H100/i, arch: 'sm_90', memoryGbPerS: 3350, peakTflopsPerS: 3958 },
  { name: /A100.*80GB.*PCIe/i, arch: 'sm_80', memoryGbPerS: 1935, peakTflopsPerS: 624 },
  { name: /A100.*80GB/i, arch: 'sm_80', memoryGbPerS: 2039, peakTflopsPerS: 624 },
  { name: /A100/i, arch: 'sm_80', memoryGbPerS: 1555, peakTflopsPerS: 624 },
  { name: /B200/i, arch: 'sm_100', memoryGbPerS: 8000, peakTflopsPerS: 18000 },
  { name: /L40S/i, arch: 'sm_89', memoryGbPerS: 864, peakTflopsPerS: 1466 },
  { name: /\bL4\b/i, arch: 'sm_89', memoryGbPerS: 300, peakTflopsPerS: 485 },
];

/** A passing result faster than a tenth of its baseline's time is implausible enough to review. */
export const MAX_PLAUSIBLE_SPEEDUP = 10;

/**
 * The peaks of a device: by its name, else the largest of any known device of its arch (an unknown sm_90 board is
 * held to the fastest sm_90 known, so the floor stays a floor). Undefined for an arch with no known device.
 */
export function peakOf(device: { name?: string | undefined; arch?: string | undefined }): DevicePeak | undefined {
  const byName = device.name === undefined ? undefined : DEVICE_PEAKS.find((p) => p.name.test(device.name!));
  if (byName !== undefined) return byName;
  const sameArch = DEVICE_PEAKS.filter((p) => p.arch === device.arch);
  if (sameArch.length === 0) return undefined;
  return {
    name: /.*/,
    arch: device.arch!,
    memoryGbPerS: Math.max(...sameArch.map((p) => p.memoryGbPerS)),
    peakTflopsPerS: Math.max(...sameArch.map((p) => p.peakTflopsPerS)),
  };
}

/**
 * The shortest time one launch can take, ms: its DRAM traffic at peak bandwidth, or its arithmetic at peak rate,
 * whichever is longer. Up to `l2Bytes` of the traffic may be served by the L2 cache instead of DRAM (writes that
 * stay there, data a hot run left there), so only the rest counts. Undefined when neither figure is known.
 */
export function rooflineFloorMs(
  work: { bytes?: number | undefined; flops?: number | undefined },
  peak: DevicePeak,
  l2Bytes: number,
): number | undefined {
  const { bytes, flops } = work;
  const floors: number[] = [];
  if (bytes !== undefined && bytes > 0) floors.push((Math.max(0, bytes - l2Bytes) / (peak.memoryGbPerS * 1e9)) * 1e3);
  if (flops !== undefined && flops > 0) floors.push((flops / (peak.peakTflopsPerS * 1e12)) * 1e3);
  return floors.length === 0 ? undefined : Math.max(...floors);
}

/**
 * Why a passing report is SUSPICIOUS, or [] when it is not: its bandwidth above the measured peak even at the low
 * end of its interval, its median time below the roofline floor of the device it ran on, or a speedup over its
 * baseline of more than MAX_PLAUSIBLE_SPEEDUP.
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
  const peak = peakOf({ name, arch });
  const work = { bytes: job.timing?.bytes ?? job.bytes, flops: job.timing?.flops ?? job.flops };
  if (timing !== undefined && peak !== undefined) {
    const floorMs = rooflineFloorMs(work, peak, timing.env.l2Bytes);
    const medianMs = timing.stats.median;
    if (floorMs !== undefined && medianMs < floorMs) {
      reasons.push(
        `median ${formatMs(medianMs)} is below the roofline floor of ${formatMs(floorMs)} on ${name ?? arch} ` +
          `(${peak.memoryGbPerS} GB/s, ${peak.peakTflopsPerS} TFLOP/s)`,
      );
    }
  }
  const speedup = report.comparison?.speedup;
  if (speedup !== undefined && speedup > MAX_PLAUSIBLE_SPEEDUP) {
    reasons.push(`${speedup.toFixed(1)}× faster than its baseline (more than ${MAX_PLAUSIBLE_SPEEDUP}×)`);
  }
  return reasons;
}

function formatMs(ms: number): string {
  return ms >= 1 ? `${ms.toPrecision(3)} ms` : `${(ms * 1e3).toPrecision(3)} µs`;
}
