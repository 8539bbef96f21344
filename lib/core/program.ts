// SPDX-License-Identifier: MIT
// Run-time compilation with NVRTC: typed options mapped to flags in one function, in-memory headers, name
// expressions for templates, a memory + disk cache, and CompileError with parsed diagnostics. The CUDA toolkit's
// headers (cuda_fp16.h ...) are found by toolkit.ts.
import { dirname, resolve as resolvePath } from 'node:path';
import {
  type CachedCompile,
  cacheKey,
  defaultCacheDir,
  diskGet,
  diskGetAsync,
  diskSet,
  memoryGet,
  memorySet,
} from './cache.js';
import { DEVICE_ATTRIBUTES, smArch } from './attributes.js';
import { CompileError, type Diagnostic } from './errors.js';
import { TENSOR_MAP_HEADER, TENSOR_MAP_HEADER_NAME } from './tensor-map-header.js';
import { getNative, type CompileOutput, type CompileSpec } from './native.js';
import {
  type ToolkitSearchEnv,
  cudaIncludeDirs,
  cudaIncludeSearch,
  isCudaHeader,
  nvrtcIdentity,
  toolkitSearchEnv,
} from './toolkit.js';
import {
  checkBoolean,
  checkObject,
  checkOptions,
  checkPositiveInt,
  checkString,
  rangeError,
  typeError,
} from './validate.js';

/**
 * What NVRTC produces: 'cubin', machine code for one architecture, or 'ptx', portable assembly the driver JIT-compiles
 * at load.
 */
export type CompileTarget = 'ptx' | 'cubin';
/** A C++ dialect NVRTC accepts (`--std`). */
export type CppStandard = 'c++03' | 'c++11' | 'c++14' | 'c++17' | 'c++20';

/**
 * A real architecture, which a CUBIN is compiled for and `device.arch` names: 'sm_90', or with a suffix, 'sm_90a'
 * (architecture-specific features) or 'sm_100f' (family-specific features, NVRTC 12.9 and later).
 */
export type SmArch = `sm_${number}` | `sm_${number}a` | `sm_${number}f`;
/** A virtual architecture, which PTX is compiled for: 'compute_90', 'compute_90a', 'compute_100f'. */
export type ComputeArch = `compute_${number}` | `compute_${number}a` | `compute_${number}f`;
/**
 * An architecture NVRTC's `--gpu-architecture` takes: a real one ('sm_90') or a virtual one ('compute_90'). A misspelt
 * name ('sm90', 90) does not type-check; one of the right shape that this NVRTC does not know is a RangeError.
 */
export type Arch = SmArch | ComputeArch;

/**
 * Options of `program.compile(options)` and `compileAsync(options)`: each field is one NVRTC flag (compileFlags() shows
 * them), undefined leaves the flag out.
 */
export interface CompileOptions {
  /** 'cubin' (default): machine code for one architecture; 'ptx': portable assembly the driver JIT-compiles. */
  target?: CompileTarget;
  /**
   * 'sm_90', 'sm_90a', 'compute_90' ... (`device.arch`, or one of supportedArchNames()).
   * Default: the current device's arch (without a device: NVRTC's default, PTX only).
   */
  arch?: Arch;
  /** C++ dialect, e.g. 'c++17'. Default: NVRTC's (c++17 for NVRTC 11+). */
  std?: CppStandard;
  /** Preprocessor macros: { N: 256, USE_FAST: true } or ['N=256', 'USE_FAST']. */
  defines?: Record<string, string | number | boolean> | readonly string[];
  /** Directories searched by #include "..." after the in-memory headers. */
  includePaths?: readonly string[];
  /** --use_fast_math: fast approximate math, flush denormals to zero. Default false. */
  fastMath?: boolean;
  /** --generate-line-info: source lines in profiles (ncu, compute-sanitizer). Default false. */
  lineInfo?: boolean;
  /** --device-debug: device debug information (-G); much slower code. Default false. */
  debug?: boolean;
  /** --maxrregcount: cap registers per thread. */
  maxRegisters?: number;
  /** Extra NVRTC flags, passed last and verbatim. */
  extraFlags?: readonly string[];
  /** Template instantiations to compile and name: ['scale<float>'] → objectCode.loweredNames['scale<float>']. */
  nameExpressions?: readonly string[];
  /** Compile cache: true (default: memory + disk), false, or { memory, disk, dir }. Also CUDAKIT_CACHE=0. */
  cache?:
    | boolean
    | {
        /** Keep compiled code in this process's memory. Default true. */
        memory?: boolean;
        /** Keep compiled code on disk, in `dir`. Default true. */
        disk?: boolean;
        /** The disk cache's folder. Default: defaultCacheDir() (CUDAKIT_CACHE_DIR, else ~/.cache/cudakit). */
        dir?: string;
      };
  /** Add the CUDA toolkit's include directory (cuda_fp16.h ...) when one matching NVRTC is found. Default true. */
  cudaIncludes?: boolean;
}

/** Options of `new Program(source, options)`: the name in diagnostics and in-memory headers. */
export interface ProgramOptions {
  /** File name used in diagnostics. Default 'program.cu'. */
  name?: string;
  /** Headers from memory: { 'common.h': '...' }, found by #include "common.h". */
  headers?: Readonly<Record<string, string>>;
}

/** @internal The keys of CompileOptions, as compile() accepts them (a job's compile options in eval/ too). */
export const COMPILE_OPTION_KEYS = [
  'target',
  'arch',
  'std',
  'defines',
  'includePaths',
  'fastMath',
  'lineInfo',
  'debug',
  'maxRegisters',
  'extraFlags',
  'nameExpressions',
  'cache',
  'cudaIncludes',
] as const satisfies readonly (keyof CompileOptions)[];

/** The result of a compile: PTX text bytes or a CUBIN, with the log (warnings) and lowered template names. */
export class ObjectCode {
  /** 'ptx' or 'cubin'. */
  readonly target: CompileTarget;
  /** The architecture compiled for, 'sm_90'; undefined when NVRTC chose (PTX without an arch). */
  readonly arch: Arch | undefined;
  /** The code: PTX text as bytes, or the CUBIN; `device.loadModule(objectCode)` loads it. */
  readonly bytes: Uint8Array;
  /** NVRTC's log, kept on success so warnings are visible. */
  readonly log: string;
  /** Name expression → mangled name, for module.getKernel('scale<float>'). */
  readonly loweredNames: Readonly<Record<string, string>>;
  /** The version of NVRTC that compiled it, e.g. '12.8'. */
  readonly nvrtcVersion: string;
  /** Where this came from when it was not compiled now. */
  readonly cached: 'memory' | 'disk' | undefined;
  /** The exact NVRTC flags this code was compiled with (when it came from the cache: those of its first compile). */
  readonly options: readonly string[];
  /** Milliseconds NVRTC took for this compile; undefined when it came from the cache. */
  readonly compileMs: number | undefined;

  /** @internal */
  constructor(entry: CachedCompile, cached: 'memory' | 'disk' | undefined, compileMs?: number) {
    this.options = Object.freeze([...entry.options]);
    this.compileMs = compileMs;
    this.target = entry.target;
    this.arch = entry.arch as Arch | undefined; // the arch of the key it was found under (a checked Arch)
    this.bytes = entry.bytes;
    this.log = withoutNul(entry.log);
    this.loweredNames = Object.freeze({ ...entry.loweredNames });
    this.nvrtcVersion = entry.nvrtcVersion;
    this.cached = cached;
  }

  /** The PTX as text (target 'ptx' only). */
  get ptx(): string {
    if (this.target !== 'ptx') throw new TypeError("objectCode.ptx needs target 'ptx'");
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength).toString('utf8');
  }
}

/** NVRTC's version as 'major.minor'. Throws CudaError NVRTC_NOT_FOUND when there is none. */
export function nvrtcVersion(): string {
  return nvrtcIdentity().version;
}

let supportedMemo: number[] | undefined;
/**
 * Architectures this NVRTC can target, as numbers: [50, 52, ..., 90] (90 for sm_90 and compute_90). To pass one to
 * compile(), take supportedArchNames(), or make the name: `sm_${n}`. Empty when NVRTC predates the query (11.1).
 */
export function supportedArchs(): number[] {
  supportedMemo ??= getNative().nvrtcGetSupportedArchs();
  return [...supportedMemo];
}

/**
 * Architectures this NVRTC can target, as compile() takes them: ['sm_50', 'sm_52', ..., 'sm_90'] (each also as
 * `compute_${n}` for PTX). The same list as supportedArchs(), which gives the numbers.
 * @example
 * const newest = supportedArchNames().at(-1)!;
 * new Program(source).compile({ arch: newest });
 */
export function supportedArchNames(): SmArch[] {
  return supportedArchs().map((n): SmArch => `sm_${n}`);
}

const ARCH_RE = /^(sm|compute)_(\d{2,3})([af]?)$/;

/** True for a string of an architecture's shape ('sm_90', 'sm_90a', 'compute_90'), as compile() checks it. */
export function isArch(value: unknown): value is Arch {
  return typeof value === 'string' && ARCH_RE.test(value);
}

/** NVRTC's log ends with the C string's NUL. */
const withoutNul = (log: string): string => log.replace(/\0+$/, '');

/**
 * A RangeError, before NVRTC runs, for an architecture this NVRTC does not know (NVRTC itself says only "invalid
 * value for --gpu-architecture"): the message lists those it supports.
 */
function checkSupportedArch(arch: string): void {
  const [, kind, num] = ARCH_RE.exec(arch)!;
  const supported = supportedArchs();
  if (supported.length === 0 || supported.includes(Number(num))) return;
  const list = supported.map((n) => `${kind}_${n}`).join(', ');
  throw rangeError('options.arch', `an architecture NVRTC ${nvrtcVersion()} supports (${list})`, arch);
}

interface Resolved {
  target: CompileTarget;
  arch: Arch | undefined;
  /**
   * For the cache key: the NVRTC flags but the toolkit's include directories (made here, once: the options object
   * may change while compileAsync waits), and what the toolkit search reads from the environment in their place
   * (null with cudaIncludes false). A cache hit then needs no search.
   */
  keyFlags: string[];
  toolkit: ToolkitSearchEnv | null;
  /** Where in keyFlags the toolkit's include directories go. */
  toolkitAt: number;
  /** The whole list of NVRTC flags, made by flagsOf when a compile needs them. */
  flags: string[] | undefined;
  nameExpressions: string[];
  cache: { memory: boolean; disk: boolean; dir: string };
  /** Whether the CUDA toolkit's include directories were searched for (options.cudaIncludes). */
  cudaIncludes: boolean;
}

/**
 * Maps typed options to NVRTC flags: the one place where flags are made. `arch` here is already resolved.
 * Exported for tests and for tools that show the exact command line.
 */
export function compileFlags(
  options: CompileOptions,
  arch: string | undefined,
  cudaIncludeDirs: readonly string[] = [],
): string[] {
  const { flags, toolkitAt } = flagsAround(options, arch);
  return withToolkit(flags, toolkitAt, cudaIncludeDirs);
}

/** The flags of `options` but the toolkit's include directories, and where those go (after the includePaths). */
function flagsAround(options: CompileOptions, arch: string | undefined): { flags: string[]; toolkitAt: number } {
  const flags: string[] = [];
  if (arch !== undefined) flags.push(`--gpu-architecture=${arch}`);
  if (options.std !== undefined) flags.push(`--std=${options.std}`);
  const defines = options.defines;
  if (Array.isArray(defines)) {
    for (const d of defines as readonly string[]) flags.push(`-D${d}`);
  } else if (defines !== undefined) {
    for (const [k, v] of Object.entries(defines)) {
      if (v === false) continue;
      flags.push(v === true ? `-D${k}` : `-D${k}=${String(v)}`);
    }
  }
  for (const p of options.includePaths ?? []) flags.push(`--include-path=${p}`);
  const toolkitAt = flags.length;
  if (options.fastMath === true) flags.push('--use_fast_math');
  if (options.lineInfo === true) flags.push('--generate-line-info');
  if (options.debug === true) flags.push('--device-debug');
  if (options.maxRegisters !== undefined) flags.push(`--maxrregcount=${options.maxRegisters}`);
  flags.push(...(options.extraFlags ?? []));
  return { flags, toolkitAt };
}

/** `flags` (from flagsAround) with the toolkit's include directories in their place. */
function withToolkit(flags: readonly string[], toolkitAt: number, cudaIncludeDirs: readonly string[]): string[] {
  return [
    ...flags.slice(0, toolkitAt),
    ...cudaIncludeDirs.map((dir) => `--include-path=${dir}`),
    ...flags.slice(toolkitAt),
  ];
}

function checkCompileOptions(options: CompileOptions | undefined): CompileOptions {
  const o = checkOptions('options', options, COMPILE_OPTION_KEYS) as CompileOptions;
  if (o.target !== undefined && o.target !== 'ptx' && o.target !== 'cubin') {
    throw typeError('options.target', "'cubin' or 'ptx'", o.target);
  }
  if (o.arch !== undefined && !isArch(o.arch)) {
    throw typeError('options.arch', "an architecture such as 'sm_90' or 'compute_90'", o.arch);
  }
  if (o.std !== undefined && !['c++03', 'c++11', 'c++14', 'c++17', 'c++20'].includes(o.std)) {
    throw typeError('options.std', "'c++11', 'c++14', 'c++17' or 'c++20'", o.std);
  }
  if (o.defines !== undefined) {
    if (Array.isArray(o.defines)) {
      for (const d of o.defines as unknown[]) {
        if (typeof d !== 'string' || !/^[A-Za-z_]\w*(=.*)?$/s.test(d))
          throw typeError('options.defines[]', "'NAME' or 'NAME=value'", d);
      }
    } else {
      for (const [k, v] of Object.entries(checkObject('options.defines', o.defines))) {
        if (!/^[A-Za-z_]\w*$/.test(k)) throw typeError('options.defines key', 'a macro name', k);
        if (!['string', 'number', 'boolean'].includes(typeof v))
          throw typeError(`options.defines.${k}`, 'a string, number or boolean', v);
      }
    }
  }
  for (const [key, list] of [
    ['includePaths', o.includePaths],
    ['extraFlags', o.extraFlags],
    ['nameExpressions', o.nameExpressions],
  ] as const) {
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw typeError(`options.${key}`, 'an array of strings', list);
    for (const s of list as unknown[]) checkString(`options.${key}[]`, s);
  }
  // NVRTC writes each name expression as a line of a source of its own: a line break would start a directive there
  // (an #include of any file). A macro is one line too.
  for (const e of o.nameExpressions ?? []) {
    if (CONTROL.test(e)) throw rangeError('options.nameExpressions[]', 'a name expression on one line', e);
  }
  const macros = Array.isArray(o.defines) ? (o.defines as string[]) : Object.values(o.defines ?? {}).map(String);
  for (const d of macros) {
    if (CONTROL.test(d)) throw rangeError('options.defines', 'a macro on one line', d);
  }
  for (const key of ['fastMath', 'lineInfo', 'debug', 'cudaIncludes'] as const) {
    if (o[key] !== undefined) checkBoolean(`options.${key}`, o[key]);
  }
  if (o.maxRegisters !== undefined) checkPositiveInt('options.maxRegisters', o.maxRegisters, 255);
  if (o.cache !== undefined && typeof o.cache !== 'boolean')
    checkOptions('options.cache', o.cache, ['memory', 'disk', 'dir'] as const);
  return o;
}

/** A line break or another control character. */
const CONTROL = /\p{Cc}/u;

let deviceArchMemo: SmArch | null | undefined;
/**
 * The first device's arch (what Device.get(0).arch says, read from the driver here: Device stands above this file),
 * or undefined without a usable driver/device (never throws).
 */
function deviceArch(): SmArch | undefined {
  if (deviceArchMemo === undefined) {
    try {
      const n = getNative();
      if (n.driverStatus().loaded && n.deviceGetCount() > 0) {
        const d = n.deviceGet(0);
        const { COMPUTE_CAPABILITY_MAJOR: major, COMPUTE_CAPABILITY_MINOR: minor } = DEVICE_ATTRIBUTES;
        deviceArchMemo = smArch(n.deviceGetAttribute(d, major), n.deviceGetAttribute(d, minor));
      } else {
        deviceArchMemo = null;
      }
    } catch {
      deviceArchMemo = null;
    }
  }
  return deviceArchMemo ?? undefined;
}

function resolve(options: CompileOptions | undefined): Resolved {
  const o = checkCompileOptions(options);
  const target = o.target ?? 'cubin';
  let arch = o.arch;
  if (arch !== undefined) checkSupportedArch(arch);
  else {
    arch = deviceArch();
    if (arch !== undefined) {
      const supported = supportedArchs();
      const num = Number(ARCH_RE.exec(arch)?.[2]);
      const max = Math.max(...supported);
      if (supported.length > 0 && !supported.includes(num)) {
        if (target === 'cubin') {
          throw new RangeError(
            `NVRTC ${nvrtcVersion()} cannot compile for this device's ${arch} (it supports up to sm_${max}). ` +
              `Remedy: use a newer NVRTC (CUDAKIT_NVRTC_PATH), or compile { target: 'ptx', arch: 'compute_${max}' } ` +
              'and let the driver JIT it.',
          );
        }
        arch = `compute_${max}`;
      }
    } else if (target === 'cubin') {
      throw new RangeError(
        "target 'cubin' needs an architecture and no CUDA device was found to take it from. " +
          "Remedy: pass { arch: 'sm_90' } (or the device you will run on), or use { target: 'ptx' }.",
      );
    }
  }
  if (target === 'cubin' && arch?.startsWith('compute_')) {
    throw rangeError('options.arch', "a real architecture ('sm_XX') for target 'cubin'", arch);
  }
  const cudaIncludes = o.cudaIncludes !== false;
  const { flags, toolkitAt } = flagsAround(o, arch);
  const envOff = process.env.CUDAKIT_CACHE === '0';
  const c = o.cache;
  const disk = !envOff && c !== false && (typeof c !== 'object' || c.disk !== false);
  const cache = {
    memory: !envOff && c !== false && (typeof c !== 'object' || c.memory !== false),
    disk,
    dir: (typeof c === 'object' && c.dir) || (disk ? defaultCacheDir() : ''), // (its home lookup only when needed)
  };
  return {
    target,
    arch,
    keyFlags: flags,
    toolkit: cudaIncludes ? toolkitSearchEnv() : null,
    toolkitAt,
    flags: undefined,
    nameExpressions: [...(o.nameExpressions ?? [])],
    cache,
    cudaIncludes,
  };
}

/** The NVRTC flags of a compile under `r`: the toolkit's include directories are searched for here (once a process). */
function flagsOf(r: Resolved): string[] {
  return (r.flags ??= withToolkit(r.keyFlags, r.toolkitAt, r.cudaIncludes ? cudaIncludeDirs() : []));
}

const DIAG_RE = /^(.*?)\((\d+)\): (catastrophic error|error|warning|remark)(?: #[\w-]+)?: (.*)$/;

/** Parses NVRTC's log into diagnostics; the column comes from the caret line NVRTC 12+ prints under the source. */
export function parseDiagnostics(log: string, source?: string): Diagnostic[] {
  const lines = log.split('\n');
  const sourceLines = source?.split('\n');
  const out: Diagnostic[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = DIAG_RE.exec(lines[i]!);
    if (!m) continue;
    const line = Number(m[2]);
    let column: number | undefined;
    const echoed = lines[i + 1];
    const caret = lines[i + 2];
    if (echoed !== undefined && caret !== undefined && /^\s*\^\s*$/.test(caret)) {
      const text = sourceLines?.[line - 1];
      const caretAt = caret.indexOf('^');
      if (text !== undefined && text.length > 0 && echoed.endsWith(text)) {
        column = caretAt - (echoed.length - text.length) + 1;
      } else {
        // NVRTC echoes the line with its own indentation: map the caret back to the source's
        const lead = echoed.length - echoed.trimStart().length;
        const sourceLead = text === undefined ? 0 : text.length - text.trimStart().length;
        column = caretAt - lead + sourceLead + 1;
      }
      if (column < 1) column = undefined;
    }
    out.push({ file: m[1]!, line, column, severity: m[3] as Diagnostic['severity'], message: m[4]! });
  }
  return out;
}

/** NVRTC's words for a missing #include (11.x says 'could not', 12.x 'cannot'), with the name it was given. */
const MISSING_INCLUDE = /^(?:cannot|could not) open source file "(.*)"/;

/** The include path in NVRTC's flags, in order: --include-path=dir (as flagsOf makes it), -Idir, -I dir. */
function includePathOf(flags: readonly string[]): string[] {
  const dirs: string[] = [];
  for (let i = 0; i < flags.length; i++) {
    const f = flags[i]!;
    const joined = /^(?:--include-path=|-I)(.+)$/.exec(f);
    if (joined !== null) dirs.push(joined[1]!);
    else if ((f === '-I' || f === '--include-path') && i + 1 < flags.length) dirs.push(flags[++i]!);
  }
  return dirs;
}

/** The README's section with the lines that install NVRTC and CUDA's headers. */
const README_HEADERS = 'the README\'s "NVRTC and CUDA headers"';

/**
 * How to get the CUDA toolkit's headers of NVRTC's major version, as the README says: Debian's package for its NVRTC
 * 11.8, else a toolkit CUDA_PATH points at.
 */
function cudaHeadersRemedy(major: string): string {
  const toolkit = `point CUDA_PATH at a CUDA ${major}.x toolkit (NVRTC's major version)`;
  return major === '11'
    ? `with Debian's NVRTC 11.8, sudo apt-get install nvidia-cuda-dev (the CUDA 11.8 headers, in /usr/include); ` +
        `else ${toolkit}; see ${README_HEADERS}`
    : `install a CUDA ${major}.x toolkit and ${toolkit}; see ${README_HEADERS}`;
}

/**
 * For missing #includes (`names`, as the source names them): for one of the program's own headers, every place it
 * was looked for (the in-memory headers, the include path, the program's folder) and how to provide it; for one of
 * the CUDA toolkit's (cuda_fp16.h ...), where the toolkit was looked for, why each place was passed over, and how to
 * install it.
 */
function missingIncludeNote(
  names: readonly string[],
  program: Program,
  flags: readonly string[],
  searched: boolean,
): { note: string; remedy: string } {
  const notes: string[] = [];
  const remedies: string[] = [];
  const own = names.filter((n) => !isCudaHeader(n));
  const cuda = names.filter((n) => isCudaHeader(n));
  if (own.length > 0) {
    const headers = Object.keys(program.headers);
    const path = includePathOf(flags);
    const folder = flags.some((f) => /^-?-no-source-include$/.test(f))
      ? 'not searched (--no-source-include)'
      : `${resolvePath(dirname(program.name))} (the folder of its name, '${program.name}')`;
    notes.push(
      [
        `${own.map((n) => `"${n}"`).join(', ')} ${own.length === 1 ? 'was' : 'were'} looked for in:`,
        `  the in-memory headers (the headers option): ${headers.length > 0 ? headers.join(', ') : 'none'}`,
        `  the include path (includePaths, in order): ${path.length > 0 ? path.join(', ') : 'none'}`,
        `  the program's folder: ${folder}`,
      ].join('\n'),
    );
    remedies.push(
      `give ${own.length === 1 ? 'the header' : 'each header'} from memory ` +
        `(new Program(source, { headers: { '${own[0]}': text } })), ` +
        `or add the folder that holds it to includePaths`,
    );
  }
  if (cuda.length > 0) {
    const major = nvrtcVersion().split('.')[0]!;
    const which = cuda.join(', ');
    if (!searched) {
      notes.push('CUDA toolkit headers: not searched for (options.cudaIncludes is false)');
      remedies.push(
        `${which} is the CUDA toolkit's: leave cudaIncludes on, or add the include folder of a CUDA ${major}.x ` +
          'toolkit to includePaths',
      );
    } else {
      const s = cudaIncludeSearch();
      const found = s.dir !== undefined ? `${s.dir} is on the include path` : 'none found';
      const head = `CUDA toolkit headers for NVRTC ${s.nvrtc}: ${found}; looked at:`;
      notes.push([head, ...s.tried.map((t) => `  ${t}`)].join('\n'));
      remedies.push(`${which} is the CUDA toolkit's: ${cudaHeadersRemedy(major)}`);
    }
  }
  return { note: notes.join('\n'), remedy: `${remedies.join('; ')}.` };
}

/** Option sets a Program remembers cache keys for (a program compiled for more starts over). */
const MAX_KEYS = 16;

/** CUDA C++ source to compile at run time. */
export class Program {
  /** The CUDA C++ source. */
  readonly source: string;
  /** The file name in diagnostics (ProgramOptions.name, default 'program.cu'). */
  readonly name: string;
  /** In-memory headers, by the name #include uses. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Cache keys by the resolved options they were made for, with the source, name and headers they hashed: a cache
   * hit then hashes nothing (hashing the source was most of a memory hit's time). At most MAX_KEYS option sets.
   */
  readonly #keys = new Map<string, { key: string; source: string; name: string; headers: object }>();

  constructor(source: string, options?: ProgramOptions) {
    checkString('source', source);
    const o = checkOptions('options', options, ['name', 'headers'] as const);
    this.source = source;
    this.name = o.name === undefined ? 'program.cu' : checkString('options.name', o.name);
    const headers: Record<string, string> = {};
    if (o.headers !== undefined) {
      for (const [k, v] of Object.entries(checkObject('options.headers', o.headers)))
        headers[k] = checkString(`options.headers['${k}']`, v);
    }
    // cudakit's own header, for a source that names it and gives no header of that name.
    if (headers[TENSOR_MAP_HEADER_NAME] === undefined && source.includes(TENSOR_MAP_HEADER_NAME)) {
      headers[TENSOR_MAP_HEADER_NAME] = TENSOR_MAP_HEADER;
    }
    this.headers = Object.freeze(headers);
  }

  /** Compiles (or takes from the cache) and returns the object code. Throws CompileError on errors. */
  compile(options?: CompileOptions): ObjectCode {
    const r = resolve(options);
    const key = this.keyFor(r);
    const hit = this.lookup(r, key);
    if (hit !== undefined) return hit;
    const spec = this.spec(r, flagsOf(r));
    return this.finish(r, key, spec, getNative().compileProgram(spec));
  }

  /** Same as compile(), with NVRTC running on a libuv pool thread: the event loop stays free. */
  async compileAsync(options?: CompileOptions): Promise<ObjectCode> {
    const r = resolve(options);
    const key = this.keyFor(r);
    const inMemory = r.cache.memory ? memoryGet(key) : undefined;
    if (inMemory !== undefined) return new ObjectCode(inMemory, 'memory');
    if (r.cache.disk) {
      const onDisk = await diskGetAsync(r.cache.dir, key);
      if (onDisk !== undefined) {
        if (r.cache.memory) memorySet(key, onDisk);
        return new ObjectCode(onDisk, 'disk');
      }
    }
    const spec = this.spec(r, flagsOf(r));
    return this.finish(r, key, spec, await getNative().compileProgramAsync(spec));
  }

  private spec(r: Resolved, options: string[]): CompileSpec {
    const headerNames = Object.keys(this.headers).sort();
    return {
      source: this.source,
      name: this.name,
      target: r.target,
      headerNames,
      headerSources: headerNames.map((h) => this.headers[h]!),
      options,
      nameExpressions: r.nameExpressions,
    };
  }

  /** The cache key of this program under `r`; '' when nothing is cached. Throws NVRTC_NOT_FOUND without NVRTC. */
  private keyFor(r: Resolved): string {
    const { version, path } = nvrtcIdentity();
    // No key when nothing is cached: hashing the source is the only work of a cache miss besides NVRTC.
    if (!r.cache.memory && !r.cache.disk) return '';
    const options = JSON.stringify([r.target, r.arch, r.keyFlags, r.toolkit, r.nameExpressions]);
    const known = this.#keys.get(options);
    // The properties are readonly to TypeScript only: a key made for another source is not reused.
    if (known?.source === this.source && known.name === this.name && known.headers === this.headers) return known.key;
    const key = cacheKey([this.spec(r, r.keyFlags), r.toolkit, r.arch, version, path]);
    if (this.#keys.size >= MAX_KEYS) this.#keys.clear();
    this.#keys.set(options, { key, source: this.source, name: this.name, headers: this.headers });
    return key;
  }

  private lookup(r: Resolved, key: string): ObjectCode | undefined {
    const inMemory = r.cache.memory ? memoryGet(key) : undefined;
    if (inMemory !== undefined) return new ObjectCode(inMemory, 'memory');
    if (!r.cache.disk) return undefined;
    const onDisk = diskGet(r.cache.dir, key);
    if (onDisk === undefined) return undefined;
    if (r.cache.memory) memorySet(key, onDisk);
    return new ObjectCode(onDisk, 'disk');
  }

  private finish(r: Resolved, key: string, spec: CompileSpec, out: CompileOutput): ObjectCode {
    if (out.result !== 0 || out.code === undefined) {
      const log = withoutNul(out.log);
      const diagnostics = parseDiagnostics(log, this.source);
      const missing = [
        ...new Set(diagnostics.flatMap((d) => MISSING_INCLUDE.exec(d.message)?.slice(1, 2) ?? [])),
      ] as string[];
      throw new CompileError({
        code: out.resultName || `NVRTC_ERROR_${out.result}`,
        api: out.failedCall || 'nvrtcCompileProgram',
        result: out.result,
        log,
        options: spec.options,
        diagnostics,
        name: this.name,
        ...(missing.length > 0 ? missingIncludeNote(missing, this, spec.options, r.cudaIncludes) : {}),
      });
    }
    const loweredNames: Record<string, string> = {};
    spec.nameExpressions.forEach((e, i) => {
      const lowered = out.loweredNames?.[i];
      if (lowered) loweredNames[e] = lowered;
    });
    const entry: CachedCompile = {
      target: r.target,
      arch: r.arch,
      bytes: new Uint8Array(out.code.buffer, out.code.byteOffset, out.code.byteLength),
      log: out.log,
      loweredNames,
      nvrtcVersion: nvrtcVersion(),
      options: spec.options,
    };
    if (r.cache.memory) memorySet(key, entry);
    if (r.cache.disk) diskSet(r.cache.dir, key, entry);
    return new ObjectCode(entry, undefined, out.elapsedMs);
  }
}
