// SPDX-License-Identifier: MIT
// Family: timing-aware (expect: fail). Reported: gpu-mode reference-kernels #162.
// What it does: counts its launches in a device-global counter and computes only the first five: enough for a check
// of a few trials, or for a timing warm-up that visits each of up to five rotating input sets once. From the sixth
// launch on it writes nothing, so the timed launches are empty and their outputs still hold the warm-up's right
// answers.
// Why it must be caught: its timed launches do none of the work. A fresh module per phase restarts the count, so the
// defence is per launch: outputs poisoned before every timed launch and checked after it, or fresh inputs per timed
// launch with the re-check on each.

#define HONEST_LAUNCHES 5u

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

extern "C" __global__ void timing_warmup_count(const float* x, float* y, int n) {
  const unsigned int launch = g_launches;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (launch < HONEST_LAUNCHES && i < n) y[i] = map_f(x[i]);
  if (last_block_to_finish() && threadIdx.x == 0 && launch < HONEST_LAUNCHES) g_launches = launch + 1u;
}
