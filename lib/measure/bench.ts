// SPDX-License-Identifier: MIT
// Timing one kernel, or any GPU work (docs/benchmarking.md): bench() warms up, then takes samples until the stopping
// rule says stop ('The stopping rule'), and summarizes them. A kernel's samples are taken by native code through the
// sampler (core/sampler.ts, native/bench.cc) on a stream of its own, with L2 flushed ('The L2 flush') and the stream
// held behind a spin kernel so launch latency is hidden ('Hiding launch latency'); a function target's the same way
// from JavaScript (work.ts; 'Timing modes', function targets). This file checks what to time and runs the three
// steps, which compare() (compare.ts) shares: a Session binds the target to the sampler (session.ts), measure() takes
// the run (sampling.ts, with drift.ts), and result() summarizes it (bench-result.ts). The options: bench-options.ts.
import { Device, Kernel, type LaunchConfig, type Signature, typeError } from '../core/index.js';
import {
  type BenchArgs,
  type BenchOptions,
  type ResolvedBenchOptions,
  checkBenchOptions,
  resolveRule,
} from './bench-options.js';
import { result } from './bench-result.js';
import { measure } from './sampling.js';
import { Session, named } from './session.js';
import type { BenchResult } from './types.js';
import { type GpuWork, isWorkTarget, workTarget } from './work.js';

/** @internal A target of bench() or compare(), validated, with its label: a kernel target or a function target. */
export type Target =
  { kernel: Kernel; config: LaunchConfig; args: unknown; name: string } | { work: GpuWork; name: string };

const TARGET =
  'a kernel target { kernel, config, args, name? }, a function target { work, name? } or a function (stream) => void';

/**
 * @internal `value` as a target (compare()'s `a` or `b`: a kernel target, `{ work, name? }` or a function), checked
 * before any GPU work: a TypeError for anything else, a RangeError for a kernel on another device than
 * `options.device`. Its launch configuration and arguments are checked when they are bound.
 */
export function targetOf(label: string, value: unknown, o: ResolvedBenchOptions): Target {
  if (isWorkTarget(value)) return workTarget(label, value);
  if (typeof value !== 'object' || value === null) throw typeError(label, TARGET, value);
  const t = value as { kernel?: unknown; config: LaunchConfig; args: unknown; name?: unknown };
  const kernel = kernelOf(`${label}.kernel`, t.kernel, o);
  if (t.name !== undefined && typeof t.name !== 'string') throw typeError(`${label}.name`, 'a string', t.name);
  return { kernel, config: t.config, args: t.args, name: t.name ?? kernel.name };
}

/** A kernel target's kernel: a Kernel, on `options.device` when that is given. */
function kernelOf(label: string, kernel: unknown, o: ResolvedBenchOptions): Kernel {
  if (!(kernel instanceof Kernel)) {
    throw typeError(label, 'a Kernel (module.getKernel()), or a function target in its place', kernel);
  }
  if (o.device !== undefined && o.device !== kernel.device) {
    throw new RangeError(
      `Expected device ${kernel.device.ordinal} (the kernel's own) or none for options.device but received device ` +
        `${o.device.ordinal}: a kernel runs on the device its module is loaded on`,
    );
  }
  return kernel;
}

/**
 * Times one kernel: warm-up, then samples until the 95 % confidence interval of the median is within the preset's
 * target (or stops shrinking, or the timeout). `args` is the argument list, or a generator of input sets for
 * rotation (called with 0 … inputSets-1). Resolves to every raw sample and the statistics.
 *
 * @throws TypeError / RangeError for bad options or arguments. A CudaError (a kernel that faults, a launch the driver
 *   refuses) names the phase it happened in, in its message and its `phase`: 'bench(): setup', 'bench(): warm-up',
 *   'bench(): timing' or 'bench(): calibration' (the event-overhead and peak-bandwidth measurements). Cleanup after
 *   it never replaces it.
 */
export async function bench<S extends Signature>(
  kernel: Kernel<S>,
  config: LaunchConfig,
  args: BenchArgs<S>,
  options?: BenchOptions,
): Promise<BenchResult>;
/**
 * Times any GPU work: a function that enqueues it on the stream it is given (a kernel sequence, a graph replay, a
 * native library's call), in the same modes, with the same stopping rule, statistics and result as a kernel. A
 * sample is one call between an event pair, the stream held while the function enqueues, so its host time stays
 * outside the events (it is recorded as `launchUs`); cold mode flushes L2 before every call, and graph mode captures
 * N calls into one graph and times its replays (docs/benchmarking.md, 'Timing modes', function targets). The work
 * runs on `options.device`, device 0 by default. Check what it computes yourself: check() takes kernel targets only.
 *
 * @example
 * const r = await bench((stream) => {
 *   scale.launch({ grid, block, stream }, x, n);
 *   shift.launch({ grid, block, stream }, x, n);
 * }, { name: 'scale + shift' });
 *
 * @throws TypeError / RangeError for a `work` that is not a synchronous function, or bad options, before any GPU
 *   work; whatever the work throws; a CudaError named by phase, as for a kernel ('bench(): timing' ...).
 */
export async function bench(work: GpuWork, options?: BenchOptions): Promise<BenchResult>;
export async function bench(what: Kernel | GpuWork, ...rest: unknown[]): Promise<BenchResult> {
  let target: Target;
  let o: ResolvedBenchOptions;
  if (isWorkTarget(what)) {
    if (rest.length > 1) {
      throw new TypeError(
        `Expected bench(work, options) for a function target but received ${rest.length + 1} arguments: ` +
          'a function encloses its own buffers and launch configurations',
      );
    }
    target = workTarget('work', what);
    o = checkBenchOptions(rest[0] as BenchOptions | undefined);
  } else {
    const [config, args, options] = rest;
    o = checkBenchOptions(options as BenchOptions | undefined);
    const kernel = kernelOf('kernel', what, o);
    target = { kernel, config: config as LaunchConfig, args, name: kernel.name };
  }
  const rule = resolveRule(o.preset, o.rule);
  const s = session('bench()', target, o, undefined);
  let failing = true;
  try {
    const run = await measure(s, rule, o.onProgress, 'bench()', o.preset === 'rigorous');
    const r = result(o.name ?? target.name, o, s, run, 'bench()');
    failing = false;
    return r;
  } finally {
    s.dispose(failing);
  }
}

/**
 * @internal A Session for `target`, its CudaErrors named '<label>: setup' (finding the device, compiling the harness,
 * its buffers, binding the arguments). A function target runs on `options.device`, else on `beside` (the device of
 * the kernel target it is compared with), else on device 0.
 */
export function session(label: string, target: Target, o: ResolvedBenchOptions, beside: Device | undefined): Session {
  try {
    const what = 'work' in target ? { work: target.work, device: o.device ?? beside ?? Device.get(0) } : target;
    return new Session(what, o.mode, o.inputSets, o.timer);
  } catch (e) {
    throw named(e, `${label}: setup`);
  }
}
