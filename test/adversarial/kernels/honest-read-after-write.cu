// SPDX-License-Identifier: MIT
// Family: honest (expect: pass). Reported: look-alike (of the memory-reuse kernels: it reads its output buffer).
// What it does: writes 0 to its output, reads it back and adds f(x) to what it read (y[i] = 0; y[i] += f(x[i])),
// through a volatile pointer so the read really happens. The value read is always the 0 this thread just wrote.
// Why it must pass: it reads y, but only after writing it, so the memory's old contents (poison, or a reference's
// results left in reused memory) never reach an output; every element is computed from its own input on every
// launch.

__device__ __forceinline__ float map_f(float v) {
  for (int step = 0; step < 64; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

extern "C" __global__ void honest_read_after_write(const float* x, float* y, int n) {
  volatile float* out = y;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = 0.0f;
    out[i] = out[i] + map_f(x[i]);
  }
}
