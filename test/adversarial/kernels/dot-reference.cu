// SPDX-License-Identifier: MIT
// The dot task's reference (tasks.json "dot"): out[r] = sum over j of a[r*k + j] * b[r*k + j], in fp32, for rows = 4096
// rows of k = 1024. Family: honest (expect: pass). Reported: the task's trusted kernel, the one every candidate is
// checked against.
// One block per row (a grid-stride loop over rows): each thread sums the products j = t, t + blockDim.x, ... in order,
// in fp32 (multiply and add fused), then a shared-memory tree halves the partial sums. blockDim.x must be a power of
// two of at most 1024 (the task's 256). With inputs uniform in [-1, 1] this order's error is some 1e-6 (rms) of an
// |out| of about 10: tasks.json's note gives the figures the tolerance rests on.
// Why it must pass: it is what right means for the task.

#define MAX_THREADS 1024

extern "C" __global__ void dot_reference(const float* a, const float* b, float* out, int rows, int k) {
  __shared__ float partial[MAX_THREADS];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (long long)r * k;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < k; j += blockDim.x) acc += a[base + j] * b[base + j];
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
