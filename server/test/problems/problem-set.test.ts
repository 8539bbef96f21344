// SPDX-License-Identifier: MIT
// The problem set the server ships (server/problems/), without a GPU: every problem the list names is there,
// each a valid problem whose example submission validates against it, with three or more public cases and two or
// more hidden ones, the roofline's bytes, files inside its own folder, and cases small enough to evaluate in
// reasonable time (every case's buffers together at most 256 MiB).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type EvalArg,
  type EvalProblem,
  type ProblemSubmission,
  caseJob,
  parseArgSpec,
  validateProblem,
} from 'cudakit';
import { PROBLEMS_DIR, problemNames } from '../support/problem-set.js';

/** What the set must hold: the problems people benchmark. */
const REQUIRED = [
  'vector-add',
  'sum-reduction',
  'softmax',
  'layer-norm',
  'transpose',
  'sgemm',
  'bf16-gemm',
  'conv2d',
  'stencil-2d',
  'prefix-sum',
];
const CASE_BYTES_MAX = 256 * 2 ** 20;
const ELEMENT_BYTES: Readonly<Record<string, number>> = {
  ...{ f64: 8, i64: 8, u64: 8, f32: 4, i32: 4, u32: 4 },
  ...{ f16: 2, bf16: 2, i16: 2, u16: 2, i8: 1, u8: 1 },
};

const readJson = (file: string): unknown => JSON.parse(readFileSync(file, 'utf8'));

/** Device bytes of one argument of a case's job (0 for a scalar). */
function bytesOf(arg: EvalArg): number {
  if (typeof arg === 'string') {
    const spec = parseArgSpec(arg);
    return spec.kind === 'buffer' ? spec.length * ELEMENT_BYTES[spec.dtype]! : 0;
  }
  if (arg.kind !== 'buffer') return 0;
  const length = arg.length ?? (arg.shape ?? []).reduce((a, b) => a * b, 1);
  return length * ELEMENT_BYTES[arg.dtype]!;
}

/** The source files a kernel reference names, relative to its folder. */
function filesOf(ref: { source: unknown } | undefined): string[] {
  const s = ref?.source;
  return typeof s === 'object' && s !== null && 'file' in s && typeof s.file === 'string' ? [s.file] : [];
}

describe('the shipped problem set', () => {
  it('holds every problem of the list', () => {
    expect(problemNames()).toEqual(expect.arrayContaining(REQUIRED));
  });

  it('holds the f32 GEMM to the precision policy, its precise reference writing f64', () => {
    const p = readJson(join(PROBLEMS_DIR, 'sgemm', 'problem.json')) as EvalProblem;
    const precise = p.check?.precision?.reference;
    expect(precise?.args?.some((a) => typeof a === 'string' && /^c@ptr:f64\[/.test(a))).toBe(true);
    const job = caseJob(p, readJson(join(PROBLEMS_DIR, 'sgemm', 'example.json')) as ProblemSubmission, p.cases[0]!);
    expect(job.check?.precision?.reference).toMatchObject({ kernel: 'sgemm_precise', grid: [32, 32], block: [32, 32] });
  });

  describe.each(problemNames())('%s', (name) => {
    const dir = join(PROBLEMS_DIR, name);

    it('is a valid problem, and its example a valid submission to it', () => {
      const problem = readJson(join(dir, 'problem.json'));
      const example = readJson(join(dir, 'example.json'));
      expect(() => validateProblem(problem, example)).not.toThrow();
      expect((problem as EvalProblem).name).toBe(name);
    });

    it('has three or more public cases, two or more hidden ones, a description and the roofline’s bytes', () => {
      const p = readJson(join(dir, 'problem.json')) as EvalProblem;
      const visibility = p.cases.map((c) => c.visibility ?? 'public');
      expect(visibility.filter((v) => v === 'public').length).toBeGreaterThanOrEqual(3);
      expect(visibility.filter((v) => v === 'hidden').length).toBeGreaterThanOrEqual(2);
      expect(p.description?.length ?? 0).toBeGreaterThan(20);
      expect(p.timing?.bytes).toBeDefined();
      expect(p.reference).toBeDefined();
    });

    it('keeps its files in its own folder, and each case’s buffers within 256 MiB', () => {
      const p = readJson(join(dir, 'problem.json')) as EvalProblem;
      const example = readJson(join(dir, 'example.json')) as ProblemSubmission;
      const precise = filesOf(p.check?.precision?.reference);
      for (const file of [...filesOf(p.reference), ...filesOf(p.baseline), ...precise, ...filesOf(example)]) {
        const path = resolve(dir, file);
        expect(path.startsWith(`${dir}/`), file).toBe(true);
        expect(existsSync(path), file).toBe(true);
      }
      for (const c of p.cases) {
        const job = caseJob(p, example, c);
        const bytes = job.args.reduce((sum, a) => sum + bytesOf(a), 0);
        expect(bytes, `case ${JSON.stringify(c.dims)}`).toBeLessThanOrEqual(CASE_BYTES_MAX);
      }
    });
  });

  it('has nothing but problem folders', () => {
    for (const entry of readdirSync(PROBLEMS_DIR, { withFileTypes: true })) {
      expect(entry.isDirectory(), entry.name).toBe(true);
      expect(existsSync(join(PROBLEMS_DIR, entry.name, 'problem.json')), entry.name).toBe(true);
    }
  });
});
