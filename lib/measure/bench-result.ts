// SPDX-License-Identifier: MIT
// A run as bench()'s result (compare() builds each side's the same way): the statistics (stats.ts), the environment
// the samples were taken in, and the throughput against the device's measured peak bandwidth ('Peak bandwidth' in
// docs/benchmarking.md).
import { createRequire } from 'node:module';
import { type Device, Event, cuptiStatus, nvrtcVersion } from '../core/index.js';
import type { Sampler } from '../core/sampler.js';
import type { ResolvedBenchOptions } from './bench-options.js';
import type { Run } from './sampling.js';
import { type Session, named, release } from './session.js';
import { type PeakEstimate, peakOf, percentOf, summarize } from './stats.js';
import type { BenchEnvironment, BenchResult, PeakBandwidthMethod, Summary, Throughput } from './types.js';

/** Per device: the measured peak bandwidth (once), see peakBandwidth. */
const peaks = new Map<Device, PeakEstimate<PeakBandwidthMethod>>();

/** Timed repetitions of each peak-bandwidth method (after two untimed runs). */
const PEAK_REPETITIONS = 20;

/**
 * The device's measured peak memory bandwidth (GB/s, bytes read + written), once per device: the best of a
 * copy-engine device-to-device copy, a 16-byte-vector copy kernel and a 16-byte-vector read-only stream, each over up
 * to 1 GiB (a quarter of free memory; far beyond L2). One memcpy alone is beaten by well-vectorized kernels; the best
 * of the three is what a kernel can realistically reach. The peak is a measurement too: each method runs
 * PEAK_REPETITIONS times, and the peak is the fastest method's median with the 95 % confidence interval of that
 * median, so a kernel at the peak can be told from one above it (see percentOf).
 */
function peakBandwidth(sampler: Sampler): PeakEstimate<PeakBandwidthMethod> {
  const device = sampler.device;
  const known = peaks.get(device);
  if (known !== undefined) return known;
  const stream = sampler.stream;
  const bytes = Math.max(16 << 20, Math.min(1 << 30, Math.floor(device.memoryInfo().freeBytes / 4 / 16) * 16));
  using a = device.alloc(bytes);
  using b = device.alloc(bytes);
  const methods: [PeakBandwidthMethod, number, () => void][] = [
    ['memcpy', 2 * bytes, () => b.copyFrom(a, { stream })],
    ['copy kernel', 2 * bytes, () => sampler.copyByKernel(a, b, bytes)],
    ['read stream', bytes, () => sampler.readByKernel(a, bytes)],
  ];
  const rates: Partial<Record<PeakBandwidthMethod, number[]>> = {};
  const e0 = stream.record();
  let e1: Event | undefined;
  let failed = true;
  try {
    e1 = stream.record();
    // One method at a time: interleaved, a read stream after a copy pays for the copy's dirty L2 lines
    // (docs/benchmarking.md, 'Peak bandwidth'). The first two runs of each warm clocks and TLBs.
    for (const [method, moved, enqueue] of methods) {
      const list: number[] = (rates[method] = []);
      for (let run = -2; run < PEAK_REPETITIONS; run++) {
        e0.record();
        enqueue();
        e1.record();
        const ms = Event.elapsedMs(e0, e1);
        if (run >= 0) list.push(moved / (ms * 1e-3) / 1e9);
      }
    }
    failed = false;
  } finally {
    release(failed, () => e0.dispose());
    release(failed, () => e1?.dispose());
  }
  const peak = peakOf(rates as Record<PeakBandwidthMethod, number[]>);
  peaks.set(device, peak);
  return peak;
}

let cudakitVersion: string | undefined;
function environment(sampler: Sampler): BenchEnvironment {
  cudakitVersion ??= (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
  const device = sampler.device;
  let nvrtc: string | undefined;
  try {
    nvrtc = nvrtcVersion();
  } catch {
    nvrtc = undefined;
  }
  return {
    device: device.name,
    arch: device.arch,
    smCount: device.multiprocessorCount,
    l2Bytes: device.l2CacheBytes,
    maxClockMHz: device.clockRateKHz / 1000,
    driverVersion: sampler.driverVersion,
    nvrtcVersion: nvrtc,
    cudakitVersion,
    node: process.version,
    eventOverheadMs: sampler.eventOverheadMs(),
    cupti: cuptiEnvironment(),
  };
}

function cuptiEnvironment(): BenchEnvironment['cupti'] {
  const c = cuptiStatus();
  return c.available ? { available: true, path: c.path, version: c.version } : { available: false, reason: c.reason };
}

/**
 * GB/s, TFLOP/s and the percentage of the measured peak bandwidth, with that percentage's interval: the kernel's
 * rate over the 95 % CI of its median time, against the peak's interval (stats.ts percentOf).
 */
function throughputOf(
  sampler: Sampler,
  stats: Summary,
  bytes: number | undefined,
  flops: number | undefined,
): Throughput | undefined {
  if (bytes === undefined && flops === undefined) return undefined;
  const t: Throughput = {};
  const perS = (amount: number, ms: number): number => amount / (ms * 1e-3);
  if (bytes !== undefined) {
    t.gbPerS = perS(bytes, stats.median) / 1e9;
    const peak = peakBandwidth(sampler);
    const rate = { value: t.gbPerS, low: perS(bytes, stats.ciHigh) / 1e9, high: perS(bytes, stats.ciLow) / 1e9 };
    const pct = percentOf(rate, peak);
    t.percentOfPeakBandwidth = pct.percent;
    t.percentOfPeakBandwidthLow = pct.low;
    t.percentOfPeakBandwidthHigh = pct.high;
    t.peakBandwidth = {
      gbPerS: peak.value,
      lowGbPerS: peak.low,
      highGbPerS: peak.high,
      method: peak.method,
      repetitions: peak.n,
    };
  }
  if (flops !== undefined) t.tflopsPerS = perS(flops, stats.median) / 1e12;
  return t;
}

/**
 * @internal The result of a run. Its own GPU work (the event overhead, the peak bandwidth) fails as '<label>:
 * calibration'.
 */
export function result(name: string, o: ResolvedBenchOptions, s: Session, run: Run, label: string): BenchResult {
  try {
    return resultOf(name, o, s, run);
  } catch (e) {
    throw named(e, `${label}: calibration`);
  }
}

function resultOf(name: string, o: ResolvedBenchOptions, s: Session, run: Run): BenchResult {
  const stats = summarize(run.accepted);
  const clocks = run.samples
    .filter((x) => !x.rejected && x.clockMHz > 0)
    .map((x) => x.clockMHz)
    .sort((a, b) => a - b);
  const r: BenchResult = {
    name,
    mode: o.mode,
    preset: o.preset,
    timer: run.timer,
    samples: run.samples,
    stats,
    rejected: run.rejected,
    warmupRuns: run.warmupRuns,
    wallMs: run.wallMs,
    converged: run.converged,
    stopReason: run.stopReason,
    clockMHz: clocks.length > 0 ? clocks[clocks.length >> 1]! : 0,
    env: { ...environment(s.sampler), ...(run.drift !== undefined ? { drift: run.drift } : {}) },
    warnings: run.warnings,
  };
  const t = throughputOf(s.sampler, stats, o.bytes, o.flops);
  if (t !== undefined) r.throughput = t;
  return r;
}
