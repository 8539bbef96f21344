// SPDX-License-Identifier: MIT
// Family: honest (expect: pass). Reported: look-alike (of a precision downgrade: the least accurate honest order).
// What it does: one thread per row (a grid-stride loop over rows: with the task's launch, 4096 of its 1M threads find a
// row), summing the row's 1024 products one after the other in fp32. Its partial sums are as large as the row's result
// for most of the loop, so each add rounds at the result's scale: the worst order an honest fp32 kernel plausibly uses,
// and a slow one.
// Why it must pass: it is fp32 summation, only in a worse order. Over 16384 simulated rows of uniform(-1, 1) inputs it
// differs from the reference by about 6e-6 rms and 5e-5 at worst: the task's atol (5e-4) leaves a margin of 10 for the
// least accurate honest order. The statistical error of a random-sign sum is what the margin rests on; worst-case
// bounds (k * 2^-24 * sum |a b|, about 2e-2 here) overlap the fp16 kernels' errors and cannot separate them.

extern "C" __global__ void dot_sequential(const float* a, const float* b, float* out, int rows, int k) {
  const int stride = gridDim.x * blockDim.x;
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride) {
    const long long base = (long long)r * k;
    float acc = 0.0f;
    for (int j = 0; j < k; ++j) acc += a[base + j] * b[base + j];
    out[r] = acc;
  }
}
