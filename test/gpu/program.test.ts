import { expect, it } from 'vitest';
import { Device, Program } from '../../lib/index.js';
import { describeGpu } from '../helpers.js';

describeGpu('Program on a device', () => {
  it("defaults arch to the current device's", () => {
    const code = new Program('extern "C" __global__ void k() {}').compile({ cache: false });
    expect(code.arch).toBe(Device.get(0).arch);
    expect(code.target).toBe('cubin');
  });

  it("finds CUDA's own headers (cuda_fp16.h, cuda_bf16.h) and runs half-precision code", () => {
    const src = `
      #include <cuda_fp16.h>
      #include <cuda_bf16.h>
      extern "C" __global__ void halves(const __half* a, __nv_bfloat16* b, float* out) {
        out[threadIdx.x] = __half2float(a[threadIdx.x]) + __bfloat162float(b[threadIdx.x]);
      }`;
    const d = Device.get(0);
    const m = d.loadModule(new Program(src).compile({ cache: false }));
    const k = m.getKernel('halves', ['ptr', 'ptr', 'ptr']);
    using a = d.allocArray(Uint16Array, 4);
    using b = d.allocArray(Uint16Array, 4);
    using out = d.allocArray(Float32Array, 4);
    a.copyFromHost(new Uint16Array([0x3c00, 0x4000, 0x3800, 0xbc00])); // 1, 2, 0.5, -1
    b.copyFromHost(new Uint16Array([0x3f80, 0x3f80, 0x4000, 0x4040])); // 1, 1, 2, 3
    k.launch({ grid: 1, block: 4 }, a, b, out);
    expect([...out.copyToHost()]).toEqual([2, 3, 2.5, 2]);
    m.dispose();
  });

  // CUDA's C++ libraries through NVRTC (CCCL: libcu++, CUB; CUDA 13 keeps them under include/cccl): each header in a
  // kernel that uses it, run, its result checked.
  const library = (src: string, name: string) => {
    const d = Device.get(0);
    const m = d.loadModule(new Program(src).compile({ cache: false, std: 'c++17' }));
    return { d, m, k: m.getKernel(name, ['ptr']) };
  };

  it('compiles and runs libcu++ (<cuda/std/...>, <cuda/barrier>) and CUB (<cub/block/block_reduce.cuh>)', () => {
    const src = `
      #include <cuda/std/array>
      #include <cuda/std/limits>
      #include <cuda/barrier>
      #include <cub/block/block_reduce.cuh>
      extern "C" __global__ void libs(int* out) {
        cuda::std::array<int, 3> a = {3, 1, 2};
        __shared__ cuda::barrier<cuda::thread_scope_block> bar;
        if (threadIdx.x == 0) init(&bar, blockDim.x);
        __syncthreads();
        bar.arrive_and_wait();
        using Reduce = cub::BlockReduce<int, 128>;
        __shared__ typename Reduce::TempStorage storage;
        int sum = Reduce(storage).Sum(static_cast<int>(threadIdx.x));
        if (threadIdx.x == 0) {
          out[0] = a[0] + a[1] + a[2];
          out[1] = cuda::std::numeric_limits<short>::max();
          out[2] = sum;
        }
      }`;
    const { d, m, k } = library(src, 'libs');
    using out = d.allocArray(Int32Array, 3);
    k.launch({ grid: 1, block: 128 }, out);
    expect([...out.copyToHost()]).toEqual([6, 32767, (127 * 128) / 2]);
    m.dispose();
  });

  it('compiles and runs tensor-core code (<mma.h>) and fp8 (<cuda_fp8.h>)', () => {
    const src = `
      #include <mma.h>
      #include <cuda_fp8.h>
      #include <cuda_fp16.h>
      using namespace nvcuda;
      extern "C" __global__ void tiles(float* out) {
        __shared__ __half a[16 * 16], b[16 * 16];
        for (int i = threadIdx.x; i < 256; i += 32) {
          a[i] = __float2half(float(__nv_fp8_e4m3(1.0f)));
          b[i] = __float2half(2.0f);
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        wmma::load_matrix_sync(fa, a, 16);
        wmma::load_matrix_sync(fb, b, 16);
        wmma::mma_sync(acc, fa, fb, acc);
        wmma::store_matrix_sync(out, acc, 16, wmma::mem_row_major);
      }`;
    const { d, m, k } = library(src, 'tiles');
    using out = d.allocArray(Float32Array, 256);
    k.launch({ grid: 1, block: 32 }, out);
    expect(new Set(out.copyToHost())).toEqual(new Set([32])); // each element: 16 products of 1 and 2
    m.dispose();
  });
});
