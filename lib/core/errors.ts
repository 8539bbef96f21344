// SPDX-License-Identifier: MIT
// Error classes. Native code builds them through the factory registered below, so every failure from any layer
// is a CudaError (driver, loader) or a CompileError (NVRTC) with a code, the API name, an explanation and a remedy.
// native.ts registers the factory when the addon loads (it imports this file, not the other way round, so that its
// own error, ADDON_NOT_LOADED, is made here too).

/**
 * The library's own error codes in their old spellings, each with the code that replaces it (docs/errors.md, "Error
 * codes"). The rule: CUDA's and NVRTC's own names for what the driver and NVRTC return (`CUDA_ERROR_*`,
 * `NVRTC_ERROR_*`), Node's codes where cudakit follows Node (`ABORT_ERR`), and `ERR_CUDAKIT_*` for every other code.
 * Until the next minor release `code` keeps the old value and `codeNext` carries the new one; then `code` switches.
 * A code not listed here already follows the rule and is its own next code.
 */
export const CODE_RENAMES: Readonly<Record<string, string>> = Object.freeze({
  ADDON_NOT_LOADED: 'ERR_CUDAKIT_ADDON_NOT_LOADED',
  CUDA_DRIVER_NOT_FOUND: 'ERR_CUDAKIT_DRIVER_NOT_FOUND',
  CUDA_DRIVER_TOO_OLD: 'ERR_CUDAKIT_DRIVER_TOO_OLD',
  NVRTC_NOT_FOUND: 'ERR_CUDAKIT_NVRTC_NOT_FOUND',
  ERR_DISPOSED: 'ERR_CUDAKIT_DISPOSED',
  ERR_CUDA_WAIT_TIMEOUT: 'ERR_CUDAKIT_WAIT_TIMEOUT',
  ERR_INVALID_JOB: 'ERR_CUDAKIT_INVALID_JOB',
  CUDAKIT_BENCH_TIMEOUT: 'ERR_CUDAKIT_BENCH_TIMEOUT',
  CUDAKIT_CUPTI: 'ERR_CUDAKIT_CUPTI',
});

/**
 * The code that replaces `code` in the next minor release: `CODE_RENAMES[code]` for an old spelling, else `code`
 * itself. Translates a stored or logged old code to the one to match on.
 */
export function nextCode(code: string): string {
  return Object.hasOwn(CODE_RENAMES, code) ? CODE_RENAMES[code]! : code;
}

/**
 * Gives an error that has a string `code` its `codeNext` (nextCode(code)), unless it has one; returns the error.
 * For errors made outside the classes below: plain Errors with a code, and those the addon throws itself.
 * @internal
 */
export function withCodeNext<E>(e: E): E {
  if (e instanceof Error && !Object.hasOwn(e, 'codeNext')) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') Object.assign(e, { codeNext: nextCode(code) });
  }
  return e;
}

/**
 * A plain Error with `code` and `codeNext`, for failures that need no class of their own (a disposed object, an
 * addon that did not load).
 * @internal
 */
export function codedError(
  message: string,
  code: string,
  options?: ErrorOptions,
): Error & { readonly code: string; readonly codeNext: string } {
  return Object.assign(new Error(message, options), { code, codeNext: nextCode(code) });
}

/** Remedies for the driver errors people actually meet; the explanation itself comes from cuGetErrorString. */
const REMEDIES: Record<string, string> = {
  CUDA_DRIVER_NOT_FOUND:
    'Install the NVIDIA driver (it provides libcuda.so.1), or point CUDAKIT_LIBCUDA_PATH at libcuda.so.1. ' +
    'In a container, run it with the GPU exposed (e.g. --gpus all).',
  CUDA_DRIVER_TOO_OLD: 'Update the NVIDIA driver, or avoid this call on this machine.',
  NVRTC_NOT_FOUND:
    'Install NVRTC (the CUDA toolkit, the nvidia-cuda-nvrtc pip wheel, or Debian non-free libnvrtc11.2), ' +
    'or point CUDAKIT_NVRTC_PATH at libnvrtc.so.',
  CUDA_ERROR_NO_DEVICE: 'No CUDA-capable GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES.',
  CUDA_ERROR_INVALID_DEVICE: 'Use an ordinal below Device.count().',
  CUDA_ERROR_OUT_OF_MEMORY:
    'Free buffers you no longer need (dispose() them), allocate less, or check device.memoryInfo().',
  CUDA_ERROR_NOT_FOUND:
    'Check the name. For C++ kernels use extern "C" or pass the name through nameExpressions at compile time.',
  CUDA_ERROR_INVALID_PTX: 'The PTX does not assemble for this device: see the JIT log above.',
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    'The PTX was made by a newer compiler than this driver understands: update the driver, or compile to cubin.',
  CUDA_ERROR_NO_BINARY_FOR_GPU:
    'The code was compiled for another architecture: compile for this device (arch: device.arch) or include PTX.',
  CUDA_ERROR_INVALID_IMAGE: 'The bytes are not a CUBIN, fatbin or PTX module for this driver.',
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    'Use fewer threads per block, fewer registers (maxRegisters) or less shared memory for this launch.',
  CUDA_ERROR_INVALID_VALUE: 'An argument is out of range for this call: check sizes, offsets and launch dimensions.',
  CUDA_ERROR_INVALID_HANDLE: 'The object was destroyed or belongs to another context.',
  CUDA_ERROR_NOT_READY: 'The work has not finished yet: synchronize() first.',
  CUDA_ERROR_ILLEGAL_ADDRESS:
    'A kernel read or wrote memory it does not own. Run under compute-sanitizer --tool memcheck to find where. ' +
    'The CUDA context is now unusable: restart the process.',
  CUDA_ERROR_LAUNCH_FAILED: 'A kernel faulted. The CUDA context is now unusable: restart the process.',
  CUDA_ERROR_ASSERT: 'A device-side assert() fired. The CUDA context is now unusable: restart the process.',
  CUDA_ERROR_MISALIGNED_ADDRESS:
    'A kernel made a misaligned access. The CUDA context is now unusable: restart the process.',
  CUDA_ERROR_ILLEGAL_INSTRUCTION: 'A kernel executed an illegal instruction. Restart the process.',
  CUDA_ERROR_HARDWARE_STACK_ERROR: 'A kernel overflowed its call stack (deep recursion?). Restart the process.',
  CUDA_ERROR_LAUNCH_TIMEOUT: 'A kernel ran past the watchdog limit. Restart the process.',
  CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    'A cooperative grid must fit on the device at once: use at most maxActiveBlocksPerMultiprocessor × SMs blocks.',
  CUDA_ERROR_INVALID_CLUSTER_SIZE: 'The cluster size must divide the grid and not exceed the device limit (8, or 16).',
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: 'This operation cannot be captured into a graph: move it out of the capture.',
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: 'The capture was broken by an earlier error: begin it again.',
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: 'This memory is already pinned.',
  CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
    "These two devices cannot access each other's memory directly (device.canAccessPeer(other) is false: no " +
    'NVLink or PCIe peer-to-peer path between them, or the platform forbids it). copyFrom() still copies between ' +
    'them, through host memory.',
  CUDA_ERROR_PEER_ACCESS_NOT_ENABLED:
    "Call device.enablePeerAccess(other) on the device whose kernels or copies use the other device's memory.",
  CUDA_ERROR_TOO_MANY_PEERS:
    'The device has no peer mappings left (8 at most): enable peer access only between devices that exchange data.',
  CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: 'The kernel module and libcuda versions differ: reinstall the driver or reboot.',
};

/** The remedy a CudaError of `code` carries ('CUDA_DRIVER_NOT_FOUND' ...), or undefined where there is none. */
export function remedyFor(code: string): string | undefined {
  return Object.hasOwn(REMEDIES, code) ? REMEDIES[code] : undefined;
}

/** Errors after which the CUDA context is unusable until the process restarts. */
const STICKY = new Set([
  'CUDA_ERROR_ILLEGAL_ADDRESS',
  'CUDA_ERROR_LAUNCH_FAILED',
  'CUDA_ERROR_ASSERT',
  'CUDA_ERROR_MISALIGNED_ADDRESS',
  'CUDA_ERROR_ILLEGAL_INSTRUCTION',
  'CUDA_ERROR_HARDWARE_STACK_ERROR',
  'CUDA_ERROR_INVALID_ADDRESS_SPACE',
  'CUDA_ERROR_INVALID_PC',
  'CUDA_ERROR_LAUNCH_TIMEOUT',
  'CUDA_ERROR_TENSOR_MEMORY_LEAK',
  'CUDA_ERROR_ECC_UNCORRECTABLE',
]);

interface StickyState {
  code: string;
  api: string;
  result: number;
}
let sticky: StickyState | undefined;

export interface CudaErrorFields {
  code: string;
  api: string;
  result: number;
  explanation: string;
  remedy?: string | undefined;
  tried?: string[] | undefined;
  detail?: string | undefined;
  /** What cudakit was doing when the call failed, e.g. 'bench(): warm-up'; names it in the message. */
  phase?: string | undefined;
}

/** A failed CUDA driver call, or a driver/NVRTC that could not be loaded. */
export class CudaError extends Error {
  /**
   * 'CUDA_ERROR_OUT_OF_MEMORY', or a loader code: 'CUDA_DRIVER_NOT_FOUND', 'CUDA_DRIVER_TOO_OLD', 'NVRTC_NOT_FOUND'.
   */
  readonly code: string;
  /**
   * The code by the rule of docs/errors.md, which `code` becomes in the next minor release: `code` itself for CUDA's
   * names, 'ERR_CUDAKIT_DRIVER_NOT_FOUND', 'ERR_CUDAKIT_DRIVER_TOO_OLD', 'ERR_CUDAKIT_NVRTC_NOT_FOUND' for the
   * loader's. Match on it now.
   */
  readonly codeNext: string;
  /** The CUresult number; -1 for loader codes. */
  readonly result: number;
  /** The API that failed, e.g. 'cuLaunchKernel'. */
  readonly api: string;
  /** What the error means, from CUDA's documentation of the code. */
  readonly explanation: string;
  /** What to do about it ('' when there is no advice for this code). */
  readonly remedy: string;
  /** Loader errors: every place that was tried, with why it failed. */
  readonly tried: readonly string[];
  /** True when this error left the CUDA context unusable (the process must restart to use the GPU again). */
  readonly sticky: boolean;
  /** What cudakit was doing when the call failed (e.g. 'bench(): timing'), when a harness added it. */
  readonly phase: string | undefined;
  /** Text the driver gave beside the code, e.g. the JIT's error log of a PTX that did not assemble. */
  readonly detail: string | undefined;

  /** @internal Made by cudakit itself (the native layer's error factory), not by users. */
  constructor(f: CudaErrorFields) {
    const remedy = f.remedy ?? REMEDIES[f.code] ?? '';
    const isSticky = STICKY.has(f.code);
    let message =
      `${f.phase !== undefined ? `${f.phase}: ` : ''}${f.api} failed: ` +
      `${f.code}${f.result >= 0 ? ` (${f.result})` : ''}: ${f.explanation}`;
    if (f.detail) message += `\n${f.detail.trimEnd()}`;
    if (f.tried && f.tried.length > 0) message += `\n  tried:\n${f.tried.map((t) => `    ${t}`).join('\n')}`;
    const earlier = sticky;
    if (earlier !== undefined && !isSticky) {
      message +=
        `\n  The CUDA context has been unusable since ${earlier.api} failed with ${earlier.code}; ` +
        'every later call fails. Restart the process to use the GPU again.';
    }
    if (remedy) message += `\n  Remedy: ${remedy}`;
    super(message);
    this.name = 'CudaError';
    this.code = f.code;
    this.codeNext = nextCode(f.code);
    this.result = f.result;
    this.api = f.api;
    this.explanation = f.explanation;
    this.remedy = remedy;
    this.tried = f.tried ?? [];
    this.sticky = isSticky || earlier !== undefined;
    this.phase = f.phase;
    this.detail = f.detail;
    if (isSticky && sticky === undefined) sticky = { code: f.code, api: f.api, result: f.result };
  }

  /** The same error with the phase it happened in named first in its message; the original is its `cause`. */
  static inPhase(e: CudaError, phase: string): CudaError {
    const copy = new CudaError({
      code: e.code,
      api: e.api,
      result: e.result,
      explanation: e.explanation,
      remedy: e.remedy,
      tried: [...e.tried],
      detail: e.detail,
      phase,
    });
    Object.defineProperty(copy, 'cause', { value: e, enumerable: false, writable: true, configurable: true });
    return copy;
  }
}

/** True for an error that means the CUDA context is gone: cleanup after it has nothing left to release. */
export function isContextLost(e: unknown): boolean {
  return sticky !== undefined || (e instanceof CudaError && e.sticky);
}

const STILL_RUNNING =
  'The GPU work keeps running: a kernel cannot be stopped from the host, only by ending the process ' +
  '(a server runs untrusted kernels in a child process it can kill).';

/** A wait given `timeoutMs` ran out before the GPU got there. */
export class TimeoutError extends Error {
  /** Always 'ERR_CUDA_WAIT_TIMEOUT' (until the next minor release, then 'ERR_CUDAKIT_WAIT_TIMEOUT'). */
  readonly code = 'ERR_CUDA_WAIT_TIMEOUT';
  /** Always 'ERR_CUDAKIT_WAIT_TIMEOUT', the code by the rule of docs/errors.md. Match on it now. */
  readonly codeNext = nextCode(this.code);
  /** The limit that ran out, in milliseconds. */
  readonly timeoutMs: number;

  constructor(what: string, timeoutMs: number) {
    super(`${what} did not finish within ${timeoutMs} ms. ${STILL_RUNNING}`);
    this.name = 'TimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/** A wait given an AbortSignal was aborted; `cause` is the signal's reason. */
export class AbortError extends Error {
  /** Always 'ABORT_ERR', as Node's own AbortError. */
  readonly code = 'ABORT_ERR';
  /** Always 'ABORT_ERR' too: Node's code already follows the rule. */
  readonly codeNext = nextCode(this.code);

  constructor(what: string, reason: unknown) {
    super(`${what} was aborted. ${STILL_RUNNING}`, { cause: reason });
    this.name = 'AbortError';
  }
}

/** One diagnostic from the NVRTC log. `column` is undefined when NVRTC printed none. */
export interface Diagnostic {
  /** The file NVRTC named: the program's name, or a header's. */
  file: string;
  /** The line, from 1. */
  line: number;
  /** The column, from 1, when NVRTC printed one. */
  column: number | undefined;
  /** How NVRTC classed it; 'error' and 'catastrophic error' fail the compile. */
  severity: 'error' | 'warning' | 'remark' | 'catastrophic error';
  /** The message text, without the location. */
  message: string;
}

export interface CompileErrorFields {
  code: string;
  api: string;
  result: number;
  log: string;
  options: readonly string[];
  diagnostics: readonly Diagnostic[];
  name: string;
  /** What cudakit adds to NVRTC's log (lines of text), e.g. where the toolkit's headers were looked for. */
  note?: string | undefined;
  /** The remedy, where cudakit knows a better one than fixing the reported lines. */
  remedy?: string | undefined;
}

const FIX_THE_LINES = 'fix the reported lines; error.diagnostics has them parsed, error.log has the full NVRTC output.';

/** NVRTC rejected the program (or an option). Carries the full log, the exact flags and parsed diagnostics. */
export class CompileError extends Error {
  /** 'NVRTC_ERROR_COMPILATION', 'NVRTC_ERROR_INVALID_OPTION', ... */
  readonly code: string;
  /** The same as `code`: NVRTC's names already follow the rule of docs/errors.md. */
  readonly codeNext: string;
  /** The NVRTC call that failed, e.g. 'nvrtcCompileProgram'. */
  readonly api: string;
  /** The nvrtcResult number. */
  readonly result: number;
  /** NVRTC's whole log. */
  readonly log: string;
  /** The exact flags given to NVRTC. */
  readonly options: readonly string[];
  /** The log's diagnostics, parsed (parseDiagnostics()). */
  readonly diagnostics: readonly Diagnostic[];
  /**
   * What cudakit adds to NVRTC's log, also in the message: for a missing #include of the program's own, every place
   * it was looked for (the in-memory headers, the include path, the program's folder); for one of the CUDA toolkit's
   * (cuda_fp16.h ...), where the toolkit's headers were looked for and why each place was passed over. Undefined
   * when there is nothing to add.
   */
  readonly note: string | undefined;
  /**
   * What to do about it, also the message's last line: for a missing #include, how to provide the header (or install
   * the CUDA toolkit's); otherwise to fix the reported lines.
   */
  readonly remedy: string;

  /** @internal Made by cudakit itself (the native layer's error factory), not by users. */
  constructor(f: CompileErrorFields) {
    const first = f.diagnostics.find((d) => d.severity === 'error' || d.severity === 'catastrophic error');
    const head = first
      ? `${first.file}:${first.line}${first.column !== undefined ? `:${first.column}` : ''}: ${first.message}`
      : (f.log.trim().split('\n')[0] ?? '');
    super(
      `${f.api} failed: ${f.code} (${f.result}) compiling ${f.name}: ${head}\n` +
        `  options: ${f.options.join(' ')}\n` +
        (f.log.trim() ? `  log:\n${f.log.trimEnd().replace(/^/gm, '    ')}\n` : '') +
        (f.note !== undefined ? `${f.note.replace(/^/gm, '  ')}\n` : '') +
        `  Remedy: ${f.remedy ?? FIX_THE_LINES}`,
    );
    this.name = 'CompileError';
    this.code = f.code;
    this.codeNext = nextCode(f.code);
    this.api = f.api;
    this.result = f.result;
    this.log = f.log;
    this.options = f.options;
    this.diagnostics = f.diagnostics;
    this.note = f.note;
    this.remedy = f.remedy ?? FIX_THE_LINES;
  }
}

/** Throws at once when an earlier sticky error has made the context unusable (cheap: one variable check). */
export function assertUsable(api: string): void {
  if (sticky !== undefined) {
    throw new CudaError({
      code: sticky.code,
      api,
      result: sticky.result,
      explanation: `not attempted: the CUDA context was lost when ${sticky.api} failed with ${sticky.code}`,
      remedy: 'Restart the process to use the GPU again (the CUDA context cannot be recovered in-process).',
    });
  }
}

/** The sticky error that made the context unusable, if any. */
export function contextLostBy():
  | {
      /** The sticky error's code, e.g. 'CUDA_ERROR_ILLEGAL_ADDRESS'. */
      code: string;
      /** The call that reported it, e.g. 'cuStreamSynchronize'. */
      api: string;
    }
  | undefined {
  return sticky === undefined ? undefined : { code: sticky.code, api: sticky.api };
}

/** How the addon has its errors built (native/errors.cc calls it; `extra` is the log or the places tried). */
export type ErrorFactory = (
  kind: 'cuda' | 'nvrtc' | 'loader',
  code: string,
  api: string,
  result: number,
  message: string,
  extra: unknown,
) => Error;

/**
 * Builds the error the addon raises (native/errors.cc): a loader failure or a driver call as a CudaError, an NVRTC
 * call as a CompileError. native.ts registers it as the addon's error factory.
 * @internal
 */
export const errorFromNative: ErrorFactory = (kind, code, api, result, message, extra) => {
  if (kind === 'loader') {
    return new CudaError({
      code,
      api,
      result: -1,
      explanation: message,
      tried: Array.isArray(extra) ? (extra as string[]) : undefined,
    });
  }
  if (kind === 'nvrtc') {
    return new CompileError({
      code,
      api,
      result,
      log: typeof extra === 'string' ? extra : '',
      options: [],
      diagnostics: [],
      name: 'program',
    });
  }
  return new CudaError({
    code,
    api,
    result,
    explanation: message || code,
    detail: typeof extra === 'string' && extra.trim() ? `  log:\n${extra.trimEnd().replace(/^/gm, '    ')}` : undefined,
  });
};
