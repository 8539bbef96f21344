// SPDX-License-Identifier: MIT
// `cudakit info`: the devices, driver and NVRTC versions and, with two or more devices, which can access which one's
// memory directly; or why no GPU is usable, in short lines, with exit status 2 (scripts can test for a GPU with it).
import { Device, probe } from '../index.js';
import { OK, USAGE, UsageError, commandHelp, parseCommand } from './flags.js';
import { type Output, formatBytes, reasonLines, row, table } from './output.js';

/** A device property as text, or 'n/a' where the driver could not give it. */
const safe = (f: () => number | string): string => {
  try {
    return String(f());
  } catch {
    return 'n/a';
  }
};

export function infoCommand(args: string[], o: Output): number {
  const { values, positionals } = parseCommand('info', args, { help: { type: 'boolean', short: 'h' } });
  if (values.help === true) {
    o.out(commandHelp('info'));
    return OK;
  }
  if (positionals.length > 0) throw new UsageError(`info takes no arguments, got '${positionals[0]}'`);
  const p = probe();
  const driver = p.driverVersion !== undefined ? `CUDA ${p.driverVersion}` : 'not found';
  const nvrtc = p.nvrtcVersion ?? 'not found';
  if (!p.ok) {
    o.out(`No usable CUDA GPU.\n${row('driver', driver, 8)}${row('NVRTC', nvrtc, 8)}`);
    // The label column takes 10 of the width; what is left is the text's (at least 30, however narrow).
    const width = Math.max(30, o.columns - 10);
    const labelled = (label: string, text: string): void => {
      const [head, ...more] = reasonLines(text, width);
      o.out(row(label, head!, 8));
      for (const line of more) o.out(row('', line, 8));
    };
    labelled('reason', p.reason ?? 'unknown reason');
    if (p.remedy !== undefined) labelled('remedy', p.remedy); // the library's: what to do about each reason
    return USAGE;
  }
  const devices = Device.all();
  const rows = devices.map((d) => [
    String(d.ordinal),
    d.name,
    safe(() => `${d.computeCapability.major}.${d.computeCapability.minor}`),
    safe(() => d.multiprocessorCount),
    safe(() => formatBytes(d.totalMemoryBytes)),
    safe(() => `${Math.round(d.clockRateKHz / 1000)} MHz`),
    safe(() => `${Math.round(d.attribute('MEMORY_CLOCK_RATE') / 1000)} MHz`),
    safe(() => formatBytes(d.l2CacheBytes)),
  ]);
  o.out(`driver ${driver} · NVRTC ${nvrtc} · ${rows.length} device${rows.length === 1 ? '' : 's'}\n\n`);
  o.out(table(['#', 'name', 'CC', 'SMs', 'memory', 'SM clock', 'mem clock', 'L2'], rows));
  if (devices.length >= 2) {
    o.out('\n');
    o.out(peerMatrix(devices.length, (from, to) => devices[from]!.canAccessPeer(devices[to]!)));
  }
  return OK;
}

/**
 * The peer access matrix of `count` devices: row `from`, column `to` says whether device `from` can access device
 * `to`'s memory directly ('yes', 'no', 'n/a' when the driver could not say; '—' on the diagonal).
 */
export function peerMatrix(count: number, canAccess: (from: number, to: number) => boolean): string {
  const ordinals = Array.from({ length: count }, (_, i) => i);
  const cell = (from: number, to: number): string =>
    from === to ? '—' : safe(() => (canAccess(from, to) ? 'yes' : 'no'));
  const rows = ordinals.map((from) => [String(from), ...ordinals.map((to) => cell(from, to))]);
  return `peer access (row device → column device's memory)\n${table(['#', ...ordinals.map(String)], rows)}`;
}
