import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { describeGpu } from '../helpers.js';

// Each scenario runs in its own process: a sticky error would poison this one.
function run(script: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    cwd: new URL('../..', import.meta.url).pathname,
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// Under compute-sanitizer these planted faults would be (correctly) reported as memcheck errors.
const planted = process.env.CUDAKIT_UNDER_SANITIZER === '1' ? it.skip : it;

describeGpu('errors', () => {
  planted('an illegal address is a sticky CudaError; later calls say the context is lost; the process survives', () => {
    const r = run(`
      import { Device, Program, CudaError, contextLostBy } from './lib/index.ts';
      const d = Device.get(0);
      const m = d.loadModule(new Program('extern "C" __global__ void bad(int* p) { p[threadIdx.x] = 1; }').compile());
      const k = m.getKernel('bad', ['ptr']);
      const out = {};
      k.launch({ grid: 1, block: 32 }, 0x10n); // enqueue succeeds; the fault shows at the next sync
      try { d.synchronize(); } catch (e) { out.first = { cls: e instanceof CudaError, code: e.code, api: e.api, sticky: e.sticky, msg: e.message }; }
      try { d.alloc(16); } catch (e) { out.second = { code: e.code, api: e.api, msg: e.message }; }
      out.lost = contextLostBy();
      console.log(JSON.stringify(out));
    `);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, Record<string, unknown>>;
    expect(out.first).toMatchObject({ cls: true, code: 'CUDA_ERROR_ILLEGAL_ADDRESS', api: 'cuCtxSynchronize', sticky: true });
    expect(out.first!.msg).toMatch(/compute-sanitizer/);
    expect(out.second).toMatchObject({ code: 'CUDA_ERROR_ILLEGAL_ADDRESS', api: 'cuMemAlloc' });
    expect(out.second!.msg).toMatch(/context was lost when cuCtxSynchronize failed[\s\S]*Restart the process/);
    expect(out.lost).toEqual({ code: 'CUDA_ERROR_ILLEGAL_ADDRESS', api: 'cuCtxSynchronize' });
  });

  planted('a device-side assert is reported as CUDA_ERROR_ASSERT', () => {
    const r = run(`
      import { Device, Program } from './lib/index.ts';
      const d = Device.get(0);
      // assert() expands to __assertfail, which NVRTC provides without the C library's assert.h
      const src = 'extern "C" __device__ void __assertfail(const char*, const char*, unsigned, const char*, size_t);' +
        'extern "C" __global__ void a(int v) { if (v != 0) __assertfail("v == 0", "a.cu", 1, "a", 1); }';
      const m = d.loadModule(new Program(src).compile());
      m.getKernel('a', ['i32']).launch({ grid: 1, block: 1 }, 1);
      try { d.synchronize(); console.log('no error'); } catch (e) { console.log(e.code); }
    `);
    expect(r.stdout.trim().split('\n').pop(), r.stderr).toBe('CUDA_ERROR_ASSERT');
  });

  it('exiting with live buffers, streams, modules and pinned memory is clean', () => {
    const r = run(`
      import { Device, Program } from './lib/index.ts';
      const d = Device.get(0);
      const bufs = Array.from({ length: 10 }, () => d.alloc(1 << 20));
      const s = d.createStream();
      const m = d.loadModule(new Program('extern "C" __global__ void k() {}').compile());
      m.getKernel('k', []).launch({ grid: 1, block: 1, stream: s });
      const h = d.allocHost(Float32Array, 1024);
      const e = s.record();
      globalThis.keep = { bufs, s, m, h, e };
      console.log('exiting');
    `);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('exiting');
  });
});
