// SPDX-License-Identifier: MIT
// What the in-process GPU benchmarks (python-aa.ts, standby.ts, pipeline.ts) share on their command line: the
// output options, a count of rounds, and the refusal to run without a GPU.
import { probe } from 'cudakit';

/** --write (replace the script's section of RESULTS.md), --json FILE (the raw figures) and --help. */
export const OUTPUT_ARGS = {
  write: { type: 'boolean', default: false },
  json: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** A count option's value (--rounds ...): a positive integer, or a RangeError naming the option. */
export function positiveInt(option: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${option} expects a positive integer`);
  return n;
}

/** Whether this machine lacks a usable GPU; if so, says why on stderr, naming the benchmark. */
export function noGpu(bench: string): boolean {
  const machine = probe();
  if (machine.ok) return false;
  process.stderr.write(`bench:${bench} needs an NVIDIA GPU: ${machine.reason ?? 'the probe failed'}\n`);
  return true;
}
