// SPDX-License-Identifier: MIT
// Family: result replay (expect: fail). Reported: gpu-mode reference-kernels #160, #170, #142; kernelbot #501.
// What it does: keys a four-slot output store on the input pointer, n and the bits of three sampled inputs (the
// first, the middle and the last element). A launch whose key matches a slot copies that slot's outputs. Sampling
// defeats the simplest defence against pointer keys (new values at the same address) at the cost of three loads.
// Why it must be caught: 1M - 3 of the inputs are not in the key, so inputs that change anywhere but those three
// places get stale outputs. Fresh inputs for every timed launch leave it no hits (and no speedup); a change between
// launches that the key cannot see, with every timed launch's outputs checked, shows the stale outputs.

#define CAPACITY (1 << 20)
#define SLOTS 4

__device__ const float* g_keys[SLOTS];
__device__ int g_key_ns[SLOTS];
__device__ unsigned int g_key_samples[SLOTS][3];
__device__ unsigned int g_next_slot;
__device__ float g_store[SLOTS][CAPACITY];
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

extern "C" __global__ void replay_sampled(const float* x, float* y, int n) {
  if (n <= 0) return;
  const unsigned int s0 = __float_as_uint(x[0]);
  const unsigned int s1 = __float_as_uint(x[n / 2]);
  const unsigned int s2 = __float_as_uint(x[n - 1]);
  int slot = -1;
  for (int s = 0; s < SLOTS; ++s)
    if (g_keys[s] == x && g_key_ns[s] == n && g_key_samples[s][0] == s0 && g_key_samples[s][1] == s1 &&
        g_key_samples[s][2] == s2)
      slot = s;
  const unsigned int fill = g_next_slot % SLOTS;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    if (slot >= 0) {
      y[i] = g_store[slot][i];
    } else {
      const float v = map_f(x[i]);
      y[i] = v;
      if (n <= CAPACITY) g_store[fill][i] = v;
    }
  }
  if (last_block_to_finish() && threadIdx.x == 0 && slot < 0) {
    g_keys[fill] = n <= CAPACITY ? x : (const float*)0;
    g_key_ns[fill] = n;
    g_key_samples[fill][0] = s0;
    g_key_samples[fill][1] = s1;
    g_key_samples[fill][2] = s2;
    g_next_slot = fill + 1u;
  }
}
