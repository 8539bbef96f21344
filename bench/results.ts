// SPDX-License-Identifier: MIT
// bench/RESULTS.md holds one section per benchmark script; each script replaces only its own.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { ProbeResult } from '../lib/index.js';

const path = new URL('RESULTS.md', import.meta.url).pathname;

/** The line under the title when RESULTS.md is written from scratch (keep it as in the file). */
const HEADER =
  'Written by `npm run bench -- --write` (core), `npm run bench:memory -- --write` (device memory) and ' +
  '`npm run bench:harness -- --write` (harness) on a machine with an NVIDIA GPU; each replaces only its own ' +
  'section, and the closing analysis is written by hand. The method behind the harness figures: ' +
  '[docs/benchmarking.md](../docs/benchmarking.md).';

export function writeSection(name: string, markdown: string): void {
  const begin = `<!-- ${name} -->`;
  const end = `<!-- /${name} -->`;
  let text = existsSync(path) ? readFileSync(path, 'utf8') : `# Benchmark results\n\n${HEADER}\n`;
  const block = `${begin}\n${markdown.trim()}\n${end}`;
  const at = text.indexOf(begin);
  const stop = text.indexOf(end);
  text =
    at >= 0 && stop > at
      ? text.slice(0, at) + block + text.slice(stop + end.length)
      : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(path, text);
}

/** A section's lines as a script prints them: `say` prints a line and keeps it for writeSection. */
export function transcript(): { lines: string[]; say: (line: string) => void } {
  const lines: string[] = [];
  return {
    lines,
    say: (line: string): void => {
      console.log(line);
      lines.push(line);
    },
  };
}

/** The line a section opens with: the date, the GPU, its driver, NVRTC and Node. */
export function machineLine(device: { name: string; arch: string }, p: ProbeResult): string {
  return (
    `${new Date().toISOString().slice(0, 10)}, ${device.name} (${device.arch}), driver CUDA ${p.driverVersion}, ` +
    `NVRTC ${p.nvrtcVersion}, Node ${process.version}.`
  );
}
