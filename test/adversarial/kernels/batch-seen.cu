// SPDX-License-Identifier: MIT
// Family: batch-and-skip (expect: fail). Reported: gpu-mode reference-kernels #104 (and #102 before it).
// What it does: keeps a table of the (input, output, n) triples it has been launched with, up to eight. A launch
// with a triple it has not seen computes the outputs of every triple in the table and of its own (one batch that
// does the work of the launches to come), then adds its triple. A launch whose triple is in the table does nothing
// at all: the outputs it is timed for were written by the batch. Once a timing loop has shown it every input set,
// every timed launch is empty.
// Why it must be caught: the work of a timed launch is done outside it. Poisoning the outputs before every timed
// launch and checking each launch's outputs (the per-call check of #104), or fresh buffers per launch, expose it.
// It writes through the pointers of earlier launches, which may have been freed since: where that memory was
// unmapped, the batch faults, a verdict too, but one that costs the process its context.

#define TABLE 8

__device__ const float* g_inputs[TABLE];
__device__ float* g_outputs[TABLE];
__device__ int g_ns[TABLE];
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

extern "C" __global__ void batch_seen(const float* x, float* y, int n) {
  const unsigned int count = g_count < TABLE ? g_count : TABLE;
  bool seen = false;
  for (unsigned int t = 0; t < count; ++t)
    if (g_inputs[t] == x && g_outputs[t] == y && g_ns[t] == n) seen = true;
  if (!seen) {
    const int stride = gridDim.x * blockDim.x;
    // The batch: every triple seen so far, then this launch's own.
    for (unsigned int t = 0; t <= count; ++t) {
      const float* in = t < count ? g_inputs[t] : x;
      float* out = t < count ? g_outputs[t] : y;
      const int len = t < count ? g_ns[t] : n;
      for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < len; i += stride) out[i] = map_f(in[i]);
    }
  }
  if (last_block_to_finish() && threadIdx.x == 0 && !seen && count < TABLE) {
    g_inputs[count] = x;
    g_outputs[count] = y;
    g_ns[count] = n;
    g_count = count + 1u;
  }
}
