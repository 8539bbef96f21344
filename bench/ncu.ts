// SPDX-License-Identifier: MIT
// Nsight Compute's gpu__time_duration.sum for the copy and spin kernels of bench/ncu-child.ts (query-only: clocks
// untouched).
import { execFileSync, spawnSync } from 'node:child_process';

export function ncuAvailable(): boolean {
  return spawnSync('ncu', ['--version'], { encoding: 'utf8' }).status === 0;
}

/** Median ncu duration (ms) of `launches` launches of the copy kernel over `mib` MiB, skipping the first. */
export function ncuCopyMs(mib: number, launches = 6): number {
  return ncuChildMs('copy', [String(mib), String(launches)]);
}

/** Median ncu duration (ms) of `launches` launches of the spin kernel (`us` µs of %globaltimer), skipping the first. */
export function ncuSpinMs(us: number, launches = 6): number {
  return ncuChildMs('spin', ['spin', String(us), String(launches)]);
}

/**
 * Median ncu duration (ms) of the launches of `kernel` that ncu-child.ts makes with `args`, the first left out (lazy
 * loading, a cold TLB).
 */
function ncuChildMs(kernel: string, args: string[]): number {
  const root = new URL('..', import.meta.url).pathname;
  const out = execFileSync(
    'ncu',
    [
      '--csv',
      '--metrics',
      'gpu__time_duration.sum',
      '--cache-control',
      'all',
      '--clock-control',
      'none',
      '--target-processes',
      'all',
      '-k',
      `regex:^${kernel}$`,
      process.execPath,
      '--import',
      'tsx',
      'bench/ncu-child.ts',
      ...args,
    ],
    { cwd: root, encoding: 'utf8', env: { ...process.env, CUDAKIT_NCU_CHILD: '1' }, maxBuffer: 64 << 20 },
  );
  const values: number[] = [];
  for (const line of out.split('\n')) {
    if (!line.includes('gpu__time_duration.sum')) continue;
    const cells = line.split('","').map((c) => c.replace(/^"|"$/g, ''));
    const unit = cells[cells.length - 2];
    const value = Number(cells[cells.length - 1]!.replace(/,/g, ''));
    const scale =
      unit === 'nsecond' || unit === 'ns'
        ? 1e-6
        : unit === 'usecond' || unit === 'us'
          ? 1e-3
          : unit === 'msecond' || unit === 'ms'
            ? 1
            : Number.NaN;
    values.push(value * scale);
  }
  if (values.length < 2 || values.some(Number.isNaN))
    throw new Error(`ncu: could not read durations from:\n${out.slice(-2000)}`);
  const rest = values.slice(1).sort((x, y) => x - y);
  return rest[rest.length >> 1]!;
}
