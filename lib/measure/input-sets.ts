// SPDX-License-Identifier: MIT
// inputSets(): the device argument sets bench() rotates through (inputs.ts fills them, seeded per set), and their
// re-check after timing: every set's outputs against the reference (reference.ts), compared as check() compares
// them (compare-output.ts).
import { CudaError, DTYPE_INFO, type Device, checkBoolean, checkOptions } from '../core/index.js';
import { type ArgSpec, checkArgSpecs, roleOf } from './argspec.js';
import type { CheckOptions } from './check.js';
import { type CheckResult, type TrialResult, buildCheckResult, errorFigures, trialResult } from './check-result.js';
import { compareOutput, newComparison } from './compare-output.js';
import { type GuardedBuffer, type TrialInputs, prepareInputs, releaseBuffers, uploadGuarded } from './inputs.js';
import { splitmix64 } from './random.js';
import { type Reference, checkReference, referenceOutputs } from './reference.js';

/** Options of inputSets(). */
export interface InputSetsOptions {
  /** Zero every buffer before dispose() frees it (see CheckOptions.zeroOnFree). Default false. */
  zeroOnFree?: boolean;
}

/** Device argument sets for bench()'s input rotation, made by inputSets(). */
export interface InputSets {
  /** The arguments of input set `set` (0, 1, 2 ...), made when first asked for: pass `args` itself to bench(). */
  args: (set: number) => unknown[];
  /**
   * Re-checks every set's pure outputs (those without an initial value; in-place outputs changed with every timed
   * launch) against `reference`, on that set's inputs. A reference kernel with its own `io` is matched as in check().
   */
  verify: (reference: Reference, options?: Pick<CheckOptions, 'atol' | 'rtol'>) => Promise<CheckResult>;
  /** Frees every set's buffers (zeroed first with zeroOnFree). */
  dispose: () => void;
}

/**
 * Device argument sets built from `io` (inputs filled, seeded per set from `seed`; outputs poisoned), for bench()'s
 * input rotation: `bench(kernel, config, sets.args)`. `verify(reference)` re-checks every set's outputs after timing.
 */
export function inputSets(device: Device, io: readonly ArgSpec[], seed = 42, options?: InputSetsOptions): InputSets {
  checkArgSpecs(io);
  const o = checkOptions('options', options, ['zeroOnFree'] as const);
  const zeroOnFree = o.zeroOnFree === undefined ? false : checkBoolean('options.zeroOnFree', o.zeroOnFree);
  const sets: { inputs: TrialInputs; buffers: GuardedBuffer[] }[] = [];
  return {
    args: (set: number) => {
      const inputs = prepareInputs(io, splitmix64(BigInt(seed) + 1000n + BigInt(set)), device);
      const buffers: GuardedBuffer[] = [];
      sets.push({ inputs, buffers });
      return uploadGuarded(device, io, inputs, 0, () => 0, buffers);
    },
    verify: async (reference, verifyOptions) => {
      checkReference(reference, io);
      const trials: TrialResult[] = [];
      try {
        for (const [k, s] of sets.entries()) {
          const c = newComparison();
          const ref = await referenceOutputs(reference, device, io, s.inputs, zeroOnFree);
          if ('fault' in ref) throw ref.fault;
          io.forEach((a, i) => {
            if (a.kind !== 'buffer' || roleOf(a) !== 'out') return; // in-place outputs changed with every timed launch
            const d = DTYPE_INFO[a.dtype];
            const [atol, rtol] = [verifyOptions?.atol ?? d.atol, verifyOptions?.rtol ?? d.rtol];
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
          : `FAIL after timing (${failed.defence}) in input set ${failed.trial}`;
      return result;
    },
    dispose: () => {
      const all = sets.flatMap((s) => s.buffers.map((b) => b?.base));
      sets.length = 0;
      releaseBuffers(all, zeroOnFree);
    },
  };
}
