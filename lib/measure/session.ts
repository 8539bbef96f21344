// SPDX-License-Identifier: MIT
// The glue between bench() and the sampler (docs/benchmarking.md): a Session binds a target's launches (one per input
// set) or a function target's harness, and takes batches of samples through native code (core/sampler.ts,
// native/bench.cc) or work.ts, timed by CUPTI's records where it can trace and by the event pair otherwise ('Timers').
// A stream that cannot be held behind the spin kernel ('Hiding launch latency') is sampled unheld, with a warning.
import {
  ActivityTrace,
  CudaError,
  type Device,
  type GraphExec,
  type Kernel,
  type LaunchConfig,
  cuptiStatus,
  disableCupti,
  durationTick,
  isContextLost,
  sampleDurations,
  typeError,
} from '../core/index.js';
import { type BoundLaunch, PROBE_KERNEL, type RawSample, Sampler } from '../core/sampler.js';
import { fillKernel } from './device-fill.js';
import { type FreshSet, freshSetOf } from './input-sets.js';
import { createRng } from './random.js';
import type { BenchMode, BenchSample, BenchTimer } from './types.js';
import { type GpuWork, WorkSampler, callWork } from './work.js';

/**
 * @internal Cleanup that never hides the first error: while one is on its way out (`failing`), or once the context
 * is lost (nothing is left to release then), a failure to release is dropped.
 */
export function release(failing: boolean, f: () => void): void {
  try {
    f();
  } catch (e) {
    if (!failing && !isContextLost(e)) throw e;
  }
}

/** @internal A CudaError as the same error naming `phase` (CudaError.inPhase); anything else as it is. */
export function named(e: unknown, phase: string): unknown {
  return e instanceof CudaError && e.phase === undefined ? CudaError.inPhase(e, phase) : e;
}

/**
 * @internal What a Session times: a kernel's launch with its arguments (or their generator), or a function target
 * on a device.
 */
export type SessionTarget = { kernel: Kernel; config: LaunchConfig; args: unknown } | { work: GpuWork; device: Device };

/**
 * @internal A prepared measurement, ready to take samples: a bound launch for every input set of a kernel target,
 * or a function target with the harness that calls it between the events.
 */
export class Session {
  readonly sampler: Sampler;
  readonly mode: BenchMode;
  /** A kernel target's bound launches, one per input set (none for a function target). */
  readonly launches: BoundLaunch[] = [];
  /** A function target's work and its harness. */
  readonly #work: { work: GpuWork; sampler: WorkSampler } | undefined;
  /**
   * Fresh inputs (inputSets() with fresh): per input set, the launches that regenerate it before each of its samples
   * (in full, and the sparse refresh of a launch kept for the re-check) and where to report the epochs; empty when
   * any set has none.
   */
  readonly #fresh: { launches: BoundLaunch[]; sparse: BoundLaunch[]; set: FreshSet }[] = [];
  /** Graph mode: the graph of `launches` launches (a function target: calls) replayed per sample. */
  graph: { exec: GraphExec; launches: number } | undefined;
  readonly rng = createRng(0x5eed);
  /**
   * Whether this session's launches may be kept for the re-check (input-sets.ts's reservoir): a candidate's, not a
   * comparison's reference, whose launches share the input sets.
   */
  keepsLaunches = true;
  maxClockSeen = 0;
  /**
   * Set when the spin kernel timed out (a profiler or sanitizer serializes kernels, or the work waited for its
   * stream): samples are then taken unheld.
   */
  noBlock = false;
  readonly warnings: string[] = [];
  /** Where samples' GPU times come from; 'events' from the start without CUPTI, or after a trace failed. */
  timer: BenchTimer;
  /** The tick of CUPTI's timestamps, ns, once a trace has told it (durationTick: 0 for none); undefined until then. */
  tickNs: number | undefined;

  constructor(target: SessionTarget, mode: BenchMode, inputSets: number, timer: BenchTimer) {
    this.mode = mode;
    this.timer = 'events';
    if (timer === 'cupti') {
      const c = cuptiStatus();
      if (c.available) this.timer = 'cupti';
      else this.warnings.push(`timed by events: ${c.reason.replace(/ \(tried: [^]*$/, '')}`); // env.cupti has it all
    }
    if ('work' in target) {
      this.sampler = Sampler.for(target.device);
      this.#work = { work: target.work, sampler: WorkSampler.for(this.sampler) };
      return;
    }
    const { kernel, config, args } = target;
    this.sampler = Sampler.for(kernel.device);
    this.#work = undefined;
    const sets = typeof args === 'function' ? Math.max(4, inputSets) : 1;
    try {
      for (let i = 0; i < sets; i++) {
        const a = typeof args === 'function' ? (args as (set: number) => unknown[])(i) : (args as unknown[]);
        if (!Array.isArray(a)) throw typeError('args', 'an array of kernel arguments (or a function returning one)', a);
        // Exactly the launch kernel.launch(config, ...a) makes (cooperative and clusterDim included), on the
        // sampler's stream: what check() verified is what is timed.
        this.launches.push(this.sampler.bind(kernel, config, a));
        const fresh = freshSetOf(a);
        if (fresh !== undefined) {
          const fill = fillKernel(kernel.device);
          const bind = (sparse: boolean): BoundLaunch[] =>
            fresh.launches(this.sampler.epochPtr, sparse).map((f) => this.sampler.bind(fill, f.config, f.args));
          const entry = { launches: bind(false), sparse: [] as BoundLaunch[], set: fresh };
          this.#fresh.push(entry);
          entry.sparse = bind(true); // once pushed: dispose() releases the full refresh's launches should this throw
        }
      }
      // Every set or none: a set without them would time repeated inputs among fresh ones.
      if (this.#fresh.length !== this.launches.length) this.#dropFresh(false);
    } catch (e) {
      this.dispose(true);
      throw e;
    }
  }

  /**
   * Plain launches (one call of the work) first: lazily loaded kernels load now, and a library's first call sets
   * itself up, never while the stream is held by the spin kernel.
   */
  prime(): void {
    if (this.#work !== undefined) callWork(this.#work.work, this.sampler.stream);
    for (const b of this.launches) b.launch();
    this.sampler.stream.synchronize();
  }

  /** Graph mode: `launches` launches (rotating input sets), or calls of the work, captured into one graph. */
  buildGraph(launches: number): void {
    const w = this.#work;
    const exec = w !== undefined ? w.sampler.capture(w.work, launches) : this.sampler.capture(this.launches, launches);
    this.graph = { exec, launches };
    for (const f of this.#fresh) f.set.repeated();
  }

  /** Drops the graph (compare() builds a new one in every round). */
  dropGraph(): void {
    this.graph?.exec.dispose();
    this.graph = undefined;
  }

  /** Takes `count` samples (natively, but a function target's calls); returns them in order. */
  take(count: number, flush: boolean): BenchSample[] {
    try {
      return this.takeOnce(count, flush);
    } catch (e) {
      if ((e as { code?: string }).code !== 'CUDAKIT_BENCH_TIMEOUT' || this.noBlock) throw e;
      // Something serializes kernels (ncu, compute-sanitizer, nsys), or the work waits for its stream: a held stream
      // cannot work, so time unheld.
      this.noBlock = true;
      this.warnings.push(
        this.#work === undefined
          ? 'the stream could not be held behind the spin kernel (a profiler or sanitizer serializes kernels?): ' +
              'samples include launch latency'
          : 'the stream could not be held behind the spin kernel (the work waited for its stream, or a profiler ' +
              'or sanitizer serializes kernels?): samples include the time the function takes to enqueue its work',
      );
      return this.takeOnce(count, flush);
    }
  }

  private takeOnce(count: number, flush: boolean): BenchSample[] {
    let order: number[] = [];
    const rotate = this.graph === undefined && this.#work === undefined;
    for (let i = 0; i < count; i++) order.push(rotate ? Math.floor(this.rng() * this.launches.length) : 0);
    const graph = this.graph;
    const w = this.#work;
    const fresh = graph === undefined && this.#fresh.length > 0;
    // Launches drawn at random to keep for the re-check: their outputs are copied out after they ran, untimed. The
    // plan moves each onto the set of the launch before it, with the sparse refresh.
    const sets = this.#fresh.map((f) => f.set);
    const kept = fresh && this.keepsLaunches ? sets[0]!.reservoir.plan(order, sets) : undefined;
    if (kept !== undefined) order = kept.order;
    const sparse = kept?.sparse ?? [];
    const setCount = this.launches.length;
    const trace = this.timer === 'cupti' ? this.#startTrace() : undefined;
    let raw: RawSample[];
    try {
      // A function target's calls run JavaScript between the events (work.ts); its graph replays, like kernels, not.
      raw =
        w !== undefined && graph === undefined
          ? w.sampler.take(w.work, count, flush, !this.noBlock)
          : this.sampler.take({
              // With fresh inputs, every set's launch twice: launch k + setCount is set k's with the sparse refresh.
              launches: fresh ? [...this.launches, ...this.launches] : this.launches,
              order: fresh ? order.map((k, i) => (sparse[i] === true ? k + setCount : k)) : order,
              flushL2: flush,
              hold: !this.noBlock,
              ...(graph !== undefined ? { graph: graph.exec } : {}),
              ...(fresh
                ? { refresh: [...this.#fresh.map((f) => f.launches), ...this.#fresh.map((f) => f.sparse)] }
                : {}),
              ...(kept !== undefined && kept.snapshots.length > 0 ? { snapshots: kept.snapshots } : {}),
            });
    } catch (e) {
      kept?.failed();
      if (trace !== undefined) release(true, () => trace.stop());
      throw e;
    }
    const lineages = raw.map((x, i) =>
      x.epoch === undefined ? undefined : this.#fresh[order[i]!]?.set.used(x.epoch, sparse[i] === true),
    );
    kept?.ran(lineages);
    const cuptiMs = trace !== undefined ? this.#durations(trace, count) : undefined;
    const per = graph?.launches ?? 1;
    return raw.map((x, i) => ({
      gpuMs: (cuptiMs?.[i] ?? x.gpuMs) / per,
      eventMs: x.gpuMs / per,
      launchUs: x.launchUs,
      clockMHz: x.clockMHz,
      inputSet: order[i]!,
      rejected: false,
    }));
  }

  /** A CUPTI trace for one batch, or none (and events from now on) when CUPTI refuses to trace. */
  #startTrace(): ActivityTrace | undefined {
    try {
      return ActivityTrace.start();
    } catch (e) {
      const reason = `CUPTI could not trace (${(e as Error).message})`;
      disableCupti(reason); // a tool holds it, or the driver is older than the library: so for every later run too
      this.#fallBack(reason);
      return undefined;
    }
  }

  /**
   * The batch's CUPTI durations, one per sample (a kernel target's kernels summed, a function target's work from its
   * first start to its last end: sampleDurations), or none (and events from now on) when the records do not fit.
   */
  #durations(trace: ActivityTrace, count: number): number[] | undefined {
    try {
      const { records, dropped } = trace.stop();
      if (dropped > 0) throw new Error(`CUPTI dropped ${dropped} records`);
      this.tickNs ??= durationTick(records); // searched once per session, not per batch
      return sampleDurations(records, PROBE_KERNEL, count, this.#work !== undefined ? 'span' : 'sum');
    } catch (e) {
      this.#fallBack(`CUPTI's records could not be used (${(e as Error).message})`);
      return undefined;
    }
  }

  #fallBack(reason: string): void {
    this.timer = 'events';
    this.warnings.push(`timed by events from here on: ${reason}`);
  }

  /** Releases the graph and the bound launches; `failing`: an error is on its way out, no cleanup error may hide it. */
  dispose(failing = false): void {
    const graph = this.graph;
    this.graph = undefined;
    if (graph !== undefined) release(failing, () => graph.exec.dispose());
    for (const b of this.launches) release(failing, () => b.release());
    this.#dropFresh(failing);
  }

  #dropFresh(failing: boolean): void {
    for (const f of this.#fresh.splice(0))
      for (const b of [...f.launches, ...f.sparse]) release(failing, () => b.release());
  }
}
