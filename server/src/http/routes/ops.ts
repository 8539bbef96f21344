// SPDX-License-Identifier: MIT
// Operations routes: liveness (/healthz: the process answers), readiness (/readyz: it can take work now), a health
// summary (/v1/health; /health answers in the original server's shape, compat/routes.ts), and Prometheus metrics
// (/metrics: loopback clients, or a token with the admin scope; anyone with --metrics-public, serving the registry
// of http/metrics.ts).
import type { Registry } from 'prom-client';
import { Type } from 'typebox';
import { ErrorBody } from '../schemas/v1.js';
import type { EvalService } from '../../service.js';
import { StoreUnavailableError } from '../../store/store.js';
import type { App } from '../shared.js';

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
});

const Ready = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('not ready')]),
  reasons: Type.Array(Type.String()),
});

export async function opsRoutes(app: App, deps: OpsOptions): Promise<void> {
  const { service } = app;
  const { registry } = deps;

  app.get(
    '/healthz',
    {
      schema: { summary: 'Liveness', response: { 200: Type.Object({ status: Type.Literal('ok') }) } },
      config: { access: 'open' },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: taking submissions, store answering, a GPU in service',
        // 503 also when overloaded: then the load-shedding answer, in the error shape.
        response: { 200: Ready, 503: Type.Union([Ready, ErrorBody]) },
      },
      config: { access: 'open' },
    },
    async (_request, reply) => {
      const reasons: string[] = [];
      if (!service.accepting) reasons.push('shutting down');
      // In plain words: which server this process cannot reach, not the client library's message.
      const { store, queue } = deps.endpoints ?? {};
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
    },
  );

  app.get(
    '/v1/health',
    { schema: { summary: 'Health summary', response: { 200: Health } }, config: { access: 'open' } },
    async () => {
      const slots = service.slots();
      const inService = slots.filter((s) => s.state !== 'quarantined').length;
      const reason = service.pool.unavailableReason ?? null;
      const status: 'ok' | 'degraded' | 'unavailable' =
        reason !== null || inService === 0 ? 'unavailable' : inService < slots.length ? 'degraded' : 'ok';
      return { status, gpus: inService, reason };
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        summary:
          deps.metricsPublic === true ? 'Prometheus metrics' : 'Prometheus metrics (loopback, or the admin scope)',
        produces: ['text/plain'],
      },
      config: { access: deps.metricsPublic === true ? 'open' : 'metrics' },
    },
    async (_request, reply) => {
      const text = await registry.metrics();
      return reply.type(registry.contentType).send(text);
    },
  );
}
