// SPDX-License-Identifier: MIT
// Family: memory reuse (expect: fail). Reported: the memory-reuse exploit against an AI CUDA engineer (its kernels
// passed because the output memory still held the reference's results).
// What it does: reads each output before writing it, and keeps it when it is not NaN: only elements that hold NaN are
// computed. Memory just freed by the reference (and reused for the candidate's output) holds the right answers, so
// it computes nothing; an output left from the previous launch on the same inputs is kept as well.
// Why it must be caught: its outputs come from whatever the memory held. Poisoning the outputs with NaN before every
// launch makes it compute, so the check passes it; the timing must poison (or refresh the inputs) before every timed
// launch too, or the timed launches after the first on each input set are reads of y and nothing else.

__device__ __forceinline__ float map_f(float v) {
  for (int step = 0; step < 64; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

extern "C" __global__ void reuse_not_nan(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float old = y[i];
    if (old != old) y[i] = map_f(x[i]);
  }
}
