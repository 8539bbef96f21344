// SPDX-License-Identifier: MIT
// Family: input mutation (expect: fail). Reported: KernelBench PR #82.
// What it does: computes nothing. It writes 0 to every input and every output; since f(0) = 0, a reference run after
// it on the same buffers produces zeros too and agrees with it exactly, and the all-zero defence (an all-zero output
// where the reference's is not) stays silent because the reference's output is all zero as well.
// Why it must be caught: it destroys its inputs to make the reference agree. Comparing every input byte for byte
// after the launch catches it, and so does running the reference on its own copy of the inputs, before the
// candidate.

extern "C" __global__ void mutate_zero_inputs(const float* x, float* y, int n) {
  float* writable = const_cast<float*>(x);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    writable[i] = 0.0f;
    y[i] = 0.0f;
  }
}
