// SPDX-License-Identifier: MIT
// evaluate() in a process of its own, for gpu.ts: what one job costs without the service around it. gpu.ts runs this
// as a child process while the server is idle, so its CUDA context is gone (the process has exited) before any
// worker times a kernel on the same GPU: a second context, even an idle one, slows the process being timed.
//
//   node --import tsx server/bench/gpu-evaluate.ts <job.json> [--runs 8] [--max-ms 15000]
//
// The first evaluate() creates the context and compiles (the cold figure); every later one starts with the in-memory
// compile cache cleared, so its compile is a disk-cache hit as in a fresh worker. Prints one JSON line (EvaluateTimes);
// without a usable GPU, `{ "skipped": "<why>" }`.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type EvalJob, type EvalReport, clearMemoryCache, evaluate, probe } from 'cudakit';

/** What this script prints. */
export interface EvaluateTimes {
  /** The first evaluate(): CUDA context, NVRTC (or the disk cache), the job. */
  coldMs: number;
  /** The later ones, in order. */
  warmMs: number[];
  /** Every run passed. */
  passed: boolean;
  /** The first failure, 'phase: code: message'. */
  error: string | undefined;
  /** The kernel's cold median in the last run, µs. */
  kernelMedianUs: number | undefined;
  /** The last run's phases, ms. */
  phasesMs: Record<string, number>;
}

function failure(r: EvalReport): string | undefined {
  return r.passed ? undefined : `${r.phase}: ${r.error?.code}: ${r.error?.message.split('\n')[0]}`;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: { runs: { type: 'string' }, 'max-ms': { type: 'string' } },
    allowPositionals: true,
  });
  const file = positionals[0];
  if (file === undefined) throw new Error('usage: gpu-evaluate.ts <job.json> [--runs N] [--max-ms MS]');
  const runs = Number(values.runs ?? 8);
  const maxMs = Number(values['max-ms'] ?? 15_000);
  const job = JSON.parse(readFileSync(file, 'utf8')) as EvalJob;
  const p = probe();
  if (!p.ok) return print({ skipped: p.reason ?? 'no usable CUDA GPU' });

  const t0 = performance.now();
  let report = await evaluate(job);
  const coldMs = performance.now() - t0;
  let error = failure(report);
  const warmMs: number[] = [];
  const until = performance.now() + maxMs;
  while (warmMs.length < runs && (warmMs.length === 0 || performance.now() < until)) {
    clearMemoryCache();
    const t = performance.now();
    report = await evaluate(job);
    warmMs.push(performance.now() - t);
    error ??= failure(report);
  }
  const median = report.timing?.stats.median;
  print({
    coldMs,
    warmMs,
    passed: error === undefined,
    error,
    kernelMedianUs: median === undefined ? undefined : median * 1000,
    phasesMs: Object.fromEntries(report.phases.map((x) => [x.phase, x.ms])),
  } satisfies EvaluateTimes);
}

function print(value: object): void {
  process.stdout.write(`${JSON.stringify(value)}\n`, () => process.exit(0));
}

main().catch((e: unknown) => {
  process.stderr.write(`gpu-evaluate: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
