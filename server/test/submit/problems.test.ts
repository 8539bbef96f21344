// SPDX-License-Identifier: MIT
// The problem registry (server/src/submit/problems.ts): folders read and checked at start, jobs expanded, every mistake
// of an operator's folder or of a request named.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidJobError } from 'cudakit';
import { afterEach, describe, expect, it } from 'vitest';
import { importJsReference } from '../../src/run/worker/reference-module.js';
import { ProblemRegistry, ProblemRegistryError } from '../../src/submit/problems.js';
import { SAXPY } from '../../../test/support/kernels.js';

const ARGS = ['a@f32=2', 'x@ptr:f32[1024]=uniform(-1,1)', 'y@ptr:f32[1024]=uniform(-1,1):out', 'n@i32=1024'];

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A registry folder with the given files (path → content; objects are written as JSON). */
function registry(files: Record<string, string | object>): string {
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-problems-'));
  dirs.push(dir);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

const STANDARD = {
  'saxpy/problem.json': {
    description: 'y = a x + y',
    args: ARGS,
    reference: { source: { file: 'ref.cu' }, kernel: 'saxpy' },
    timing: { bytes: 12288, flops: 2048 },
    check: { atol: 1e-5 },
  },
  'saxpy/ref.cu': SAXPY,
  'relu/problem.json': { args: ['x@ptr:f32[256]=uniform(-1,1)', 'y@ptr:f32[256]:out', 'n@i32=256'] },
  'relu/reference.mjs':
    'export const reference = ([x, y, n]) => { for (let i = 0; i < n; i++) y[i] = Math.max(0, x[i]); };\n',
};

const candidate = (reference: unknown, extra: Record<string, unknown> = {}) => ({
  source: 'extern "C" __global__ void k() {}',
  kernel: 'k',
  grid: 4,
  block: 256,
  reference,
  ...extra,
});

function invalid(fn: () => unknown): InvalidJobError {
  try {
    fn();
  } catch (e) {
    if (e instanceof InvalidJobError) return e;
    throw e;
  }
  throw new Error('expected an InvalidJobError');
}

describe('the problem registry', () => {
  it('lists CUDA and JavaScript problems, sorted, with their args, bytes and flops', () => {
    const problems = ProblemRegistry.load(registry(STANDARD));
    expect(problems.list()).toEqual([
      { name: 'relu', description: '', args: STANDARD['relu/problem.json'].args, reference: 'javascript' },
      { name: 'saxpy', description: 'y = a x + y', args: ARGS, reference: 'cuda', bytes: 12288, flops: 2048 },
    ]);
  });

  it("expands a CUDA problem: its args, its kernel's source read in, its bytes and tolerances under the job's", () => {
    const problems = ProblemRegistry.load(registry(STANDARD));
    const { job, problem } = problems.expand(
      candidate({ problem: 'saxpy' }, { timing: { preset: 'quick', flops: 1 }, check: { trials: 2 } }),
    );
    expect(problem).toBeUndefined();
    expect(job).toMatchObject({
      args: ARGS,
      reference: { source: { text: SAXPY, name: 'ref.cu' }, kernel: 'saxpy' },
      timing: { preset: 'quick', bytes: 12288, flops: 1 },
      check: { trials: 2, atol: 1e-5 },
    });
  });

  it('expands a JavaScript problem without a reference in the job, naming its module for the worker', async () => {
    const dir = registry(STANDARD);
    const problems = ProblemRegistry.load(dir);
    const { job, problem } = problems.expand(candidate({ problem: 'relu' }));
    expect(problem).toBe('relu');
    expect(job.reference).toBeUndefined();
    expect(job.args).toEqual(STANDARD['relu/problem.json'].args);
    const path = problems.modulePath('relu')!;
    expect(path).toBe(join(dir, 'relu', 'reference.mjs'));
    const reference = await importJsReference(path);
    const y = new Float32Array(3);
    await reference([new Float32Array([-1, 0.5, 2]), y, 3]);
    expect([...y]).toEqual([0, 0.5, 2]);
  });

  it('leaves a job without a problem as it is', () => {
    const job = candidate({ expected: {} });
    expect(ProblemRegistry.empty().expand(job)).toEqual({ job, problem: undefined });
  });

  it('refuses an unknown problem, args beside one, and other keys beside it, all at once', () => {
    const problems = ProblemRegistry.load(registry(STANDARD));
    const e = invalid(() => problems.expand(candidate({ problem: 'gemm', kernel: 'x' }, { args: ['i32=1'] })));
    expect(e.problems.map((p) => p.path)).toEqual(['job.reference', 'job.reference.problem', 'job.args']);
    expect(e.problems[1]!.message).toBe(
      'Expected the name of an installed problem for job.reference.problem ' +
        "but received 'gemm' (installed: relu, saxpy)",
    );
    expect(e.problems[2]!.message).toContain("the problem 'gemm' defines them");
    const none = invalid(() => ProblemRegistry.empty().expand(candidate({ problem: 'saxpy' })));
    expect(none.problems[0]!.message).toContain('no problem is installed on this server');
  });

  it.each([
    [{ 'a b/problem.json': {} }, "Problem folder 'a b'"],
    [{ 'p/other.txt': 'x' }, 'no problem.json'],
    [{ 'p/problem.json': '{ nope' }, 'not JSON'],
    [{ 'p/problem.json': { args: ARGS, reference: {}, extra: 1 } }, 'unknown keys extra'],
    [{ 'p/problem.json': { args: [] } }, 'expected args, a non-empty array'],
    [{ 'p/problem.json': { args: ARGS } }, 'no reference'],
    [{ 'p/problem.json': { args: ARGS, timing: { preset: 'quick' } } }, "timing.preset is not a problem's to set"],
    [{ 'p/problem.json': { args: ARGS, check: { trials: 9 } } }, "check.trials is not a problem's to set"],
    [
      { 'p/problem.json': { args: ARGS, reference: { source: { file: '../secret.cu' }, kernel: 'k' } } },
      "'../secret.cu' is outside the folder",
    ],
    [
      { 'p/problem.json': { args: ARGS, reference: { source: { file: 'missing.cu' }, kernel: 'k' } } },
      "'missing.cu' does not exist",
    ],
    [
      {
        'p/problem.json': { args: ARGS, reference: { source: { text: SAXPY }, kernel: 'saxpy' } },
        'p/reference.mjs': 'export const reference = () => {};',
      },
      'both a reference kernel in problem.json and',
    ],
    [{ 'p/problem.json': { args: ['ptr:f99[4]'] }, 'p/reference.mjs': 'export const reference = () => {};' }, 'f99'],
  ])('refuses a folder that cannot be served (%#), naming it', (files, expected) => {
    const dir = registry(files as Record<string, string | object>);
    expect(() => ProblemRegistry.load(dir)).toThrow(ProblemRegistryError);
    expect(() => ProblemRegistry.load(dir)).toThrow(expected);
  });

  it('refuses a registry that is not a directory', () => {
    expect(() => ProblemRegistry.load(join(tmpdir(), 'cudakit-no-such-registry'))).toThrow('is not a directory');
  });

  it('refuses a reference module without a reference function', async () => {
    const dir = registry({ 'm.mjs': 'export const other = 1;' });
    await expect(importJsReference(join(dir, 'm.mjs'))).rejects.toThrow(
      "Expected a function exported as 'reference' for the problem's reference module",
    );
  });
});
