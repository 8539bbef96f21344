// SPDX-License-Identifier: MIT
// What physics allows: each GPU's peak memory bandwidth and peak arithmetic rate from NVIDIA's datasheets, and the
// shortest time a launch that moves `bytes` and computes `flops` can take on it. A time below that floor was not
// measured honestly (cached outputs replayed, a fabricated time), so whoever judges results holds them to it: the
// evaluation service marks such a result SUSPICIOUS. Not the peak bandwidth bench() measures (bench-result.ts), a
// rate to report against: this is a bound no honest run beats, so it takes the datasheets' largest figures. Pure: no
// CUDA or native import, tested without a GPU.

/** The datasheet peaks of one GPU model. */
export interface DevicePeak {
  /** Matches the driver's device name ('NVIDIA H100 80GB HBM3'). */
  name: RegExp;
  /** Its architecture, as `device.arch` names it ('sm_90'). */
  arch: string;
  /** Peak DRAM bandwidth, GB/s (10^9 bytes). */
  memoryGbPerS: number;
  /**
   * The largest arithmetic rate the datasheet gives, TFLOP/s: tensor cores at the lowest precision, with sparsity. A
   * launch's `flops` does not say which precision it counts, so the floor must hold for the fastest one.
   */
  peakTflopsPerS: number;
}

/**
 * The datasheet peaks of the GPUs cudakit knows, looked up by {@link devicePeakOf}. Sources:
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
export const DEVICE_PEAKS: readonly DevicePeak[] = Object.freeze([
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
]);

/**
 * The datasheet peaks of a device: the first entry of {@link DEVICE_PEAKS} its name matches, else the largest of
 * any known device of its arch (an unknown sm_90 board is held to the fastest sm_90 known, so the floor stays a
 * floor). Undefined for an arch with no known device.
 *
 * @param device - What the driver says of the GPU: `device.name` and `device.arch`, or a report's `env.device` and
 *   `env.arch`.
 * @example devicePeakOf({ name: 'NVIDIA H100 PCIe' }) // the H100 PCIe's entry
 */
export function devicePeakOf(device: { name?: string | undefined; arch?: string | undefined }): DevicePeak | undefined {
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
 * stay there, data a hot run left there), so only the rest counts. Undefined when neither figure is known (absent
 * or not positive).
 *
 * @param work - What the launch does: bytes it reads plus bytes it writes, and floating-point operations.
 * @param peak - The device's peaks ({@link devicePeakOf}).
 * @param l2Bytes - The device's L2 size (`BenchResult.env.l2Bytes`), or 0 to count all the traffic.
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
