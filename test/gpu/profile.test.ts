// SPDX-License-Identifier: MIT
// Device metrics of real launches from Nsight Compute: a 64 MiB float copy reads and writes its buffers' bytes from
// DRAM (each within ±10 %), a C++ template kernel is found by its mangled name, the command line prints and writes
// them; without ncu, null and a warning. What needs ncu is skipped, with the reason, where there is none.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Device, type EvalJob, Program, parseArgSpecs, profile, profileJob } from '../../lib/index.js';
import { findNcu } from '../../lib/measure/profile.js';
import { cli, describeGpu } from '../helpers.js';

const COPY = `
extern "C" __global__ void copy(const float* __restrict__ in, float* __restrict__ out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
template <typename T> __global__ void copy_t(const T* __restrict__ in, T* __restrict__ out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}`;
const N = 16 * 2 ** 20; // f32 elements: 64 MiB per buffer, far past L2
const BYTES = 4 * N;
const ARGS = ['ptr:f32[16M]=uniform(-1,1)', 'ptr:f32[16M]:out', `i64=${N}`];
// Under compute-sanitizer, ncu cannot attach to the launch (the sanitizer already holds it): nothing is profiled.
const sanitized = process.env.CUDAKIT_UNDER_SANITIZER === '1';
const ncu = sanitized ? undefined : findNcu(undefined);
const NO_NCU = sanitized ? 'ncu cannot profile under compute-sanitizer' : 'no ncu (Nsight Compute) on PATH';

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cudakit-profile-gpu-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeGpu('profile', () => {
  it('a 64 MiB copy: DRAM reads within ±10 % of the buffer, writes short by at most L2, every group', async (ctx) => {
    if (ncu === undefined) ctx.skip(NO_NCU);
    const code = new Program(COPY).compile();
    const r = await profile({ code, kernel: 'copy', config: { grid: N / 256, block: 256 }, io: parseArgSpecs(ARGS) });
    expect(r.failure, r.warnings.join('\n')).toBeUndefined();
    const m = r.deviceMetrics!;
    expect(m.kernel).toBe('copy');
    const read = m.metrics['dram__bytes_read.sum']!;
    const written = m.metrics['dram__bytes_write.sum']!;
    expect(read.unit).toBe('byte');
    expect(Math.abs((read.value as number) / BYTES - 1), `read ${read.value} of ${BYTES}`).toBeLessThan(0.1);
    // Writes still in L2 when the kernel ends reach DRAM after it: up to the L2's size is not counted.
    const l2Bytes = Device.get(0).l2CacheBytes;
    expect(written.value as number, `written of ${BYTES}, L2 ${l2Bytes}`).toBeGreaterThanOrEqual(BYTES - l2Bytes);
    expect(written.value as number, `written of ${BYTES}`).toBeLessThanOrEqual(1.1 * BYTES);
    expect(m.metrics['launch__grid_size']?.value).toBe(N / 256);
    expect(m.metrics['launch__block_size']?.value).toBe(256);
    expect(m.groups.memory!['dram__bytes_read.sum']).toEqual(read);
    for (const g of ['speedOfLight', 'memory', 'compute', 'occupancy', 'launch', 'stalls', 'scheduler'] as const) {
      expect(Object.keys(m.groups[g] ?? {}).length, g).toBeGreaterThan(0);
    }
    // A memory-bound copy: more of the DRAM's bandwidth than of the SMs' throughput.
    const dram = m.metrics['dram__throughput.avg.pct_of_peak_sustained_elapsed']!.value as number;
    const sm = m.metrics['sm__throughput.avg.pct_of_peak_sustained_elapsed']!.value as number;
    expect(dram).toBeGreaterThan(30);
    expect(dram).toBeGreaterThan(sm);
    // Metrics this GPU lacks are left out and named, never silently.
    expect(r.warnings.length).toBe(m.unavailable.length > 0 ? 1 : 0);
  });

  it('finds a C++ template kernel by its mangled name (profileJob), on its own launch geometry', async (ctx) => {
    if (ncu === undefined) ctx.skip(NO_NCU);
    const job: EvalJob = { source: COPY, kernel: 'copy_t<float>', grid: N / 512, block: 512, args: ARGS };
    const r = await profileJob(job, { metrics: ['launch__grid_size', 'launch__block_size', 'dram__bytes_read.sum'] });
    expect(r.failure, r.warnings.join('\n')).toBeUndefined();
    const symbol = new Program(COPY).compile({ nameExpressions: ['copy_t<float>'] }).loweredNames['copy_t<float>'];
    expect(symbol).toMatch(/^_Z6copy_tIfEv/);
    // ncu names it demangled; the filter matched the mangled symbol exactly (only this kernel launched it).
    expect(r.deviceMetrics!.kernel).toMatch(/^void copy_t<float>\(/);
    expect(r.deviceMetrics!.metrics['launch__grid_size']?.value).toBe(N / 512);
    expect(r.deviceMetrics!.metrics['launch__block_size']?.value).toBe(512);
    expect(Object.keys(r.deviceMetrics!.metrics).sort()).toEqual([
      'dram__bytes_read.sum',
      'launch__block_size',
      'launch__grid_size',
    ]);
  });

  it('cudakit profile prints the groups, and writes JSON', async (ctx) => {
    if (ncu === undefined) ctx.skip(NO_NCU);
    const cu = join(dir, 'copy.cu');
    writeFileSync(cu, COPY);
    const flags = [
      '--kernel',
      'copy',
      '--grid',
      String(N / 256),
      '--block',
      '256',
      ...ARGS.flatMap((a) => ['--arg', a]),
    ];
    const metrics = ['--metrics', 'dram__bytes_read.sum,dram__bytes_write.sum', '--metrics', 'launch__grid_size'];
    const text = await cli(['profile', cu, ...flags, ...metrics]);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^copy \(ncu [\d.]+, one launch\)\nmemory\n {2}dram__bytes_read\.sum +[\d,]+ byte \(/);
    expect(text.stdout).toMatch(/\nlaunch\n {2}launch__grid_size +65,536\n$/);
    const json = await cli(['profile', cu, ...flags, ...metrics, '--json', '-']);
    expect(json.code).toBe(0);
    const out = JSON.parse(json.stdout) as { deviceMetrics: { metrics: Record<string, { value: number }> } };
    expect(Object.keys(out.deviceMetrics.metrics).sort()).toEqual([
      'dram__bytes_read.sum',
      'dram__bytes_write.sum',
      'launch__grid_size',
    ]);
    expect(out).toMatchObject({ failure: null, warnings: [] });
  });

  it('without ncu: null and a warning that says so, from the library and the command line (exit 2)', async () => {
    const missing = join(dir, 'no-ncu-here', 'ncu');
    const code = new Program(COPY).compile();
    const r = await profile(
      { code, kernel: 'copy', config: { grid: N / 256, block: 256 }, io: parseArgSpecs(ARGS) },
      { ncu: missing },
    );
    expect(r).toEqual({
      deviceMetrics: null,
      failure: 'ncu-not-found',
      warnings: [`device metrics not collected: ncu (Nsight Compute) not found at ${missing}`],
    });
    const cu = join(dir, 'copy2.cu');
    writeFileSync(cu, COPY);
    const flags = [
      '--kernel',
      'copy',
      '--grid',
      String(N / 256),
      '--block',
      '256',
      ...ARGS.flatMap((a) => ['--arg', a]),
    ];
    expect(await cli(['profile', cu, ...flags, '--ncu', missing])).toEqual({
      code: 2,
      stdout: '',
      stderr: `cudakit: device metrics not collected: ncu (Nsight Compute) not found at ${missing}\n`,
    });
  });
});
