// SPDX-License-Identifier: MIT
// What the compile check makes of its child's report (run/compile-check.ts's checkResultOf): only NVRTC's own rejection
// of a source, a mismatch of arguments or the job's problems fail a job; anything the check cannot vouch for (no NVRTC,
// an arch this NVRTC lacks, a phase it never expects to end in) leaves the job's fate to a GPU. The child with real
// NVRTC is in compile-check.nvrtc.test.ts.
import { describe, expect, it } from 'vitest';
import type { EvalError, EvalJob, EvalPhase, EvalReport } from '../../../lib/index.js';
import { emptyReport } from '../../../lib/eval/report.js';
import { CompileChecker, checkResultOf } from '../../src/run/compile-check.js';

const JOB: EvalJob = {
  source: 'extern "C" __global__ void k(float* y) {}',
  kernel: 'k',
  grid: 1,
  block: 32,
  args: ['ptr:f32[32]:out'],
  reference: { source: 'extern "C" __global__ void ref(float* y) {}', kernel: 'ref' },
};

function report(phase: EvalPhase | undefined, error: EvalError | undefined, arch = 'sm_90'): EvalReport {
  const r = emptyReport('k');
  r.phase = phase;
  r.error = error;
  r.compile = { candidate: { arch } as never };
  return r;
}

const compileError = (code: string, kernel: 'candidate' | 'reference' = 'candidate'): EvalError => ({
  kind: 'compile',
  code,
  message: `${code}: the compile failed`,
  kernel,
  api: 'nvrtcCompileProgram',
  result: 6,
  diagnostics: [
    { file: 'kernel.cu', line: 3, column: undefined, severity: 'warning', message: 'a warning' },
    ...Array.from({ length: 7 }, (_, i) => ({
      file: 'kernel.cu',
      line: 10 + i,
      column: undefined,
      severity: 'error' as const,
      message: `error number ${i}`,
    })),
  ],
  log: '',
  flags: ['--no-source-include', '--gpu-architecture=sm_90'],
  remedy: '',
});

describe('checkResultOf', () => {
  it("NVRTC's rejection fails the job at the kernel's source, quoting five errors and counting the rest", () => {
    const r = checkResultOf(report('compile', compileError('NVRTC_ERROR_COMPILATION')), JOB);
    expect(r.kind).toBe('fails');
    if (r.kind !== 'fails') return;
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]!.path).toBe('job.source');
    expect(r.problems[0]!.message).toMatch(/^Expected CUDA C\+\+ that compiles for job\.source on sm_90 but NVRTC/);
    expect(r.problems[0]!.message).toMatch(/kernel\.cu\(14\): error: error number 4 \(and 2 more errors\)$/);
    expect(r.problems[0]!.message).not.toMatch(/a warning/);
  });

  it("the reference's rejection is the reference's source", () => {
    const r = checkResultOf(report('compile', compileError('NVRTC_ERROR_COMPILATION', 'reference')), JOB);
    expect(r.kind === 'fails' && r.problems[0]!.path).toBe('job.reference.source');
  });

  it('no NVRTC, or an option this NVRTC refuses (an arch it lacks), proves nothing: unknown', () => {
    for (const code of ['NVRTC_NOT_FOUND', 'NVRTC_ERROR_INVALID_OPTION']) {
      expect(checkResultOf(report('compile', compileError(code)), JOB).kind).toBe('unknown');
    }
    const cuda: EvalError = { kind: 'cuda', code: 'CUDA_DRIVER_NOT_FOUND', message: 'no driver' } as EvalError;
    expect(checkResultOf(report('compile', cuda), JOB).kind).toBe('unknown');
  });

  it('an argument mismatch fails at the args of the kernel it names', () => {
    const mismatch = (message: string): EvalError => ({ kind: 'exception', code: 'TypeError', message });
    const a = checkResultOf(
      report('load', mismatch("Kernel 'k' takes 2 parameters but the signature lists 1: [ptr]")),
      JOB,
    );
    expect(a.kind === 'fails' && a.problems[0]!.path).toBe('job.args');
    const b = checkResultOf(
      report('load', mismatch("Parameter 0 of kernel 'ref' is 4 bytes but the signature says ptr")),
      JOB,
    );
    expect(b.kind === 'fails' && b.problems[0]!.path).toBe('job.reference.args');
  });

  it('a load that fails for want of a GPU means the kernels compiled, for the arch the report names', () => {
    const noGpu: EvalError = { kind: 'cuda', code: 'CUDA_ERROR_NO_DEVICE', message: 'no device' } as EvalError;
    expect(checkResultOf(report('load', noGpu, 'sm_80'), JOB)).toEqual({ kind: 'compiles', arch: 'sm_80' });
  });

  it("the job's own problems fail it; a phase the check never reaches is unknown", () => {
    const invalid: EvalError = {
      kind: 'invalid-job',
      code: 'ERR_INVALID_JOB',
      message: 'Invalid job',
      problems: [{ path: 'job.grid', message: 'bad grid', type: 'RangeError' }],
    } as EvalError;
    expect(checkResultOf(report('validate', invalid), JOB)).toEqual({ kind: 'fails', problems: invalid.problems });
    const verdict: EvalError = { kind: 'verdict', code: 'X', message: 'wrong' } as EvalError;
    expect(checkResultOf(report('check', verdict), JOB).kind).toBe('unknown');
  });
});

describe('CompileChecker', () => {
  it('answers unknown, starting nothing, beyond its concurrency and once stopped', async () => {
    const none = new CompileChecker({ maxConcurrent: 0 });
    expect(await none.check(JOB)).toEqual({ kind: 'unknown', reason: '0 compile checks are running already' });
    const stopped = new CompileChecker();
    stopped.stop();
    expect(await stopped.check(JOB)).toEqual({ kind: 'unknown', reason: 'the server is stopping' });
  });
});
