// SPDX-License-Identifier: MIT
// Kernels: a KernelFunction with a fixed signature, launched from a slot buffer shared with native code (arguments
// packed by the writers of args.ts), and the launch rules: grid, block and shared memory within the device's and the
// kernel's limits, the stream and the launch attributes (cooperative, clusterDim), written by one class
// (LaunchHeader) for kernel.launch() and for the bound launches the benchmark loop times (core/sampler.ts).
import { types } from 'node:util';
import {
  type ArgsFor,
  type Layout,
  type Signature,
  type Writer,
  alignmentHint,
  alignUp,
  fastCode,
  formatParam,
  layoutOf,
  packedOffsets,
  writeFast,
} from './args.js';
import { launchEpoch } from './epoch.js';
import { assertUsable } from './errors.js';
import { KernelFunction } from './function.js';
import { type ParamInfo, imageParams } from './image.js';
import { INTERNAL, checkInternal, disposedError } from './lifetime.js';
import type { Module } from './module.js';
import { getNative, type Handle, type Native } from './native.js';
import { Stream } from './stream.js';
import { rangeError, typeError } from './validate.js';

/** Grid or block dimensions: `n` for (n, 1, 1), or `[x]`, `[x, y]`, `[x, y, z]`; missing dimensions are 1. */
export type Dim3 = number | readonly [number] | readonly [number, number] | readonly [number, number, number];

/**
 * How to launch a kernel: `kernel.launch({ grid, block, sharedMemBytes?, stream?, cooperative?, clusterDim? },
 * ...args)`. An unknown key is a TypeError naming the closest known one.
 */
export interface LaunchConfig {
  /** Blocks in the grid. */
  grid: Dim3;
  /** Threads per block. */
  block: Dim3;
  /** Dynamic shared memory per block. Default 0. */
  sharedMemBytes?: number;
  /** Default: the device's legacy default stream. */
  stream?: Stream;
  /** Cooperative launch (grid-wide sync); the whole grid must be resident at once. */
  cooperative?: boolean;
  /** Thread block cluster dimensions (Hopper and later). */
  clusterDim?: Dim3;
}

/** Bytes before the parameters in a slot buffer (see native/common.h). */
const PARAM_BASE = 64;
/** Header word 7: launch flags (native/common.h kLaunchCooperative). */
const LAUNCH_COOPERATIVE = 1;
/** Header words 10..12: cluster dimensions; all 0 for none. */
const CLUSTER_AT = 10;

function readDim(
  name: string,
  v: unknown,
  max: readonly [number, number, number],
  out: Uint32Array,
  at: number,
): number {
  let x: unknown;
  let y: unknown = 1;
  let z: unknown = 1;
  if (typeof v === 'number') x = v;
  else if (Array.isArray(v) && v.length >= 1 && v.length <= 3) [x, y = 1, z = 1] = v as unknown[];
  else throw typeError(name, 'a positive integer or [x, y?, z?]', v);
  const dims = [x, y, z];
  for (let i = 0; i < 3; i++) {
    const d = dims[i];
    const limit = max[i]!;
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > limit) {
      throw (typeof d === 'number' ? rangeError : typeError)(`${name}.${'xyz'[i]}`, `an integer in [1, ${limit}]`, d);
    }
    out[at + i] = d;
  }
  return (x as number) * (y as number) * (z as number);
}

/** Every LaunchConfig key; LaunchHeader.write spells the same list as switch cases (a unit test launches with each). */
const LAUNCH_KEYS: readonly (keyof LaunchConfig)[] = [
  'grid',
  'block',
  'sharedMemBytes',
  'stream',
  'cooperative',
  'clusterDim',
];

/** Edit distance between two short strings (case-insensitive), for "did you mean". */
function editDistance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let row = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const next = [i];
    for (let j = 1; j <= y.length; j++) {
      next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1)));
    }
    row = next;
  }
  return row[y.length]!;
}

/** The known option a misspelt one most likely meant: close in edit distance, or one containing the other. */
function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = Infinity;
  for (const k of known) {
    const d = editDistance(key, k);
    const [short, long] = key.length < k.length ? [key, k] : [k, key];
    const contains = short.length >= 4 && long.toLowerCase().includes(short.toLowerCase());
    const limit = key.length <= 3 ? 1 : Math.max(2, Math.floor(key.length / 5));
    const score = d <= limit ? d : contains ? 100 + d : Infinity;
    if (score < bestScore) [best, bestScore] = [k, score];
  }
  return best;
}

function unknownLaunchOption(key: string): TypeError {
  const near = closestKey(key, LAUNCH_KEYS);
  return new TypeError(
    `Unknown launch option '${key}'${near !== undefined ? ` (did you mean '${near}'?)` : ''}; ` +
      `known options: ${LAUNCH_KEYS.join(', ')}`,
  );
}

/**
 * Whether a dimension reads the same at every launch: a number (or absent), or a frozen array of Array.prototype
 * whose every element is its own data property (a hole reads Array.prototype, a getter may answer anything).
 */
function isFixedDim(d: unknown): boolean {
  if (typeof d !== 'object' || d === null) return true;
  if (types.isProxy(d) || !Object.isFrozen(d) || Object.getPrototypeOf(d) !== Array.prototype) return false;
  const elements = d as readonly unknown[];
  for (let i = 0; i < elements.length; i++) {
    const own = Object.getOwnPropertyDescriptor(elements, i);
    if (own === undefined || !('value' in own)) return false;
  }
  return true;
}

/**
 * Whether no later launch could read `config` (just written) differently: a frozen ordinary object (not a Proxy,
 * which may answer anything for an option the object lacks; its prototype Object.prototype or null), each option
 * an own data property or absent, each dimension a number or a frozen plain array of own data elements, and its
 * stream absent or a Stream of this cudakit, whose dispose() the launch epoch counts (another object's handle getter
 * could answer anything).
 */
function mayKeep(config: LaunchConfig, stream: unknown, ...dims: unknown[]): boolean {
  if (stream !== undefined && !(stream instanceof Stream)) return false;
  if (types.isProxy(config) || !Object.isFrozen(config)) return false;
  const prototype: unknown = Object.getPrototypeOf(config);
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const key of LAUNCH_KEYS) {
    const own = Object.getOwnPropertyDescriptor(config, key);
    if (own === undefined ? key in config : !('value' in own)) return false; // a getter, or a value from the prototype
  }
  return dims.every(isFixedDim);
}

const NO_LIMIT: readonly [number, number, number] = [0xffffffff, 0xffffffff, 0xffffffff];

/**
 * The launch configuration in a slot buffer's header (layout: native/common.h), written by one set of rules for
 * kernel.launch() and for the launches bound for timing (bindLaunch): grid and block within the device's and the
 * kernel's limits, dynamic shared memory within the kernel's, the stream, and the launch attributes. A header with
 * attributes (cooperative, clusterDim) is launched by native code through cuLaunchKernelEx, one without through
 * cuLaunchKernel, whoever launches the slot. Grid, block and shared memory equal to the previous write's are neither
 * validated nor written again (numbers compare by value, so this cannot miss a change).
 */
class LaunchHeader {
  readonly #kernel: KernelFunction;
  readonly #u32: Uint32Array;
  readonly #u64: BigUint64Array;
  /** Where a clusterDim is validated before it is copied in; made by the first launch with attributes. */
  #cluster: Uint32Array | undefined;
  // What the previous write validated and wrote; NaN for none (equal to nothing, so the next write validates).
  #lastGrid = NaN;
  #lastBlock = NaN;
  #lastSmem = 0;
  #attributes = false;
  /**
   * A frozen config that this header holds as written, and the launch epoch then: write() skips every check and
   * write for it while no stream was disposed since (its stream may be that one).
   */
  #frozen: LaunchConfig | undefined = undefined;
  #frozenAt = -1;
  /**
   * The config of the previous write, whether it was looked at for being frozen, and whether it may be kept (see
   * mayKeep); held until another config comes.
   */
  #previous: LaunchConfig | undefined = undefined;
  #previousLooked = false;
  #previousMayKeep = false;

  /** `u64`: a view of the whole slot buffer, which the Kernel packs arguments through too (one view, not two). */
  constructor(kernel: KernelFunction, u64: BigUint64Array) {
    this.#kernel = kernel;
    this.#u32 = new Uint32Array(u64.buffer, 0, 16);
    this.#u64 = u64;
  }

  /**
   * Validates `config` and writes it. Throws TypeError / RangeError before anything is launched. A frozen config
   * (Object.freeze) written twice in a row is kept: nothing in it can change, so later writes of it check and write
   * nothing, its stream included, until a stream is disposed (launchEpoch). That skips the walk over its keys, most
   * of what a launch's JavaScript costs next to the driver's calls, and the stream's write, which touches the stream
   * and its handle (bench/RESULTS.md: 'The launch path trimmed', 'A kept config writes nothing').
   */
  write(config: LaunchConfig): void {
    if (config === this.#frozen && this.#frozenAt === launchEpoch) return;
    this.#writeChecked(config);
  }

  /**
   * The checked write: what differs from the previous write is validated and written out of line, so that this part
   * stays small.
   */
  #writeChecked(config: LaunchConfig): void {
    this.#frozen = undefined;
    // Whether the config may be kept is asked at its second write in a row that succeeds, once (mayKeep, at the end):
    // a config made afresh for every launch never pays for the question.
    const again = config === this.#previous;
    if (!again) {
      this.#previous = config;
      this.#previousLooked = false;
      this.#previousMayKeep = false;
    }
    if (typeof config !== 'object' || config === null)
      throw typeError('config', 'a launch config { grid, block }', config);
    // One for-in walk both rejects unknown keys (a typo such as sharedMemByte or streams must not launch with the
    // defaults) and reads the known ones. A plain config is not kept between launches (only a frozen one is, see
    // write()), so a key added to a config that was launched with before is still caught. Reading the values in the
    // walk (config[key]) rather than as config.grid and so on costs the same for one shape of config, and stays as
    // cheap when a program launches with many shapes (object literals with other keys or key orders), where each
    // config.x would be a megamorphic property lookup: 20-30 ns more per launch, measured with
    // test/unit/launch-overhead.ts. for-in sees only enumerable keys, so a key it did not see is then read the
    // ordinary way (a getter on a class, a non-enumerable property).
    let grid: unknown, block: unknown, smem: unknown, stream: Stream | undefined, cooperative: unknown;
    let clusterDim: Dim3 | undefined;
    for (const key in config) {
      switch (key) {
        case 'grid':
          grid = config[key];
          continue;
        case 'block':
          block = config[key];
          continue;
        case 'sharedMemBytes':
          smem = config[key];
          continue;
        case 'stream':
          stream = config[key];
          continue;
        case 'cooperative':
          cooperative = config[key];
          continue;
        case 'clusterDim':
          clusterDim = config[key];
          continue;
        default:
          throw unknownLaunchOption(key);
      }
    }
    if (grid === undefined) grid = config.grid;
    if (block === undefined) block = config.block;
    if (smem === undefined) smem = config.sharedMemBytes;
    if (stream === undefined) stream = config.stream;
    if (cooperative === undefined) cooperative = config.cooperative;
    if (clusterDim === undefined) clusterDim = config.clusterDim;
    smem ??= 0;
    if (grid !== this.#lastGrid) this.#writeGrid(grid);
    if (block !== this.#lastBlock) this.#writeBlock(block);
    if (smem !== this.#lastSmem) this.#writeSharedMem(smem);
    // Written every time: storing a bigint costs 1 ns, comparing it with the previous one 4 ns (Node 20).
    this.#u64[4] = stream === undefined ? 0n : stream.handle; // the getter throws for a disposed stream
    if (this.#attributes || cooperative === true || clusterDim !== undefined) {
      this.#writeAttributes(cooperative === true, clusterDim);
    }
    if (!again) return;
    if (!this.#previousLooked) {
      this.#previousLooked = true;
      this.#previousMayKeep = mayKeep(config, stream, grid, block, clusterDim);
    }
    if (this.#previousMayKeep) {
      this.#frozen = config;
      this.#frozenAt = launchEpoch;
    }
  }

  #writeGrid(grid: unknown): void {
    this.#lastGrid = NaN;
    readDim('grid', grid, this.#kernel.device.limits.maxGridDim, this.#u32, 0);
    if (typeof grid === 'number') this.#lastGrid = grid;
  }

  #writeBlock(block: unknown): void {
    this.#lastBlock = NaN;
    const k = this.#kernel;
    const threads = readDim('block', block, k.device.limits.maxBlockDim, this.#u32, 3);
    const maxThreads = k.maxThreadsPerBlockLimit;
    if (threads > maxThreads)
      throw rangeError('block', `at most ${maxThreads} threads for kernel '${k.name}'`, threads);
    if (typeof block === 'number') this.#lastBlock = block;
  }

  #writeSharedMem(smem: unknown): void {
    const max = this.#kernel.maxDynamicSharedMemoryLimit;
    if (typeof smem !== 'number' || !Number.isInteger(smem) || smem < 0 || smem > max) {
      throw (typeof smem === 'number' ? rangeError : typeError)(
        'sharedMemBytes',
        `an integer in [0, ${max}] (raise it with kernel.setMaxDynamicSharedMemory)`,
        smem,
      );
    }
    this.#u32[6] = smem;
    this.#lastSmem = smem;
  }

  #writeAttributes(cooperative: boolean, clusterDim: Dim3 | undefined): void {
    const cluster = (this.#cluster ??= new Uint32Array(3));
    if (clusterDim !== undefined) readDim('clusterDim', clusterDim, NO_LIMIT, cluster, 0);
    else cluster.fill(0);
    this.#u32[7] = cooperative ? LAUNCH_COOPERATIVE : 0;
    this.#u32.set(cluster, CLUSTER_AT);
    this.#attributes = cooperative || clusterDim !== undefined;
  }

  /**
   * The kernel's shared memory limit changed: validate the next write's shared memory again. NaN, which no value
   * equals (it was -1, so a launch with a sharedMemBytes of -1 then went through unchecked).
   */
  sharedMemoryLimitChanged(): void {
    this.#lastSmem = NaN;
    this.#frozen = undefined; // checked again at its next launch, and kept again if that passes
  }
}

/**
 * A kernel with a fixed signature: a KernelFunction that launches. Get one with `module.getKernel(name,
 * signature)`. Launches are synchronous enqueues: cheap, no Promise, no allocation.
 */
export class Kernel<S extends Signature = Signature> extends KernelFunction implements Disposable {
  /** The parameter types the kernel was got with, checked against the compiled kernel. */
  readonly signature: S;
  readonly #native: Native;
  readonly #fn: Handle;
  readonly #ctx: Handle;
  readonly #buffer: ArrayBuffer;
  readonly #header: LaunchHeader;
  readonly #dv: DataView;
  readonly #u64: BigUint64Array;
  readonly #writers: Writer[];
  /** Per parameter, its writeFast code (FAST_NONE: only its writer packs it). */
  readonly #fast: number[];
  /** Parameter offsets in the slot buffer (PARAM_BASE included). */
  readonly #offsets: number[];
  /** Told by dispose(), once: the module then stops holding this kernel. */
  readonly #onDispose: ((kernel: Kernel) => void) | undefined;
  #slot = -1;
  #disposed = false;

  /** @internal */
  constructor(
    token: typeof INTERNAL,
    module: Module,
    fn: Handle,
    name: string,
    signature: S,
    fromImage?: ParamInfo[],
    onDispose?: (kernel: Kernel) => void,
  ) {
    checkInternal(token, 'Kernel', 'module.getKernel(name, signature)');
    super(token, module, fn, name, fromImage);
    if (!Array.isArray(signature))
      throw typeError('signature', "an array of parameter types such as ['ptr', 'f32', 'i32']", signature);
    this.signature = Object.freeze([...signature]) as unknown as S;
    this.#native = getNative();
    this.#fn = fn;
    this.#ctx = module.device.ctx;
    const layouts = signature.map((p, i) => layoutOf(p, `argument ${i} (${formatParam(p)}) of kernel '${name}'`));
    // The compiled parameter list, from the driver (CUDA >= 12.4) or else from the image itself: a signature that
    // disagrees is caught here, before it can silently pass garbage (e.g. 'f32' for a double). The image also tells
    // how many parameters to ask the driver about, so it is never probed past the last one.
    const compiled = this.parameters();
    let offsets: number[];
    if (compiled !== undefined) {
      checkSignature(name, signature, layouts, compiled);
      offsets = compiled.map((p) => p.offset);
    } else {
      offsets = packedOffsets(layouts);
    }
    const paramBytes = layouts.reduce((end, l, i) => Math.max(end, offsets[i]! + l.size), 0);
    this.#buffer = new ArrayBuffer(PARAM_BASE + alignUp(Math.max(paramBytes, 8), 8));
    this.#dv = new DataView(this.#buffer);
    this.#u64 = new BigUint64Array(this.#buffer);
    this.#header = new LaunchHeader(this, this.#u64);
    this.#writers = layouts.map((l) => l.write);
    this.#offsets = offsets.map((o) => o + PARAM_BASE);
    this.#fast = signature.map((p, i) => fastCode(p, this.#offsets[i]!));
    this.#slot = this.#native.kernelSlotCreate(this.#ctx, fn, this.#buffer, offsets);
    this.#onDispose = onDispose;
  }

  /** The raw CUfunction. Borrowed: valid while the module is loaded and this kernel is not disposed. */
  override get handle(): Handle {
    if (this.#disposed) throw disposedError(`Kernel '${this.name}'`);
    return super.handle;
  }

  override setMaxDynamicSharedMemory(bytes: number): void {
    super.setMaxDynamicSharedMemory(bytes);
    this.#header.sharedMemoryLimitChanged(); // re-validate shared memory at the next launch
  }

  /**
   * Enqueues the kernel. Grid, block and shared memory are checked against the device's and the kernel's limits,
   * and every argument against its signature type, before the driver is called (TypeError / RangeError). A launch
   * with `cooperative` or `clusterDim` goes through cuLaunchKernelEx with those attributes, any other through
   * cuLaunchKernel. A plain config object has its keys checked at every launch, so a key added to it later is still
   * caught; a frozen one (`Object.freeze`, its dimensions numbers or frozen arrays) is checked at its first launches
   * and then kept: later launches with it check and write nothing but the arguments, until a stream is disposed (its
   * stream may be that one). The cheapest launch for a hot loop.
   */
  // @ts-expect-error TS2394: checking an overload against its implementation erases S, and ArgsFor<any> is no array.
  launch(config: LaunchConfig, ...args: ArgsFor<S>): void;
  // The implementation declares no rest parameter and reads the arguments from `arguments`, where the caller passed
  // them. With `...args` declared (unused, so never made) a launch still cost more next to the driver's calls
  // (bench/RESULTS.md, 'The launch path trimmed').
  launch(config: LaunchConfig): void {
    if (this.#disposed) throw disposedError(`Kernel '${this.name}'`);
    assertUsable('cuLaunchKernel');
    this.#header.write(config);
    const writers = this.#writers;
    const n = writers.length;
    if (arguments.length !== n + 1) throw this.#countError(arguments.length - 1);
    const dv = this.#dv;
    const u64 = this.#u64;
    const offsets = this.#offsets;
    const fast = this.#fast;
    for (let i = 0; i < n; i++) {
      const v: unknown = arguments[i + 1];
      if (!writeFast(fast[i]!, dv, u64, offsets[i]!, v)) writers[i]!(dv, offsets[i]!, v);
    }
    this.#native.launchKernel(this.#slot);
  }

  /**
   * @internal A launch slot of its own with this configuration and these arguments bound, validated and written by
   * the same rules as launch() (launch attributes included): native code launches it exactly as launch() would
   * (core/sampler.ts times it). `release()` frees the slot; idempotent.
   */
  bindLaunch(config: LaunchConfig, args: readonly unknown[]): { slot: number; release: () => void } {
    if (this.#disposed) throw disposedError(`Kernel '${this.name}'`);
    const buffer = new ArrayBuffer(this.#buffer.byteLength);
    new LaunchHeader(this, new BigUint64Array(buffer)).write(config);
    const writers = this.#writers;
    if (args.length !== writers.length) throw this.#countError(args.length);
    const dv = new DataView(buffer);
    for (let i = 0; i < writers.length; i++) writers[i]!(dv, this.#offsets[i]!, args[i]);
    const slot = this.#native.kernelSlotCreate(
      this.#ctx,
      this.#fn,
      buffer,
      this.#offsets.map((o) => o - PARAM_BASE),
    );
    let live = true;
    return {
      slot,
      release: () => {
        if (live) this.#native.kernelSlotDestroy(slot);
        live = false;
      },
    };
  }

  /** The error for a launch with the wrong number of arguments. */
  #countError(received: number): TypeError {
    const n = this.#writers.length;
    return new TypeError(
      `Kernel '${this.name}' takes ${n} argument${n === 1 ? '' : 's'} ` +
        `[${this.signature.map(formatParam).join(', ')}] but received ${received}`,
    );
  }

  /** Releases the launch slot. The CUfunction itself lives as long as its module. Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#native.kernelSlotDestroy(this.#slot);
    this.#slot = -1;
    this.#onDispose?.(this);
  }

  /** dispose(), for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** 'Kernel(saxpy(f32, ptr, ptr, i32))'. */
  override toString(): string {
    return `Kernel(${this.name}(${this.signature.map(formatParam).join(', ')}))`;
  }
}

/** A signature must match the compiled parameter list: count and every size (TypeError, with alignment advice). */
/**
 * Checks `signature` against the parameters of kernel `name` as `code` holds them (its PTX .entry or its CUBIN's
 * parameter info), as getKernel() does when the module loads, but without a device: the same TypeError for a count or
 * a size that differs. Checks nothing where the image does not tell (a fatbin).
 */
export function checkCompiledSignature(
  code: { bytes: Uint8Array; loweredNames: Readonly<Record<string, string>> },
  name: string,
  signature: Signature,
): void {
  const compiled = imageParams(code.bytes, code.loweredNames[name] ?? name);
  if (compiled === undefined) return;
  const layouts = signature.map((p, i) => layoutOf(p, `argument ${i} (${formatParam(p)}) of kernel '${name}'`));
  checkSignature(name, signature, layouts, compiled);
}

function checkSignature(
  name: string,
  signature: Signature,
  layouts: readonly Layout[],
  compiled: readonly { size: number }[],
): void {
  if (compiled.length !== layouts.length) {
    throw new TypeError(
      `Kernel '${name}' takes ${compiled.length} parameter${compiled.length === 1 ? '' : 's'} ` +
        `but the signature lists ${layouts.length}: [${signature.map(formatParam).join(', ')}]`,
    );
  }
  compiled.forEach(({ size }, i) => {
    if (size !== layouts[i]!.size) {
      throw new TypeError(
        `Parameter ${i} of kernel '${name}' is ${size} bytes but the signature says ` +
          `${formatParam(signature[i]!)} (${layouts[i]!.size} bytes)${alignmentHint(signature[i]!, layouts[i]!, size)}`,
      );
    }
  });
}
