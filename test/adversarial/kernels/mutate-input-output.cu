// SPDX-License-Identifier: MIT
// Family: input mutation (expect: fail). Reported: KernelBench PR #82.
// What it does: computes y = f(x) honestly, then writes each output over its input (x[i] = y[i]) through a pointer
// with the const cast away. Whatever runs next on the same buffers sees f(x) as its input: a reference run after it
// computes f(f(x)), and the next timed launch on that input set another input than the one it was given.
// Why it must be caught: a kernel must leave its inputs as it found them. Comparing every input byte for byte after
// the launch catches it, whatever the values written.

__device__ __forceinline__ float map_f(float v) {
  for (int step = 0; step < 64; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

extern "C" __global__ void mutate_input_output(const float* x, float* y, int n) {
  float* writable = const_cast<float*>(x);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = map_f(x[i]);
    y[i] = v;
    writable[i] = v;
  }
}
