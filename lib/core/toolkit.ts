// SPDX-License-Identifier: MIT
// Finding the CUDA toolkit's headers (cuda_fp16.h, cooperative_groups.h, cuda/std ...) for NVRTC: a toolkit whose
// major version matches NVRTC's, in $CUDA_PATH, $CUDA_HOME, beside libnvrtc, /usr/local/cuda or /usr.
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { dirname, join } from 'node:path';
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

/**
 * A CUDA toolkit include directory whose version matches NVRTC's major version (cuda_fp16.h from another major
 * release does not compile), searched in $CUDA_PATH, $CUDA_HOME, beside libnvrtc, /usr/local/cuda, /usr.
 */
export function findCudaIncludeDir(nvrtcMajor: number, nvrtcPath: string, env = process.env): string | undefined {
  const roots = [
    env.CUDA_PATH,
    env.CUDA_HOME,
    nvrtcPath ? join(dirname(nvrtcPath), '..') : undefined,
    '/usr/local/cuda',
    '/usr',
  ];
  for (const root of roots) {
    if (!root) continue;
    const dir = join(root, 'include');
    if (!existsSync(join(dir, 'cuda_fp16.h'))) continue;
    try {
      const m = /#define\s+CUDA_VERSION\s+(\d+)/.exec(readHead(join(dir, 'cuda.h'), 64 << 10));
      if (m && Math.floor(Number(m[1]) / 1000) !== nvrtcMajor) continue;
    } catch {
      // no cuda.h: cannot tell the version; take it
    }
    return dir;
  }
  return undefined;
}

let includeDirsMemo: string[] | undefined;

/**
 * The toolkit include directory and, where present, its CCCL directory (cooperative_groups needs cuda/std), for
 * NVRTC's include path; found once per process, [] when there is none.
 */
export function cudaIncludeDirs(): string[] {
  if (includeDirsMemo === undefined) {
    const n = getNative();
    const [major] = n.nvrtcVersion();
    const dir = findCudaIncludeDir(major, n.nvrtcStatus().path);
    includeDirsMemo = dir === undefined ? [] : [dir, join(dir, 'cccl')].filter((d) => existsSync(d));
  }
  return includeDirsMemo;
}
