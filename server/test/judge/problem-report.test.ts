// SPDX-License-Identifier: MIT
// What a submitter to a problem with cases learns of its hidden cases (server/src/judge/problem-report.ts): the stored
// report, the verdict and its error, the progress and the faults of a refused submission, each checked on its
// serialized JSON for the hidden cases' names and dimensions.
import { type ProblemProgress, caseName, validateProblem } from 'cudakit';
import { describe, expect, it } from 'vitest';
import {
  HIDDEN_CASE_FAILED,
  caseRefs,
  problemEventFilter,
  problemVerdictOf,
  redactFaults,
  redactProblemReport,
} from '../../src/judge/problem-report.js';
import { ADD, ADD_PROBLEM, HIDDEN_MARKS, addReport } from '../support/cases-problem.js';

/** Fails naming the first of a hidden case's names and dimensions found in `value`'s JSON. */
function expectNoHidden(value: unknown): void {
  const json = JSON.stringify(value);
  for (const mark of HIDDEN_MARKS) expect(json, `'${mark}' leaked`).not.toContain(mark);
}

describe('the report a submitter sees', () => {
  it('keeps of a hidden case whether it ran and passed and its part of the score, and every public case whole', () => {
    const report = addReport('pass');
    expect(JSON.stringify(report)).toContain('odd-secret'); // the fixture has what must not leak
    const view = redactProblemReport(report);
    expectNoHidden(view);
    expect(view.cases[2]).toEqual({
      index: 2,
      visibility: 'hidden',
      ran: true,
      passed: true,
      scored: { speedup: 2.25 },
    });
    expect(view.cases[3]).toEqual({
      index: 3,
      visibility: 'hidden',
      ran: true,
      passed: true,
      scored: { speedup: 2.375 },
    });
    expect(view.cases.slice(0, 2)).toEqual(report.cases.slice(0, 2));
    expect(view).toMatchObject({
      problem: 'add',
      name: 'add',
      passed: true,
      score: 2.1,
      scoreLow: 1.9,
      scoreHigh: 2.3,
    });
    expect(view.warnings).toEqual(["case 'small' is the smallest"]);
    expect(problemVerdictOf(report)).toEqual({ verdict: 'PASSED', phase: undefined, error: undefined });
  });

  it('says a hidden case failed, and nothing of what happened there', () => {
    const report = addReport('hidden-fail');
    const view = redactProblemReport(report);
    expectNoHidden(view);
    expect(view.cases.slice(2)).toEqual([
      { index: 2, visibility: 'hidden', ran: true, passed: false },
      { index: 3, visibility: 'hidden', ran: false, passed: false },
    ]);
    expect(view.score).toBeUndefined();
    const verdict = problemVerdictOf(report);
    expect(verdict).toEqual({ verdict: 'HIDDEN_CASE_FAILED', phase: undefined, error: { ...HIDDEN_CASE_FAILED } });
    expectNoHidden(verdict);
  });

  it("gives the first failing public case's verdict and error, named by the case", () => {
    const report = addReport('public-fail');
    expect(problemVerdictOf(report)).toEqual({
      verdict: 'INCORRECT',
      phase: 'check',
      error: {
        code: 'mismatch',
        message: "case 'n=4096': 3 of 4096 elements differ (first at [4095])",
        phase: 'check',
      },
    });
    const view = redactProblemReport(report);
    expectNoHidden(view);
    expect(view.cases[1]).toEqual(report.cases[1]);
  });

  it('marks a case timed below its roofline floor SUSPICIOUS, a hidden one by its number only', () => {
    const verdict = problemVerdictOf(addReport('hidden-floored'));
    expect(verdict.verdict).toBe('SUSPICIOUS');
    expect(verdict.error?.message).toMatch(/^hidden #2: the median read below/);
    expectNoHidden(verdict);
  });

  it('redacts an error of the whole problem that names a hidden case', () => {
    const report = addReport('hidden-fail');
    const message =
      "case 'odd-secret' (problem.cases[2]): Expected a positive integer for submission.grid but received 0";
    report.error = {
      kind: 'invalid-job',
      code: 'ERR_CUDAKIT_INVALID_PROBLEM',
      message: `Invalid problem: ${message}`,
      problems: [{ path: "case 'odd-secret' (problem.cases[2])", type: 'RangeError', message }],
    };
    const view = redactProblemReport(report);
    expectNoHidden(view);
    expect(view.error?.message).toContain('hidden #1');
    expectNoHidden(problemVerdictOf(report));
  });
});

describe("a refused submission's faults", () => {
  it('name a hidden case by its number, and a public one as the library does', () => {
    const problem = { ...ADD_PROBLEM, reference: { ...ADD_PROBLEM.reference, source: ADD } };
    // Fails where n is odd (both hidden cases) and where n is 4096 (a public one).
    const grid = 'cdiv(n, 256) + 0 * (1 / (n % 2 - 1)) + 0 * (1 / (n - 4096))';
    const submission = { source: ADD, kernel: 'add', grid, block: 256 };
    let faults: unknown[] = [];
    try {
      validateProblem(problem, submission);
    } catch (e) {
      faults = (e as { problems: unknown[] }).problems;
    }
    expect(JSON.stringify(faults)).toContain('777');
    const redacted = redactFaults(faults as never, caseRefs(problem.cases.map((c) => ({ ...c, name: caseName(c) }))));
    expectNoHidden(redacted);
    expect(redacted.map((f) => f.message)).toEqual([
      expect.stringMatching(/^case 'n=4096' \(problem\.cases\[1\]\): Expected a non-zero divisor for submission\.grid/),
      expect.stringMatching(/but it fails in hidden #1 /),
      expect.stringMatching(/but it fails in hidden #2 /),
    ]);
  });
});

describe("a problem job's progress", () => {
  it("names a hidden case 'hidden #k' when it starts, and shows nothing else of it, its phases included", () => {
    const filter = problemEventFilter(ADD_PROBLEM.cases);
    const samples = (caseIndex: number, name: string): ProblemProgress => ({
      kind: 'samples',
      name: `add [${name}]`,
      mode: 'cold',
      samples: 20,
      rejected: 0,
      elapsedMs: 3,
      relCI: 0.01,
      caseIndex,
    });
    const seen: unknown[] = [];
    const phases: boolean[] = [];
    const send = (p: ProblemProgress): void => {
      const shown = filter.progress(p);
      if (shown !== undefined) seen.push(shown);
      phases.push(filter.showsPhase());
    };
    send({ kind: 'case', index: 1, name: 'n=4096', visibility: 'public' });
    send(samples(1, 'n=4096'));
    send({ kind: 'case', index: 2, name: 'odd-secret', visibility: 'hidden' });
    send(samples(2, 'odd-secret'));
    send({ kind: 'checked', check: { passed: true, summary: 'n=1001 passed' } as never, caseIndex: 2 });
    send({ kind: 'case', index: 3, name: 'n=777', visibility: 'hidden' });
    send({ kind: 'rounds', a: 'reference [n=777]', b: 'add [n=777]', round: 1, rounds: 4, caseIndex: 3 });
    expectNoHidden(seen);
    expect(seen).toEqual([
      { kind: 'case', index: 1, name: 'n=4096', visibility: 'public' },
      samples(1, 'n=4096'),
      { kind: 'case', index: 2, name: 'hidden #1', visibility: 'hidden' },
      { kind: 'case', index: 3, name: 'hidden #2', visibility: 'hidden' },
    ]);
    expect(phases).toEqual([true, true, false, false, false, false, false]);
  });
});
