// SPDX-License-Identifier: MIT
// The command line's words: the help text, the options of each command, and turning their values into compile
// options and an EvalJob (jobFromFlags: no GPU, no file read beyond the sources, tested in the unit tier).
import { parseArgs } from 'node:util';
import {
  type BenchMode,
  type BenchTimer,
  type CheckOptions,
  type CompileOptions,
  type CppStandard,
  type Dim3,
  type EvalJob,
  type EvalKernelRef,
  type EvalSource,
  type PresetName,
  isArch,
  nvrtcVersion,
  parseArgSpecs,
  supportedArchs,
} from '../index.js';

export const OK = 0;
export const CHECK_FAILED = 1;
export const USAGE = 2;

/** One line per command: what `cudakit --help` lists, and the head of the command's own help. */
const COMMANDS = {
  info: ['info', 'CUDA devices, driver and NVRTC versions (or why no GPU is usable)'],
  compile: ['compile <file.cu>', 'compile with NVRTC; per kernel: registers, spills, shared/const memory, occupancy'],
  bench: ['bench <file.cu | spec.ts>', 'check a kernel against a reference, then time it (or compare it with another)'],
  eval: [
    'eval <problem> <file.cu>',
    'a kernel through every case of a problem (public, then hidden) and its score over them',
  ],
  profile: [
    'profile <file.cu | spec.ts>',
    'device metrics of one launch from Nsight Compute (ncu): throughput, memory, occupancy,\n' +
      `${' '.repeat(30)}warp stalls ... (nothing is timed under ncu)`,
  ],
} as const satisfies Record<string, readonly [usage: string, summary: string]>;

export type CommandName = keyof typeof COMMANDS;
export const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];

const commandLine = (name: CommandName): string => `  ${COMMANDS[name][0].padEnd(27)} ${COMMANDS[name][1]}\n`;

const COMPILE_OPTIONS = `\
  --arch <sm_XX>              target architecture (default: the GPU's; needed without a GPU unless --ptx)
  --ptx                       emit PTX instead of CUBIN
  -D, --define <NAME[=VALUE]> preprocessor macro (repeatable)
  -I, --include <dir>         #include directory (repeatable); the source's own directory is searched first
  --std <c++17>               C++ dialect: c++03, c++11, c++14, c++17, c++20
  --name-expression <expr>    C++ kernel or template instance to compile and name, e.g. 'scale<float>' (repeatable)
  --fast-math, --line-info    --use_fast_math, --generate-line-info
  --no-cache                  compile afresh, bypassing the compile cache
`;

const OUT_OPTION = '  --out <file>                write the PTX / CUBIN to a file\n';

/** The launch, as bench and profile take it. */
const LAUNCH_OPTIONS = `\
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
`;

const JSON_OPTION =
  "  --json <file | ->           write the result as JSON; '-' prints it to stdout instead of the text\n";

const BENCH_OPTIONS = `${LAUNCH_OPTIONS}\
  --ref <file.cu>             reference kernel for the correctness check (--ref-kernel <name>; default: --kernel;
                              --ref-grid / --ref-block: its own launch geometry; default: --grid / --block)
  --compare <file.cu>         time against this file's kernel: it is A, <file> is B; also the check's reference
                              (--compare-kernel <name>, --compare-grid, --compare-block; default: the main ones)
  --mode <cold|hot|graph>     L2 flushed before each sample (cold, default), not flushed (hot), CUDA graph replays
  --preset <quick|default|rigorous>   how long to sample (precision target and timeout)
  --timer <cupti|events>      kernel timestamps from CUPTI (default where it loads) or an event pair per sample
  --bytes <N>, --flops <N>    work per launch, for GB/s, % of peak bandwidth and TFLOP/s (N may be a product: 12*1M)
${JSON_OPTION}  --atol, --rtol, --trials, --seed   correctness check tolerances, trials and input seed
  --require-determinism       fail the check when two runs on the same inputs differ at all (default: fail only
                              beyond the tolerance; differences within it, e.g. float atomics, are reported)
  --no-check                  skip the correctness check
  --metrics                   then one launch under Nsight Compute (not timed) and, under the timing, its speed of
                              light for memory and compute (SM), achieved occupancy and top warp stalls (--json: all
                              of its metrics); without ncu, or where it cannot profile, a line says why
  --ncu <path>                with --metrics: Nsight Compute's ncu (default: ncu on PATH)
`;

const PROFILE_OPTIONS = `\
  --metrics <a,b,...>         ncu metrics to collect, e.g. dram__bytes_read.sum (repeatable; default: a set covering
                              speed of light, memory, compute, pipelines, occupancy, launch, stalls, scheduler ...)
  --section <name>            an ncu section to collect, e.g. SpeedOfLight (repeatable; without --metrics: only these)
  --ncu <path>                Nsight Compute's ncu (default: ncu on PATH)
`;

const EVAL_OPTIONS = `\
  --kernel <name>             the kernel (default: the file's only extern "C" kernel)
  --grid <e[,e[,e]]>          blocks per grid over the problem's dimensions, e.g. 'cdiv(n, 256)' or 'cdiv(n, 32),m'
  --block <e[,e[,e]]>         threads per block, e.g. 256 or 32,8
  --shared-mem <e>            dynamic shared memory per block, e.g. '4 * k'
                              expressions: integers, the dimensions, + - * / % <<, ceil floor min max cdiv
  --cases <all|public>        every case (default), or the public ones only (no score)
  --preset <quick|default|rigorous>   how long to sample each case, in place of the problem's
${JSON_OPTION}`;

const SPEC_FILES = `\
A spec file default-exports the whole benchmark as an EvalJob and may export a JavaScript \`reference\` beside it
(see examples/saxpy.bench.ts), or is a JSON file holding the EvalJob (job.json); options given on the command line
override the job's fields.
`;

const EXAMPLES: Record<CommandName, string> = {
  info: '  cudakit info\n',
  compile: `  cudakit compile saxpy.cu --arch sm_90 -D BLOCK=256
  cudakit compile kernels.cu --ptx --arch sm_80 --name-expression 'scale<float>' --out kernels.ptx
`,
  bench: `  cudakit bench saxpy.cu --kernel saxpy --grid 65536 --block 256 --arg f32=2.5 \\
      --arg 'ptr:f32[16M]=uniform(-1,1)' --arg 'ptr:f32[16M]=uniform(-1,1):out' --arg i32=16777216 --bytes 12*16M
  cudakit bench saxpy_v2.cu --compare saxpy.cu --kernel saxpy --grid 65536 --block 256 --arg ... --json ab.json
  cudakit bench examples/saxpy.bench.ts --mode hot --preset quick
  cudakit bench examples/saxpy.bench.ts --preset quick --metrics
`,
  eval: `  cudakit eval server/problems/vector-add add.cu --grid 'cdiv(n, 256)' --block 256
  cudakit eval server/problems/softmax/problem.json server/problems/softmax/example.json --cases public --json -
`,
  profile:
    '  cudakit profile examples/saxpy.bench.ts --metrics dram__bytes_read.sum,dram__bytes_write.sum ' +
    '--json metrics.json\n',
};

export const USAGE_TEXT = `Usage: cudakit <command> [options]
       cudakit <command> --help    that command's options alone

Commands
${COMMAND_NAMES.map(commandLine).join('')}  help [<command>]            this text, or a command's

compile options
${COMPILE_OPTIONS}${OUT_OPTION}
bench options (and compile's --arch, --ptx, -D, -I, --std, --fast-math, --no-cache)
${BENCH_OPTIONS}
eval options (and compile's options)
${EVAL_OPTIONS}
profile options (and bench's --kernel, --grid, --block, --arg, --shared-mem, --seed, --json; compile's options)
${PROFILE_OPTIONS}
${SPEC_FILES}
Exit status: 0 ok, 1 correctness check failed, 2 usage, compile or CUDA error (no usable GPU included; for profile,
no usable ncu too).

Examples
${COMMAND_NAMES.map((c) => EXAMPLES[c]).join('')}`;

/** Each command's own help after its usage line: what it does, its options, exit status. */
const COMMAND_HELP: Record<CommandName, string> = {
  info: `\
The CUDA devices (name, compute capability, SMs, memory, clocks, L2), the driver and NVRTC versions and, with two
or more devices, which one can access which one's memory directly; without a usable GPU, why there is none.

Exit status: 0 when a GPU is usable, 2 when none is (the reason is printed) or for a usage error.
`,
  compile: `\
Compiles a CUDA source with NVRTC and reports per kernel its registers, spills, shared and constant memory and
occupancy, from the GPU; without one, from ptxas (CUBIN only), and no occupancy. Warnings and errors go to stderr
in the compiler's format.

compile options
${COMPILE_OPTIONS}${OUT_OPTION}
Exit status: 0 ok, 2 usage or compile error.
`,
  bench: `\
Checks a kernel against a reference, then times it (or compares it with another kernel: --compare). The kernel
and its launch come from the options below, or from a spec file.

bench options
${BENCH_OPTIONS}
compile options
${COMPILE_OPTIONS}
${SPEC_FILES}
Exit status: 0 ok, 1 correctness check failed, 2 usage, compile or CUDA error (no usable GPU included).
`,
  eval: `\
Evaluates a kernel on every case of a problem (problem.json, or its folder): checks it against the problem's
reference and times it against the problem's baseline on each case, the public ones first, the hidden ones once
every public one passed; then the score, the geometric mean over the cases of baseline / kernel time, each kernel
time floored at what the GPU's peaks allow. The kernel is a .cu file with the launch options below, or a submission
file (submission.json: { source, kernel, grid, block, sharedMemBytes? }, its source relative to it).

eval options
${EVAL_OPTIONS}
compile options
${COMPILE_OPTIONS}
Exit status: 0 every case passed, 1 a case failed its check, 2 usage, compile or CUDA error (no usable GPU included).
`,
  profile: `\
Device metrics of one launch from Nsight Compute (ncu): throughput, memory, compute, occupancy, warp stalls ...
(nothing is timed under ncu). The kernel and its launch come from the options below, or from a spec file, as for
bench.

profile options
${PROFILE_OPTIONS}
launch options
${LAUNCH_OPTIONS}  --seed <n>                  seed of the generated inputs
${JSON_OPTION}
compile options
${COMPILE_OPTIONS}
Exit status: 0 ok, 2 usage, compile or CUDA error, no usable GPU or no usable ncu.
`,
};

/** `cudakit <command> --help` and `cudakit help <command>`: that command's help alone. */
export function commandHelp(name: CommandName): string {
  const options = name === 'info' ? '' : ' [options]';
  return `Usage: cudakit ${COMMANDS[name][0]}${options}\n\n${COMMAND_HELP[name]}\nExamples\n${EXAMPLES[name]}`;
}

/** A bad command line or input: printed as one line (a line each, for several), exit code 2. */
export class UsageError extends Error {}

type OptionConfig = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;
/** What parseArgs gives for `T`: each option's value, absent when not given. */
export type FlagValues<T extends OptionConfig> = {
  [K in keyof T]?: T[K] extends { type: 'boolean' }
    ? T[K] extends { multiple: true }
      ? boolean[]
      : boolean
    : T[K] extends { multiple: true }
      ? string[]
      : string;
};

export const COMPILE_FLAGS = {
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

export const BENCH_FLAGS = {
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
  timer: { type: 'string' },
  bytes: { type: 'string' },
  flops: { type: 'string' },
  json: { type: 'string' },
  atol: { type: 'string' },
  rtol: { type: 'string' },
  trials: { type: 'string' },
  seed: { type: 'string' },
  'require-determinism': { type: 'boolean' },
  'no-check': { type: 'boolean' },
  metrics: { type: 'boolean' },
  ncu: { type: 'string' },
} as const satisfies OptionConfig;

/** node:util parseArgs with its errors turned into one-line usage errors. */
export function parseCommand<T extends OptionConfig>(
  command: string,
  args: string[],
  options: T,
): { values: FlagValues<T>; positionals: string[] } {
  try {
    const parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
    return parsed as { values: FlagValues<T>; positionals: string[] };
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

export type BenchValues = FlagValues<typeof BENCH_FLAGS>;
/**
 * What a plan is made of: bench's options but --metrics, which is bench's alone (profile's --metrics names metrics),
 * so that profile plans its launch with the same functions.
 */
export type PlanValues = Omit<BenchValues, 'metrics'>;

/** bench's --metrics and --ncu: profileJob()'s ncu after the timing, or undefined without --metrics. */
export function metricsOption(v: BenchValues): { ncu: string | undefined } | undefined {
  if (v.ncu === '') throw new UsageError('--ncu expects the path of ncu');
  if (v.metrics !== true) {
    if (v.ncu !== undefined) throw new UsageError('--ncu names the ncu that --metrics runs: give --metrics too');
    return undefined;
  }
  return { ncu: v.ncu };
}

/** `cudakit profile`: the launch as bench describes it (no reference, compare or timing), and ncu's options. */
export const PROFILE_FLAGS = {
  ...COMPILE_FLAGS,
  kernel: { type: 'string' },
  grid: { type: 'string' },
  block: { type: 'string' },
  arg: { type: 'string', multiple: true },
  'shared-mem': { type: 'string' },
  seed: { type: 'string' },
  json: { type: 'string' },
  metrics: { type: 'string', multiple: true },
  section: { type: 'string', multiple: true },
  ncu: { type: 'string' },
} as const satisfies OptionConfig;

export type ProfileValues = FlagValues<typeof PROFILE_FLAGS>;

/** `1024`, `64,64`, `64x64x2`: a grid or block size. */
export function parseDim(text: string, option: string): Dim3 {
  const parts = text
    .trim()
    .replace(/^\[|\]$/g, '')
    .split(/\s*[x,]\s*/);
  const dims = parts.map((p) => (/^\d+$/.test(p) ? Number(p) : Number.NaN));
  if (dims.length > 3 || dims.some((d) => !Number.isSafeInteger(d) || d < 1)) {
    throw new UsageError(`${option} expects 1 to 3 positive integers such as 256, 64,64 or 16x16x4, not '${text}'`);
  }
  return dims.length === 1 ? dims[0]! : (dims as [number, number] | [number, number, number]);
}

/** A positive number, or a product of them: `1e9`, `12*16M` (k and M are 1024-based, G too). */
export function parseAmount(text: string, option: string): number {
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

export function parseCount(text: string, option: string, min: number): number {
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

export function oneOf<T extends string>(
  text: string | undefined,
  option: string,
  allowed: readonly T[],
): T | undefined {
  if (text === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(text)) {
    throw new UsageError(`${option} expects ${allowed.join(', ')}, not '${text}'`);
  }
  return text as T;
}

/** Options without their undefined fields (exactOptionalPropertyTypes: absent and undefined differ). */
type Defined<T> = { [K in keyof T]?: Exclude<T[K], undefined> };
export function defined<T extends object>(o: T): Defined<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Defined<T>;
}

const STDS: readonly CppStandard[] = ['c++03', 'c++11', 'c++14', 'c++17', 'c++20'];
export const MODES: readonly BenchMode[] = ['cold', 'hot', 'graph'];
export const TIMERS: readonly BenchTimer[] = ['cupti', 'events'];
export const PRESET_NAMES: readonly PresetName[] = ['quick', 'default', 'rigorous'];

export interface CompileFlagValues {
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

/**
 * An --arch this NVRTC does not know, said in the command line's words (the library's RangeError names options.arch);
 * nothing to say where NVRTC does not load (the compile says so) or cannot list its architectures.
 */
function checkArchSupported(arch: string): void {
  let supported: number[];
  try {
    supported = supportedArchs();
  } catch {
    return;
  }
  const [, kind, num] = /^(sm|compute)_(\d+)/.exec(arch)!;
  if (supported.length === 0 || supported.includes(Number(num))) return;
  const list = supported.map((n) => `${kind}_${n}`).join(', ');
  throw new UsageError(`--arch expects an architecture NVRTC ${nvrtcVersion()} supports (${list}), not '${arch}'`);
}

/** Compile options from the command line, on top of `base` (a spec's own). */
export function compileOptionsFrom(v: CompileFlagValues, base: CompileOptions = {}): CompileOptions {
  if (v.arch !== undefined && !isArch(v.arch)) {
    throw new UsageError(`--arch expects an architecture such as sm_90 or compute_90, not '${v.arch}'`);
  }
  if (v.arch !== undefined) checkArchSupported(v.arch);
  const std = oneOf(v.std, '--std', STDS);
  for (const d of v.define ?? []) {
    if (!/^[A-Za-z_]\w*(=.*)?$/s.test(d)) throw new UsageError(`-D expects NAME or NAME=VALUE, not '${d}'`);
  }
  // A spec's defines may be a record; -D adds to them as a list.
  const d = base.defines;
  const baseDefines =
    d === undefined
      ? []
      : Array.isArray(d)
        ? [...(d as readonly string[])]
        : Object.entries(d)
            .filter(([, x]) => x !== false)
            .map(([k, x]) => (x === true ? k : `${k}=${String(x)}`));
  const o: CompileOptions = { ...base };
  if (v.ptx === true) o.target = 'ptx';
  if (v.arch !== undefined && isArch(v.arch)) o.arch = v.arch;
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

/** The timing options given on the command line (commonBenchOptions), as an EvalJob's timing: only those given. */
export function timingFlags(common: ReturnType<typeof commonBenchOptions>): Record<string, unknown> {
  const { mode, preset, timer, bytes, flops } = common;
  return defined({ mode, preset, timer, bytes, flops });
}

/** The timing and check options common to a source file and a spec, from the command line. */
export function commonBenchOptions(v: BenchValues) {
  return {
    mode: oneOf(v.mode, '--mode', MODES),
    preset: oneOf(v.preset, '--preset', PRESET_NAMES),
    timer: oneOf(v.timer, '--timer', TIMERS),
    bytes: v.bytes !== undefined ? parseAmount(v.bytes, '--bytes') : undefined,
    flops: v.flops !== undefined ? parseAmount(v.flops, '--flops') : undefined,
    check: defined({
      atol: v.atol !== undefined ? parseTolerance(v.atol, '--atol') : undefined,
      rtol: v.rtol !== undefined ? parseTolerance(v.rtol, '--rtol') : undefined,
      trials: v.trials !== undefined ? parseCount(v.trials, '--trials', 1) : undefined,
      seed: v.seed !== undefined ? parseCount(v.seed, '--seed', 0) : undefined,
      requireDeterminism: v['require-determinism'] === true ? true : undefined,
    }) as Omit<CheckOptions, 'precision'>,
  };
}

/** --ref / --compare and their -kernel, -grid and -block options as a kernel of the job. */
export function kernelFromFlags(
  source: EvalSource,
  kernel: string,
  grid: string | undefined,
  block: string | undefined,
  prefix: 'ref' | 'compare',
): EvalKernelRef {
  const k: EvalKernelRef = { source, kernel };
  if (grid !== undefined) k.grid = parseDim(grid, `--${prefix}-grid`);
  if (block !== undefined) k.block = parseDim(block, `--${prefix}-block`);
  return k;
}

/**
 * `cudakit bench file.cu --kernel k --grid .. --block .. --arg ..` as an EvalJob: the source and the --ref / --compare
 * files by path (as given, relative to the working directory), every option checked and turned into its job field.
 * Without a reference the job's check is skipped (`withoutReference: 'skip'`), as the command line always did.
 * Argument specs stay the strings given, parsed here for argspec's own messages
 * (`Expected ... but received the argument spec '...'`).
 */
export function jobFromFlags(file: string, v: BenchValues, command = 'bench'): EvalJob {
  const kernel = v.kernel;
  if (kernel === undefined) throw new UsageError(`${command} needs --kernel <name>`);
  if (v.grid === undefined || v.block === undefined) {
    throw new UsageError(`${command} needs --grid and --block, e.g. --grid 4096 --block 256`);
  }
  const grid = parseDim(v.grid, '--grid');
  const block = parseDim(v.block, '--block');
  const smem = v['shared-mem'] !== undefined ? parseCount(v['shared-mem'], '--shared-mem', 0) : 0;
  parseArgSpecs(v.arg ?? []);
  const common = commonBenchOptions(v);
  const job: EvalJob = { source: { file }, kernel, grid, block, args: [...(v.arg ?? [])] };
  if (smem > 0) job.sharedMemBytes = smem;
  if (v.ref !== undefined) {
    job.reference = kernelFromFlags({ file: v.ref }, v['ref-kernel'] ?? kernel, v['ref-grid'], v['ref-block'], 'ref');
  }
  if (v.compare !== undefined) {
    const name = v['compare-kernel'] ?? kernel;
    job.compare = kernelFromFlags({ file: v.compare }, name, v['compare-grid'], v['compare-block'], 'compare');
  }
  const compile = compileOptionsFrom(v);
  if (Object.keys(compile).length > 0) job.compile = compile;
  job.check = { ...common.check, ...(v['no-check'] === true ? { skip: true } : {}), withoutReference: 'skip' };
  const timing = timingFlags(common);
  if (Object.keys(timing).length > 0) job.timing = timing;
  return job;
}
