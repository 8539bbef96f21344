// SPDX-License-Identifier: MIT
// The CUDA sources several test files run or compile, each written once. saxpy(a, x, y, n) is y = a·x + y over n
// floats; its variants keep its name and parameters, so one job or command line takes any of them.

/** saxpy, one element per thread. */
export const SAXPY = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;

/** saxpy with four elements per thread: launched with a quarter of the threads. */
export const SAXPY4 = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  for (int k = i; k < i + 4 && k < n; k++) y[k] = a * x[k] + y[k];
}
`;

/** saxpy's signature, writing through an illegal address: a sticky fault that loses the context. */
export const SAXPY_ILLEGAL = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ((float*)0x10)[i] = a * x[i];
}
`;

/** out = a + b over n floats. */
export const VECTOR_ADD = `
extern "C" __global__ void vector_add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
`;

/** k(y, n): y = 1 over the first n floats, one block; the kernel of the service tests' job (jobs.ts). */
export const FILL = 'extern "C" __global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }';

/**
 * tile_copy(src, dst): each block of 128 threads loads one 32 × 32 f32 tile of src's tensor map into shared memory
 * with the TMA, doubles it there, and stores it with the TMA at the same place of dst's (sm_90 and later; an empty
 * kernel below). Elements outside the tensor load as zero and are not stored.
 */
export const TMA_TILE_COPY = `#include <cudakit/tensor_map.h>
extern "C" __global__ void tile_copy(const __grid_constant__ CUtensorMap src, const __grid_constant__ CUtensorMap dst) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(128) float tile[32 * 32];
  __shared__ __align__(8) unsigned long long bar;
  const int x = blockIdx.x * 32, y = blockIdx.y * 32;
  if (threadIdx.x == 0) {
    cudakit::tma::prefetch(&src);
    cudakit::tma::barrier_init(&bar, 1);
    cudakit::tma::arrive_expect_bytes(&bar, sizeof tile);
    cudakit::tma::load(tile, &src, x, y, &bar);
  }
  __syncthreads();
  cudakit::tma::wait(&bar, 0);
  for (int i = threadIdx.x; i < 32 * 32; i += blockDim.x) tile[i] = 2.0f * tile[i];
  cudakit::tma::fence_shared();
  __syncthreads();
  if (threadIdx.x == 0) {
    cudakit::tma::store(&dst, x, y, tile);
    cudakit::tma::commit();
    cudakit::tma::wait_stores();
  }
#endif
}
`;
