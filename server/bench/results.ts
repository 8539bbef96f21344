// SPDX-License-Identifier: MIT
// server/bench/RESULTS.md: one section per benchmark script (load.ts: 'load', gpu.ts: 'gpu', multi-gpu.ts:
// 'multi-gpu', ab.ts: 'before-after', problems.ts: 'problems', python-aa.ts: 'python-aa', standby.ts: 'standby',
// pipeline.ts: 'pipeline'), each between its own begin and end markers, so that each script rewrites its figures and
// leaves the others', and the hand-written notes outside the markers, as they are.
import { join } from 'node:path';
import { ROOT } from './binary.js';

export const RESULTS_FILE = join(ROOT, 'server/bench/RESULTS.md');

const HEADER = `# Service benchmark results

The evaluation service's measured performance (server/). Each section is written by its benchmark script, which
replaces only its own section, between its begin and end markers:

- **load** (no GPU): \`npm run bench:load -w server -- --write\` (server/bench/load.ts), on the CI machine class
  (2 cores): submit latency and event-loop delay under 64 clients, fake GPUs, one worker process per job.
- **gpu**: \`npm run bench:gpu -w server -- --write\` (server/bench/gpu.ts), on a machine with an NVIDIA GPU: the
  service's timing against \`cudakit bench\`, its overhead per job and its throughput.
- **multi-gpu**: \`npm run bench:multi-gpu -w server -- --write\` (server/bench/multi-gpu.ts), on a machine with two
  NVIDIA GPUs: the service's throughput on two GPUs against one, and a kernel's time on one GPU while the other runs
  a kernel that never ends.
- **before-after**: \`npm run bench:ab -w server -- --before <checkout> --write\` (server/bench/ab.ts), on a machine
  with an NVIDIA GPU: the service's overhead per job, another checkout's build against this one, interleaved.
- **problems**: \`npm run bench:problems -w server -- --write\` (server/bench/problems.ts), on a machine with an
  NVIDIA GPU: a problem of many cases against a job of one case, where its time goes, and the score's interval.
- **python-aa**: \`npm run bench:python-aa -w server -- --write\` (server/bench/python-aa.ts), on a machine with an
  NVIDIA GPU and a Python with torch: the same CUBIN timed by cudakit and by the Python runner, which must agree.
- **standby**: \`npm run bench:standby -w server -- --write\` (server/bench/standby.ts), on a machine with an NVIDIA
  GPU: a job's timing beside a standby worker's idle context, workers starting and exiting, and NVRTC compiles.
- **pipeline**: \`npm run bench:pipeline -w server -- --write\` (server/bench/pipeline.ts), on a machine with an
  NVIDIA GPU: one lane per GPU against two with standby contexts, and a job's timing with the pipeline full.
`;

/** `text` with section `name` replaced (or added at the end, or the file begun); everything else kept as it is. */
export function replaceSection(
  text: string | undefined,
  name: 'load' | 'gpu' | 'multi-gpu' | 'before-after' | 'problems' | 'python-aa' | 'standby' | 'pipeline',
  body: string,
): string {
  const begin = `<!-- begin:${name} -->`;
  const end = `<!-- end:${name} -->`;
  const block = `${begin}\n${body.trim()}\n${end}`;
  if (text === undefined || text.trim() === '') return `${HEADER}\n${block}\n`;
  const at = text.indexOf(begin);
  const stop = at < 0 ? -1 : text.indexOf(end, at);
  if (at >= 0 && stop > at) return text.slice(0, at) + block + text.slice(stop + end.length);
  return `${text.trimEnd()}\n\n${block}\n`;
}
