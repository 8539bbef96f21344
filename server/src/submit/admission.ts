// SPDX-License-Identifier: MIT
// What a service refuses that cudakit would accept from a local user: sources that are files of the server, compile
// options that reach its file system, NVRTC flags outside an allow-list, jobs whose declared device memory is over
// the cap, and launches no GPU here could make (a block, grid, shared memory or cluster over the smallest GPU's
// limits: cudakit would only find out at the launch, a worker and a GPU slot later). Checked before validateJob and
// before anything is queued, whichever route the job came by; each problem in the library's format.
import { parseArgSpec, type JobProblem } from 'cudakit';
import { type LaunchFacts, PORTABLE_CLUSTER_BLOCKS } from '../run/protocol.js';
import { ARGS_MAX } from './fields.js';

/** Flags passed as they are. */
const EXACT_FLAGS = new Set([
  '--use_fast_math',
  '-use_fast_math',
  '--extra-device-vectorization',
  '-extra-device-vectorization',
  '--restrict',
  '-restrict',
  '--generate-line-info',
  '-lineinfo',
  '--device-debug',
  '-G',
  '--disable-warnings',
  '-w',
  '--device-as-default-execution-space',
  '-default-device',
  '--Wreorder',
  '-Wreorder',
  '--Wno-deprecated-declarations',
  '-Wno-deprecated-declarations',
  '--display-error-number',
  '-err-no',
  '--no-display-error-number',
  '-no-err-no',
]);

/**
 * Flags with a value. Not here, on purpose: -I / --include-path and --pre-include (read the server's files),
 * --fdevice-time-trace and -time (write them), -rdc / --relocatable-device-code and -dlto (link steps a single
 * kernel does not need).
 */
const FLAG_PREFIXES = [
  '--ftz=',
  '-ftz=',
  '--prec-div=',
  '-prec-div=',
  '--prec-sqrt=',
  '-prec-sqrt=',
  '--fmad=',
  '-fmad=',
  '--maxrregcount=',
  '-maxrregcount=',
  '--std=',
  '-std=',
  '--define-macro=',
  '-D',
  '--undefine-macro=',
  '-U',
  '--diag-suppress=',
  '-diag-suppress=',
  '--diag-error=',
  '-diag-error=',
  '--diag-warn=',
  '-diag-warn=',
  '--dopt=',
  '-dopt=',
  '--gpu-architecture=',
  '-arch=',
  '--Werror=',
  '-Werror=',
];

/**
 * A flag is one argument: whitespace or a control character in one would be another flag ('--std=c++17 -I/etc') or
 * a line of its own ('-DX=1\n#include ...') to whatever splits or writes it.
 */
const ONE_ARGUMENT = /^[^\s\p{Cc}]+$/u;

export function isAllowedFlag(flag: string): boolean {
  if (!ONE_ARGUMENT.test(flag)) return false;
  return EXACT_FLAGS.has(flag) || FLAG_PREFIXES.some((p) => flag.startsWith(p) && flag.length > p.length);
}

/** A line break or another control character: what a name or macro NVRTC writes into a file of its own must lack. */
const CONTROL = /\p{Cc}/u;

export interface AdmissionLimits {
  /** Device bytes the job's buffers may declare in all (the check and timing allocate copies on top). */
  maxDeviceBytes: number;
  /** Where maxDeviceBytes comes from, for the message that refuses a job over it. */
  maxDeviceBytesReason?: string;
  /** What one launch may ask for. Default DEFAULT_LAUNCH_LIMITS (CUDA's own, no GPU known). */
  launch?: LaunchLimits;
}

/** One launch limit, and where it comes from for the message that refuses a job over it. */
export interface SourcedLimit {
  max: number;
  /** 'the limit of NVIDIA H200 (GPU-…)', or why it is CUDA's own. */
  reason: string;
}

/** The launch limits a job is held to: each the smallest GPU's, and which GPU that is. */
export interface LaunchLimits {
  maxThreadsPerBlock: SourcedLimit;
  /** Along x, y and z. */
  maxBlockDim: readonly [SourcedLimit, SourcedLimit, SourcedLimit];
  /** Along x, y and z. */
  maxGridDim: readonly [SourcedLimit, SourcedLimit, SourcedLimit];
  /** Dynamic shared memory per block, bytes: the opt-in maximum (cudakit opts a kernel in when a launch needs it). */
  maxSharedMemoryBytes: SourcedLimit;
  /** Blocks per thread block cluster; 0: the GPU launches no clusters. */
  maxClusterBlocks: SourcedLimit;
}

const UNKNOWN_GPUS = 'the GPUs here are not known';

/**
 * CUDA's architectural limits, where no GPU's are known: those of every GPU since sm_30 for blocks and grids, the
 * largest opt-in shared memory of any architecture (227 KiB: sm_90, sm_100) and the portable cluster size. A GPU that
 * allows less is held to its own once it is known; a job the GPU cannot launch still fails there.
 */
export const DEFAULT_LAUNCH_LIMITS: LaunchLimits = (() => {
  const cuda = (max: number): SourcedLimit => ({ max, reason: `CUDA's limit on every GPU: ${UNKNOWN_GPUS}` });
  return {
    maxThreadsPerBlock: cuda(1024),
    maxBlockDim: [cuda(1024), cuda(1024), cuda(64)],
    maxGridDim: [cuda(2 ** 31 - 1), cuda(65_535), cuda(65_535)],
    maxSharedMemoryBytes: { max: 227 * 1024, reason: `the most any GPU allows (sm_90, sm_100): ${UNKNOWN_GPUS}` },
    maxClusterBlocks: { max: PORTABLE_CLUSTER_BLOCKS, reason: `CUDA's portable cluster size: ${UNKNOWN_GPUS}` },
  };
})();

/** The cap where no GPU's memory is known to go by. */
export const DEFAULT_ADMISSION_LIMITS: AdmissionLimits = {
  maxDeviceBytes: 8 * 2 ** 30,
  maxDeviceBytesReason: "the default limit: the GPUs' memory is not known here",
  launch: DEFAULT_LAUNCH_LIMITS,
};

/**
 * A job may declare this share of its GPU's memory: the check allocates a reference copy of every output and guard
 * zones on top, and two jobs on one GPU must still fit.
 */
export const DEVICE_MEMORY_DIVISOR = 4;

/** A GPU's memory as the probe reports it. */
export interface GpuMemory {
  uuid: string;
  name: string;
  totalMemoryBytes: number;
}

/** The cap relative to the GPUs: a quarter of the smallest one's memory, naming it; undefined without any. */
export function gpuAdmissionLimits(gpus: readonly GpuMemory[]): AdmissionLimits | undefined {
  let smallest: GpuMemory | undefined;
  for (const g of gpus) {
    if (g.totalMemoryBytes > 0 && (smallest === undefined || g.totalMemoryBytes < smallest.totalMemoryBytes)) {
      smallest = g;
    }
  }
  if (smallest === undefined) return undefined;
  return {
    maxDeviceBytes: Math.floor(smallest.totalMemoryBytes / DEVICE_MEMORY_DIVISOR),
    maxDeviceBytesReason:
      `the limit is a quarter of the memory of the smallest GPU here: ${smallest.name} (${smallest.uuid}), ` +
      `${smallest.totalMemoryBytes} bytes`,
  };
}

/** A GPU's launch limits as the probe reports them (absent where an agent of an older version announced it). */
export interface GpuLaunch {
  uuid: string;
  name: string;
  launch?: LaunchFacts | undefined;
}

/**
 * The launch limits relative to the GPUs: each limit the smallest any GPU here has (a job may run on any of them),
 * naming that GPU; CUDA's own (DEFAULT_LAUNCH_LIMITS) where no GPU reports its limits.
 */
export function gpuLaunchLimits(gpus: readonly GpuLaunch[]): LaunchLimits {
  const known = gpus.filter((g): g is GpuLaunch & { launch: LaunchFacts } => g.launch !== undefined);
  // A limit of 0 is a probe that could not read it, except for clusters (0: none).
  const smallest = (fallback: SourcedLimit, of: (l: LaunchFacts) => number, zeroMeansNone = false): SourcedLimit => {
    let best: SourcedLimit | undefined;
    for (const g of known) {
      const max = of(g.launch);
      if (!Number.isFinite(max) || max < 0 || (max === 0 && !zeroMeansNone)) continue;
      if (best === undefined || max < best.max) best = { max, reason: `the limit of ${g.name} (${g.uuid})` };
    }
    return best ?? fallback;
  };
  const d = DEFAULT_LAUNCH_LIMITS;
  return {
    maxThreadsPerBlock: smallest(d.maxThreadsPerBlock, (l) => l.maxThreadsPerBlock),
    maxBlockDim: [0, 1, 2].map((i) => smallest(d.maxBlockDim[i]!, (l) => l.maxBlockDim[i]!)) as [
      SourcedLimit,
      SourcedLimit,
      SourcedLimit,
    ],
    maxGridDim: [0, 1, 2].map((i) => smallest(d.maxGridDim[i]!, (l) => l.maxGridDim[i]!)) as [
      SourcedLimit,
      SourcedLimit,
      SourcedLimit,
    ],
    maxSharedMemoryBytes: smallest(d.maxSharedMemoryBytes, (l) => l.maxSharedMemoryPerBlockOptinBytes),
    maxClusterBlocks: smallest(d.maxClusterBlocks, (l) => l.maxClusterBlocks, true),
  };
}

const AXES = ['x', 'y', 'z'] as const;

/** A Dim3 as [x, y, z] (1 where left out); undefined when it is not one (validateJob words that). */
function dim3Of(v: unknown): [number, number, number] | undefined {
  const d = typeof v === 'number' ? [v] : v;
  if (!Array.isArray(d) || d.length < 1 || d.length > 3 || !d.every((x) => typeof x === 'number')) return undefined;
  const [x = 1, y = 1, z = 1] = d as number[];
  return [x, y, z];
}

/** What `limits` refuses in one kernel's launch (`path`: 'job', 'job.reference' ...): each limit it is over. */
export function launchProblems(path: string, k: Record<string, unknown>, limits: LaunchLimits): JobProblem[] {
  const problems: JobProblem[] = [];
  const over = (at: string, limit: SourcedLimit, what: string, received: number): void => {
    if (!(received > limit.max)) return;
    const message = `Expected at most ${limit.max} ${what} for ${at} but received ${received} (${limit.reason})`;
    problems.push({ path: at, message, type: 'RangeError' });
  };
  const block = dim3Of(k.block);
  if (block !== undefined) {
    // The product only of sizes validateJob accepts (a 0 or a fraction is its problem, and no count of threads).
    if (block.every((b) => Number.isSafeInteger(b) && b >= 1)) {
      over(`${path}.block`, limits.maxThreadsPerBlock, 'threads per block', block[0] * block[1] * block[2]);
    }
    AXES.forEach((axis, i) => over(`${path}.block`, limits.maxBlockDim[i]!, `threads along ${axis}`, block[i]!));
  }
  const grid = dim3Of(k.grid);
  if (grid !== undefined) {
    AXES.forEach((axis, i) => over(`${path}.grid`, limits.maxGridDim[i]!, `blocks along ${axis}`, grid[i]!));
  }
  if (typeof k.sharedMemBytes === 'number') {
    const what = 'bytes of dynamic shared memory per block';
    over(`${path}.sharedMemBytes`, limits.maxSharedMemoryBytes, what, k.sharedMemBytes);
  }
  const cluster = dim3Of(k.clusterDim);
  if (cluster !== undefined && cluster.every((c) => Number.isSafeInteger(c) && c >= 1)) {
    const blocks = cluster[0] * cluster[1] * cluster[2];
    const limit = limits.maxClusterBlocks;
    if (limit.max === 0) {
      const message =
        `Expected no thread block cluster for ${path}.clusterDim but received one of ${blocks} blocks ` +
        `(${limit.reason}, which launches no clusters: they need sm_90 or later)`;
      problems.push({ path: `${path}.clusterDim`, message, type: 'RangeError' });
    } else {
      over(`${path}.clusterDim`, limit, 'blocks per cluster', blocks);
    }
  }
  return problems;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function shown(v: unknown): string {
  if (typeof v === 'string') return `'${v.length > 60 ? `${v.slice(0, 60)}…` : v}' of type string`;
  if (isObject(v)) return `{ ${Object.keys(v).slice(0, 4).join(', ')} }`;
  return `${String(v)} of type ${typeof v}`;
}

/** Source and headers of all the job's kernels together. */
export const MAX_SOURCE_CHARS = 4 * 2 ** 20;

/** Nesting a job needs (a struct signature, a reference's args) is shallow; recursion over more could overflow. */
export const MAX_NESTING_DEPTH = 32;

/** Whether `value` nests objects and arrays deeper than `limit` (iterative: no stack to overflow). */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= limit) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * The job's kernels besides the candidate, by path: the reference kernel, the compare baseline and the precise
 * reference (check.precision.reference), where the job has them.
 */
function otherKernels(job: Record<string, unknown>): [string, Record<string, unknown>][] {
  const precision = isObject(job.check) && isObject(job.check.precision) ? job.check.precision : {};
  const all: [string, unknown][] = [
    ['job.reference', job.reference],
    ['job.compare', job.compare],
    ['job.check.precision.reference', precision.reference],
  ];
  return all.filter((e): e is [string, Record<string, unknown>] => isObject(e[1]) && !('expected' in e[1]));
}

/**
 * Everything the service refuses in `job` (the body without the service's fields); [] when nothing. `pythonCandidate`:
 * the job's source is a Python candidate's (the compatible routes, with --python), which NVRTC never reads: its
 * `#` lines are Python's comments, or CUDA that its contained runner builds, and are not scanned for #include.
 */
export function admissionProblems(
  job: Record<string, unknown>,
  limits: AdmissionLimits,
  o: { pythonCandidate?: boolean } = {},
): JobProblem[] {
  const problems: JobProblem[] = [];
  if (nestedDeeperThan(job, MAX_NESTING_DEPTH)) {
    const message = `Expected a job nested at most ${MAX_NESTING_DEPTH} levels deep for job but received a deeper one`;
    return [{ path: 'job', message, type: 'RangeError' }];
  }
  // The job's other kernels, each checked as the candidate is: any of them is compiled and run.
  const others = otherKernels(job);
  // All source text (the kernels' and their headers'), before it is scanned.
  const sourceChars = [job, ...others.map(([, k]) => k)]
    .filter(isObject)
    .flatMap((k) => [
      isObject(k.source) ? k.source.text : k.source,
      ...(isObject(k.headers) ? Object.values(k.headers) : []),
    ])
    .reduce((n: number, t) => n + (typeof t === 'string' ? t.length : 0), 0);
  if (sourceChars > MAX_SOURCE_CHARS) {
    const message =
      `Expected at most ${MAX_SOURCE_CHARS} characters of source and headers in all for job ` +
      `but received ${sourceChars}`;
    return [{ path: 'job', message, type: 'RangeError' }];
  }
  const type = (path: string, expected: string, value: unknown, why = ''): void => {
    const message = `Expected ${expected} for ${path} but received ${shown(value)}${why}`;
    problems.push({ path, message, type: 'TypeError' });
  };
  const includes = (path: string, text: unknown): void => {
    const bad = typeof text === 'string' ? unsafeInclude(text) : undefined;
    if (bad !== undefined) {
      const expected = "#include of in-memory headers and CUDA's own only (a relative name, no '..', no macro)";
      type(path, expected, bad, ' (NVRTC would read it from the server)');
    }
  };
  const kernel = (path: string, k: Record<string, unknown>): void => {
    const s = k.source;
    if (s !== undefined && typeof s !== 'string' && !(isObject(s) && typeof s.text === 'string' && !('file' in s))) {
      type(
        `${path}.source`,
        'source text (a string or { text, name })',
        s,
        ' (the server does not read its own files)',
      );
    }
    if (!(o.pythonCandidate === true && path === 'job')) includes(`${path}.source`, isObject(s) ? s.text : s);
    // NVRTC writes a kernel's name (cudakit asks for its lowered name) and each name expression as a line of a file
    // of its own: a line break in one starts a directive of the client's, an #include of any host file.
    const oneLine = (at: string, v: unknown): void => {
      if (typeof v === 'string' && CONTROL.test(v)) {
        type(at, 'a name on one line (no line break or control character)', v, ' (NVRTC would read it as a line)');
      }
    };
    oneLine(`${path}.kernel`, k.kernel);
    if (isObject(k.compile) && Array.isArray(k.compile.nameExpressions)) {
      k.compile.nameExpressions.forEach((e: unknown, i) => oneLine(`${path}.compile.nameExpressions[${i}]`, e));
    }
    if (isObject(k.headers)) {
      for (const [name, text] of Object.entries(k.headers)) includes(`${path}.headers['${name}']`, text);
    }
    const c = k.compile;
    if (isObject(c)) {
      for (const key of ['includePaths', 'cache'] as const) {
        if (c[key] !== undefined) {
          type(`${path}.compile.${key}`, 'nothing', c[key], ' (the server decides where files are read and written)');
        }
      }
      if (Array.isArray(c.extraFlags)) {
        c.extraFlags.forEach((f: unknown, i) => {
          if (typeof f === 'string' && !isAllowedFlag(f)) {
            type(`${path}.compile.extraFlags[${i}]`, 'an allowed NVRTC flag (-D, --use_fast_math, --ftz= ...)', f);
          }
        });
      }
      // A macro is one line too: '-DX=1\n#include ...' is NVRTC's to refuse, and refused here first.
      const defines = Array.isArray(c.defines)
        ? c.defines.map((d: unknown, i): [string, unknown] => [`[${i}]`, d])
        : isObject(c.defines)
          ? Object.entries(c.defines).map(([name, v]): [string, unknown] => [`.${name}`, `${name}=${String(v)}`])
          : [];
      for (const [at, d] of defines) {
        if (typeof d === 'string' && CONTROL.test(d)) {
          type(`${path}.compile.defines${at}`, 'a macro on one line (no line break or control character)', d);
        }
      }
    }
  };
  const launch = limits.launch ?? DEFAULT_LAUNCH_LIMITS;
  kernel('job', job);
  problems.push(...launchProblems('job', job, launch));
  for (const [path, r] of others) {
    kernel(path, r);
    // Its own grid, block and shared memory (a reference has no clusterDim: it runs with the job's).
    problems.push(...launchProblems(path, { ...r, clusterDim: undefined }, launch));
    if (Array.isArray(r.args) && r.args.length > ARGS_MAX) {
      problems.push({
        path: `${path}.args`,
        message: `Expected at most ${ARGS_MAX} arguments for ${path}.args but received ${r.args.length}`,
        type: 'RangeError',
      });
    }
  }
  // A reference kernel's own buffers are allocated while the candidate's are held (one reference at a time).
  const bytes = declaredDeviceBytes(job.args) + Math.max(0, ...others.map(([, r]) => declaredDeviceBytes(r.args)));
  if (bytes > limits.maxDeviceBytes) {
    problems.push({
      path: 'job.args',
      message:
        `Expected buffers of at most ${limits.maxDeviceBytes} bytes in all for job.args ` +
        `but received ${bytes} bytes` +
        (limits.maxDeviceBytesReason === undefined ? '' : ` (${limits.maxDeviceBytesReason})`),
      type: 'RangeError',
    });
  }
  return problems;
}

/**
 * The source as the preprocessor sees its directives (translation phases 1 to 3): trigraphs replaced, lines spliced,
 * comments turned into a space. String, character and raw string literals are kept whole, so a quote or a comment
 * marker inside one cannot hide a directive after it (a raw string's own lines become one line: no directives).
 */
function preprocessed(source: string): string {
  const text = source
    .replaceAll('??=', '#')
    .replaceAll('??/', '\\')
    .replace(/\\\r?\n/g, '');
  const parts: string[] = [];
  const special = /\/\/|\/\*|"|'/g;
  let i = 0;
  for (let m = special.exec(text); m !== null; m = special.exec(text)) {
    const at = m.index;
    parts.push(text.slice(i, at));
    let end: number;
    if (m[0] === '//') {
      end = text.indexOf('\n', at);
      end = end < 0 ? text.length : end;
    } else if (m[0] === '/*') {
      end = text.indexOf('*/', at + 2);
      end = end < 0 ? text.length : end + 2;
      parts.push(' ');
    } else if (
      m[0] === '"' &&
      /R$/.test(text.slice(Math.max(0, at - 3), at)) &&
      /^"[^\s()\\]{0,16}\(/.test(text.slice(at, at + 19))
    ) {
      // R"delim( ... )delim"
      const delimiter = text.slice(at + 1, text.indexOf('(', at));
      end = text.indexOf(`)${delimiter}"`, at);
      end = end < 0 ? text.length : end + delimiter.length + 2;
      // Its lines are not lines of the source: none of them can be a directive.
      parts.push(text.slice(at, end).replace(/\n/g, ' '));
    } else {
      end = at + 1;
      while (end < text.length && text[end] !== m[0] && text[end] !== '\n') end += text[end] === '\\' ? 2 : 1;
      end = Math.min(text.length, end + 1);
      parts.push(text.slice(at, end));
    }
    i = end;
    special.lastIndex = end;
  }
  parts.push(text.slice(i));
  return parts.join('');
}

/**
 * The first #include (or __has_include) that could reach the server's file system, or undefined: an absolute name,
 * one with '..' or a backslash, or a computed one (a macro can spell any path). The digraph %: counts as #; #import
 * and #embed (and __has_embed) count as #include, though NVRTC 11.8 and 13.0 know neither: a later one may.
 * Conservative: an odd but harmless include may be refused (one inside #if 0, say); a harmful one may not pass.
 */
export function unsafeInclude(source: string): string | undefined {
  const text = preprocessed(source);
  const found: [string, string][] = [];
  const directive = /^[ \t]*(?:#|%:)[ \t]*(?:include(?:_next)?|import|embed)\b(.*)$/gm;
  for (const m of text.matchAll(directive)) found.push([m[0], m[1]!]);
  for (const m of text.matchAll(/__has_(?:include(?:_next)?|embed)\s*\(([^)]*)\)/g)) found.push([m[0], m[1]!]);
  for (const [whole, argument] of found) {
    const name = /^(?:<([^>]*)>|"([^"]*)")/.exec(argument.trim());
    const file = name?.[1] ?? name?.[2];
    if (file === undefined || file.startsWith('/') || file.startsWith('~') || /\.\.|\\/.test(file)) {
      return whole.trim();
    }
  }
  return undefined;
}

/** Bytes of an element type: the width in its name (f32, bf16, u8 ...). */
function dtypeBytes(dtype: unknown): number {
  const bits = typeof dtype === 'string' ? /(\d+)$/.exec(dtype)?.[1] : undefined;
  return bits === undefined ? 0 : Number(bits) / 8;
}

/** The device bytes the job's buffers declare; a malformed argument counts 0 (validateJob reports it). */
export function declaredDeviceBytes(args: unknown): number {
  if (!Array.isArray(args)) return 0;
  let total = 0;
  for (const a of args) {
    if (typeof a === 'string') {
      try {
        const spec = parseArgSpec(a);
        if (spec.kind === 'buffer') total += spec.length * dtypeBytes(spec.dtype);
      } catch {
        // validateJob words this one
      }
    } else if (isObject(a) && a.kind === 'buffer') {
      const shape = Array.isArray(a.shape) && a.shape.every((d) => typeof d === 'number') ? a.shape : undefined;
      const length = typeof a.length === 'number' ? a.length : shape?.reduce((x: number, y: number) => x * y, 1);
      if (typeof length === 'number' && Number.isFinite(length) && length > 0) total += length * dtypeBytes(a.dtype);
    }
  }
  return total;
}
