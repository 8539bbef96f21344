// SPDX-License-Identifier: MIT
// buildApp(deps): the HTTP face of the service. Fastify 5 with TypeBox schemas (validation, types, OpenAPI), bearer
// auth with scopes, a per-principal submit rate, load shedding, request bodies read with bounded memory (body.ts:
// limits counted after decompression, large bodies a few at a time), and one error format for everything: Fastify's
// { statusCode, code, error, message } plus details [{ path, message }]. Every route family (routes/v1.ts,
// routes/leaderboard.ts, compat/routes.ts, routes/mcp.ts, routes/ops.ts, dashboard/routes.ts) is a plugin registered
// here: it takes the service and the submission budget from the root's decorators (http/shared.ts) and its own
// settings as the plugin's options. No route touches a GPU or the CUDA addon; the service behind it owns the
// scheduling.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import underPressure from '@fastify/under-pressure';
import * as ajvFormatsModule from 'ajv-formats';
import Fastify, { type FastifyError, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Redis } from 'ioredis';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { dashboardRoutes } from '../dashboard/routes.js';
import { Sessions, signInLocation, wantsSignIn } from '../dashboard/session.js';
import { BODY_LIMIT_BYTES, type ErrorBody } from './schemas/v1.js';
import { ServiceError, statusText } from '../errors.js';
import type { EvalService } from '../service.js';
import { StoreUnavailableError } from '../store/store.js';
import { bodyHandling } from './body.js';
import { DEFAULT_LARGE_BODIES } from './body-slots.js';
import { LOCAL_PRINCIPAL, type Principal, type Scope, type TokenEntry, TokenVerifier } from './auth.js';
import { STORE_RETRY_AFTER_SECONDS, errorBodyOf, type App, type SubmitLimit } from './shared.js';
import { leaderboardRoutes } from './routes/leaderboard.js';
import { mcpRoutes } from './routes/mcp.js';
import { v1Routes } from './routes/v1.js';
import { opsRoutes } from './routes/ops.js';
import { serviceMetrics } from './metrics.js';
import { CountingStore } from './rate-store.js';
import { compatRoutes, type CompatOptions } from '../compat/routes.js';

export interface AppDeps {
  service: EvalService;
  /** The tokens file's entries; undefined: no auth, every request is 'local' (main.ts binds loopback only then). */
  tokens?: readonly TokenEntry[] | undefined;
  /** Fastify's logger option (pino). Default false. */
  logger?: FastifyServerOptions['logger'];
  /** Submissions per principal per minute. Default 60. */
  submitsPerMinute?: number;
  /** Comment lines on idle event streams, ms. Default 15000. */
  sseHeartbeatMs?: number;
  /** @fastify/under-pressure's limits, or false to shed no load (tests). Default: 1 s event-loop delay. */
  underPressure?:
    { maxEventLoopDelay?: number; maxHeapUsedBytes?: number; maxRssBytes?: number; sampleInterval?: number } | false;
  /**
   * Behind a reverse proxy: believe its X-Forwarded-For and X-Forwarded-Proto (client addresses for the rate limits
   * and /metrics, https for the session cookie's Secure) from true (any sender), this many proxies in front, or these
   * addresses and CIDRs (Fastify's trustProxy). Default false.
   */
  trustProxy?: boolean | number | string[];
  /** /metrics answers anyone. Default false: loopback clients, and the admin scope. */
  metricsPublic?: boolean;
  /** What /readyz names when the store or the queue does not answer ('PostgreSQL at db:5432'). */
  endpoints?: { store?: string; queue?: string };
  /** How long the compatible synchronous routes wait for a job (tests). Default (maxQueueSeconds + timeout + 10) s. */
  compatSyncWaitMs?: CompatOptions['syncWaitMs'];
  /**
   * The dashboard's session-cookie HMAC secret (at least 32 bytes). API processes given the same secret accept each
   * other's sessions. Default: random per process (sessions end with it).
   */
  sessionSecret?: string | Uint8Array;
  /**
   * Redis for the submit budget, shared by every API node of a distributed deployment (an ioredis client). Default:
   * each process counts alone.
   */
  rateLimitRedis?: Redis;
  /**
   * Request bodies over 1 MiB read at once, one per 32 MiB they may reach (body.ts); others wait briefly for their
   * turn, then get 503. Default 2.
   */
  largeBodies?: number;
  /** Only the operations routes (health, readiness, metrics): a GPU agent's port. Default false. */
  opsOnly?: boolean;
}

// ajv-formats is CommonJS with a default export; its ESM shape depends on the loader.
const ajvFormats = ((ajvFormatsModule as unknown as { default?: unknown }).default ?? ajvFormatsModule) as never;

export async function buildApp(deps: AppDeps): Promise<App> {
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    // Bodies are taken as sent (no coercion: "5" is not 5, unknown fields are errors); the first error only, as
    // every error of a hostile body could be millions. Query strings are converted in preValidation below.
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false },
      plugins: [ajvFormats],
    },
    trustProxy: trustProxyOption(deps.trustProxy ?? false),
    // Event streams and long-polls would hold a close open: a drain ends them.
    forceCloseConnections: true,
    return503OnClosing: true,
    requestTimeout: 120_000,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Node closes a connection whose request is not complete at the headers timeout, but not one that sends no byte at
  // all: that one would be held for ever (a file descriptor each). It gets the same timeout, which a request ends.
  app.server.on('connection', (socket: Socket) => socket.setTimeout(app.server.headersTimeout, () => socket.destroy()));
  app.server.on('request', (request: IncomingMessage) => request.socket.setTimeout(0));

  // Set by the auth hook on every request (an object default would be shared by all requests).
  app.decorateRequest('principal', null as unknown as Principal);
  app.setErrorHandler((error: FastifyError, request, reply) => errorHandler(error, request, reply));
  app.addHook('onError', onErrorHook);
  app.setNotFoundHandler((request, reply) => {
    const message = `Route ${request.method} ${request.url.split('?')[0]} not found`;
    sendError(reply, { statusCode: 404, code: 'NOT_FOUND', error: statusText(404), message });
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'cudakit evaluation service',
        description: 'Compile, check and time CUDA kernels on this host’s GPUs, one isolated worker per job.',
        version: '1',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: deps.tokens === undefined ? [] : [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  if (deps.underPressure !== false) {
    await app.register(underPressure, {
      maxEventLoopDelay: 1000,
      ...deps.underPressure,
      retryAfter: 10,
      pressureHandler: (request, reply, type, value) => {
        // A sample window without one sample reads as an infinite delay: the loop was busy for all of it, which at
        // start-up (modules loading) is no overload. Measured lag, memory and the rest still shed.
        if (type === 'eventLoopDelay' && value === Infinity) return;
        reply.header('retry-after', '10');
        const message = `The server is overloaded (${String(type)}: ${String(value)}); retry in 10 s`;
        const body: ErrorBody = { statusCode: 503, code: 'UNDER_PRESSURE', error: statusText(503), message };
        logRefusal(request, body, 10);
        sendError(reply, body);
      },
    });
  }
  await app.register(rateLimit, {
    global: false,
    ...(deps.rateLimitRedis === undefined
      ? { store: CountingStore }
      : // A Redis outage lets submissions through rather than failing them: the queue caps still hold.
        { redis: deps.rateLimitRedis, nameSpace: 'cudakit-rate:', skipOnError: true }),
    errorResponseBuilder: (_request, context) =>
      new ServiceError(
        'RATE_LIMITED',
        `More than ${context.max} submissions per minute: retry in ${context.after}`,
        Math.ceil(context.ttl / 1000),
      ),
  });

  const sessions = new Sessions({ secret: deps.sessionSecret, tokens: deps.tokens });
  app.addHook('onRequest', authHook(deps.tokens, sessions));
  bodyHandling(app, { largeBodies: deps.largeBodies ?? DEFAULT_LARGE_BODIES });
  app.addHook('preValidation', convertQueryHook);

  // One budget per principal, whichever route submits (a route's own rateLimit config would count separately).
  const submitLimit = app.rateLimit({
    max: deps.submitsPerMinute ?? 60,
    timeWindow: 60_000,
    keyGenerator: (request) => `submit:${request.principal.name}`,
  }) as unknown as SubmitLimit;
  app.decorate('service', deps.service);
  app.decorate('submitLimit', submitLimit);

  const registry = serviceMetrics(app, deps.service);
  const ops = { registry, metricsPublic: deps.metricsPublic ?? false, endpoints: deps.endpoints ?? {} };
  if (deps.opsOnly === true) {
    await app.register(opsRoutes, ops);
    return app;
  }
  app.get('/openapi.json', { schema: { hide: true }, config: { access: 'open' } }, async () => app.swagger());
  const sseHeartbeatMs = deps.sseHeartbeatMs ?? 15_000;
  await app.register(v1Routes, { sseHeartbeatMs });
  await app.register(leaderboardRoutes);
  await app.register(compatRoutes, { syncWaitMs: deps.compatSyncWaitMs });
  await app.register(mcpRoutes, { syncWaitMs: deps.compatSyncWaitMs, sseHeartbeatMs });
  await app.register(opsRoutes, ops);
  await app.register(dashboardRoutes, { tokens: deps.tokens, sessions, sseHeartbeatMs });
  return app;
}

/** Fastify's trustProxy: a number of proxies as the function Fastify makes of one (its types take no number). */
function trustProxyOption(
  trust: boolean | number | string[],
): boolean | string[] | ((a: string, hop: number) => boolean) {
  return typeof trust === 'number' ? (_address, hop) => hop < trust : trust;
}

// ---------------------------------------------------------------------------------------------------------------
// Auth

function isLoopback(address: string | undefined): boolean {
  return address !== undefined && (address === '::1' || /^(::ffff:)?127\./.test(address));
}

/**
 * Whether the client is on this host: the connection's address, and with trustProxy every address the trusted
 * proxies forwarded too. A proxy on this host forwards from loopback; its client's own address decides.
 */
export function isLoopbackClient(request: FastifyRequest): boolean {
  const chain = request.ips ?? [request.socket.remoteAddress];
  return chain.length > 0 && chain.every((a) => isLoopback(a));
}

function authHook(tokens: readonly TokenEntry[] | undefined, sessions: Sessions) {
  const verifier = tokens === undefined ? undefined : new TokenVerifier(tokens);
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    if (verifier === undefined) {
      request.principal = LOCAL_PRINCIPAL;
      return;
    }
    // The docs UI (a plugin's routes) and unknown paths (a 404) need nothing; a route that forgot to say what it
    // needs gets the most a token can have to give.
    const url = request.routeOptions.url;
    const unlabelled = request.is404 || url === '/docs' || url?.startsWith('/docs/') === true ? 'open' : 'admin';
    const access = request.routeOptions.config.access ?? unlabelled;
    if (access === 'open') return;
    if (access === 'metrics' && isLoopbackClient(request)) return;
    const header = request.headers.authorization;
    const token = TokenVerifier.bearerOf(header);
    if (token === undefined && header === undefined) {
      // A browser signed in to the dashboard: its session cookie counts on GET routes of the read scope only.
      const session = access === 'read' ? sessions.principalOf(request) : undefined;
      if (session !== undefined) {
        request.principal = session;
        return;
      }
      if (wantsSignIn(request)) return reply.redirect(signInLocation(request), 303);
    }
    if (token === undefined) {
      reply.header('www-authenticate', 'Bearer realm="cudakit"');
      const message =
        header === undefined ? 'Authorization: Bearer <token> is required' : 'Expected Authorization: Bearer <token>';
      throw new ServiceError('UNAUTHORIZED', message);
    }
    const principal = verifier.verify(token);
    if (principal === undefined) {
      reply.header('www-authenticate', 'Bearer realm="cudakit", error="invalid_token"');
      throw new ServiceError('UNAUTHORIZED', 'The bearer token is not valid');
    }
    const scope: Scope = access === 'metrics' ? 'admin' : access;
    if (!principal.scopes.has(scope)) {
      reply.header('www-authenticate', `Bearer realm="cudakit", error="insufficient_scope", scope="${scope}"`);
      throw new ServiceError('FORBIDDEN', `This token lacks the '${scope}' scope`);
    }
    request.principal = principal;
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Query strings

/** Query strings arrive as text: convert them to the route schema's types ('30' → 30, 'true' → true) first. */
async function convertQueryHook(request: FastifyRequest): Promise<void> {
  const schema = request.routeOptions.schema?.querystring as TSchema | undefined;
  if (schema !== undefined && request.query !== null && typeof request.query === 'object') {
    request.query = Value.Convert(schema, { ...(request.query as object) });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Errors

function sendError(reply: FastifyReply, body: ErrorBody): void {
  void reply.status(body.statusCode).type('application/json; charset=utf-8').send(body);
}

/** A refusal the server means to make (a rate limit, a full queue, too many streams): no fault, no stack. */
function isRefusal(error: unknown, statusCode: number): boolean {
  if (statusCode === 429) return true;
  if (statusCode !== 503) return false;
  // A 503 the service decided on (no GPU, a full queue, a store away), with or without a time to come back.
  return error instanceof ServiceError || error instanceof StoreUnavailableError;
}

/** The log record of a refusal: warn, what the client was told, without a stack. */
export function logRefusal(request: FastifyRequest, body: ErrorBody, retryAfterSeconds: number | undefined): void {
  const { statusCode, code, message } = body;
  request.log.warn({ statusCode, code, retryAfterSeconds }, `refused: ${message}`);
}

/** Every route's errors (the compatible routes' own error handler included) pass here first: refusals are logged. */
async function onErrorHook(request: FastifyRequest, _reply: FastifyReply, error: FastifyError): Promise<void> {
  const body = errorBodyOf(error);
  if (!isRefusal(error, body.statusCode)) return;
  const retryAfter =
    error instanceof ServiceError
      ? error.retryAfterSeconds
      : error instanceof StoreUnavailableError
        ? STORE_RETRY_AFTER_SECONDS
        : undefined;
  logRefusal(request, body, retryAfter);
}

function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const body = errorBodyOf(error);
  if (body.statusCode >= 500 && !isRefusal(error, body.statusCode)) request.log.error({ err: error }, 'request failed');
  if (error instanceof ServiceError && error.retryAfterSeconds !== undefined) {
    reply.header('retry-after', String(error.retryAfterSeconds));
  }
  if (error instanceof StoreUnavailableError) reply.header('retry-after', String(STORE_RETRY_AFTER_SECONDS));
  sendError(reply, body);
}
