// SPDX-License-Identifier: MIT
// Compile cache: in memory and on disk. The key hashes everything that can change the output (source, every
// in-memory header, flags, name expressions, arch, target, NVRTC's version and path, and where the toolkit's headers
// are looked for: the environment the search reads, not the files it finds, so a hit runs no search; header files on
// disk are not hashed). Each entry keeps the flags it was compiled with. Disk writes are atomic (temp file + rename),
// so concurrent processes are safe; an entry that fails its checksum or does not parse is ignored and rewritten.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface CachedCompile {
  target: 'ptx' | 'cubin';
  arch: string | undefined;
  bytes: Uint8Array;
  log: string;
  loweredNames: Record<string, string>;
  nvrtcVersion: string;
  /** The NVRTC flags it was compiled with (the toolkit's include directories included). */
  options: string[];
}

const FORMAT = 'cudakit-cache-2';
const MAGIC = Buffer.from('CKC2');
const MEMORY_LIMIT = 256;

const memory = new Map<string, CachedCompile>();

/** Where compiled code is kept: $CUDAKIT_CACHE_DIR, else ~/.cache/cudakit. */
export function defaultCacheDir(): string {
  return process.env.CUDAKIT_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'cudakit');
}

export function cacheKey(parts: unknown): string {
  return createHash('sha256').update(FORMAT).update(JSON.stringify(parts)).digest('hex');
}

export function memoryGet(key: string): CachedCompile | undefined {
  const hit = memory.get(key);
  if (hit !== undefined) {
    memory.delete(key); // keep recently used entries last
    memory.set(key, hit);
  }
  return hit;
}

export function memorySet(key: string, entry: CachedCompile): void {
  memory.set(key, entry);
  if (memory.size > MEMORY_LIMIT) memory.delete(memory.keys().next().value as string);
}

/** Empties the in-memory cache (the disk cache is left alone). */
export function clearMemoryCache(): void {
  memory.clear();
}

function entryPath(dir: string, key: string): string {
  return join(dir, key.slice(0, 2), `${key}.bin`);
}

// Layout: 'CKC2' | u32 header length | header JSON (meta + sha256 of the code) | code bytes
function encode(entry: CachedCompile): Buffer {
  const header = Buffer.from(
    JSON.stringify({
      target: entry.target,
      arch: entry.arch ?? null,
      log: entry.log,
      loweredNames: entry.loweredNames,
      nvrtcVersion: entry.nvrtcVersion,
      options: entry.options,
      sha256: createHash('sha256').update(entry.bytes).digest('hex'),
      length: entry.bytes.byteLength,
    }),
  );
  const len = Buffer.alloc(4);
  len.writeUInt32LE(header.length);
  return Buffer.concat([MAGIC, len, header, entry.bytes]);
}

/** Parses an entry (a file's bytes); undefined for anything truncated, corrupt or from another format. */
export function decode(bytes: Uint8Array): CachedCompile | undefined {
  // Uint8Array in the signature: the package's types need no @types/node.
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    if (buf.length < 8 || !buf.subarray(0, 4).equals(MAGIC)) return undefined;
    const headerLength = buf.readUInt32LE(4);
    if (8 + headerLength > buf.length) return undefined;
    const h = JSON.parse(buf.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, unknown>;
    const bytes = new Uint8Array(buf.subarray(8 + headerLength));
    if (bytes.byteLength !== h.length) return undefined;
    if (createHash('sha256').update(bytes).digest('hex') !== h.sha256) return undefined;
    if (h.target !== 'ptx' && h.target !== 'cubin') return undefined;
    const { options, loweredNames, nvrtcVersion } = h;
    if (!Array.isArray(options) || !options.every((o) => typeof o === 'string')) return undefined;
    if (typeof nvrtcVersion !== 'string' || !isStringRecord(loweredNames)) return undefined;
    return {
      target: h.target,
      arch: typeof h.arch === 'string' ? h.arch : undefined,
      bytes,
      log: typeof h.log === 'string' ? h.log : '',
      loweredNames,
      nvrtcVersion,
      options: options as string[],
    };
  } catch {
    return undefined;
  }
}

/** A plain object of strings (an entry's lowered names), as JSON.parse makes it. */
function isStringRecord(v: unknown): v is Record<string, string> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.values(v as Record<string, unknown>).every((s) => typeof s === 'string')
  );
}

export function diskGet(dir: string, key: string): CachedCompile | undefined {
  try {
    return decode(readFileSync(entryPath(dir, key)));
  } catch {
    return undefined; // missing or unreadable: compile
  }
}

export async function diskGetAsync(dir: string, key: string): Promise<CachedCompile | undefined> {
  try {
    return decode(await readFile(entryPath(dir, key)));
  } catch {
    return undefined;
  }
}

/** Writes atomically; a failure (read-only disk, full disk) never fails the compile. */
export function diskSet(dir: string, key: string, entry: CachedCompile): void {
  const path = entryPath(dir, key);
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    mkdirSync(join(dir, key.slice(0, 2)), { recursive: true });
    writeFileSync(tmp, encode(entry));
    renameSync(tmp, path);
  } catch {
    rmSync(tmp, { force: true });
  }
}
