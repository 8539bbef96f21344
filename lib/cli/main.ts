#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// The `cudakit` command line: `info`, `compile` and `bench`. main() returns the exit code and never exits the
// process, so tests run it in-process with their own stdout and stderr.
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, extname, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type ArgSpec, parseArgSpecs, signatureOf } from '../measure/argspec.js';
import { type BenchMode, type BenchResult, type CompareResult, type PresetName, bench, compare } from '../measure/bench.js';
import { type CheckOptions, type CheckResult, type HostValue, type Reference, check, inputSets } from '../measure/check.js';
import { isContextLost } from '../core/errors.js';
import { formatComparison, formatJson, formatResult, progressLine } from '../measure/format.js';
import {
  type CompileOptions, type CppStandard, type Diagnostic, type Dim3, type Kernel, type LaunchConfig, type Module,
  type ObjectCode, type ParamType, type Signature, CompileError, Device, Program, parseDiagnostics, probe,
} from '../index.js';

const OK = 0;
const CHECK_FAILED = 1;
const USAGE = 2;

/** Where main() writes. Defaults to the process's streams. */
export interface CliIO {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Whether stdout / stderr are terminals: colours need stdout, the progress line stderr. A boolean sets both. */
  isTTY?: boolean | { stdout: boolean; stderr: boolean };
}

/** A kernel in another source, for `reference` and `compare` in a bench spec. */
export interface KernelRef {
  /** CUDA source text, or { file } relative to the spec file. */
  source: string | { file: string };
  kernel: string;
  /** Label in reports. Default: the kernel's name. */
  name?: string;
}

/**
 * What `cudakit bench spec.ts` reads: the module's default export. Command-line options override its fields.
 *
 * @example export default { source: { file: 'saxpy.cu' }, kernel: 'saxpy', grid: 65536, block: 256,
 *   args: ['f32=2', 'ptr:f32[16M]=uniform(-1,1)', 'ptr:f32[16M]=zeros:out', 'i32=16777216'] } satisfies BenchSpec;
 */
export interface BenchSpec {
  /** Label in reports. Default: the kernel's name. */
  name?: string;
  /** CUDA source text, or { file } relative to the spec file. */
  source: string | { file: string };
  /** extern "C" name, or a C++ kernel / template instance such as 'scale<float>'. */
  kernel: string;
  /** Parameter types. Default: from args (scalars by their type, buffers 'ptr'). */
  signature?: Signature;
  grid: Dim3;
  block: Dim3;
  sharedMemBytes?: number;
  /** One argument spec per kernel parameter, as `--arg` takes them: 'f32=2.5', 'ptr:f32[1M]=uniform(-1,1)'. */
  args: readonly string[];
  /**
   * The correctness reference: a kernel launched like this one, or a function given host copies of the arguments
   * (typed arrays for buffers, numbers for scalars) that writes the expected outputs into them in place.
   */
  reference?: KernelRef | ((args: HostValue[]) => void | Promise<void>);
  /** A kernel to time this one against: it is A (the baseline), this spec's kernel B. Also the check's reference. */
  compare?: KernelRef;
  mode?: BenchMode;
  preset?: PresetName;
  /** Bytes moved per launch (GB/s, % of peak bandwidth). */
  bytes?: number;
  /** Floating-point operations per launch (TFLOP/s). */
  flops?: number;
  /** Compile options for every kernel of the spec; -D / -I / --arch / --std on the command line add to them. */
  compile?: CompileOptions;
  /** Correctness check settings (tolerances, trials, seed). */
  check?: CheckOptions;
}

const USAGE_TEXT = `Usage: cudakit <command> [options]

Commands
  info                        CUDA devices, driver and NVRTC versions (or why no GPU is usable)
  compile <file.cu>           compile with NVRTC; per kernel: registers, spills, shared/const memory, occupancy
  bench <file.cu | spec.ts>   check a kernel against a reference, then time it (or compare it with another)
  help                        this text

compile options
  --arch <sm_XX>              target architecture (default: the GPU's; needed without a GPU unless --ptx)
  --ptx                       emit PTX instead of CUBIN
  -D, --define <NAME[=VALUE]> preprocessor macro (repeatable)
  -I, --include <dir>         #include directory (repeatable); the source's own directory is searched first
  --std <c++17>               C++ dialect: c++03, c++11, c++14, c++17, c++20
  --name-expression <expr>    C++ kernel or template instance to compile and name, e.g. 'scale<float>' (repeatable)
  --fast-math, --line-info    --use_fast_math, --generate-line-info
  --no-cache                  compile afresh, bypassing the compile cache
  --out <file>                write the PTX / CUBIN to a file

bench options (and compile's --arch, --ptx, -D, -I, --std, --fast-math, --no-cache)
  --kernel <name>             the kernel: an extern "C" name, or a C++ name / template instance
  --grid <x[,y[,z]]>          blocks per grid, e.g. 65536 or 64,64 (also 64x64)
  --block <x[,y[,z]]>         threads per block, e.g. 256
  --arg <spec>                one per kernel parameter, in order (repeatable):
                                scalars  f32=2.5  i32=1024  u64=0xff  bool=true
                                buffers  ptr:f32[16M]=uniform(-1,1)   filled before every run (an input)
                                         ptr:f32[1024,1024]=normal(0,1)  with a shape (row-major)
                                         ptr:f32[16M]:out             written by the kernel (an output)
                                         ptr:f32[16M]=zeros:out       both
                                fills    uniform(lo,hi) normal(mean,std) randint(lo,hi) const(v) zeros ones
                                         arange seq(start,step)
  --shared-mem <bytes>        dynamic shared memory per block
  --ref <file.cu>             reference kernel for the correctness check (--ref-kernel <name>; default: --kernel;
                              --ref-grid / --ref-block: its own launch geometry; default: --grid / --block)
  --compare <file.cu>         time against this file's kernel: it is A, <file> is B; also the check's reference
                              (--compare-kernel <name>, --compare-grid, --compare-block; default: the main ones)
  --mode <cold|hot|graph>     L2 flushed before each sample (cold, default), not flushed (hot), CUDA graph replays
  --preset <quick|default|rigorous>   how long to sample (precision target and timeout)
  --bytes <N>, --flops <N>    work per launch, for GB/s, % of peak bandwidth and TFLOP/s (N may be a product: 12*1M)
  --json <file | ->           write the result as JSON; '-' prints it to stdout instead of the text
  --atol, --rtol, --trials, --seed   correctness check tolerances, trials and input seed
  --require-determinism       fail the check when two runs on the same inputs differ at all (default: fail only
                              beyond the tolerance; differences within it, e.g. float atomics, are reported)
  --no-check                  skip the correctness check

A spec file's default export describes the whole benchmark (see examples/saxpy.bench.ts); options given on the
command line override its fields.

Exit status: 0 ok, 1 correctness check failed, 2 usage, compile or CUDA error (no usable GPU included).

Examples
  cudakit info
  cudakit compile saxpy.cu --arch sm_90 -D BLOCK=256
  cudakit compile kernels.cu --ptx --arch sm_80 --name-expression 'scale<float>' --out kernels.ptx
  cudakit bench saxpy.cu --kernel saxpy --grid 65536 --block 256 --arg f32=2.5 \\
      --arg 'ptr:f32[16M]=uniform(-1,1)' --arg 'ptr:f32[16M]=uniform(-1,1):out' --arg i32=16777216 --bytes 12*16M
  cudakit bench saxpy_v2.cu --compare saxpy.cu --kernel saxpy --grid 65536 --block 256 --arg ... --json ab.json
  cudakit bench examples/saxpy.bench.ts --mode hot --preset quick
`;

/** A bad command line or input: printed as one line, exit code 2. */
class UsageError extends Error {}

/** A failed NVRTC compile, with what is needed to show the source lines. */
class CompileFailure extends Error {
  constructor(readonly error: CompileError, readonly source: SourceRef, readonly includeDirs: readonly string[]) {
    super(error.message);
  }
}

/** stdout / stderr with the TTY-dependent parts: colours and the progress line. */
class Output {
  readonly color: boolean;
  readonly errColor: boolean;
  readonly progress: boolean;
  #io: CliIO;
  #progressWidth = 0;

  constructor(io: CliIO) {
    this.#io = io;
    const tty = typeof io.isTTY === 'object' ? io.isTTY : { stdout: io.isTTY === true, stderr: io.isTTY === true };
    const noColor = (process.env.NO_COLOR ?? '') !== '';
    this.color = tty.stdout && !noColor;
    this.errColor = tty.stderr && !noColor;
    this.progress = tty.stderr;
  }

  out(text: string): void {
    this.#io.stdout.write(text);
  }

  err(text: string): void {
    this.clearProgress();
    this.#io.stderr.write(text);
  }

  /** Rewrites the progress line in place (stderr terminals only). */
  showProgress(line: string): void {
    if (!this.progress) return;
    const pad = ' '.repeat(Math.max(0, this.#progressWidth - line.length));
    this.#io.stderr.write(`\r${line}${pad}`);
    this.#progressWidth = line.length;
  }

  clearProgress(): void {
    if (this.#progressWidth === 0) return;
    this.#io.stderr.write(`\r${' '.repeat(this.#progressWidth)}\r`);
    this.#progressWidth = 0;
  }
}

const paint = (on: boolean, code: string, text: string): string => (on ? `\x1b[${code}m${text}\x1b[0m` : text);

// ---------------------------------------------------------------------------------------------------------------
// Argument parsing helpers

type OptionConfig = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;

const COMPILE_FLAGS = {
  arch: { type: 'string' },
  ptx: { type: 'boolean' },
  define: { type: 'string', short: 'D', multiple: true },
  include: { type: 'string', short: 'I', multiple: true },
  std: { type: 'string' },
  'name-expression': { type: 'string', multiple: true },
  'fast-math': { type: 'boolean' },
  'line-info': { type: 'boolean' },
  'no-cache': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies OptionConfig;

const BENCH_FLAGS = {
  ...COMPILE_FLAGS,
  kernel: { type: 'string' },
  grid: { type: 'string' },
  block: { type: 'string' },
  arg: { type: 'string', multiple: true },
  'shared-mem': { type: 'string' },
  ref: { type: 'string' },
  'ref-kernel': { type: 'string' },
  'ref-grid': { type: 'string' },
  'ref-block': { type: 'string' },
  compare: { type: 'string' },
  'compare-kernel': { type: 'string' },
  'compare-grid': { type: 'string' },
  'compare-block': { type: 'string' },
  mode: { type: 'string' },
  preset: { type: 'string' },
  bytes: { type: 'string' },
  flops: { type: 'string' },
  json: { type: 'string' },
  atol: { type: 'string' },
  rtol: { type: 'string' },
  trials: { type: 'string' },
  seed: { type: 'string' },
  'require-determinism': { type: 'boolean' },
  'no-check': { type: 'boolean' },
} as const satisfies OptionConfig;

/** node:util parseArgs with its errors turned into one-line usage errors. */
function parseCommand<T extends OptionConfig>(command: string, args: string[], options: T) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    const code = (e as { code?: string }).code ?? '';
    if (!code.startsWith('ERR_PARSE_ARGS')) throw e;
    // Node's own text goes on about '--' and positionals; its first sentence is the useful part.
    const message = (e as Error).message;
    const first = message.split(/\.\s/)[0]!.replace(/\.$/, '');
    const option = /^Option '(-[^' ]+)/.exec(message)?.[1];
    if (message.includes('ambiguous') && option !== undefined) {
      throw new UsageError(`${command}: ${first}: a value starting with '-' is written ${option}=<value>`);
    }
    throw new UsageError(`${command}: ${first} (see cudakit --help)`);
  }
}

/** `1024`, `64,64`, `64x64x2`: a grid or block size. */
export function parseDim(text: string, option: string): Dim3 {
  const parts = text.trim().replace(/^\[|\]$/g, '').split(/\s*[x,]\s*/);
  const dims = parts.map((p) => (/^\d+$/.test(p) ? Number(p) : Number.NaN));
  if (dims.length > 3 || dims.some((d) => !Number.isSafeInteger(d) || d < 1)) {
    throw new UsageError(`${option} expects 1 to 3 positive integers such as 256, 64,64 or 16x16x4, not '${text}'`);
  }
  return dims.length === 1 ? dims[0]! : (dims as [number, number] | [number, number, number]);
}

/** A positive number, or a product of them: `1e9`, `12*16M` (k and M are 1024-based, G too). */
function parseAmount(text: string, option: string): number {
  const scale: Record<string, number> = { '': 1, k: 1024, K: 1024, M: 1024 ** 2, G: 1024 ** 3 };
  let value = 1;
  for (const factor of text.split('*')) {
    const m = /^\s*([0-9.eE+-]+)([kKMG]?)\s*$/.exec(factor);
    const x = m === null ? Number.NaN : Number(m[1]) * (scale[m[2] ?? ''] ?? 1);
    if (!(x > 0) || !Number.isFinite(x)) {
      throw new UsageError(`${option} expects a positive number such as 1e9 or 12*16M, not '${text}'`);
    }
    value *= x;
  }
  return value;
}

function parseCount(text: string, option: string, min: number): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`${option} expects an integer >= ${min}, not '${text}'`);
  }
  return n;
}

function parseTolerance(text: string, option: string): number {
  const x = Number(text);
  if (text.trim() === '' || !Number.isFinite(x) || x < 0) {
    throw new UsageError(`${option} expects a number >= 0, not '${text}'`);
  }
  return x;
}

function oneOf<T extends string>(text: string | undefined, option: string, allowed: readonly T[]): T | undefined {
  if (text === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(text)) {
    throw new UsageError(`${option} expects ${allowed.join(', ')}, not '${text}'`);
  }
  return text as T;
}

/** Options without their undefined fields (exactOptionalPropertyTypes: absent and undefined differ). */
type Defined<T> = { [K in keyof T]?: Exclude<T[K], undefined> };
function defined<T extends object>(o: T): Defined<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Defined<T>;
}

// ---------------------------------------------------------------------------------------------------------------
// Sources and compiling

interface SourceRef {
  text: string;
  /** The name diagnostics use: the path as given, or a label for inline source. */
  name: string;
  /** Directory searched first for #include "...": the source's own. */
  dir: string;
}

function readSource(path: string): SourceRef {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${path}: ${systemMessage(e)}`);
  }
  return { text, name: path, dir: dirname(resolve(path)) };
}

/** Kernel names declared `extern "C" __global__ void NAME(` (with __launch_bounds__ and the like allowed). */
export function externCKernels(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, '');
  // extern "C", then words (__global__, __launch_bounds__(...) ...), void, maybe __launch_bounds__(...), the name.
  const qualifiers = String.raw`((?:\w+(?:\s*\([^()]*\))?\s+)*?)`;
  const bounds = String.raw`(?:__launch_bounds__\s*\([^()]*\)\s*)?`;
  const re = new RegExp(String.raw`\bextern\s+"C"\s+${qualifiers}void\s+${bounds}([A-Za-z_]\w*)\s*\(`, 'g');
  const names: string[] = [];
  for (const m of code.matchAll(re)) {
    if (/\b__global__\b/.test(m[1] ?? '') && !names.includes(m[2]!)) names.push(m[2]!);
  }
  return names;
}

const ARCH_RE = /^(sm|compute)_\d{2,3}[af]?$/;
const STDS: readonly CppStandard[] = ['c++03', 'c++11', 'c++14', 'c++17', 'c++20'];

interface CompileFlagValues {
  arch?: string | undefined;
  ptx?: boolean | undefined;
  define?: string[] | undefined;
  include?: string[] | undefined;
  std?: string | undefined;
  'name-expression'?: string[] | undefined;
  'fast-math'?: boolean | undefined;
  'line-info'?: boolean | undefined;
  'no-cache'?: boolean | undefined;
}

/** Compile options from the command line, on top of `base` (a spec's own). */
function compileOptionsFrom(v: CompileFlagValues, base: CompileOptions = {}): CompileOptions {
  if (v.arch !== undefined && !ARCH_RE.test(v.arch)) {
    throw new UsageError(`--arch expects an architecture such as sm_90 or compute_90, not '${v.arch}'`);
  }
  const std = oneOf(v.std, '--std', STDS);
  for (const d of v.define ?? []) {
    if (!/^[A-Za-z_]\w*(=.*)?$/s.test(d)) throw new UsageError(`-D expects NAME or NAME=VALUE, not '${d}'`);
  }
  // A spec's defines may be a record; -D adds to them as a list.
  const d = base.defines;
  const baseDefines = d === undefined ? [] : Array.isArray(d) ? [...(d as readonly string[])] : Object.entries(d)
    .filter(([, x]) => x !== false)
    .map(([k, x]) => (x === true ? k : `${k}=${String(x)}`));
  const o: CompileOptions = { ...base };
  if (v.ptx === true) o.target = 'ptx';
  if (v.arch !== undefined) o.arch = v.arch;
  if (std !== undefined) o.std = std;
  if (v.define !== undefined) o.defines = [...baseDefines, ...v.define];
  if (v.include !== undefined) o.includePaths = [...(base.includePaths ?? []), ...v.include];
  if (v['name-expression'] !== undefined) {
    o.nameExpressions = [...(base.nameExpressions ?? []), ...v['name-expression']];
  }
  if (v['fast-math'] === true) o.fastMath = true;
  if (v['line-info'] === true) o.lineInfo = true;
  if (v['no-cache'] === true) o.cache = false;
  return o;
}

/** Without a GPU there is no architecture to default to: say which option is missing instead of the API's words. */
function needArch(options: CompileOptions, command: string): void {
  if (options.arch !== undefined || options.target === 'ptx') return;
  const p = probe();
  if (!p.ok) {
    throw new UsageError(
      `${command} needs --arch (e.g. --arch sm_90) or --ptx: there is no GPU to take the architecture from ` +
        `(${firstLine(p.reason)})`,
    );
  }
}

/** Compiles `src`, naming `kernels` that are not extern "C" (C++ names, template instances) as name expressions. */
async function compileSource(
  src: SourceRef, options: CompileOptions, kernels: readonly string[] = [],
): Promise<ObjectCode> {
  const externC = externCKernels(src.text);
  const named = new Set(options.nameExpressions ?? []);
  for (const k of kernels) if (!externC.includes(k)) named.add(k);
  const includePaths = [src.dir, ...(options.includePaths ?? [])];
  const o: CompileOptions = { ...options, includePaths };
  if (named.size > 0) o.nameExpressions = [...named];
  try {
    return await new Program(src.text, { name: src.name }).compileAsync(o);
  } catch (e) {
    if (e instanceof CompileError) throw new CompileFailure(e, src, includePaths);
    throw e;
  }
}

/** The text of line `line` of `file`: the program itself, or a header found as NVRTC names it or on the paths. */
function sourceLine(file: string, line: number, src: SourceRef, includeDirs: readonly string[]): string | undefined {
  let text: string | undefined;
  if (file === src.name) text = src.text;
  else {
    for (const candidate of [file, ...includeDirs.map((d) => resolve(d, file))]) {
      try {
        text = readFileSync(candidate, 'utf8');
        break;
      } catch {
        // not here; try the next place
      }
    }
  }
  return text?.split('\n')[line - 1]?.replace(/\r$/, '');
}

/** `file:line:col: error: message`, the source line and a caret under the column (or the line's first character). */
function formatDiagnostic(d: Diagnostic, src: SourceRef, includeDirs: readonly string[], color: boolean): string {
  const where = `${d.file}:${d.line}${d.column !== undefined ? `:${d.column}` : ''}`;
  const mild = d.severity === 'warning' || d.severity === 'remark';
  const severity = paint(color, mild ? '35;1' : '31;1', `${d.severity}:`);
  let out = `${paint(color, '1', `${where}:`)} ${severity} ${paint(color, '1', d.message)}\n`;
  const text = sourceLine(d.file, d.line, src, includeDirs);
  if (text !== undefined && text.trim() !== '') {
    const at = d.column !== undefined ? Math.min(d.column - 1, text.length) : text.length - text.trimStart().length;
    // Keep the tabs before the caret so it lines up however wide the terminal draws them.
    const pad = text.slice(0, at).replace(/[^\t]/g, ' ');
    out += `${text}\n${pad}${paint(color, '32;1', '^')}\n`;
  }
  return out;
}

function reportCompileFailure(f: CompileFailure, o: Output): void {
  const e = f.error;
  const diagnostics = e.diagnostics.length > 0 ? e.diagnostics : parseDiagnostics(e.log, f.source.text);
  for (const d of diagnostics) o.err(formatDiagnostic(d, f.source, f.includeDirs, o.errColor));
  const errors = diagnostics.filter((d) => d.severity === 'error' || d.severity === 'catastrophic error').length;
  if (errors > 0) {
    o.err(`cudakit: compile failed: ${errors} error${errors === 1 ? '' : 's'} in ${f.source.name}\n`);
  } else {
    // No diagnostics to point at (a bad option, an NVRTC failure): NVRTC's own words.
    const log = e.log.trim() === '' ? '' : `:\n${e.log.trim().replace(/^/gm, '  ')}`;
    o.err(`cudakit: compile failed: ${e.code} compiling ${f.source.name}${log}\n`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Small formatting helpers

/** 'no such file or directory' from "ENOENT: no such file or directory, open 'x.cu'". */
function systemMessage(e: unknown): string {
  return String((e as Error)?.message ?? e).replace(/^[A-Z]+: /, '').replace(/, \w+ '[^']*'$/, '');
}

const gotCount = (positionals: string[]): string => (positionals.length > 1 ? `, got ${positionals.length}` : '');

function firstLine(text: string | undefined): string {
  return (text ?? 'unknown reason').split('\n')[0]!;
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)} ${units[i]}`;
}

const row = (label: string, value: string, width = 18): string => `  ${label.padEnd(width)}${value}\n`;

/** Columns padded to their widest cell; numbers right-aligned. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const numeric = header.map((_, c) => rows.length > 0 && rows.every((r) => /^[\d.]/.test(r[c] ?? '')));
  const line = (cells: string[], head: boolean): string =>
    cells
      .map((cell, c) => (numeric[c] && !head ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(header, true), ...rows.map((r) => line(r, false))].join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------------------------
// info

function infoCommand(args: string[], o: Output): number {
  const { values, positionals } = parseCommand('info', args, { help: { type: 'boolean', short: 'h' } });
  if (values.help === true) {
    o.out(USAGE_TEXT);
    return OK;
  }
  if (positionals.length > 0) throw new UsageError(`info takes no arguments, got '${positionals[0]}'`);
  const p = probe();
  const driver = p.driverVersion !== undefined ? `CUDA ${p.driverVersion}` : 'not found';
  const nvrtc = p.nvrtcVersion ?? 'not found';
  if (!p.ok) {
    // Not an error: saying what is missing is this command's job.
    o.out(`No usable CUDA GPU.\n${row('driver', driver, 8)}${row('NVRTC', nvrtc, 8)}`);
    const [head, ...more] = (p.reason ?? 'unknown reason').split('\n');
    o.out(row('reason', head!, 8));
    for (const line of more) o.out(row('', line, 8));
    return OK;
  }
  const safe = (f: () => number | string): string => {
    try {
      return String(f());
    } catch {
      return 'n/a';
    }
  };
  const rows = Device.all().map((d) => [
    String(d.ordinal),
    d.name,
    safe(() => `${d.computeCapability.major}.${d.computeCapability.minor}`),
    safe(() => d.multiprocessorCount),
    safe(() => formatBytes(d.totalMemoryBytes)),
    safe(() => `${Math.round(d.clockRateKHz / 1000)} MHz`),
    safe(() => `${Math.round(d.attribute('MEMORY_CLOCK_RATE') / 1000)} MHz`),
    safe(() => formatBytes(d.l2CacheBytes)),
  ]);
  o.out(`driver ${driver} · NVRTC ${nvrtc} · ${rows.length} device${rows.length === 1 ? '' : 's'}\n\n`);
  o.out(table(['#', 'name', 'CC', 'SMs', 'memory', 'SM clock', 'mem clock', 'L2'], rows));
  return OK;
}

// ---------------------------------------------------------------------------------------------------------------
// compile

/**
 * A Kernel for reading attributes. getKernel checks the signature against the compiled parameter list, which the
 * compile command does not know: it is learnt from getKernel's own answers (the count, then each size).
 */
function kernelForFacts(module: Module, name: string): Kernel {
  // The compile command knows kernels by name only: take the signature from the compiled parameter list.
  const params = module.parameters(name);
  if (params === undefined) throw new Error('this driver cannot tell the kernel\'s parameters (CUDA 12.4 or newer can)');
  return module.getKernel(name, params.map(({ size }): ParamType => ({ bytes: size })));
}

function kernelFacts(kernel: Kernel, device: Device, o: Output): string {
  const a = kernel.attributes;
  let text = `${paint(o.color, '1', kernel.name)}\n`;
  text += row('registers', `${a.numRegs} per thread`);
  text += row('shared memory', `${formatBytes(a.sharedSizeBytes)} static per block`);
  const spills = a.localSizeBytes > 0
    ? paint(o.color, '33', `${formatBytes(a.localSizeBytes)} per thread: spills to local memory (slow)`)
    : '0 B (no spills)';
  text += row('local memory', spills);
  text += row('constant memory', formatBytes(a.constSizeBytes));
  const { blockSize } = kernel.suggestedBlockSize();
  const blocks = kernel.maxActiveBlocksPerMultiprocessor(blockSize);
  const smThreads = device.attribute('MAX_THREADS_PER_MULTIPROCESSOR');
  const pct = Math.round((100 * blocks * blockSize) / smThreads);
  const perSM = `${blocks} block${blocks === 1 ? '' : 's'}/SM at the suggested ${blockSize} threads/block`;
  text += row('occupancy', `${perSM} · ${pct}% of ${smThreads} threads/SM`);
  text += row('max block', `${a.maxThreadsPerBlock} threads`);
  return text;
}

async function compileCommand(args: string[], o: Output): Promise<number> {
  const { values, positionals } = parseCommand('compile', args, { ...COMPILE_FLAGS, out: { type: 'string' } });
  if (values.help === true) {
    o.out(USAGE_TEXT);
    return OK;
  }
  if (positionals.length !== 1) {
    throw new UsageError(`compile takes one source file${gotCount(positionals)} (see cudakit --help)`);
  }
  const file = positionals[0]!;
  const options = compileOptionsFrom(values);
  const src = readSource(file);
  needArch(options, 'compile');
  const code = await compileSource(src, options);

  // Warnings go to stderr in the compiler's format, where editors and CI annotators look for them.
  const diagnostics = parseDiagnostics(code.log, src.text);
  const includeDirs = [src.dir, ...(options.includePaths ?? [])];
  for (const d of diagnostics) o.err(formatDiagnostic(d, src, includeDirs, o.errColor));
  const warnings = diagnostics.filter((d) => d.severity === 'warning').length;
  if (values.out !== undefined) {
    try {
      writeFileSync(values.out, code.bytes);
    } catch (e) {
      throw new UsageError(`cannot write ${values.out}: ${systemMessage(e)}`);
    }
  }

  const how = code.compileMs !== undefined ? `${Math.round(code.compileMs)} ms` : `from the ${code.cached} cache`;
  o.out(
    `${paint(o.color, '1', src.name)} → ${code.target.toUpperCase()} for ${code.arch ?? "NVRTC's default arch"} · ` +
      `${formatBytes(code.bytes.byteLength)} · NVRTC ${code.nvrtcVersion} · ${how}\n`,
  );
  o.out(row('flags', code.options.join(' ') || '(none)'));
  if (warnings > 0) o.out(row('warnings', `${warnings} (on stderr)`));
  if (values.out !== undefined) o.out(row('wrote', values.out));

  const names = [...new Set([...externCKernels(src.text), ...(options.nameExpressions ?? [])])];
  const listed = names.map((n) => {
    const lowered = code.loweredNames[n];
    return lowered !== undefined && lowered !== n ? `${n} (${lowered})` : n;
  });
  const none = 'none found (extern "C" __global__ kernels are listed; name C++ ones with --name-expression)';
  o.out(row('kernels', listed.length > 0 ? listed.join(', ') : none));

  const p = probe();
  if (!p.ok) {
    // The loader's list of paths tried belongs to `cudakit info`; here the reason is enough.
    const reason = firstLine(p.reason).replace(/ \(tried: .*\)$/, '');
    o.out(row('not shown', `registers, spills, shared/const memory and occupancy need a GPU: ${reason}`));
    return OK;
  }
  const device = Device.get(0);
  let module: Module;
  try {
    module = device.loadModule(code);
  } catch (e) {
    const why = firstLine((e as Error).message);
    const on = `${device.name} (${device.arch})`;
    o.out(row('not shown', `registers, spills and occupancy: the code does not load on ${on}: ${why}`));
    return OK;
  }
  try {
    for (const name of names) {
      o.out('\n');
      try {
        o.out(kernelFacts(kernelForFacts(module, name), device, o));
      } catch (e) {
        o.out(`${paint(o.color, '1', name)}\n${row('not shown', firstLine((e as Error).message))}`);
      }
    }
  } finally {
    module.dispose();
  }
  return OK;
}

// ---------------------------------------------------------------------------------------------------------------
// bench

interface KernelSource {
  src: SourceRef;
  kernel: string;
  label: string;
  /** Its own launch geometry (a float4 kernel needs a quarter of a scalar one's threads); default: the main one's. */
  grid?: Dim3;
  block?: Dim3;
}

interface BenchPlan {
  what: string;
  main: KernelSource;
  signature: Signature | undefined;
  config: LaunchConfig;
  io: ArgSpec[];
  reference: KernelSource | ((args: HostValue[]) => void | Promise<void>) | undefined;
  compare: KernelSource | undefined;
  compile: CompileOptions;
  check: CheckOptions;
  skipCheck: boolean;
  mode: BenchMode | undefined;
  preset: PresetName | undefined;
  bytes: number | undefined;
  flops: number | undefined;
  json: string | undefined;
}

type BenchValues = ReturnType<typeof parseCommand<typeof BENCH_FLAGS>>['values'];

const MODES: readonly BenchMode[] = ['cold', 'hot', 'graph'];
const PRESETS: readonly PresetName[] = ['quick', 'default', 'rigorous'];
const SPEC_EXT = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']);
const SPEC_KEYS = [
  'name', 'source', 'kernel', 'signature', 'grid', 'block', 'sharedMemBytes', 'args', 'reference', 'compare', 'mode',
  'preset', 'bytes', 'flops', 'compile', 'check',
];

/** The default export; a CommonJS module's `exports.default` arrives one level down. */
function specExport(namespace: unknown): unknown {
  const d = (namespace as { default?: unknown }).default;
  const nested = typeof d === 'object' && d !== null && 'default' in d && !('kernel' in d);
  return nested ? (d as { default: unknown }).default : d;
}

/** Imports a spec module: natively, or through tsx for TypeScript when Node cannot load it by itself. */
async function importSpec(path: string): Promise<unknown> {
  if (!existsSync(path)) throw new UsageError(`cannot read ${path}: no such file or directory`);
  const url = pathToFileURL(resolve(path)).href;
  try {
    try {
      return specExport(await import(url));
    } catch (e) {
      if ((e as { code?: string }).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw e;
    }
    let tsx: typeof import('tsx/esm/api');
    try {
      tsx = await import('tsx/esm/api');
    } catch {
      throw new UsageError(
        `${path} is TypeScript and Node cannot load it: install tsx (npm i -D tsx) or run cudakit through it`,
      );
    }
    return specExport(await tsx.tsImport(url, import.meta.url));
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`cannot load ${path}: ${firstLine((e as Error)?.message ?? String(e))}`);
  }
}

function isDim3(v: unknown): v is Dim3 {
  if (typeof v === 'number') return true;
  return Array.isArray(v) && v.length >= 1 && v.length <= 3 && v.every((x) => typeof x === 'number');
}

/** The spec's source: inline text (named after the spec) or a file relative to it. */
function specSource(value: unknown, specPath: string, field: string, label: string): SourceRef {
  if (typeof value === 'string') {
    const name = `${basename(specPath).replace(/\.[cm]?[jt]s$/, '')}.${label}.cu`;
    return { text: value, name, dir: dirname(resolve(specPath)) };
  }
  const file = (value as { file?: unknown } | null)?.file;
  if (typeof file !== 'string') {
    throw new UsageError(`${specPath}: ${field} must be CUDA source text or { file: 'path.cu' }`);
  }
  const abs = resolve(dirname(resolve(specPath)), file);
  const src = readSource(abs);
  return { ...src, name: relative(process.cwd(), abs) || abs };
}

function specKernel(value: unknown, specPath: string, field: string): KernelSource {
  const r = value as { source?: unknown; kernel?: unknown; name?: unknown; grid?: unknown; block?: unknown } | null;
  if (typeof r !== 'object' || r === null || typeof r.kernel !== 'string') {
    throw new UsageError(`${specPath}: ${field} must be { source, kernel, grid?, block? }`);
  }
  if (r.name !== undefined && typeof r.name !== 'string') {
    throw new UsageError(`${specPath}: ${field}.name must be a string`);
  }
  const k: KernelSource = { src: specSource(r.source, specPath, `${field}.source`, field), kernel: r.kernel, label: r.name ?? r.kernel };
  if (r.grid !== undefined) k.grid = r.grid as Dim3;
  if (r.block !== undefined) k.block = r.block as Dim3;
  return k;
}

/** Checks a spec's shape (it is user code: every field gets a plain message) and applies the command line over it. */
async function planFromSpec(path: string, v: BenchValues): Promise<BenchPlan> {
  const value = await importSpec(path);
  if (typeof value !== 'object' || value === null) {
    throw new UsageError(`${path}: the default export must be a bench spec { source, kernel, grid, block, args, ... }`);
  }
  const s = value as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    if (!SPEC_KEYS.includes(key)) {
      throw new UsageError(`${path}: unknown field '${key}' (known: ${SPEC_KEYS.join(', ')})`);
    }
  }
  const bad = (what: string): UsageError => new UsageError(`${path}: ${what}`);
  const kernel = v.kernel ?? s.kernel;
  if (typeof kernel !== 'string') throw bad('kernel must be the kernel name, a string');
  if (s.name !== undefined && typeof s.name !== 'string') throw bad('name must be a string');
  const grid = v.grid !== undefined ? parseDim(v.grid, '--grid') : s.grid;
  const block = v.block !== undefined ? parseDim(v.block, '--block') : s.block;
  if (!isDim3(grid)) throw bad('grid must be a number or [x, y?, z?]');
  if (!isDim3(block)) throw bad('block must be a number or [x, y?, z?]');
  const smem = v['shared-mem'] !== undefined ? parseCount(v['shared-mem'], '--shared-mem', 0) : s.sharedMemBytes;
  if (smem !== undefined && typeof smem !== 'number') throw bad('sharedMemBytes must be a number');
  const args = v.arg ?? s.args;
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) {
    throw bad("args must be an array of argument specs such as 'f32=2.5'");
  }
  if (s.signature !== undefined && !Array.isArray(s.signature)) {
    throw bad("signature must be an array such as ['f32', 'ptr', 'i32']");
  }
  for (const key of ['bytes', 'flops'] as const) {
    const x = s[key];
    if (x !== undefined && !(typeof x === 'number' && x > 0)) throw bad(`${key} must be a positive number`);
  }
  for (const key of ['compile', 'check'] as const) {
    const x = s[key];
    if (x !== undefined && (typeof x !== 'object' || x === null)) throw bad(`${key} must be an options object`);
  }
  const label = (s.name as string | undefined) ?? kernel;
  const main: KernelSource = { src: specSource(s.source, path, 'source', 'source'), kernel, label };
  let reference: BenchPlan['reference'];
  if (v.ref !== undefined) reference = cliKernel(v.ref, v['ref-kernel'] ?? kernel, v['ref-grid'], v['ref-block'], 'ref');
  else if (typeof s.reference === 'function') reference = s.reference as (args: HostValue[]) => void | Promise<void>;
  else if (s.reference !== undefined) reference = specKernel(s.reference, path, 'reference');
  const compareWith = v.compare !== undefined
    ? cliKernel(v.compare, v['compare-kernel'] ?? kernel, v['compare-grid'], v['compare-block'], 'compare')
    : s.compare !== undefined ? specKernel(s.compare, path, 'compare') : undefined;
  const common = commonBenchOptions(v);
  return {
    what: path,
    main,
    signature: s.signature as Signature | undefined,
    config: { grid, block, ...(smem !== undefined && smem > 0 ? { sharedMemBytes: smem } : {}) },
    io: parseArgSpecs(args as string[]),
    reference,
    compare: compareWith,
    compile: compileOptionsFrom(v, (s.compile as CompileOptions | undefined) ?? {}),
    check: { ...((s.check as CheckOptions | undefined) ?? {}), ...common.check },
    skipCheck: v['no-check'] === true,
    mode: common.mode ?? oneOf(s.mode as string | undefined, `${path}: mode`, MODES),
    preset: common.preset ?? oneOf(s.preset as string | undefined, `${path}: preset`, PRESETS),
    bytes: common.bytes ?? (s.bytes as number | undefined),
    flops: common.flops ?? (s.flops as number | undefined),
    json: v.json,
  };
}

function cliKernel(file: string, kernel: string, grid?: string, block?: string, prefix = ''): KernelSource {
  const k: KernelSource = { src: readSource(file), kernel, label: kernel };
  if (grid !== undefined) k.grid = parseDim(grid, `--${prefix}-grid`);
  if (block !== undefined) k.block = parseDim(block, `--${prefix}-block`);
  return k;
}

function commonBenchOptions(v: BenchValues) {
  return {
    mode: oneOf(v.mode, '--mode', MODES),
    preset: oneOf(v.preset, '--preset', PRESETS),
    bytes: v.bytes !== undefined ? parseAmount(v.bytes, '--bytes') : undefined,
    flops: v.flops !== undefined ? parseAmount(v.flops, '--flops') : undefined,
    check: defined({
      atol: v.atol !== undefined ? parseTolerance(v.atol, '--atol') : undefined,
      rtol: v.rtol !== undefined ? parseTolerance(v.rtol, '--rtol') : undefined,
      trials: v.trials !== undefined ? parseCount(v.trials, '--trials', 1) : undefined,
      seed: v.seed !== undefined ? parseCount(v.seed, '--seed', 0) : undefined,
      requireDeterminism: v['require-determinism'] === true ? true : undefined,
    }) as CheckOptions,
  };
}

function planFromCommandLine(file: string, v: BenchValues): BenchPlan {
  const src = readSource(file);
  if (v.kernel === undefined) {
    const found = externCKernels(src.text);
    const hint = found.length > 0 ? ` (extern "C" kernels in ${file}: ${found.join(', ')})` : '';
    throw new UsageError(`bench needs --kernel <name>${hint}`);
  }
  if (v.grid === undefined || v.block === undefined) {
    throw new UsageError('bench needs --grid and --block, e.g. --grid 4096 --block 256');
  }
  const grid = parseDim(v.grid, '--grid');
  const block = parseDim(v.block, '--block');
  const smem = v['shared-mem'] !== undefined ? parseCount(v['shared-mem'], '--shared-mem', 0) : 0;
  const io = parseArgSpecs(v.arg ?? []);
  const common = commonBenchOptions(v);
  return {
    what: file,
    main: { src, kernel: v.kernel, label: v.kernel },
    signature: undefined,
    config: { grid, block, ...(smem > 0 ? { sharedMemBytes: smem } : {}) },
    io,
    reference: v.ref !== undefined ? cliKernel(v.ref, v['ref-kernel'] ?? v.kernel, v['ref-grid'], v['ref-block'], 'ref') : undefined,
    compare: v.compare !== undefined
      ? cliKernel(v.compare, v['compare-kernel'] ?? v.kernel, v['compare-grid'], v['compare-block'], 'compare')
      : undefined,
    compile: compileOptionsFrom(v),
    check: common.check,
    skipCheck: v['no-check'] === true,
    mode: common.mode,
    preset: common.preset,
    bytes: common.bytes,
    flops: common.flops,
    json: v.json,
  };
}

async function benchCommand(args: string[], o: Output): Promise<number> {
  const { values, positionals } = parseCommand('bench', args, BENCH_FLAGS);
  if (values.help === true) {
    o.out(USAGE_TEXT);
    return OK;
  }
  if (positionals.length !== 1) {
    throw new UsageError(`bench takes one source file or spec${gotCount(positionals)} (see cudakit --help)`);
  }
  const file = positionals[0]!;
  // Everything that can be checked without a GPU is checked first, so a typo is reported as itself.
  const plan = SPEC_EXT.has(extname(file)) ? await planFromSpec(file, values) : planFromCommandLine(file, values);
  const p = probe();
  if (!p.ok) throw new UsageError(`bench needs a CUDA GPU and none is usable: ${firstLine(p.reason)}`);
  return runBench(plan, o);
}

/**
 * The correctness part of `--json`: the check before timing and the re-check of the timed launches' outputs, and
 * whether two runs on the same inputs had to agree bit for bit (--require-determinism) or within the tolerance.
 */
type CheckReport =
  | { reference: string; passed: boolean; requireDeterminism: boolean; before: CheckResult; afterTiming?: CheckResult }
  | { skipped: string };

async function runBench(plan: BenchPlan, o: Output): Promise<number> {
  const device = Device.get(0);
  const signature = plan.signature ?? signatureOf(plan.io);
  if (signature.length !== plan.io.length) {
    throw new UsageError(
      `${plan.what}: the signature lists ${signature.length} parameters but there are ${plan.io.length} argument specs`,
    );
  }
  const jsonOnly = plan.json === '-';
  // With JSON on stdout, the human lines move to stderr so stdout stays parseable.
  const note = (text: string): void => (jsonOnly ? o.err(`${text}\n`) : o.out(`${text}\n`));
  // --json carries the correctness verdict too (also when it fails, then without timings), so scripts need no stderr.
  const writeJson = (value: object): void => {
    if (plan.json === undefined) return;
    const text = `${formatJson(value as Record<string, unknown>)}\n`;
    if (jsonOnly) return void o.out(text);
    try {
      writeFileSync(plan.json, text);
    } catch (e) {
      throw new UsageError(`cannot write ${plan.json}: ${systemMessage(e)}`);
    }
  };
  const options = plan.compile;

  const modules: Module[] = [];
  const load = async (k: KernelSource): Promise<Kernel> => {
    const code = await compileSource(k.src, options, [k.kernel]);
    const m = device.loadModule(code);
    modules.push(m);
    const kernel = m.getKernel(k.kernel, signature);
    const smem = plan.config.sharedMemBytes ?? 0;
    if (smem > kernel.attributes.maxDynamicSharedSizeBytes) kernel.setMaxDynamicSharedMemory(smem);
    return kernel;
  };
  let sets: ReturnType<typeof inputSets> | undefined;
  try {
    const kernel = await load(plan.main);
    const other = plan.compare !== undefined ? await load(plan.compare) : undefined;
    const config = plan.config;
    const configOf = (k: KernelSource): LaunchConfig => ({ ...config, grid: k.grid ?? config.grid, block: k.block ?? config.block });

    // Correctness first: timing a wrong kernel is worse than useless.
    let reference: Reference | undefined;
    let referenceLabel = '';
    if (typeof plan.reference === 'function') {
      reference = plan.reference;
      referenceLabel = 'the JavaScript reference';
    } else if (plan.reference !== undefined) {
      reference = { kernel: await load(plan.reference), config: configOf(plan.reference) };
      referenceLabel = `${plan.reference.label} in ${plan.reference.src.name}`;
    } else if (other !== undefined && plan.compare !== undefined) {
      reference = { kernel: other, config: configOf(plan.compare) };
      referenceLabel = `${plan.compare.label} in ${plan.compare.src.name}`;
    }
    let report: CheckReport;
    if (plan.skipCheck) {
      report = { skipped: 'not checked (--no-check)' };
      note(`correctness: ${report.skipped}`);
    } else if (reference === undefined) {
      report = { skipped: 'not checked (no reference: give --ref or --compare)' };
      note(`correctness: ${report.skipped}`);
    } else {
      const r = await check({ kernel, config }, reference, plan.io, plan.check);
      const requireDeterminism = plan.check.requireDeterminism === true;
      report = { reference: referenceLabel, passed: r.passed, requireDeterminism, before: r };
      if (!r.passed) {
        o.err(`cudakit: check failed against ${referenceLabel}: ${r.summary}\n`);
        writeJson({ check: report });
        return CHECK_FAILED;
      }
      note(`${paint(o.color && !jsonOnly, '32', '✓')} check against ${referenceLabel}: ${r.summary}`);
    }

    sets = inputSets(device, plan.io, plan.check.seed);
    const args = sets.args as (set: number) => never;
    const common = defined({ mode: plan.mode, preset: plan.preset, bytes: plan.bytes, flops: plan.flops });
    const color = o.color && !jsonOnly;
    let result: BenchResult | CompareResult;
    let text: string;
    if (other === undefined) {
      const label = `${plan.main.label} (${plan.mode ?? 'cold'})`;
      const r = await bench(kernel, config, args, {
        ...common,
        name: plan.main.label,
        onProgress: (x) => {
          const ci = Number.isFinite(x.relCI) ? ` ±${(x.relCI * 100).toFixed(2)}%` : '';
          o.showProgress(progressLine(x.samples, undefined, `${label}${ci} samples`));
        },
      });
      result = r;
      text = formatResult(r, { color });
    } else {
      const [nameA, nameB] = compareNames(plan.compare!, plan.main);
      const c = await compare(
        { kernel: other, config: configOf(plan.compare!), args, name: nameA },
        { kernel, config, args, name: nameB },
        {
          ...common,
          onProgress: (x) => o.showProgress(progressLine(x.round, x.rounds, `${nameA} vs ${nameB}: ABBA rounds`)),
        },
      );
      result = c;
      text = [formatResult(c.a, { color }), formatResult(c.b, { color }), formatComparison(c, { color })].join('\n\n');
    }
    o.clearProgress();
    if (reference !== undefined && !plan.skipCheck) {
      // The timed launches' outputs too: a kernel right once but wrong when repeated (races, stale state) fails.
      const after = await sets.verify(reference, defined({ atol: plan.check.atol, rtol: plan.check.rtol }));
      if ('before' in report) Object.assign(report, { passed: after.passed, afterTiming: after });
      if (!after.passed) {
        o.err(`cudakit: check failed after timing against ${referenceLabel}: ${after.summary}\n`);
        writeJson({ check: report });
        return CHECK_FAILED;
      }
    }
    if (!jsonOnly) o.out(`${text}\n`);
    writeJson({ ...result, check: report });
    return OK;
  } finally {
    o.clearProgress();
    // After a kernel fault the context is lost and there is nothing left to release: the fault is what to report.
    quietly(() => sets?.dispose());
    for (const m of modules) quietly(() => m.dispose());
  }
}

/** Runs a cleanup step; a failure because the CUDA context is lost is dropped (docs/errors.md). */
function quietly(release: () => void): void {
  try {
    release();
  } catch (e) {
    if (!isContextLost(e)) throw e;
  }
}

/** Report names for A and B: the kernel names, qualified by file when they are the same. */
function compareNames(a: KernelSource, b: KernelSource): [string, string] {
  if (a.label !== b.label) return [a.label, b.label];
  return [`${basename(a.src.name)}:${a.label}`, `${basename(b.src.name)}:${b.label}`];
}

// ---------------------------------------------------------------------------------------------------------------
// main

function version(): string {
  return (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
}

/**
 * Runs one command line (without the `node cudakit` part) and resolves to the exit code: 0 ok, 1 correctness check
 * failed, 2 usage, compile or CUDA error. Never exits the process and never rejects.
 */
export async function main(argv: string[], io?: CliIO): Promise<number> {
  const o = new Output(
    io ?? {
      stdout: process.stdout,
      stderr: process.stderr,
      isTTY: { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true },
    },
  );
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'help':
      case '--help':
      case '-h':
        o.out(USAGE_TEXT);
        return OK;
      case '--version':
      case '-v':
        o.out(`cudakit ${version()}\n`);
        return OK;
      case 'info':
        return infoCommand(rest, o);
      case 'compile':
        return await compileCommand(rest, o);
      case 'bench':
        return await benchCommand(rest, o);
      case undefined:
        o.err(USAGE_TEXT);
        return USAGE;
      default:
        throw new UsageError(`unknown command '${command}' (commands: info, compile, bench, help)`);
    }
  } catch (e) {
    o.clearProgress();
    if (e instanceof CompileFailure) {
      reportCompileFailure(e, o);
      return USAGE;
    }
    const message = e instanceof Error ? e.message : String(e);
    o.err(`cudakit: ${message.replace(/^cudakit: /, '')}\n`);
    if (process.env.CUDAKIT_DEBUG === '1' && e instanceof Error && !(e instanceof UsageError)) o.err(`${e.stack}\n`);
    return USAGE;
  }
}

/** True when this file is the process's script, also when started through an npm bin symlink. */
function isMainModule(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

// No top-level await: a spec module may import this file while it is running a bench.
if (isMainModule()) {
  // `cudakit compile x.cu | head` closes stdout early: that is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
  });
  void main(process.argv.slice(2)).then((code) => (process.exitCode = code));
}
