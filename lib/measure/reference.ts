// SPDX-License-Identifier: MIT
// References for check(): a kernel with its launch, or a JavaScript function on host arrays, and what they are
// expected to write. A reference kernel may declare its own arguments (Reference.io) when its parameter list
// differs from the candidate's: its buffers are then matched to the candidate's by name, or else by order
// (matchReferenceIo), so it reads the candidate's inputs and its outputs are compared with the candidate's.
import {
  CudaError,
  DTYPE_INFO,
  type Device,
  type DeviceBuffer,
  type HostArray,
  type Kernel,
  type LaunchConfig,
  fromDeviceBytes,
  typeError,
} from '../core/index.js';
import { type ArgSpec, type BufferArgSpec, argumentLabel, checkArgSpecs, roleOf } from './argspec.js';
import { type TrialInputs, releaseBuffers } from './inputs.js';

/** Values the JavaScript reference receives: logical host arrays (fp8/f16/bf16 as Float32Array) and scalars. */
export type HostValue = ArrayBufferView | number | bigint | boolean;

/**
 * A reference kernel, launched with `config`; `io` declares its own arguments when they differ from the candidate's.
 */
export interface ReferenceKernel {
  /** The reference kernel, loaded and with its signature. */
  kernel: Kernel;
  /** Its launch configuration (grid, block ...). */
  config: LaunchConfig;
  /**
   * The reference kernel's own arguments, in its parameter order, when they differ from the candidate's (another
   * order, other scalars, a scratch output). Its buffers are matched to the candidate's (matchReferenceIo): each of
   * its inputs takes the values of a candidate input, each candidate output is compared with one of its outputs, and
   * its scalars are its own. Default: the candidate's io.
   */
  io?: readonly ArgSpec[];
}

/**
 * A reference kernel with its launch, or a JavaScript function that writes the expected outputs into host copies of
 * the candidate's arguments. A function that throws rejects check() with its own error: that is a bug in the
 * reference, not a verdict on the kernel.
 */
export type Reference = ReferenceKernel | ((args: HostValue[]) => void | Promise<void>);

/** How a reference kernel's arguments map onto the candidate's (from matchReferenceIo). */
export interface ReferenceBinding {
  /**
   * For each reference argument, the candidate argument whose initial bytes it starts with, or -1: a scalar (its own
   * value), or an output that starts zeroed.
   */
  sources: number[];
  /**
   * For each candidate output (out or inout), by its argument index:
   * the reference argument holding its expected values.
   */
  outputs: Map<number, number>;
  /** 'name' when the outputs were matched by name, 'order' when by position. */
  outputsBy: 'name' | 'order';
  /** Likewise for the inputs. */
  inputsBy: 'name' | 'order';
}

interface Slot {
  spec: BufferArgSpec;
  index: number;
}

const buffersOf = (io: readonly ArgSpec[], keep: (b: BufferArgSpec) => boolean): Slot[] =>
  io.flatMap((spec, index) => (spec.kind === 'buffer' && keep(spec) ? [{ spec, index }] : []));
const allNamed = (...groups: Slot[][]): boolean => groups.every((g) => g.every((s) => s.spec.name !== undefined));
const shapeOf = (s: BufferArgSpec): string => `${s.dtype}[${(s.shape ?? [s.length]).join(',')}]`;

/**
 * Pairs buffers by position: the counts must agree, and a pair named on both sides must have one name (a mismatch
 * there means the order is not what the names say).
 */
function pairByOrder(reference: Slot[], candidate: Slot[], what: string): [Slot, Slot][] {
  if (reference.length !== candidate.length) {
    throw new TypeError(
      `reference io: the reference has ${reference.length} ${what}${reference.length === 1 ? '' : 's'} ` +
        `but the candidate ${candidate.length}; ` +
        `name every ${what} on both sides (x@ptr:...) to match them by name instead of by order`,
    );
  }
  return reference.map((r, k): [Slot, Slot] => {
    const c = candidate[k]!;
    if (r.spec.name !== undefined && c.spec.name !== undefined && r.spec.name !== c.spec.name) {
      throw new TypeError(
        `reference io: ${what}s are matched by order (not every one is named), and the reference's ` +
          `${argumentLabel(r.spec, r.index)} would meet the candidate's ${argumentLabel(c.spec, c.index)}; ` +
          'name them alike',
      );
    }
    return [r, c];
  });
}

/**
 * Pairs each slot of `wanted` with the slot of the same name in `pool`; `describe` words the error for a missing one.
 */
function pairByName(wanted: Slot[], pool: Slot[], describe: (missing: Slot) => string): [Slot, Slot][] {
  const byName = new Map(pool.map((x) => [x.spec.name!, x]));
  return wanted.map((w): [Slot, Slot] => {
    const match = byName.get(w.spec.name!);
    if (match === undefined) {
      throw new TypeError(
        `reference io: ${describe(w)} (there: ${pool.map((x) => `'${x.spec.name}'`).join(', ') || 'none'})`,
      );
    }
    return [w, match];
  });
}

/** `wide`: a reference output may be f64 where the candidate's is any float type (a precise reference's). */
function sameBuffer(r: Slot, c: Slot, what: string, wide = false): void {
  const widened = wide && r.spec.dtype === 'f64' && DTYPE_INFO[c.spec.dtype].float;
  if ((r.spec.dtype !== c.spec.dtype && !widened) || r.spec.length !== c.spec.length) {
    throw new TypeError(
      `reference io: the reference's ${what} ${argumentLabel(r.spec, r.index)} is ${shapeOf(r.spec)} but the ` +
        `candidate's ${argumentLabel(c.spec, c.index)} is ${shapeOf(c.spec)}; matched buffers need the same element ` +
        (wide ? 'type (or f64 for a float output of the precise reference) and length' : 'type and length'),
    );
  }
}

/**
 * Matches a reference kernel's arguments to the candidate's.
 *
 * Outputs (buffers with `:out`, in-place ones included): every candidate output is compared with a reference output,
 * matched by name when every output on both sides is named, else by order, and then the counts must agree. By name,
 * the reference may have outputs of its own besides (scratch space: they start zeroed and are not compared). A
 * reference output with an initial value (in place) starts from its candidate's, which must have one.
 *
 * Inputs (buffers without `:out`): by name when every input on both sides is named, each of the reference's takes the
 * values of the candidate's input of that name, and candidate inputs the reference does not name are not read; else
 * by order, the reference's inputs meet the candidate's one for one.
 *
 * Matched buffers must have the same element type and length; with `wide` (a precise reference: CheckOptions.precision)
 * a reference output may be f64 where the candidate's is any float type. Scalars are the reference's own.
 *
 * @throws TypeError naming both sides of the first mismatch.
 */
export function matchReferenceIo(
  candidate: readonly ArgSpec[],
  reference: readonly ArgSpec[],
  wide = false,
): ReferenceBinding {
  const sources = reference.map(() => -1);
  const outputs = new Map<number, number>();

  const candidateOutputs = buffersOf(candidate, (b) => roleOf(b) !== 'in');
  const referenceOutputs = buffersOf(reference, (b) => roleOf(b) !== 'in');
  const outputsBy = allNamed(candidateOutputs, referenceOutputs) ? 'name' : 'order';
  const outs =
    outputsBy === 'name'
      ? pairByName(
          candidateOutputs,
          referenceOutputs,
          (c) =>
            `the candidate's output ${argumentLabel(c.spec, c.index)} has no reference output named '${c.spec.name}'`,
        ).map(([c, r]): [Slot, Slot] => [r, c])
      : pairByOrder(referenceOutputs, candidateOutputs, 'output');
  for (const [r, c] of outs) {
    sameBuffer(r, c, 'output', wide);
    outputs.set(c.index, r.index);
    if (roleOf(r.spec) === 'inout') {
      if (r.spec.dtype !== c.spec.dtype) {
        throw new TypeError(
          `reference io: the reference's output ${argumentLabel(r.spec, r.index)} starts from the candidate's ` +
            `initial value (=init), which needs the same element type (${c.spec.dtype})`,
        );
      }
      if (roleOf(c.spec) !== 'inout') {
        throw new TypeError(
          `reference io: the reference's output ${argumentLabel(r.spec, r.index)} starts from an initial value ` +
            `(=init) but the candidate's ${argumentLabel(c.spec, c.index)} has none; give both the same init`,
        );
      }
      sources[r.index] = c.index;
    }
  }

  const candidateInputs = buffersOf(candidate, (b) => roleOf(b) === 'in');
  const referenceInputs = buffersOf(reference, (b) => roleOf(b) === 'in');
  const inputsBy = allNamed(candidateInputs, referenceInputs) ? 'name' : 'order';
  const ins =
    inputsBy === 'name'
      ? pairByName(
          referenceInputs,
          candidateInputs,
          (r) =>
            `the reference's input ${argumentLabel(r.spec, r.index)} has no candidate input named '${r.spec.name}'`,
        )
      : pairByOrder(referenceInputs, candidateInputs, 'input');
  for (const [r, c] of ins) {
    sameBuffer(r, c, 'input');
    sources[r.index] = c.index;
  }
  return { sources, outputs, outputsBy, inputsBy };
}

/**
 * Validates a reference against the candidate's io: a function, or a kernel whose signature fits its io (its own or
 * the candidate's) and whose io matches the candidate's (matchReferenceIo; `wide` for a precise reference). Returns
 * the binding for a kernel. `what` names it in errors.
 *
 * @throws TypeError for a reference of another shape, or io that does not fit.
 */
export function checkReference(
  reference: Reference,
  io: readonly ArgSpec[],
  wide = false,
  what = 'reference',
): ReferenceBinding | undefined {
  if (typeof reference === 'function') return undefined;
  if (typeof reference !== 'object' || reference === null || typeof reference.kernel !== 'object') {
    throw typeError(what, 'a reference { kernel, config, io? } or a function on host arrays', reference);
  }
  const refIo = reference.io ?? io;
  if (reference.io !== undefined) checkArgSpecs(reference.io, `${what}.io`);
  checkIoFits(refIo, reference.kernel, reference.io !== undefined ? `${what}.io` : 'io');
  return matchReferenceIo(io, refIo, wide);
}

/** The io must declare the kernel's parameters: as many, buffers for pointers, scalars of the parameter's type. */
export function checkIoFits(io: readonly ArgSpec[], kernel: Kernel, what = 'io'): void {
  if (io.length !== kernel.signature.length) {
    throw new TypeError(
      `${what} declares ${io.length} arguments but kernel '${kernel.name}' takes ${kernel.signature.length}`,
    );
  }
  io.forEach((a, i) => {
    const p = kernel.signature[i];
    if (a.kind === 'buffer' ? p !== 'ptr' : p !== a.type) {
      throw new TypeError(
        `${what}[${i}] is ${a.kind === 'buffer' ? 'a buffer' : a.type} ` +
          `but parameter ${i} of '${kernel.name}' is ${String(p)}`,
      );
    }
  });
}

/** Expected values per candidate argument index (undefined where the candidate has no output). */
export type ExpectedOutputs = (HostArray | undefined)[];

/**
 * The reference's outputs on one trial's inputs, by candidate argument index, or the driver error its kernel raised.
 * A reference kernel's buffers are made on `device`, or its own device where none is given.
 * A JavaScript reference that throws rejects: its error is the caller's bug, not a verdict on any kernel. The
 * reference kernel's buffers are freed (zeroed first with `zeroOnFree`) before this returns. `wide` (a precise
 * reference): a JavaScript reference writes its float outputs into Float64Arrays, so they keep the doubles it
 * computes; a kernel's outputs are read in its own io's element types (f64 where it declares them).
 */
export async function referenceOutputs(
  reference: Reference,
  device: Device | undefined,
  io: readonly ArgSpec[],
  inputs: TrialInputs,
  zeroOnFree = false,
  wide = false,
): Promise<{ outputs: ExpectedOutputs } | { fault: CudaError }> {
  if (typeof reference === 'function') {
    const args: HostValue[] = io.map((a, i) => {
      if (a.kind === 'scalar') return a.value;
      const float64 = wide && roleOf(a) !== 'in' && DTYPE_INFO[a.dtype].float;
      const arr = new (float64 ? Float64Array : DTYPE_INFO[a.dtype].hostArray)(a.length) as HostArray & {
        set(x: ArrayLike<number | bigint>): void;
      };
      const initial = inputs.values[i];
      if (initial !== undefined) arr.set(initial);
      return arr;
    });
    await reference(args);
    return {
      outputs: io.map((a, i) => (a.kind === 'buffer' && roleOf(a) !== 'in' ? (args[i] as HostArray) : undefined)),
    };
  }
  const refIo = reference.io ?? io;
  const binding = matchReferenceIo(io, refIo, wide);
  const owned: DeviceBuffer[] = [];
  try {
    const args = refIo.map((a, j) => {
      if (a.kind === 'scalar') return a.value;
      const buf = (device ?? reference.kernel.device).alloc(a.length * DTYPE_INFO[a.dtype].bytes);
      owned.push(buf);
      const source = binding.sources[j]!;
      const bytes = source >= 0 ? inputs.bytes[source] : undefined;
      if (bytes !== undefined) buf.copyFromHost(bytes);
      else buf.fill(0);
      return buf;
    });
    const fault = launchAndWait(reference, args);
    if (fault !== undefined) return { fault };
    const outputs: ExpectedOutputs = io.map((a, i) => {
      const j = binding.outputs.get(i);
      if (a.kind !== 'buffer' || j === undefined) return undefined;
      return fromDeviceBytes((refIo[j] as BufferArgSpec).dtype, (args[j] as DeviceBuffer).copyToHost());
    });
    return { outputs };
  } finally {
    releaseBuffers(owned, zeroOnFree); // silent after a sticky error: the memory went with the context
  }
}

/**
 * Launches `target` and waits for it. A driver error (a fault inside the kernel, which shows at the wait, or a launch
 * the driver refused) is returned, as the verdict's material; anything else (TypeError / RangeError from argument
 * validation, a disposed kernel) is the caller's mistake and is thrown.
 */
export function launchAndWait(
  target: { kernel: Kernel; config: LaunchConfig },
  args: unknown[],
): CudaError | undefined {
  try {
    (target.kernel.launch as (c: LaunchConfig, ...x: unknown[]) => void)(target.config, ...args);
    target.kernel.device.synchronize();
    return undefined;
  } catch (e) {
    if (e instanceof CudaError) return e;
    throw e;
  }
}
