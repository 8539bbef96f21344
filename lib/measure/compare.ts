// SPDX-License-Identifier: MIT
// Comparing two kernels, or any two GPU workloads (docs/benchmarking.md, 'Comparing two kernels'): compare() times a
// reference (A) and a candidate (B) in interleaved ABBA rounds, each round a share of the stopping rule's budget, and
// reports the speedup with its bootstrap interval and a verdict. Each side is a kernel target or a function target
// (work.ts), in any mix. Measuring is bench()'s: a Session (session.ts), measure() (sampling.ts) and result()
// (bench-result.ts).
import type { CompareResult, DriftReport } from './types.js';
import { type Kernel, type LaunchConfig, type Signature, rangeError } from '../core/index.js';
import { session, targetOf } from './bench.js';
import { type BenchArgs, type BenchOptions, checkBenchOptions, resolveRule } from './bench-options.js';
import { result } from './bench-result.js';
import { type Run, measure, onEvents } from './sampling.js';
import type { Session } from './session.js';
import { type StoppingRule, bootstrapRatio, timerTick, verdict, widenByTick } from './stats.js';
import type { GpuWork, WorkTarget } from './work.js';

/**
 * One side of a comparison, as a kernel target: a kernel, its launch and arguments (as bench() takes them), and a
 * label. A side may also be a function target: `{ work, name? }` (WorkTarget) or the function itself.
 */
export interface CompareTarget<S extends Signature = Signature> {
  /** The kernel to time. */
  kernel: Kernel<S>;
  /** Its launch configuration. */
  config: LaunchConfig;
  /** Its arguments, or a generator of input sets, as bench() takes them. */
  args: BenchArgs<S>;
  /** Its label in reports. Default: the kernel's name. */
  name?: string;
}

/**
 * Options of compare(): bench()'s options (but `name`, which each side has, and `onProgress`) and the number of rounds.
 */
export interface CompareOptions extends Omit<BenchOptions, 'name' | 'onProgress'> {
  /** ABBA rounds (default 5); each runs the stopping rule with 1/rounds of the preset's budget. */
  rounds?: number;
  /** Called after each round with the round just finished (from 1) and the number of rounds. */
  onProgress?: (p: { round: number; rounds: number }) => void;
}

/**
 * Times a reference (A) and a candidate (B) in interleaved ABBA rounds so drift and thermal state hit both alike.
 * speedup = median(A) / median(B) with a 95 % bootstrap interval; verdict FASTER / SLOWER / SAME / UNCERTAIN.
 *
 * Either side may be a kernel target or a function target (`{ work, name? }`, or the function): a library call
 * against a kernel, say, each timed as bench() times it (docs/benchmarking.md, 'Timing modes', function targets). A
 * function target runs on `options.device`, else on the kernel target's device, else on device 0.
 *
 * @example
 * const r = await compare(
 *   { work: (stream) => sgemm(stream), name: 'cuBLAS' },
 *   { kernel: tiled, config, args: [a, b, c, n], name: 'tiled' },
 * );
 * console.log(`${r.speedup.toFixed(2)}× cuBLAS`);
 *
 * @throws as bench() does; a CudaError's phase also names the side and its label, e.g. 'compare(): B (saxpy_v2):
 *   warm-up'.
 */
export async function compare(
  a: CompareTarget | WorkTarget | GpuWork,
  b: CompareTarget | WorkTarget | GpuWork,
  options?: CompareOptions,
): Promise<CompareResult> {
  const { rounds: roundsOpt, onProgress, ...rest } = options ?? {};
  const o = checkBenchOptions(rest);
  const rounds = roundsOpt ?? 5;
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 50)
    throw rangeError('options.rounds', 'an integer in [1, 50]', rounds);
  const full = resolveRule(o.preset, o.rule);
  const part: StoppingRule = {
    ...full,
    minSamples: Math.max(5, Math.ceil(full.minSamples / rounds)),
    minTimeMs: full.minTimeMs / rounds,
    timeoutMs: full.timeoutMs / rounds,
    maxSamples: Math.max(10, Math.ceil(full.maxSamples / rounds)),
  };
  // The clock ramps, and each kernel's code loads, in its side's first round: the later rounds keep the minimum
  // warm-up runs but a rounds-th of its time.
  const later: StoppingRule = {
    ...part,
    warmupMinMs: full.warmupMinMs / rounds,
    warmupMaxMs: Math.max(full.warmupMaxMs / rounds, full.warmupMinMs / rounds),
  };
  const ta = targetOf('a', a, o);
  const tb = targetOf('b', b, o);
  const beside = 'kernel' in ta ? ta.kernel.device : 'kernel' in tb ? tb.kernel.device : undefined;
  const labelA = `compare(): A (${ta.name})`;
  const labelB = `compare(): B (${tb.name})`;
  const sa = session(labelA, ta, o, beside);
  sa.keepsLaunches = false; // the re-check's launches drawn at random are the candidate's
  let sb: Session | undefined;
  let failing = true;
  try {
    sb = session(labelB, tb, o, beside);
    const runs: Run[][] = [[], []];
    for (let r = 0; r < rounds; r++) {
      const order: [Session, number, string][] =
        r % 2 === 0
          ? [
              [sa, 0, labelA],
              [sb, 1, labelB],
            ]
          : [
              [sb, 1, labelB],
              [sa, 0, labelA],
            ];
      for (const [s, side, label] of order) {
        s.dropGraph();
        runs[side]!.push(await measure(s, r === 0 ? part : later, undefined, label, o.preset === 'rigorous'));
      }
      onProgress?.({ round: r + 1, rounds });
    }
    // One timer for both sides: if either side's CUPTI trace failed in some round, every sample goes on its events.
    const all = [...runs[0]!, ...runs[1]!];
    if (all.some((x) => x.timer !== all[0]!.timer)) {
      for (const side of runs) for (let i = 0; i < side.length; i++) side[i] = onEvents(side[i]!);
    }
    const merge = (rs: Run[]): Run => ({
      samples: rs.flatMap((x) => x.samples),
      accepted: rs.flatMap((x) => x.accepted),
      rejected: rs.reduce((t, x) => t + x.rejected, 0),
      warmupRuns: rs.reduce((t, x) => t + x.warmupRuns, 0),
      wallMs: rs.reduce((t, x) => t + x.wallMs, 0),
      converged: rs.every((x) => x.converged),
      stopReason: [...new Set(rs.map((x) => x.stopReason))].join(', '),
      launchesPerSample: rs[0]!.launchesPerSample,
      timer: rs[0]!.timer,
      tickMs: Math.max(...rs.map((x) => x.tickMs)),
      ...worstDrift(rs),
      warnings: [...new Set(rs.flatMap((x) => x.warnings))],
    });
    const [ma, mb] = [merge(runs[0]!), merge(runs[1]!)];
    const ra = result(ta.name, o, sa, ma, labelA);
    const rb = result(tb.name, o, sb, mb, labelB);
    // CUPTI's samples are whole ticks: an interval of zero width must not read as certainty (widenByTick). The tick
    // the traces' records told (durationTick), else the one the samples show.
    let tick = 0;
    if (ra.timer === 'cupti') {
      tick = Math.max(ma.tickMs, mb.tickMs);
      if (tick === 0) {
        const [perA, perB] = [ma.launchesPerSample, mb.launchesPerSample];
        tick =
          perA === perB
            ? timerTick([...ma.accepted, ...mb.accepted], perA)
            : Math.max(timerTick(ma.accepted, perA), timerTick(mb.accepted, perB));
      }
    }
    const ci = widenByTick(bootstrapRatio(ma.accepted, mb.accepted), ra.stats.median, rb.stats.median, tick);
    failing = false;
    return { a: ra, b: rb, speedup: ci.ratio, speedupLow: ci.low, speedupHigh: ci.high, verdict: verdict(ci), rounds };
  } finally {
    sa.dispose(failing);
    sb?.dispose(failing);
  }
}

/** The round whose drift probe changed most against its limit, with every round's retakes counted. */
function worstDrift(rs: Run[]): { drift?: DriftReport } {
  const drifts = rs.flatMap((x) => (x.drift !== undefined ? [x.drift] : []));
  if (drifts.length === 0) return {};
  const score = (d: DriftReport): number => Math.abs(d.change) / Math.max(d.limit, 1e-9);
  const worst = drifts.reduce((a, b) => (score(b) > score(a) ? b : a));
  return { drift: { ...worst, retaken: drifts.reduce((t, d) => t + d.retaken, 0) } };
}
