// SPDX-License-Identifier: MIT
// Family: result replay (expect: fail). Reported: gpu-mode reference-kernels #160, #170, #142; kernelbot #501.
// What it does: remembers the first input pointer it is ever launched with and that launch's outputs, and never
// looks again: every later launch with that pointer (and n) copies the first launch's outputs, whatever the buffer
// holds by then. Other pointers are computed honestly and not stored.
// Why it must be caught: after the first launch, the outputs for that address are frozen. A check whose second trial
// reuses the first trial's allocation with new values, or fresh inputs per timed launch at the same address, gets
// the first trial's outputs back; only a harness that never reuses an address with new values misses it.

#define CAPACITY (1 << 20)

__device__ const float* g_first;
__device__ int g_first_n;
__device__ bool g_stored;
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

extern "C" __global__ void replay_pointer_once(const float* x, float* y, int n) {
  const bool stored = g_stored;
  const bool hit = stored && g_first == x && g_first_n == n;
  const bool store = !stored && n <= CAPACITY;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    if (hit) {
      y[i] = g_store[i];
    } else {
      const float v = map_f(x[i]);
      y[i] = v;
      if (store) g_store[i] = v;
    }
  }
  if (last_block_to_finish() && threadIdx.x == 0 && store) {
    g_first = x;
    g_first_n = n;
    g_stored = true;
  }
}
