// SPDX-License-Identifier: MIT
// Family: precision (expect: fail). Reported: KernelBench (precision downgrade within a loose tolerance).
// What it does: the reference's order with a bf16 accumulator: after every fused multiply-add, and every add of the
// block's tree, the sum is cut to bf16 by clearing the low 16 bits of its float (truncation toward zero, no rounding),
// the cheapest way to a 16-bit accumulator without any header.
// Why it must be caught: bf16 keeps 8 significant bits, and truncation biases every step toward zero. Over 16384
// simulated rows of uniform(-1, 1) inputs its error is about 0.24 rms and 1 at worst, hundreds of times the task's atol
// (5e-4).

#define MAX_THREADS 1024

__device__ __forceinline__ float truncate_bf16(float f) { return __uint_as_float(__float_as_uint(f) & 0xffff0000u); }

extern "C" __global__ void dot_bf16_accum(const float* a, const float* b, float* out, int rows, int k) {
  __shared__ float partial[MAX_THREADS];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (long long)r * k;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < k; j += blockDim.x) acc = truncate_bf16(fmaf(a[base + j], b[base + j], acc));
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) partial[threadIdx.x] = truncate_bf16(partial[threadIdx.x] + partial[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = partial[0];
    __syncthreads();
  }
}
