// SPDX-License-Identifier: MIT
// Family: honest (expect: pass). Reported: look-alike (of a precision change, upward: its sums differ from the
// reference's in the last bits).
// What it does: the reference's order with every product and sum in fp64 (each product of two floats is exact in a
// double), the block's tree in fp64 too, and one rounding to fp32 at the end: the correctly rounded sum, nearly.
// Why it must pass: more precision than the task asks for can never be a downgrade. Over 16384 simulated rows of
// uniform(-1, 1) inputs it differs from the reference by about 1e-6 rms and 6e-6 at worst (the reference's own error),
// some 80 times inside the task's atol (5e-4).

#define MAX_THREADS 1024

extern "C" __global__ void dot_fp64_accum(const float* a, const float* b, float* out, int rows, int k) {
  __shared__ double partial[MAX_THREADS];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (long long)r * k;
    double acc = 0.0;
    for (int j = threadIdx.x; j < k; j += blockDim.x) acc += (double)a[base + j] * (double)b[base + j];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = (float)partial[0];
    __syncthreads();
  }
}
