// SPDX-License-Identifier: MIT
// Launch limits at admission (server/src/submit/admission.ts), on every route that queues a job: POST /v1/evaluations,
// the compatible POST /evaluate and /compare, and the MCP tools evaluate_kernel and compare_kernels. Each limit of the
// smallest GPU (threads per block, block x/y/z, grid x/y/z, dynamic shared memory, cluster size) is a 400 naming the
// limit and that GPU, before anything is queued; a job exactly at each limit is taken. The limits reach admission
// from the probe (the fake one: per arch, configurable) through the slots, and on an API node through the agents'
// announcements.
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { InvalidJobError } from 'cudakit';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/shared.js';
import type { AgentEntry, RedisClusterBus } from '../../src/cluster/bus.js';
import { ClusterPool } from '../../src/cluster/pool.js';
import { workerScript } from '../../src/run/child.js';
import { LocalGpuPool, runProbe } from '../../src/run/local-pool.js';
import { EmbeddedQueue } from '../../src/schedule/embedded-queue.js';
import { EvalService } from '../../src/service.js';
import { MemoryJobStore } from '../../src/store/memory.js';
import { H200_LAUNCH } from '../../../test/support/devices.js';
import { auth, closeApps, harness, type Harness } from '../support/app-harness.js';
import { fakeGpus } from '../support/fake-pool.js';
import { body } from '../support/helpers.js';
import { TEST_SLOT } from '../support/slot-helpers.js';

const clients: Client[] = [];
const pools: LocalGpuPool[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await Promise.all(pools.splice(0).map((p) => p.stop(0)));
  await closeApps();
});

/** A launch in the compatible routes' terms: grid and block as { x, y, z }, shared memory as shared_mem_bytes. */
type Launch = {
  grid?: [number, number, number];
  block?: [number, number, number];
  sharedMemBytes?: number;
};

const SHARED = 'bytes of dynamic shared memory per block';

const xyz = ([x, y, z]: [number, number, number]) => ({ x, y, z });

function compatLaunch(l: Launch): Record<string, unknown> {
  return {
    ...(l.grid === undefined ? {} : { grid: xyz(l.grid) }),
    block: xyz(l.block ?? [32, 1, 1]),
    ...(l.sharedMemBytes === undefined ? {} : { shared_mem_bytes: l.sharedMemBytes }),
  };
}

/** A CUDA kernel of the original's requests: y = 1 over 32 floats, with `launch`. */
function compatKernel(name: string, launch: Launch): Record<string, unknown> {
  return {
    source_code: `__global__ void ${name}(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }`,
    kernel_type: 'cuda',
    io: {
      args: [
        { name: 'y', type: 'tensor', role: 'output', tensor_spec: { shape: [32], dtype: 'float32' } },
        { name: 'n', type: 'int', value: 32 },
      ],
      launch: compatLaunch(launch),
    },
    metadata: { kernel_name: name },
  };
}

const evaluateRequest = (l: Launch) => ({ kernel: compatKernel('fill', l) });
/** A compare whose custom kernel has `custom`'s launch and whose reference has `ref`'s. */
const compareRequest = (custom: Launch, ref: Launch = {}) => ({
  custom_kernel: compatKernel('fill', custom),
  ref_kernel: compatKernel('fill_ref', ref),
});

function post(app: App, url: string, payload: unknown) {
  return app.inject({
    method: 'POST',
    url,
    headers: { ...auth('alice'), 'content-type': 'application/json' },
    payload: JSON.stringify(payload),
  });
}

/** Each limit exceeded: the launch, cudakit's path, the limit, what it counts and what the launch asks for. */
const OVER: [string, Launch, 'block' | 'grid' | 'sharedMemBytes', number, string, number][] = [
  ['threads per block', { block: [1024, 2, 1] }, 'block', 1024, 'threads per block', 2048],
  ['block x', { block: [2048, 1, 1] }, 'block', 1024, 'threads along x', 2048],
  ['block y', { block: [1, 2048, 1] }, 'block', 1024, 'threads along y', 2048],
  ['block z', { block: [1, 1, 128] }, 'block', 64, 'threads along z', 128],
  ['grid x', { grid: [2 ** 31, 1, 1] }, 'grid', 2 ** 31 - 1, 'blocks along x', 2 ** 31],
  ['grid y', { grid: [1, 65_536, 1] }, 'grid', 65_535, 'blocks along y', 65_536],
  ['grid z', { grid: [1, 1, 65_536] }, 'grid', 65_535, 'blocks along z', 65_536],
  ['shared memory', { sharedMemBytes: 2 ** 40 }, 'sharedMemBytes', 232_448, SHARED, 2 ** 40],
];

/** Launches exactly at the limits, each limit reached by one of them at least. */
const AT: Launch[] = [
  { grid: [2 ** 31 - 1, 65_535, 65_535], block: [1024, 1, 1], sharedMemBytes: 232_448 },
  { block: [1, 1024, 1] },
  { block: [16, 1, 64] },
  { block: [32, 32, 1] },
];

/** The problem's message for OVER's row `name` at cudakit's path `at`, with the fake H200's `uuid`. */
function message(name: string, at: string, uuid: string): string {
  const [, , , max, what, received] = OVER.find(([n]) => n === name)!;
  return `Expected at most ${max} ${what} for ${at} but received ${received} (the limit of NVIDIA H200 (${uuid}))`;
}

/** The compatible routes' name of a launch field. */
const compatField = (where: string): string => (where === 'sharedMemBytes' ? 'shared_mem_bytes' : where);

describe('launch limits on POST /v1/evaluations', () => {
  it.each(OVER)('%s over the GPU’s limit is a 400 naming the limit and the GPU', async (name, launch, where) => {
    const h = await harness();
    const uuid = h.pool.slots()[0]!.uuid;
    const res = await post(h.app, '/v1/evaluations', body('x', launch));
    expect(res.statusCode).toBe(400);
    const b = res.json() as { code: string; details: { path: string; message: string }[] };
    expect(b.code).toBe('ERR_INVALID_JOB');
    expect(b.details).toContainEqual({ path: `body.${where}`, message: message(name, `job.${where}`, uuid) });
    expect(h.pool.runs).toEqual([]);
  });

  it('a cluster over the portable size is a 400; one of 8 blocks is taken', async () => {
    const h = await harness();
    const uuid = h.pool.slots()[0]!.uuid;
    const res = await post(h.app, '/v1/evaluations', body('x', { grid: 16, clusterDim: [4, 4] }));
    expect(res.statusCode).toBe(400);
    expect(res.json().details).toEqual([
      {
        path: 'body.clusterDim',
        message:
          'Expected at most 8 blocks per cluster for job.clusterDim but received 16 ' +
          `(the limit of NVIDIA H200 (${uuid}))`,
      },
    ]);
    for (const clusterDim of [8, [2, 2, 2], [1, 8]]) {
      expect((await post(h.app, '/v1/evaluations', body('x', { grid: [8, 8, 8], clusterDim }))).statusCode).toBe(202);
    }
  });

  it('a job exactly at each limit is taken', async () => {
    const h = await harness();
    for (const launch of AT) expect((await post(h.app, '/v1/evaluations', body('x', launch))).statusCode).toBe(202);
  });

  it('the smallest GPU’s limits hold, naming that GPU', async () => {
    const [h200, a100] = fakeGpus(2);
    const h = await harness({
      gpus: [
        h200!,
        {
          ...a100!,
          name: 'NVIDIA A100-SXM4-80GB',
          arch: 'sm_80',
          launch: { ...H200_LAUNCH, maxSharedMemoryPerBlockOptinBytes: 166_912, maxClusterBlocks: 0 },
        },
      ],
    });
    const smem = await post(h.app, '/v1/evaluations', body('x', { sharedMemBytes: 166_913 }));
    expect(smem.json().details).toEqual([
      {
        path: 'body.sharedMemBytes',
        message:
          'Expected at most 166912 bytes of dynamic shared memory per block for job.sharedMemBytes but received ' +
          `166913 (the limit of NVIDIA A100-SXM4-80GB (${a100!.uuid}))`,
      },
    ]);
    const cluster = await post(h.app, '/v1/evaluations', body('x', { grid: 2, clusterDim: 2 }));
    expect(cluster.json().details[0].message).toBe(
      'Expected no thread block cluster for job.clusterDim but received one of 2 blocks ' +
        `(the limit of NVIDIA A100-SXM4-80GB (${a100!.uuid}), which launches no clusters: they need sm_90 or later)`,
    );
    expect((await post(h.app, '/v1/evaluations', body('x', { sharedMemBytes: 166_912 }))).statusCode).toBe(202);
  });
});

describe('launch limits on the compatible routes', () => {
  /** The 400 of a compatible route: its message and the problem naming the request's field. */
  async function refused(h: Harness, url: string, payload: unknown) {
    const res = await post(h.app, url, payload);
    expect(res.statusCode).toBe(400);
    const b = res.json() as {
      error: string;
      details: { problems: { field: string; path: string; message: string }[] };
      status: string;
    };
    expect(b.status).toBe('client_error');
    return b;
  }

  it.each(OVER)('%s: POST /evaluate and /compare refuse it, naming the field', async (name, launch, where) => {
    const h = await harness();
    const uuid = h.pool.slots()[0]!.uuid;
    const field = compatField(where);

    const evaluate = await refused(h, '/evaluate', evaluateRequest(launch));
    const expected = message(name, `job.${where}`, uuid);
    expect(evaluate.details.problems).toContainEqual({
      field: `kernel -> io -> launch -> ${field}`,
      path: `job.${where}`,
      message: expected,
    });
    expect(evaluate.error).toMatch(/^Invalid job: Expected at most /);

    const custom = await refused(h, '/compare', compareRequest(launch));
    expect(custom.details.problems).toContainEqual({
      field: `custom_kernel -> io -> launch -> ${field}`,
      path: `job.${where}`,
      message: expected,
    });
    // The reference's own launch: the compare baseline's, held to the same limits.
    const ref = await refused(h, '/compare', compareRequest({}, launch));
    expect(ref.details.problems).toContainEqual({
      field: `ref_kernel -> io -> launch -> ${field}`,
      path: `job.compare.${where}`,
      message: message(name, `job.compare.${where}`, uuid),
    });
    expect(h.pool.runs).toEqual([]);
  });

  it('a job exactly at each limit is taken', async () => {
    const h = await harness();
    for (const launch of AT) {
      const evaluate = await post(h.app, '/evaluate', evaluateRequest(launch));
      expect(evaluate.statusCode, evaluate.body).toBe(200);
      const compare = await post(h.app, '/compare', compareRequest(launch, launch));
      expect(compare.statusCode, compare.body).toBe(200);
    }
  });
});

describe('launch limits on the MCP tools', () => {
  async function connect(h: Harness): Promise<Client> {
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = h.app.server.address() as AddressInfo;
    const client = new Client({ name: 'launch-limits-test', version: '1' });
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: auth('alice') } }));
    clients.push(client);
    return client;
  }

  const call = async (client: Client, name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

  it('each limit exceeded is a tool error naming limit, GPU and field; a job at the limits runs', async () => {
    const h = await harness();
    const uuid = h.pool.slots()[0]!.uuid;
    const client = await connect(h);
    for (const [name, launch, where] of OVER) {
      const field = compatField(where);
      const line = `- kernel -> io -> launch -> ${field}: ${message(name, `job.${where}`, uuid)}`;
      const evaluate = await call(client, 'evaluate_kernel', evaluateRequest(launch));
      expect(evaluate.isError, name).toBe(true);
      expect(textOf(evaluate).split('\n'), name).toContain(line);
      const compare = await call(client, 'compare_kernels', compareRequest(launch));
      expect(compare.isError, name).toBe(true);
      expect(textOf(compare).split('\n'), name).toContain(line.replace('- kernel', '- custom_kernel'));
    }
    expect(h.pool.runs).toEqual([]);
    for (const launch of AT) {
      expect((await call(client, 'evaluate_kernel', evaluateRequest(launch))).isError).toBeFalsy();
      expect((await call(client, 'compare_kernels', compareRequest(launch, launch))).isError).toBeFalsy();
    }
  });
});

describe('where the limits come from', () => {
  const MIXED = [
    'NVIDIA H200@sm_90',
    'NVIDIA A100-SXM4-80GB@sm_80',
    'NVIDIA H100 80GB HBM3@sm_90@threads=512+block=512x256x32+grid=1000x2000x3000+smem=100000+cluster=4',
  ].join(',');

  it('the fake probe reports each GPU’s, by arch and as configured', async () => {
    const { devices } = await runProbe(workerScript('probe', 'fake'), { CUDAKIT_FAKE_GPUS: MIXED }, 10_000);
    expect(devices.map((d) => d.launch)).toEqual([
      H200_LAUNCH,
      { ...H200_LAUNCH, maxSharedMemoryPerBlockOptinBytes: 166_912, maxClusterBlocks: 0 },
      {
        maxThreadsPerBlock: 512,
        maxBlockDim: [512, 256, 32],
        maxGridDim: [1000, 2000, 3000],
        maxSharedMemoryPerBlockOptinBytes: 100_000,
        maxClusterBlocks: 4,
      },
    ]);
  });

  it('reach an API node from the agents’ announcements, and admission names the GPU', async () => {
    // An agent's pool as main.ts announces it: its slots, through JSON (the registry is a Redis hash).
    const { worker: _, ...slot } = TEST_SLOT;
    const local = new LocalGpuPool({
      worker: 'fake',
      env: { CUDAKIT_FAKE_GPUS: MIXED },
      computeApps: () => Promise.resolve([]),
      reprobeIntervalMs: 0,
      slot,
    });
    pools.push(local);
    await local.start();
    const announced = JSON.parse(JSON.stringify(local.slots())) as AgentEntry['slots'];
    expect(announced.map((s) => s.launch?.maxSharedMemoryPerBlockOptinBytes)).toEqual([232_448, 166_912, 100_000]);
    const entry: AgentEntry = {
      agentId: 'a1',
      host: 'f001',
      pid: 1,
      classes: ['any'],
      slots: announced,
      unavailableReason: undefined,
      atMs: 0,
    };
    const bus = { agents: async () => [entry] } as unknown as RedisClusterBus;
    const pool = new ClusterPool({ bus, refreshMs: 60_000 });
    await pool.start();
    await pool.stop();
    // An API node: the submitting side of the queue only.
    const api = new EvalService({ store: new MemoryJobStore(), submitQueue: new EmbeddedQueue(), pool });
    const problems = async (extra: Record<string, unknown>) =>
      api.submit('alice', body('x', extra)).then(
        () => [],
        (e: unknown) => {
          expect(e).toBeInstanceOf(InvalidJobError);
          return (e as InvalidJobError).problems.map((p) => p.message);
        },
      );
    const [h200, a100, h100] = announced;
    const ofH100 = `(the limit of ${h100!.name} (${h100!.uuid}))`;
    expect(await problems({ block: [1, 1, 33], sharedMemBytes: 100_001, grid: [1, 1, 3001], clusterDim: 8 })).toEqual([
      `Expected at most 32 threads along z for job.block but received 33 ${ofH100}`,
      `Expected at most 3000 blocks along z for job.grid but received 3001 ${ofH100}`,
      'Expected at most 100000 bytes of dynamic shared memory per block for job.sharedMemBytes but received 100001 ' +
        ofH100,
      'Expected no thread block cluster for job.clusterDim but received one of 8 blocks ' +
        `(the limit of ${a100!.name} (${a100!.uuid}), which launches no clusters: they need sm_90 or later)`,
    ]);
    expect(h200!.launch).toEqual(H200_LAUNCH);
    expect(await problems({ block: [1, 1, 32], sharedMemBytes: 100_000, grid: [1, 1, 3000] })).toEqual([]);
    api.close();
  });
});
