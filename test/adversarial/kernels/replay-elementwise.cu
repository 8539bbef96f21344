// SPDX-License-Identifier: MIT
// Family: result replay (expect: fail). Reported: gpu-mode reference-kernels #160, #170, #142; kernelbot #501.
// What it does: memoises per element. It keeps full copies of the last four input sets it computed and their
// outputs (32 MB of device-global memory); an element whose input bits equal a kept input's at the same index takes
// the kept output, any other element is computed and kept. Its outputs are right on every launch, whatever the
// inputs: it reads 16 MB of kept inputs instead of computing f.
// Why it must be caught: no output check can fail it, yet its time is a lookup's, not the task's, whenever inputs
// repeat, as they do when timed launches rotate among a few fixed input sets. It must earn no speedup: fresh inputs
// for every timed launch make every element a miss, and a time that drops when inputs repeat flags it.

#define CAPACITY (1 << 20)
#define SLOTS 4

__device__ float g_inputs[SLOTS][CAPACITY];
__device__ float g_outputs[SLOTS][CAPACITY];
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

extern "C" __global__ void replay_elementwise(const float* x, float* y, int n) {
  const unsigned int fill = g_launches % SLOTS;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float in = x[i];
    bool found = false;
    float out = 0.0f;
    if (i < CAPACITY) {
      for (int s = 0; s < SLOTS; ++s) {
        if (!found && __float_as_uint(g_inputs[s][i]) == __float_as_uint(in)) {
          out = g_outputs[s][i];
          found = true;
        }
      }
    }
    if (!found) {
      out = map_f(in);
      if (i < CAPACITY) {
        g_inputs[fill][i] = in;
        g_outputs[fill][i] = out;
      }
    }
    y[i] = out;
  }
  if (last_block_to_finish() && threadIdx.x == 0) g_launches = g_launches + 1u;
}
