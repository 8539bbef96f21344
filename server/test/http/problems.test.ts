// SPDX-License-Identifier: MIT
// Problems with cases through the v1 API, over a fake pool: GET /v1/problems shows a problem's dimensions, public
// cases and arguments and only the number of its hidden cases; a submission to one is refused for what a job is
// refused for and for what validateProblem() finds (a fault in a hidden case said by its number), runs with the
// problem from the registry, and its result, events and pages say nothing of a hidden case but whether it passed.
import { rmSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/shared.js';
import { ProblemRegistry } from '../../src/submit/problems.js';
import { auth, closeApps, harness, type Who } from '../support/app-harness.js';
import { ADD, ADD_FILES, ADD_PROBLEM, expectNoHidden, registry } from '../support/cases-problem.js';
import { settled } from '../support/helpers.js';
import type { SlotOutcome } from '../../src/run/pool.js';
import { fakeProblemProgress } from '../../src/run/worker/fake-problem.js';

const dirs: string[] = [];
afterEach(closeApps);
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const FILL = { description: 'y = 1', args: ['y@ptr:f32[32]:out', 'n@i32=32'], timing: { bytes: 128 } };
const problems = (): ProblemRegistry =>
  ProblemRegistry.load(
    registry(
      { ...ADD_FILES, 'fill/problem.json': FILL, 'fill/reference.mjs': 'export const reference = ([y]) => y.fill(1);' },
      dirs,
    ),
  );

describe('GET /v1/problems', () => {
  it('lists a problem with cases: its dimensions, public cases and arguments; its hidden cases counted', async () => {
    const { app } = await harness({ problems: problems() });
    const res = await app.inject({ method: 'GET', url: '/v1/problems', headers: auth('viewer') });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      problems: [
        {
          name: 'add',
          description: 'c = a + b',
          kind: 'cases',
          args: ADD_PROBLEM.args,
          reference: 'cuda',
          dims: { n: { min: 1, max: 1 << 20, description: 'elements' } },
          cases: [
            { name: 'small', dims: { n: 1024 } },
            { name: 'n=4096', dims: { n: 4096 } },
          ],
          hiddenCases: 2,
          bytes: '12 * n',
          flops: 'n',
        },
        { name: 'fill', description: 'y = 1', args: FILL.args, reference: 'javascript', bytes: 128 },
      ],
    });
    expectNoHidden(res.body);
  });
});

/** A submission to ADD_PROBLEM: an honest kernel, launched over n. */
const SUBMISSION = { problem: 'add', source: ADD, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 };

async function submit(app: App, payload: object, who: Who = 'alice') {
  return app.inject({ method: 'POST', url: '/v1/evaluations', headers: auth(who), payload });
}

/** The 400's details, after checking its status and code. */
function refused(res: { statusCode: number; body: string; json(): unknown }): { path: string; message: string }[] {
  expect(res.statusCode, res.body).toBe(400);
  const body = res.json() as { code: string; details: { path: string; message: string }[] };
  expect(['ERR_INVALID_JOB', 'FST_ERR_VALIDATION']).toContain(body.code);
  return body.details;
}

/** Submits, waits for the end, and returns everything a client can read of the job: the result, events and page. */
async function runToEnd(app: App, payload: object) {
  const res = await submit(app, payload);
  expect(res.statusCode, res.body).toBe(202);
  const { id } = res.json() as { id: string };
  await settled(app.service, id);
  const read = (url: string, accept = 'application/json') =>
    app.inject({ method: 'GET', url, headers: { ...auth('alice'), accept } });
  const evaluation = await read(`/v1/evaluations/${id}`);
  const events = await read(`/v1/evaluations/${id}/events`, 'text/event-stream');
  const page = await read(`/evaluations/${id}`, 'text/html');
  expect([evaluation.statusCode, events.statusCode, page.statusCode]).toEqual([200, 200, 200]);
  return { id, evaluation: evaluation.json() as Record<string, any>, events: events.body, page: page.body };
}

/** The events of a stream as [type, the progress's case name or the phase]. */
function eventList(stream: string): string[] {
  return [...stream.matchAll(/^event: (\w+)\ndata: (.*)$/gm)].map(([, type, data]) => {
    const d = JSON.parse(data!) as { kind?: string; name?: string; phase?: string };
    return type === 'progress' ? `progress ${d.kind} ${d.name}` : type === 'phase' ? `phase ${d.phase}` : type!;
  });
}

/** What the MCP tool get_evaluation says of evaluation `id`: its text and its structured content. */
async function mcpText(app: App, id: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { ...auth('alice'), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_evaluation', arguments: { id } } },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.body;
}

describe('a submission to a problem with cases', () => {
  it('runs with the problem from the registry, and shows of a hidden case only that it passed', async () => {
    const { app, pool } = await harness({ problems: problems() });
    const { id, evaluation, events, page } = await runToEnd(app, SUBMISSION);
    const run = pool.runs[0]!;
    const { problem: _name, ...submission } = SUBMISSION;
    expect(run.job).toEqual(submission);
    expect(run.extras?.problem?.reference?.source).toEqual({ text: ADD, name: 'reference.cu' });
    expect(run.extras?.problem?.cases).toEqual(ADD_PROBLEM.cases);
    // Each case compares with the reference: the time phase's deadline is a comparison's (4 × 10 s + 30 s).
    expect(run.deadlines.phaseMs.time).toBe(70_000);
    expect((await app.service.get(id))!.job).toEqual(SUBMISSION);
    expect(evaluation).toMatchObject({
      status: 'succeeded',
      verdict: 'PASSED',
      problem: 'add',
      // Every case is a comparison: without a timeoutSeconds of its own, a submission gets the most a job has.
      options: { timeoutSeconds: 600 },
      score: 2,
      scoreLow: 1.9,
      scoreHigh: 2.1,
      error: null,
    });
    expect(evaluation.report.cases.slice(2)).toEqual([
      { index: 2, visibility: 'hidden', ran: true, passed: true, scored: { speedup: 2 } },
      { index: 3, visibility: 'hidden', ran: true, passed: true, scored: { speedup: 2 } },
    ]);
    expect(evaluation.report.cases[0]).toMatchObject({ name: 'small', dims: { n: 1024 }, baselineUs: 20 });
    expect(eventList(events)).toEqual([
      'queued',
      'started',
      'phase compile',
      'phase check',
      'progress case small',
      'phase compile',
      'phase check',
      'progress samples add [small]',
      'progress case n=4096',
      'phase compile',
      'phase check',
      'progress samples add [n=4096]',
      'progress case hidden #1',
      'progress case hidden #2',
      'done',
    ]);
    expect(page).toContain('Cases of add');
    expect(page).toContain('hidden #2');
    const mcp = await mcpText(app, id);
    expect(mcp).toContain('score: 2.000 (95% CI 1.900 … 2.100)');
    expect(mcp).toContain('hidden #1: passed, 2.00× the baseline');
    for (const text of [JSON.stringify(evaluation), events, page, mcp]) expectNoHidden(text);
  });

  it('fails in a hidden case with the same words whatever happened there, and nothing of the case', async () => {
    const { app } = await harness({ problems: problems() });
    const { evaluation, events, page } = await runToEnd(app, { ...SUBMISSION, name: 'hidden-fail' });
    expect(evaluation).toMatchObject({
      status: 'succeeded',
      verdict: 'HIDDEN_CASE_FAILED',
      phase: null,
      error: {
        code: 'HIDDEN_CASE_FAILED',
        message: 'a hidden case failed: its dimensions and what went wrong there are not shown',
      },
    });
    expect(evaluation.score).toBeUndefined();
    expect(evaluation.report.cases.slice(2)).toEqual([
      { index: 2, visibility: 'hidden', ran: true, passed: false },
      { index: 3, visibility: 'hidden', ran: false, passed: false },
    ]);
    // The compatible routes' job status reads any of one's jobs: theirs says no more.
    const compat = await app.inject({ method: 'GET', url: `/job/${evaluation.id}`, headers: auth('alice') });
    expect(compat.statusCode, compat.body).toBe(200);
    expect(compat.json()).toMatchObject({ status: 'completed', error: null });
    for (const text of [JSON.stringify(evaluation), events, page, compat.body]) expectNoHidden(text);
  });

  it('ends in a hidden case by a deadline or a crash with no phase, and nothing of the case', async () => {
    const { app, pool } = await harness({ problems: problems() });
    const started = fakeProblemProgress(app.service.problems.withCases('add')!, { ...SUBMISSION }, 'hidden-fail');
    const ends: SlotOutcome[] = [
      { kind: 'timeout', phase: 'check', limitMs: 60_000, scope: 'phase' },
      {
        kind: 'crashed',
        phase: 'check',
        signal: 'SIGSEGV',
        exitCode: undefined,
        stderrTail: 'odd-secret',
        reason: 'x',
      },
    ];
    for (const outcome of ends) {
      pool.script = () => ({ delayMs: 5, outcome, progress: started });
      const { evaluation, events } = await runToEnd(app, SUBMISSION);
      expect(evaluation).toMatchObject({ verdict: outcome.kind === 'timeout' ? 'TIMEOUT' : 'CRASHED', phase: null });
      expect(evaluation.error.message).toMatch(/in a hidden case/);
      // The deadline's length would tell the phase (each has its own), and the worker's stderr the case.
      expect(evaluation.error.message).not.toMatch(/\d+ s|odd-secret/);
      expect(evaluation.error.phase).toBeUndefined();
      for (const text of [JSON.stringify(evaluation), events]) expectNoHidden(text);
    }
  });

  it("fails in a public case with that case's verdict and error", async () => {
    const { app } = await harness({ problems: problems() });
    const { evaluation } = await runToEnd(app, { ...SUBMISSION, name: 'public-fail' });
    expect(evaluation).toMatchObject({
      verdict: 'INCORRECT',
      phase: 'check',
      error: { code: 'mismatch', message: "case 'n=4096': 3 of 4096 elements differ (n=4096)", phase: 'check' },
    });
    expect(evaluation.report.cases.map((c: { ran: boolean }) => c.ran)).toEqual([true, true, false, false]);
  });

  it("refuses a bad expression with the library's words, and a fault in a hidden case by its number only", async () => {
    const { app } = await harness({ problems: problems() });
    expect(refused(await submit(app, { ...SUBMISSION, grid: 'cdiv(n, 256' }))).toEqual([
      { path: 'body.grid', message: expect.stringMatching(/^Expected .* for submission\.grid/) },
    ]);
    // Fails where n is odd: both hidden cases, and no public one.
    const hidden = refused(await submit(app, { ...SUBMISSION, grid: 'cdiv(n, 256) + 0 * (1 / (n % 2 - 1))' }));
    expect(hidden.map((d) => d.message)).toEqual([
      expect.stringContaining('but it fails in hidden #1 '),
      expect.stringContaining('but it fails in hidden #2 '),
    ]);
    // Over the GPU's threads per block in the hidden case of n = 1001 only.
    const block = refused(await submit(app, { ...SUBMISSION, block: 'min(n, 1024) + (n % 2) * 200' }));
    expect(block.map((d) => d.message)).toEqual([expect.stringContaining('but it fails in hidden #1 ')]);
    const publicBlock = refused(await submit(app, { ...SUBMISSION, block: 'n' }));
    expect(publicBlock).toContainEqual({
      path: "case 'n=4096' (problem.cases[1]) job.block",
      message: expect.stringContaining("case 'n=4096' (problem.cases[1]): Expected at most 1024 threads per block"),
    });
    for (const r of [hidden, block, publicBlock]) expectNoHidden(JSON.stringify(r));
    expect(app.service.pool.slots()[0]!.jobs).toBe(0);
  });

  it('refuses what a job is refused for: a file, an include, a flag, the size caps, other fields', async () => {
    const { app } = await harness({ problems: problems() });
    const cases: [object, string | RegExp][] = [
      [{ source: { file: 'reference.cu' } }, /^body\.source/],
      [{ source: `#include "/etc/passwd"\n${ADD}` }, "#include of in-memory headers and CUDA's own only"],
      [{ headers: { 'h.h': '#include "../secret.h"' } }, "#include of in-memory headers and CUDA's own only"],
      [{ compile: { extraFlags: ['--pre-include=/etc/passwd'] } }, 'an allowed NVRTC flag'],
      [{ compile: { includePaths: ['/etc'] } }, /includePaths/],
      [
        { headers: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`h${i}.h`, 'x'.repeat(256 * 1024)])) },
        'characters of source and headers in all',
      ],
      [{ kernel: 'add\n#include "/etc/passwd"' }, 'a name on one line'],
      [{ args: ['f32=1'] }, 'Unknown field submission.args'],
      [{ reference: { problem: 'add' } }, 'Unknown field submission.reference'],
      [{ deviceMetrics: true }, 'Expected no deviceMetrics for job.deviceMetrics'],
      [{ problem: 'gemm' }, "received 'gemm' (installed: add)"],
      [{ problem: 'fill' }, "'fill' is a single-shape problem: name it as reference: { problem: 'fill' }"],
      [{ problem: '../add' }, /^body\.problem/],
    ];
    for (const [change, expected] of cases) {
      const details = refused(await submit(app, { ...SUBMISSION, ...change }));
      const text = details.map((d) => `${d.path}: ${d.message}`).join('\n');
      if (typeof expected === 'string') expect(text, JSON.stringify(change).slice(0, 80)).toContain(expected);
      else expect(text, JSON.stringify(change).slice(0, 80)).toMatch(expected);
    }
    expect(app.service.pool.slots()[0]!.jobs).toBe(0);
  });

  it('is the same evaluation under the same Idempotency-Key, and a 400 without a GPU when it is wrong', async () => {
    const { app } = await harness({ problems: problems() });
    const headers = { ...auth('alice'), 'idempotency-key': 'add-1' };
    const first = await app.inject({ method: 'POST', url: '/v1/evaluations', headers, payload: SUBMISSION });
    const again = await app.inject({ method: 'POST', url: '/v1/evaluations', headers, payload: SUBMISSION });
    expect(again.json().id).toBe(first.json().id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const none = await harness({ problems: problems(), unavailableReason: 'no driver (fake)' });
    expect((await submit(none.app, SUBMISSION)).statusCode).toBe(503);
    refused(await submit(none.app, { ...SUBMISSION, grid: 'm' }));
  });
});
