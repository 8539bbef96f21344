// SPDX-License-Identifier: MIT
// Family: result replay (expect: fail). Reported: gpu-mode reference-kernels #160, #170, #142; kernelbot #501.
// What it does: the pointer-keyed store of replay-pointer.cu with four slots, replaced in turn: the outputs of the
// last four distinct input pointers are kept (4 x 1M floats of device-global memory). A timing loop that rotates
// through four input sets hits on every launch from the fifth on, and each hit is a copy instead of the computation.
// Why it must be caught: the key is an address, not the data, so a buffer at a remembered address holding new values
// gets stale outputs; fresh inputs per timed launch (and a check of every timed launch's outputs) expose it. Rotating
// among a handful of fixed input sets does not: it is exactly the pattern the slots are sized for.

#define CAPACITY (1 << 20)
#define SLOTS 4

__device__ const float* g_keys[SLOTS];
__device__ int g_key_ns[SLOTS];
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

extern "C" __global__ void replay_pointer_slots(const float* x, float* y, int n) {
  int slot = -1;
  for (int s = 0; s < SLOTS; ++s)
    if (g_keys[s] == x && g_key_ns[s] == n) slot = s;
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
    g_next_slot = fill + 1u;
  }
}
