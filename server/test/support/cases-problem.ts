// SPDX-License-Identifier: MIT
// A small problem with cases and registry folders holding it, for the tests of the registry, the submissions to a
// problem and the redaction of its hidden cases.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EvalProblem, ProblemCaseReport, ProblemReport } from 'cudakit';
import { expect } from 'vitest';
import { failedReport, passedReport } from './fake-pool.js';

export const ADD = `extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
`;

/** Two public cases and two hidden ones (one named, one named by its dimensions). */
export const ADD_PROBLEM = {
  name: 'add',
  description: 'c = a + b',
  dims: { n: { min: 1, max: 1 << 20, description: 'elements' } },
  args: ['a@ptr:f32[n]=normal(0,1)', 'b@ptr:f32[n]=normal(0,1)', 'c@ptr:f32[n]:out', 'n@i32=n'],
  reference: { source: { file: 'reference.cu' }, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 },
  timing: { bytes: '12 * n', flops: 'n' },
  cases: [
    { name: 'small', dims: { n: 1024 } },
    { dims: { n: 4096 } },
    { name: 'odd-secret', dims: { n: 1001 }, visibility: 'hidden' },
    { dims: { n: 777 }, visibility: 'hidden' },
  ],
} satisfies EvalProblem;

/** What of ADD_PROBLEM's hidden cases must never reach a client: their names and their dimensions' values. */
export const HIDDEN_MARKS = ['odd-secret', '1001', 'n=777', '777'];

/**
 * `text` with what differs from run to run masked: times (ISO and epoch milliseconds), job ids and the boards'
 * pseudonyms (a hash under a key made per store), whose digits spell a mark such as '777' now and then (a time at
 * .777 s, 'anon-1cbbc9b777') without anything of a hidden case in them.
 */
export function masked(text: string): string {
  return text
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<time>')
    .replace(/\b\d{12,}\b/g, '<ms>')
    .replace(/ev_[0-9A-Z]{26}/g, 'ev_<id>')
    .replace(/anon-[0-9a-f]{10}/g, 'anon-<hash>');
}

/** Fails when a mark of a hidden case (its name, its dimensions' values) is in `text`, times and ids aside. */
export function expectNoHidden(text: string, marks: readonly string[] = HIDDEN_MARKS): void {
  const plain = masked(text);
  for (const mark of marks) expect(plain, `'${mark}' leaked`).not.toContain(mark);
}

/** ADD_PROBLEM's folder and files under a registry, to spread into registry(). */
export const ADD_FILES = { 'add/problem.json': ADD_PROBLEM, 'add/reference.cu': ADD };

/** A single-shape problem's folder (y = 1, a JavaScript reference) to spread beside ADD_FILES. */
export const FILL_FILES = {
  'fill/problem.json': { description: 'y = 1', args: ['y@ptr:f32[32]:out', 'n@i32=32'], timing: { bytes: 128 } },
  'fill/reference.mjs': 'export const reference = ([y]) => y.fill(1);',
};

/** A registry folder with the given files (path → content; objects are written as JSON); pushed onto `made`. */
export function registry(files: Record<string, string | object>, made: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-problem-cases-'));
  made.push(dir);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

/** How addReport's submission did: every case passed, a public case failed, or a hidden one (after the public ones). */
export type AddOutcome = 'pass' | 'public-fail' | 'hidden-fail' | 'hidden-floored';

const MISMATCH = { kind: 'verdict', code: 'mismatch', defence: 'mismatch' } as const;

/**
 * A ProblemReport of ADD_PROBLEM as the library would give it, with everything a hidden case has: its name, its
 * dimensions, its timings, its report (whose messages name its size) and the warnings that name it.
 */
export function addReport(outcome: AddOutcome, kernel = 'add'): ProblemReport {
  const names = ['small', 'n=4096', 'odd-secret', 'n=777'];
  const publicFails = outcome === 'public-fail';
  const cases = ADD_PROBLEM.cases.map((c, index): ProblemCaseReport => {
    const n = c.dims.n;
    const name = names[index]!;
    const hidden = c.visibility === 'hidden';
    const ran = !publicFails ? !(outcome === 'hidden-fail' && index === 3) : !hidden;
    const fails = (publicFails && index === 1) || (outcome === 'hidden-fail' && index === 2);
    const label = `${kernel} [${name}]`;
    const report = !ran
      ? undefined
      : fails
        ? failedReport(label, { ...MISMATCH, message: `3 of ${n} elements differ (first at [${n - 1}])` }, 'check')
        : passedReport(label, { warnings: [`${label}: timed over ${n} elements`] });
    return {
      index,
      name,
      visibility: hidden ? 'hidden' : 'public',
      dims: { n },
      ran,
      passed: ran && !fails,
      ...(ran ? { baselineUs: 10 + index, candidateUs: 5, speedup: 2 + index / 8 } : {}),
      ...(ran ? { speedupLow: 1.5, speedupHigh: 3 } : {}),
      bytes: 12 * n,
      flops: n,
      floorUs: 0.5,
      report,
    };
  });
  const passed = outcome === 'pass' || outcome === 'hidden-floored';
  const warnings = [
    `case '${names[0]}' is the smallest`,
    `case '${names[2]}' has an odd size, ${ADD_PROBLEM.cases[2]!.dims.n}`,
  ];
  if (passed) {
    cases.forEach((c) => {
      c.scored = {
        speedup: c.speedup!,
        speedupLow: 1.5,
        speedupHigh: 3,
        floored: outcome === 'hidden-floored' && c.index === 3,
      };
    });
  }
  return {
    problem: 'add',
    name: kernel,
    passed,
    error: undefined,
    score: passed ? 2.1 : undefined,
    scoreLow: passed ? 1.9 : undefined,
    scoreHigh: passed ? 2.3 : undefined,
    device: { name: 'NVIDIA H200', arch: 'sm_90' },
    cases,
    warnings,
  };
}

/** A problem the server ships, for the tests that submit to it: its folder, its problem and its example submission. */
export interface ShippedProblem {
  dir: string;
  problem: EvalProblem;
  hidden: EvalProblem['cases'][number][];
  /** What of its hidden cases must never reach a client: their names and their dimensions' values. */
  hiddenMarks: string[];
  /** example.json with example.cu's text as its source. */
  example: Record<string, unknown>;
}

export function shippedProblem(name: string): ShippedProblem {
  const dir = fileURLToPath(new URL(`../../problems/${name}`, import.meta.url));
  const read = (file: string): string => readFileSync(join(dir, file), 'utf8');
  const problem = JSON.parse(read('problem.json')) as EvalProblem;
  const hidden = problem.cases.filter((c) => c.visibility === 'hidden');
  const hiddenMarks = hidden.flatMap((c) => [
    ...(c.name === undefined ? [] : [c.name]),
    ...Object.values(c.dims).map(String),
  ]);
  const example = { ...(JSON.parse(read('example.json')) as Record<string, unknown>), source: read('example.cu') };
  return { dir, problem, hidden, hiddenMarks, example };
}
