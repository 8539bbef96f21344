// SPDX-License-Identifier: MIT
// The shipped problems' CUDA with real NVRTC, no GPU: every reference and example compiles for a Hopper GPU without a
// warning and defines the kernel its problem names, so a problem that cannot run fails here, before a GPU sees it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { type EvalProblem, Program, type ProblemSubmission } from 'cudakit';
import { describeNvrtc } from '../../../test/helpers.js';
import { PROBLEMS_DIR, problemNames } from '../support/problem-set.js';

describeNvrtc('the shipped problems compile', () => {
  it.each(problemNames())('%s', (name) => {
    const dir = join(PROBLEMS_DIR, name);
    const problem = JSON.parse(readFileSync(join(dir, 'problem.json'), 'utf8')) as EvalProblem;
    const example = JSON.parse(readFileSync(join(dir, 'example.json'), 'utf8')) as ProblemSubmission;
    const precise = problem.check?.precision?.reference;
    const kernels = [problem.reference, problem.baseline, precise, example].filter((k) => k !== undefined);
    for (const k of kernels) {
      const source = k.source as { file: string };
      const text = readFileSync(join(dir, source.file), 'utf8');
      const code = new Program(text, { name: source.file, headers: { ...problem.headers, ...k.headers } }).compile({
        ...problem.compile,
        ...k.compile,
        target: 'ptx',
        arch: 'compute_90',
        includePaths: [dir],
        cache: false,
      });
      expect(code.log.trim(), `${name}/${source.file}`).toBe('');
      expect(code.ptx, `${name}/${source.file} defines ${k.kernel}`).toMatch(
        new RegExp(`\\.entry\\s+${k.kernel}\\s*\\(`),
      );
    }
  });
});
