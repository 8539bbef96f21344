// SPDX-License-Identifier: MIT
// The service's own API (v1): submit an evaluation (202 at once), read it (with a long-poll), follow it (server-sent
// events, resumable), cancel or purge it, list one's own, see the GPUs, and (admin) probe a quarantined GPU again. A
// principal sees only its own jobs (404 for anyone else's, so ids say nothing about other clients); the admin scope
// sees every job. A plugin: the service and the submission budget come from the instance, the event streams'
// heartbeat from its options; the schemas first, then the list of routes, then one named handler per route. The
// event stream is opened, and a job's events followed, by http/sse.ts.
import type { FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import {
  Cancelled,
  DeleteQuery,
  ErrorBody,
  Evaluation,
  EvaluationList,
  EventsQuery,
  GetQuery,
  GpuList,
  ProblemList,
  IdParams,
  ListQuery,
  SUBMIT_BODY_LIMIT_BYTES,
  Slot,
  SubmitBody,
  Submitted,
} from '../schemas/v1.js';
import { ServiceError } from '../../errors.js';
import type { EvalService } from '../../service.js';
import { isJobId } from '../../store/ids.js';
import { TERMINAL, type JobRecord, type JobStatus, isProblemJob } from '../../store/store.js';
import type { Verdict } from '../../judge/verdict.js';
import type { App, RouteReply, RouteRequest } from '../shared.js';
import { type EventStream, followJobEvents, openEventStream } from '../sse.js';
import type { Principal } from '../auth.js';

export interface V1Options {
  /** Comment lines on an idle event stream, ms. */
  sseHeartbeatMs: number;
}

const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, ErrorBody]));

const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x21-\\x7e]+$',
      description: 'Retries with the same key (and body) within 24 h return the same evaluation',
    }),
  ),
});

const GpuParams = Type.Object({ uuid: Type.String({ maxLength: 128, description: "'GPU-…' or 'MIG-…'" }) });

const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({ maxLength: 20, pattern: '^[0-9]*$' })),
});

function links(id: string): { self: string; events: string } {
  return { self: `/v1/evaluations/${id}`, events: `/v1/evaluations/${id}/events` };
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

function notFound(id: string): ServiceError {
  return new ServiceError('EVALUATION_NOT_FOUND', `No evaluation '${id.slice(0, 64)}'`);
}

// ---------------------------------------------------------------------------------------------------------------
// The routes' schemas (validation, types, OpenAPI)

const submitSchema = {
  summary: 'Submit an evaluation',
  description:
    'Validates the job (cudakit validateJob) and queues it; answers 202 at once. With problem, the body is a ' +
    'submission to that problem with cases instead (source, kernel, grid, block, sharedMemBytes, compile, headers, ' +
    "name; launches over the problem's dims), checked by validateProblem in every case. Without a GPU: 503 with " +
    'the reason, after validation. gzip and deflate bodies are accepted (the limit counts inflated bytes).',
  headers: IdempotencyHeaders,
  body: SubmitBody,
  response: { 202: Submitted, ...errors(400, 401, 403, 413, 415, 422, 429, 503) },
};

const getSchema = {
  summary: 'Read an evaluation',
  description: 'With ?wait=N (≤ 60), answers when the evaluation ends or after N seconds, whichever is first.',
  params: IdParams,
  querystring: GetQuery,
  response: { 200: Evaluation, ...errors(400, 401, 403, 404) },
};

const eventsSchema = {
  summary: 'Follow an evaluation (server-sent events)',
  description:
    'Events queued, started, phase, progress and done, each with its id; the stream ends after done. ' +
    'Resume with Last-Event-ID (or ?lastEventId=). Comment lines keep idle connections open.',
  params: IdParams,
  headers: EventsHeaders,
  querystring: EventsQuery,
  response: {
    200: Type.String({ description: 'text/event-stream' }),
    ...errors(400, 401, 403, 404),
  },
};

const deleteSchema = {
  summary: 'Cancel an evaluation, or purge a finished one',
  description:
    'Queued: cancelled at once. Running: its worker is killed (202 cancelling; the job then ends cancelled). ' +
    'Finished: 409. With ?purge=true a finished evaluation and its events are deleted (204).',
  params: IdParams,
  querystring: DeleteQuery,
  response: {
    202: Cancelled,
    204: Type.Null({ description: 'Purged' }),
    ...errors(400, 401, 403, 404, 409),
  },
};

const listSchema = {
  summary: "List one's evaluations, newest first",
  querystring: ListQuery,
  response: { 200: EvaluationList, ...errors(400, 401, 403) },
};

const gpusSchema = { summary: "This host's GPUs and their workers", response: { 200: GpuList, ...errors(401, 403) } };

const problemsSchema = {
  summary: 'The problems served',
  description:
    'The problems of --problems-dir (by default the set the server ships). A problem with cases (kind: cases): ' +
    "a submission names it as problem: '<name>' and gives its kernel and its launch over the dimensions; its " +
    'public cases are listed, its hidden ones only counted. A single-shape reference problem: a job names it as ' +
    "reference: { problem: '<name>' } and runs with its args; its bytes and flops are the timing defaults.",
  response: { 200: ProblemList, ...errors(401, 403) },
};

const reprobeSchema = {
  summary: 'Probe a quarantined GPU again',
  description:
    'A quarantined GPU comes back once it no longer holds the killed worker it kept and a new worker starts; ' +
    'the answer is the GPU as /v1/gpus shows it then (still quarantined, with lastError, when it did not ' +
    'come back). A GPU in service is left as it is. The pool also re-probes quarantined GPUs on its own.',
  params: GpuParams,
  response: { 200: Slot, ...errors(400, 401, 403, 404) },
};

// ---------------------------------------------------------------------------------------------------------------
// The routes

export async function v1Routes(app: App, options: V1Options): Promise<void> {
  app.post(
    '/v1/evaluations',
    {
      bodyLimit: SUBMIT_BODY_LIMIT_BYTES,
      schema: submitSchema,
      config: { access: 'submit' },
      onRequest: app.submitLimit,
    },
    submitEvaluation,
  );
  app.get('/v1/evaluations/:id', { schema: getSchema, config: { access: 'read' } }, getEvaluation);
  app.get(
    '/v1/evaluations/:id/events',
    { schema: eventsSchema, config: { access: 'read' } },
    followEvaluation(options.sseHeartbeatMs),
  );
  app.delete('/v1/evaluations/:id', { schema: deleteSchema, config: { access: 'submit' } }, deleteEvaluation);
  app.get('/v1/evaluations', { schema: listSchema, config: { access: 'read' } }, listEvaluations);
  app.get('/v1/gpus', { schema: gpusSchema, config: { access: 'read' } }, listGpus);
  app.get('/v1/problems', { schema: problemsSchema, config: { access: 'read' } }, listProblems);
  app.post('/v1/gpus/:uuid/reprobe', { schema: reprobeSchema, config: { access: 'admin' } }, reprobeGpu);
}

async function submitEvaluation(request: RouteRequest<typeof submitSchema>, reply: RouteReply<typeof submitSchema>) {
  const key = request.headers['idempotency-key'];
  const { record, replayed, queue } = await request.server.service.submit(
    request.principal.name,
    request.body as Record<string, unknown>,
    typeof key === 'string' ? key : undefined,
  );
  if (replayed) void reply.header('idempotent-replayed', 'true');
  void reply.header('location', links(record.id).self);
  return reply.code(202).send({ id: record.id, status: record.status, queue, links: links(record.id) });
}

async function getEvaluation(
  request: RouteRequest<typeof getSchema>,
  reply: RouteReply<typeof getSchema>,
): Promise<Evaluation> {
  const { service } = request.server;
  let record = await visible(service, request.params.id, request.principal);
  const waitSeconds = request.query.wait ?? 0;
  if (waitSeconds > 0 && !TERMINAL.has(record.status)) {
    // A client that leaves ends the wait (the job goes on).
    const gone = new AbortController();
    const onClose = (): void => gone.abort();
    reply.raw.once('close', onClose);
    try {
      await service.waitForEnd(record.id, waitSeconds * 1000, gone.signal);
    } finally {
      reply.raw.off('close', onClose);
    }
    record = (await service.get(record.id)) ?? record;
  }
  return evaluationOf(service, record);
}

/** GET /v1/evaluations/:id/events, its streams' heartbeat the plugin's option. */
function followEvaluation(heartbeatMs: number) {
  return async function followEvaluation(
    request: RouteRequest<typeof eventsSchema>,
    reply: RouteReply<typeof eventsSchema>,
  ): Promise<void> {
    const { service } = request.server;
    const record = await visible(service, request.params.id, request.principal);
    const header = request.headers['last-event-id'];
    const fromHeader = typeof header === 'string' && header !== '' ? Number(header) : undefined;
    const afterSeq = fromHeader ?? request.query.lastEventId ?? 0;
    if (!Number.isSafeInteger(afterSeq)) {
      throw new ServiceError('INVALID_LAST_EVENT_ID', 'Last-Event-ID must be an event id of this stream');
    }
    streamJobEvents(service, record.id, afterSeq, openEventStream(reply, { heartbeatMs }));
  };
}

async function deleteEvaluation(request: RouteRequest<typeof deleteSchema>, reply: RouteReply<typeof deleteSchema>) {
  const { service } = request.server;
  const record = await visible(service, request.params.id, request.principal);
  if (request.query.purge === true) {
    if (!TERMINAL.has(record.status) || !(await service.purge(record.id))) {
      const message = `Evaluation ${record.id} is ${record.status}: cancel it and let it finish before a purge`;
      throw new ServiceError('NOT_FINISHED', message);
    }
    return reply.code(204).send(null);
  }
  const result = await service.cancel(record.id);
  if (result === undefined) throw notFound(record.id);
  if (result === 'finished') {
    const now = (await service.get(record.id))?.status ?? record.status;
    throw new ServiceError('ALREADY_FINISHED', `Evaluation ${record.id} already finished (${now})`);
  }
  return reply.code(202).send({ id: record.id, status: result });
}

async function listEvaluations(request: RouteRequest<typeof listSchema>): Promise<Static<typeof EvaluationList>> {
  const { status, verdict, limit = 20, cursor, principal } = request.query;
  const admin = request.principal.scopes.has('admin');
  if (principal !== undefined && principal !== request.principal.name && !admin) {
    throw new ServiceError('FORBIDDEN', "Listing another principal's evaluations needs the 'admin' scope");
  }
  if (cursor !== undefined && !isJobId(cursor)) {
    throw new ServiceError('INVALID_CURSOR', 'cursor must be the next of a previous page');
  }
  const page = await request.server.service.store.list({
    ...(admin ? (principal === undefined ? {} : { principal }) : { principal: request.principal.name }),
    ...(status === undefined ? {} : { status: status as JobStatus }),
    ...(verdict === undefined ? {} : { verdict: verdict as Verdict }),
    ...(cursor === undefined ? {} : { after: cursor }),
    limit,
  });
  return {
    items: page.items.map((r) => ({
      id: r.id,
      status: r.status,
      verdict: r.verdict ?? null,
      phase: r.phase ?? null,
      name: r.job.name ?? r.job.kernel,
      createdAt: iso(r.createdAt)!,
      finishedAt: iso(r.finishedAt),
      links: links(r.id),
    })),
    next: page.next ?? null,
  };
}

async function listGpus(request: FastifyRequest): Promise<Static<typeof GpuList>> {
  const { service } = request.server;
  return {
    gpus: service.slots().map((s) => ({ ...s, lastError: s.lastError ?? null, python: s.python ?? null })),
    reason: service.pool.unavailableReason ?? null,
  };
}

async function listProblems(request: FastifyRequest): Promise<Static<typeof ProblemList>> {
  return { problems: request.server.service.problems.list() };
}

async function reprobeGpu(request: RouteRequest<typeof reprobeSchema>): Promise<Static<typeof Slot>> {
  const { uuid } = request.params;
  const slot = await request.server.service.reprobe(uuid);
  if (slot === undefined) throw new ServiceError('GPU_NOT_FOUND', `No GPU '${uuid}' in this server's pool`);
  return { ...slot, lastError: slot.lastError ?? null, python: slot.python ?? null };
}

// ---------------------------------------------------------------------------------------------------------------
// What the handlers share

/** The job, if this principal may see it: its own, or any with the admin scope. */
async function visible(service: EvalService, id: string, principal: Principal): Promise<JobRecord> {
  const record = isJobId(id) ? await service.get(id) : undefined;
  if (record === undefined || (record.principal !== principal.name && !principal.scopes.has('admin'))) {
    throw notFound(id);
  }
  return record;
}

async function evaluationOf(service: EvalService, record: JobRecord): Promise<Evaluation> {
  const slot = record.gpuUuid === undefined ? undefined : service.slots().find((s) => s.uuid === record.gpuUuid);
  let report: unknown = null;
  if (record.report !== undefined) {
    try {
      report = JSON.parse(record.report);
    } catch {
      report = record.report; // stored as text that is not JSON: hand it over as it is
    }
  }
  return {
    id: record.id,
    principal: record.principal,
    status: record.status,
    phase: record.phase ?? null,
    verdict: record.verdict ?? null,
    createdAt: iso(record.createdAt)!,
    startedAt: iso(record.startedAt),
    finishedAt: iso(record.finishedAt),
    queueWaitMs: record.startedAt === undefined ? null : record.startedAt - record.createdAt,
    queue: record.status === 'queued' ? await service.queueInfo(record) : null,
    gpu:
      record.gpuUuid === undefined
        ? null
        : { uuid: record.gpuUuid, ...(slot === undefined ? {} : { name: slot.name, arch: slot.arch }) },
    options: record.options,
    report,
    ...(isProblemJob(record.job) ? { problem: record.job.problem, ...scoreOf(report) } : {}),
    error: record.error ?? null,
    links: links(record.id),
  };
}

/** A problem report's score and its interval, where it has one (every case passed). */
function scoreOf(report: unknown): { score?: number; scoreLow?: number; scoreHigh?: number } {
  const r = (typeof report === 'object' && report !== null ? report : {}) as Record<string, unknown>;
  const out: { score?: number; scoreLow?: number; scoreHigh?: number } = {};
  for (const key of ['score', 'scoreLow', 'scoreHigh'] as const) {
    if (typeof r[key] === 'number') out[key] = r[key];
  }
  return r.passed === true ? out : {};
}

/**
 * Writes a job's events after `afterSeq` to `stream`, each with its sequence number as the id: the stored ones, then
 * the live ones; ends after 'done', or at once when the job is over and its 'done' was before `afterSeq`.
 */
function streamJobEvents(service: EvalService, id: string, afterSeq: number, stream: EventStream): void {
  const follow = followJobEvents(service, id, { afterSeq, ifStoreFails: 'stop' }, (e) => {
    stream.send(e.type, JSON.stringify(e.data ?? null), e.seq);
    if (e.type === 'done') stream.close();
  });
  let grace: NodeJS.Timeout | undefined;
  stream.onClose(() => {
    clearTimeout(grace);
    follow.stop();
  });
  void (async () => {
    try {
      await follow.caughtUp;
      const record = await service.get(id);
      if (stream.closed || (record !== undefined && !TERMINAL.has(record.status))) return;
      // Over, and its 'done' sent before the client's Last-Event-ID: nothing more will come. Without a stored 'done'
      // the job ended a moment ago and its 'done' is still being written: a grace period for it.
      const done = (await service.store.events(id, 0)).some((e) => e.type === 'done');
      if (record === undefined || done) stream.close();
      else grace = setTimeout(() => stream.close(), 1000);
    } catch {
      stream.close();
    }
  })();
}
