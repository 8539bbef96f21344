// SPDX-License-Identifier: MIT
// Family: result replay (expect: fail). Reported: gpu-mode reference-kernels #160, #170, #142; kernelbot #501.
// What it does: keeps the outputs of its last launch in a device-global array (room for 1M floats), with the input
// pointer and n they were computed from. A launch whose input pointer and n match copies the stored outputs instead of
// computing f: 8 MB of copying instead of ~100 us of arithmetic. A miss computes, and refreshes the store.
// Why it must be caught: the key is an address, not the data. A buffer at the same address holding new values gets
// the old outputs: a check whose trials reuse an allocation with fresh values sees them, and so does a timed launch
// with fresh inputs at the same address. Timing that repeats one input set at one address rewards it.

#define CAPACITY (1 << 20)

__device__ const float* g_key;
__device__ int g_key_n;
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

extern "C" __global__ void replay_pointer(const float* x, float* y, int n) {
  const bool hit = g_key == x && g_key_n == n;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    if (hit) {
      y[i] = g_store[i];
    } else {
      const float v = map_f(x[i]);
      y[i] = v;
      if (n <= CAPACITY) g_store[i] = v;
    }
  }
  if (last_block_to_finish() && threadIdx.x == 0 && !hit) {
    g_key = n <= CAPACITY ? x : (const float*)0;
    g_key_n = n;
  }
}
