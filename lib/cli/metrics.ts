// SPDX-License-Identifier: MIT
// `cudakit bench --metrics`: what is printed under the timing from profile()'s result. The key figures of one launch
// under Nsight Compute (speed of light of memory and of the SMs, occupancy, the largest warp stalls), or the line that
// says why there are none. Pure: profile()'s result in, lines out, tested without a GPU on recorded ncu output.
import type { DeviceMetric, DeviceMetrics, ProfileResult } from '../index.js';
import { paint, row } from '../eval/index.js';

/** The ncu metrics the summary reads, all among DEFAULT_DEVICE_METRICS. */
export const KEY_METRICS = {
  memory: 'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed',
  compute: 'sm__throughput.avg.pct_of_peak_sustained_elapsed',
  achievedOccupancy: 'sm__warps_active.avg.pct_of_peak_sustained_active',
  theoreticalOccupancy: 'sm__maximum_warps_per_active_cycle_pct',
} as const;

const STALL = /^smsp__warp_issue_stalled_(\w+)_per_warp_active\.pct$/;

/** How many stall reasons the summary names. */
export const TOP_STALLS = 3;

/** A stall reason ('long_scoreboard', as ncu names it) and its share of the active warps, %. */
export interface StallShare {
  reason: string;
  percent: number;
}

/** The stall reasons measured, largest first; those at 0 % left out, and `selected` (a warp issuing, no stall). */
export function stallShares(metrics: Readonly<Record<string, DeviceMetric>>): StallShare[] {
  const shares: StallShare[] = [];
  for (const [name, m] of Object.entries(metrics)) {
    const reason = STALL.exec(name)?.[1];
    if (reason === undefined || reason === 'selected' || typeof m.value !== 'number' || !(m.value > 0)) continue;
    shares.push({ reason, percent: m.value });
  }
  return shares.sort((a, b) => b.percent - a.percent);
}

/** 86.73 → '86.7%', 100 → '100%'; 'n/a' where ncu gave no number. */
function percent(m: DeviceMetric | undefined): string {
  if (m === undefined || typeof m.value !== 'number') return 'n/a';
  return `${Number.isInteger(m.value) ? m.value : m.value.toFixed(1)}%`;
}

/**
 * The summary under the timing, for example:
 *
 * ```text
 * device metrics of copy (ncu 2025.3.1.0, one launch)
 *   speed of light          memory 91.8% · compute (SM) 14.1% of peak
 *   occupancy               86.7% achieved · 100% theoretical
 *   top warp stalls         long_scoreboard 88.5% · drain 2.8% · wait 1.9% of active warps
 * ```
 *
 * `title` names the kernel as the timing did. A figure ncu could not collect on this GPU reads 'n/a'.
 */
export function formatKeyMetrics(m: DeviceMetrics, title: string, color: boolean): string[] {
  const get = (name: string): DeviceMetric | undefined => m.metrics[name];
  const version = m.ncuVersion === undefined ? 'ncu' : `ncu ${m.ncuVersion}`;
  const stalls = stallShares(m.metrics)
    .slice(0, TOP_STALLS)
    .map((s) => `${s.reason} ${s.percent.toFixed(1)}%`);
  return [
    `${paint(color, '1', `device metrics of ${title}`)} ${paint(color, '2', `(${version}, one launch)`)}`,
    row(
      'speed of light',
      `memory ${percent(get(KEY_METRICS.memory))} · compute (SM) ${percent(get(KEY_METRICS.compute))} of peak`,
    ),
    row(
      'occupancy',
      `${percent(get(KEY_METRICS.achievedOccupancy))} achieved · ` +
        `${percent(get(KEY_METRICS.theoreticalOccupancy))} theoretical`,
    ),
    row('top warp stalls', stalls.length > 0 ? `${stalls.join(' · ')} of active warps` : 'n/a'),
  ];
}

/**
 * The block printed under the timing: the summary and profile()'s warnings (metrics this GPU lacks), or, without
 * metrics, profile()'s reason and remedy on one line (ncu's last output, where it says why, indented below it).
 * `ncuGiven`: whether --ncu named ncu (else a missing ncu was looked for on PATH, and --ncu is the remedy).
 */
export function metricsBlock(r: ProfileResult, title: string, color: boolean, ncuGiven: boolean): string[] {
  const warn = (text: string): string => `${paint(color, '33', '⚠')} ${text}`;
  if (r.deviceMetrics !== null) {
    return [...formatKeyMetrics(r.deviceMetrics, title, color), ...r.warnings.map((w) => `  ${warn(w)}`)];
  }
  const [why, ...more] = r.warnings.join('\n').split('\n') as [string, ...string[]];
  const remedy = r.failure === 'ncu-not-found' && !ncuGiven ? ' (--ncu <path>)' : '';
  return [warn(`${why}${remedy}`), ...more.map((line) => `  ${line}`)];
}
