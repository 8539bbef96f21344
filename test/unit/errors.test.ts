import { describe, expect, it } from 'vitest';
import {
  CompileError,
  CudaError,
  Device,
  DeviceBuffer,
  Event,
  Kernel,
  Module,
  Stream,
  probe,
} from '../../lib/index.js';
import { runScript } from '../child.js';

describe('errors', () => {
  it('CudaError carries code, api, result, explanation and remedy', () => {
    const e = new CudaError({
      code: 'CUDA_ERROR_OUT_OF_MEMORY',
      api: 'cuMemAlloc',
      result: 2,
      explanation: 'out of memory',
    });
    expect(e).toBeInstanceOf(Error);
    expect(e.message).toMatch(
      /^cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY \(2\): out of memory\n {2}Remedy: Free buffers/,
    );
    expect(e.sticky).toBe(false);
  });

  it('CompileError shows the first error with file:line:column and keeps the exact options', () => {
    const e = new CompileError({
      code: 'NVRTC_ERROR_COMPILATION',
      api: 'nvrtcCompileProgram',
      result: 6,
      log: 'k.cu(2): error: bad\n',
      options: ['--gpu-architecture=sm_90'],
      name: 'k.cu',
      diagnostics: [{ file: 'k.cu', line: 2, column: 5, severity: 'error', message: 'bad' }],
    });
    expect(e.message).toContain('k.cu:2:5: bad');
    expect(e.message).toContain('options: --gpu-architecture=sm_90');
    expect(e.options).toEqual(['--gpu-architecture=sm_90']);
  });
});

describe('construction back doors are locked', () => {
  it.each([
    ['Device', () => new (Device as unknown as new () => unknown)(), 'Device.get(ordinal)'],
    ['Stream', () => new (Stream as unknown as new () => unknown)(), 'device.createStream()'],
    ['Event', () => new (Event as unknown as new () => unknown)(), 'stream.record()'],
    ['Module', () => new (Module as unknown as new () => unknown)(), 'device.loadModule()'],
    ['Kernel', () => new (Kernel as unknown as new () => unknown)(), 'module.getKernel(name, signature)'],
    ['DeviceBuffer', () => new (DeviceBuffer as unknown as new () => unknown)(), 'device.alloc()'],
  ])('%s', (name, make, factory) => {
    expect(make).toThrow(new TypeError(`${name} objects cannot be constructed directly; use ${factory}`));
  });
});

describe('without a driver', () => {
  // Forced with CUDAKIT_LIBCUDA_PATH so this holds on GPU machines too; in a child so the real driver state of
  // this process is not touched.
  const script = `
    import { probe, Device, CudaError } from './lib/index.ts';
    const p = probe();
    let err;
    try { Device.count(); } catch (e) { err = e; }
    const { code, codeNext, message } = err ?? {};
    console.log(JSON.stringify({ p, code, codeNext, isCudaError: err instanceof CudaError, message }));
  `;
  const run = runScript(script, { env: { ...process.env, CUDAKIT_LIBCUDA_PATH: '/nonexistent/libcuda.so.1' } });

  it('import succeeds, probe() reports why, and GPU use throws CUDA_DRIVER_NOT_FOUND listing what was tried', () => {
    expect(run.stderr).toBe('');
    const out = JSON.parse(run.stdout) as {
      p: ReturnType<typeof probe>;
      code: string;
      codeNext: string;
      isCudaError: boolean;
      message: string;
    };
    expect(out.p.ok).toBe(false);
    expect(out.p.deviceCount).toBe(0);
    expect(out.p.reason).toContain('CUDA_DRIVER_NOT_FOUND');
    expect(out.code).toBe('CUDA_DRIVER_NOT_FOUND');
    expect(out.codeNext).toBe('ERR_CUDAKIT_DRIVER_NOT_FOUND');
    expect(out.isCudaError).toBe(true);
    expect(out.message).toContain('/nonexistent/libcuda.so.1');
    expect(out.message).toContain('Remedy: Install the NVIDIA driver');
  });
});
