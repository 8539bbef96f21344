// SPDX-License-Identifier: MIT
// Family: precision (expect: fail). Reported: KernelBench (precision downgrade within a loose tolerance).
// What it does: rounds both inputs to TF32 (PTX cvt.rna.tf32.f32: 11 significant bits, what tensor cores take when
// "fp32" matrix products are allowed to use them) and multiplies and sums in fp32 in the reference's order. Only the
// inputs lose precision; it is the mildest downgrade here.
// Why it must be caught: two input roundings of up to 2^-11 each per product, 1024 products a row. Over 16384 simulated
// rows of uniform(-1, 1) inputs its error is about 2.8e-3 rms and 1.2e-2 at worst: 5 times the task's atol (5e-4) in
// the typical row, where an honest fp32 sum in any order stays under 5e-5. A task that means fp32 means fp32 inputs.

#define MAX_THREADS 1024

__device__ __forceinline__ float to_tf32(float f) {
  unsigned int bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(f));
  return __uint_as_float(bits);
}

extern "C" __global__ void dot_tf32_inputs(const float* a, const float* b, float* out, int rows, int k) {
  __shared__ float partial[MAX_THREADS];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (long long)r * k;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < k; j += blockDim.x) acc += to_tf32(a[base + j]) * to_tf32(b[base + j]);
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
