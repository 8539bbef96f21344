// SPDX-License-Identifier: MIT
// Timing any GPU work (docs/benchmarking.md, 'Timing modes', function targets): a function target, `(stream) =>
// void`, enqueues its work on the stream it is given (a kernel sequence, a graph replay, a library call such as
// cuBLAS). native/bench.cc cannot take its samples, since it runs no JavaScript between its events; WorkSampler takes
// them the same way from JavaScript: the harness's L2 flush first, the stream held behind the harness's spin kernel
// while the function enqueues, the clock probes and an event pair around the call. In graph mode the function is
// captured into a graph instead, and the native sampler times its replays. This file also says what a function
// target is (GpuWork, WorkTarget), and refuses one where only a kernel target can go (check()).
import {
  type Device,
  type DeviceBuffer,
  Event,
  type GraphExec,
  type Kernel,
  type LaunchConfig,
  Program,
  type Stream,
  checkOptions,
  codedError,
  native,
  typeError,
} from '../core/index.js';
import { type RawSample, SAMPLER_KERNELS, SAMPLER_SOURCE, type Sampler, captureExec } from '../core/sampler.js';

/**
 * GPU work to time: a function that enqueues it on the stream it is given, such as a sequence of kernel launches, a
 * graph replay or a native library's call (cuBLAS after `cublasSetStream(handle, stream.handle)`). It enqueues all
 * its work on that stream (or joins its other streams back to it) and returns without waiting for it: bench() holds
 * the stream while the function runs. In graph mode it is captured with stream capture, so each call must enqueue
 * the same work and nothing a capture forbids (a synchronize, a plain cuMemAlloc).
 */
export type GpuWork = (stream: Stream) => void;

/** A function target of compare(): the work and its label. */
export interface WorkTarget {
  /** The work to time. */
  work: GpuWork;
  /** Its label in reports. Default: the function's name, or 'work' for an anonymous one. */
  name?: string;
}

/** @internal A function target with its label. */
export interface ResolvedWork {
  work: GpuWork;
  name: string;
}

const WORK = 'a function (stream) => void that enqueues GPU work and returns';

/** @internal Whether `value` is meant as a function target: a function, or an object with a `work` key. */
export function isWorkTarget(value: unknown): value is GpuWork | WorkTarget {
  return typeof value === 'function' || (typeof value === 'object' && value !== null && 'work' in value);
}

/** @internal A function target (a function, or `{ work, name? }`) with its label; TypeError for anything else. */
export function workTarget(label: string, value: GpuWork | WorkTarget): ResolvedWork {
  if (typeof value === 'function') return { work: checkWork(label, value), name: value.name || 'work' };
  const o = checkOptions(label, value, ['work', 'name'] as const);
  const work = checkWork(`${label}.work`, o.work);
  if (o.name !== undefined && typeof o.name !== 'string') throw typeError(`${label}.name`, 'a string', o.name);
  return { work, name: (o.name as string | undefined) ?? (work.name || 'work') };
}

function checkWork(label: string, value: unknown): GpuWork {
  if (typeof value !== 'function') throw typeError(label, WORK, value);
  // An async function returns at its first await, with the rest of its work not yet enqueued.
  if (value.constructor.name === 'AsyncFunction') throw notWork(label, 'an async function');
  return value as GpuWork;
}

const notWork = (label: string, what: string): TypeError =>
  new TypeError(`Expected ${WORK} for ${label} but received ${what}`);

/** @internal Calls the work once on `stream`; a TypeError when it returns a Promise (its work is not all queued). */
export function callWork(work: GpuWork, stream: Stream): void {
  const returned: unknown = work(stream);
  if (typeof (returned as { then?: unknown } | null | undefined)?.then === 'function') {
    throw notWork('work', 'a function that returned a Promise');
  }
}

/**
 * @internal check()'s candidate must be a kernel target: check() launches it on inputs of its own (seeded, with
 * poisoned outputs and guard zones) for every trial, and a function target encloses its own buffers.
 */
export function refuseWorkCandidate(candidate: unknown): void {
  if (!isWorkTarget(candidate)) return;
  throw new TypeError(
    'Expected a kernel target { kernel, config } for candidate but received a function target: check() launches ' +
      'the candidate on seeded inputs of its own, which a function that encloses its buffers cannot take; check ' +
      'the kernels the function launches, or compare what it writes with a reference yourself',
  );
}

/** The error the hold's time-out raises, as native/bench.cc raises it (Session.take falls back on it). */
function holdTimedOut(): Error {
  return codedError(
    "the benchmark's blocking kernel timed out: the work waited for its stream while it was held (a synchronize, " +
      'a plain cuMemAlloc or cuMemFree, lazy module loading), or a profiler serialized kernels',
    'CUDAKIT_BENCH_TIMEOUT',
  );
}

const CU_MEMHOSTALLOC_PORTABLE_DEVICEMAP = 3;
/** How long the spin kernel holds the stream at most, far beyond any function's enqueueing (ns). */
const HOLD_TIMEOUT_NS = 1_000_000_000n;

const workSamplers = new Map<Device, WorkSampler>();

/**
 * @internal A device's harness for function targets, beside its Sampler, whose stream and L2 flush it uses: the
 * Sampler's spin kernel and clock probe (compiled from its source), a flag of its own for the spin kernel, the
 * probes' output and an event pair. Made on first use and kept for the life of the process, like the Sampler.
 */
export class WorkSampler {
  readonly sampler: Sampler;
  readonly #block: Kernel<(typeof SAMPLER_KERNELS.block)[1]>;
  readonly #probe: Kernel<(typeof SAMPLER_KERNELS.probe)[1]>;
  readonly #probeOut: DeviceBuffer;
  readonly #flag: Int32Array;
  readonly #flagDev: bigint;
  readonly #start: Event;
  readonly #stop: Event;

  /** The device's harness for function targets, made on first use and the same one after. */
  static for(sampler: Sampler): WorkSampler {
    let w = workSamplers.get(sampler.device);
    if (w === undefined) {
      w = new WorkSampler(sampler);
      workSamplers.set(sampler.device, w);
    }
    return w;
  }

  private constructor(sampler: Sampler) {
    const device = sampler.device;
    // The Sampler's own source and options: the compile is served from the cache.
    const code = new Program(SAMPLER_SOURCE, { name: 'cudakit_bench.cu' }).compile({ cudaIncludes: false });
    const module = device.loadModule(code);
    this.sampler = sampler;
    this.#block = module.getKernel(...SAMPLER_KERNELS.block);
    this.#probe = module.getKernel(...SAMPLER_KERNELS.probe);
    this.#probeOut = device.alloc(32); // u64[4]: start ns, start clock, end ns, end clock
    const ctx = device.contextHandle;
    const flag = native().memHostAlloc(ctx, 8, CU_MEMHOSTALLOC_PORTABLE_DEVICEMAP); // [0] release, [1] timed out
    this.#flag = new Int32Array(flag);
    this.#flagDev = native().memHostGetDevicePointer(ctx, flag);
    this.#start = sampler.stream.record();
    this.#stop = sampler.stream.record();
  }

  /** The stream the work is given: the Sampler's, which nothing else uses. */
  get stream(): Stream {
    return this.sampler.stream;
  }

  /**
   * Takes `count` samples of `work`, one call each: the harness's L2 flush first (`flushL2`); the stream held
   * behind the spin kernel while the function enqueues (`hold`), so its host time stays outside the events; a clock
   * probe, the start event, the call, the stop event and a clock probe. Throws what the work throws, a CudaError for
   * a failed call, and an Error with code 'CUDAKIT_BENCH_TIMEOUT' when the spin kernel timed out (take them again
   * with `hold: false`).
   */
  take(work: GpuWork, count: number, flushL2: boolean, hold: boolean): RawSample[] {
    const out: RawSample[] = [];
    for (let i = 0; i < count; i++) out.push(this.#sample(work, flushL2, hold));
    return out;
  }

  #sample(work: GpuWork, flushL2: boolean, hold: boolean): RawSample {
    const stream = this.stream;
    const device = this.sampler.device;
    // The native sampler's flush: persisting lines reset, 2 × L2 of other data read, synchronized.
    if (flushL2) this.sampler.flushL2();
    const flag = this.#flag;
    Atomics.store(flag, 0, 0);
    Atomics.store(flag, 1, 0);
    const probe: LaunchConfig = { grid: device.multiprocessorCount, block: 1, stream };
    const probeAt = this.#probeOut.ptr;
    let hostMs: number;
    try {
      if (hold) this.#block.launch({ grid: 1, block: 1, stream }, this.#flagDev, HOLD_TIMEOUT_NS);
      this.#probe.launch(probe, probeAt);
      this.#start.record(stream);
      const t0 = performance.now();
      callWork(work, stream);
      hostMs = performance.now() - t0;
      this.#stop.record(stream);
      this.#probe.launch(probe, probeAt + 16n);
    } finally {
      Atomics.store(flag, 0, 1); // release the spin kernel: everything above is queued (or the work threw)
    }
    stream.synchronize();
    if (Atomics.load(flag, 1) !== 0) throw holdTimedOut();
    const gpuMs = Event.elapsedMs(this.#start, this.#stop);
    const [startNs, startClock, endNs, endClock] = this.#probeOut.copyToHost(new BigUint64Array(4));
    const ns = Number(endNs! - startNs!);
    const clocks = Number(endClock! - startClock!);
    return { gpuMs, launchUs: hostMs * 1000, clockMHz: ns > 0 ? (clocks / ns) * 1000 : 0 };
  }

  /**
   * Captures `count` calls of `work` into one graph on the stream (stream capture, thread-local mode) and
   * instantiates it ('graph' timing: the native sampler replays it once per sample). Dispose the GraphExec when done.
   */
  capture(work: GpuWork, count: number): GraphExec {
    const s = this.stream;
    return captureExec(s, () => {
      for (let i = 0; i < count; i++) callWork(work, s);
    });
  }
}
