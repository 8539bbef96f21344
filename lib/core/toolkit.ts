// SPDX-License-Identifier: MIT
// Finding the CUDA toolkit's headers (cuda_fp16.h, cooperative_groups.h, cuda/std ...) for NVRTC: a toolkit whose
// major version matches NVRTC's, in $CUDA_PATH, $CUDA_HOME, beside libnvrtc, /usr/local/cuda or /usr. What was
// looked at, and why each place was passed over, is kept for the CompileError of a missing #include.
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { getNative } from './native.js';

/** The first `bytes` of a file: cuda.h is over 1 MB and CUDA_VERSION is defined near its top. */
function readHead(path: string, bytes: number): string {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(bytes);
    return buf.toString('latin1', 0, readSync(fd, buf, 0, bytes, 0));
  } finally {
    closeSync(fd);
  }
}

/** Where the toolkit's headers were looked for. */
export interface IncludeSearch {
  /** The include directory taken, or undefined when none fits. */
  dir: string | undefined;
  /** One line per place looked at, in order: 'the directory: why it was passed over (or taken)'. */
  tried: string[];
}

/** Headers of the CUDA toolkit that kernels include by name (the folders below hold the rest: cuda/std, cub ...). */
const CUDA_HEADERS = new Set([
  'cuda.h',
  'cuda_runtime.h',
  'cuda_runtime_api.h',
  'cuda_awbarrier.h',
  'cuda_awbarrier_primitives.h',
  'cuda_pipeline.h',
  'cuda_pipeline_primitives.h',
  'cuda_texture_types.h',
  'cuda_surface_types.h',
  'cuda_device_runtime_api.h',
  'cooperative_groups.h',
  'mma.h',
  'cuComplex.h',
  'math_constants.h',
  'vector_types.h',
  'vector_functions.h',
  'device_types.h',
  'driver_types.h',
  'library_types.h',
  'builtin_types.h',
  'host_defines.h',
  'device_launch_parameters.h',
  'texture_fetch_functions.h',
  'surface_functions.h',
]);
const CUDA_HEADER_RE =
  /^(?:(?:cuda|cub|thrust|cooperative_groups|nv|crt)\/.+|cuda_(?:fp\d+|bf16)\.h(?:pp)?|curand\w*\.h|sm_\d+_\w+\.h)$/;

/**
 * Whether `name`, as an #include names it, is one of the CUDA toolkit's headers (cuda_fp16.h, cooperative_groups.h,
 * cuda/std/...) rather than one of the program's own: a missing one is then a toolkit to install, not a path to add.
 */
export function isCudaHeader(name: string): boolean {
  return CUDA_HEADERS.has(name) || CUDA_HEADER_RE.test(name);
}

/** CUDA_VERSION 11080 as '11.8'. */
const cudaVersion = (v: number): string => `${Math.floor(v / 1000)}.${(v % 1000) / 10}`;

/**
 * A CUDA toolkit include directory whose version matches NVRTC's major version (cuda_fp16.h from another major
 * release does not compile), searched in $CUDA_PATH, $CUDA_HOME, beside libnvrtc, /usr/local/cuda, /usr; with
 * every place looked at and why it was passed over.
 *
 * @param nvrtc NVRTC's version, 'major.minor', and the path it was loaded from ('' when unknown).
 */
export function searchCudaIncludeDir(
  nvrtc: { version: string; path: string },
  env: ToolkitSearchEnv = process.env,
): IncludeSearch {
  const major = Number(nvrtc.version.split('.')[0]);
  const roots: [root: string | undefined, from: string][] = [
    [env.CUDA_PATH, ' (CUDA_PATH)'],
    [env.CUDA_HOME, ' (CUDA_HOME)'],
    [nvrtc.path ? join(dirname(nvrtc.path), '..') : undefined, ' (beside libnvrtc)'],
    ['/usr/local/cuda', ''],
    ['/usr', ''],
  ];
  const tried: string[] = [];
  const seen = new Set<string>();
  for (const [root, from] of roots) {
    if (!root) continue;
    const dir = join(root, 'include');
    if (seen.has(resolve(dir))) continue;
    seen.add(resolve(dir));
    const where = `${dir}${from}`;
    if (!existsSync(join(dir, 'cuda_fp16.h'))) {
      tried.push(`${where}: ${existsSync(dir) ? 'no cuda_fp16.h' : 'no such directory'}`);
      continue;
    }
    let version: number | undefined;
    try {
      const m = /#define\s+CUDA_VERSION\s+(\d+)/.exec(readHead(join(dir, 'cuda.h'), 64 << 10));
      if (m) version = Number(m[1]);
    } catch {
      // no cuda.h: cannot tell the version; take it
    }
    if (version !== undefined && Math.floor(version / 1000) !== major) {
      tried.push(`${where}: toolkit ${cudaVersion(version)} beside NVRTC ${nvrtc.version}`);
      continue;
    }
    tried.push(`${where}: taken (${version !== undefined ? `toolkit ${cudaVersion(version)}` : 'no cuda.h to tell'})`);
    return { dir, tried };
  }
  return { dir: undefined, tried };
}

let nvrtcMemo: { version: string; path: string } | undefined;

/**
 * NVRTC's version ('major.minor') and the path it was loaded from, read once: NVRTC loads once per process. The
 * include search and every compile cache key use it. Throws CudaError NVRTC_NOT_FOUND when there is none.
 */
export function nvrtcIdentity(): { version: string; path: string } {
  if (nvrtcMemo === undefined) {
    const n = getNative();
    const [major, minor] = n.nvrtcVersion();
    nvrtcMemo = { version: `${major}.${minor}`, path: n.nvrtcStatus().path };
  }
  return nvrtcMemo;
}

/** What the toolkit search reads from the environment. */
export interface ToolkitSearchEnv {
  readonly CUDA_PATH?: string | undefined;
  readonly CUDA_HOME?: string | undefined;
}

let searchEnvMemo: ToolkitSearchEnv | undefined;

/**
 * What the toolkit search reads from the environment, read once per process, as the search itself runs once. The
 * compile cache key holds it (with NVRTC's identity) in place of the directories the search finds, so that a cache
 * hit needs no search, which reads a toolkit's cuda.h: a good share of a disk hit in a new process (bench/RESULTS.md,
 * 'A disk cache hit runs no toolkit search').
 */
export function toolkitSearchEnv(): ToolkitSearchEnv {
  searchEnvMemo ??= Object.freeze({ CUDA_PATH: process.env.CUDA_PATH, CUDA_HOME: process.env.CUDA_HOME });
  return searchEnvMemo;
}

let searchMemo: (IncludeSearch & { dirs: string[]; nvrtc: string }) | undefined;

/**
 * This process's search (done once): the toolkit include directory and, where present, its CCCL directory
 * (cooperative_groups needs cuda/std) for NVRTC's include path ([] when there is none), and what was tried.
 */
export function cudaIncludeSearch(): IncludeSearch & { dirs: string[]; nvrtc: string } {
  if (searchMemo === undefined) {
    const nvrtc = nvrtcIdentity();
    const found = searchCudaIncludeDir(nvrtc, toolkitSearchEnv());
    const dirs = found.dir === undefined ? [] : [found.dir, join(found.dir, 'cccl')].filter((d) => existsSync(d));
    searchMemo = { ...found, dirs, nvrtc: nvrtc.version };
  }
  return searchMemo;
}

/** The toolkit's include directories for NVRTC's include path (cudaIncludeSearch), [] when there is none. */
export function cudaIncludeDirs(): string[] {
  return cudaIncludeSearch().dirs;
}
