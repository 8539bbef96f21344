// SPDX-License-Identifier: MIT
// Kernel functions: a compiled kernel known by its name only, and what the driver says about it (attributes,
// occupancy, the compiled parameter list). Kernel (kernel.ts) builds on it with a signature and launches.
import type { Device } from './device.js';
import type { ParamInfo } from './image.js';
import type { Module } from './module.js';
import { INTERNAL, checkInternal, disposedError } from './lifetime.js';
import { getNative, type Handle, type Native } from './native.js';
import { checkSize, rangeError, typeError } from './validate.js';

/** What the driver reports about a compiled kernel (cuFuncGetAttribute), as `kernel.attributes` gives it. */
export interface KernelAttributes {
  /** Registers per thread. */
  numRegs: number;
  /** Static shared memory per block, in bytes (`__shared__` arrays of fixed size). */
  sharedSizeBytes: number;
  /** User `__constant__` memory, in bytes. */
  constSizeBytes: number;
  /** Local memory per thread, in bytes: register spills and arrays the compiler could not keep in registers. */
  localSizeBytes: number;
  /**
   * The most threads per block a launch of this kernel may have (its registers and `__launch_bounds__` can make it less
   * than the device's).
   */
  maxThreadsPerBlock: number;
  /** The PTX virtual architecture it was compiled for, as major × 10 + minor (90 for compute_90). */
  ptxVersion: number;
  /** The architecture of its binary code, as major × 10 + minor (90 for sm_90). */
  binaryVersion: number;
  /** The most dynamic shared memory a launch may ask for now (setMaxDynamicSharedMemory() raises it). */
  maxDynamicSharedSizeBytes: number;
}

/** One compiled parameter: where it starts in the parameter buffer and how many bytes it takes. */
export interface CompiledParam {
  /** Byte offset of the parameter in the kernel's parameter buffer. */
  offset: number;
  /** Size of the parameter in bytes. */
  size: number;
}

// CUfunction_attribute
const FUNC_ATTR = {
  maxThreadsPerBlock: 0,
  sharedSizeBytes: 1,
  constSizeBytes: 2,
  localSizeBytes: 3,
  numRegs: 4,
  ptxVersion: 5,
  binaryVersion: 6,
  maxDynamicSharedSizeBytes: 8,
} as const;

/**
 * A kernel in a loaded module, known by its name: registers, memory sizes and limits, occupancy and the compiled
 * parameter list, without a signature. Get one with `module.getFunction(name)`; tools that only know a kernel's name
 * (a `cudakit compile` report, say) read it this way. To launch the kernel, get a Kernel with
 * `module.getKernel(name, signature)`: a Kernel is a KernelFunction too, with the same attributes.
 *
 * @example
 * const f = module.getFunction('saxpy');
 * const { blockSize } = f.suggestedBlockSize();
 * console.log(f.attributes.numRegs, f.maxActiveBlocksPerMultiprocessor(blockSize), f.parameters());
 */
export class KernelFunction {
  /** The name it was asked for by (extern "C" name, mangled name or name expression). */
  readonly name: string;
  /** The device the kernel was loaded on. */
  readonly device: Device;
  /** The module this kernel lives in (kept alive by this object). */
  readonly module: Module;
  readonly #native: Native;
  readonly #fn: Handle;
  readonly #ctx: Handle;
  readonly #fromImage: ParamInfo[] | undefined;
  #parameters: CompiledParam[] | null | undefined;
  // Read from the driver at first need, not in the constructor: under lazy loading (the default since CUDA 12.2) a
  // function attribute loads the function's code, which getKernel alone should not pay for; a launch pays it anyway.
  #maxThreads = -1;
  #maxDynamicSmem = -1;
  #attributes: KernelAttributes | undefined;

  /**
   * @internal `fromImage`: the parameter list read from the module image (image.ts), which also tells how many
   * parameters to ask the driver about.
   */
  constructor(token: typeof INTERNAL, module: Module, fn: Handle, name: string, fromImage?: ParamInfo[]) {
    checkInternal(token, 'KernelFunction', 'module.getFunction(name)');
    this.name = name;
    this.device = module.device;
    this.module = module;
    this.#native = getNative();
    this.#fn = fn;
    this.#ctx = module.device.ctx;
    this.#fromImage = fromImage;
  }

  /** The raw CUfunction. Borrowed: valid while the module is loaded. */
  get handle(): Handle {
    if (this.module.disposed === true) throw disposedError(`Kernel function '${this.name}'`);
    return this.#fn;
  }

  /**
   * The compiled parameter list, in order, from the driver (CUDA >= 12.4) or else from the module image; undefined
   * when neither can tell (a fatbin on an older driver). getKernel checks a signature against it.
   */
  parameters(): CompiledParam[] | undefined {
    if (this.#parameters === undefined) {
      const fromDriver = this.#native.funcGetParamInfo(this.#ctx, this.handle, this.#fromImage?.length ?? -1);
      this.#parameters = fromDriver?.map(([offset, size]) => ({ offset, size })) ?? this.#fromImage ?? null;
    }
    return this.#parameters?.map(({ offset, size }) => ({ offset, size }));
  }

  /** Registers, memory sizes, limits and versions of the compiled kernel. */
  get attributes(): KernelAttributes {
    if (this.#attributes === undefined) {
      const a = {} as Record<keyof KernelAttributes, number>;
      for (const [k, id] of Object.entries(FUNC_ATTR)) a[k as keyof KernelAttributes] = this.attr(id);
      this.#attributes = a;
    }
    return { ...this.#attributes, maxDynamicSharedSizeBytes: this.maxDynamicSharedMemoryLimit };
  }

  /** @internal The most threads a block may have: the device's limit and the kernel's, whichever is lower. */
  get maxThreadsPerBlockLimit(): number {
    if (this.#maxThreads < 0) {
      this.#maxThreads = Math.min(this.device.limits.maxThreadsPerBlock, this.attr(FUNC_ATTR.maxThreadsPerBlock));
    }
    return this.#maxThreads;
  }

  /** @internal The most dynamic shared memory a launch may ask for now (setMaxDynamicSharedMemory raises it). */
  get maxDynamicSharedMemoryLimit(): number {
    if (this.#maxDynamicSmem < 0) this.#maxDynamicSmem = this.attr(FUNC_ATTR.maxDynamicSharedSizeBytes);
    return this.#maxDynamicSmem;
  }

  private attr(id: number): number {
    return this.#native.funcGetAttribute(this.#ctx, this.handle, id);
  }

  /** Allows launches with up to `bytes` of dynamic shared memory (above the 48 KiB default, up to the opt-in limit). */
  setMaxDynamicSharedMemory(bytes: number): void {
    const max = this.device.limits.maxSharedMemoryPerBlockOptinBytes;
    checkSize('bytes', bytes, max);
    this.#native.funcSetAttribute(this.#ctx, this.handle, FUNC_ATTR.maxDynamicSharedSizeBytes, bytes);
    this.#maxDynamicSmem = bytes;
  }

  /** Blocks of `blockSize` threads that fit on one SM at once (occupancy). */
  maxActiveBlocksPerMultiprocessor(blockSize: number, dynamicSharedMemBytes = 0): number {
    const maxThreads = this.maxThreadsPerBlockLimit;
    if (typeof blockSize !== 'number' || !Number.isInteger(blockSize) || blockSize < 1 || blockSize > maxThreads) {
      throw (typeof blockSize === 'number' ? rangeError : typeError)(
        'blockSize',
        `an integer in [1, ${maxThreads}]`,
        blockSize,
      );
    }
    checkSize('dynamicSharedMemBytes', dynamicSharedMemBytes);
    return this.#native.occupancyMaxActiveBlocksPerMultiprocessor(
      this.#ctx,
      this.handle,
      blockSize,
      dynamicSharedMemBytes,
    );
  }

  /** The block size with the best occupancy, and the smallest grid that reaches it. */
  suggestedBlockSize(dynamicSharedMemBytes = 0): {
    /** Threads per block that give the highest occupancy (cuOccupancyMaxPotentialBlockSize). */
    blockSize: number;
    /** The fewest blocks that fill the device at that block size. */
    minGridSize: number;
  } {
    checkSize('dynamicSharedMemBytes', dynamicSharedMemBytes);
    const [minGridSize, blockSize] = this.#native.occupancyMaxPotentialBlockSize(
      this.#ctx,
      this.handle,
      dynamicSharedMemBytes,
      0,
    );
    return { blockSize, minGridSize };
  }

  /** 'KernelFunction(saxpy)'. */
  toString(): string {
    return `KernelFunction(${this.name})`;
  }
}
