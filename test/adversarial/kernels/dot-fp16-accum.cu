// SPDX-License-Identifier: MIT
// Family: precision (expect: fail). Reported: KernelBench (precision downgrade within a loose tolerance).
// What it does: the reference's order, in fp16 throughout: inputs rounded to fp16 (PTX cvt.rn.f16.f32), each thread's
// products accumulated with fma.rn.f16, the block's tree with add.rn.f16, and the fp16 sum widened back to fp32
// (cvt.f32.f16) for out. Half the bytes per value and twice the arithmetic rate are what it is after.
// Why it must be caught: fp16 keeps 11 significant bits, and the tree's sums grow to the row's result (tens), where
// fp16's step is 2^-6 to 2^-5. Over 16384 simulated rows of uniform(-1, 1) inputs its error is about 8e-3 rms and 4e-2
// at worst, 16 times the task's atol (5e-4) in the typical row, where an honest fp32 sum in any order stays under 5e-5.

#define MAX_THREADS 1024

__device__ __forceinline__ unsigned short to_half(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

__device__ __forceinline__ float from_half(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

__device__ __forceinline__ unsigned short fma_half(unsigned short x, unsigned short y, unsigned short z) {
  unsigned short d;
  asm("fma.rn.f16 %0, %1, %2, %3;" : "=h"(d) : "h"(x), "h"(y), "h"(z));
  return d;
}

__device__ __forceinline__ unsigned short add_half(unsigned short x, unsigned short y) {
  unsigned short d;
  asm("add.rn.f16 %0, %1, %2;" : "=h"(d) : "h"(x), "h"(y));
  return d;
}

extern "C" __global__ void dot_fp16_accum(const float* a, const float* b, float* out, int rows, int k) {
  __shared__ unsigned short partial[MAX_THREADS];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (long long)r * k;
    unsigned short acc = to_half(0.0f);
    for (int j = threadIdx.x; j < k; j += blockDim.x) acc = fma_half(to_half(a[base + j]), to_half(b[base + j]), acc);
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) partial[threadIdx.x] = add_half(partial[threadIdx.x], partial[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = from_half(partial[0]);
    __syncthreads();
  }
}
