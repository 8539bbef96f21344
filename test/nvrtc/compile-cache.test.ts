// SPDX-License-Identifier: MIT
// The compile cache's key holds what the CUDA toolkit search reads (CUDA_PATH, CUDA_HOME, NVRTC's identity) in place
// of the directories it finds: a hit runs no search and reports the flags of its compile, and a process whose search
// would read another CUDA_PATH gets another key. CUDA_PATH points at a stub toolkit of NVRTC's major release before
// this process's first compile (the search and its environment are read once per process; vitest runs each file in
// its own).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, it, vi } from 'vitest';
import { type Arch, Program, clearMemoryCache, nvrtcVersion } from '../../lib/index.js';
import { describeNvrtc } from '../helpers.js';

const searches = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../lib/core/toolkit.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/core/toolkit.js')>();
  return {
    ...real,
    cudaIncludeDirs: () => {
      searches.count++;
      return real.cudaIncludeDirs();
    },
  };
});

const arch: Arch = 'sm_80';
const SOURCE = 'extern "C" __global__ void k(float* x) { x[0] = 2; }\n';

/** A toolkit NVRTC would take: cuda_fp16.h, and cuda.h of NVRTC's major release. */
function stubToolkit(): string {
  const root = mkdtempSync(join(tmpdir(), 'cudakit-toolkit-'));
  mkdirSync(join(root, 'include'));
  writeFileSync(join(root, 'include', 'cuda_fp16.h'), '// stub\n');
  const major = Number(nvrtcVersion().split('.')[0]);
  writeFileSync(join(root, 'include', 'cuda.h'), `#define CUDA_VERSION ${major * 1000}\n`);
  return root;
}

/** Compiles SOURCE in a new process with this CUDA_PATH and cache folder: where it came from, and its flags. */
function compileInChild(cudaPath: string, dir: string): { cached: string | null; options: string[] } {
  const options = JSON.stringify({ target: 'ptx', arch, cache: { dir } });
  const child = `
    import { Program } from './lib/index.ts';
    const code = new Program(${JSON.stringify(SOURCE)}).compile(${options});
    console.log(JSON.stringify({ cached: code.cached ?? null, options: code.options }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', child], {
    encoding: 'utf8',
    env: { ...process.env, CUDA_PATH: cudaPath },
  });
  if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as { cached: string | null; options: string[] };
}

describeNvrtc('compile cache and the CUDA toolkit search', () => {
  let toolkit = '';

  beforeAll(() => {
    toolkit = stubToolkit();
    vi.stubEnv('CUDA_PATH', toolkit);
    return () => vi.unstubAllEnvs();
  });

  it('runs no toolkit search on a hit, which reports the flags of its compile', () => {
    const cache = { dir: mkdtempSync(join(tmpdir(), 'cudakit-ccache-')) };
    const compiled = new Program(SOURCE).compile({ target: 'ptx', arch, cache });
    expect(compiled.cached).toBeUndefined();
    expect(compiled.options).toContain(`--include-path=${join(toolkit, 'include')}`);
    const searched = searches.count;
    expect(searched).toBeGreaterThan(0);
    expect(new Program(SOURCE).compile({ target: 'ptx', arch, cache }).cached).toBe('memory');
    clearMemoryCache();
    const fromDisk = new Program(SOURCE).compile({ target: 'ptx', arch, cache });
    expect(fromDisk.cached).toBe('disk');
    expect(fromDisk.options).toEqual(compiled.options);
    expect(fromDisk.ptx).toBe(compiled.ptx);
    expect(searches.count).toBe(searched);
    // Without the toolkit's headers: another key, and no search.
    const without = new Program(SOURCE).compile({ target: 'ptx', arch, cache, cudaIncludes: false });
    expect(without.cached).toBeUndefined();
    expect(without.options.some((o) => o.includes(toolkit))).toBe(false);
    expect(searches.count).toBe(searched);
  });

  it('compiles with the options as they were at the call, when compileAsync waits for the disk first', async () => {
    const cache = { dir: mkdtempSync(join(tmpdir(), 'cudakit-ccache-')) };
    const source = 'extern "C" __global__ void k(int* x) { x[0] = N; }\n';
    const options = { target: 'ptx' as const, arch, cache, defines: { N: 1 } };
    const pending = new Program(source).compileAsync(options);
    options.defines.N = 2; // while compileAsync reads the disk
    const code = await pending;
    expect(code.options).toContain('-DN=1');
    expect(code.ptx).toMatch(/mov\.u32\s+%r\d+,\s*1;/);
    clearMemoryCache();
    const again = new Program(source).compile({ target: 'ptx', arch, cache, defines: { N: 1 } });
    expect(again.cached).toBe('disk');
    expect(again.ptx).toBe(code.ptx);
  });

  it('gives a process that reads another CUDA_PATH another key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-ccache-'));
    const other = stubToolkit();
    const first = compileInChild(toolkit, dir);
    expect(first.cached).toBeNull();
    expect(first.options).toContain(`--include-path=${join(toolkit, 'include')}`);
    expect(compileInChild(toolkit, dir)).toEqual({ cached: 'disk', options: first.options });
    const elsewhere = compileInChild(other, dir);
    expect(elsewhere.cached).toBeNull();
    expect(elsewhere.options).toContain(`--include-path=${join(other, 'include')}`);
  });
});
