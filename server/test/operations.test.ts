// SPDX-License-Identifier: MIT
// Operating the server: --trust-proxy (checked values; client addresses and https from a trusted proxy), who may read
// /metrics, every metric the README lists present in a fresh server's /metrics, refusals logged as warnings without a
// stack, /readyz in plain words, and Redis and PostgreSQL outages logged once each way as JSON, nothing on stderr.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/config.js';
import { StoreUnavailableError } from '../src/store/store.js';
import { auth, closeApps, harness } from './support/app-harness.js';
import { Cluster, getJson, type ClusterNode } from './support/cluster-harness.js';
import { body } from './support/helpers.js';
import { FAKE_GPU_ENV, startServer, type ServerProcess } from './support/server-process.js';
import { describeWithServices, startPostgres, startRedis, type ServiceServer } from './support/services.js';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
const DEPLOYING = fileURLToPath(new URL('../../docs/deploying.md', import.meta.url));

afterEach(closeApps);

/** A request from another host, as Node would report it. */
const REMOTE = { remoteAddress: '203.0.113.9' };

describe('--trust-proxy and --metrics-public', () => {
  const config = (argv: string[], env: Record<string, string> = {}) => {
    const c = parseConfig(argv, env);
    if (c === 'help') throw new Error('help');
    return c;
  };

  it('take true, a number of proxies, or addresses and CIDRs, and name anything else', () => {
    expect(config([]).trustProxy).toBe(false);
    expect(config(['--trust-proxy', 'true']).trustProxy).toBe(true);
    expect(config(['--trust-proxy', 'false']).trustProxy).toBe(false);
    expect(config(['--trust-proxy', '2']).trustProxy).toBe(2);
    expect(config([], { CUDAKIT_SERVER_TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(config(['--trust-proxy', '127.0.0.1, 10.0.0.0/8,::1,fd00::/8,loopback']).trustProxy).toEqual([
      '127.0.0.1',
      '10.0.0.0/8',
      '::1',
      'fd00::/8',
      'loopback',
    ]);
    for (const bad of ['yes', '0', '33', '10.0.0.0/33', '300.1.1.1', '10.0.0.0/8/1', '127.0.0.1,', 'localhost']) {
      expect(() => config(['--trust-proxy', bad]), bad).toThrow(ConfigError);
      expect(() => config(['--trust-proxy', bad]), bad).toThrow(
        "Expected true, a number of proxies from 1 to 32, or the proxies' addresses and CIDRs separated by commas " +
          `(127.0.0.1, 10.0.0.0/8, ::1, loopback) for --trust-proxy but received '${bad}'`,
      );
    }
    expect(() => config([], { CUDAKIT_SERVER_TRUST_PROXY: 'on' })).toThrow(
      "for CUDAKIT_SERVER_TRUST_PROXY but received 'on'",
    );
    expect(config([]).metricsPublic).toBe(false);
    expect(config(['--metrics-public']).metricsPublic).toBe(true);
    expect(config([], { CUDAKIT_SERVER_METRICS_PUBLIC: '1' }).metricsPublic).toBe(true);
    expect(config([], { CUDAKIT_SERVER_METRICS_PUBLIC: 'false' }).metricsPublic).toBe(false);
    expect(() => config([], { CUDAKIT_SERVER_METRICS_PUBLIC: 'maybe' })).toThrow(
      "Expected 1, true, 0 or false for CUDAKIT_SERVER_METRICS_PUBLIC but received 'maybe'",
    );
  });

  it('key the sign-in limit and the cookie’s Secure on what a trusted proxy forwards, and only then', async () => {
    const signIns = async (trustProxy: boolean | number | string[] | undefined) => {
      const { app } = await harness(trustProxy === undefined ? {} : { trustProxy });
      // A proxy on this host forwards two clients; 20 sign-ins a minute each.
      const post = (client: string) =>
        app.inject({
          method: 'POST',
          url: '/signin',
          remoteAddress: '127.0.0.1',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': client },
          payload: 'token=x',
        });
      for (let i = 0; i < 20; i++) expect((await post('198.51.100.1')).statusCode).not.toBe(429);
      const first = await post('198.51.100.1');
      const second = await post('198.51.100.2');
      const cookie = await app.inject({
        method: 'GET',
        url: '/signin',
        remoteAddress: '127.0.0.1',
        headers: { 'x-forwarded-proto': 'https' },
      });
      const secure = /; Secure$/.test(String(cookie.headers['set-cookie']));
      return { first: first.statusCode, second: second.statusCode, secure };
    };
    expect(await signIns(undefined)).toEqual({ first: 429, second: 429, secure: false });
    expect(await signIns(['127.0.0.1'])).toEqual({ first: 429, second: 403, secure: true });
    expect(await signIns(1)).toEqual({ first: 429, second: 403, secure: true });
  });

  it('/metrics: loopback clients or the admin scope; behind a trusted proxy, the client, not the proxy', async () => {
    const status = async (
      options: { trustProxy?: boolean | number | string[]; metricsPublic?: boolean },
      from: string,
      headers: Record<string, string> = {},
    ) => {
      const { app } = await harness(options);
      return (await app.inject({ method: 'GET', url: '/metrics', remoteAddress: from, headers })).statusCode;
    };
    expect(await status({}, '127.0.0.1')).toBe(200);
    expect(await status({}, '::1')).toBe(200);
    expect(await status({}, REMOTE.remoteAddress)).toBe(401);
    expect(await status({}, REMOTE.remoteAddress, auth('alice'))).toBe(403);
    expect(await status({}, REMOTE.remoteAddress, auth('root'))).toBe(200);
    // A proxy on this host: without --trust-proxy everything it forwards is loopback (the documented default) ...
    expect(await status({}, '127.0.0.1', { 'x-forwarded-for': '198.51.100.7' })).toBe(200);
    // ... with it, the forwarded client is asked for a token, and a client on this host is not.
    for (const trustProxy of [true, 1, ['127.0.0.1'], ['loopback']]) {
      const label = JSON.stringify(trustProxy);
      expect(await status({ trustProxy }, '127.0.0.1', { 'x-forwarded-for': '198.51.100.7' }), label).toBe(401);
      expect(await status({ trustProxy }, '127.0.0.1', { 'x-forwarded-for': '127.0.0.1' }), label).toBe(200);
      expect(await status({ trustProxy }, '127.0.0.1'), label).toBe(200);
      // A client that claims to be loopback is still the address the proxy appended after its claim.
      const spoofed = { 'x-forwarded-for': '127.0.0.1, 198.51.100.7' };
      expect(await status({ trustProxy }, '127.0.0.1', spoofed), label).toBe(401);
      expect(await status({ trustProxy }, '127.0.0.1', { ...spoofed, ...auth('root') }), label).toBe(200);
    }
    expect(await status({ metricsPublic: true }, REMOTE.remoteAddress)).toBe(200);
  });
});

/** The metrics the README's table lists: name → type. */
function documentedMetrics(): Map<string, string> {
  const section = readFileSync(README, 'utf8').split('### Metrics and logs')[1]!.split('\n## ')[0]!;
  const rows = [...section.matchAll(/^\| `(cudakit_\w+)` \| (\w+) \|/gm)];
  return new Map(rows.map((m) => [m[1]!, m[2]!]));
}

describe('a fresh server’s /metrics', () => {
  let server: ServerProcess | undefined;
  afterAll(async () => server?.stop());

  it('has every metric the README lists, of its type; each GPU class and each GPU reads 0', async () => {
    const documented = documentedMetrics();
    expect(documented.size).toBeGreaterThanOrEqual(10);
    // docs/deploying.md names no metric the README does not.
    const deploying = readFileSync(DEPLOYING, 'utf8');
    for (const m of deploying.matchAll(/`(cudakit_\w+)[{`]/g)) expect([...documented.keys()]).toContain(m[1]);

    server = await startServer([], FAKE_GPU_ENV);
    await expect.poll(async () => (await fetch(`${server!.url}/readyz`)).status, { timeout: 30_000 }).toBe(200);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    for (const [name, type] of documented) expect(text, name).toContain(`\n# TYPE ${name} ${type}\n`);
    const gpus = (await (await fetch(`${server.url}/v1/gpus`)).json()) as {
      gpus: { uuid: string; classes: string[] }[];
    };
    expect(gpus.gpus).toHaveLength(1);
    for (const gpuClass of gpus.gpus[0]!.classes) {
      expect(text).toContain(`cudakit_queue_depth{gpu_class="${gpuClass}"} 0\n`);
    }
    for (const reason of ['timeout', 'cancelled', 'crash', 'protocol', 'start-failed']) {
      expect(text).toContain(`cudakit_worker_restarts{uuid="${gpus.gpus[0]!.uuid}",reason="${reason}"} 0\n`);
    }
    expect(text).toContain('cudakit_gpu_slots{state="quarantined"} 0\n');
  });
});

/** The JSON log records an app wrote. */
function capture(): { stream: { write(line: string): void }; records: Array<Record<string, unknown>> } {
  const records: Array<Record<string, unknown>> = [];
  return { stream: { write: (line: string) => void records.push(JSON.parse(line) as never) }, records };
}

describe('refusals and readiness', () => {
  it('logs 429 and 503 with Retry-After as warnings with the status and code, without a stack', async () => {
    const log = capture();
    const { app } = await harness({ submitsPerMinute: 1, logger: { level: 'info', stream: log.stream } });
    const submit = (url = '/v1/evaluations', payload: unknown = body()) =>
      app.inject({ method: 'POST', url, headers: auth('alice'), payload: payload as never });
    expect((await submit()).statusCode).toBe(202);
    const limited = await submit();
    expect(limited.statusCode).toBe(429);
    // The compatible routes answer in their own shape, through the same log.
    const compat = await submit('/evaluate', { kernel: { source_code: 'x', kernel_type: 'cuda' } });
    expect(compat.statusCode).toBe(429);
    const noGpu = await harness({ unavailableReason: 'no driver', logger: { level: 'info', stream: log.stream } });
    noGpu.pool.unavailableRetryAfterSeconds = 2; // as an API node's while its agents re-announce
    const refused = await noGpu.app.inject({
      method: 'POST',
      url: '/v1/evaluations',
      headers: auth('alice'),
      payload: body(),
    });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);

    const refusals = log.records.filter((r) => String(r.msg).startsWith('refused: '));
    expect(refusals.map((r) => [r.level, r.statusCode, r.code])).toEqual([
      [40, 429, 'RATE_LIMITED'],
      [40, 429, 'RATE_LIMITED'],
      [40, 503, 'NO_GPU'],
    ]);
    expect(refusals[2]).toMatchObject({ retryAfterSeconds: 2, msg: expect.stringContaining('no driver') });
    for (const r of log.records) {
      expect(JSON.stringify(r)).not.toMatch(/"stack"|"err"/);
      expect(r.level).toBeLessThan(50);
    }
  });

  it('/readyz names the server it cannot reach, not the client library’s message', async () => {
    const { app, service } = await harness({
      endpoints: { store: 'PostgreSQL at db.example:5432', queue: 'Redis at cache.example:6379' },
    });
    const counts = service.store.counts.bind(service.store);
    service.store.counts = async () => {
      const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' });
      throw new StoreUnavailableError(`The job store's database cannot be reached: ${refused.message}`, {
        cause: refused,
      });
    };
    const pingQueue = service.pingQueue.bind(service);
    service.pingQueue = async () => {
      throw new Error('Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest"');
    };
    const res = await app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({
      status: 'not ready',
      reasons: ['PostgreSQL at db.example:5432 is not reachable', 'Redis at cache.example:6379 is not reachable'],
    });
    service.store.counts = counts;
    service.pingQueue = pingQueue;
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ready', reasons: [] });
  });
});

/** A node's JSON log records (stdout), and whatever it wrote to stderr that is not one. */
function logOf(node: ClusterNode): { records: Array<Record<string, unknown>>; strays: string[] } {
  const records: Array<Record<string, unknown>> = [];
  for (const line of node.stdout().split('\n')) {
    if (line.startsWith('{')) records.push(JSON.parse(line) as never);
  }
  const strays = node
    .stderr()
    .split('\n')
    .filter((line) => {
      if (line.trim() === '') return false;
      try {
        JSON.parse(line);
        return false;
      } catch {
        return true;
      }
    });
  return { records, strays };
}

describeWithServices('Redis and PostgreSQL outages in the log', ['redis', 'postgres'], () => {
  let redis: ServiceServer | undefined;
  let postgres: ServiceServer | undefined;
  let cluster: Cluster | undefined;
  afterAll(async () => {
    await cluster?.stop();
    await redis?.stop();
    await postgres?.stop();
  });

  it('each is one error record when lost and one warning when back, on every node; nothing on stderr', async () => {
    redis = await startRedis();
    postgres = await startPostgres();
    cluster = await Cluster.create({ redisUrl: redis.url, postgresUrl: postgres.url });
    const api = await cluster.start('api');
    const agent = await cluster.start('agent', { gpus: 1 });
    await cluster.gpusSeen(api, 1);
    const redisName = `Redis at 127.0.0.1:${redis.port}`;
    const pgName = `PostgreSQL at 127.0.0.1:${postgres.port}`;
    const said = (node: ClusterNode, msg: string) => logOf(node).records.filter((r) => r.msg === msg);

    await redis.kill('SIGKILL');
    for (const node of [api, agent]) {
      await expect.poll(() => said(node, `${redisName} is not reachable`).length, { timeout: 30_000 }).toBe(1);
    }
    const ready = await getJson(api, '/readyz');
    expect(ready.status).toBe(503);
    expect((ready.body as { reasons: string[] }).reasons).toContain(`${redisName} is not reachable`);
    await redis.restart();
    for (const node of [api, agent]) {
      await expect.poll(() => said(node, `${redisName} is reachable again`).length, { timeout: 30_000 }).toBe(1);
    }
    await expect.poll(async () => (await getJson(api, '/readyz')).status, { timeout: 30_000 }).toBe(200);

    await postgres.kill();
    await expect
      .poll(async () => (await getJson(api, '/readyz')).body, { timeout: 30_000 })
      .toEqual({ status: 'not ready', reasons: [`${pgName} is not reachable`] });
    await postgres.restart();
    await expect.poll(async () => (await getJson(api, '/readyz')).status, { timeout: 30_000 }).toBe(200);
    // Its log comes through a pipe: the record may arrive after /readyz's answer. A PostgreSQL that is still starting
    // up refuses the first query after its port opens: that is lost and back once more, each said once.
    await expect
      .poll(() => said(api, `${pgName} is reachable again`).length, { timeout: 30_000 })
      .toBeGreaterThanOrEqual(1);
    await expect
      .poll(() => said(api, `${pgName} is reachable again`).length, { timeout: 30_000 })
      .toBe(said(api, `${pgName} is not reachable`).length);
    // The agent asks the store on its own schedule: if it found PostgreSQL gone, it finds it back.
    await expect
      .poll(() => said(agent, `${pgName} is reachable again`).length, { timeout: 30_000 })
      .toBe(said(agent, `${pgName} is not reachable`).length);

    for (const node of [api, agent]) {
      const { records, strays } = logOf(node);
      expect(strays, `${node.role} stderr`).toEqual([]);
      const lost = records.filter((r) => String(r.msg).endsWith(' is not reachable'));
      const back = records.filter((r) => String(r.msg).endsWith(' is reachable again'));
      expect(
        lost.filter((r) => r.msg === `${redisName} is not reachable`),
        node.role,
      ).toHaveLength(1);
      expect(
        back.filter((r) => r.msg === `${redisName} is reachable again`),
        node.role,
      ).toHaveLength(1);
      // PostgreSQL: each way as often on the API node, which /readyz made ask: once, or twice where it was still
      // starting up (never once per failed query); the agent, if it asked at all meanwhile.
      const pgLost = lost.filter((r) => r.msg === `${pgName} is not reachable`).length;
      const pgBack = back.filter((r) => r.msg === `${pgName} is reachable again`).length;
      expect(node.role === 'api' ? [pgLost >= 1 && pgLost <= 2, pgBack] : [pgLost <= 2, pgBack === pgLost]).toEqual(
        node.role === 'api' ? [true, pgLost] : [true, true],
      );
      for (const r of lost) expect(r).toMatchObject({ level: 50, error: expect.any(String) });
      for (const r of back) expect(r.level).toBe(40);
      expect(JSON.stringify(lost)).not.toContain('"stack"');
    }
  }, 180_000);
});
