// SPDX-License-Identifier: MIT
// A missing #include of one of the CUDA toolkit's headers: the CompileError says where the toolkit's headers were
// looked for and why each place was passed over, and how to install them (test/nvrtc/program.test.ts has the program's
// own headers). CUDA_PATH points at a stub toolkit of another major release than NVRTC's before this process's first
// compile (the search runs once per process; vitest runs each file in its own).
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, it, vi } from 'vitest';
import { type Arch, CompileError, Program, nvrtcVersion } from '../../lib/index.js';
import { cli, describeNvrtc } from '../helpers.js';

const arch: Arch = 'sm_80';
// A toolkit header (cuda/..., as libcu++'s are) that no toolkit has: the test does not depend on which toolkit this
// machine has installed.
const MISSING = '#include <cuda/cudakit_absent.h>\nextern "C" __global__ void k(float* x) { x[0] = 1; }\n';

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
    expect(e.diagnostics[0]!.message).toMatch(/^(cannot|could not) open source file "cuda\/cudakit_absent\.h"/);
    const passedOver = `${join(stub, 'include')} (CUDA_PATH): toolkit ${otherMajor}.0 beside NVRTC ${nvrtcVersion()}`;
    expect(e.note).toMatch(new RegExp(`^CUDA toolkit headers for NVRTC ${nvrtcVersion().replace('.', '\\.')}: `));
    expect(e.note!.split('\n')[1]).toBe(`  ${passedOver}`);
    expect(e.message).toContain(`\n  CUDA toolkit headers for NVRTC ${nvrtcVersion()}: `);
    expect(e.message).toContain(`\n    ${passedOver}\n`);
    expect(e.remedy).toMatch(/^cuda\/cudakit_absent\.h is the CUDA toolkit's: /);
    expect(e.message.endsWith(`\n  Remedy: ${e.remedy}`)).toBe(true);
    expect(e.note).not.toContain('was looked for in'); // not as if it were one of the program's own headers
  });

  it("names the README's install line for the CUDA toolkit's headers of NVRTC's major version", () => {
    const major = nvrtcVersion().split('.')[0]!;
    const { remedy } = compileError({});
    expect(remedy).toContain(`CUDA_PATH at a CUDA ${major}.x toolkit`);
    expect(remedy).toContain('see the README\'s "NVRTC and CUDA headers"');
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain('## NVRTC and CUDA headers');
    if (major === '11') {
      // Debian's NVRTC 11.8: the README's own line, word for word.
      const line = 'sudo apt-get install nvidia-cuda-dev';
      expect(remedy).toContain(line);
      expect(readme).toContain(`\`${line}\``);
    }
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
    expect(e.remedy).toMatch(/: leave cudaIncludes on, or add the include folder of a CUDA \d+\.x toolkit to /);
  });

  it('adds nothing to other compile errors', () => {
    const e = compileError({}, 'extern "C" __global__ void k(float* x) { x[0] = nope; }\n');
    expect(e.note).toBeUndefined();
    expect(e.message).not.toContain('CUDA toolkit headers');
    expect(e.message).toMatch(/\n {2}Remedy: fix the reported lines; /);
    expect(e.remedy).toMatch(/^fix the reported lines; /);
  });
});
