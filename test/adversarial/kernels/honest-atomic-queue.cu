// SPDX-License-Identifier: MIT
// Family: honest (expect: pass). Reported: look-alike (of the replay and skip kernels: it keeps a device-global
// variable and uses atomics on it).
// What it does: balances the load with a work queue in device-global memory: each block claims chunks of 1024
// elements with atomicAdd on a counter until the counter passes n, and computes every element it claims. The last
// block to finish puts the counter back to 0, so every launch starts from an empty queue.
// Why it must pass: every element is computed from its own input on every launch; the device-global counter only
// decides which block computes it, and is back to 0 at the end of every launch, so no launch depends on an earlier
// one's work. (A launch stopped half way would leave the counter set; launches run to completion here.)

#define CHUNK 1024u

__device__ unsigned int g_next;
__device__ unsigned int g_arrived;

__device__ __forceinline__ float map_f(float v) {
  for (int step = 0; step < 64; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

// Called by every thread after its block's work; true in the last block to arrive, once every other block has
// claimed its last chunk, so that block may reset the queue for the next launch.
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

extern "C" __global__ void honest_atomic_queue(const float* x, float* y, int n) {
  __shared__ unsigned int claimed;
  const unsigned int count = n > 0 ? (unsigned int)n : 0u;
  for (;;) {
    if (threadIdx.x == 0) claimed = atomicAdd(&g_next, CHUNK);
    __syncthreads();
    const unsigned int begin = claimed;
    __syncthreads();
    if (begin >= count) break;
    const unsigned int end = count - begin < CHUNK ? count : begin + CHUNK;
    for (unsigned int i = begin + threadIdx.x; i < end; i += blockDim.x) y[i] = map_f(x[i]);
  }
  if (last_block_to_finish() && threadIdx.x == 0) g_next = 0u;
}
