// SPDX-License-Identifier: MIT
// The shipped vector-add problem through the real server binary and its real GPU workers: the problem's example goes
// through every case and passes with a score, and what the client reads back (the result and the events) shows of a
// hidden case only whether it ran and passed and its part of the score; a kernel fitted to the public shapes (every
// public n is a multiple of 1024; it leaves the elements past the last whole 1024 unwritten) passes every public case
// and fails a hidden one, and is told so with nothing of that case. Skipped without a GPU (describeGpu).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../../bench/binary.js';
import { describeGpu } from '../../../test/helpers.js';
import { until } from '../../../test/support/until.js';
import { expectNoHidden, shippedProblem } from '../support/cases-problem.js';

const { hidden: HIDDEN, hiddenMarks: HIDDEN_MARKS, example: EXAMPLE } = shippedProblem('vector-add');
const FITTED = `extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (n & ~1023)) c[i] = a[i] + b[i];
}
`;

describeGpu('problems with cases through the service, on a GPU', () => {
  let server: ServerProcess | undefined;
  let dataDir = '';

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'cudakit-problem-jobs-'));
    // No --problems-dir: the set the server ships. --drain-seconds 0: the sweep queues a confirmation re-run of the
    // first test's entry, which may be running when the suite ends; a drain would wait for it past the hook's time.
    server = await startServer({
      args: ['--port', '0', '--data-dir', dataDir, '--gpus', '0', '--log-level', 'warn', '--drain-seconds', '0'],
      env: { CUDAKIT_SERVER_WORKER: 'real' },
      startTimeoutMs: 90_000,
    });
  }, 120_000);

  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  async function json(path: string, body?: object): Promise<{ status: number; text: string }> {
    const res = await fetch(`${server!.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, text: await res.text() };
  }

  /** Submits a submission to vector-add and returns the result and everything the client read of it. */
  async function evaluate(submission: Record<string, unknown>): Promise<{ evaluation: any; text: string }> {
    const body = { problem: 'vector-add', ...submission, timeoutSeconds: 600 };
    const submitted = await json('/v1/evaluations', body);
    expect(submitted.status, submitted.text).toBe(202);
    const { id } = JSON.parse(submitted.text) as { id: string };
    let read = '';
    await until(
      async () => {
        read = (await json(`/v1/evaluations/${id}?wait=30`)).text;
        return /"status":"(succeeded|failed|cancelled)"/.test(read);
      },
      { timeoutMs: 600_000, what: () => `${id} to end: ${read}` },
    );
    const events = (await json(`/v1/evaluations/${id}/events`)).text;
    return { evaluation: JSON.parse(read), text: `${submitted.text}\n${read}\n${events}` };
  }

  it("passes the problem's example through every case, with a score", async () => {
    const { evaluation, text } = await evaluate(EXAMPLE);
    expect(evaluation.verdict, JSON.stringify(evaluation.error)).toBe('PASSED');
    expect(evaluation).toMatchObject({ status: 'succeeded', problem: 'vector-add', error: null });
    expect(evaluation.score).toBeGreaterThan(0);
    expect(evaluation.scoreLow).toBeLessThanOrEqual(evaluation.score);
    expect(evaluation.scoreHigh).toBeGreaterThanOrEqual(evaluation.score);
    const hidden = (evaluation.report.cases as Record<string, any>[]).filter((c) => c.visibility === 'hidden');
    expect(hidden).toHaveLength(HIDDEN.length);
    for (const c of hidden) {
      expect(Object.keys(c).sort()).toEqual(['index', 'passed', 'ran', 'scored', 'visibility']);
      expect(c).toMatchObject({ ran: true, passed: true, scored: { speedup: expect.any(Number) } });
    }
    const publicCases = (evaluation.report.cases as Record<string, any>[]).filter((c) => c.visibility === 'public');
    for (const c of publicCases) expect(c.report.passed).toBe(true);
    expect(text).toContain('"name":"hidden #1"');
    expectNoHidden(text, HIDDEN_MARKS);
  }, 660_000);

  it('catches a kernel fitted to the public shapes on a hidden case, and says nothing of that case', async () => {
    const { evaluation, text } = await evaluate({
      source: FITTED,
      kernel: 'vector_add',
      grid: 'cdiv(n, 256)',
      block: 256,
    });
    expect(evaluation).toMatchObject({
      status: 'succeeded',
      verdict: 'HIDDEN_CASE_FAILED',
      phase: null,
      error: { code: 'HIDDEN_CASE_FAILED' },
    });
    expect(evaluation.score).toBeUndefined();
    const cases = evaluation.report.cases as Record<string, any>[];
    expect(cases.filter((c) => c.visibility === 'public').every((c) => c.passed)).toBe(true);
    expect(cases.filter((c) => c.visibility === 'hidden').some((c) => c.ran && !c.passed)).toBe(true);
    expectNoHidden(text, HIDDEN_MARKS);
  }, 660_000);
});
