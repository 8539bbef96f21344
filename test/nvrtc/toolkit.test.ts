// SPDX-License-Identifier: MIT
// A missing #include: the CompileError says where the CUDA toolkit's headers were looked for and why each place was
// passed over. CUDA_PATH points at a stub toolkit of another major release than NVRTC's before this process's first
// compile (the search runs once per process; vitest runs each file in its own).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, it, vi } from 'vitest';
import { type Arch, CompileError, Program, nvrtcVersion } from '../../lib/index.js';
import { cli, describeNvrtc } from '../helpers.js';

const arch: Arch = 'sm_80';
// A header no toolkit has: the test does not depend on which toolkit this machine has installed.
const MISSING = '#include <cudakit_absent_header.h>\nextern "C" __global__ void k(float* x) { x[0] = 1; }\n';

function compileError(options: { cudaIncludes?: boolean }, source = MISSING): CompileError {
  try {
    new Program(source, { name: 'missing.cu' }).compile({ target: 'ptx', arch, cache: false, ...options });
  } catch (e) {
    if (e instanceof CompileError) return e;
    throw e;
  }
  throw new Error('compiled');
}

describeNvrtc('a missing #include', () => {
  let stub = '';
  let otherMajor = 0;

  beforeAll(() => {
    otherMajor = Number(nvrtcVersion().split('.')[0]) + 2;
    stub = mkdtempSync(join(tmpdir(), 'cudakit-toolkit-'));
    mkdirSync(join(stub, 'include'));
    writeFileSync(join(stub, 'include', 'cuda_fp16.h'), '// stub\n');
    writeFileSync(join(stub, 'include', 'cuda.h'), `#define CUDA_VERSION ${otherMajor * 1000}\n`);
    vi.stubEnv('CUDA_PATH', stub);
    return () => vi.unstubAllEnvs();
  });

  it('says which toolkit include directories were tried and why each was passed over', () => {
    const e = compileError({});
    expect(e.diagnostics[0]!.message).toMatch(/^(cannot|could not) open source file "cudakit_absent_header\.h"/);
    const passedOver = `${join(stub, 'include')} (CUDA_PATH): toolkit ${otherMajor}.0 beside NVRTC ${nvrtcVersion()}`;
    expect(e.note).toMatch(new RegExp(`^CUDA toolkit headers for NVRTC ${nvrtcVersion().replace('.', '\\.')}: `));
    expect(e.note!.split('\n')[1]).toBe(`  ${passedOver}`);
    expect(e.message).toContain(`\n  CUDA toolkit headers for NVRTC ${nvrtcVersion()}: `);
    expect(e.message).toContain(`\n    ${passedOver}\n`);
    expect(e.message).toMatch(
      /\n {2}Remedy: add the header's directory to includePaths \(or the header to headers\); for the CUDA toolkit's /,
    );
  });

  it('cudakit compile prints the same list after the error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-missing-'));
    writeFileSync(join(dir, 'missing.cu'), MISSING);
    const r = await cli(['compile', join(dir, 'missing.cu'), '--ptx', '--arch', arch, '--no-cache']);
    expect(r.code).toBe(2);
    const passedOver = `${join(stub, 'include')} (CUDA_PATH): toolkit ${otherMajor}.0 beside NVRTC ${nvrtcVersion()}`;
    const failed = `cudakit: compile failed: 1 error in ${join(dir, 'missing.cu')}\n`;
    expect(r.stderr).toContain(`${failed}  CUDA toolkit headers for NVRTC ${nvrtcVersion()}: `);
    expect(r.stderr).toContain(`\n    ${passedOver}\n`);
  });

  it('says the toolkit was not searched for with cudaIncludes: false', () => {
    const e = compileError({ cudaIncludes: false });
    expect(e.note).toBe('CUDA toolkit headers: not searched for (options.cudaIncludes is false)');
    expect(e.message).toContain('\n  CUDA toolkit headers: not searched for (options.cudaIncludes is false)\n');
  });

  it('adds nothing to other compile errors', () => {
    const e = compileError({}, 'extern "C" __global__ void k(float* x) { x[0] = nope; }\n');
    expect(e.note).toBeUndefined();
    expect(e.message).not.toContain('CUDA toolkit headers');
    expect(e.message).toMatch(/\n {2}Remedy: fix the reported lines; /);
  });
});
