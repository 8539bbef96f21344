// SPDX-License-Identifier: MIT
// Family: honest (expect: pass). Reported: look-alike (of a kernel whose launch need not cover n: a harness that
// assumed one thread per element could mistake its loop for skipped work).
// What it does: a grid-stride loop: each thread computes elements tid, tid + gridDim.x * blockDim.x, ... so any grid
// covers all n elements, with the same f as the reference.
// Why it must pass: it computes every output from its own input on every launch, writes only its outputs, and keeps
// no state between launches.

__device__ __forceinline__ float map_f(float v) {
  for (int step = 0; step < 64; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

extern "C" __global__ void honest_grid_stride(const float* x, float* y, int n) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = map_f(x[i]);
}
