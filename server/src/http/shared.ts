// SPDX-License-Identifier: MIT
// What the HTTP layer's parts share, below every route module and the app that registers them: the Fastify
// instance's type and the request's augmentation (its principal, a route's access), the instance's decorators (the
// service, the submission budget's hook), the types of a named handler's request and reply (RouteRequest,
// RouteReply), and the body of every error (errorBodyOf), its code one of the API's table (errors.ts).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { InvalidJobError, type JobProblem } from 'cudakit';
import type {
  ContextConfigDefault,
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
} from 'fastify';
import { ServiceError, isApiErrorCode, statusText } from '../errors.js';
import { StoreUnavailableError } from '../store/store.js';
import type { EvalService } from '../service.js';
import type { Principal, Scope } from './auth.js';
import type { ErrorBody } from './schemas/v1.js';

/** What a route asks of its caller: a scope, nothing ('open'), or loopback or the admin scope ('metrics'). */
export type RouteAccess = Scope | 'open' | 'metrics';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who sent it (set by the auth hook; 'local' without tokens). */
    principal: Principal;
  }
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
  // What every route family takes from the instance rather than from its caller: buildApp decorates the root with
  // them, and each family is a plugin registered below it (its own settings are the plugin's options).
  interface FastifyInstance {
    /** The service the routes submit to and read from. */
    service: EvalService;
    /** The per-principal submission budget: the onRequest hook of every route that submits. */
    submitLimit: SubmitLimit;
  }
}

/** The per-principal submission budget: one onRequest hook shared by every route that submits. */
export type SubmitLimit = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/**
 * The request of a route whose schema is S, as the TypeBox provider types it inside an inline handler: what a handler
 * written apart from its route (a named function) takes.
 */
export type RouteRequest<S extends FastifySchema> = FastifyRequest<
  RouteGenericInterface,
  RawServerDefault,
  RawRequestDefaultExpression,
  S,
  TypeBoxTypeProvider
>;

/** The reply of a route whose schema is S: what it may send is the schema's response for the status. */
export type RouteReply<S extends FastifySchema> = FastifyReply<
  RouteGenericInterface,
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  ContextConfigDefault,
  S,
  TypeBoxTypeProvider
>;

/** `/args/3/kind` → `.args[3].kind`. */
function pathOf(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`))
    .join('');
}

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

function validationDetails(error: FastifyError): { path: string; message: string }[] {
  const part = error.validationContext ?? 'body';
  return (error.validation as AjvError[]).slice(0, 20).map((v) => {
    let path = part + pathOf(v.instancePath ?? '');
    let message = v.message ?? 'is not valid';
    if (v.keyword === 'additionalProperties') {
      path += `.${String(v.params?.additionalProperty)}`;
      message = 'is not a known field';
    } else if (v.keyword === 'required') {
      path += `.${String(v.params?.missingProperty)}`;
      message = 'is required';
    }
    return { path, message };
  });
}

/** A database that went away usually comes back (a restart, a failover) within seconds. */
export const STORE_RETRY_AFTER_SECONDS = 5;

/** The body of any error: 4xx with what the client can fix, 5xx without internals; its code one of API_ERRORS. */
export function errorBodyOf(error: unknown): ErrorBody {
  const status = statusText;
  if (error instanceof InvalidJobError) {
    const details = error.problems.map((p: JobProblem) => ({
      path: p.path.replace(/^job/, 'body'),
      message: p.message,
    }));
    return { statusCode: 400, code: error.code, error: status(400), message: error.message, details };
  }
  const e = error as Partial<FastifyError>;
  if (Array.isArray(e.validation)) {
    const details = validationDetails(e as FastifyError);
    const message = `Invalid request: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`;
    return { statusCode: 400, code: 'FST_ERR_VALIDATION', error: status(400), message, details };
  }
  const statusCode = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (statusCode >= 400 && statusCode < 500) {
    // A client error raised below the routes (Fastify's, a plugin's) with a code the table lacks: a plain 400.
    const [code, known] = isApiErrorCode(e.code) ? [e.code, statusCode] : (['BAD_REQUEST', 400] as const);
    return { statusCode: known, code, error: statusText(known), message: String(e.message ?? statusText(known)) };
  }
  if (error instanceof ServiceError) {
    return { statusCode, code: error.code, error: status(statusCode), message: error.message };
  }
  if (error instanceof StoreUnavailableError) {
    const message = `The job store is unavailable (${error.message}); retry in ${STORE_RETRY_AFTER_SECONDS} s`;
    return { statusCode: 503, code: 'STORE_UNAVAILABLE', error: status(503), message };
  }
  return {
    statusCode: 500,
    code: 'INTERNAL',
    error: status(500),
    message: 'Internal server error (see the server log)',
  };
}
