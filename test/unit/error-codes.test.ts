// SPDX-License-Identifier: MIT
// The rule for error codes (docs/errors.md): every code cudakit can raise follows it in `codeNext`, `code` keeps the
// old spelling until the switch, and the table of docs/errors.md is CODE_RENAMES. The codes are found in the sources
// (lib/ and native/), so a new code that breaks the rule, or a rename the map lacks, fails here.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { codedError, errorFromNative, withCodeNext } from '../../lib/core/errors.js';
import { disposedError } from '../../lib/core/lifetime.js';
import {
  AbortError,
  CODE_RENAMES,
  CudaError,
  InvalidJobError,
  TimeoutError,
  nextCode,
  validateJob,
} from '../../lib/index.js';
import { filesUnder, root } from './imports.js';

/** CUDA's and NVRTC's own names, Node's ABORT_ERR, and ERR_CUDAKIT_* for the library's own. */
const RULE = /^(?:CUDA_ERROR_[A-Z0-9_]+|NVRTC_ERROR_[A-Z0-9_]+|ABORT_ERR|ERR_CUDAKIT_[A-Z0-9_]+)$/;
const CODE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/;

const read = (path: string): string => readFileSync(join(root, path), 'utf8');

/** The codes lib/ gives its errors: `code = '...'`, `code: '...'` and the code argument of codedError(). */
function libCodes(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of filesUnder('lib')) {
    const text = read(file);
    for (const m of text.matchAll(/\bcode\s*[=:]\s*'([A-Z][A-Z0-9_]+)'/g)) found.set(m[1]!, file);
    for (const m of text.matchAll(/\bcodedError\(/g)) {
      // The call's arguments, up to the end of its statement: the code is its one literal in capitals.
      const call = text.slice(m.index, text.indexOf(');', m.index));
      for (const c of call.matchAll(/'([A-Z][A-Z0-9_]+)'/g)) if (CODE.test(c[1]!)) found.set(c[1]!, file);
    }
    // The CUDA and NVRTC names it names (remedies, sticky codes, comparisons): they keep their spelling.
    for (const m of text.matchAll(/'((?:CUDA|NVRTC)_ERROR_[A-Z0-9_]+)'/g)) found.set(m[1]!, file);
  }
  return found;
}

/** The codes native/ raises itself: loader codes, and the plain Errors it sets a code on. */
function nativeCodes(): Map<string, string> {
  const found = new Map<string, string>();
  for (const name of readdirSync(join(root, 'native')).filter((n) => n.endsWith('.cc'))) {
    const file = `native/${name}`;
    const text = read(file);
    const patterns = [
      /\bst\.code = "([A-Z_]+)"/g,
      /\.Set\("code", "([A-Z_]+)"\)/g,
      /\bBuild\(env, "\w+", "([A-Z_]+)"/g,
    ];
    for (const p of patterns) for (const m of text.matchAll(p)) found.set(m[1]!, file);
  }
  // A status code only: ThrowLoader raises the cuInit CUresult in its place (CUDA_ERROR_NO_DEVICE ...).
  expect(read('native/errors.cc')).toContain('if (st.code == "CUDA_INIT_FAILED") ThrowCuda(env, "cuInit"');
  found.delete('CUDA_INIT_FAILED');
  return found;
}

describe('error codes', () => {
  const codes = new Map([...libCodes(), ...nativeCodes()]);

  it('finds the codes in the sources', () => {
    for (const c of ['ADDON_NOT_LOADED', 'CUDA_DRIVER_NOT_FOUND', 'ERR_DISPOSED', 'CUDAKIT_CUPTI', 'ABORT_ERR']) {
      expect(codes.has(c), c).toBe(true);
    }
    expect(codes.has('CUDA_ERROR_OUT_OF_MEMORY')).toBe(true);
  });

  it('every code the library raises follows the rule in codeNext', () => {
    const broken = [...codes].filter(([c]) => !RULE.test(nextCode(c))).map(([c, file]) => `${c} (${file})`);
    expect(broken).toEqual([]);
  });

  it('CODE_RENAMES maps old spellings to the rule, and only codes the library raises', () => {
    for (const [old, next] of Object.entries(CODE_RENAMES)) {
      expect(RULE.test(old), old).toBe(false);
      expect(next).toMatch(/^ERR_CUDAKIT_[A-Z0-9_]+$/);
      expect(codes.has(old), `${old} is raised nowhere`).toBe(true);
    }
    expect(new Set(Object.values(CODE_RENAMES)).size).toBe(Object.keys(CODE_RENAMES).length);
    expect(Object.isFrozen(CODE_RENAMES)).toBe(true);
  });

  it('nextCode() keeps a code that follows the rule, and anything it does not know', () => {
    for (const c of ['CUDA_ERROR_OUT_OF_MEMORY', 'NVRTC_ERROR_COMPILATION', 'ABORT_ERR', 'ERR_CUDAKIT_DISPOSED']) {
      expect(nextCode(c)).toBe(c);
    }
    expect(nextCode('ENOENT')).toBe('ENOENT');
    expect(nextCode('toString')).toBe('toString');
    expect(nextCode('ERR_DISPOSED')).toBe('ERR_CUDAKIT_DISPOSED');
  });

  it('the table of docs/errors.md is CODE_RENAMES', () => {
    const doc = read('docs/errors.md');
    const start = doc.indexOf('\n## Error codes, old and new\n');
    expect(start).toBeGreaterThan(0);
    const section = doc.slice(start + 1, doc.indexOf('\n## ', start + 1));
    const rows = section.split('\n').filter((l) => l.startsWith('| `'));
    const table = Object.fromEntries(
      rows.map((row) => {
        const cells = row.split('|').map((c) => c.trim());
        return [cells[1]!.replace(/`/g, ''), cells[2]!.replace(/`/g, '')];
      }),
    );
    expect(rows.length).toBe(Object.keys(table).length);
    expect(table).toEqual(CODE_RENAMES);
  });
});

describe('code keeps the old value, codeNext carries the new one', () => {
  const driver = { api: 'cuInit', result: -1, explanation: 'no libcuda.so.1' };

  it.each([
    ['a disposed object', () => disposedError('DeviceBuffer'), 'ERR_DISPOSED', 'ERR_CUDAKIT_DISPOSED'],
    [
      'a wait limit',
      () => new TimeoutError('synchronizeAsync()', 5),
      'ERR_CUDA_WAIT_TIMEOUT',
      'ERR_CUDAKIT_WAIT_TIMEOUT',
    ],
    ['an abort', () => new AbortError('synchronizeAsync()', 'stop'), 'ABORT_ERR', 'ABORT_ERR'],
    [
      'a loader error',
      () => new CudaError({ code: 'CUDA_DRIVER_NOT_FOUND', ...driver }),
      'CUDA_DRIVER_NOT_FOUND',
      'ERR_CUDAKIT_DRIVER_NOT_FOUND',
    ],
    [
      'a driver error',
      () => new CudaError({ code: 'CUDA_ERROR_OUT_OF_MEMORY', ...driver, result: 2 }),
      'CUDA_ERROR_OUT_OF_MEMORY',
      'CUDA_ERROR_OUT_OF_MEMORY',
    ],
    [
      'the native loader',
      () => errorFromNative('loader', 'NVRTC_NOT_FOUND', 'nvrtcVersion', -1, 'none', []),
      'NVRTC_NOT_FOUND',
      'ERR_CUDAKIT_NVRTC_NOT_FOUND',
    ],
    [
      'a native NVRTC error',
      () => errorFromNative('nvrtc', 'NVRTC_ERROR_COMPILATION', 'nvrtcCompileProgram', 6, '', ''),
      'NVRTC_ERROR_COMPILATION',
      'NVRTC_ERROR_COMPILATION',
    ],
    [
      'a plain coded Error',
      () => codedError('timed out', 'CUDAKIT_BENCH_TIMEOUT'),
      'CUDAKIT_BENCH_TIMEOUT',
      'ERR_CUDAKIT_BENCH_TIMEOUT',
    ],
    [
      'an Error the addon threw',
      () => withCodeNext(Object.assign(new Error('refused'), { code: 'CUDAKIT_CUPTI' })),
      'CUDAKIT_CUPTI',
      'ERR_CUDAKIT_CUPTI',
    ],
  ])('%s', (_, make, code, codeNext) => {
    const e = make() as Error & { code: string; codeNext: string };
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe(code);
    expect(e.codeNext).toBe(codeNext);
  });

  it('an invalid job', () => {
    let job: unknown;
    try {
      validateJob({});
    } catch (e) {
      job = e;
    }
    expect(job).toBeInstanceOf(InvalidJobError);
    const { code, codeNext } = job as InvalidJobError;
    expect([code, codeNext]).toEqual(['ERR_INVALID_JOB', 'ERR_CUDAKIT_INVALID_JOB']);
  });

  it('withCodeNext() leaves an error without a code, and a codeNext already there, alone', () => {
    expect(Object.hasOwn(withCodeNext(new Error('x')), 'codeNext')).toBe(false);
    const e = Object.assign(new Error('x'), { code: 'ERR_DISPOSED', codeNext: 'ERR_CUDAKIT_DISPOSED' });
    expect(withCodeNext(e).codeNext).toBe('ERR_CUDAKIT_DISPOSED');
    expect(withCodeNext('text')).toBe('text');
  });

  it('an error copied into its phase keeps both', () => {
    const e = CudaError.inPhase(new CudaError({ code: 'CUDA_DRIVER_TOO_OLD', ...driver }), 'bench(): timing');
    expect([e.code, e.codeNext]).toEqual(['CUDA_DRIVER_TOO_OLD', 'ERR_CUDAKIT_DRIVER_TOO_OLD']);
  });
});
