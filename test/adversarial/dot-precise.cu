// SPDX-License-Identifier: MIT
// The dot task's precise reference (tasks.json "dot-policy", check.precision): out[r] = sum over j of a[r*k + j] *
// b[r*k + j] for the same f32 inputs, every product and sum in fp64, the result written as a double. Not a candidate
// (its output is f64): it is what the precision policy measures every candidate's error, and the reference's, against.
// The reference's order (strided sums, then a shared-memory tree) in fp64: its error, some 1e-13 of an |out| of about
// 10, is nothing next to an fp32 order's 1e-6.

#define MAX_THREADS 1024

extern "C" __global__ void dot_precise(const float* a, const float* b, double* out, int rows, int k) {
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
    if (threadIdx.x == 0) out[r] = partial[0];
    __syncthreads();
  }
}
