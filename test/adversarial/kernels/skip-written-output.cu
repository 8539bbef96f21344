// SPDX-License-Identifier: MIT
// Family: batch-and-skip (expect: fail). Reported: gpu-mode reference-kernels #104.
// What it does: remembers the output buffers (pointer and n) it has filled, up to eight, and skips any launch whose
// output it has filled before, on the bet that the same output buffer means the same work, already done. It reads
// no input to check the bet.
// Why it must be caught: a launch into a remembered output does nothing, whatever its inputs. A check whose trials
// reuse an allocation for the output finds it unwritten (still poisoned); fresh inputs per timed launch with every
// launch's outputs poisoned and checked find the same.

#define TABLE 8

__device__ float* g_filled[TABLE];
__device__ int g_filled_ns[TABLE];
__device__ unsigned int g_count;
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

extern "C" __global__ void skip_written_output(const float* x, float* y, int n) {
  const unsigned int count = g_count < TABLE ? g_count : TABLE;
  bool filled = false;
  for (unsigned int t = 0; t < count; ++t)
    if (g_filled[t] == y && g_filled_ns[t] == n) filled = true;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (!filled && i < n) y[i] = map_f(x[i]);
  if (last_block_to_finish() && threadIdx.x == 0 && !filled) {
    // Full: the oldest entry gives way.
    const unsigned int at = count < TABLE ? count : g_count % TABLE;
    g_filled[at] = y;
    g_filled_ns[at] = n;
    g_count = g_count + 1u;
  }
}
