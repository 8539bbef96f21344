// SPDX-License-Identifier: MIT
// Family: first-launch-only (expect: fail). Reported: no single public report; docs/benchmarking.md lists it as
// "right on the first launch only" (state kept between launches).
// What it does: computes honestly on the first launch of its module and keeps the outputs in a device-global array
// (room for 1M floats); every later launch copies them, with no key at all: not the pointer, not the values. Every
// element is written with a finite, plausible value, so neither the poison nor the all-zero defence fires.
// Why it must be caught: from the second launch on its outputs belong to the first launch's inputs. Any later launch
// with other inputs (the check's second trial, another timed input set) is wrong almost everywhere.

#define CAPACITY (1 << 20)

__device__ unsigned int g_launches;
__device__ float g_store[CAPACITY];
__device__ unsigned int g_arrived;

__device__ __forceinline__ float map_f(float v) {
  for (int step = 0; step < 64; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

// Called by every thread after its block's work; true in the last block to arrive, once every other block has read
// the state this launch started from, so that block may change it for the next launch.
__device__ bool last_block_to_finish() {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(&g_arrived, 1u) == gridDim.x - 1u;
    if (last) g_arrived = 0u;
  }
  __syncthreads();
  return last;
}

extern "C" __global__ void first_launch_replay(const float* x, float* y, int n) {
  const bool first = g_launches == 0u;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    if (first || i >= CAPACITY) {
      const float v = map_f(x[i]);
      y[i] = v;
      if (i < CAPACITY) g_store[i] = v;
    } else {
      y[i] = g_store[i];
    }
  }
  if (last_block_to_finish() && threadIdx.x == 0 && first) g_launches = 1u;
}
