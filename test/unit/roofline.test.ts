// SPDX-License-Identifier: MIT
// lib/measure/roofline.ts: which datasheet entry a device gets, and the roofline floor against hand-computed times
// (arithmetic in the comments). The rules the evaluation service builds on them are server/test/service.test.ts's.
import { describe, expect, it } from 'vitest';
import * as root from '../../lib/index.js';
import { DEVICE_PEAKS, devicePeakOf, rooflineFloorMs } from '../../lib/measure/roofline.js';

const H200 = { name: 'NVIDIA H200', arch: 'sm_90' };

describe('devicePeakOf', () => {
  it('holds each GPU to its datasheet peaks, an unknown board to the fastest of its arch', () => {
    expect(devicePeakOf({ name: 'NVIDIA H100 80GB HBM3' })!.memoryGbPerS).toBe(3350);
    expect(devicePeakOf({ name: 'NVIDIA H100 PCIe' })!.memoryGbPerS).toBe(2000);
    expect(devicePeakOf({ name: 'NVIDIA H200 NVL' })!.memoryGbPerS).toBe(4800);
    expect(devicePeakOf({ name: 'Some future sm_90 board', arch: 'sm_90' })).toMatchObject({ memoryGbPerS: 4900 });
    expect(devicePeakOf({ name: 'Unknown', arch: 'sm_75' })).toBeUndefined();
  });

  it('takes the first entry a name matches, and the arch alone when there is no name', () => {
    expect(devicePeakOf({ name: 'NVIDIA GH200 480GB' })).toBe(DEVICE_PEAKS[0]);
    expect(devicePeakOf({ name: 'NVIDIA H200 NVL' })!.peakTflopsPerS).toBe(3341);
    expect(devicePeakOf({ name: 'NVIDIA A100-SXM4-80GB' })!.memoryGbPerS).toBe(2039);
    // The largest of each figure among the sm_80 boards, which may come from different entries.
    expect(devicePeakOf({ arch: 'sm_80' })).toMatchObject({ arch: 'sm_80', memoryGbPerS: 2039, peakTflopsPerS: 624 });
    expect(devicePeakOf({})).toBeUndefined();
  });

  it('is exported from the package root with the table, which is frozen', () => {
    expect(root.devicePeakOf).toBe(devicePeakOf);
    expect(root.rooflineFloorMs).toBe(rooflineFloorMs);
    expect(root.DEVICE_PEAKS).toBe(DEVICE_PEAKS);
    expect(Object.isFrozen(DEVICE_PEAKS)).toBe(true);
  });
});

describe('rooflineFloorMs', () => {
  const peak = devicePeakOf(H200)!;

  it('is the DRAM traffic at peak bandwidth, less what L2 may serve', () => {
    // 4.8 GB over 4.8 TB/s is 1 ms; L2's share does not count.
    expect(rooflineFloorMs({ bytes: 4.8e9 }, peak, 0)).toBeCloseTo(1, 9);
    expect(rooflineFloorMs({ bytes: 1e6 }, peak, 60 * 2 ** 20)).toBe(0);
    // (4.8e9 + 60 MiB - 60 MiB) B over 4.8 TB/s is 1 ms again.
    expect(rooflineFloorMs({ bytes: 4.8e9 + 60 * 2 ** 20 }, peak, 60 * 2 ** 20)).toBeCloseTo(1, 9);
  });

  it('is the arithmetic at peak rate when that takes longer', () => {
    // 3.958e12 FLOP at 3,958 TFLOP/s is 1 ms; 4.8e6 B at 4.8 TB/s is 1 µs.
    expect(rooflineFloorMs({ flops: 3.958e12 }, peak, 0)).toBeCloseTo(1, 9);
    expect(rooflineFloorMs({ bytes: 4.8e6, flops: 3.958e12 }, peak, 0)).toBeCloseTo(1, 9);
    expect(rooflineFloorMs({ bytes: 4.8e9, flops: 3.958e9 }, peak, 0)).toBeCloseTo(1, 9);
  });

  it('is undefined when neither figure is known or positive', () => {
    expect(rooflineFloorMs({}, peak, 0)).toBeUndefined();
    expect(rooflineFloorMs({ bytes: 0, flops: 0 }, peak, 0)).toBeUndefined();
    expect(rooflineFloorMs({ bytes: undefined, flops: -1 }, peak, 0)).toBeUndefined();
  });
});
