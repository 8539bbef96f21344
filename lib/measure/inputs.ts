// SPDX-License-Identifier: MIT
// Inputs for check() and bench(): host values generated from the argument specs (seeded, rounded through the device
// type), device buffers filled with them, outputs poisoned so an unwritten element shows, random guard zones around
// every buffer so an out-of-bounds write shows, and zeroing before the memory is freed (zeroOnFree). inputSets()
// (input-sets.ts) builds bench()'s rotating argument sets from them.
import {
  DTYPE_INFO,
  Device,
  type DeviceBuffer,
  type HostArray,
  fromDeviceBytes,
  isContextLost,
  toDeviceBytes,
} from '../core/index.js';
import { type ArgSpec, type BufferArgSpec, type BufferDType, type InitSpec, roleOf } from './argspec.js';
import { type DrawSource, drawsOf, epochState, fillOnDevice } from './device-fill.js';
import { createRng, normal, splitmix64 } from './random.js';

/** What a buffer holds when its spec gives no init: uniform(-1,1) for floats, randint over ±100 (0..100 unsigned). */
function defaultInit(dtype: BufferDType): InitSpec {
  if (DTYPE_INFO[dtype].float) return { kind: 'uniform', lo: -1, hi: 1 };
  return dtype.startsWith('u') ? { kind: 'randint', lo: 0, hi: 100 } : { kind: 'randint', lo: -100, hi: 100 };
}

/**
 * The generator a random init draws from: the trial's shared one, or with `seed` one of the buffer's own, from the
 * trial's seed and that seed, so the buffer's values do not depend on any other buffer.
 */
function generatorFor(init: InitSpec, shared: () => number, trialSeed: bigint, epoch?: number): () => number {
  const seed = 'seed' in init ? init.seed : undefined;
  return seed === undefined ? shared : createRng(epochState(ownState(trialSeed, seed), epoch));
}

/** The state of a buffer's own generator (an init with a `seed`) in the trial seeded `trialSeed`. */
const ownState = (trialSeed: bigint, seed: number): bigint => splitmix64(trialSeed ^ splitmix64(BigInt(seed)));

/** What a buffer of `io` starts with: its init (the default for its dtype without one); undefined for pure outputs. */
export function initOf(a: ArgSpec): InitSpec | undefined {
  if (a.kind !== 'buffer' || roleOf(a) === 'out') return undefined;
  return a.init ?? defaultInit(a.dtype);
}

/**
 * Where each buffer's values come from in the trial seeded `seed`: the draws generatorFor() hands it, as a state and
 * the first draw (its own generator's from the start, or the shared one's from where the buffers before it
 * stopped); undefined for pure outputs, scalars and `data`.
 */
export function drawSources(io: readonly ArgSpec[], seed: bigint): (DrawSource | undefined)[] {
  let sharedDraws = 0n;
  return io.map((a) => {
    const init = initOf(a);
    if (init === undefined || init.kind === 'data' || a.kind !== 'buffer') return undefined;
    if ('seed' in init && init.seed !== undefined) return { state: ownState(seed, init.seed), first: 0n };
    const source = { state: seed, first: sharedDraws };
    sharedDraws += BigInt(drawsOf(init, a.length));
    return source;
  });
}

/**
 * Device bytes for one buffer from its init. Random kinds draw from `rng` (see generatorFor); sequences run over the
 * whole buffer or along its last dimension; `data` is taken as it is.
 */
export function generateBytes(spec: BufferArgSpec, init: InitSpec, rng: () => number): Uint8Array {
  if (init.kind === 'data') return new Uint8Array(init.bytes);
  const n = spec.length;
  // A sequence along the last dimension restarts every lastDim elements; over the whole buffer it never does.
  const along = init.kind === 'seq' || init.kind === 'arange' ? init.along : undefined;
  const period = along === 'last' ? (spec.shape?.[spec.shape.length - 1] ?? n) : n;
  const values = new Float64Array(n);
  fillValues(values, init, rng, period);
  if (!DTYPE_INFO[spec.dtype].bigint) return toDeviceBytes(spec.dtype, values);
  return toDeviceBytes(
    spec.dtype,
    Array.from(values, (v) => BigInt(Math.trunc(v))),
  );
}

/**
 * The values of one init kind, element by element. One loop per kind (not one switch per element) keeps the loops
 * simple for the JIT: a 3M-element buffer is generated for every trial and input set.
 */
function fillValues(out: Float64Array, init: Exclude<InitSpec, { kind: 'data' }>, rng: () => number, period: number) {
  const n = out.length;
  switch (init.kind) {
    case 'uniform': {
      const { lo } = init;
      const span = init.hi - init.lo;
      for (let i = 0; i < n; i++) out[i] = lo + span * rng();
      return;
    }
    case 'normal': {
      const { mean, std } = init;
      for (let i = 0; i < n; i++) out[i] = mean + std * normal(rng);
      return;
    }
    case 'randint': {
      const { lo } = init;
      const span = init.hi - init.lo;
      for (let i = 0; i < n; i++) out[i] = lo + Math.floor(span * rng());
      return;
    }
    case 'const':
      out.fill(init.value);
      return;
    case 'zeros':
      return;
    case 'ones':
      out.fill(1);
      return;
    case 'arange':
      if (period === n) for (let i = 0; i < n; i++) out[i] = i;
      else for (let i = 0; i < n; i++) out[i] = i % period;
      return;
    case 'seq': {
      const { start, step } = init;
      if (period === n) for (let i = 0; i < n; i++) out[i] = start + i * step;
      else for (let i = 0; i < n; i++) out[i] = start + (i % period) * step;
      return;
    }
  }
}

/** One trial's (or one input set's) inputs: what every buffer with an initial value holds before the launch. */
export interface TrialInputs {
  /** Exact device bytes per argument (undefined for scalars and pure outputs). */
  bytes: (Uint8Array | undefined)[];
  /** The same as logical values, what a JavaScript reference sees (fp8/f16/bf16 as Float32Array). */
  values: (HostArray | undefined)[];
}

/**
 * Inputs for every buffer with an initial value, seeded by `seed`: the same seed gives the same bytes. With `device`
 * (a Device: not a stand-in for one) the values are generated there (device-fill.ts: the same bytes, at the speed of
 * memory) in a scratch buffer per argument, copied back, and the scratch zeroed before it is freed; without one,
 * here. With `epoch` (≥ 1), the inputs a timed sample of that epoch got from its refresh launches (inputSets() with
 * fresh inputs).
 */
export function prepareInputs(io: readonly ArgSpec[], seed: bigint, device?: Device, epoch?: number): TrialInputs {
  const shared = createRng(epochState(seed, epoch));
  const sources = drawSources(io, seed);
  const bytes = io.map((a, i) => {
    const init = initOf(a);
    if (init === undefined || a.kind !== 'buffer') return undefined;
    const source = sources[i];
    if (!(device instanceof Device) || source === undefined || init.kind === 'data' || a.length === 0) {
      return generateBytes(a, init, generatorFor(init, shared, seed, epoch));
    }
    const scratch = device.alloc(a.length * DTYPE_INFO[a.dtype].bytes);
    try {
      fillOnDevice(scratch, a, init, { state: epochState(source.state, epoch), first: source.first });
      return scratch.copyToHost<Uint8Array>();
    } finally {
      // Zeroed whatever the caller's zeroOnFree (one memset): this buffer is the harness's own, and a warm worker
      // leaves no job's inputs in memory the next job may be given.
      releaseBuffers([scratch], true);
    }
  });
  // Values decoded from the device bytes: the reference sees exactly what the kernel reads.
  const values = io.map((a, i) =>
    a.kind === 'buffer' && bytes[i] !== undefined ? fromDeviceBytes(a.dtype, bytes[i]) : undefined,
  );
  return { bytes, values };
}

/**
 * What an output holds before every launch: the dtype's poison (a NaN for floats, 0xDEADBEEF or its low bytes for
 * integers), or with `alternate` its bitwise complement, which no element can equal when it equals the poison.
 */
export function poisonBytes(dtype: BufferDType, length: number, alternate = false): Uint8Array {
  const p = DTYPE_INFO[dtype].poison;
  const out = new Uint8Array(length * p.length);
  if (out.length === 0) return out;
  for (let i = 0; i < p.length; i++) out[i] = alternate ? ~p[i]! & 0xff : p[i]!;
  // Doubling copies: a 12 MiB output is poisoned in a few native copies, not a byte loop.
  for (let filled = p.length; filled < out.length; filled *= 2)
    out.copyWithin(filled, 0, Math.min(filled, out.length - filled));
  return out;
}

/** The bytes a buffer starts each launch with: its initial value, or the poison for a pure output. */
export function startBytes(
  spec: BufferArgSpec,
  inputs: TrialInputs,
  index: number,
  alternatePoison = false,
): Uint8Array {
  return inputs.bytes[index] ?? poisonBytes(spec.dtype, spec.length, alternatePoison);
}

/** A device buffer with a guard zone of the same random bytes before and after it. */
export interface GuardedBuffer {
  /** The whole allocation: guard, buffer, guard. */
  base: DeviceBuffer;
  /** The buffer the kernel gets. */
  view: DeviceBuffer;
  guard: Uint8Array;
}

/**
 * Device buffers for `io` with `guardBytes` of random guard (from `rng`) on each side, filled for a launch: inputs
 * with their bytes, outputs poisoned. Returns the launch arguments (scalars as their values); each buffer is added
 * to `buffers` at its argument index as soon as it exists, so the caller releases whatever was made.
 */
export function uploadGuarded(
  device: Device,
  io: readonly ArgSpec[],
  inputs: TrialInputs,
  guardBytes: number,
  rng: () => number,
  buffers: GuardedBuffer[],
): unknown[] {
  return io.map((a, i) => {
    if (a.kind === 'scalar') return a.value;
    const bytes = a.length * DTYPE_INFO[a.dtype].bytes;
    const guard = new Uint8Array(guardBytes);
    for (let k = 0; k < guardBytes; k++) guard[k] = Math.floor(rng() * 256);
    const base = device.alloc(2 * guardBytes + bytes);
    const view = base.subarray(guardBytes, guardBytes + bytes);
    buffers[i] = { base, view, guard };
    const whole = new Uint8Array(2 * guardBytes + bytes);
    whole.set(guard, 0);
    whole.set(startBytes(a, inputs, i), guardBytes);
    whole.set(guard, guardBytes + bytes);
    base.copyFromHost(whole);
    return view;
  });
}

/**
 * Frees device buffers; with `zero`, first sets every byte to 0 and waits for that, so nothing of this job can be
 * read by the next one from reused memory. After a sticky error nothing is zeroed or freed (the memory went with
 * the context) and nothing is thrown.
 */
export function releaseBuffers(buffers: readonly (DeviceBuffer | undefined)[], zero: boolean): void {
  const live = buffers.filter((b): b is DeviceBuffer => b !== undefined && !b.disposed);
  try {
    if (zero && live.length > 0) {
      for (const b of live) b.fill(0);
      live[0]!.device.synchronize();
    }
  } catch (e) {
    if (!isContextLost(e)) {
      for (const b of live) b.dispose();
      throw e;
    }
  }
  for (const b of live) b.dispose(); // silent after a sticky error
}
