import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { describeGpu } from '../helpers.js';
import { runScript } from '../child.js';

const root = new URL('../..', import.meta.url).pathname;

/** Runs a TypeScript file (so `using` works) in its own process. */
function runFile(source: string): { status: number | null; stdout: string; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cudakit-errors-'));
  try {
    const file = join(dir, 'scenario.mts'); // an ES module: top-level await
    writeFileSync(file, source.replaceAll('CUDAKIT', new URL('lib/index.ts', `file://${root}`).href));
    const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', file], {
      encoding: 'utf8',
      cwd: root,
      timeout: 60_000,
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Each scenario runs in its own process: a sticky error would poison this one.
function run(script: string): { status: number | null; stdout: string; stderr: string } {
  const r = runScript(script);
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
      try {
        d.synchronize();
      } catch (e) {
        out.first = { cls: e instanceof CudaError, code: e.code, api: e.api, sticky: e.sticky, msg: e.message };
      }
      try { d.alloc(16); } catch (e) { out.second = { code: e.code, api: e.api, msg: e.message }; }
      out.lost = contextLostBy();
      console.log(JSON.stringify(out));
    `);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, Record<string, unknown>>;
    expect(out.first).toMatchObject({
      cls: true,
      code: 'CUDA_ERROR_ILLEGAL_ADDRESS',
      api: 'cuCtxSynchronize',
      sticky: true,
    });
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

  planted(
    'after a sticky error, cleanup is silent: dispose, freeHost, unregister and finalizers never throw or warn',
    () => {
      const r = runFile(`
      import { CudaError, Device, Program, freeHost, native } from 'CUDAKIT';
      const warnings: string[] = [];
      process.on('warning', (w) => warnings.push(w.name + ': ' + w.message));
      const d = Device.get(0);
      const m = d.loadModule(
        new Program(
          'extern "C" __global__ void bad(int* p) { p[threadIdx.x] = 1; } extern "C" __global__ void ok() {}',
        ).compile(),
      );
      const bad = m.getKernel('bad', ['ptr']);
      const ok = m.getKernel('ok', []);
      const s = d.createStream();
      const capture = d.createStream();
      capture.beginCapture();
      ok.launch({ grid: 1, block: 1, stream: capture });
      const graph = capture.endCapture();
      const exec = graph.instantiate();
      const event = s.record();
      const host = d.allocHost(Float32Array, 1024);
      const reg = d.registerHost(new ArrayBuffer(1 << 16));
      const buf = d.alloc(1 << 20);
      // 40 objects nobody disposes: their finalizers run after the context is lost.
      (() => {
        for (let i = 0; i < 10; i++) {
          d.createStream();
          s.record();
          d.alloc(1024);
          d.loadModule(new Program('extern "C" __global__ void k' + i + '() {}').compile());
        }
      })();
      const out: Record<string, unknown> = {};
      try {
        using inner = d.createStream();
        bad.launch({ grid: 1, block: 32, stream: inner }, 0x10n);
        inner.synchronize();
      } catch (e) {
        // The original error, not a SuppressedError from the failed dispose of the stream "inner".
        out.usingError = { isCudaError: e instanceof CudaError, name: (e as Error).name, code: (e as CudaError).code };
      }
      const thrown: string[] = [];
      const attempt = (what: string, f: () => void) => {
        try {
          f();
        } catch (e) {
          thrown.push(what + ': ' + (e as Error).message.split('\\n')[0]);
        }
      };
      attempt('stream', () => s.dispose());
      attempt('capture stream', () => capture.dispose());
      attempt('event', () => event.dispose());
      attempt('graph exec', () => exec.dispose());
      attempt('graph', () => graph.dispose());
      attempt('kernel', () => bad.dispose());
      attempt('module', () => m.dispose());
      attempt('buffer', () => buf.dispose());
      attempt('freeHost', () => freeHost(host));
      attempt('freeHost again', () => freeHost(host));
      attempt('unregister', () => reg.unregister());
      attempt('stream again', () => s.dispose());
      // What the addon holds: only the 40 forgotten objects (and whatever the library keeps) are left to collect.
      // Nothing has run between their creation and here but synchronous code, so no finalizer has run yet.
      type Stats = ReturnType<ReturnType<typeof native>['stats']>;
      const pick = ({ streams, events, modules, deviceAllocations, deviceBytes }: Stats) => ({
        streams,
        events,
        modules,
        deviceAllocations,
        deviceBytes,
      });
      out.beforeGc = pick(native().stats());
      // Finalizers run in tasks of their own after a collection: collect and yield until the counts stop falling.
      let last = '';
      for (let round = 0; round < 20; round++) {
        globalThis.gc!();
        await new Promise((r) => setImmediate(r));
        await new Promise((r) => setTimeout(r, 20));
        const now = JSON.stringify(pick(native().stats()));
        if (round >= 2 && now === last) break;
        last = now;
      }
      out.afterGc = pick(native().stats());
      out.thrown = thrown;
      out.warnings = warnings;
      out.hostDetached = host.length === 0;
      console.log(JSON.stringify(out));
    `);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
      expect(out.usingError).toEqual({ isCudaError: true, name: 'CudaError', code: 'CUDA_ERROR_ILLEGAL_ADDRESS' });
      expect(out.thrown).toEqual([]);
      expect(out.warnings).toEqual([]);
      expect(out.hostDetached).toBe(true);
      // The finalizers ran and released the 10 forgotten streams, events, modules and 1 KiB buffers: their driver
      // calls failed (the context is lost), silently, but the addon untracks a handle before it calls the driver.
      type Counts = {
        streams: number;
        events: number;
        modules: number;
        deviceAllocations: number;
        deviceBytes: number;
      };
      const before = out.beforeGc as Counts;
      const after = out.afterGc as Counts;
      expect(before.streams).toBeGreaterThanOrEqual(10);
      expect(before.streams - after.streams).toBeGreaterThanOrEqual(10);
      expect(before.events - after.events).toBeGreaterThanOrEqual(10);
      expect(before.modules - after.modules).toBeGreaterThanOrEqual(10);
      expect(before.deviceAllocations - after.deviceAllocations).toBeGreaterThanOrEqual(10);
      expect(before.deviceBytes - after.deviceBytes).toBeGreaterThanOrEqual(10 * 1024);
    },
  );

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
