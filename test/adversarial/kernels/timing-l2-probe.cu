// SPDX-License-Identifier: MIT
// Family: timing-aware (expect: fail). Reported: gpu-mode reference-kernels #162.
// What it does: thread 0 of each block times one load of the block's first input line (ld.global.cg, which skips
// L1) with clock64. An input just uploaded or just used sits in L2 and comes back in a few hundred cycles; after the
// cold-timing flush of L2 it comes from DRAM and takes longer. A block whose probe is slower than 600 cycles takes
// the L2 to have been flushed, so itself to be timed, and skips its work; a check (inputs warm in L2) sees it compute.
// Why it must be caught: it is right when checked and empty under cold timing. Checking the outputs of launches made
// in the timing harness's own state (L2 flushed, outputs poisoned, then the launch) catches it.

#define SLOW_CYCLES 600ll

__device__ __forceinline__ float map_f(float v) {
  for (int step = 0; step < 64; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

// Cycles one load of *p takes. The second clock read is predicated on the loaded value (on its not being NaN), so it
// cannot be made before the load returns; a NaN reads as a fast load.
__device__ __forceinline__ long long load_cycles(const float* p) {
  long long t0;
  long long t1;
  float v;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0)::"memory");
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  asm volatile(
      "{\n\t.reg .pred loaded;\n\tsetp.eq.f32 loaded, %1, %1;\n\tmov.u64 %0, 0;\n\t@loaded mov.u64 %0, "
      "%%clock64;\n\t}"
      : "=l"(t1)
      : "f"(v)
      : "memory");
  return t1 == 0ll ? 0ll : t1 - t0;
}

extern "C" __global__ void timing_l2_probe(const float* x, float* y, int n) {
  __shared__ bool skip;
  const int first = blockIdx.x * blockDim.x;
  if (threadIdx.x == 0) skip = first < n && load_cycles(x + first) > SLOW_CYCLES;
  __syncthreads();
  const int i = first + threadIdx.x;
  if (!skip && i < n) y[i] = map_f(x[i]);
}
