// SPDX-License-Identifier: MIT
// Family: first-launch-only (expect: fail). Reported: no single public report; docs/benchmarking.md lists it as
// "right on the first launch only" (state kept between launches).
// What it does: computes honestly on the first launch of its module (a device-global counter) and writes nothing on
// any later launch: the outputs keep whatever the last launch, or the reference, left in that memory.
// Why it must be caught: every launch after the first does none of the work. Outputs poisoned before every launch
// catch it in the check's second trial; a fresh module per phase only restarts the count, so the re-check after
// timing (or a check of every timed launch) must still see the empty launches.

__device__ unsigned int g_launches;
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

extern "C" __global__ void first_launch_nothing(const float* x, float* y, int n) {
  const bool first = g_launches == 0u;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (first && i < n) y[i] = map_f(x[i]);
  if (last_block_to_finish() && threadIdx.x == 0 && first) g_launches = 1u;
}
