// SPDX-License-Identifier: MIT
// `cudakit bench` over evaluate(), without a GPU: evaluate() is replaced by one that answers with the captured results
// of test/golden/captured/, so what the command line makes of a report (the check line, the timing text, --json,
// the exit code) is held against the same goldens as the real runs of test/gpu/cli.test.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BenchResult, CompareResult, EvalCheck, EvalJob, EvalOptions, EvalReport } from '../../lib/index.js';
import { cli } from '../helpers.js';
import { GOLDEN, SAXPY_16M_ARGS, expectGolden, golden } from '../support/cli-golden.js';

const fake = vi.hoisted(() => ({
  report: undefined as EvalReport | undefined,
  calls: [] as { job: EvalJob; options: EvalOptions | undefined }[],
}));

vi.mock('../../lib/index.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/index.js')>();
  return {
    ...real,
    probe: () => ({ ...real.probe(), ok: true, reason: undefined }),
    evaluate: async (job: EvalJob, options?: EvalOptions): Promise<EvalReport> => {
      fake.calls.push({ job, options });
      const r = fake.report!;
      // The check as it stood when the check phase ended: before the re-check.
      const c = r.check;
      if (c !== undefined) {
        const { afterTiming: _after, ...before } = 'before' in c ? c : { ...c, afterTiming: undefined };
        options?.onProgress?.({
          kind: 'checked',
          check: 'before' in before ? { ...before, passed: before.before.passed } : before,
        });
      }
      return r;
    },
  };
});

const root = new URL('../..', import.meta.url).pathname;
const captured = (name: string): Record<string, unknown> => JSON.parse(golden(`captured/${name}.json`));
const dir = mkdtempSync(join(tmpdir(), 'cudakit-eval-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function report(more: Partial<EvalReport>): EvalReport {
  return {
    name: 'saxpy',
    passed: true,
    phase: undefined,
    error: undefined,
    phases: [],
    compile: {},
    check: undefined,
    timing: undefined,
    comparison: undefined,
    warnings: [],
    ...more,
  };
}

function parts(name: string): { check: EvalCheck; result: Record<string, unknown> } {
  const { check, ...result } = captured(name);
  return { check: check as EvalCheck, result };
}

beforeEach(() => {
  fake.calls.length = 0;
  process.chdir(root);
});

describe('cudakit bench prints a report as it always printed its results', () => {
  const saxpyArgs16M = ['--kernel', 'saxpy', ...SAXPY_16M_ARGS];

  it("examples/saxpy.bench.ts: the spec's job and JavaScript reference; the golden output", async () => {
    const { check, result } = parts('saxpy-spec');
    fake.report = report({ check, timing: result as unknown as BenchResult });
    const json = join(dir, 'spec.json');
    expectGolden(GOLDEN.spec, await cli([...GOLDEN.spec.argv, '--json', json]), json);
    const [{ job, options }] = fake.calls as [(typeof fake.calls)[0]];
    expect(job).toMatchObject({
      name: 'saxpy',
      kernel: 'saxpy',
      grid: 65536,
      block: 256,
      source: { name: 'saxpy.bench.source.cu' },
      timing: { preset: 'quick', bytes: 12 * (1 << 24) },
      check: { withoutReference: 'skip' },
    });
    expect(typeof options?.reference).toBe('function');
    expect(options?.baseDir).toBe(join(root, 'examples'));
  });

  it('--compare: the job with its baseline; the golden output', async () => {
    const { check, result } = parts('compare');
    fake.report = report({ check, comparison: result as unknown as CompareResult });
    const json = join(dir, 'compare.json');
    expectGolden(GOLDEN.compare, await cli([...GOLDEN.compare.argv, '--json', json]), json);
    expect(fake.calls[0]!.job.compare).toEqual({
      source: { file: 'examples/cuda/saxpy.cu' },
      kernel: 'saxpy',
      grid: 65536,
      block: 256,
    });
  });

  it('--ref with a failing check: exit 1, the golden stderr line, the check alone in --json', async () => {
    const { check } = parts('ref-fail');
    const summary = (check as { before: { summary: string } }).before.summary;
    fake.report = report({
      passed: false,
      phase: 'check',
      check,
      error: { kind: 'verdict', code: 'mismatch', message: summary },
    });
    const json = join(dir, 'ref-fail.json');
    expectGolden(GOLDEN.refFail, await cli([...GOLDEN.refFail.argv, '--json', json]), json);
  });

  it('a failed re-check: exit 1 naming it, the check with afterTiming in --json', async () => {
    const { check } = parts('saxpy-spec');
    const after = {
      ...(check as { afterTiming: object }).afterTiming,
      passed: false,
      summary: 'FAIL after timing (mismatch) in input set 2',
    };
    fake.report = report({
      passed: false,
      phase: 'recheck',
      check: { ...check, passed: false, afterTiming: after } as EvalCheck,
      error: { kind: 'verdict', code: 'mismatch', message: after.summary },
    });
    const r = await cli(['bench', 'examples/saxpy.bench.ts', '--json', '-']);
    expect(r.code).toBe(1);
    const lines = r.stderr.split('\n');
    expect(lines[0]).toMatch(/^✓ check against the JavaScript reference: PASS/); // the check before timing passed
    expect(lines[1]).toBe(
      'cudakit: check failed after timing against the JavaScript reference: ' +
        'FAIL after timing (mismatch) in input set 2',
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ check: { passed: false, afterTiming: { passed: false } } });
  });

  it("a skipped check and a CUDA error while timing: the command line's words, exit 2", async () => {
    fake.report = report({
      passed: false,
      phase: 'time',
      check: { skipped: 'not checked (check.skip)' },
      error: {
        kind: 'cuda',
        code: 'CUDA_ERROR_ILLEGAL_ADDRESS',
        message: 'bench(): warm-up: cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): x',
        sticky: true,
      },
    });
    const r = await cli([
      'bench',
      'examples/cuda/saxpy.cu',
      ...saxpyArgs16M,
      '--grid',
      '65536',
      '--block',
      '256',
      '--no-check',
    ]);
    expect(r).toEqual({
      code: 2,
      stdout: 'correctness: not checked (--no-check)\n',
      stderr: 'cudakit: bench(): warm-up: cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): x\n',
    });
    expect(fake.calls[0]!.job.check).toEqual({ skip: true, withoutReference: 'skip' });
    fake.report = report({
      passed: false,
      phase: 'time',
      check: { skipped: 'not checked (no reference)' },
      error: { kind: 'cuda', code: 'X', message: 'y' },
    });
    const noRef = await cli(['bench', 'examples/cuda/saxpy.cu', ...saxpyArgs16M, '--grid', '65536', '--block', '256']);
    expect(noRef.stdout).toBe('correctness: not checked (no reference: give --ref or --compare)\n');
  });

  it('a compile error: the diagnostics with the source line, exit 2', async () => {
    fake.report = report({
      passed: false,
      phase: 'compile',
      error: {
        kind: 'compile',
        code: 'NVRTC_ERROR_COMPILATION',
        message: 'x',
        kernel: 'reference',
        source: 'examples/cuda/saxpy.cu',
        log: '',
        diagnostics: [
          {
            file: 'examples/cuda/saxpy.cu',
            line: 4,
            column: 14,
            severity: 'error',
            message: 'identifier "z" is undefined',
          },
        ],
      },
    });
    const r = await cli([
      'bench',
      'examples/cuda/saxpy_vec4.cu',
      ...saxpyArgs16M,
      '--grid',
      '1',
      '--block',
      '1',
      '--ref',
      'examples/cuda/saxpy.cu',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      [
        'examples/cuda/saxpy.cu:4:14: error: identifier "z" is undefined',
        '  if (i < n) y[i] = a * x[i] + y[i];',
        '             ^',
        'cudakit: compile failed: 1 error in examples/cuda/saxpy.cu',
        '',
      ].join('\n'),
    );
  });
});
