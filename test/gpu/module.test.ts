import { expect, it } from 'vitest';
import { CudaError, Device, Program } from '../../lib/index.js';
import { VECTOR_ADD, describeGpu } from '../helpers.js';

describeGpu('Module', () => {
  const d = () => Device.get(0);

  it('loads CUBIN, PTX text and raw bytes', () => {
    const cubin = new Program(VECTOR_ADD).compile({ cache: false });
    const ptx = new Program(VECTOR_ADD).compile({ target: 'ptx', cache: false });
    for (const code of [cubin, ptx, ptx.ptx, cubin.bytes, cubin.bytes.slice().buffer]) {
      const m = d().loadModule(code);
      expect(m.getKernel('vector_add', ['ptr', 'ptr', 'ptr', 'i32']).name).toBe('vector_add');
      m.dispose();
    }
  });

  it('surfaces the JIT error log for bad PTX, and rejects garbage bytes', () => {
    const badPtx = '.version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus.instruction; }\n';
    let err: unknown;
    try {
      d().loadModule(badPtx);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CudaError);
    expect((err as CudaError).code).toBe('CUDA_ERROR_INVALID_PTX');
    expect((err as CudaError).message).toMatch(/log:[\s\S]*bogus/);
    expect(() => d().loadModule(new Uint8Array([1, 2, 3, 4]))).toThrow(CudaError);
    expect(() => d().loadModule(42 as never)).toThrow(TypeError);
  });

  it('finds templates through name expressions and explains unknown names', () => {
    const src = 'template <typename T> __global__ void fill(T* x, T v) { x[threadIdx.x] = v; }';
    const code = new Program(src).compile({ nameExpressions: ['fill<int>', 'fill<double>'], cache: false });
    const m = d().loadModule(code);
    const fillInt = m.getKernel('fill<int>', ['ptr', 'i32']);
    const fillDouble = m.getKernel('fill<double>', ['ptr', 'f64']);
    using xi = d().allocArray(Int32Array, 32);
    using xd = d().allocArray(Float64Array, 32);
    fillInt.launch({ grid: 1, block: 32 }, xi, -7);
    fillDouble.launch({ grid: 1, block: 32 }, xd, 0.25);
    expect(xi.copyToHost()[31]).toBe(-7);
    expect(xd.copyToHost()[0]).toBe(0.25);
    expect(() => m.getKernel('fill<float>', ['ptr', 'f32'])).toThrow(
      /no kernel named 'fill<float>'[\s\S]*fill<int>, fill<double>/,
    );
    m.dispose();
  });

  it('exposes __device__ and __constant__ globals as buffers', () => {
    const src = `
      __constant__ float scale[4];
      __device__ int counter;
      extern "C" __global__ void use(float* out) { out[threadIdx.x] = scale[threadIdx.x]; atomicAdd(&counter, 1); }`;
    const m = d().loadModule(new Program(src).compile({ cache: false }));
    const scale = m.getGlobal('scale');
    expect(scale.byteLength).toBe(16);
    scale.copyFromHost(new Float32Array([1, 2, 3, 4]));
    const counter = m.getGlobal('counter');
    counter.fill(0);
    using out = d().allocArray(Float32Array, 4);
    m.getKernel('use', ['ptr']).launch({ grid: 1, block: 4 }, out);
    expect([...out.copyToHost()]).toEqual([1, 2, 3, 4]);
    expect(new Int32Array(counter.copyToHost().buffer)[0]).toBe(4);
    m.dispose();
    expect(() => scale.ptr).toThrow(/disposed/);
    expect(() => m.getKernel('use', ['ptr'])).toThrow(/disposed/);
  });
});
