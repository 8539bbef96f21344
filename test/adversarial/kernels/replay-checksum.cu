// SPDX-License-Identifier: MIT
// Family: result replay (expect: fail). Reported: gpu-mode reference-kernels #160, #170, #142; kernelbot #501.
// What it does: keys a four-slot output store on n and a checksum of 256 inputs sampled at an even stride, not on any
// pointer: a copy of an input set in another buffer hits too, and a pointer shuffle (fresh allocations for the same
// values) does not stop it. Every block computes the checksum from the same 256 loads, so all blocks agree on hit or
// miss; a hit copies the slot's outputs.
// Why it must be caught: the checksum sees 256 of 1M inputs. Inputs that differ only elsewhere get the outputs of
// another input set: per-launch fresh inputs whose changes the fixed sample cannot see (random positions, re-drawn
// every launch), with every timed launch's outputs checked, expose it.

#define CAPACITY (1 << 20)
#define SLOTS 4
#define SAMPLES 256

__device__ unsigned int g_key_sums[SLOTS];
__device__ int g_key_ns[SLOTS];
__device__ bool g_key_valid[SLOTS];
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

// One sample's share of the checksum: its bits mixed with its position, summed (so the order of the sum is free).
__device__ __forceinline__ unsigned int mix(unsigned int bits, unsigned int position) {
  unsigned int h = bits * 0x9e3779b1u ^ position * 0x85ebca77u;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  return h ^ (h >> 13);
}

extern "C" __global__ void replay_checksum(const float* x, float* y, int n) {
  __shared__ unsigned int sum;
  if (threadIdx.x == 0) sum = 0u;
  __syncthreads();
  const int stride = n / SAMPLES > 0 ? n / SAMPLES : 1;
  for (int s = threadIdx.x; s < SAMPLES && s * stride < n; s += blockDim.x)
    atomicAdd(&sum, mix(__float_as_uint(x[s * stride]), (unsigned int)s));
  __syncthreads();
  const unsigned int key = sum;
  int slot = -1;
  for (int s = 0; s < SLOTS; ++s)
    if (g_key_valid[s] && g_key_sums[s] == key && g_key_ns[s] == n) slot = s;
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
    g_key_sums[fill] = key;
    g_key_ns[fill] = n;
    g_key_valid[fill] = n <= CAPACITY;
    g_next_slot = fill + 1u;
  }
}
