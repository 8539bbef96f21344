// SPDX-License-Identifier: MIT
// Family: batch-and-skip (expect: fail). Reported: gpu-mode reference-kernels #104.
// What it does: counts its launches in a device-global counter and does nothing on every odd one: half the timed
// launches are empty, so the mean time per launch halves. Where timed launches rotate among an odd number of input
// sets whose outputs are not poisoned again, each set is computed on every other visit and an empty launch leaves
// the outputs of an earlier one on the same inputs, so they still look right after timing; with an even number, half
// the sets are never computed in the timing and a re-check after it finds them unwritten.
// Why it must be caught: half of its launches do none of the work. Poisoning the outputs before every launch and
// checking each launch's outputs (the per-call check of #104) catches the first empty one: a check that launches
// twice on the same inputs with the outputs poisoned again (a determinism run) finds the second launch empty.

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

extern "C" __global__ void skip_odd(const float* x, float* y, int n) {
  const unsigned int launch = g_launches;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (launch % 2u == 0u && i < n) y[i] = map_f(x[i]);
  if (last_block_to_finish() && threadIdx.x == 0) g_launches = launch + 1u;
}
