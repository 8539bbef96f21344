// SPDX-License-Identifier: MIT
// bench()'s options (compare() takes them too): what they are, their checks and defaults, and the stopping rule they
// resolve to (docs/benchmarking.md, 'The stopping rule').
import { type ArgsFor, Device, type Signature, checkOptions, rangeError, typeError } from '../core/index.js';
import { PRESETS, type StoppingRule } from './stats.js';
import type { BenchMode, BenchTimer, PresetName } from './types.js';

/**
 * Arguments for every launch, or a generator of input sets (called with 0, 1, 2, ...) for rotation, such as
 * `inputSets(device, io).args` (input-sets.ts; untyped there: each value is still validated when it is bound).
 */
export type BenchArgs<S extends Signature> = ArgsFor<S> | ((set: number) => ArgsFor<S> | readonly unknown[]);

/** Options of bench(): the timing mode, the stopping rule, input rotation, and the bytes and FLOPs for throughput. */
export interface BenchOptions {
  /**
   * 'cold' (default): L2 flushed before every sample; 'hot': no flush; 'graph': N launches per CUDA graph replay
   * (docs/benchmarking.md, 'Timing modes').
   */
  mode?: BenchMode;
  /** Stopping-rule preset (docs/benchmarking.md, 'The stopping rule'). Default 'default'. */
  preset?: PresetName;
  /** Overrides of single stopping-rule fields, e.g. { timeoutMs: 2000 }. */
  rule?: Partial<StoppingRule>;
  /** Input sets drawn from a generator (default 4; at least 4 are used when args is a generator). */
  inputSets?: number;
  /** Bytes the kernel (a function target: one call's work) must move (for GB/s and % of peak). */
  bytes?: number;
  /** Floating-point operations per launch (a function target: per call) (for TFLOP/s). */
  flops?: number;
  /** Label in reports. Default: the kernel's name (a function target's: the function's, or 'work'). */
  name?: string;
  /**
   * The device whose harness stream a function target is given. Default: device 0, or in compare() the device of
   * the kernel target beside it. A kernel target runs on its own device: give none, or that one.
   */
  device?: Device;
  /**
   * Where each sample's GPU time comes from: 'cupti' (default where CUPTI loads), the kernels' own start and end
   * timestamps from CUPTI's activity records, as Nsight Compute measures them; 'events', an event pair around the
   * kernel, which also holds the pair's own cost and the gaps beside the kernel (docs/benchmarking.md, 'Timers').
   * Without CUPTI, or when a tool holds it, samples are timed by events and `env.cupti.reason` says why.
   */
  timer?: BenchTimer;
  /** Called after every batch of samples (the CLI draws its progress line with it). */
  onProgress?: (p: { samples: number; rejected: number; elapsedMs: number; relCI: number }) => void;
}

/** @internal Validated bench options with their defaults. */
export function checkBenchOptions(
  options: BenchOptions | undefined,
): Required<Pick<BenchOptions, 'mode' | 'preset' | 'inputSets' | 'timer'>> & BenchOptions {
  const o = checkOptions('options', options, [
    'mode',
    'preset',
    'rule',
    'inputSets',
    'bytes',
    'flops',
    'name',
    'onProgress',
    'device',
    'timer',
  ] as const) as BenchOptions;
  if (o.device !== undefined && !(o.device instanceof Device))
    throw typeError('options.device', 'a Device (Device.get(ordinal))', o.device);
  const mode = o.mode ?? 'cold';
  if (mode !== 'cold' && mode !== 'hot' && mode !== 'graph')
    throw typeError('options.mode', "'cold', 'hot' or 'graph'", mode);
  for (const key of ['bytes', 'flops'] as const) {
    const v = o[key];
    if (v !== undefined && (typeof v !== 'number' || !(v > 0)))
      throw rangeError(`options.${key}`, 'a positive number', v);
  }
  const timer = o.timer ?? 'cupti';
  if (timer !== 'cupti' && timer !== 'events') throw typeError('options.timer', "'cupti' or 'events'", timer);
  const inputSets = o.inputSets ?? 4;
  if (!Number.isInteger(inputSets) || inputSets < 1 || inputSets > 64)
    throw rangeError('options.inputSets', 'an integer in [1, 64]', inputSets);
  return { ...o, mode, preset: o.preset ?? 'default', inputSets, timer };
}

/** @internal bench()'s options, checked, with their defaults. */
export type ResolvedBenchOptions = ReturnType<typeof checkBenchOptions>;

/** @internal The preset's stopping rule with the overrides applied. */
export function resolveRule(preset: PresetName, overrides: Partial<StoppingRule> | undefined): StoppingRule {
  const base = PRESETS[preset];
  if (base === undefined) throw typeError('options.preset', "'quick', 'default' or 'rigorous'", preset);
  return { ...base, ...(overrides ?? {}) };
}
