// SPDX-License-Identifier: MIT
// Loaded modules (PTX, CUBIN, fatbin): kernels by name or name expression, and __device__/__constant__ globals.
import type { Device } from './device.js';
import { CudaError, assertUsable } from './errors.js';
import { imageParams } from './image.js';
import { type Signature } from './args.js';
import { KernelFunction } from './function.js';
import { Kernel } from './kernel.js';
import { HandleOwner, INTERNAL, checkInternal } from './lifetime.js';
import { DeviceBuffer, globalView } from './memory.js';
import { getNative, type Handle } from './native.js';
import { ObjectCode } from './program.js';
import { checkBoolean, checkInt, checkOptions, checkPositiveInt, checkString, typeError } from './validate.js';

/** Options for the driver's PTX JIT (ignored for CUBIN). */
export interface JitOptions {
  /** Most registers per thread the JIT may use (CU_JIT_MAX_REGISTERS). Default: the JIT's own choice. */
  maxRegisters?: number;
  /** 0-4; default 4. */
  optimizationLevel?: number;
  /** Keep line information, for profilers (CU_JIT_GENERATE_LINE_INFO). Default false. */
  lineInfo?: boolean;
  /** Generate debug information (CU_JIT_GENERATE_DEBUG_INFO). Default false. */
  debugInfo?: boolean;
}

/** Options of `device.loadModule(code, options)`. */
export interface LoadModuleOptions {
  /** How the driver's JIT compiles PTX; ignored for CUBIN. */
  jitOptions?: JitOptions;
}

const CU_JIT = { maxRegisters: 0, optimizationLevel: 7, debugInfo: 11, lineInfo: 13 } as const;

function jitPairs(options: JitOptions | undefined): [number, number][] {
  const o = checkOptions('options.jitOptions', options, [
    'maxRegisters',
    'optimizationLevel',
    'lineInfo',
    'debugInfo',
  ] as const);
  const pairs: [number, number][] = [];
  if (o.maxRegisters !== undefined)
    pairs.push([CU_JIT.maxRegisters, checkPositiveInt('jitOptions.maxRegisters', o.maxRegisters, 255)]);
  if (o.optimizationLevel !== undefined)
    pairs.push([CU_JIT.optimizationLevel, checkInt('jitOptions.optimizationLevel', o.optimizationLevel, 0, 4)]);
  if (o.lineInfo !== undefined) pairs.push([CU_JIT.lineInfo, checkBoolean('jitOptions.lineInfo', o.lineInfo) ? 1 : 0]);
  if (o.debugInfo !== undefined)
    pairs.push([CU_JIT.debugInfo, checkBoolean('jitOptions.debugInfo', o.debugInfo) ? 1 : 0]);
  return pairs;
}

/**
 * A loaded module: PTX, CUBIN or a fatbin in the device's primary context. Made by `device.loadModule(code)` (code
 * from `program.compile()` or bytes from nvcc, Triton ...); kernels come from it by name, with a signature
 * (`getKernel`, to launch) or without (`getFunction`, for attributes), and `__device__` / `__constant__` variables
 * as buffers (`getGlobal`). Disposing it unloads the code; its kernels and globals become unusable.
 */
export class Module extends HandleOwner {
  /** The device the module is loaded on. */
  readonly device: Device;
  /** The JIT's informational log (PTX only; empty for CUBIN). */
  readonly infoLog: string;
  readonly #loweredNames: Readonly<Record<string, string>>;
  readonly #image: Uint8Array;
  /** Kernels got and not yet disposed, disposed with the module. A disposed one leaves, so it can be collected. */
  readonly #kernels = new Set<Kernel>();
  readonly #globals: (() => void)[] = [];

  /** @internal */
  constructor(
    token: typeof INTERNAL,
    device: Device,
    handle: Handle,
    infoLog: string,
    loweredNames: Readonly<Record<string, string>>,
    image: Uint8Array,
  ) {
    checkInternal(token, 'Module', 'device.loadModule()');
    super('Module', handle, getNative().moduleUnload);
    this.#image = image;
    this.device = device;
    this.infoLog = infoLog;
    this.#loweredNames = loweredNames;
  }

  /**
   * A kernel by name (extern "C" name, mangled name, or a name expression given at compile time, e.g.
   * 'scale<float>') with its signature, one type per parameter: `getKernel('saxpy', ['ptr', 'ptr', 'f32', 'i32'])`.
   */
  getKernel<const S extends Signature>(name: string, signature: S): Kernel<S> {
    checkString('name', name);
    if (!Array.isArray(signature))
      throw typeError('signature', "an array of parameter types such as ['ptr', 'f32']", signature);
    const { fn, symbol } = this.#lookup(name);
    const kernels = this.#kernels;
    const k = new Kernel(INTERNAL, this, fn, name, signature, imageParams(this.#image, symbol), (gone) =>
      kernels.delete(gone),
    );
    kernels.add(k);
    return k;
  }

  /**
   * A kernel by name without a signature, for what the driver says about it: attributes, occupancy and the compiled
   * parameter list (KernelFunction). To launch it, use getKernel(name, signature).
   */
  getFunction(name: string): KernelFunction {
    checkString('name', name);
    const { fn, symbol } = this.#lookup(name);
    return new KernelFunction(INTERNAL, this, fn, name, imageParams(this.#image, symbol));
  }

  /** The CUfunction of a kernel name (or name expression); CUDA_ERROR_NOT_FOUND says how C++ names are found. */
  #lookup(name: string): { fn: Handle; symbol: string } {
    assertUsable('cuModuleGetFunction');
    const symbol = this.#loweredNames[name] ?? name;
    try {
      return { fn: getNative().moduleGetFunction(this.device.ctx, this.handle, symbol), symbol };
    } catch (e) {
      if (e instanceof CudaError && e.code === 'CUDA_ERROR_NOT_FOUND') {
        const known = Object.keys(this.#loweredNames);
        throw new CudaError({
          code: e.code,
          api: e.api,
          result: e.result,
          explanation: `no kernel named '${name}'${symbol !== name ? ` (lowered: ${symbol})` : ''} in this module`,
          remedy:
            (known.length > 0 ? `Name expressions compiled into it: ${known.join(', ')}. ` : '') +
            'C++ kernels have mangled names: declare them extern "C", or compile with nameExpressions: [\'' +
            name +
            "'].",
        });
      }
      throw e;
    }
  }

  /**
   * The compiled parameter list of a kernel ({ offset, size } in bytes, in order), from the driver (CUDA >= 12.4)
   * or the module image; undefined when neither can tell. The same as `getFunction(name).parameters()`.
   */
  parameters(name: string):
    | {
        /** Byte offset of the parameter in the kernel's parameter buffer. */
        offset: number;
        /** Size of the parameter in bytes. */
        size: number;
      }[]
    | undefined {
    return this.getFunction(name).parameters();
  }

  /** A __device__ or __constant__ variable as a DeviceBuffer view (valid until the module is disposed). */
  getGlobal(name: string): DeviceBuffer {
    checkString('name', name);
    assertUsable('cuModuleGetGlobal');
    const symbol = this.#loweredNames[name] ?? name;
    const [ptr, bytes] = getNative().moduleGetGlobal(this.device.ctx, this.handle, symbol);
    const { buffer, retire } = globalView(this.device, ptr, bytes, this);
    this.#globals.push(retire);
    return buffer;
  }

  /** Unloads the module; its kernels and globals become unusable. Idempotent. */
  override dispose(): void {
    if (this.disposed) return;
    for (const k of this.#kernels) k.dispose(); // each leaves the set, which a Set's iteration allows
    for (const retire of this.#globals) retire();
    super.dispose();
  }
}

/** @internal */
export function loadModule(
  device: Device,
  code: ObjectCode | Uint8Array | ArrayBuffer | string,
  options?: LoadModuleOptions,
): Module {
  const o = checkOptions('options', options, ['jitOptions'] as const);
  const jit = jitPairs(o.jitOptions as JitOptions | undefined);
  let image: Uint8Array;
  let lowered: Readonly<Record<string, string>> = {};
  if (code instanceof ObjectCode) {
    image = code.bytes;
    lowered = code.loweredNames;
  } else if (typeof code === 'string') {
    image = new TextEncoder().encode(code);
  } else if (code instanceof Uint8Array) {
    image = code;
  } else if (code instanceof ArrayBuffer) {
    image = new Uint8Array(code);
  } else {
    throw typeError('code', 'an ObjectCode, PTX text, or CUBIN/fatbin bytes (Uint8Array or ArrayBuffer)', code);
  }
  if (image.byteLength === 0) throw typeError('code', 'a non-empty module image', code);
  assertUsable('cuModuleLoadData');
  const n = getNative();
  const [handle, infoLog] = n.moduleLoadData(device.ctx, image, jit);
  return new Module(INTERNAL, device, handle, infoLog, lowered, image);
}
