// SPDX-License-Identifier: MIT
// The distributed mode under load on loopback: 2,000 fake jobs of 400 ms from 64 clients (one token each) through two
// API nodes, run by two agents of 4 fake GPUs each (warm workers: a job costs the GPU's time, not a process start),
// on a real Redis and PostgreSQL. Asserted: every job accepted and ended exactly once (one 'done' event, one worker
// start), no GPU running two jobs at once, both agents working, and the GPUs kept busy: the jobs' own run time over
// 8 GPUs × the run's length (the throughput over the sum of the agents' capacities) at least 0.9. Runs in the 'load'
// project: last, alone on the machine's cores.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { request } from '../../bench/loadgen.js';
import { tokenDigest } from '../../src/http/auth.js';
import { jobBody } from '../../../test/support/jobs.js';
import { Cluster, type ClusterNode } from '../support/cluster-harness.js';
import { describeWithServices, startPostgres, startRedis, type ServiceServer } from '../support/services.js';

const JOBS = 2000;
const CLIENTS = 64;
const JOB_MS = 400;
const GPUS_PER_AGENT = 4;

describeWithServices('distributed mode under load', ['redis', 'postgres'], () => {
  let redis: ServiceServer;
  let postgres: ServiceServer;
  let cluster: Cluster;

  beforeAll(async () => {
    [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await Promise.all([redis?.stop(), postgres?.stop()]);
  });

  it('2,000 jobs from 64 clients on 2 agents × 4 fake GPUs: each ends once, no overlap, GPUs ≥ 90 % busy', async () => {
    cluster = await Cluster.create({ redisUrl: redis.url, postgresUrl: postgres.url, lockSeconds: 10 });
    const tokens = Array.from({ length: CLIENTS }, () => randomBytes(24).toString('base64url'));
    const tokensFile = join(tmpdir(), `cudakit-load-tokens-${process.pid}`);
    writeFileSync(tokensFile, tokens.map((t, i) => `client${i}:${tokenDigest(t)}\n`).join(''));
    const apiArgs = ['--tokens-file', tokensFile, '--submits-per-minute', '100000'];
    const apis = await Promise.all([cluster.start('api', { args: apiArgs }), cluster.start('api', { args: apiArgs })]);
    const agentArgs = ['--isolation', 'warm'];
    await Promise.all([
      cluster.start('agent', { fakeHost: 'f001', gpus: GPUS_PER_AGENT, args: agentArgs }),
      cluster.start('agent', { fakeHost: 'f002', gpus: GPUS_PER_AGENT, args: agentArgs }),
    ]);
    const http = new Agent({ keepAlive: true, maxSockets: CLIENTS * 2 });
    const call = async (node: ClusterNode, token: string, method: string, path: string, body?: unknown) => {
      const headers = { authorization: `Bearer ${token}` };
      const r = await request(
        http,
        `${node.url}${path}`,
        method,
        headers,
        body === undefined ? undefined : JSON.stringify(body),
      );
      return { status: r.status, body: r.body as Record<string, unknown> };
    };
    await expect
      .poll(async () => ((await call(apis[0]!, tokens[0]!, 'GET', '/v1/gpus')).body.gpus as unknown[]).length, {
        timeout: 30_000,
      })
      .toBe(2 * GPUS_PER_AGENT);

    const ids: string[] = [];
    const failures: string[] = [];
    let next = 0;
    const runClient = async (c: number): Promise<void> => {
      const token = tokens[c]!;
      for (let k = next++; k < JOBS; k = next++) {
        const api = apis[k % apis.length]!;
        const submitted = await call(api, token, 'POST', '/v1/evaluations', jobBody(`fake:pass:${JOB_MS}ms`));
        if (submitted.status !== 202) {
          failures.push(`submit ${k}: ${submitted.status} ${JSON.stringify(submitted.body)}`);
          continue;
        }
        const id = submitted.body.id as string;
        ids.push(id);
        // Read it back through the other node: events and results cross API nodes.
        const reader = apis[(k + 1) % apis.length]!;
        for (let polls = 0; ; polls++) {
          const r = await call(reader, token, 'GET', `/v1/evaluations/${id}?wait=30`);
          if (r.status === 200 && ['succeeded', 'failed', 'cancelled'].includes(r.body.status as string)) {
            if (r.body.status !== 'succeeded') failures.push(`${id}: ${r.body.status} ${JSON.stringify(r.body.error)}`);
            break;
          }
          if (polls > 20) {
            failures.push(`${id}: not finished after ${polls} long-polls`);
            break;
          }
        }
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => runClient(c)));
    http.destroy();

    expect(failures).toEqual([]);
    expect(ids).toHaveLength(JOBS);

    // Exactly once: one 'done' event per job in the store, one worker start per job on the GPUs.
    const db = new pg.Client({ connectionString: cluster.databaseUrl });
    await db.connect();
    try {
      const done = await db.query<{ n: string; jobs: string }>(
        "SELECT count(*) AS n, count(DISTINCT job_id) AS jobs FROM job_events WHERE type = 'done'",
      );
      expect(done.rows[0]).toEqual({ n: String(JOBS), jobs: String(JOBS) });
      const statuses = await db.query<{ status: string; n: string }>(
        'SELECT status, count(*) AS n FROM jobs GROUP BY status',
      );
      expect(statuses.rows).toEqual([{ status: 'succeeded', n: String(JOBS) }]);
    } finally {
      await db.end();
    }
    const events = cluster.fakeEvents().filter((e) => e.id !== undefined);
    const starts = events.filter((e) => e.event === 'start');
    const ends = events.filter((e) => e.event === 'end');
    expect(new Set(starts.map((e) => e.id)).size).toBe(JOBS);
    expect(starts).toHaveLength(JOBS);

    // No GPU ran two jobs at once, and every GPU of both agents took work.
    const byGpu = new Map<string, Array<{ start: number; end: number }>>();
    const endOf = new Map(ends.map((e) => [e.id!, e.atMs]));
    for (const s of starts) {
      const list = byGpu.get(s.gpu!) ?? [];
      list.push({ start: s.atMs, end: endOf.get(s.id!)! });
      byGpu.set(s.gpu!, list);
    }
    expect(byGpu.size).toBe(2 * GPUS_PER_AGENT);
    const overlaps: string[] = [];
    for (const [gpu, runs] of byGpu) {
      runs.sort((a, b) => a.start - b.start);
      for (let i = 1; i < runs.length; i++) if (runs[i]!.start < runs[i - 1]!.end) overlaps.push(gpu);
    }
    expect(overlaps).toEqual([]);

    // Throughput over capacity: the GPUs' busy time over 8 GPUs for the whole run.
    const busyMs = starts.reduce((sum, s) => sum + (endOf.get(s.id!)! - s.atMs), 0);
    const firstMs = Math.min(...starts.map((s) => s.atMs));
    const lastMs = Math.max(...ends.map((e) => e.atMs));
    const utilisation = busyMs / (2 * GPUS_PER_AGENT * (lastMs - firstMs));
    const jobsPerSecond = JOBS / ((lastMs - firstMs) / 1000);
    const capacity = (2 * GPUS_PER_AGENT) / (busyMs / JOBS / 1000);
    console.log(
      `distributed load: ${JOBS} jobs in ${((lastMs - firstMs) / 1000).toFixed(1)} s, ${jobsPerSecond.toFixed(1)} ` +
        `jobs/s of a capacity of ${capacity.toFixed(1)} (GPUs busy ${(100 * utilisation).toFixed(1)} %)`,
    );
    expect(utilisation).toBeGreaterThanOrEqual(0.9);
  }, 420_000);
});
