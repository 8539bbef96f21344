import { describe, expect, it } from 'vitest';
import { compileFlags, isArch, parseDiagnostics } from '../../lib/core/program.js';

describe('compileFlags (options → NVRTC flags, one function)', () => {
  it('maps every typed option to its flag, extra flags last', () => {
    const flags = compileFlags(
      {
        std: 'c++17',
        defines: { N: 256, FAST: true, OFF: false, NAME: 'x' },
        includePaths: ['/inc'],
        fastMath: true,
        lineInfo: true,
        debug: true,
        maxRegisters: 64,
        extraFlags: ['--extra-device-vectorization'],
      },
      'sm_90',
      ['/cuda/include', '/cuda/include/cccl'],
    );
    expect(flags).toEqual([
      '--gpu-architecture=sm_90',
      '--std=c++17',
      '-DN=256',
      '-DFAST',
      '-DNAME=x',
      '--include-path=/inc',
      '--include-path=/cuda/include',
      '--include-path=/cuda/include/cccl',
      '--use_fast_math',
      '--generate-line-info',
      '--device-debug',
      '--maxrregcount=64',
      '--extra-device-vectorization',
    ]);
  });

  it('passes nothing for undefined options and accepts defines as strings', () => {
    expect(compileFlags({}, undefined)).toEqual([]);
    expect(compileFlags({ defines: ['A=1', 'B'] }, 'compute_80')).toEqual([
      '--gpu-architecture=compute_80',
      '-DA=1',
      '-DB',
    ]);
  });
});

describe('parseDiagnostics', () => {
  it('parses NVRTC 11 style lines (no column)', () => {
    const log =
      'k.cu(3): error: expected an expression\n' +
      'k.cu(5): warning #177-D: variable "x" was declared but never referenced\n\n' +
      '1 error detected in the compilation of "k.cu".\n';
    expect(parseDiagnostics(log)).toEqual([
      { file: 'k.cu', line: 3, column: undefined, severity: 'error', message: 'expected an expression' },
      {
        file: 'k.cu',
        line: 5,
        column: undefined,
        severity: 'warning',
        message: 'variable "x" was declared but never referenced',
      },
    ]);
  });

  it('takes the column from the caret line NVRTC 12+ prints', () => {
    // NVRTC echoes the source line with two more spaces of indentation; the caret is under the ';' at column 13
    const source = 'int a;\n    int x = ;\n';
    const log = 'p.cu(2): error: expected an expression\n      int x = ;\n              ^\n';
    expect(parseDiagnostics(log, source)).toEqual([
      { file: 'p.cu', line: 2, column: 13, severity: 'error', message: 'expected an expression' },
    ]);
  });

  it("maps the caret back to the source's own indentation when NVRTC re-indents the line", () => {
    // A tab in the source, four spaces in NVRTC's echo: the ';' is the source's 10th character
    const source = 'int a;\n\tint y = ;\n';
    const log = 'p.cu(2): error: expected an expression\n    int y = ;\n            ^\n';
    expect(parseDiagnostics(log, source)).toEqual([
      { file: 'p.cu', line: 2, column: 10, severity: 'error', message: 'expected an expression' },
    ]);
    // Without the source, the column counts from the echoed line's first non-blank character
    expect(parseDiagnostics(log)[0]!.column).toBe(9);
    // No caret line (NVRTC 11): no column
    expect(parseDiagnostics('p.cu(2): error: expected an expression\n', source)[0]!.column).toBeUndefined();
  });
});

describe('isArch (the shape compile() checks before NVRTC runs)', () => {
  it('takes real and virtual architectures with their suffixes', () => {
    for (const a of ['sm_80', 'sm_90a', 'sm_100f', 'sm_121', 'compute_90', 'compute_90a', 'compute_100f']) {
      expect(isArch(a), a).toBe(true);
    }
  });

  it('refuses misspelt names and what is not a string', () => {
    for (const a of [
      'sm90',
      'sm_9',
      'sm_1000',
      'sm_90x',
      'SM_90',
      'gfx_90',
      ' sm_90',
      'sm_90 ',
      '',
      90,
      undefined,
      null,
    ]) {
      expect(isArch(a), String(a)).toBe(false);
    }
  });
});
