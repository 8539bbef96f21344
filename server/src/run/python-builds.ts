// SPDX-License-Identifier: MIT
// What a Python job builds (torch_cuda's extensions, Triton's kernels and launchers), kept for the next job of the
// same principal with the same source, so that such a job pays its cold build once. A build is the job's own code
// running (load_inline, triton.jit), so what it leaves is untrusted: it is kept per principal (one principal's job can
// never plant what another's loads), keyed by everything that makes the build (the source, the interpreter, the GPU),
// read by the server with no link followed and no special file opened, bounded in size, and copied back into the next
// job's private folder before its runner starts. The folder holding the builds is the server's (mode 0700, hidden
// from every sandbox): no job reaches it but through these copies.
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chown, lstat, mkdir, open, readdir, rename, rm, stat, utimes, writeFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Containment } from './containment.js';

/** The folders of a job's private folder that hold what its builds made (the runner's environment points there). */
export const BUILD_FOLDERS = { torch: '.torch_extensions', triton: '.triton' } as const;

/** Limits of the kept builds. */
export interface BuildLimits {
  /** One job's builds larger than this are not kept. */
  entryBytes: number;
  /** Files in one job's builds, at most (more: not kept). */
  entryFiles: number;
  /** All kept builds together: the least recently used go first. */
  totalBytes: number;
}

export const DEFAULT_BUILD_LIMITS: BuildLimits = { entryBytes: 1 << 30, entryFiles: 20_000, totalBytes: 4 * 2 ** 30 };

/** Folders deeper than this are not walked (torch's and Triton's trees are two or three deep). */
const DEPTH_MAX = 16;

/**
 * The key of a job's builds: who may reuse them (`scope`, the principal's hash) and everything that makes them.
 * Any change to the source, the interpreter or the GPU makes another key.
 */
export function buildKey(o: { scope: string; python: string; gpu: string; type: string; source: string }): string {
  const h = createHash('sha256');
  for (const part of [o.scope, o.python, o.gpu, o.type, o.source]) h.update(`${part.length}:${part}`);
  return h.digest('hex');
}

/** A file or folder as the walk found it. */
interface Found {
  path: string; // relative to the walk's root
  kind: 'dir' | 'file';
  mode: number;
  bytes: number;
  mtimeMs: number;
}

/**
 * The regular files and folders under `root` (links, devices, sockets and pipes skipped), or undefined when they are
 * over the limits. Never follows a link: each entry is lstat'ed, and a file is opened later with O_NOFOLLOW.
 */
async function walk(root: string, limits: BuildLimits): Promise<Found[] | undefined> {
  const found: Found[] = [];
  let bytes = 0;
  const visit = async (rel: string, depth: number): Promise<boolean> => {
    if (depth > DEPTH_MAX) return false;
    let names: string[];
    try {
      names = await readdir(join(root, rel));
    } catch {
      return true; // gone or unreadable: nothing to keep of it
    }
    for (const name of names) {
      const path = rel === '' ? name : join(rel, name);
      const s = await lstat(join(root, path)).catch(() => undefined);
      if (s === undefined) continue;
      if (s.isDirectory()) {
        found.push({ path, kind: 'dir', mode: s.mode & 0o777, bytes: 0, mtimeMs: s.mtimeMs });
        if (!(await visit(path, depth + 1))) return false;
      } else if (s.isFile()) {
        bytes += s.size;
        found.push({ path, kind: 'file', mode: s.mode & 0o777, bytes: s.size, mtimeMs: s.mtimeMs });
      }
      if (bytes > limits.entryBytes || found.length > limits.entryFiles) return false;
    }
    return true;
  };
  const s = await lstat(root).catch(() => undefined);
  if (s === undefined || !s.isDirectory()) return [];
  return (await visit('', 0)) ? found : undefined;
}

/** Copies one regular file without following a link or blocking on a pipe put in its place since the walk. */
async function copyFile(from: string, to: string, f: Found, owner: { uid: number; gid: number } | undefined) {
  const source = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const s = await source.stat();
    if (!s.isFile()) return;
    const target = await open(to, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, f.mode & 0o755);
    try {
      const chunk = Buffer.allocUnsafe(1 << 20);
      for (let copied = 0; copied < f.bytes;) {
        const { bytesRead } = await source.read(chunk, 0, chunk.length, copied);
        if (bytesRead === 0) break;
        await target.write(chunk, 0, bytesRead);
        copied += bytesRead;
      }
      if (owner !== undefined) await target.chown(owner.uid, owner.gid);
    } finally {
      await target.close();
    }
    // Kept times: ninja rebuilds what looks older than its inputs.
    await utimes(to, s.atime, s.mtime);
  } finally {
    await source.close();
  }
}

/** Copies the tree `from` into the new folder `to`, as found by walk(); folders' times last (files touch them). */
async function copyTree(from: string, to: string, found: Found[], owner: { uid: number; gid: number } | undefined) {
  await mkdir(to, { mode: 0o700 });
  if (owner !== undefined) await chown(to, owner.uid, owner.gid);
  for (const f of found) {
    const target = join(to, f.path);
    if (f.kind === 'dir') {
      await mkdir(target, { mode: 0o700 });
      if (owner !== undefined) await chown(target, owner.uid, owner.gid);
    } else {
      await copyFile(join(from, f.path), target, f, owner).catch(() => undefined); // gone since the walk: skipped
    }
  }
  for (const f of found.filter((x) => x.kind === 'dir').reverse()) {
    const t = new Date(f.mtimeMs);
    await utimes(join(to, f.path), t, t).catch(() => undefined);
  }
}

/** The server's kept builds: one folder per key, each with a folder per BUILD_FOLDERS entry and its size. */
export class PythonBuilds {
  readonly dir: string;
  #limits: BuildLimits;
  /** Saves under way, by key: a restore of the key waits for its save (the next job may start before it ends). */
  #saving = new Map<string, Promise<boolean>>();

  constructor(dir: string, limits: BuildLimits = DEFAULT_BUILD_LIMITS) {
    this.dir = dir;
    this.#limits = limits;
  }

  /**
   * Copies the builds kept under `key` into the job's private folder `jobDir`, owned by `owner` (the runner's user),
   * before its runner starts. Resolves whether there were any. Never rejects: a build that cannot be copied back is
   * made again.
   */
  async restore(key: string, jobDir: string, owner: { uid: number; gid: number } | undefined): Promise<boolean> {
    const entry = join(this.dir, key);
    try {
      await this.#saving.get(key);
      if (!(await stat(entry)).isDirectory()) return false;
      for (const folder of Object.values(BUILD_FOLDERS)) {
        const from = join(entry, folder);
        const found = await walk(from, this.#limits);
        if (found === undefined || found.length === 0) continue;
        await copyTree(from, join(jobDir, folder), found, owner);
      }
      const now = new Date();
      await utimes(entry, now, now); // recently used: evicted last
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Keeps what the job built under `key`, unless builds are kept under it already or they are over the limits, then
   * evicts the least recently used builds over the total. Called once the job's runner is killed. Never rejects.
   */
  save(key: string, jobDir: string): Promise<boolean> {
    const saving = (this.#saving.get(key) ?? Promise.resolve(false)).then(() => this.#save(key, jobDir));
    this.#saving.set(key, saving);
    void saving.finally(() => {
      if (this.#saving.get(key) === saving) this.#saving.delete(key);
    });
    return saving;
  }

  async #save(key: string, jobDir: string): Promise<boolean> {
    const entry = join(this.dir, key);
    const partial = join(this.dir, `.partial-${randomBytes(8).toString('hex')}`);
    try {
      if (await stat(entry).catch(() => undefined)) return false;
      const trees: [string, Found[]][] = [];
      let bytes = 0;
      for (const folder of Object.values(BUILD_FOLDERS)) {
        const found = await walk(join(jobDir, folder), this.#limits);
        if (found === undefined) return false;
        bytes += found.reduce((sum, f) => sum + f.bytes, 0);
        if (found.length > 0) trees.push([folder, found]);
      }
      if (trees.length === 0 || bytes > this.#limits.entryBytes) return false;
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      await mkdir(partial, { mode: 0o700 });
      for (const [folder, found] of trees)
        await copyTree(join(jobDir, folder), join(partial, folder), found, undefined);
      await writeFile(join(partial, 'bytes'), String(bytes));
      await rename(partial, entry); // another job's save of the same key won: this one's is dropped below
      await this.#evict();
      return true;
    } catch {
      return false;
    } finally {
      await rm(partial, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /** Removes the least recently used builds until all of them fit in the total. */
  async #evict(): Promise<void> {
    const entries = [];
    for (const name of await readdir(this.dir)) {
      if (name.startsWith('.')) continue;
      const s = await stat(join(this.dir, name)).catch(() => undefined);
      const bytes = Number(await readFile(join(this.dir, name, 'bytes'), 'utf8').catch(() => 'NaN'));
      if (s !== undefined) entries.push({ name, usedMs: s.mtimeMs, bytes: Number.isFinite(bytes) ? bytes : 0 });
    }
    let total = entries.reduce((sum, e) => sum + e.bytes, 0);
    for (const e of entries.sort((a, b) => a.usedMs - b.usedMs)) {
      if (total <= this.#limits.totalBytes) break;
      await rm(join(this.dir, e.name), { recursive: true, force: true }).catch(() => undefined);
      total -= e.bytes;
    }
  }
}

const ofContainment = new WeakMap<Containment, PythonBuilds>();

/** The builds kept for the jobs of `containment`: in its root folder, which no sandbox and no worker reaches. */
export function buildsOf(containment: Containment): PythonBuilds {
  let builds = ofContainment.get(containment);
  if (builds === undefined) {
    builds = new PythonBuilds(join(containment.rootDir, 'python-builds'));
    ofContainment.set(containment, builds);
  }
  return builds;
}
