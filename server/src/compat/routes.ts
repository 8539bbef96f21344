// SPDX-License-Identifier: MIT
// The original evaluation server's routes, synchronous as it is: POST /evaluate, /compare and / submit a job and
// wait for its end (maxQueueSeconds + timeout + 10 s at most, then the original's 500 with the job_id while the job
// goes on, readable at /job/{id} and /v1/evaluations/{id}); GET /health, /job/{id} and /stats and POST
// /admin/cleanup-jobs answer in the original's shapes. Every answer of these routes, errors included, is in the
// original's shapes and carries its no-cache headers. Auth is the v1 API's: submit for the POSTs, read for the
// GETs, admin for /admin/*. The mapping itself is compat/jobs.ts; the contract is server/docs/compat.md.
import { InvalidJobError } from 'cudakit';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  CompatStats,
  answerOf,
  jobErrorBody,
  jobStatsOf,
  jobStatusOf,
  compatGpuOf,
  compatWaitMs,
  submitCompatJob,
} from './answers.js';
import { CompatClientError, CompatValidationError, validationErrorsOf, type AjvError } from './errors.js';
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
import type { EvalService } from '../service.js';
import { isJobId } from '../store/ids.js';
import { TERMINAL, type JobRecord } from '../store/store.js';
import type { App, SubmitLimit } from '../http/shared.js';

export type CompatOptions = Pick<CompatDeps, 'syncWaitMs'>;

export interface CompatDeps {
  service: EvalService;
  /** The per-principal submission budget, shared with POST /v1/evaluations. */
  submitLimit: SubmitLimit;
  /** How long a synchronous route waits for its job, ms. Default (maxQueueSeconds + timeout + 10) s. */
  syncWaitMs?: ((job: Pick<CompatJob, 'timeoutSeconds' | 'maxQueueSeconds'>) => number) | undefined;
}

/** What the original's cleanup drops: finished jobs older than five minutes. */
const CLEANUP_AGE_MS = 5 * 60 * 1000;

const NO_CACHE = { 'cache-control': 'no-cache, no-store, must-revalidate', pragma: 'no-cache', expires: '0' };

const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, ErrorBody]));

/** Status codes of a body's problems (answered 'client_error'); any other 4xx is the original's HTTPException. */
const CLIENT_ERRORS = new Set([400, 413, 415, 422]);

/** An error of these routes in the original's shapes (its handlers for ValidationError, ClientError, HTTPException). */
function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const e = error as Partial<FastifyError>;
  let statusCode: number;
  let body: ErrorBody | JobErrorBody;
  if (error instanceof CompatValidationError) {
    statusCode = 400;
    body = { error: error.message, validation_errors: error.errors, status: 'client_error' };
  } else if (error instanceof CompatClientError) {
    statusCode = 400;
    body = { error: error.message, details: error.details, status: 'client_error' };
  } else if (Array.isArray(e.validation)) {
    statusCode = 400;
    const validation_errors = validationErrorsOf(e.validation as AjvError[]);
    body = { error: 'Invalid request format', validation_errors, status: 'client_error' };
  } else if (e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    statusCode = 400;
    const validation_errors = [{ field: 'body', message: String(e.message), type: 'json_invalid' }];
    body = { error: 'Invalid request format', validation_errors, status: 'client_error' };
  } else if (error instanceof InvalidJobError) {
    // Normally translated with the request's fields by the route; this is the fallback.
    statusCode = 400;
    const problems = error.problems.map((p) => ({ field: 'body', path: p.path, message: p.message }));
    body = { error: error.message.split('\n')[0]!, details: { problems }, status: 'client_error' };
  } else if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    statusCode = e.statusCode;
    const message = String(e.message ?? 'Bad request');
    body = CLIENT_ERRORS.has(statusCode)
      ? { error: message, details: { code: e.code ?? 'BAD_REQUEST' }, status: 'client_error' }
      : { error: message, status: 'error' };
  } else if (error instanceof ServiceError) {
    statusCode = error.statusCode;
    body = { error: error.message, status: 'error' };
  } else {
    statusCode = 500;
    request.log.error({ err: error }, 'request failed');
    body = jobErrorBody('Internal server error (see the server log)');
  }
  if (error instanceof ServiceError && error.retryAfterSeconds !== undefined) {
    void reply.header('retry-after', String(error.retryAfterSeconds));
  }
  void reply.status(statusCode).type('application/json; charset=utf-8').send(body);
}

async function noCache(_request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  void reply.headers(NO_CACHE);
  return payload;
}

export async function compatRoutes(app: App, options: CompatOptions): Promise<void> {
  const deps: CompatDeps = { service: app.service, submitLimit: app.submitLimit, ...options };
  const { service } = deps;
  const stats = new CompatStats();
  service.onStarted((job) => stats.started(job));
  service.onFinished((job) => stats.finished(job));
  const common = { errorHandler: sendError, onSend: noCache };

  /** Waits for the job's end (or the client leaving), then answers as the original does. */
  async function answer(job: CompatJob, record: JobRecord, reply: FastifyReply): Promise<FastifyReply> {
    const waitMs = compatWaitMs(job, deps.syncWaitMs);
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
      const seconds = Math.round(waitMs / 1000);
      const message =
        `Job timed out after ${seconds} seconds; it goes on: GET /job/${now.id} or /v1/evaluations/${now.id} ` +
        'for its result';
      return reply.code(500).send(jobErrorBody(message, now.id));
    }
    const result = answerOf(now, { kind: job.kind, gpu: compatGpuOf(service.slots(), now), warnings: job.warnings });
    if (result.statusCode === 200 && result.body.gpu_type !== undefined) {
      void reply.header('x-gpu-type', result.body.gpu_type);
    }
    return reply.code(result.statusCode).send(result.body);
  }

  app.post(
    '/evaluate',
    {
      bodyLimit: SUBMIT_BODY_LIMIT_BYTES,
      attachValidation: true,
      schema: {
        summary: 'Evaluate one CUDA kernel (synchronous; compatible with the original server)',
        description:
          "The original's EvaluationRequest with kernel_type 'cuda'. Waits for the result; kernel failures are " +
          "200 status 'success' with compiled / correctness false. See server/docs/compat.md.",
        body: EvaluationRequest,
        response: { 200: EvaluationResponse, 500: JobErrorBody, ...errors(400, 401, 403, 413, 415, 429, 503) },
      },
      config: { access: 'submit' },
      onRequest: deps.submitLimit,
      ...common,
    },
    async (request, reply) => {
      if (request.validationError !== undefined) throw request.validationError;
      const job = evaluateJob(request.body);
      return answer(job, await submitCompatJob(service, request.principal.name, job), reply);
    },
  );

  for (const url of ['/compare', '/']) {
    app.post(
      url,
      {
        bodyLimit: SUBMIT_BODY_LIMIT_BYTES,
        attachValidation: true,
        schema: {
          summary:
            url === '/'
              ? 'Compare two CUDA kernels (the original’s legacy alias of /compare)'
              : 'Compare a CUDA kernel with a CUDA reference (synchronous; compatible with the original server)',
          description:
            "The original's CompareRequest with kernel_type 'cuda' on both sides; a Python reference is a 400 " +
            `naming its substitutes (${REFERENCE_SUBSTITUTES.length}). See server/docs/compat.md.`,
          body: CompareRequest,
          response: { 200: CompareResponse, 500: JobErrorBody, ...errors(400, 401, 403, 413, 415, 429, 503) },
        },
        config: { access: 'submit' },
        onRequest: deps.submitLimit,
        ...common,
      },
      async (request, reply) => {
        // The legacy form is recognised before the schema, as the original converts it before parsing.
        refuseLegacy(request.body);
        if (request.validationError !== undefined) throw request.validationError;
        const job = compareJob(request.body);
        return answer(job, await submitCompatJob(service, request.principal.name, job), reply);
      },
    );
  }

  app.get(
    '/health',
    {
      schema: {
        summary: "Health in the original server's shape (the service's own summary is /v1/health)",
        response: { 200: Health, 500: Unhealthy, ...errors(401, 403) },
      },
      config: { access: 'read' },
      ...common,
    },
    async (_request, reply) => {
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
        return reply.code(500).send({ status: 'unhealthy' as const, error: (e as Error).message });
      }
    },
  );

  app.get(
    '/job/:job_id',
    {
      schema: {
        summary: "A job's status in the original server's shape",
        params: JobIdParams,
        response: { 200: JobStatus, ...errors(400, 401, 403, 404) },
      },
      config: { access: 'read' },
      ...common,
    },
    async (request) => {
      const id = request.params.job_id;
      const record = isJobId(id) ? await service.get(id) : undefined;
      const { principal } = request;
      // Another principal's job is not found either: ids say nothing about other clients.
      if (record === undefined || (record.principal !== principal.name && !principal.scopes.has('admin'))) {
        throw new ServiceError('JOB_NOT_FOUND', `Job ${id.slice(0, 64)} not found`);
      }
      return jobStatusOf(record);
    },
  );

  app.get(
    '/stats',
    {
      schema: {
        summary: "Server statistics in the original server's shape (since this process started)",
        response: { 200: Stats, ...errors(401, 403) },
      },
      config: { access: 'read' },
      ...common,
    },
    async () => {
      const [counts, meanCreatedAtMs] = await Promise.all([service.store.counts(), service.store.meanCreatedAtMs()]);
      const snapshot = stats.snapshot() as Omit<Stats, 'job_stats'>;
      return { job_stats: jobStatsOf(counts, meanCreatedAtMs, Date.now()), ...snapshot };
    },
  );

  app.post(
    '/admin/cleanup-jobs',
    {
      schema: {
        summary: 'Delete finished jobs older than five minutes (admin)',
        description: "The original's cleanup: finished evaluations that ended more than 5 minutes ago are deleted.",
        response: { 200: Cleanup, ...errors(400, 401, 403, 413, 415) },
      },
      config: { access: 'admin' },
      ...common,
    },
    async () => {
      const deleted = await service.store.deleteFinishedBefore(Date.now() - CLEANUP_AGE_MS);
      return { status: 'cleanup_completed' as const, deleted };
    },
  );
}
