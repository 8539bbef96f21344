// SPDX-License-Identifier: MIT
// The shipped problems on the GPU: each problem's example, an honest submission, passes every case (the hidden ones
// included) through evaluateProblem() against the problem's reference and gets a score, no case below its roofline.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { type EvalProblem, type ProblemSubmission, evaluateProblem } from 'cudakit';
import { describeGpu } from '../../../test/helpers.js';
import { PROBLEMS_DIR, problemNames } from '../support/problem-set.js';

const read = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

describeGpu('the shipped problems', () => {
  it.each(problemNames())('%s: its example passes every case and is scored', async (name) => {
    const dir = join(PROBLEMS_DIR, name);
    const problem = read<EvalProblem>(join(dir, 'problem.json'));
    const example = read<ProblemSubmission>(join(dir, 'example.json'));
    const r = await evaluateProblem(problem, example, { baseDir: dir, preset: 'quick' });
    const failures = r.cases
      .filter((c) => !c.passed)
      .map((c) => `${c.name}: ${c.ran ? (c.report?.error?.message ?? 'failed') : 'not run'}`);
    expect(r.error?.message).toBeUndefined();
    expect(failures).toEqual([]);
    expect(r.passed).toBe(true);
    expect(r.score).toBeGreaterThan(0);
    for (const c of r.cases) expect(c.scored?.floored, `${name} ${c.name} below its roofline`).toBe(false);
  });
});
