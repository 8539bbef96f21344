// SPDX-License-Identifier: MIT
// Family: input mutation (expect: fail). Reported: KernelBench PR #82.
// What it does: computes y = f(x) honestly, then flips the lowest mantissa bit of three inputs (the first, the middle
// and the last element): a one-ulp change, a tag that a later launch could recognise an input set by (and key a
// replay on), too small for any tolerance-based comparison of the inputs or a check of a few sampled elements.
// Why it must be caught: three of 1M inputs differ by one ulp after the launch. Only an exact, every-byte comparison
// of the inputs after the launch catches it; a tolerance or a sample does not.

__device__ __forceinline__ float map_f(float v) {
  for (int step = 0; step < 64; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

extern "C" __global__ void mutate_few(const float* x, float* y, int n) {
  float* writable = const_cast<float*>(x);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float in = x[i];
    y[i] = map_f(in);
    if (i == 0 || i == n / 2 || i == n - 1) writable[i] = __uint_as_float(__float_as_uint(in) ^ 1u);
  }
}
