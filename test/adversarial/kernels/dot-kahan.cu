// SPDX-License-Identifier: MIT
// Family: honest (expect: pass). Reported: look-alike (of a precision change: its sums differ from the reference's in
// the last bits, in the other direction).
// What it does: the reference's order, with Kahan (compensated) summation in each thread: the rounding error of every
// add is carried in a compensation term and subtracted from the next product. The adds and products use __fadd_rn,
// __fsub_rn and __fmul_rn so the compiler neither fuses nor reassociates them (which would cancel the compensation).
// The block's tree is the reference's.
// Why it must pass: it is more accurate than the reference, not less. Over 16384 simulated rows of uniform(-1, 1)
// inputs it differs from the reference by about 1.2e-6 rms and 8e-6 at worst (most of it the reference's own error),
// some 60 times inside the task's atol (5e-4).

#define MAX_THREADS 1024

extern "C" __global__ void dot_kahan(const float* a, const float* b, float* out, int rows, int k) {
  __shared__ float partial[MAX_THREADS];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (long long)r * k;
    float sum = 0.0f;
    float compensation = 0.0f;
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
      const float term = __fsub_rn(__fmul_rn(a[base + j], b[base + j]), compensation);
      const float next = __fadd_rn(sum, term);
      compensation = __fsub_rn(__fsub_rn(next, sum), term);
      sum = next;
    }
    partial[threadIdx.x] = __fsub_rn(sum, compensation);
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = partial[0];
    __syncthreads();
  }
}
