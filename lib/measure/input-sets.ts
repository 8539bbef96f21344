// SPDX-License-Identifier: MIT
// inputSets(): the device argument sets bench() rotates through (inputs.ts fills them, seeded per set), and their
// re-check after timing: every set's outputs against the reference (reference.ts), compared as check() compares
// them (compare-output.ts).
import { CudaError, type Device, checkBoolean, checkOptions } from '../core/index.js';
import { type ArgSpec, checkArgSpecs, roleOf } from './argspec.js';
import type { CheckOptions } from './check.js';
import { type CheckResult, type TrialResult, buildCheckResult, errorFigures, trialResult } from './check-result.js';
import { compareOutput, newComparison, toleranceFor } from './compare-output.js';
import { type FillLaunch, fillLaunch } from './device-fill.js';
import {
  type GuardedBuffer,
  type TrialInputs,
  drawSources,
  initOf,
  prepareInputs,
  releaseBuffers,
  uploadGuarded,
} from './inputs.js';
import { splitmix64 } from './random.js';
import { type Reference, checkReference, referenceOutputs } from './reference.js';

/** Options of inputSets(). */
export interface InputSetsOptions {
  /** Zero every buffer before dispose() frees it (see CheckOptions.zeroOnFree). Default false. */
  zeroOnFree?: boolean;
  /**
   * Fresh inputs for every timed launch: bench() regenerates a set's inputs on the GPU before each sample of it,
   * outside the timed interval, from the set's seed and the sample's epoch, so no two timed launches see the same
   * bytes, and verify() checks each set's outputs against the reference on the inputs of the set's last timed launch
   * (in-place outputs included). A kernel that replays results cached from an earlier launch, or computed ahead for
   * a later one, then fails the re-check. Default false. No effect in graph mode, whose replays repeat their launches.
   */
  fresh?: boolean;
}

/**
 * @internal One set's fresh inputs, for bench(): what regenerates them, and where the last timed launch's came from.
 */
export interface FreshSet {
  /** The fill launches that regenerate the set's inputs, reading their epoch from `epochPtr`. */
  launches: (epochPtr: bigint) => FillLaunch[];
  /** Called with the epoch of each sample timed on the set, in order. */
  used: (epoch: number) => void;
  /** Called when launches repeat on the set's inputs without a refresh (graph mode's replays). */
  repeated: () => void;
}

const freshSets = new WeakMap<readonly unknown[], FreshSet>();

/** @internal The fresh inputs of the set whose arguments are `args` (made by inputSets() with fresh). */
export function freshSetOf(args: readonly unknown[]): FreshSet | undefined {
  return freshSets.get(args);
}

/** Device argument sets for bench()'s input rotation, made by inputSets(). */
export interface InputSets {
  /** The arguments of input set `set` (0, 1, 2 ...), made when first asked for: pass `args` itself to bench(). */
  args: (set: number) => unknown[];
  /**
   * Re-checks every set's pure outputs (those without an initial value; in-place outputs changed with every timed
   * launch) against `reference`, on that set's inputs. A reference kernel with its own `io` is matched as in check().
   */
  verify: (reference: Reference, options?: Pick<CheckOptions, 'atol' | 'rtol' | 'tolerances'>) => Promise<CheckResult>;
  /** Frees every set's buffers (zeroed first with zeroOnFree). */
  dispose: () => void;
}

/**
 * Device argument sets built from `io` (inputs filled, seeded per set from `seed`; outputs poisoned), for bench()'s
 * input rotation: `bench(kernel, config, sets.args)`. `verify(reference)` re-checks every set's outputs after timing.
 */
export function inputSets(device: Device, io: readonly ArgSpec[], seed = 42, options?: InputSetsOptions): InputSets {
  checkArgSpecs(io);
  const o = checkOptions('options', options, ['zeroOnFree', 'fresh'] as const);
  const zeroOnFree = o.zeroOnFree === undefined ? false : checkBoolean('options.zeroOnFree', o.zeroOnFree);
  const fresh = o.fresh === undefined ? false : checkBoolean('options.fresh', o.fresh);
  const sets: {
    seed: bigint;
    inputs: TrialInputs;
    buffers: GuardedBuffer[];
    epoch: number | undefined;
    repeated: boolean;
  }[] = [];
  return {
    args: (set: number) => {
      const setSeed = splitmix64(BigInt(seed) + 1000n + BigInt(set));
      const inputs = prepareInputs(io, setSeed, device);
      const entry = {
        seed: setSeed,
        inputs,
        buffers: [] as GuardedBuffer[],
        epoch: undefined as number | undefined,
        repeated: false,
      };
      sets.push(entry);
      const args = uploadGuarded(device, io, inputs, 0, () => 0, entry.buffers);
      if (fresh) {
        const sources = drawSources(io, setSeed);
        freshSets.set(args, {
          launches: (epochPtr) =>
            io.flatMap((a, i) => {
              const init = initOf(a);
              const source = sources[i];
              if (a.kind !== 'buffer' || init === undefined || init.kind === 'data' || source === undefined) return [];
              const launch = fillLaunch(entry.buffers[i]!.view, a, init, source, epochPtr);
              return launch === undefined ? [] : [launch];
            }),
          used: (epoch) => {
            entry.epoch = epoch;
            entry.repeated = false;
          },
          repeated: () => {
            entry.repeated = true;
          },
        });
      }
      return args;
    },
    verify: async (reference, verifyOptions) => {
      checkReference(reference, io);
      const trials: TrialResult[] = [];
      try {
        for (const [k, s] of sets.entries()) {
          const c = newComparison();
          // With fresh inputs, the inputs of the set's last timed launch, whose outputs its buffers hold.
          const inputs = s.epoch === undefined ? s.inputs : prepareInputs(io, s.seed, device, s.epoch);
          const ref = await referenceOutputs(reference, device, io, inputs, zeroOnFree);
          if ('fault' in ref) throw ref.fault;
          io.forEach((a, i) => {
            if (a.kind !== 'buffer' || roleOf(a) === 'in') return;
            // An in-place output changed with every launch since its inputs were last made: nothing to compare it
            // with, but with fresh inputs, no repeated launch (graph mode) and an init the refresh regenerates.
            if (roleOf(a) === 'inout' && (s.epoch === undefined || s.repeated || initOf(a)?.kind === 'data')) return;
            const [atol, rtol] = toleranceFor(verifyOptions ?? {}, a.dtype);
            compareOutput(i, a.dtype, s.buffers[i]!.view.copyToHost(), ref.outputs[i]!, atol, rtol, c);
          });
          trials.push(trialResult(k, '', c, undefined));
        }
      } catch (e) {
        // A fault here (the reference's, or one the timed launches left behind) names this phase.
        throw e instanceof CudaError ? CudaError.inPhase(e, 'inputSets().verify(): re-check after timing') : e;
      }
      const result = buildCheckResult(trials, undefined);
      const failed = trials.find((t) => !t.passed);
      result.summary =
        failed === undefined
          ? `PASS after timing: ${trials.length} input sets re-checked, ${errorFigures(result)}`
          : `FAIL after timing (${failed.defence}) in input set ${failed.trial}` +
            (sets[failed.trial]?.epoch !== undefined
              ? ': its outputs are not those of its last timed launch, on fresh inputs (a result replayed from ' +
                'another launch?)'
              : '');
      return result;
    },
    dispose: () => {
      const all = sets.flatMap((s) => s.buffers.map((b) => b?.base));
      sets.length = 0;
      releaseBuffers(all, zeroOnFree);
    },
  };
}
