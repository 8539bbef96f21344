// SPDX-License-Identifier: MIT
// POST /mcp (server/src/http/routes/mcp.ts) through the SDK's own client, over 127.0.0.1 with the fake GPU pool: the
// six tools with the service's TypeBox schemas; evaluate_kernel and compare_kernels on the original server's payloads,
// answering what POST /evaluate and /compare answer; their text (verdict, first mismatch with its tolerance, median and
// interval, speedup, compiler diagnostics); progress notifications; get_evaluation, list_gpus, list_problems and
// get_leaderboard answering what the /v1 routes answer, one's own evaluations only and no principal on a board;
// invalid arguments as tool errors in the routes' words; the HTTP API's auth (401, 403), body limit (413) and
// submission budget (shared with POST /v1/evaluations); 405 for GET and DELETE.
import { readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv } from 'ajv';
import {
  summarize,
  type BenchResult,
  type CheckResult,
  type CompareResult,
  type EvalJob,
  type EvalReport,
} from 'cudakit';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_PROBLEMS_DIR } from '../../../src/config.js';
import { formatOutcome } from '../../../src/http/routes/mcp-format.js';
import { Leaderboard, ProblemList, SUBMIT_BODY_LIMIT_BYTES } from '../../../src/http/schemas/v1.js';
import {
  CompareRequest,
  CompareResponse,
  EvaluationRequest,
  EvaluationResponse,
  IOContract,
  COMPAT_KERNEL_TYPES,
} from '../../../src/compat/schemas.js';
import { H200_BENCH_ENV } from '../../../../test/support/devices.js';
import { auth, closeApps, harness, namer, type Harness, type Who } from '../../support/app-harness.js';
import { ADD, ADD_FILES, expectNoHidden, registry } from '../../support/cases-problem.js';
import { body as v1Body, settled } from '../../support/helpers.js';
import { ProblemRegistry } from '../../../src/submit/problems.js';
import { H200, failedReport, passedReport, type FakeScript } from '../../support/fake-pool.js';

const FIXTURES = new URL('../../fixtures/compat/', import.meta.url);
const fixture = (file: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as Record<string, unknown>;

/** The original's vector_add with a CUDA reference: a compare request. */
const COMPARE = fixture('vector_add.cuda-ref.json');
/** Its custom kernel on its own: an evaluate request. */
const EVALUATE = { kernel: COMPARE.custom_kernel, num_trials: COMPARE.num_trials, timeout: COMPARE.timeout };

const clients: Client[] = [];

const TOOL_NAMES = [
  'evaluate_kernel',
  'compare_kernels',
  'get_evaluation',
  'list_gpus',
  'list_problems',
  'get_leaderboard',
];

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await closeApps();
});

interface Served extends Harness {
  url: URL;
}

/** An app on 127.0.0.1 (a port of its own), with the tests' tokens unless `tokens` says otherwise. */
async function serve(options: Parameters<typeof harness>[0] = {}): Promise<Served> {
  const h = await harness(options);
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = h.app.server.address() as AddressInfo;
  return { ...h, url: new URL(`http://127.0.0.1:${port}/mcp`) };
}

/** An SDK client connected to /mcp as `who` (no Authorization header for null). */
async function connect(url: URL, who: Who | null = 'alice'): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '1' });
  const headers = who === null ? {} : auth(who);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  clients.push(client);
  // Lists the tools, so that the client checks structured content against their output schemas from here on.
  await client.listTools();
  return client;
}

const textOf = (result: CallToolResult): string =>
  result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The HTTP error a client call ends with. */
async function httpError(promise: Promise<unknown>): Promise<StreamableHTTPError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StreamableHTTPError);
  return error as StreamableHTTPError;
}

/** A JSON Schema object's parts these tests read. */
interface ObjectSchema {
  properties: Record<string, unknown>;
  required: string[];
}

const json = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as ObjectSchema;

/** The complete example a tool's description ends with, as JSON. */
function exampleOf(tool: Tool): Record<string, unknown> {
  const found = /```json\n([\s\S]*?)\n```\s*$/.exec(tool.description ?? '');
  expect(found, `${tool.name}'s description ends with a JSON example`).not.toBeNull();
  return JSON.parse(found![1]!) as Record<string, unknown>;
}

/** An answer of the compatible routes without the evaluation's id, which differs between two submissions. */
function withoutIds(answer: unknown): unknown {
  const copy = structuredClone(answer) as { job_id?: string; kernel_exec_result: { metadata: { cudakit: object } } };
  delete copy.job_id;
  delete (copy.kernel_exec_result.metadata.cudakit as { evaluation_id?: string }).evaluation_id;
  return copy;
}

// ---------------------------------------------------------------------------------------------------------------
// Canned reports with the shapes a worker sends

const SAMPLES = Array.from({ length: 40 }, (_, i) => 0.01 + i * 0.0005);

function bench(name: string, gpuMs: number[]): BenchResult {
  return {
    name,
    mode: 'cold',
    preset: 'default',
    timer: 'events',
    samples: gpuMs.map((g, i) => ({
      gpuMs: g,
      eventMs: g,
      launchUs: 3,
      clockMHz: 1980,
      inputSet: i % 4,
      rejected: false,
    })),
    stats: summarize(gpuMs),
    rejected: 0,
    warmupRuns: 3,
    wallMs: 120,
    converged: true,
    stopReason: 'precision',
    clockMHz: 1980,
    env: H200_BENCH_ENV,
    warnings: [],
  };
}

function checkResult(passed: boolean): CheckResult {
  const mismatches = passed ? [] : [{ arg: 2, index: 17, expected: 5, actual: 0 }];
  const trial = { trial: 0, seed: '0x1', passed, defence: passed ? undefined : 'mismatch', mismatches };
  return {
    passed,
    defence: passed ? undefined : 'mismatch',
    trials: [trial],
    mismatches,
    error: undefined,
    nondeterministicElements: 0,
    nondeterministicBeyondTolerance: 0,
    summary: passed ? 'PASS: 1 trials' : 'FAIL (mismatch) in trial 0; first: argument 2[17] = 0, expected 5',
    maxAbsError: passed ? 2.5e-7 : 5,
    maxRelError: passed ? 1e-6 : 1,
    toleranceUsed: passed ? 0.02 : 83,
    relNormError: 0,
    matchedRatio: passed ? 1 : 0.99,
  } as unknown as CheckResult;
}

const script = (report: EvalReport): FakeScript => ({
  delayMs: 5,
  outcome: { kind: 'report', report, device: undefined },
});

/** A pass with a timing, or with a comparison for a job that has a baseline. */
function timed(job: EvalJob): FakeScript {
  const name = job.name ?? job.kernel;
  const check = {
    reference: 'the reference kernel',
    passed: true,
    requireDeterminism: false,
    before: checkResult(true),
  };
  if (job.compare === undefined) return script(passedReport(name, { check, timing: bench(name, SAMPLES) }));
  const comparison = {
    a: bench(
      'vector_add_ref',
      SAMPLES.map((x) => x * 2),
    ),
    b: bench(name, SAMPLES),
    speedup: 2,
    speedupLow: 1.9,
    speedupHigh: 2.1,
    verdict: 'FASTER' as const,
    rounds: 5,
  };
  return script(passedReport(name, { check, comparison }));
}

/** Wrong values: element 17 of argument 2 (c) is 0, 5 expected. */
function incorrect(job: EvalJob): FakeScript {
  const error = { kind: 'verdict', code: 'mismatch', message: '1 of 1024 elements differ', defence: 'mismatch' };
  const report = failedReport(job.kernel, error as NonNullable<EvalReport['error']>, 'check');
  const check = {
    reference: 'the reference kernel',
    passed: false,
    requireDeterminism: false,
    before: checkResult(false),
  };
  return script({ ...report, check });
}

function compileError(job: EvalJob): FakeScript {
  const error = {
    kind: 'compile',
    code: 'NVRTC_ERROR_COMPILATION',
    api: 'nvrtcCompileProgram',
    kernel: 'candidate',
    message: 'nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION (6) compiling candidate.cu',
    diagnostics: [
      { file: 'candidate.cu', line: 3, column: undefined, severity: 'error', message: 'expected a ";"' },
      { file: 'candidate.cu', line: 7, column: undefined, severity: 'error', message: 'identifier "m" is undefined' },
    ],
    log: 'candidate.cu(3): error: expected a ";"\ncandidate.cu(7): error: identifier "m" is undefined',
  };
  return script(failedReport(job.kernel, error as NonNullable<EvalReport['error']>, 'compile'));
}

// ---------------------------------------------------------------------------------------------------------------

describe('the tools', () => {
  it('are the six, with the service’s TypeBox schemas, narrowed to what this server takes', async () => {
    const { url } = await serve();
    const { tools } = await (await connect(url)).listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    const [evaluate, compare, get, gpus, problems, leaderboard] = tools;
    // The /evaluate and /compare routes' body schemas with kernel_type 'cuda' only and a candidate's io required
    // (a reference's stays optional: without it, the candidate's), and their 200 answers' schemas.
    const narrowed = (kernel: ObjectSchema, io: 'required' | 'optional') => ({
      ...kernel,
      properties: {
        ...kernel.properties,
        kernel_type: { type: 'string', enum: ['cuda'] },
        ...(io === 'required' ? { io: json(IOContract) } : {}),
      },
      required: io === 'required' ? [...kernel.required, 'io'] : kernel.required,
    });
    const routeEvaluate = json(EvaluationRequest);
    const kernel = routeEvaluate.properties.kernel as ObjectSchema;
    expect(evaluate!.inputSchema).toEqual({
      ...routeEvaluate,
      properties: { ...routeEvaluate.properties, kernel: narrowed(kernel, 'required') },
    });
    // Less the route's note on the legacy form, which no tool takes.
    const { description: _, ...routeCompare } = json(CompareRequest) as ObjectSchema & { description: string };
    expect(compare!.inputSchema).toEqual({
      ...routeCompare,
      properties: {
        ...routeCompare.properties,
        custom_kernel: narrowed(kernel, 'required'),
        ref_kernel: narrowed(kernel, 'optional'),
      },
    });
    expect(evaluate!.outputSchema).toEqual(JSON.parse(JSON.stringify(EvaluationResponse)));
    expect(compare!.outputSchema).toEqual(JSON.parse(JSON.stringify(CompareResponse)));
    expect(get!.inputSchema).toMatchObject({
      type: 'object',
      required: ['id'],
      properties: { id: { type: 'string', maxLength: 64 }, wait: { type: 'integer', maximum: 60 } },
    });
    expect(gpus!.inputSchema).toMatchObject({ type: 'object', properties: {} });
    expect(problems!.inputSchema).toMatchObject({ type: 'object', properties: {} });
    expect(problems!.outputSchema).toEqual(json(ProblemList));
    expect(leaderboard!.inputSchema).toMatchObject({
      type: 'object',
      required: ['problem'],
      additionalProperties: false,
      properties: {
        problem: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' },
        gpuClass: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
        limit: { type: 'integer', minimum: 1, maximum: 100 },
      },
    });
    expect(leaderboard!.outputSchema).toEqual(json(Leaderboard));
    expect(tools.map((t) => t.annotations?.readOnlyHint)).toEqual([false, false, true, true, true, true]);
  });

  it('evaluate_kernel: the original’s payload answers as POST /evaluate does, with the verdict in text', async () => {
    const h = await serve();
    h.pool.script = timed;
    const result = await call(await connect(h.url), 'evaluate_kernel', structuredClone(EVALUATE));
    expect(result.isError).toBeFalsy();
    const http = await h.app.inject({
      method: 'POST',
      url: '/evaluate',
      headers: { ...auth('alice'), 'content-type': 'application/json' },
      payload: EVALUATE,
    });
    expect(http.statusCode).toBe(200);
    expect(withoutIds(result.structuredContent)).toEqual(withoutIds(http.json()));
    const id = (result.structuredContent as { job_id: string }).job_id;
    expect(id).toMatch(/^ev_/);
    const stats = summarize(SAMPLES);
    const text = textOf(result).split('\n');
    expect(text[0]).toBe(`PASSED: vector_add (evaluation ${id}, NVIDIA H200)`);
    expect(text).toContain('check: PASS: 1 trials');
    const half = Math.max(stats.median - stats.ciLow, stats.ciHigh - stats.median);
    expect(text).toContain(
      `time: median ${(stats.median * 1000).toFixed(2)} µs ± ${(half * 1000).toFixed(2)} µs ` +
        `(95% CI ${(stats.ciLow * 1000).toFixed(2)} µs … ${(stats.ciHigh * 1000).toFixed(2)} µs), cold, 40 samples`,
    );
  });

  it('compare_kernels: the original’s payload answers as POST /compare does, with the speedup in text', async () => {
    const h = await serve();
    h.pool.script = timed;
    const result = await call(await connect(h.url), 'compare_kernels', structuredClone(COMPARE));
    expect(result.isError).toBeFalsy();
    const http = await h.app.inject({
      method: 'POST',
      url: '/compare',
      headers: { ...auth('alice'), 'content-type': 'application/json' },
      payload: COMPARE,
    });
    expect(http.statusCode).toBe(200);
    expect(withoutIds(result.structuredContent)).toEqual(withoutIds(http.json()));
    expect(result.structuredContent).toMatchObject({
      kernel_exec_result: { metadata: { cudakit: { speedup: 2, speedup_ci: [1.9, 2.1], compare_verdict: 'FASTER' } } },
    });
    const text = textOf(result).split('\n');
    expect(text[0]).toMatch(/^PASSED: vector_add \(evaluation ev_\w+, NVIDIA H200\)$/);
    expect(text).toContain('speedup: vector_add is 2.00× faster than vector_add_ref (95% CI 1.90 … 2.10) → FASTER');
    expect(text.some((l) => l.startsWith('reference: median '))).toBe(true);
  });

  it('a wrong value: the verdict and the first mismatch with the tolerance it was held to', async () => {
    const h = await serve();
    h.pool.script = incorrect;
    const result = await call(await connect(h.url), 'compare_kernels', structuredClone(COMPARE));
    // A kernel's failure is a result, not a tool error: the original answers it 200 too.
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      status: 'success',
      kernel_exec_result: { compiled: true, correctness: false, metadata: { cudakit: { verdict: 'INCORRECT' } } },
    });
    const text = textOf(result).split('\n');
    expect(text[0]).toMatch(/^INCORRECT: vector_add /);
    expect(text).toContain('error in phase check: mismatch: 1 of 1024 elements differ');
    // compare's atol and rtol are the original's 0.01: 0.01 + 0.01 · 5.
    expect(text).toContain(
      'first mismatch: argument 2 (c) index 17: got 0, expected 5, ' +
        'tolerance 0.0600 (atol 0.01 + rtol 0.01·|expected|)' +
        ' [mismatch, trial 0]',
    );
  });

  it('a compile error: the compiler’s diagnostics as file:line: message', async () => {
    const h = await serve();
    h.pool.script = compileError;
    const result = await call(await connect(h.url), 'evaluate_kernel', structuredClone(EVALUATE));
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ kernel_exec_result: { compiled: false, correctness: false } });
    expect(textOf(result).split('\n').slice(1)).toEqual([
      'the kernel did not compile (nvrtcCompileProgram: NVRTC_ERROR_COMPILATION):',
      'candidate.cu:3: error: expected a ";"',
      'candidate.cu:7: error: identifier "m" is undefined',
    ]);
  });

  it('a timeout: the supervisor’s verdict and why', async () => {
    const h = await serve();
    h.pool.script = () => ({
      delayMs: 5,
      outcome: { kind: 'timeout', phase: 'time', limitMs: 50_000, scope: 'phase' },
    });
    const result = await call(await connect(h.url), 'evaluate_kernel', structuredClone(EVALUATE));
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      kernel_exec_result: { metadata: { cudakit: { verdict: 'TIMEOUT' } } },
    });
    const id = (result.structuredContent as { job_id: string }).job_id;
    expect(textOf(result)).toBe(
      `TIMEOUT: vector_add (evaluation ${id}, NVIDIA H200)\nTIMEOUT: killed after 50 s (the time deadline)`,
    );
  });

  it('a stored report’s figures that were not finite (null in JSON) read n/a', () => {
    const name = 'k';
    const nulls = (r: BenchResult): BenchResult =>
      ({ ...r, stats: { ...r.stats, median: null, ciLow: null, ciHigh: null } }) as unknown as BenchResult;
    const comparison = { a: nulls(bench('ref', SAMPLES)), b: nulls(bench(name, SAMPLES)), rounds: 5 };
    const stored = { speedup: null, speedupLow: null, speedupHigh: null, verdict: 'UNCERTAIN' };
    const failed = checkResult(false);
    (failed.trials[0]!.mismatches[0] as { actual: unknown }).actual = null;
    const report = passedReport(name, {
      comparison: { ...comparison, ...stored } as unknown as CompareResult,
      check: { reference: 'r', passed: false, requireDeterminism: false, before: failed },
    });
    const text = formatOutcome({
      id: 'ev_1',
      status: 'succeeded',
      verdict: 'NON_FINITE',
      phase: undefined,
      error: undefined,
      report,
      job: undefined,
      gpu: undefined,
      warnings: ['w'],
    }).split('\n');
    expect(text).toEqual([
      'NON_FINITE: k (evaluation ev_1)',
      'check: FAIL (mismatch) in trial 0; first: argument 2[17] = 0, expected 5',
      "first mismatch: argument 2 index 17: got NaN or ±Infinity, expected 5, the dtype's default tolerance " +
        '[mismatch, trial 0]',
      'time: median n/a ± n/a (95% CI n/a … n/a), cold, 40 samples',
      'reference: median n/a ± n/a (95% CI n/a … n/a)',
      'speedup: k vs ref: speedup n/a → UNCERTAIN',
      'warning: w',
    ]);
  });

  it('sends the job’s phase changes as progress notifications when asked', async () => {
    const h = await serve();
    h.pool.script = timed;
    const client = await connect(h.url);
    const messages: string[] = [];
    const result = await client.callTool({ name: 'evaluate_kernel', arguments: structuredClone(EVALUATE) }, undefined, {
      onprogress: (p) => messages.push(p.message ?? ''),
    });
    expect(result.isError).toBeFalsy();
    // The fake worker plays compile and check. Events from before the subscription are replayed.
    expect(messages).toEqual([
      'queued (position 1)',
      'started on NVIDIA H200',
      'phase compile',
      'phase check',
      'done: PASSED',
    ]);
  });

  it('get_evaluation and list_gpus answer what GET /v1/evaluations/{id} and /v1/gpus answer', async () => {
    const h = await serve();
    h.pool.script = incorrect;
    const client = await connect(h.url);
    const evaluated = await call(client, 'compare_kernels', structuredClone(COMPARE));
    const id = (evaluated.structuredContent as { job_id: string }).job_id;

    const got = await call(client, 'get_evaluation', { id, wait: 1 });
    expect(got.isError).toBeFalsy();
    const http = await h.app.inject({ method: 'GET', url: `/v1/evaluations/${id}`, headers: auth('alice') });
    expect(got.structuredContent).toEqual(http.json());
    expect(got.structuredContent).toMatchObject({ id, status: 'succeeded', verdict: 'INCORRECT' });
    const text = textOf(got).split('\n');
    expect(text[0]).toBe(`INCORRECT: vector_add (evaluation ${id}, NVIDIA H200)`);
    expect(text).toContain(
      'first mismatch: argument 2 (c) index 17: got 0, expected 5, ' +
        'tolerance 0.0600 (atol 0.01 + rtol 0.01·|expected|)' +
        ' [mismatch, trial 0]',
    );

    const gpus = await call(client, 'list_gpus', {});
    const httpGpus = await h.app.inject({ method: 'GET', url: '/v1/gpus', headers: auth('alice') });
    expect(gpus.structuredContent).toEqual(httpGpus.json());
    expect(textOf(gpus)).toBe('1 GPU:\n0: NVIDIA H200 (sm_90) GPU-00000000-0000-0000-0000-000000000000: idle, 1 jobs');
  });

  it('get_evaluation of a job still running says so; one that never ends is answered after the wait', async () => {
    const h = await serve({ compatSyncWaitMs: () => 50 });
    h.pool.script = () => ({ delayMs: Infinity, outcome: { kind: 'cancelled' } });
    const client = await connect(h.url);
    const result = await call(client, 'evaluate_kernel', structuredClone(EVALUATE));
    expect(result.isError).toBe(true);
    const id = /Evaluation (ev_\w+) is still running/.exec(textOf(result))?.[1];
    expect(id, textOf(result)).toBeDefined();
    expect(textOf(result)).toContain(`get_evaluation with id '${id}'`);
    const got = await call(client, 'get_evaluation', { id });
    expect(got.structuredContent).toMatchObject({ id, status: 'running', verdict: null });
    expect(textOf(got)).toBe(`RUNNING: vector_add (evaluation ${id}, NVIDIA H200), phase check; not finished yet`);
  });

  it('a principal sees only its own evaluations; the admin scope sees every one', async () => {
    const h = await serve();
    const mine = await call(await connect(h.url, 'alice'), 'evaluate_kernel', structuredClone(EVALUATE));
    const id = (mine.structuredContent as { job_id: string }).job_id;
    const other = await call(await connect(h.url, 'bob'), 'get_evaluation', { id });
    expect(other.isError).toBe(true);
    expect(textOf(other)).toBe(`EVALUATION_NOT_FOUND: No evaluation '${id}'`);
    expect(other.structuredContent).toBeUndefined();
    const admin = await call(await connect(h.url, 'root'), 'get_evaluation', { id });
    expect(admin.isError).toBeFalsy();
    expect(admin.structuredContent).toMatchObject({ id, principal: 'alice' });
  });

  it('list_problems and get_leaderboard answer what GET /v1/problems and its leaderboard answer', async () => {
    const dirs: string[] = [];
    const h = await serve({ problems: ProblemRegistry.load(registry(ADD_FILES, dirs)) });
    try {
      for (const who of ['alice', 'bob'] as const) {
        const submitted = await h.app.inject({
          method: 'POST',
          url: '/v1/evaluations',
          headers: auth(who),
          payload: { problem: 'add', source: ADD, kernel: 'add', grid: 'cdiv(n, 256)', block: 256 },
        });
        await settled(h.service, (submitted.json() as { id: string }).id);
      }
      const client = await connect(h.url, 'viewer');
      const problems = await call(client, 'list_problems', {});
      const httpProblems = await h.app.inject({ method: 'GET', url: '/v1/problems', headers: auth('viewer') });
      expect(problems.structuredContent).toEqual(httpProblems.json());
      expect(textOf(problems)).toBe(
        [
          '1 problem:',
          "add: c = a + b (with cases: submit with problem: 'add')",
          '  dims: n in [1, 1048576]',
          '  public cases: small (n=1024); n=4096 (n=4096); hidden cases: 2',
        ].join('\n'),
      );

      const board = await call(client, 'get_leaderboard', { problem: 'add', limit: 1 });
      const url = '/v1/problems/add/leaderboard?limit=1';
      const httpBoard = await h.app.inject({ method: 'GET', url, headers: auth('viewer') });
      expect(board.structuredContent).toEqual(httpBoard.json());
      const submittedAt = (httpBoard.json() as { entries: { submittedAt: string }[] }).entries[0]!.submittedAt;
      expect(textOf(board)).toBe(
        [
          'Leaderboard of add on H200:',
          `1. ${(await namer(h.app))('alice')}: 2.000 [1.900, 2.100], ${submittedAt}, provisional`,
          '(more from offset 1)',
        ].join('\n'),
      );
      const next = await call(client, 'get_leaderboard', { problem: 'add', limit: 1, offset: 1 });
      const httpNext = await h.app.inject({ method: 'GET', url: `${url}&offset=1`, headers: auth('viewer') });
      expect(next.structuredContent).toEqual(httpNext.json());
      expect((next.structuredContent as { entries: { rank: number }[] }).entries[0]?.rank).toBe(2);
      const texts = JSON.stringify([problems, board, await call(client, 'get_leaderboard', { problem: 'add' })]);
      for (const secret of ['alice', 'bob', 'ev_']) expect(texts, secret).not.toContain(secret);
      expectNoHidden(texts);
    } finally {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });

  it('get_leaderboard: an unknown problem and hostile arguments are tool errors in the routes’ words', async () => {
    const { url } = await serve();
    const client = await connect(url);
    const unknown = await call(client, 'get_leaderboard', { problem: 'nothing' });
    expect([unknown.isError, textOf(unknown)]).toEqual([
      true,
      "PROBLEM_NOT_FOUND: No problem with cases 'nothing' here (GET /v1/problems lists them)",
    ]);
    const hostile = [
      [{ problem: '../etc' }, 'arguments.problem: must match pattern "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"'],
      [
        { problem: 'add', gpuClass: 'H200&limit=100' },
        'arguments.gpuClass: must match pattern "^[A-Za-z0-9_.-]{1,64}$"',
      ],
      [{ problem: 'add', limit: 101 }, 'arguments.limit: must be <= 100'],
      [{ problem: 'add', principal: 'alice' }, 'arguments.principal: is not a known field'],
    ] as const;
    for (const [args, problem] of hostile) {
      const result = await call(client, 'get_leaderboard', { ...args });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe(`FST_ERR_VALIDATION: Invalid arguments\n- ${problem}`);
    }
  });

  it('an unknown tool is a protocol error', async () => {
    const { url } = await serve();
    const error = await call(await connect(url), 'evaluate_python', {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(ErrorCode.InvalidParams);
    expect((error as McpError).message).toContain("Unknown tool 'evaluate_python'");
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('the tools’ descriptions stand alone', () => {
  it('each ends with a complete example its input schema takes, and which runs as it is', async () => {
    // The problems the server ships, as it serves them without --problems-dir: get_leaderboard's example names one.
    const h = await serve({ problems: ProblemRegistry.load(DEFAULT_PROBLEMS_DIR) });
    h.pool.script = timed;
    // A fresh client, as a model meets the server: the listing is all it knows.
    const client = new Client({ name: 'fresh', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(h.url, { requestInit: { headers: auth('alice') } }));
    clients.push(client);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    const ajv = new Ajv({ strict: false });
    let evaluationId: string | undefined;
    for (const tool of tools) {
      const args = exampleOf(tool);
      const validate = ajv.compile(tool.inputSchema);
      expect(validate(args), `${tool.name}: ${ajv.errorsText(validate.errors)}`).toBe(true);
      // get_evaluation's example reads an evaluation by id: the one evaluate_kernel's example made.
      if (tool.name === 'get_evaluation') args.id = evaluationId;
      const result = await call(client, tool.name, args);
      expect(result.isError, `${tool.name}: ${textOf(result)}`).toBeFalsy();
      expect(result.structuredContent, tool.name).toBeDefined();
      if (tool.name === 'evaluate_kernel') {
        evaluationId = (result.structuredContent as { job_id: string }).job_id;
        expect(textOf(result)).toMatch(/^PASSED: vector_add /);
      }
    }
    expect(h.pool.runs.map((r) => r.job.kernel)).toEqual(['vector_add', 'vector_add']);
  });

  it('each explains every field of its request, and which kernel types run and why the others do not', async () => {
    const { url } = await serve();
    const { tools } = await (await connect(url)).listTools();
    /** The field is a bullet of the description ('- num_trials (optional ...', '- atol, rtol ...'). */
    const explained = (tool: Tool, field: string): boolean =>
      new RegExp(`^\\s*- (\\w+, )*${field}\\b`, 'm').test(tool.description ?? '');
    for (const tool of tools) {
      const schema = tool.inputSchema as unknown as ObjectSchema;
      for (const field of Object.keys(schema.properties))
        expect(explained(tool, field), `${tool.name}: ${field}`).toBe(true);
    }
    const [evaluate, compare] = tools;
    const kernel = (evaluate!.inputSchema as unknown as ObjectSchema).properties.kernel as ObjectSchema;
    const io = json(IOContract) as ObjectSchema;
    for (const tool of [evaluate!, compare!]) {
      for (const field of [...Object.keys(kernel.properties), ...Object.keys(io.properties)]) {
        expect(explained(tool, field), `${tool.name}: ${field}`).toBe(true);
      }
      expect(tool.description).toContain("kernel_type (required): 'cuda' (CUDA C++, compiled with NVRTC).");
      expect(tool.description).toContain(
        "The original server's other types ('torch', 'torch_cuda', 'triton', 'multi_kernel') are refused: they need " +
          'Python',
      );
      expect(tool.description).not.toContain('EvaluationRequest');
    }
  });

  it('kernel_type’s enum is exactly the kernel types the compatible routes run', async () => {
    const h = await serve();
    const { tools } = await (await connect(h.url)).listTools();
    const [evaluate, compare] = tools;
    const sides: [Tool, string, 'kernel' | 'custom_kernel' | 'ref_kernel'][] = [
      [evaluate!, '/evaluate', 'kernel'],
      [compare!, '/compare', 'custom_kernel'],
      [compare!, '/compare', 'ref_kernel'],
    ];
    for (const [tool, url, side] of sides) {
      const taken: string[] = [];
      for (const type of COMPAT_KERNEL_TYPES) {
        const request = exampleOf(tool) as Record<string, { kernel_type: string }>;
        request[side]!.kernel_type = type;
        const res = await h.app.inject({
          method: 'POST',
          url,
          headers: { ...auth('alice'), 'content-type': 'application/json' },
          payload: request,
        });
        expect([200, 400], res.body).toContain(res.statusCode);
        if (res.statusCode === 200) taken.push(type);
      }
      const kernel = (tool.inputSchema as unknown as ObjectSchema).properties[side] as ObjectSchema;
      expect(kernel.properties.kernel_type, `${tool.name} ${side}`).toEqual({ type: 'string', enum: taken });
      expect(taken).toEqual(['cuda']);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('invalid arguments', () => {
  /** POST `url`'s 400 body for the same arguments. */
  async function http(h: Harness, url: string, payload: unknown) {
    const res = await h.app.inject({
      method: 'POST',
      url,
      headers: { ...auth('alice'), 'content-type': 'application/json' },
      payload: payload as Record<string, unknown>,
    });
    expect(res.statusCode).toBe(400);
    return res.json() as { error: string; validation_errors?: { field: string; message: string }[]; details?: unknown };
  }

  it('a schema error is a tool error listing the problems as POST /evaluate words them', async () => {
    const h = await serve();
    const client = await connect(h.url);
    // Where the tool's schema and the route's agree, the same words.
    const cases: Record<string, unknown>[] = [
      { num_trials: 5 },
      { kernel: { ...(EVALUATE.kernel as object), launch: {} } },
      { kernel: { ...(EVALUATE.kernel as object), source_code: 5 }, timeout: 'soon' },
    ];
    for (const args of cases) {
      const result = await call(client, 'evaluate_kernel', structuredClone(args));
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toBeUndefined();
      const body = await http(h, '/evaluate', args);
      expect(body.validation_errors!.length).toBeGreaterThan(0);
      expect(textOf(result)).toBe(
        [body.error, ...body.validation_errors!.map((v) => `- ${v.field}: ${v.message}`)].join('\n'),
      );
    }
    // The tool's schema names only the kernel types this server takes (the route's: five), and io as required.
    const kernel = EVALUATE.kernel as Record<string, unknown>;
    const enumError = await call(client, 'evaluate_kernel', { kernel: { ...kernel, kernel_type: 'rust' } });
    expect(textOf(enumError)).toBe("Invalid request format\n- kernel -> kernel_type: Input should be 'cuda'");
    const compareError = await call(client, 'compare_kernels', {
      custom_kernel: kernel,
      ref_kernel: { ...kernel, kernel_type: 'rust' },
    });
    expect(textOf(compareError)).toBe("Invalid request format\n- ref_kernel -> kernel_type: Input should be 'cuda'");
    const ioError = await call(client, 'evaluate_kernel', { kernel: { source_code: '', kernel_type: 'rust' } });
    expect(textOf(ioError)).toBe('Invalid request format\n- kernel -> io: Field required');
  });

  it('a request only the narrowed schema refuses gets the compatible routes’ reason: why, what instead', async () => {
    const h = await serve();
    const client = await connect(h.url);
    const kernel = EVALUATE.kernel as Record<string, unknown>;
    const withoutIo = { kernel: { ...kernel, io: undefined } };
    const noIo = await call(client, 'evaluate_kernel', withoutIo);
    expect(noIo.isError).toBe(true);
    expect(textOf(noIo).split('\n')[0]).toBe((await http(h, '/evaluate', withoutIo)).error);
    expect(textOf(noIo)).toMatch(/^CUDA kernels require io_contract to be specified/);
    const triton = await call(client, 'evaluate_kernel', { kernel: { ...kernel, kernel_type: 'triton' } });
    expect(textOf(triton)).toMatch(/^kernel_type 'triton' needs Python, which this server does not run/);
    expect(h.pool.runs).toEqual([]);
  });

  it('the original’s business rules and validateJob’s problems, in the compatible routes’ words', async () => {
    const h = await serve();
    const client = await connect(h.url);
    const trials = await call(client, 'evaluate_kernel', { ...structuredClone(EVALUATE), num_trials: 0 });
    expect(trials.isError).toBe(true);
    expect(textOf(trials)).toBe('num_trials must be at least 1\ndetails: {"num_trials":0}');

    const flags = structuredClone(EVALUATE) as { kernel: { metadata: Record<string, unknown> } };
    flags.kernel.metadata = { ...flags.kernel.metadata, compiler_options: ['-I/etc'] };
    const refused = await call(client, 'evaluate_kernel', flags);
    const body = (await http(h, '/evaluate', flags)) as { error: string; details: { problems: { field: string }[] } };
    expect(textOf(refused).split('\n')[0]).toBe(body.error);
    expect(textOf(refused)).toContain('- kernel -> metadata -> compiler_options: ');

    // A PyTorch reference: refused, naming what can take its place.
    const torch = await call(client, 'compare_kernels', fixture('vector_add.json'));
    expect(torch.isError).toBe(true);
    expect(textOf(torch)).toMatch(/^kernel_type 'torch' needs Python, which this server does not run/);
    expect(textOf(torch)).toContain('"substitutes":[');
    // Nothing was queued.
    expect(h.pool.runs).toEqual([]);
  });

  it('takes a PyTorch reference where a GPU’s host has the service’s Python, as POST /compare does', async () => {
    const python = { path: '/usr/bin/python3', python: '3.12.3', torch: '2.11.0', triton: null, cudaVersion: '13.0' };
    const h = await serve({ gpus: [{ ...H200, python }] });
    const client = await connect(h.url);
    const torch = await call(client, 'compare_kernels', fixture('vector_add.json'));
    expect(torch.isError, textOf(torch)).toBeFalsy();
    expect(h.pool.runs).toHaveLength(1);
    expect(h.pool.runs[0]!.extras?.python?.reference).toMatchObject({ type: 'torch', outputs: [2] });
  });

  it('get_evaluation’s arguments in the v1 routes’ words', async () => {
    const { url } = await serve();
    const client = await connect(url);
    const missing = await call(client, 'get_evaluation', {});
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toBe('FST_ERR_VALIDATION: Invalid arguments\n- arguments.id: is required');
    const wait = await call(client, 'get_evaluation', { id: 'ev_1', wait: 61 });
    expect(textOf(wait)).toBe('FST_ERR_VALIDATION: Invalid arguments\n- arguments.wait: must be <= 60');
    const unknown = await call(client, 'get_evaluation', { id: 'ev_nope' });
    expect(textOf(unknown)).toBe("EVALUATION_NOT_FOUND: No evaluation 'ev_nope'");
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('HTTP: the API’s auth, body limit and submission budget', () => {
  it('no token: 401; a wrong token: 401', async () => {
    const { url } = await serve();
    const none = await httpError(connect(url, null));
    expect(none.code).toBe(401);
    expect(none.message).toContain('Authorization: Bearer <token> is required');
    const client = new Client({ name: 'mcp-test', version: '1' });
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: 'Bearer not-a-token' } },
    });
    const wrong = await httpError(client.connect(transport));
    expect(wrong.code).toBe(401);
    expect(wrong.message).toContain('The bearer token is not valid');
  });

  it('the read scope lists and reads; evaluate_kernel and compare_kernels need submit (403)', async () => {
    const h = await serve();
    const viewer = await connect(h.url, 'viewer');
    expect((await call(viewer, 'list_gpus', {})).isError).toBeFalsy();
    for (const name of ['evaluate_kernel', 'compare_kernels']) {
      const error = await httpError(call(viewer, name, structuredClone(EVALUATE)));
      expect(error.code).toBe(403);
      expect(error.message).toContain(`This token lacks the 'submit' scope, which ${name} needs`);
    }
    expect(h.pool.runs).toEqual([]);
  });

  it('without tokens everything is the principal local', async () => {
    const h = await serve({ tokens: undefined });
    const result = await call(await connect(h.url, null), 'evaluate_kernel', structuredClone(EVALUATE));
    const id = (result.structuredContent as { job_id: string }).job_id;
    expect((await h.service.get(id))?.principal).toBe('local');
  });

  it('a body over the submitting routes’ limit is a 413', async () => {
    const { url } = await serve();
    const message = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'evaluate_kernel', arguments: { kernel: { source_code: 'x'.repeat(SUBMIT_BODY_LIMIT_BYTES) } } },
    };
    const res = await fetch(url, {
      method: 'POST',
      headers: { ...auth('alice'), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(message),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' });
  });

  it('shares the submission budget with POST /v1/evaluations, both ways; other messages cost nothing', async () => {
    const h = await serve({ submitsPerMinute: 2 });
    const submit = () =>
      h.app.inject({
        method: 'POST',
        url: '/v1/evaluations',
        headers: { ...auth('alice'), 'content-type': 'application/json' },
        payload: v1Body(),
      });
    const client = await connect(h.url);
    await client.listTools();
    expect((await call(client, 'list_gpus', {})).isError).toBeFalsy();
    expect((await submit()).statusCode).toBe(202);
    expect((await submit()).statusCode).toBe(202);
    const limited = await httpError(call(client, 'evaluate_kernel', structuredClone(EVALUATE)));
    expect(limited.code).toBe(429);
    expect(limited.message).toContain('RATE_LIMITED');
    // Another principal has its own budget: MCP's two submissions leave none for its POST.
    const bob = await connect(h.url, 'bob');
    expect((await call(bob, 'evaluate_kernel', structuredClone(EVALUATE))).isError).toBeFalsy();
    expect((await call(bob, 'compare_kernels', structuredClone(COMPARE))).isError).toBeFalsy();
    const post = await h.app.inject({
      method: 'POST',
      url: '/v1/evaluations',
      headers: { ...auth('bob'), 'content-type': 'application/json' },
      payload: v1Body(),
    });
    expect(post.statusCode).toBe(429);
    expect(post.json()).toMatchObject({ code: 'RATE_LIMITED' });
  });

  it('GET and DELETE /mcp are 405 (stateless: no stream to open, no session to end)', async () => {
    const { url, app } = await serve();
    // POST is the one operation the OpenAPI document lists.
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(Object.keys(doc.paths['/mcp'])).toEqual(['post']);
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(url, { method, headers: { ...auth('alice'), accept: 'text/event-stream' } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(await res.json()).toMatchObject({ statusCode: 405, code: 'METHOD_NOT_ALLOWED' });
    }
  });
});
