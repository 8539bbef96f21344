// SPDX-License-Identifier: MIT
// The distributed mode on a machine with an NVIDIA GPU: an API node and a GPU agent as separate processes (the real
// binary from source, the real worker on GPU 0), beside a throwaway Redis and PostgreSQL. Kernels that misbehave cost
// what they cost in the embedded mode (server/test/run/faults.gpu.test.ts): an illegal address is RUNTIME_ERROR, a
// kernel that never ends is TIMEOUT within its timeoutSeconds, and the next job on the same GPU passes. Skipped
// without a GPU (describeGpu) and, where Redis or PostgreSQL cannot start, with that reason (a failure with
// CUDAKIT_REQUIRE_SERVICES=1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, finished, getJson, sendJson, type ClusterNode, type Evaluation } from '../support/cluster-harness.js';
import {
  servicesAvailable,
  servicesRequired,
  startPostgres,
  startRedis,
  type ServiceServer,
} from '../support/services.js';
import { describeGpu } from '../../../test/helpers.js';
import { ENDLESS, ILLEGAL, SCALE, scaleJob } from '../../../test/gpu/fault-kernels.js';

const missing = Object.values(servicesAvailable());
// Without Redis or PostgreSQL this file skips, saying why, unless CUDAKIT_REQUIRE_SERVICES=1 makes that a failure.
const describeHere = missing.length > 0 && !servicesRequired ? describe.skip : describeGpu;
if (describeHere === describe.skip) console.warn(`distributed GPU tests skipped: ${missing.join('; ')}`);

describeHere('the distributed mode on a GPU: an API node and an agent, Redis and PostgreSQL', () => {
  let redis: ServiceServer;
  let postgres: ServiceServer;
  let cluster: Cluster;
  let api: ClusterNode;

  beforeAll(async () => {
    if (missing.length > 0) throw new Error(`Redis and PostgreSQL are needed here: ${missing.join('; ')}`);
    [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
    cluster = await Cluster.create({ redisUrl: redis.url, postgresUrl: postgres.url, lockSeconds: 5 });
    try {
      api = await cluster.start('api');
      await cluster.start('agent', { worker: 'real', args: ['--gpus', '0'] });
      await cluster.gpusSeen(api, 1, 120_000);
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${cluster.logs()}`);
    }
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
    await Promise.all([redis?.stop(), postgres?.stop()]);
  });

  async function run(body: Record<string, unknown>, timeoutMs = 120_000): Promise<Evaluation & { report: unknown }> {
    const r = await sendJson(api, 'POST', '/v1/evaluations', body);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const id = (r.body as { id: string }).id;
    await finished(api, id, timeoutMs);
    return (await getJson(api, `/v1/evaluations/${id}`)).body as Evaluation & { report: unknown };
  }

  it('a correct kernel passes, run by the agent on the GPU and read through the API node', async () => {
    const ev = await run(scaleJob('scale', SCALE));
    expect(ev, JSON.stringify(ev.error)).toMatchObject({ status: 'succeeded', verdict: 'PASSED' });
    expect(ev.gpu?.uuid).toMatch(/^(GPU|MIG)-/);
  }, 180_000);

  it('an illegal address: RUNTIME_ERROR as in the embedded mode, and the next job passes', async () => {
    const ev = await run(scaleJob('illegal', ILLEGAL));
    expect(ev, JSON.stringify(ev.error)).toMatchObject({ status: 'succeeded', verdict: 'RUNTIME_ERROR' });
    expect(ev.error?.code).toBe('CUDA_ERROR_ILLEGAL_ADDRESS');
    expect((await run(scaleJob('after illegal', SCALE))).verdict).toBe('PASSED');
  }, 180_000);

  it('a kernel that never ends: TIMEOUT within its timeoutSeconds, and the next job passes', async () => {
    const startedMs = Date.now();
    const ev = await run(scaleJob('endless', ENDLESS, { timeoutSeconds: 5 }));
    expect(ev, JSON.stringify(ev.error)).toMatchObject({ status: 'succeeded', verdict: 'TIMEOUT' });
    expect(Date.now() - startedMs).toBeLessThan(60_000);
    expect((await run(scaleJob('after endless', SCALE))).verdict).toBe('PASSED');
  }, 180_000);
});
