// SPDX-License-Identifier: MIT
// lib/core/toolkit.ts: which CUDA toolkit's headers NVRTC gets.
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findCudaIncludeDir } from '../../lib/core/toolkit.js';

describe('findCudaIncludeDir', () => {
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
