// SPDX-License-Identifier: MIT
// Operations routes: liveness (/healthz: the process answers), readiness (/readyz: it can take work now), a health
// summary (/v1/health; /health answers in the original server's shape, compat/routes.ts), and Prometheus metrics
// (/metrics: loopback clients, or a token with the admin scope; anyone with --metrics-public, serving the registry
// of http/metrics.ts). A plugin: the service comes from the instance, the registry and what /readyz and /metrics
// say from its options; one named handler per route.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { type Static, Type } from 'typebox';
import { ErrorBody } from '../schemas/v1.js';
import { StoreUnavailableError } from '../../store/store.js';
import type { App, RouteReply } from '../shared.js';

export interface OpsOptions {
  /** The service's metrics (http/metrics.ts), which /metrics serves. */
  registry: Registry;
  /** /metrics answers anyone. Default false: loopback clients and the admin scope. */
  metricsPublic?: boolean;
  /** What /readyz names when the store or the queue does not answer ('PostgreSQL at db:5432'). */
  endpoints?: { store?: string; queue?: string };
}

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('unavailable')]),
  gpus: Type.Integer({ description: 'GPUs in service (not quarantined)' }),
  reason: Type.Union([Type.String(), Type.Null()]),
  python: Type.Array(
    Type.Object({
      python: Type.String(),
      torch: Type.String(),
      triton: Type.Union([Type.String(), Type.Null()]),
      cudaVersion: Type.Union([Type.String(), Type.Null()]),
    }),
    {
      description: "The Pythons the GPUs' hosts serve the Python kernel types with (--python), each once; [] for none",
    },
  ),
});

const Ready = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('not ready')]),
  reasons: Type.Array(Type.String()),
});

const livenessSchema = { summary: 'Liveness', response: { 200: Type.Object({ status: Type.Literal('ok') }) } };

const readySchema = {
  summary: 'Readiness: taking submissions, store answering, a GPU in service',
  // 503 also when overloaded: then the load-shedding answer, in the error shape.
  response: { 200: Ready, 503: Type.Union([Ready, ErrorBody]) },
};

const healthSchema = { summary: 'Health summary', response: { 200: Health } };

export async function opsRoutes(app: App, options: OpsOptions): Promise<void> {
  app.get('/healthz', { schema: livenessSchema, config: { access: 'open' } }, liveness);
  app.get('/readyz', { schema: readySchema, config: { access: 'open' } }, readiness(options.endpoints ?? {}));
  app.get('/v1/health', { schema: healthSchema, config: { access: 'open' } }, health);
  const metricsPublic = options.metricsPublic === true;
  app.get(
    '/metrics',
    {
      schema: {
        summary: metricsPublic ? 'Prometheus metrics' : 'Prometheus metrics (loopback, or the admin scope)',
        produces: ['text/plain'],
      },
      config: { access: metricsPublic ? 'open' : 'metrics' },
    },
    metrics(options.registry),
  );
}

async function liveness(): Promise<{ status: 'ok' }> {
  return { status: 'ok' };
}

/** GET /readyz, naming the store and the queue as the plugin's options say. */
function readiness(endpoints: NonNullable<OpsOptions['endpoints']>) {
  return async function readiness(request: FastifyRequest, reply: RouteReply<typeof readySchema>) {
    const { service } = request.server;
    const reasons: string[] = [];
    if (!service.accepting) reasons.push('shutting down');
    // In plain words: which server this process cannot reach, not the client library's message.
    const { store, queue } = endpoints;
    try {
      await service.store.counts();
    } catch (e) {
      if (e instanceof StoreUnavailableError) {
        reasons.push(store === undefined ? 'the job store cannot be reached' : `${store} is not reachable`);
      } else reasons.push(`the job store failed: ${(e as Error).message}`);
    }
    try {
      await service.pingQueue();
    } catch (e) {
      reasons.push(queue === undefined ? `the queue failed: ${(e as Error).message}` : `${queue} is not reachable`);
    }
    // An API node needs no GPU of its own to take submissions: agents come and go behind the queue.
    const runs = service.sides.runs;
    const reason = runs ? service.pool.unavailableReason : undefined;
    if (reason !== undefined) reasons.push(`no GPU: ${reason}`);
    else if (runs && !service.slots().some((s) => s.state !== 'quarantined')) {
      reasons.push('every GPU is quarantined');
    }
    return reply
      .code(reasons.length === 0 ? 200 : 503)
      .send({ status: reasons.length === 0 ? 'ready' : 'not ready', reasons });
  };
}

async function health(request: FastifyRequest): Promise<Static<typeof Health>> {
  const { service } = request.server;
  const slots = service.slots();
  const inService = slots.filter((s) => s.state !== 'quarantined').length;
  const reason = service.pool.unavailableReason ?? null;
  const status: 'ok' | 'degraded' | 'unavailable' =
    reason !== null || inService === 0 ? 'unavailable' : inService < slots.length ? 'degraded' : 'ok';
  // Versions only: this route answers anyone, and an interpreter's path is the host's.
  const pythons = new Map<string, Static<typeof Health>['python'][number]>();
  for (const p of slots.flatMap((slot) => (slot.python === undefined ? [] : [slot.python]))) {
    const versions = { python: p.python, torch: p.torch, triton: p.triton, cudaVersion: p.cudaVersion };
    pythons.set(JSON.stringify(versions), versions);
  }
  return { status, gpus: inService, reason, python: [...pythons.values()] };
}

/** GET /metrics: the registry the plugin is given. */
function metrics(registry: Registry) {
  return async function metrics(_request: FastifyRequest, reply: FastifyReply) {
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  };
}
