// Real NVRTC, no GPU: runs in CI (CUDAKIT_REQUIRE_NVRTC=1 there).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import {
  type Arch,
  type CompileOptions,
  CompileError,
  Program,
  clearMemoryCache,
  nvrtcVersion,
  supportedArchNames,
  supportedArchs,
} from '../../lib/index.js';
import { describeNvrtc } from '../helpers.js';
import { SAXPY } from '../support/kernels.js';

const arch: Arch = 'sm_80'; // every NVRTC from 11.1 on knows it; no device needed
const noCache = { cache: false } as const;

describeNvrtc('NVRTC compile', () => {
  it('reports its version and architectures', () => {
    expect(nvrtcVersion()).toMatch(/^\d+\.\d+$/);
    expect(supportedArchs()).toContain(80);
  });

  it('names its architectures as compile() takes them, and compiles for each end of the list', () => {
    const names = supportedArchNames();
    expect(names).toEqual(supportedArchs().map((n) => `sm_${n}`));
    expect(names).toContain('sm_80');
    for (const a of [names[0]!, names.at(-1)!]) {
      const code = new Program(SAXPY).compile({ arch: a, ...noCache });
      expect([code.target, code.arch]).toEqual(['cubin', a]);
    }
  });

  it('compiles to PTX and to CUBIN', () => {
    const p = new Program(SAXPY, { name: 'saxpy.cu' });
    const ptx = p.compile({ target: 'ptx', arch, ...noCache });
    expect(ptx.target).toBe('ptx');
    expect(ptx.ptx).toContain('.entry saxpy');
    expect(ptx.ptx).toContain('.target sm_80');
    const cubin = p.compile({ arch, ...noCache });
    expect(cubin.target).toBe('cubin');
    expect(Buffer.from(cubin.bytes.subarray(0, 4)).toString('latin1')).toBe('\x7fELF');
    expect(cubin.arch).toBe('sm_80');
  });

  it('applies defines and reports warnings on success', () => {
    const src = `extern "C" __global__ void k(int* o) { int unused = 1; o[0] = VALUE; }`;
    const code = new Program(src).compile({ target: 'ptx', arch, defines: { VALUE: 42 }, ...noCache });
    expect(code.ptx).toMatch(/mov\.u32\s+%r\d+, 42;|st\.global\.u32\s+\[%rd\d+\], 42;/);
    expect(code.log).toMatch(/warning.*unused/);
  });

  it('names template instantiations through name expressions', () => {
    const src = 'template <typename T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }';
    const code = new Program(src).compile({
      target: 'ptx',
      arch,
      nameExpressions: ['scale<float>', 'scale<double>'],
      ...noCache,
    });
    expect(code.loweredNames['scale<float>']).toBe('_Z5scaleIfEvPT_S0_');
    expect(code.loweredNames['scale<double>']).toBe('_Z5scaleIdEvPT_S0_');
    expect(code.ptx).toContain('.entry _Z5scaleIdEvPT_S0_');
  });

  it('includes headers given from memory', () => {
    const p = new Program('#include "consts.h"\nextern "C" __global__ void k(int* o) { o[0] = MAGIC; }', {
      headers: { 'consts.h': '#define MAGIC 1234567\n' },
    });
    expect(p.compile({ target: 'ptx', arch, ...noCache }).ptx).toContain('1234567');
  });

  it('throws CompileError with parsed diagnostics and the exact options', () => {
    const src = 'extern "C" __global__ void k(int* o) {\n  o[0] = undefined_name;\n}\n';
    let err: unknown;
    try {
      new Program(src, { name: 'bad.cu' }).compile({ target: 'ptx', arch, cudaIncludes: false, ...noCache });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CompileError);
    const e = err as CompileError;
    expect(e.code).toBe('NVRTC_ERROR_COMPILATION');
    expect(e.options).toEqual(['--gpu-architecture=sm_80']);
    expect(e.diagnostics[0]).toMatchObject({ file: 'bad.cu', line: 2, severity: 'error' });
    expect(e.diagnostics[0]!.message).toContain('undefined_name');
    expect(e.message).toContain('bad.cu:2');
  });

  it('reports an invalid option as CompileError, the process survives', () => {
    expect(() =>
      new Program(SAXPY).compile({ target: 'ptx', arch, extraFlags: ['--no-such-flag'], ...noCache }),
    ).toThrow(expect.objectContaining({ name: 'CompileError', code: 'NVRTC_ERROR_INVALID_OPTION' }) as Error);
  });

  it('validates options before NVRTC is called', () => {
    const p = new Program(SAXPY);
    expect(() => p.compile({ target: 'sass' as never })).toThrow(TypeError);
    // @ts-expect-error 'sm90' is not an Arch (test/unit/arch-types.ts has the type tests)
    expect(() => p.compile({ arch: 'sm90' })).toThrow(/architecture such as 'sm_90'/);
    expect(() => p.compile({ maxRegisters: 0 })).toThrow(RangeError);
    expect(() => p.compile({ target: 'cubin', arch: 'compute_80' })).toThrow(/real architecture/);
    expect(() => p.compile({ defines: { 'bad name': 1 } })).toThrow(TypeError);
    expect(() => new Program(42 as never)).toThrow(TypeError);
  });

  it('rejects an architecture this NVRTC does not know before NVRTC runs, listing those it knows', async () => {
    const unknown = supportedArchs().includes(100) ? 99 : 100; // sm_100 where this NVRTC predates it
    const known = (kind: string): string =>
      supportedArchs()
        .map((n) => `${kind}_${n}`)
        .join(', ');
    const message = (kind: string): string =>
      `Expected an architecture NVRTC ${nvrtcVersion()} supports (${known(kind)}) for options.arch ` +
      `but received '${kind}_${unknown}' of type string`;
    const p = new Program(SAXPY);
    // A RangeError, not NVRTC's CompileError NVRTC_ERROR_INVALID_OPTION ("invalid value for --gpu-architecture").
    expect(() => p.compile({ arch: `sm_${unknown}`, ...noCache })).toThrow(new RangeError(message('sm')));
    expect(() => p.compile({ target: 'ptx', arch: `compute_${unknown}`, ...noCache })).toThrow(
      new RangeError(message('compute')),
    );
    await expect(p.compileAsync({ arch: `sm_${unknown}`, ...noCache })).rejects.toThrow(new RangeError(message('sm')));
    expect(p.compile({ arch: `sm_${Math.max(...supportedArchs())}`, ...noCache }).target).toBe('cubin');
  });

  it('keeps no trailing NUL in the log, compiled or failed', () => {
    const ptxasVerbose = { arch, extraFlags: ['--ptxas-options=-v'] };
    const code = new Program(SAXPY + '\n// log').compile({ ...ptxasVerbose, ...noCache });
    expect(code.log).toMatch(/ptxas info {4}: Used \d+ registers/);
    expect(code.log).not.toContain('\0');
    expect(code.log.endsWith('\n')).toBe(true);
    let failed: unknown;
    try {
      new Program('extern "C" __global__ void k() { nope; }').compile({ ...ptxasVerbose, ...noCache });
    } catch (e) {
      failed = e;
    }
    expect((failed as CompileError).log).toMatch(/error: identifier "nope" is undefined/);
    expect((failed as CompileError).log).not.toContain('\0');
  });

  it('compileAsync gives the same result without blocking the event loop', async () => {
    const p = new Program(SAXPY + '\n// async');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const code = await p.compileAsync({ target: 'ptx', arch, ...noCache });
    clearInterval(timer);
    expect(code.ptx).toContain('.entry saxpy');
    expect(ticks).toBeGreaterThan(0);
    await expect(new Program('garbage here').compileAsync({ target: 'ptx', arch, ...noCache })).rejects.toBeInstanceOf(
      CompileError,
    );
  });
});

describeNvrtc('compile cache', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-ccache-'));
  const cache = { dir };

  it('hits in memory, then on disk, and invalidates on any input change', () => {
    const src = SAXPY + '\n// cache test';
    const first = new Program(src).compile({ target: 'ptx', arch, cache });
    expect(first.cached).toBeUndefined();
    const again = new Program(src).compile({ target: 'ptx', arch, cache });
    expect(again.cached).toBe('memory');
    expect(again.bytes).toEqual(first.bytes);
    clearMemoryCache();
    const fromDisk = new Program(src).compile({ target: 'ptx', arch, cache });
    expect(fromDisk.cached).toBe('disk');
    expect(fromDisk.ptx).toBe(first.ptx);
    expect(new Program(src).compile({ target: 'ptx', arch, cache, defines: ['X'] }).cached).toBeUndefined();
    expect(new Program(src).compile({ target: 'ptx', arch: 'sm_86', cache }).cached).toBeUndefined();
    expect(
      new Program(src, { headers: { 'a.h': '1' } }).compile({ target: 'ptx', arch, cache }).cached,
    ).toBeUndefined();
    expect(
      new Program(src, { headers: { 'a.h': '2' } }).compile({ target: 'ptx', arch, cache }).cached,
    ).toBeUndefined();
  });

  it('lets one Program reuse its keys per option set, and never for a source put in place of its own', () => {
    const p = new Program(SAXPY + '\n// one program');
    const plain = p.compile({ target: 'ptx', arch, cache });
    expect(plain.cached).toBeUndefined();
    expect(p.compile({ target: 'ptx', arch, cache }).cached).toBe('memory');
    const withX = p.compile({ target: 'ptx', arch, cache, defines: ['X'] });
    expect(withX.cached).toBeUndefined();
    expect(p.compile({ target: 'ptx', arch, cache, defines: ['X'] }).cached).toBe('memory');
    expect(p.compile({ target: 'ptx', arch, cache }).ptx).toBe(plain.ptx);
    // `source` is readonly to TypeScript only
    (p as { source: string }).source = SAXPY.replace('void saxpy(', 'void saxpy2(') + '\n// one program';
    const other = p.compile({ target: 'ptx', arch, cache });
    expect(other.cached).toBeUndefined();
    expect(other.ptx).toContain('.entry saxpy2');
    expect(p.compile({ target: 'ptx', arch, cache }).ptx).toBe(other.ptx);
  });

  it('recompiles over a corrupt or truncated entry, never fails', () => {
    const src = SAXPY + '\n// corrupt test';
    new Program(src).compile({ target: 'ptx', arch, cache });
    clearMemoryCache();
    for (const sub of readdirSync(dir)) {
      for (const f of readdirSync(join(dir, sub))) {
        const path = join(dir, sub, f);
        const b = readFileSync(path);
        writeFileSync(path, b.subarray(0, Math.floor(b.length / 2)));
      }
    }
    const again = new Program(src).compile({ target: 'ptx', arch, cache });
    expect(again.cached).toBeUndefined();
    expect(again.ptx).toContain('.entry saxpy');
    clearMemoryCache();
    expect(new Program(src).compile({ target: 'ptx', arch, cache }).cached).toBe('disk'); // rewritten
  });
});

describeNvrtc("a missing #include of the program's own", () => {
  const source = '#include "nothere.h"\nextern "C" __global__ void k(int* o) { o[0] = VALUE; }\n';
  // cudaIncludes off: the include path is the test's alone, whatever toolkit this machine has.
  const options = { target: 'ptx', arch, cache: false, cudaIncludes: false } as const;

  function compileError(program: Program, more: CompileOptions = {}): CompileError {
    try {
      program.compile({ ...options, ...more });
    } catch (e) {
      if (e instanceof CompileError) return e;
      throw e;
    }
    throw new Error('compiled');
  }

  it('says where it was looked for (in-memory headers, include path, the folder) and how to provide it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cudakit-missing-'));
    const [inc1, inc2] = [join(dir, 'inc1'), join(dir, 'inc2')];
    const name = join(dir, 'k.cu');
    const program = new Program(source, { name, headers: { 'common.h': '', 'more.h': '' } });
    const e = compileError(program, { includePaths: [inc1, inc2] });
    expect(e.note).toBe(
      [
        '"nothere.h" was looked for in:',
        '  the in-memory headers (the headers option): common.h, more.h',
        `  the include path (includePaths, in order): ${inc1}, ${inc2}`,
        `  the program's folder: ${dir} (the folder of its name, '${name}')`,
      ].join('\n'),
    );
    expect(e.note).not.toContain('CUDA toolkit'); // not CUDA's own header
    expect(e.remedy).toBe(
      "give the header from memory (new Program(source, { headers: { 'nothere.h': text } })), " +
        'or add the folder that holds it to includePaths.',
    );
    expect(e.message).toContain(`\n    the include path (includePaths, in order): ${inc1}, ${inc2}\n`);
    expect(e.message.endsWith(`\n  Remedy: ${e.remedy}`)).toBe(true);

    // Each remedy works: the header from memory, or its folder on the include path.
    const fromMemory = new Program(source, { name, headers: { 'nothere.h': '#define VALUE 1\n' } });
    expect(fromMemory.compile(options).ptx).toContain('.entry k');
    mkdirSync(inc2);
    writeFileSync(join(inc2, 'nothere.h'), '#define VALUE 2\n');
    expect(program.compile({ ...options, includePaths: [inc1, inc2] }).ptx).toContain('.entry k');
  });

  it('says so when there are no in-memory headers or include path, or the folder is left out', () => {
    const e = compileError(new Program(source, { name: 'k.cu' }), { extraFlags: ['--no-source-include'] });
    expect(e.note!.split('\n').slice(1)).toEqual([
      '  the in-memory headers (the headers option): none',
      '  the include path (includePaths, in order): none',
      "  the program's folder: not searched (--no-source-include)",
    ]);
  });

  it("tells the program's headers from CUDA's", () => {
    const cuda = compileError(new Program('#include <cuda_fp16.h>\n'));
    expect(cuda.note).toBe('CUDA toolkit headers: not searched for (options.cudaIncludes is false)');
    expect(cuda.remedy).toMatch(/^cuda_fp16\.h is the CUDA toolkit's: /);
    const own = compileError(new Program('#include "cuda_helpers.h"\n')); // a name of the user's, not CUDA's
    expect(own.note).toMatch(/^"cuda_helpers\.h" was looked for in:\n/);
  });
});
