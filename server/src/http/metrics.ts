// SPDX-License-Identifier: MIT
// The service's Prometheus metrics: one registry per app, so several apps in one process (tests) do not share
// counters, and an onResponse hook on the root instance that times every route of every family. Every metric the
// README lists is there from the start: a gauge of something counted per GPU class or per GPU reads 0 for each rather
// than being absent. /metrics (routes/ops.ts) serves it.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RestartReason } from '../run/restarts.js';
import type { SlotState } from '../run/pool.js';
import type { EvalService } from '../service.js';
import type { App } from './shared.js';

const SLOT_STATES: readonly SlotState[] = ['starting', 'idle', 'busy', 'restarting', 'quarantined'];

/** Every reason a slot replaces its worker for (run/slot.ts), each counted from 0 on every GPU. */
const RESTART_REASONS = [
  'start-failed',
  'spare-exited',
  'idle-exit',
  'exit-before-job',
  'timeout',
  'cancelled',
  'protocol',
  'crash',
] as const satisfies readonly RestartReason[];
// A reason added to RestartReason and not here fails to compile: its count would otherwise appear only once non-zero.
const everyReason: Exclude<RestartReason, (typeof RESTART_REASONS)[number]> extends never ? true : never = true;
void everyReason;

/** The registry of an app; call it on the root instance, before the route families, so its hook sees them all. */
export function serviceMetrics(app: App, service: EvalService): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  new Gauge({
    name: 'cudakit_jobs',
    help: 'Evaluations in the store, by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const counts = await service.store.counts();
      for (const [status, n] of Object.entries(counts)) this.set({ status }, n);
    },
  });
  new Gauge({
    name: 'cudakit_queue_depth',
    help: 'Evaluations queued, by the GPU class they asked for',
    labelNames: ['gpu_class'],
    registers: [registry],
    async collect() {
      // A queue that does not answer (Redis down) leaves the gauge empty rather than failing the scrape.
      const byClass: Record<string, number> | undefined = await service.queuedByClass().catch(() => undefined);
      this.reset();
      if (byClass === undefined) return;
      // Every class a GPU serves reads 0 when nothing waits for it: a series that vanishes says nothing.
      for (const gpuClass of new Set(service.slots().flatMap((s) => s.classes))) this.set({ gpu_class: gpuClass }, 0);
      for (const [gpuClass, n] of Object.entries(byClass)) this.set({ gpu_class: gpuClass }, n);
    },
  });
  new Gauge({
    name: 'cudakit_gpu_slots',
    help: 'GPU slots by state',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const slots = service.slots();
      for (const state of SLOT_STATES) this.set({ state }, slots.filter((s) => s.state === state).length);
    },
  });
  new Gauge({
    name: 'cudakit_gpu_state',
    help: 'Each GPU slot: 1 for its current state',
    labelNames: ['uuid', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of service.slots()) this.set({ uuid: s.uuid, state: s.state }, 1);
    },
  });
  // The slots count their restarts since they started; the counter adds what each count grew by since the last
  // scrape. A count that went down is a slot (an agent) that started again: all of it is new.
  const restartsSeen = new Map<string, number>();
  new Counter({
    name: 'cudakit_worker_restarts',
    help: 'Worker children replaced per GPU, by why (timeout, cancelled, crash, protocol, start-failed …)',
    labelNames: ['uuid', 'reason'],
    registers: [registry],
    collect() {
      for (const s of service.slots()) {
        const counts: Record<string, number> = s.restartsByReason ?? {};
        for (const reason of new Set([...RESTART_REASONS, ...Object.keys(counts)])) {
          const key = `${s.uuid}\0${reason}`;
          const now = counts[reason] ?? 0;
          const seen = restartsSeen.get(key) ?? 0;
          this.inc({ uuid: s.uuid, reason }, now >= seen ? now - seen : now);
          restartsSeen.set(key, now);
        }
      }
    },
  });
  const finished = new Counter({
    name: 'cudakit_evaluations_total',
    help: 'Evaluations finished since start, by status, verdict and the GPU class asked for',
    labelNames: ['status', 'verdict', 'gpu_class'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'cudakit_job_duration_seconds',
    help: 'Time from the GPU lease to the result, by verdict',
    labelNames: ['verdict'],
    buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600],
    registers: [registry],
  });
  const queueWait = new Histogram({
    name: 'cudakit_queue_wait_seconds',
    help: 'Time from the submission to the GPU lease, by the GPU class asked for',
    labelNames: ['gpu_class'],
    buckets: [0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const http = new Histogram({
    name: 'cudakit_http_request_duration_seconds',
    help: 'HTTP requests by route and status code',
    labelNames: ['method', 'route', 'status_code'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60],
    registers: [registry],
  });
  service.onFinished((job) => {
    finished.inc({ status: job.status, verdict: job.verdict ?? 'none', gpu_class: job.gpu });
    if (job.runMs !== undefined) duration.observe({ verdict: job.verdict ?? 'none' }, job.runMs / 1000);
  });
  const phases = new Histogram({
    name: 'cudakit_phase_duration_seconds',
    help: "Duration of each phase of an evaluation's worker (validate, compile, load, check, time, recheck)",
    labelNames: ['phase'],
    buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  service.onStarted((job) => queueWait.observe({ gpu_class: job.gpu }, job.queueWaitMs / 1000));
  service.onFinished((job) => {
    for (const p of job.phases ?? []) phases.observe({ phase: p.phase }, p.ms / 1000);
  });
  app.addHook('onResponse', async (request, reply) => {
    // Unknown paths under one label: a scan of random URLs must not grow the label set.
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, route, status_code: String(reply.statusCode) };
    http.observe(labels, reply.elapsedTime / 1000);
  });
  return registry;
}
