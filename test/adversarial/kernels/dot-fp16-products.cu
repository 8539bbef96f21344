// SPDX-License-Identifier: MIT
// Family: precision (expect: fail). Reported: KernelBench (precision downgrade within a loose tolerance).
// What it does: the inputs rounded to fp16 and multiplied in fp16 (mul.rn.f16), the products widened back to fp32 and
// summed in fp32 in the reference's order. The sum is as good as the reference's; the products are not.
// Why it must be caught: each product carries three fp16 roundings (two inputs, one product), a relative error of up to
// 5e-4 each, and 1024 of them add up. Over 16384 simulated rows of uniform(-1, 1) inputs its error is about 3.5e-3 rms
// and 1.4e-2 at worst: 7 times the task's atol (5e-4) in the typical row, where an honest fp32 sum in any order stays
// under 5e-5. Half-precision products look like an fp32 kernel's in their accumulation, which is why it is here.

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

__device__ __forceinline__ float product_half(float x, float y) {
  unsigned short d;
  asm("mul.rn.f16 %0, %1, %2;" : "=h"(d) : "h"(to_half(x)), "h"(to_half(y)));
  return from_half(d);
}

extern "C" __global__ void dot_fp16_products(const float* a, const float* b, float* out, int rows, int k) {
  __shared__ float partial[MAX_THREADS];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (long long)r * k;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < k; j += blockDim.x) acc += product_half(a[base + j], b[base + j]);
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = partial[0];
    __syncthreads();
  }
}
