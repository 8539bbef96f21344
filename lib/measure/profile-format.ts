// SPDX-License-Identifier: MIT
// Device metrics for people: one block per group (speed of light, memory, ...), a row per metric with its value in
// ncu's unit and, for bytes, a readable size. Pure: no CUDA import, tested without a GPU.
import { checkBoolean, checkObject, checkOptions } from '../core/index.js';
import { type FormatOptions, paint, row } from './format.js';
import type { DeviceMetrics } from './profile.js';
import { type DeviceMetric, type DeviceMetricGroup, GROUP_TITLES } from './profile-ncu.js';

/** 67108864 → '67,108,864'; 92.4567 → '92.46'; 0.000123 → '0.000123'; text as it is. */
export function formatMetricValue(m: DeviceMetric): string {
  const v = m.value;
  if (typeof v === 'string') return v === '' ? 'n/a' : v;
  let text: string;
  if (Number.isInteger(v)) text = v.toLocaleString('en-US');
  else if (Math.abs(v) >= 0.01) text = v.toLocaleString('en-US', { maximumFractionDigits: 2 });
  else text = String(Number(v.toPrecision(3)));
  const unit = m.unit === '' ? '' : m.unit === '%' ? '%' : ` ${m.unit}`;
  const size = m.unit === 'byte' && Math.abs(v) >= 1024 ? ` (${bytes(v)})` : '';
  return `${text}${unit}${size}`;
}

function bytes(n: number): string {
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(2)} ${units[i]}`;
}

/**
 * A text block of device metrics, for example:
 *
 * ```text
 * copy (ncu 2025.3.1.0, one launch)
 * speed of light
 *   dram__throughput.avg.pct_of_peak_sustained_elapsed          91.84%
 * memory
 *   dram__bytes_read.sum                                        67,108,864 byte (64.00 MiB)
 * ```
 *
 * Groups in the order of GROUP_TITLES; metrics in the order ncu gave them. No trailing newline.
 *
 * @throws TypeError for unknown options, a non-boolean color, or metrics that are not an object.
 */
export function formatDeviceMetrics(m: DeviceMetrics, options?: FormatOptions): string {
  checkObject('deviceMetrics', m);
  const o = checkOptions('options', options, ['color'] as const);
  const color = o.color === undefined ? false : checkBoolean('options.color', o.color);
  const version = m.ncuVersion === undefined ? 'ncu' : `ncu ${m.ncuVersion}`;
  const lines = [`${paint(color, '1', m.kernel)} ${paint(color, '2', `(${version}, one launch)`)}`];
  const names = Object.values(m.groups).flatMap((g) => Object.keys(g ?? {}));
  const width = Math.max(24, ...names.map((n) => n.length + 2));
  for (const g of Object.keys(GROUP_TITLES) as DeviceMetricGroup[]) {
    const group = m.groups[g];
    if (group === undefined || Object.keys(group).length === 0) continue;
    lines.push(paint(color, '36', GROUP_TITLES[g]));
    for (const [name, metric] of Object.entries(group)) lines.push(row(name, formatMetricValue(metric), width));
  }
  return lines.join('\n');
}
