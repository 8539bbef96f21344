// SPDX-License-Identifier: MIT
// The shipped problem set through the real server binary with fake GPU workers (no GPU): with no --problems-dir it
// serves server/problems/; a submission to vector-add goes to a worker child with the problem (the fake worker plays
// each case as evaluateProblem() does: fake-problem.ts), and what the client reads back (the problem list, the result,
// the events) names no hidden case and gives none of its dimensions; a submission that fails a hidden case is told so,
// in the same words whatever happened there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNoHidden, shippedProblem } from '../support/cases-problem.js';
import { FAKE_GPU_ENV, type ServerProcess, startServer } from '../support/server-process.js';

const { problem: PROBLEM, hidden: HIDDEN, hiddenMarks: HIDDEN_MARKS, example } = shippedProblem('vector-add');
const SUBMISSION = { problem: 'vector-add', ...example };

let server: ServerProcess;
beforeAll(async () => {
  server = await startServer([], FAKE_GPU_ENV);
}, 60_000);
afterAll(() => server?.stop());

async function json(path: string, body?: object): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text() };
}

/** Submits, waits for the end, and returns the result and the events as the client reads them. */
async function evaluate(body: object): Promise<{ evaluation: Record<string, any>; text: string }> {
  const submitted = await json('/v1/evaluations', body);
  expect(submitted.status, submitted.text).toBe(202);
  const { id } = JSON.parse(submitted.text) as { id: string };
  let read = await json(`/v1/evaluations/${id}?wait=30`);
  for (let i = 0; i < 10 && !/"status":"(succeeded|failed|cancelled)"/.test(read.text); i++) {
    read = await json(`/v1/evaluations/${id}?wait=30`);
  }
  const events = await json(`/v1/evaluations/${id}/events`);
  return { evaluation: JSON.parse(read.text) as Record<string, any>, text: `${read.text}\n${events.text}` };
}

describe('the shipped problems through the server, with fake GPU workers', () => {
  it('lists the shipped set by default, vector-add with its public cases and its hidden ones counted', async () => {
    expect(HIDDEN.length).toBeGreaterThan(0);
    const list = await json('/v1/problems');
    expect(list.status).toBe(200);
    const { problems } = JSON.parse(list.text) as { problems: Record<string, unknown>[] };
    const vectorAdd = problems.find((p) => p.name === 'vector-add');
    expect(vectorAdd).toMatchObject({ kind: 'cases', hiddenCases: HIDDEN.length, reference: 'cuda' });
    expect((vectorAdd!.cases as unknown[]).length).toBe(PROBLEM.cases.length - HIDDEN.length);
    expectNoHidden(list.text, HIDDEN_MARKS);
  });

  it("runs vector-add's example through every case: PASSED, its score, and nothing of a hidden case", async () => {
    const { evaluation, text } = await evaluate(SUBMISSION);
    expect(evaluation).toMatchObject({ status: 'succeeded', verdict: 'PASSED', problem: 'vector-add', score: 2 });
    const cases = evaluation.report.cases as Record<string, unknown>[];
    expect(cases.filter((c) => c.visibility === 'hidden')).toEqual(
      HIDDEN.map(() => ({
        index: expect.any(Number),
        visibility: 'hidden',
        ran: true,
        passed: true,
        scored: { speedup: 2 },
      })),
    );
    expect(text).toContain('"name":"hidden #1"');
    expectNoHidden(text, HIDDEN_MARKS);
  });

  it('says a hidden case failed, and nothing of it', async () => {
    const { evaluation, text } = await evaluate({ ...SUBMISSION, name: 'fake:hidden-fail' });
    expect(evaluation).toMatchObject({ status: 'succeeded', verdict: 'HIDDEN_CASE_FAILED', phase: null });
    expect(evaluation.error.code).toBe('HIDDEN_CASE_FAILED');
    expectNoHidden(text, HIDDEN_MARKS);
  });
});
