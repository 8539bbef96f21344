// SPDX-License-Identifier: MIT
// `cudakit info`: the devices, driver and NVRTC versions, or why no GPU is usable (not an error: saying so is the
// command's job).
import { Device, probe } from '../index.js';
import { OK, USAGE_TEXT, UsageError, parseCommand } from './flags.js';
import { type Output, formatBytes, row, table } from './output.js';

export function infoCommand(args: string[], o: Output): number {
  const { values, positionals } = parseCommand('info', args, { help: { type: 'boolean', short: 'h' } });
  if (values.help === true) {
    o.out(USAGE_TEXT);
    return OK;
  }
  if (positionals.length > 0) throw new UsageError(`info takes no arguments, got '${positionals[0]}'`);
  const p = probe();
  const driver = p.driverVersion !== undefined ? `CUDA ${p.driverVersion}` : 'not found';
  const nvrtc = p.nvrtcVersion ?? 'not found';
  if (!p.ok) {
    o.out(`No usable CUDA GPU.\n${row('driver', driver, 8)}${row('NVRTC', nvrtc, 8)}`);
    const [head, ...more] = (p.reason ?? 'unknown reason').split('\n');
    o.out(row('reason', head!, 8));
    for (const line of more) o.out(row('', line, 8));
    return OK;
  }
  const safe = (f: () => number | string): string => {
    try {
      return String(f());
    } catch {
      return 'n/a';
    }
  };
  const rows = Device.all().map((d) => [
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
  return OK;
}
