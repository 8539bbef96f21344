// SPDX-License-Identifier: MIT
// The Python builds kept between jobs (src/run/python-builds.ts): one key per principal, source, interpreter and GPU;
// regular files and folders kept with their times, never a link or a pipe a job planted; over its limits nothing is
// kept; the least recently used builds go first.
import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { BUILD_FOLDERS, DEFAULT_BUILD_LIMITS, PythonBuilds, buildKey } from '../../src/run/python-builds.js';

// A link put in place of a file between the walk and the copy: lstat answers for the file that was there.
vi.mock('node:fs/promises', async (original) => {
  const fs = await original<typeof import('node:fs/promises')>();
  const lstat: typeof fs.lstat = (async (path: string, ...rest: []) =>
    String(path).endsWith('swapped') ? fs.lstat(fileURLToPath(import.meta.url)) : fs.lstat(path, ...rest)) as never;
  return { ...fs, lstat, default: { ...fs, lstat } };
});

const scratch = mkdtempSync(join(tmpdir(), 'cudakit-builds-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let folders = 0;
const folder = (): string => {
  const dir = join(scratch, String(folders++));
  mkdirSync(dir);
  return dir;
};

/** A job's folder whose torch build holds `files` (name → bytes) and whose Triton cache holds one file. */
function jobWith(files: Record<string, number>): string {
  const dir = folder();
  const ext = join(dir, BUILD_FOLDERS.torch, 'ext');
  mkdirSync(ext, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(ext, name), Buffer.alloc(bytes, 7));
  mkdirSync(join(dir, BUILD_FOLDERS.triton));
  writeFileSync(join(dir, BUILD_FOLDERS.triton, 'kernel.cubin'), 'cubin');
  return dir;
}

describe('Python builds kept between jobs', () => {
  it('keys builds by every part that makes them', () => {
    const base = { scope: 's', python: '/usr/bin/python3', gpu: 'sm_90', type: 'torch_cuda', source: 'x' };
    const keys = new Set([
      buildKey(base),
      ...(['scope', 'python', 'gpu', 'type', 'source'] as const).map((k) => buildKey({ ...base, [k]: `${base[k]}2` })),
      // Parts are delimited: moving a character from one part to the next is another key.
      buildKey({ ...base, scope: 's/', python: 'usr/bin/python3' }),
    ]);
    expect(keys.size).toBe(7);
    expect(buildKey(base)).toBe(buildKey({ ...base }));
  });

  it('keeps files and folders with their times, and no link or pipe; the next job gets them back', async () => {
    const builds = new PythonBuilds(folder());
    const job = jobWith({ 'ext.so': 100, 'main.o': 50 });
    const ext = join(job, BUILD_FOLDERS.torch, 'ext');
    utimesSync(join(ext, 'main.o'), new Date(1_000_000_000_000), new Date(1_000_000_000_000));
    symlinkSync('/etc/passwd', join(ext, 'passwd'));
    execFileSync('mkfifo', [join(ext, 'pipe')]);
    expect(await builds.save('k', job)).toBe(true);
    expect(await builds.save('k', jobWith({ other: 1 }))).toBe(false); // kept already: the first stays
    const next = folder();
    expect(await builds.restore('k', next, undefined)).toBe(true);
    const restored = join(next, BUILD_FOLDERS.torch, 'ext');
    expect(readdirSync(restored).sort()).toEqual(['ext.so', 'main.o']);
    expect(statSync(join(restored, 'main.o')).mtimeMs).toBe(1_000_000_000_000);
    expect(readFileSync(join(next, BUILD_FOLDERS.triton, 'kernel.cubin'), 'utf8')).toBe('cubin');
    expect(await builds.restore('other', folder(), undefined)).toBe(false);
  });

  it('copies no link put in place of a file after the walk (it opens without following one)', async () => {
    const builds = new PythonBuilds(folder());
    const job = jobWith({ 'ext.so': 100 });
    symlinkSync('/etc/passwd', join(job, BUILD_FOLDERS.torch, 'ext', 'swapped'));
    expect(await builds.save('k', job)).toBe(true);
    const next = folder();
    expect(await builds.restore('k', next, undefined)).toBe(true);
    expect(readdirSync(join(next, BUILD_FOLDERS.torch, 'ext'))).toEqual(['ext.so']);
  });

  it('lets a restore wait for the save of its key still under way (the next job may start first)', async () => {
    const builds = new PythonBuilds(folder());
    const saved = builds.save('k', jobWith({ 'ext.so': 100 }));
    const next = folder();
    expect(await builds.restore('k', next, undefined)).toBe(true);
    expect(await saved).toBe(true);
    expect(readdirSync(join(next, BUILD_FOLDERS.torch, 'ext'))).toEqual(['ext.so']);
  });

  it('keeps nothing over its limits, and evicts the least recently used over the total', async () => {
    const limits = { ...DEFAULT_BUILD_LIMITS, entryBytes: 1000, totalBytes: 2500 };
    const builds = new PythonBuilds(folder(), limits);
    expect(await builds.save('big', jobWith({ 'ext.so': 1001 }))).toBe(false);
    expect(await builds.save('files', jobWith(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [i, 1]))))).toBe(
      true,
    );
    const few = new PythonBuilds(folder(), { ...limits, entryFiles: 10 });
    expect(await few.save('files', jobWith(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [i, 1]))))).toBe(
      false,
    );
    for (const key of ['a', 'b']) expect(await builds.save(key, jobWith({ 'ext.so': 900 }))).toBe(true);
    // 'a' is used again: 'files' is now the least recently used, then 'b'.
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(builds.dir, 'files'), old, old);
    utimesSync(join(builds.dir, 'b'), new Date(Date.now() - 30_000), new Date(Date.now() - 30_000));
    expect(await builds.restore('a', folder(), undefined)).toBe(true);
    expect(await builds.save('c', jobWith({ 'ext.so': 900 }))).toBe(true);
    expect(readdirSync(builds.dir).sort()).toEqual(['a', 'c']);
  });
});
