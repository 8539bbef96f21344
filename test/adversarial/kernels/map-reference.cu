// SPDX-License-Identifier: MIT
// The map task's reference (tasks.json "map"): y[i] = f(x[i]) over 1M floats, one thread per element.
// Family: honest (expect: pass). Reported: the task's trusted kernel, the one every candidate is checked against.
// f(v) is 64 steps of v <- 0.999 v + 0.01 sin(v): some 30 instructions a step, so a launch over 1M elements is bound
// by arithmetic (an estimated 50-150 us on an H100) and a kernel that replays or skips the work gains a lot. From
// inputs in [-2, 2] the value stays within about 2.4 and moves by at most about 0.55, so sinf never leaves its fast
// path. Every candidate of the map task spells f the same way, so an honest one matches this kernel to within a few
// units in the last place.
// Why it must pass: it is what right means for the task.

__device__ __forceinline__ float map_f(float v) {
  for (int step = 0; step < 64; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

extern "C" __global__ void map_reference(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = map_f(x[i]);
}
