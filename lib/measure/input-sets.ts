// SPDX-License-Identifier: MIT
// inputSets(): the device argument sets bench() rotates through (inputs.ts fills them, seeded per set), and their
// re-check after timing: every set's outputs against the reference (reference.ts), compared as check() compares
// them (compare-output.ts). With fresh inputs, also the outputs of timed launches drawn at random over the whole run
// (a reservoir the sampler copies them into, untimed), each against the reference on that launch's own inputs. A
// drawn launch runs on the set of the launch before it, with a sparse refresh that changes a few elements only, so a
// cache keyed on the pointer and a sample of the inputs hits there, and its replayed outputs fail the re-check.
import { randomInt } from 'node:crypto';
import {
  CudaError,
  DTYPE_INFO,
  type Device,
  type DeviceBuffer,
  checkBoolean,
  checkOptions,
  fromDeviceBytes,
} from '../core/index.js';
import type { SampleSnapshot } from '../core/sampler.js';
import { type ArgSpec, type BufferArgSpec, checkArgSpecs, roleOf } from './argspec.js';
import type { CheckOptions } from './check.js';
import { type CheckResult, type TrialResult, buildCheckResult, errorFigures, trialResult } from './check-result.js';
import { compareOutput, newComparison, toleranceFor } from './compare-output.js';
import { type FillLaunch, SPARSE_CHANGES, epochState, fillLaunch, sparsePositions } from './device-fill.js';
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
   * fails the re-check. A drawn launch runs on the same set as the launch before it, and its refresh changes only
   * SPARSE_CHANGES elements of each pure input (in-place outputs in full): a cache keyed on the input pointer and a
   * few sampled inputs, or a checksum of some, which fresh inputs never let hit, hits there and replays outputs of
   * other inputs. Default false. No effect in graph mode, whose replays repeat their launches.
   */
  fresh?: boolean;
}

/**
 * @internal What a set's buffers hold after a launch with fresh inputs: the full refresh of epoch `base` (undefined:
 * the set's first inputs, before any refresh), then the sparse refreshes of the epochs in `sparse`, in order.
 */
export interface Lineage {
  base: number | undefined;
  sparse: readonly number[];
}

/**
 * @internal One set's fresh inputs, for bench(): what regenerates them, and where the last timed launch's came from.
 */
export interface FreshSet {
  /**
   * The fill launches that regenerate the set's inputs, reading their epoch from `epochPtr`: in full, or with
   * `sparse` SPARSE_CHANGES elements of each pure input and every in-place output in full (a drawn launch's refresh).
   */
  launches: (epochPtr: bigint, sparse?: boolean) => FillLaunch[];
  /**
   * Called with the epoch of each sample timed on the set, in order, and whether its refresh was the sparse one;
   * returns what the set's buffers held for that sample.
   */
  used: (epoch: number, sparse?: boolean) => Lineage;
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
   * Draws which samples of a batch to keep: sample i runs on `sets[order[i]]`. A kept sample is moved onto the set
   * of the sample before it (of this batch, or the last one planned before it) and takes the sparse refresh. Returns
   * the batch's order so changed, which samples take the sparse refresh, the copies for SampleRequest.snapshots, and
   * what to call when the batch ran (what each sample's set held: FreshSet.used) or failed.
   */
  plan: (
    order: readonly number[],
    sets: readonly FreshSet[],
  ) => {
    order: number[];
    sparse: boolean[];
    snapshots: SampleSnapshot[];
    ran: (lineages: readonly (Lineage | undefined)[]) => void;
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
      const entry: SetEntry = { seed: setSeed, inputs, buffers: [], lineage: undefined, repeated: false };
      sets.push(entry);
      const args = uploadGuarded(device, io, inputs, 0, () => 0, entry.buffers);
      if (fresh) {
        const sources = drawSources(io, setSeed);
        const freshSet: FreshSet = {
          launches: (epochPtr, sparse = false) =>
            io.flatMap((a, i) => {
              const init = initOf(a);
              const source = sources[i];
              if (a.kind !== 'buffer' || init === undefined || init.kind === 'data' || source === undefined) return [];
              const changes = sparse && roleOf(a) === 'in' ? SPARSE_CHANGES : 0;
              const launch = fillLaunch(entry.buffers[i]!.view, a, init, source, epochPtr, changes);
              return launch === undefined ? [] : [launch];
            }),
          used: (epoch, sparse = false) => {
            const before = entry.lineage ?? { base: undefined, sparse: [] };
            entry.lineage = sparse
              ? { base: before.base, sparse: [...before.sparse, epoch] }
              : { base: epoch, sparse: [] };
            entry.repeated = false;
            return entry.lineage;
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
          const inputs = s.lineage === undefined ? s.inputs : inputsOf(io, s.seed, device, s.lineage);
          const ref = await referenceOutputs(reference, device, io, inputs, zeroOnFree);
          if ('fault' in ref) throw ref.fault;
          io.forEach((a, i) => {
            if (a.kind !== 'buffer' || roleOf(a) === 'in') return;
            // An in-place output changed with every launch since its inputs were last made: nothing to compare it
            // with, but with fresh inputs, no repeated launch (graph mode) and an init the refresh regenerates.
            if (roleOf(a) === 'inout' && (s.lineage === undefined || s.repeated || initOf(a)?.kind === 'data')) return;
            const [atol, rtol] = toleranceFor(verifyOptions ?? {}, a.dtype);
            compareOutput(i, a.dtype, s.buffers[i]!.view.copyToHost(), ref.outputs[i]!, atol, rtol, c);
          });
          trials.push(trialResult(k, '', c, undefined));
        }
        // The kept launches: each one's outputs, copied out right after it ran, against the reference on its inputs.
        for (const kept of reservoir.kept()) {
          const c = newComparison();
          const inputs = inputsOf(io, kept.entry.seed, device, kept.lineage);
          const ref = await referenceOutputs(reference, device, io, inputs, zeroOnFree);
          if ('fault' in ref) throw ref.fault;
          for (const [j, i] of reservoir.outputs.entries()) {
            const a = io[i] as BufferArgSpec;
            const [atol, rtol] = toleranceFor(verifyOptions ?? {}, a.dtype);
            compareOutput(i, a.dtype, kept.buffers[j]!.copyToHost(), ref.outputs[i]!, atol, rtol, c);
          }
          keptTrials.set(trials.length, epochOf(kept.lineage));
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
              (sets[failed.trial]?.lineage !== undefined
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

/** One input set of inputSets(): its seed, its inputs and buffers, and what its last timed launch ran on. */
interface SetEntry {
  seed: bigint;
  inputs: TrialInputs;
  buffers: GuardedBuffer[];
  lineage: Lineage | undefined;
  repeated: boolean;
}

/** A launch kept by the reservoir: the set it ran on, what that set held, and its outputs as it left them. */
interface KeptLaunch {
  entry: SetEntry;
  lineage: Lineage;
  buffers: DeviceBuffer[];
}

/** The epoch of the launch a lineage ends with (reports name a launch by it). */
const epochOf = (l: Lineage): number => l.sparse[l.sparse.length - 1] ?? l.base ?? 0;

/**
 * @internal The inputs of a set seeded `seed` whose buffers hold `lineage`: the full refresh of its base epoch, each
 * pure input then changed where the sparse refreshes wrote (sparsePositions(), the values of their epochs' full
 * refreshes), and in-place outputs as the last refresh left them (a sparse one fills them in full).
 */
export function inputsOf(io: readonly ArgSpec[], seed: bigint, device: Device, lineage: Lineage): TrialInputs {
  const inputs = prepareInputs(io, seed, device, lineage.base);
  if (lineage.sparse.length === 0) return inputs;
  const sources = drawSources(io, seed);
  for (const epoch of lineage.sparse) {
    const full = prepareInputs(io, seed, device, epoch);
    io.forEach((a, i) => {
      const source = sources[i];
      if (a.kind !== 'buffer' || source === undefined || inputs.bytes[i] === undefined) return;
      if (roleOf(a) !== 'in') {
        inputs.bytes[i] = full.bytes[i];
        return;
      }
      const size = DTYPE_INFO[a.dtype].bytes;
      const state = epochState(source.state, epoch);
      for (const k of sparsePositions(state, source.first, a.length, SPARSE_CHANGES)) {
        inputs.bytes[i]!.set(full.bytes[i]!.subarray(k * size, (k + 1) * size), k * size);
      }
    });
  }
  inputs.values = io.map((a, i) =>
    a.kind === 'buffer' && inputs.bytes[i] !== undefined ? fromDeviceBytes(a.dtype, inputs.bytes[i]) : undefined,
  );
  return inputs;
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
  const slots: { entry: SetEntry | undefined; lineage: Lineage | undefined; buffers: DeviceBuffer[] }[] = [];
  /** Samples offered so far: sample n (from 1) is kept with probability RESERVOIR_SLOTS / n. */
  let offered = 0;
  /**
   * The set the last sample planned ran on; undefined before the first batch and after a failed one, whose refreshes
   * may have changed any set's buffers (the next batch's first sample then takes a full refresh, wherever it runs).
   */
  let last: number | undefined;
  const slotAt = (k: number) => {
    slots[k] ??= {
      entry: undefined,
      lineage: undefined,
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
      plan: (batchOrder, sets) => {
        const order = [...batchOrder];
        const sparse = order.map(() => false);
        const picks: { sample: number; slot: number }[] = [];
        for (let i = 0; i < order.length && outputs.length > 0; i++) {
          offered++;
          const j = offered <= RESERVOIR_SLOTS ? offered - 1 : randomInt(offered);
          if (j >= RESERVOIR_SLOTS) continue;
          picks.push({ sample: i, slot: j });
          // Right after a launch on the same buffers, with a few elements changed: a key that samples the inputs
          // (and the pointer) sees the launch before's, and a cache keyed on it hits and replays stale outputs.
          const before = i > 0 ? order[i - 1] : last;
          if (before !== undefined) [order[i], sparse[i]] = [before, true];
        }
        if (order.length > 0) last = order[order.length - 1];
        const snapshots = picks.map(({ sample, slot }): SampleSnapshot => {
          const own = entryOf.get(sets[order[sample]!]!)!;
          const kept = slotAt(slot);
          const copies = outputs.map((i, j) => ({
            from: own.buffers[i]!.view.ptr,
            to: kept.buffers[j]!.ptr,
            bytes: kept.buffers[j]!.byteLength,
          }));
          return { sample, copies };
        });
        return {
          order,
          sparse,
          snapshots,
          ran: (lineages) => {
            // In order: a later sample of the batch drawn into the same slot overwrote an earlier one's copy.
            for (const { sample, slot } of picks) {
              const lineage = lineages[sample];
              slots[slot]!.entry = lineage === undefined ? undefined : entryOf.get(sets[order[sample]!]!);
              slots[slot]!.lineage = lineage;
            }
          },
          failed: () => {
            last = undefined;
            // What the failed batch copied is not known: its slots hold nothing to check.
            for (const { slot } of picks) Object.assign(slots[slot]!, { entry: undefined, lineage: undefined });
          },
        };
      },
    }),
    /** The launches kept, in slot order. */
    kept: (): KeptLaunch[] =>
      slots.flatMap((s) => (s.entry !== undefined && s.lineage !== undefined ? [s as KeptLaunch] : [])),
    /** Empties the reservoir; returns its buffers to free. */
    release: (): DeviceBuffer[] => slots.splice(0).flatMap((s) => s.buffers),
  };
}
