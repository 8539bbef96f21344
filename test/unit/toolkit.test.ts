// SPDX-License-Identifier: MIT
// lib/core/toolkit.ts: which CUDA toolkit's headers NVRTC gets.
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { searchCudaIncludeDir } from '../../lib/core/toolkit.js';

/** The include directory taken for an NVRTC of major version `major` loaded from `path`. */
const findCudaIncludeDir = (major: number, path: string, env: NodeJS.ProcessEnv): string | undefined =>
  searchCudaIncludeDir({ version: `${major}.0`, path }, env).dir;

describe('searchCudaIncludeDir', () => {
  it('takes a toolkit include dir only when its CUDA major matches NVRTC', () => {
    const toolkit = (version: number): string => {
      const root = mkdtempSync(join(tmpdir(), 'cudakit-inc-'));
      mkdirSync(join(root, 'include'));
      writeFileSync(join(root, 'include', 'cuda_fp16.h'), '// stub');
      writeFileSync(join(root, 'include', 'cuda.h'), `#define CUDA_VERSION ${version}\n`);
      return root;
    };
    const cuda12 = toolkit(12080);
    const cuda11 = toolkit(11080);
    // Both roots come before /usr/local/cuda and /usr, so what this machine has installed does not matter
    const env = { CUDA_PATH: cuda12, CUDA_HOME: cuda11 };
    expect(findCudaIncludeDir(12, '', env)).toBe(join(cuda12, 'include'));
    expect(findCudaIncludeDir(11, '', env)).toBe(join(cuda11, 'include')); // CUDA_PATH's 12.8 is passed over
  });

  it(
    'takes the first root that has the headers, in order, ' + 'and one without cuda.h when the version cannot be told',
    () => {
      const make = (version: number | undefined): string => {
        const root = mkdtempSync(join(tmpdir(), 'cudakit-inc-'));
        mkdirSync(join(root, 'include'));
        writeFileSync(join(root, 'include', 'cuda_fp16.h'), '// stub');
        if (version !== undefined) writeFileSync(join(root, 'include', 'cuda.h'), `#define CUDA_VERSION ${version}\n`);
        return root;
      };
      const a = make(12040);
      const b = make(12080);
      expect(findCudaIncludeDir(12, '', { CUDA_PATH: a, CUDA_HOME: b })).toBe(join(a, 'include'));
      expect(findCudaIncludeDir(12, '', { CUDA_PATH: make(11080), CUDA_HOME: b })).toBe(join(b, 'include'));
      const unknown = make(undefined);
      expect(findCudaIncludeDir(13, '', { CUDA_PATH: unknown })).toBe(join(unknown, 'include'));
      // Beside libnvrtc: <root>/lib64/libnvrtc.so → <root>/include
      expect(findCudaIncludeDir(12, join(b, 'lib64', 'libnvrtc.so.12'), {})).toBe(join(b, 'include'));
    },
  );
});

describe('searchCudaIncludeDir: what was tried', () => {
  const root = (version: number | undefined, headers = true): string => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-inc-'));
    mkdirSync(join(dir, 'include'));
    if (headers) writeFileSync(join(dir, 'include', 'cuda_fp16.h'), '// stub');
    if (version !== undefined) writeFileSync(join(dir, 'include', 'cuda.h'), `#define CUDA_VERSION ${version}\n`);
    return dir;
  };

  it('names every place looked at and why it was passed over, up to the one taken', () => {
    const cuda13 = root(13000);
    const cuda11 = root(11080);
    expect(searchCudaIncludeDir({ version: '11.8', path: '' }, { CUDA_PATH: cuda13, CUDA_HOME: cuda11 })).toEqual({
      dir: join(cuda11, 'include'),
      tried: [
        `${join(cuda13, 'include')} (CUDA_PATH): toolkit 13.0 beside NVRTC 11.8`,
        `${join(cuda11, 'include')} (CUDA_HOME): taken (toolkit 11.8)`,
      ],
    });
    const unknown = root(undefined);
    expect(searchCudaIncludeDir({ version: '12.8', path: '' }, { CUDA_PATH: unknown }).tried).toEqual([
      `${join(unknown, 'include')} (CUDA_PATH): taken (no cuda.h to tell)`,
    ]);
  });

  it('says which directory lacks the headers and which does not exist', () => {
    const cuda13 = root(13000);
    const noHeaders = root(undefined, false);
    const missing = join(noHeaders, 'not-there');
    const nvrtc = join(noHeaders, 'lib', 'libnvrtc.so.11.2');
    const r = searchCudaIncludeDir({ version: '11.8', path: nvrtc }, { CUDA_PATH: cuda13, CUDA_HOME: missing });
    // Then /usr/local/cuda and /usr, as this machine has them.
    expect(r.tried.slice(0, 3)).toEqual([
      `${join(cuda13, 'include')} (CUDA_PATH): toolkit 13.0 beside NVRTC 11.8`,
      `${join(missing, 'include')} (CUDA_HOME): no such directory`,
      `${join(noHeaders, 'include')} (beside libnvrtc): no cuda_fp16.h`,
    ]);
    // The same place twice is looked at once.
    const twice = searchCudaIncludeDir({ version: '11.8', path: '' }, { CUDA_PATH: cuda13, CUDA_HOME: `${cuda13}/` });
    expect(twice.tried.filter((t) => t.startsWith(join(cuda13, 'include')))).toHaveLength(1);
  });
});
