// SPDX-License-Identifier: MIT
// A server with no GPU still tells a client at once that its kernel does not compile, or does not take the arguments
// the job gives: a 400 with NVRTC's words, where a 503 would invite retries that can never succeed. The real binary
// (embedded, the fake probe finding no driver) with real NVRTC: the compile runs in a contained child, never in the
// server process, which this file checks from the server's own memory map.
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../../bench/binary.js';
import { describeNvrtc } from '../../../test/helpers.js';
import { FILL } from '../../../test/support/kernels.js';

const job = (source: string, args: unknown[] = ['ptr:f32[256]:out', 'i32=256']): Record<string, unknown> => ({
  source,
  kernel: 'k',
  grid: 1,
  block: 256,
  args,
});

let server: ServerProcess | undefined;
let dataDir = '';

async function post(path: string, body: unknown): Promise<{ status: number; retryAfter: string | null; body: any }> {
  const res = await fetch(`${server!.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
}

describeNvrtc('compile check without a GPU (real NVRTC, the real binary)', () => {
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'cudakit-compile-check-'));
    server = await startServer({
      args: ['--port', '0', '--data-dir', dataDir],
      env: { CUDAKIT_SERVER_WORKER: 'fake', CUDAKIT_FAKE_GPUS: 'none', CUDAKIT_SERVER_LOG_LEVEL: 'warn' },
    });
  }, 60_000);
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a syntax error is a 400 naming the source and quoting NVRTC, without Retry-After', async () => {
    const r = await post('/v1/evaluations', job(FILL.replace('int i = threadIdx.x;', 'int i = threadIdx.x')));
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.retryAfter).toBeNull();
    expect(r.body.code).toBe('ERR_INVALID_JOB');
    expect(r.body.details).toEqual([
      { path: 'body.source', message: expect.stringMatching(/compiles for job\.source on sm_\d+ .*error: expected/) },
    ]);
  });

  it('an argument count the compiled kernel does not take is a 400 at body.args', async () => {
    const r = await post('/v1/evaluations', job(FILL, ['ptr:f32[256]:out']));
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.details).toEqual([
      { path: 'body.args', message: "Kernel 'k' takes 2 parameters but the signature lists 1: [ptr]" },
    ]);
  });

  it("a broken reference kernel is the reference's problem", async () => {
    const reference = { source: FILL.replace('void k', 'void ref').replace('1.0f;', '1.0f'), kernel: 'ref' };
    const r = await post('/v1/evaluations', { ...job(FILL), reference });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.details[0].path).toBe('body.reference.source');
  });

  it('a job that compiles is a 503 NO_GPU saying so, without Retry-After on a host without a driver', async () => {
    const r = await post('/v1/evaluations', job(FILL));
    expect(r.status, JSON.stringify(r.body)).toBe(503);
    expect(r.body.code).toBe('NO_GPU');
    expect(r.body.message).toMatch(/\(the job compiles for sm_\d+\)$/);
    expect(r.retryAfter).toBeNull();
  });

  it("/compare answers a candidate that does not compile with its 400, naming the request's field", async () => {
    const fixture = JSON.parse(
      readFileSync(join(import.meta.dirname, '..', 'fixtures', 'compat', 'vector_add.cuda-ref.json'), 'utf8'),
    ) as { custom_kernel: { source_code: string } };
    fixture.custom_kernel.source_code = fixture.custom_kernel.source_code.replace(
      'c[tid] = a[tid] + b[tid];',
      'c[tid] =',
    );
    const r = await post('/compare', fixture);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(JSON.stringify(r.body)).toMatch(/custom_kernel/);
    expect(JSON.stringify(r.body)).toMatch(/error: expected an expression/);
  });

  it('the server process itself never loaded NVRTC: every compile ran in a child', () => {
    const maps = readFileSync(`/proc/${server!.pid}/maps`, 'utf8');
    expect(maps).toMatch(/node/); // the map is the server's, and readable
    expect(maps).not.toMatch(/libnvrtc/);
  });
});
