// SPDX-License-Identifier: MIT
// bench/RESULTS.md holds one section per benchmark script; each script replaces only its own.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const path = new URL('RESULTS.md', import.meta.url).pathname;

export function writeSection(name: string, markdown: string): void {
  const begin = `<!-- ${name} -->`;
  const end = `<!-- /${name} -->`;
  let text = existsSync(path) ? readFileSync(path, 'utf8') : '# Benchmark results\n\nWritten by `npm run bench`, `npm run bench:memory` and `npm run bench:harness` on a machine with an NVIDIA GPU.\n';
  const block = `${begin}\n${markdown.trim()}\n${end}`;
  const at = text.indexOf(begin);
  const stop = text.indexOf(end);
  text = at >= 0 && stop > at ? text.slice(0, at) + block + text.slice(stop + end.length) : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(path, text);
}
