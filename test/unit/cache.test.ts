import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cacheKey, decode, diskGet, diskSet } from '../../lib/core/cache.js';

const entry = {
  target: 'cubin' as const,
  arch: 'sm_90',
  bytes: new Uint8Array([1, 2, 3, 4, 5]),
  log: 'warning',
  loweredNames: { 'f<int>': '_Z1fIiEvv' },
  nvrtcVersion: '12.8',
  options: ['--gpu-architecture=sm_90', '--include-path=/usr/local/cuda/include'],
};

describe('compile cache (disk format)', () => {
  it('round-trips an entry', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-cache-'));
    const key = cacheKey(['src', 'flags']);
    diskSet(dir, key, entry);
    expect(diskGet(dir, key)).toEqual(entry);
    expect(readdirSync(join(dir, key.slice(0, 2))).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('ignores truncated and corrupted entries', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-cache-'));
    const key = cacheKey(['x']);
    diskSet(dir, key, entry);
    const path = join(dir, key.slice(0, 2), `${key}.bin`);
    const good = readFileSync(path);
    writeFileSync(path, good.subarray(0, good.length - 2));
    expect(diskGet(dir, key)).toBeUndefined();
    const flipped = Buffer.from(good);
    flipped[flipped.length - 1]! ^= 0xff;
    writeFileSync(path, flipped);
    expect(diskGet(dir, key)).toBeUndefined();
    expect(decode(Buffer.from('garbage'))).toBeUndefined();
  });

  it('ignores an entry whose flags, lowered names or NVRTC version are missing or not strings', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-cache-'));
    const key = cacheKey(['flags']);
    for (const options of [undefined, 'sm_90', [1]]) {
      diskSet(dir, key, { ...entry, options } as never);
      expect(diskGet(dir, key)).toBeUndefined();
    }
    for (const loweredNames of [undefined, ['_Z1fv'], { 'f<int>': 1 }]) {
      diskSet(dir, key, { ...entry, loweredNames } as never);
      expect(diskGet(dir, key)).toBeUndefined();
    }
    diskSet(dir, key, { ...entry, nvrtcVersion: 12.8 } as never);
    expect(diskGet(dir, key)).toBeUndefined();
    diskSet(dir, key, entry);
    expect(diskGet(dir, key)?.options).toEqual(entry.options);
  });

  it('keys differ when any part differs', () => {
    expect(cacheKey(['a', { h: '1' }])).not.toBe(cacheKey(['a', { h: '2' }]));
    expect(cacheKey(['a'])).toBe(cacheKey(['a']));
  });
});
