// SPDX-License-Identifier: MIT
// The original evaluation server's routes, synchronous as it is: POST /evaluate, /compare and / submit a job and
// wait for its end (maxQueueSeconds + timeout + 10 s at most, then the original's 500 with the job_id while the job
// goes on, readable at /job/{id} and /v1/evaluations/{id}); GET /health, /job/{id} and /stats and POST
// /admin/cleanup-jobs answer in the original's shapes. Every answer of these routes, errors included, is in the
// original's shapes and carries its no-cache headers. Auth is the v1 API's: submit for the POSTs, read for the
// GETs, admin for /admin/*. A plugin: the service and the submission budget come from the instance, the wait from
// its options; the schemas first, then the list of routes, then one named handler per route, then the errors (whose
// table is compat/errors.ts). The mapping itself is compat/jobs.ts; the contract is server/docs/compat.md.
import { InvalidJobError } from 'cudakit';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  CompatStats,
  answerOf,
  compatGpuOf,
  compatWaitMs,
  jobErrorAnswer,
  jobErrorBody,
  jobStatsOf,
  jobStatusOf,
  submitCompatJob,
} from './answers.js';
import {
  COMPAT_ERRORS,
  CompatClientError,
  CompatValidationError,
  compatErrorOf,
  compatMessage,
  validationErrorsOf,
  type AjvError,
} from './errors.js';
import { REFERENCE_SUBSTITUTES, compareJob, evaluateJob, refuseLegacy, type CompatJob } from './jobs.js';
import { SUBMIT_BODY_LIMIT_BYTES } from '../http/schemas/v1.js';
import {
  Cleanup,
  CompareRequest,
  CompareResponse,
  ErrorBody,
  EvaluationRequest,
  EvaluationResponse,
  Health,
  JobErrorBody,
  JobIdParams,
  JobStatus,
  Stats,
  Unhealthy,
} from './schemas.js';
import { ServiceError } from '../errors.js';
import { isJobId } from '../store/ids.js';
import { TERMINAL, type JobRecord } from '../store/store.js';
import type { App, RouteRequest } from '../http/shared.js';

/** How long a synchronous route waits for a job, ms. */
export type SyncWaitMs = (job: Pick<CompatJob, 'timeoutSeconds' | 'maxQueueSeconds'>) => number;

export interface CompatOptions {
  /** How long a synchronous route waits for its job, ms. Default (maxQueueSeconds + timeout + 10) s. */
  syncWaitMs?: SyncWaitMs | undefined;
}

/** What the original's cleanup drops: finished jobs older than five minutes. */
const CLEANUP_AGE_MS = 5 * 60 * 1000;

const NO_CACHE = { 'cache-control': 'no-cache, no-store, must-revalidate', pragma: 'no-cache', expires: '0' };

const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, ErrorBody]));

// ---------------------------------------------------------------------------------------------------------------
// The routes' schemas (validation, types, OpenAPI)

const evaluateSchema = {
  summary: 'Evaluate one CUDA kernel (synchronous; compatible with the original server)',
  description:
    "The original's EvaluationRequest with kernel_type 'cuda'. Waits for the result; kernel failures are " +
    "200 status 'success' with compiled / correctness false. See server/docs/compat.md.",
  body: EvaluationRequest,
  response: { 200: EvaluationResponse, 500: JobErrorBody, ...errors(400, 401, 403, 413, 415, 429, 503) },
};

/** POST /compare's, or with `legacy` POST /'s (the original's alias), which differs in its summary only. */
function compareSchema(legacy: boolean) {
  return {
    summary: legacy
      ? 'Compare two CUDA kernels (the original’s legacy alias of /compare)'
      : 'Compare a CUDA kernel with a CUDA reference (synchronous; compatible with the original server)',
    description:
      "The original's CompareRequest with kernel_type 'cuda' on both sides; a Python reference is a 400 " +
      `naming its substitutes (${REFERENCE_SUBSTITUTES.length}). See server/docs/compat.md.`,
    body: CompareRequest,
    response: { 200: CompareResponse, 500: JobErrorBody, ...errors(400, 401, 403, 413, 415, 429, 503) },
  };
}

const healthSchema = {
  summary: "Health in the original server's shape (the service's own summary is /v1/health)",
  response: { 200: Health, 500: Unhealthy, ...errors(401, 403) },
};

const jobSchema = {
  summary: "A job's status in the original server's shape",
  params: JobIdParams,
  response: { 200: JobStatus, ...errors(400, 401, 403, 404) },
};

const statsSchema = {
  summary: "Server statistics in the original server's shape (since this process started)",
  response: { 200: Stats, ...errors(401, 403) },
};

const cleanupSchema = {
  summary: 'Delete finished jobs older than five minutes (admin)',
  description: "The original's cleanup: finished evaluations that ended more than 5 minutes ago are deleted.",
  response: { 200: Cleanup, ...errors(400, 401, 403, 413, 415) },
};

// ---------------------------------------------------------------------------------------------------------------
// The routes

export async function compatRoutes(app: App, options: CompatOptions): Promise<void> {
  const stats = new CompatStats();
  app.service.onStarted((job) => stats.started(job));
  app.service.onFinished((job) => stats.finished(job));
  // Every answer, errors included, in the original's shapes and with its no-cache headers.
  const common = { errorHandler: sendError, onSend: noCache };
  const submits = { bodyLimit: SUBMIT_BODY_LIMIT_BYTES, attachValidation: true, onRequest: app.submitLimit };

  const { syncWaitMs } = options;
  app.post(
    '/evaluate',
    { ...submits, schema: evaluateSchema, config: { access: 'submit' }, ...common },
    evaluate(syncWaitMs),
  );
  for (const url of ['/compare', '/']) {
    app.post(
      url,
      { ...submits, schema: compareSchema(url === '/'), config: { access: 'submit' }, ...common },
      compare(syncWaitMs),
    );
  }
  app.get('/health', { schema: healthSchema, config: { access: 'read' }, ...common }, health);
  app.get('/job/:job_id', { schema: jobSchema, config: { access: 'read' }, ...common }, jobStatus);
  app.get('/stats', { schema: statsSchema, config: { access: 'read' }, ...common }, serverStats(stats));
  app.post('/admin/cleanup-jobs', { schema: cleanupSchema, config: { access: 'admin' }, ...common }, cleanup);
}

// ---------------------------------------------------------------------------------------------------------------
// The handlers, one per route

/** POST /evaluate, its wait the plugin's option. */
function evaluate(syncWaitMs: SyncWaitMs | undefined) {
  return async function evaluate(request: RouteRequest<typeof evaluateSchema>, reply: FastifyReply) {
    if (request.validationError !== undefined) throw request.validationError;
    const python = request.server.service.slots().some((s) => s.python !== undefined);
    const job = evaluateJob(request.body, { python });
    const record = await submitCompatJob(request.server.service, request.principal.name, job);
    return answer(job, record, syncWaitMs, request, reply);
  };
}

/** POST /compare and POST /, their wait the plugin's option. */
function compare(syncWaitMs: SyncWaitMs | undefined) {
  return async function compare(request: RouteRequest<ReturnType<typeof compareSchema>>, reply: FastifyReply) {
    // The legacy form is recognised before the schema, as the original converts it before parsing.
    refuseLegacy(request.body);
    if (request.validationError !== undefined) throw request.validationError;
    const python = request.server.service.slots().some((s) => s.python !== undefined);
    const job = compareJob(request.body, { python });
    const record = await submitCompatJob(request.server.service, request.principal.name, job);
    return answer(job, record, syncWaitMs, request, reply);
  };
}

/** Waits for the job's end (or the client leaving), then answers as the original does. */
async function answer(
  job: CompatJob,
  record: JobRecord,
  syncWaitMs: SyncWaitMs | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { service } = request.server;
  const waitMs = compatWaitMs(job, syncWaitMs);
  const gone = new AbortController();
  const onClose = (): void => gone.abort();
  reply.raw.once('close', onClose);
  try {
    await service.waitForEnd(record.id, waitMs, gone.signal);
  } finally {
    reply.raw.off('close', onClose);
  }
  const now = (await service.get(record.id)) ?? record;
  if (!TERMINAL.has(now.status)) {
    const message = compatMessage('JOB_TIMED_OUT', { seconds: Math.round(waitMs / 1000), job_id: now.id });
    const timedOut = jobErrorAnswer('JOB_TIMED_OUT', message, now.id);
    return reply.code(timedOut.statusCode).send(timedOut.body);
  }
  const result = answerOf(now, { kind: job.kind, gpu: compatGpuOf(service.slots(), now), warnings: job.warnings });
  if (result.statusCode === 200 && result.body.gpu_type !== undefined) {
    void reply.header('x-gpu-type', result.body.gpu_type);
  }
  return reply.code(result.statusCode).send(result.body);
}

/** GET /health: 'healthy' while the store answers, with or without GPUs. */
async function health(request: FastifyRequest, reply: FastifyReply) {
  const { service } = request.server;
  try {
    const [counts, meanCreatedAtMs] = await Promise.all([service.store.counts(), service.store.meanCreatedAtMs()]);
    const available = service.slots().filter((s) => s.state === 'idle').length;
    return {
      status: 'healthy' as const,
      job_stats: jobStatsOf(counts, meanCreatedAtMs, Date.now()),
      gpu_manager: { available_gpus: available },
    };
  } catch (e) {
    reply.log.error({ err: e }, 'health check failed');
    const unhealthy = { status: 'unhealthy' as const, error: (e as Error).message };
    return reply.code(COMPAT_ERRORS.UNHEALTHY.status).send(unhealthy);
  }
}

/** GET /job/{job_id}: the job's status, the original's words. */
async function jobStatus(request: RouteRequest<typeof jobSchema>) {
  const id = request.params.job_id;
  const record = isJobId(id) ? await request.server.service.get(id) : undefined;
  const { principal } = request;
  // Another principal's job is not found either: ids say nothing about other clients.
  if (record === undefined || (record.principal !== principal.name && !principal.scopes.has('admin'))) {
    throw new ServiceError('JOB_NOT_FOUND', compatMessage('JOB_NOT_FOUND', { job_id: id.slice(0, 64) }));
  }
  return jobStatusOf(record);
}

/** GET /stats, over the runs `stats` has counted since the plugin was registered. */
function serverStats(stats: CompatStats) {
  return async function serverStats(request: FastifyRequest) {
    const { store } = request.server.service;
    const [counts, meanCreatedAtMs] = await Promise.all([store.counts(), store.meanCreatedAtMs()]);
    const snapshot = stats.snapshot() as Omit<Stats, 'job_stats'>;
    return { job_stats: jobStatsOf(counts, meanCreatedAtMs, Date.now()), ...snapshot };
  };
}

/** POST /admin/cleanup-jobs: the original's cleanup of finished jobs. */
async function cleanup(request: FastifyRequest) {
  const deleted = await request.server.service.store.deleteFinishedBefore(Date.now() - CLEANUP_AGE_MS);
  return { status: 'cleanup_completed' as const, deleted };
}

// ---------------------------------------------------------------------------------------------------------------
// Errors and headers

/** An error of these routes in the original's shapes, as its entry of COMPAT_ERRORS says (status, shape). */
function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const e = error as Partial<FastifyError>;
  const name = compatErrorOf(error);
  const { status, shape } = COMPAT_ERRORS[name];
  let body: ErrorBody | JobErrorBody;
  if (shape === 'validation') {
    const validation_errors =
      error instanceof CompatValidationError
        ? error.errors
        : Array.isArray(e.validation)
          ? validationErrorsOf(e.validation as AjvError[])
          : [{ field: 'body', message: String(e.message), type: 'json_invalid' }];
    body = { error: compatMessage(name), validation_errors, status: 'client_error' };
  } else if (shape === 'client_error') {
    body = clientErrorBody(error);
  } else if (shape === 'error') {
    body = { error: String(e.message ?? 'Bad request'), status: 'error' };
  } else {
    // INTERNAL: the one job_error an error is answered as (the others answer a job's end).
    request.log.error({ err: error }, 'request failed');
    body = jobErrorBody(compatMessage('INTERNAL'));
  }
  if (error instanceof ServiceError && error.retryAfterSeconds !== undefined) {
    void reply.header('retry-after', String(error.retryAfterSeconds));
  }
  void reply.status(status).type('application/json; charset=utf-8').send(body);
}

/** The original's ClientError: its own details, validateJob's problems, or the code of an error raised below. */
function clientErrorBody(error: unknown): ErrorBody {
  if (error instanceof CompatClientError) {
    return { error: error.message, details: error.details, status: 'client_error' };
  }
  if (error instanceof InvalidJobError) {
    // Normally translated with the request's fields by submitCompatJob; this is the fallback.
    const problems = error.problems.map((p) => ({ field: 'body', path: p.path, message: p.message }));
    return { error: error.message.split('\n')[0]!, details: { problems }, status: 'client_error' };
  }
  const e = error as Partial<FastifyError>;
  const details = { code: e.code ?? 'BAD_REQUEST' };
  return { error: String(e.message ?? 'Bad request'), details, status: 'client_error' };
}

async function noCache(_request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  void reply.headers(NO_CACHE);
  return payload;
}
