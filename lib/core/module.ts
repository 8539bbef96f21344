// SPDX-License-Identifier: MIT
// Loaded modules (PTX, CUBIN, fatbin): kernels by name or name expression, and __device__/__constant__ globals.
import type { Device } from './device.js';
import { CudaError, assertUsable } from './errors.js';
import { imageParams } from './image.js';
import { Kernel, type Signature } from './kernel.js';
import { HandleOwner, INTERNAL, checkInternal } from './lifetime.js';
import { DeviceBuffer, globalView } from './memory.js';
import { getNative, type Handle } from './native.js';
import { ObjectCode } from './program.js';
import { checkBoolean, checkInt, checkOptions, checkPositiveInt, checkString, typeError } from './validate.js';

/** Options for the driver's PTX JIT (ignored for CUBIN). */
export interface JitOptions {
  maxRegisters?: number;
  /** 0-4; default 4. */
  optimizationLevel?: number;
  lineInfo?: boolean;
  debugInfo?: boolean;
}

export interface LoadModuleOptions {
  jitOptions?: JitOptions;
}

const CU_JIT = { maxRegisters: 0, optimizationLevel: 7, debugInfo: 11, lineInfo: 13 } as const;

function jitPairs(options: JitOptions | undefined): [number, number][] {
  const o = checkOptions('options.jitOptions', options, ['maxRegisters', 'optimizationLevel', 'lineInfo', 'debugInfo'] as const);
  const pairs: [number, number][] = [];
  if (o.maxRegisters !== undefined) pairs.push([CU_JIT.maxRegisters, checkPositiveInt('jitOptions.maxRegisters', o.maxRegisters, 255)]);
  if (o.optimizationLevel !== undefined) pairs.push([CU_JIT.optimizationLevel, checkInt('jitOptions.optimizationLevel', o.optimizationLevel, 0, 4)]);
  if (o.lineInfo !== undefined) pairs.push([CU_JIT.lineInfo, checkBoolean('jitOptions.lineInfo', o.lineInfo) ? 1 : 0]);
  if (o.debugInfo !== undefined) pairs.push([CU_JIT.debugInfo, checkBoolean('jitOptions.debugInfo', o.debugInfo) ? 1 : 0]);
  return pairs;
}

export class Module extends HandleOwner {
  readonly device: Device;
  /** The JIT's informational log (PTX only; empty for CUBIN). */
  readonly infoLog: string;
  readonly #loweredNames: Readonly<Record<string, string>>;
  readonly #image: Uint8Array;
  readonly #kernels = new Set<Kernel>();
  readonly #globals: (() => void)[] = [];

  /** @internal */
  constructor(
    token: typeof INTERNAL, device: Device, handle: Handle, infoLog: string, loweredNames: Readonly<Record<string, string>>,
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
    if (!Array.isArray(signature)) throw typeError('signature', "an array of parameter types such as ['ptr', 'f32']", signature);
    assertUsable('cuModuleGetFunction');
    const symbol = this.#loweredNames[name] ?? name;
    let fn: Handle;
    try {
      fn = getNative().moduleGetFunction(this.device.ctx, this.handle, symbol);
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
            'C++ kernels have mangled names: declare them extern "C", or compile with nameExpressions: [\'' + name + "'].",
        });
      }
      throw e;
    }
    const k = new Kernel(INTERNAL, this, fn, name, signature, imageParams(this.#image, symbol));
    this.#kernels.add(k);
    return k;
  }

  /**
   * The compiled parameter list of a kernel ({ offset, size } in bytes, in order), from the driver (CUDA >= 12.4)
   * or the module image; undefined when neither can tell. Tools use it to build a signature for a kernel they
   * only know by name.
   */
  parameters(name: string): { offset: number; size: number }[] | undefined {
    checkString('name', name);
    const symbol = this.#loweredNames[name] ?? name;
    const fromImage = imageParams(this.#image, symbol);
    const n = getNative();
    const fn = n.moduleGetFunction(this.device.ctx, this.handle, symbol);
    const fromDriver = n.funcGetParamInfo(this.device.ctx, fn, fromImage?.length ?? -1);
    return fromDriver?.map(([offset, size]) => ({ offset, size })) ?? fromImage;
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
    for (const k of this.#kernels) k.dispose();
    for (const retire of this.#globals) retire();
    super.dispose();
  }
}

/** @internal */
export function loadModule(device: Device, code: ObjectCode | Uint8Array | ArrayBuffer | string, options?: LoadModuleOptions): Module {
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
