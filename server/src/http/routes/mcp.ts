// SPDX-License-Identifier: MIT
// POST /mcp: the service as tools for model-driven kernel generators, over MCP's streamable HTTP transport. Six tools:
// evaluate_kernel and compare_kernels take the original server's requests (the compatible routes' TypeBox schemas
// narrowed to what this server takes: the kernel types the mapping in compat/jobs.ts accepts, io where it is required;
// each description, in mcp-descriptions.ts, explains the request in full, with a complete example) and answer what POST
// /evaluate and /compare answer, as structured content beside a few lines of text; get_evaluation, list_gpus,
// list_problems and get_leaderboard answer what GET /v1/evaluations/{id}, /v1/gpus, /v1/problems and
// /v1/problems/{name}/leaderboard answer (those routes' own handlers, through inject, so the two faces cannot drift).
// Stateless: every POST gets its own Server and transport, so there is no session to keep or lose; GET and DELETE
// /mcp are 405. What is HTTP stays the API's: Fastify parses the JSON body once (gzip and deflate, the
// 64 MiB limit of the submitting routes) and hands it to the transport; the bearer token's scopes (read to talk at all,
// submit for the two tools that queue a job); the per-principal submission budget shared with POST /v1/evaluations and
// /evaluate. Arguments are checked by the Ajv validator Fastify compiles for the schemas (the app's options; once per
// schema, cached by Fastify). A plugin: the service and the budget come from the instance, the wait and the
// keep-alive from its options; its two routes' handlers are named functions, and a tool call's progress follows the
// job's events as GET /v1/evaluations/{id}/events does (http/sse.ts).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { EvalJob, EvalReport } from 'cudakit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Static, type TSchema, Type } from 'typebox';
import { answerOf, compatGpuOf, compatWaitMs, submitCompatJob } from '../../compat/answers.js';
import { CompatClientError, CompatValidationError, validationErrorsOf } from '../../compat/errors.js';
import { compareJob, evaluateJob, refuseLegacy, type CompatJob } from '../../compat/jobs.js';
import {
  ErrorBody,
  Evaluation,
  GetQuery,
  GpuList,
  IdParams,
  Leaderboard,
  LeaderboardQuery,
  ProblemList,
  ProblemParams,
  SUBMIT_BODY_LIMIT_BYTES,
} from '../schemas/v1.js';
import {
  CompareRequest,
  CompareResponse,
  EvaluationRequest,
  EvaluationResponse,
  COMPAT_KERNEL_TYPES,
  compareToolRequest,
  evaluateToolRequest,
  type KernelCode,
  type CompatKernelType,
} from '../../compat/schemas.js';
import { ServiceError } from '../../errors.js';
import type { EvalService } from '../../service.js';
import { TERMINAL, type JobEvent, type StoredJob, isProblemJob } from '../../store/store.js';
import { errorBodyOf, type App } from '../shared.js';
import { followJobEvents } from '../sse.js';
import type { Scope } from '../auth.js';
import {
  COMPARE_EXAMPLE,
  EVALUATE_EXAMPLE,
  GET_EVALUATION_DESCRIPTION,
  GET_LEADERBOARD_DESCRIPTION,
  INSTRUCTIONS,
  LIST_GPUS_DESCRIPTION,
  LIST_PROBLEMS_DESCRIPTION,
  compareDescription,
  evaluateDescription,
} from './mcp-descriptions.js';
import {
  formatGpus,
  formatLeaderboard,
  formatOutcome,
  formatProblemList,
  formatProblems,
  type Problem,
} from './mcp-format.js';
import type { CompatOptions } from '../../compat/routes.js';

export interface McpOptions {
  /** How long evaluate_kernel and compare_kernels wait for their job, ms (as the compatible routes wait). */
  syncWaitMs?: CompatOptions['syncWaitMs'];
  /** Comment lines on an idle tool-call stream, ms. */
  sseHeartbeatMs: number;
}

const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, ErrorBody]));

/** get_evaluation's arguments: GET /v1/evaluations/{id}'s id and ?wait, as one object. */
const GetArguments = Type.Object({ ...IdParams.properties, ...GetQuery.properties });
const NoArguments = Type.Object({});
/** get_leaderboard's arguments: the route's problem name, gpuClass, limit and offset, as one object, no other key. */
const LeaderboardArguments = Type.Object(
  {
    problem: ProblemParams.properties.name,
    gpuClass: LeaderboardQuery.properties.gpuClass,
    limit: LeaderboardQuery.properties.limit,
    offset: LeaderboardQuery.properties.offset,
  },
  { additionalProperties: false },
);

/** What a tool call has to hand: the HTTP request it came in (principal, validator), and what the reply needs. */
interface CallContext {
  service: EvalService;
  request: FastifyRequest;
  /** How long a tool that submits waits for its job (the plugin's option). */
  syncWaitMs: McpOptions['syncWaitMs'];
  /** Aborted when the client leaves or cancels the call: a wait ends (the job goes on). */
  signal: AbortSignal;
  /** Sends the job's phase changes as progress notifications, when the client asked for them. */
  follow: ((id: string) => () => void) | undefined;
}

interface ToolSpec {
  scope: Scope;
  tool: Tool;
  run(args: Record<string, unknown>, ctx: CallContext): Promise<CallToolResult>;
}

// The listing carries the service's TypeBox schemas as they are: TypeBox builds plain JSON Schema.
const jsonSchema = (schema: TSchema) => schema as unknown as Tool['inputSchema'];

/**
 * The kernel types the compatible mapping (compat/jobs.ts) takes in the KernelCode `at` picks out of `example`:
 * each type tried there, so that a tool's enum is what this server accepts and cannot drift from the mapping.
 */
function kernelTypesTaken<T>(
  example: T,
  at: (request: T) => KernelCode,
  map: (request: T) => unknown,
): CompatKernelType[] {
  return COMPAT_KERNEL_TYPES.filter((type) => {
    const request = structuredClone(example);
    at(request).kernel_type = type;
    try {
      map(request);
      return true;
    } catch (e) {
      if (e instanceof CompatClientError) return false;
      throw e;
    }
  });
}

function buildTools(): Map<string, ToolSpec> {
  const evaluateTypes = kernelTypesTaken(EVALUATE_EXAMPLE, (r) => r.kernel, evaluateJob);
  const customTypes = kernelTypesTaken(COMPARE_EXAMPLE, (r) => r.custom_kernel, compareJob);
  const referenceTypes = kernelTypesTaken(COMPARE_EXAMPLE, (r) => r.ref_kernel, compareJob);
  const evaluateSchema = evaluateToolRequest(evaluateTypes);
  const compareSchema = compareToolRequest(customTypes, referenceTypes);
  return new Map<string, ToolSpec>([
    [
      'evaluate_kernel',
      {
        scope: 'submit',
        run: (args, ctx) => runCompat('evaluate', evaluateSchema, args, ctx),
        tool: {
          name: 'evaluate_kernel',
          title: 'Evaluate a CUDA kernel',
          description: evaluateDescription(evaluateTypes),
          inputSchema: jsonSchema(evaluateSchema),
          outputSchema: jsonSchema(EvaluationResponse),
          annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
        },
      },
    ],
    [
      'compare_kernels',
      {
        scope: 'submit',
        run: (args, ctx) => runCompat('compare', compareSchema, args, ctx),
        tool: {
          name: 'compare_kernels',
          title: 'Compare a CUDA kernel with a reference kernel',
          description: compareDescription(customTypes, referenceTypes),
          inputSchema: jsonSchema(compareSchema),
          outputSchema: jsonSchema(CompareResponse),
          annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
        },
      },
    ],
    [
      'get_evaluation',
      {
        scope: 'read',
        run: getEvaluation,
        tool: {
          name: 'get_evaluation',
          title: 'Read an evaluation',
          description: GET_EVALUATION_DESCRIPTION,
          inputSchema: jsonSchema(GetArguments),
          outputSchema: jsonSchema(Evaluation),
          annotations: { readOnlyHint: true, openWorldHint: false },
        },
      },
    ],
    [
      'list_gpus',
      {
        scope: 'read',
        run: listGpus,
        tool: {
          name: 'list_gpus',
          title: "List this server's GPUs",
          description: LIST_GPUS_DESCRIPTION,
          inputSchema: jsonSchema(NoArguments),
          outputSchema: jsonSchema(GpuList),
          annotations: { readOnlyHint: true, openWorldHint: false },
        },
      },
    ],
    [
      'list_problems',
      {
        scope: 'read',
        run: listProblems,
        tool: {
          name: 'list_problems',
          title: 'List the problems served',
          description: LIST_PROBLEMS_DESCRIPTION,
          inputSchema: jsonSchema(NoArguments),
          outputSchema: jsonSchema(ProblemList),
          annotations: { readOnlyHint: true, openWorldHint: false },
        },
      },
    ],
    [
      'get_leaderboard',
      {
        scope: 'read',
        run: getLeaderboard,
        tool: {
          name: 'get_leaderboard',
          title: "Read a problem's leaderboard",
          description: GET_LEADERBOARD_DESCRIPTION,
          inputSchema: jsonSchema(LeaderboardArguments),
          outputSchema: jsonSchema(Leaderboard),
          annotations: { readOnlyHint: true, openWorldHint: false },
        },
      },
    ],
  ]);
}

/** The tools/call messages of a body (one JSON-RPC message or a batch): their tool names. */
function toolCalls(body: unknown): string[] {
  const messages = Array.isArray(body) ? (body as unknown[]) : [body];
  return messages.flatMap((m) => {
    const message = m as { method?: unknown; params?: { name?: unknown } } | null;
    return message?.method === 'tools/call' && typeof message.params?.name === 'string' ? [message.params.name] : [];
  });
}

const SUBMITTING = new Set(['evaluate_kernel', 'compare_kernels']);

const postSchema = {
  summary:
    'MCP tools (streamable HTTP, stateless): evaluate_kernel, compare_kernels, get_evaluation, list_gpus, ' +
    'list_problems, get_leaderboard',
  description:
    'A JSON-RPC message (or batch) of the Model Context Protocol. The read scope to talk at all; ' +
    'evaluate_kernel and compare_kernels also need submit and count against the submission rate. Answers ' +
    'are JSON, or an event stream for evaluate_kernel and compare_kernels (progress, keep-alive comments).',
  response: {
    200: Type.Unknown({ description: 'The JSON-RPC answer (application/json), or an event stream of it' }),
    ...errors(400, 401, 403, 413, 415, 429, 503),
  },
};

/** The tools, their schemas' kernel types found once (kernelTypesTaken tries the mapping with each). */
const TOOLS = buildTools();

export async function mcpRoutes(app: App, options: McpOptions): Promise<void> {
  app.post(
    '/mcp',
    { bodyLimit: SUBMIT_BODY_LIMIT_BYTES, schema: postSchema, config: { access: 'read' }, preHandler: checkToolCalls },
    answerMcp(options),
  );
  app.route({
    method: ['GET', 'DELETE'],
    url: '/mcp',
    // Not operations: left out of the OpenAPI document.
    schema: { hide: true, response: errors(405) },
    config: { access: 'open' },
    handler: refuseMethod,
  });
}

/** The scope and the budget depend on the tools called, so they are checked once the body is parsed. */
async function checkToolCalls(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const calls = toolCalls(request.body);
  for (const name of calls) {
    const scope = TOOLS.get(name)?.scope;
    if (scope !== undefined && !request.principal.scopes.has(scope)) {
      void reply.header('www-authenticate', `Bearer realm="cudakit", error="insufficient_scope", scope="${scope}"`);
      throw new ServiceError('FORBIDDEN', `This token lacks the '${scope}' scope, which ${name} needs`);
    }
  }
  if (calls.some((name) => SUBMITTING.has(name))) await request.server.submitLimit(request, reply);
}

/** GET and DELETE /mcp: 405, as a stateless endpoint has no stream to open and no session to end. */
async function refuseMethod(request: FastifyRequest, reply: FastifyReply): Promise<never> {
  void reply.header('allow', 'POST');
  const message =
    `${request.method} /mcp is not used: this MCP endpoint is stateless (no session, no stream to open); ` +
    'send every message with POST';
  throw new ServiceError('METHOD_NOT_ALLOWED', message);
}

/** POST /mcp: a Server and a stateless transport for each message, answering in the raw response. */
function answerMcp(options: McpOptions) {
  return async function answerMcp(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { service } = request.server;
    const gone = new AbortController();
    const server = new Server(
      { name: 'cudakit-server', version: '1' },
      { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...TOOLS.values()].map((t) => t.tool) }));
    server.setRequestHandler(CallToolRequestSchema, async (call, extra) => {
      const spec = TOOLS.get(call.params.name);
      if (spec === undefined) {
        const known = [...TOOLS.keys()].join(', ');
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool '${call.params.name.slice(0, 64)}': ${known}`);
      }
      const token = extra._meta?.progressToken;
      let progress = 0;
      const follow =
        token === undefined
          ? undefined
          : (id: string) =>
              // Progress is a courtesy: without the stored events, the live ones still come.
              followJobEvents(service, id, { ifStoreFails: 'live' }, (e) => {
                const message = progressMessage(e);
                if (message === undefined) return;
                const params = { progressToken: token, progress: ++progress, message };
                extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {});
              }).stop;
      const signal = AbortSignal.any([extra.signal, gone.signal]);
      const ctx = { service, request, syncWaitMs: options.syncWaitMs, signal, follow };
      try {
        return await spec.run(call.params.arguments ?? {}, ctx);
      } catch (e) {
        return toolError(e, request);
      }
    });
    // An event stream only where it helps: a call that waits for a job gets its headers at once, keep-alive comments
    // and progress; everything else is one JSON answer.
    const accept = String(request.headers.accept ?? '');
    const stream = accept.includes('text/event-stream') && toolCalls(request.body).some((n) => SUBMITTING.has(n));
    // No sessionIdGenerator: stateless.
    const transport = new StreamableHTTPServerTransport({
      enableJsonResponse: !stream,
      keepAliveMs: options.sseHeartbeatMs,
    });
    transport.onerror = (e) => request.log.debug({ err: e }, 'MCP transport');
    reply.raw.once('close', () => {
      gone.abort();
      void transport.close();
      void server.close();
    });
    // Headers set on the reply so far (the submission budget's) go out with the transport's answer.
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value);
    }
    reply.hijack();
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (e) {
      request.log.error({ err: e }, 'MCP request failed');
      if (reply.raw.headersSent) {
        reply.raw.destroy();
        return;
      }
      const body = errorBodyOf(e);
      reply.raw.writeHead(body.statusCode, { 'content-type': 'application/json; charset=utf-8' });
      reply.raw.end(JSON.stringify(body));
    }
  };
}

/** A job event as a progress message: its phase changes (samples are too many to be worth a notification). */
function progressMessage(e: JobEvent): string | undefined {
  const data = (e.data ?? {}) as Record<string, unknown>;
  switch (e.type) {
    case 'queued':
      return `queued (position ${String(data.position ?? '?')})`;
    case 'started': {
      const gpu = data.gpu as { name?: unknown } | undefined;
      return `started on ${String(gpu?.name ?? 'a GPU')}`;
    }
    case 'phase':
      return `phase ${String(data.phase)}`;
    case 'done':
      return `done: ${String(data.verdict ?? data.status)}`;
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Tools

const textResult = (text: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text }],
  ...(isError ? { isError: true } : {}),
});

/** An error of a tool call as a tool error result (a model reads it and tries again), in the HTTP routes' words. */
function toolError(e: unknown, request: FastifyRequest): CallToolResult {
  if (e instanceof CompatValidationError) {
    const problems: Problem[] = e.errors.map((v) => ({ where: v.field, message: v.message }));
    return textResult(formatProblems(e.message, problems), true);
  }
  if (e instanceof CompatClientError) {
    // validateJob's problems are listed one a line; any other detail (a field, the substitutes) follows as JSON.
    const listed = (e.details.problems ?? []) as { field: string; message: string }[];
    const problems: Problem[] = listed.map((p) => ({ where: p.field, message: p.message }));
    const rest = Object.fromEntries(Object.entries(e.details).filter(([key]) => key !== 'problems'));
    const details = Object.keys(rest).length === 0 ? '' : `\ndetails: ${JSON.stringify(rest)}`;
    return textResult(formatProblems(e.message, problems) + details, true);
  }
  if (e instanceof ServiceError) {
    const retry = e.retryAfterSeconds === undefined ? '' : ` (retry in ${e.retryAfterSeconds} s)`;
    return textResult(`${e.code}: ${e.message}${retry}`, true);
  }
  request.log.error({ err: e }, 'MCP tool call failed');
  return textResult('INTERNAL: Internal server error (see the server log)', true);
}

/** Arguments the schema refuses, as the v1 routes word a body's problems. */
function invalidArguments(validation: unknown[]): CallToolResult {
  const body = errorBodyOf({ validation, validationContext: 'arguments' });
  const problems = (body.details ?? []).map((d) => ({ where: d.path, message: d.message }));
  return textResult(formatProblems(`${body.code}: Invalid arguments`, problems), true);
}

/** The report stored with a record (formatJson's text), parsed. */
function reportOf(text: string | undefined): EvalReport | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as EvalReport;
  } catch {
    return undefined;
  }
}

/** evaluate_kernel and compare_kernels: POST /evaluate's and /compare's work, answered as a tool result. */
async function runCompat(
  kind: 'evaluate' | 'compare',
  schema: TSchema,
  args: Record<string, unknown>,
  ctx: CallContext,
): Promise<CallToolResult> {
  const { service } = ctx;
  // The legacy form is recognised before the schema, as POST /compare does.
  if (kind === 'compare') refuseLegacy(args);
  const job = compatJobOf(kind, schema, args, ctx.request);

  const record = await submitCompatJob(service, ctx.request.principal.name, job);
  const waitMs = compatWaitMs(job, ctx.syncWaitMs);
  const unfollow = ctx.follow?.(record.id);
  try {
    await service.waitForEnd(record.id, waitMs, ctx.signal);
  } finally {
    unfollow?.();
  }
  const now = (await service.get(record.id)) ?? record;
  if (!TERMINAL.has(now.status)) {
    const message =
      `Evaluation ${now.id} is still ${now.status} after ${Math.round(waitMs / 1000)} s; it goes on: ` +
      `get_evaluation with id '${now.id}' (and wait) reads its result`;
    return textResult(message, true);
  }
  const gpu = compatGpuOf(service.slots(), now);
  const answer = answerOf(now, { kind, gpu, warnings: job.warnings });
  const text = formatOutcome({
    id: now.id,
    status: now.status,
    verdict: now.verdict,
    phase: now.phase,
    error: now.error,
    report: reportOf(now.report),
    job: evalJobOf(now.job),
    gpu: gpu?.name,
    warnings: job.warnings,
  });
  // A job the service could not finish (cancelled, queue timeout): the original's 500, a tool error here.
  if (answer.statusCode !== 200) return textResult(text, true);
  return { ...textResult(text), structuredContent: answer.body as unknown as Record<string, unknown> };
}

/**
 * The arguments as a job, checked against the tool's schema: POST /evaluate's (or /compare's) narrowed to what this
 * server takes. A request only the narrowing refuses (a PyTorch kernel, a kernel without io) gets the compatible
 * mapping's message rather than the schema's: it says why, and what to give instead.
 */
function compatJobOf(
  kind: 'evaluate' | 'compare',
  schema: TSchema,
  args: Record<string, unknown>,
  request: FastifyRequest,
): CompatJob {
  // A Python kernel runs where a GPU's host has the service's Python (--python), as on POST /evaluate and /compare.
  const python = request.server.service.slots().some((s) => s.python !== undefined);
  const map = (a: Record<string, unknown>): CompatJob =>
    kind === 'evaluate' ? evaluateJob(a as EvaluationRequest, { python }) : compareJob(a as CompareRequest, { python });
  const validate = request.compileValidationSchema(schema);
  if (validate(args)) return map(args);
  const errors = validate.errors ?? [];
  // Past the narrowing, the mapping decides: it refuses with its own words, or takes what this server can run.
  if (request.compileValidationSchema(kind === 'evaluate' ? EvaluationRequest : CompareRequest)(args)) return map(args);
  throw new CompatValidationError(validationErrorsOf(errors));
}

/**
 * A v1 route's answer to this call's principal: the route's own handler through inject, with whatever
 * authenticated this request, so visibility (one's own jobs; every job with admin) is the route's.
 */
async function injectGet(ctx: CallContext, url: string): Promise<{ ok: true; body: unknown } | CallToolResult> {
  const { authorization, cookie } = ctx.request.headers;
  const headers = {
    ...(authorization === undefined ? {} : { authorization }),
    ...(cookie === undefined ? {} : { cookie }),
  };
  const res = await ctx.request.server.inject({ method: 'GET', url, headers, signal: ctx.signal });
  if (res.statusCode === 200) return { ok: true, body: res.json() };
  const body = res.json<ErrorBody>();
  return textResult(`${body.code}: ${body.message}`, true);
}

/** The job's EvalJob for the text's argument names and tolerances; a problem's submission has none of its own. */
function evalJobOf(job: StoredJob): EvalJob | undefined {
  return isProblemJob(job) ? undefined : job;
}

async function getEvaluation(args: Record<string, unknown>, ctx: CallContext): Promise<CallToolResult> {
  const validate = ctx.request.compileValidationSchema(GetArguments);
  if (!validate(args)) return invalidArguments(validate.errors ?? []);
  const { id, wait } = args as Static<typeof GetArguments>;
  const query = wait === undefined ? '' : `?wait=${wait}`;
  const answer = await injectGet(ctx, `/v1/evaluations/${encodeURIComponent(id)}${query}`);
  if (!('ok' in answer)) return answer;
  const evaluation = answer.body as Evaluation;
  // The record only for the text: the job's argument names and tolerances (the route has said this one is visible).
  const record = await ctx.service.get(evaluation.id);
  const text = formatOutcome({
    id: evaluation.id,
    status: evaluation.status,
    verdict: evaluation.verdict ?? undefined,
    phase: evaluation.phase ?? undefined,
    error: evaluation.error ?? undefined,
    report: (evaluation.report ?? undefined) as EvalReport | undefined,
    job: record === undefined ? undefined : evalJobOf(record.job),
    gpu: evaluation.gpu?.name,
    warnings: [],
  });
  return { ...textResult(text), structuredContent: evaluation as unknown as Record<string, unknown> };
}

async function listGpus(args: Record<string, unknown>, ctx: CallContext): Promise<CallToolResult> {
  const validate = ctx.request.compileValidationSchema(NoArguments);
  if (!validate(args)) return invalidArguments(validate.errors ?? []);
  const answer = await injectGet(ctx, '/v1/gpus');
  if (!('ok' in answer)) return answer;
  const list = answer.body as Static<typeof GpuList>;
  return { ...textResult(formatGpus(list)), structuredContent: list as unknown as Record<string, unknown> };
}

async function listProblems(args: Record<string, unknown>, ctx: CallContext): Promise<CallToolResult> {
  const validate = ctx.request.compileValidationSchema(NoArguments);
  if (!validate(args)) return invalidArguments(validate.errors ?? []);
  const answer = await injectGet(ctx, '/v1/problems');
  if (!('ok' in answer)) return answer;
  const list = answer.body as Static<typeof ProblemList>;
  return { ...textResult(formatProblemList(list)), structuredContent: list as unknown as Record<string, unknown> };
}

async function getLeaderboard(args: Record<string, unknown>, ctx: CallContext): Promise<CallToolResult> {
  const validate = ctx.request.compileValidationSchema(LeaderboardArguments);
  if (!validate(args)) return invalidArguments(validate.errors ?? []);
  const { problem, gpuClass, limit, offset } = args as Static<typeof LeaderboardArguments>;
  const query = new URLSearchParams({
    ...(gpuClass === undefined ? {} : { gpuClass }),
    ...(limit === undefined ? {} : { limit: String(limit) }),
    // The page its text's '(more from offset N)' points to.
    ...(offset === undefined ? {} : { offset: String(offset) }),
  }).toString();
  const url = `/v1/problems/${encodeURIComponent(problem)}/leaderboard${query === '' ? '' : `?${query}`}`;
  const answer = await injectGet(ctx, url);
  if (!('ok' in answer)) return answer;
  const board = answer.body as Leaderboard;
  return { ...textResult(formatLeaderboard(board)), structuredContent: board as unknown as Record<string, unknown> };
}
