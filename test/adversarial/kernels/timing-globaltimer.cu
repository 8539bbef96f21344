// SPDX-License-Identifier: MIT
// Family: timing-aware (expect: fail). Reported: gpu-mode reference-kernels #162.
// What it does: notes the %globaltimer time at the end of every launch in a device-global variable. A block that
// starts less than 500 us after the previous launch ended takes itself to be in a timing loop (launches back to back)
// and skips its work; launches with host work between them (a check's trials: uploads, comparisons) are computed
// honestly. The outputs of a skipped launch keep what an earlier launch left.
// Why it must be caught: it is right when checked and empty when timed. Checking the outputs of timed launches, in
// the timing harness's own state (launches back to back, outputs poisoned before each), catches it.

#define GAP_NS 500000ull

__device__ unsigned long long g_last_end;
__device__ unsigned int g_arrived;

__device__ __forceinline__ float map_f(float v) {
  for (int step = 0; step < 64; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
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

extern "C" __global__ void timing_globaltimer(const float* x, float* y, int n) {
  __shared__ bool skip;
  if (threadIdx.x == 0) {
    const unsigned long long last_end = g_last_end;
    skip = last_end != 0ull && global_ns() - last_end < GAP_NS;
  }
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (!skip && i < n) y[i] = map_f(x[i]);
  if (last_block_to_finish() && threadIdx.x == 0) g_last_end = global_ns();
}
