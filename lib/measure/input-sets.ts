// SPDX-License-Identifier: MIT
// inputSets(): the device argument sets bench() rotates through (inputs.ts fills them, seeded per set), and their
// re-check after timing: every set's outputs against the reference (reference.ts), compared as check() compares
// them (compare-output.ts). With fresh inputs, also the outputs of timed launches drawn at random over the whole run
// (a reservoir the sampler copies them into, untimed), each against the reference on that launch's own inputs.
import { randomInt } from 'node:crypto';
import { CudaError, DTYPE_INFO, type Device, type DeviceBuffer, checkBoolean, checkOptions } from '../core/index.js';
import type { SampleSnapshot } from '../core/sampler.js';
import { type ArgSpec, type BufferArgSpec, checkArgSpecs, roleOf } from './argspec.js';
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
   * (in-place outputs included), and the outputs of RESERVOIR_SLOTS launches drawn at random from the whole run
   * (copied out, untimed, right after each ran) against the reference on their own inputs. A kernel that replays
   * results cached from an earlier launch, computes ahead for a later one, or skips the work of some launches, then
   * fails the re-check. Default false. No effect in graph mode, whose replays repeat their launches.
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
  /** The launches kept for verify(), drawn at random from all the sets' samples (one reservoir per inputSets()). */
  reservoir: Reservoir;
}

/**
 * @internal Timed launches kept for the re-check: a uniform random draw of RESERVOIR_SLOTS launches from every launch
 * the sets have had (reservoir sampling), made with the operating system's randomness, not the job's seed, so no
 * kernel can know which of its launches are kept. Each kept launch's outputs are copied out after it ran, untimed.
 */
export interface Reservoir {
  /**
   * Draws which samples of a batch to keep: `batch[i]` is the FreshSet sample i runs on. Returns the copies for
   * SampleRequest.snapshots, and what to call when the batch ran (each sample's epoch) or failed.
   */
  plan: (batch: readonly FreshSet[]) => {
    snapshots: SampleSnapshot[];
    ran: (epochs: readonly (number | undefined)[]) => void;
    failed: () => void;
  };
}

/** @internal Launches a reservoir keeps: each costs a copy of the outputs in memory and a reference run in verify(). */
export const RESERVOIR_SLOTS = 2;

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
  const sets: SetEntry[] = [];
  const reservoir = newReservoir(device, io);
  const entryOf = new WeakMap<FreshSet, SetEntry>();
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
        const freshSet: FreshSet = {
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
          reservoir: reservoir.of(entryOf),
        };
        entryOf.set(freshSet, entry);
        freshSets.set(args, freshSet);
      }
      return args;
    },
    verify: async (reference, verifyOptions) => {
      checkReference(reference, io);
      const trials: TrialResult[] = [];
      /** Trials of kept launches: the epoch of the launch each checks. */
      const keptTrials = new Map<number, number>();
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
        // The kept launches: each one's outputs, copied out right after it ran, against the reference on its inputs.
        for (const kept of reservoir.kept()) {
          const c = newComparison();
          const inputs = prepareInputs(io, kept.entry.seed, device, kept.epoch);
          const ref = await referenceOutputs(reference, device, io, inputs, zeroOnFree);
          if ('fault' in ref) throw ref.fault;
          for (const [j, i] of reservoir.outputs.entries()) {
            const a = io[i] as BufferArgSpec;
            const [atol, rtol] = toleranceFor(verifyOptions ?? {}, a.dtype);
            compareOutput(i, a.dtype, kept.buffers[j]!.copyToHost(), ref.outputs[i]!, atol, rtol, c);
          }
          keptTrials.set(trials.length, kept.epoch);
          trials.push(trialResult(trials.length, '', c, undefined));
        }
      } catch (e) {
        // A fault here (the reference's, or one the timed launches left behind) names this phase.
        throw e instanceof CudaError ? CudaError.inPhase(e, 'inputSets().verify(): re-check after timing') : e;
      }
      const result = buildCheckResult(trials, undefined);
      const failed = trials.find((t) => !t.passed);
      const keptCount = keptTrials.size;
      const kept =
        keptCount === 0 ? '' : ` and ${keptCount} timed launch${keptCount === 1 ? '' : 'es'} drawn at random`;
      const epoch = failed === undefined ? undefined : keptTrials.get(failed.trial);
      result.summary =
        failed === undefined
          ? `PASS after timing: ${sets.length} input sets${kept} re-checked, ${errorFigures(result)}`
          : epoch !== undefined
            ? `FAIL after timing (${failed.defence}) in a timed launch drawn at random (sample epoch ${epoch}): its ` +
              'outputs are not those of its own inputs (work skipped, or a result replayed from another launch?)'
            : `FAIL after timing (${failed.defence}) in input set ${failed.trial}` +
              (sets[failed.trial]?.epoch !== undefined
                ? ': its outputs are not those of its last timed launch, on fresh inputs (a result replayed from ' +
                  'another launch?)'
                : '');
      return result;
    },
    dispose: () => {
      const all = [...sets.flatMap((s) => s.buffers.map((b) => b?.base)), ...reservoir.release()];
      sets.length = 0;
      releaseBuffers(all, zeroOnFree);
    },
  };
}

/** One input set of inputSets(): its seed, its inputs and buffers, and the epoch of its last timed launch. */
interface SetEntry {
  seed: bigint;
  inputs: TrialInputs;
  buffers: GuardedBuffer[];
  epoch: number | undefined;
  repeated: boolean;
}

/** A launch kept by the reservoir: the set it ran on, its epoch, and its outputs as it left them. */
interface KeptLaunch {
  entry: SetEntry;
  epoch: number;
  buffers: DeviceBuffer[];
}

/**
 * The reservoir of one inputSets() (Reservoir): RESERVOIR_SLOTS slots of output copies, made on first use. `outputs`
 * are the argument indices a kept launch is checked on: pure outputs, and in-place ones whose init the refresh
 * regenerates.
 */
function newReservoir(device: Device, io: readonly ArgSpec[]) {
  const outputs = io.flatMap((a, i) => {
    if (a.kind !== 'buffer' || roleOf(a) === 'in') return [];
    return roleOf(a) === 'out' || initOf(a)?.kind !== 'data' ? [i] : [];
  });
  const slots: { entry: SetEntry | undefined; epoch: number | undefined; buffers: DeviceBuffer[] }[] = [];
  /** Samples offered so far: sample n (from 1) is kept with probability RESERVOIR_SLOTS / n. */
  let offered = 0;
  const slotAt = (k: number) => {
    slots[k] ??= {
      entry: undefined,
      epoch: undefined,
      buffers: outputs.map((i) => {
        const a = io[i] as BufferArgSpec;
        return device.alloc(a.length * DTYPE_INFO[a.dtype].bytes);
      }),
    };
    return slots[k];
  };
  return {
    outputs,
    of: (entryOf: WeakMap<FreshSet, SetEntry>): Reservoir => ({
      plan: (batch) => {
        const picks: { sample: number; slot: number }[] = [];
        for (let i = 0; i < batch.length && outputs.length > 0; i++) {
          offered++;
          const j = offered <= RESERVOIR_SLOTS ? offered - 1 : randomInt(offered);
          if (j < RESERVOIR_SLOTS) picks.push({ sample: i, slot: j });
        }
        const snapshots = picks.map(({ sample, slot }): SampleSnapshot => {
          const own = entryOf.get(batch[sample]!)!;
          const kept = slotAt(slot);
          const copies = outputs.map((i, j) => ({
            from: own.buffers[i]!.view.ptr,
            to: kept.buffers[j]!.ptr,
            bytes: kept.buffers[j]!.byteLength,
          }));
          return { sample, copies };
        });
        return {
          snapshots,
          ran: (epochs) => {
            // In order: a later sample of the batch drawn into the same slot overwrote an earlier one's copy.
            for (const { sample, slot } of picks) {
              slots[slot]!.entry = entryOf.get(batch[sample]!);
              slots[slot]!.epoch = epochs[sample];
            }
          },
          failed: () => {
            // What the failed batch copied is not known: its slots hold nothing to check.
            for (const { slot } of picks) Object.assign(slots[slot]!, { entry: undefined, epoch: undefined });
          },
        };
      },
    }),
    /** The launches kept, in slot order. */
    kept: (): KeptLaunch[] =>
      slots.flatMap((s) => (s.entry !== undefined && s.epoch !== undefined ? [s as KeptLaunch] : [])),
    /** Empties the reservoir; returns its buffers to free. */
    release: (): DeviceBuffer[] => slots.splice(0).flatMap((s) => s.buffers),
  };
}
