// SPDX-License-Identifier: MIT
// Family: honest (expect: pass). Reported: look-alike (of a precision downgrade: its sums differ from the reference's
// in the last bits).
// What it does: fp32 throughout, in another order than the reference's: each thread takes groups of four consecutive
// elements (float4-friendly), sums each group pairwise, (p0 + p1) + (p2 + p3), and adds the groups in turn; a warp
// butterfly (shfl.xor) combines the lanes, and the first warp combines the warps' sums the same way. blockDim.x must be
// a multiple of 32, at most 1024 (the task's 256). A tail of k % 4 elements is added by the first lanes.
// Why it must pass: reordering an fp32 sum changes its rounding, not its precision. Over 16384 simulated rows of
// uniform(-1, 1) inputs it differs from the reference by about 1.3e-6 rms and 8e-6 at worst, some 60 times inside the
// task's atol (5e-4).

#define MAX_WARPS 32
#define FULL 0xffffffffu

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(FULL, v, offset);
  return v;
}

extern "C" __global__ void dot_pairwise(const float* a, const float* b, float* out, int rows, int k) {
  __shared__ float warp_sums[MAX_WARPS];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  const int groups = k / 4;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* ar = a + (long long)r * k;
    const float* br = b + (long long)r * k;
    float acc = 0.0f;
    for (int g = threadIdx.x; g < groups; g += blockDim.x) {
      const int j = 4 * g;
      const float p0 = __fmul_rn(ar[j], br[j]);
      const float p1 = __fmul_rn(ar[j + 1], br[j + 1]);
      const float p2 = __fmul_rn(ar[j + 2], br[j + 2]);
      const float p3 = __fmul_rn(ar[j + 3], br[j + 3]);
      acc += (p0 + p1) + (p2 + p3);
    }
    const int j = 4 * groups + threadIdx.x;
    if (j < k) acc += ar[j] * br[j];
    acc = warp_sum(acc);
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (warp == 0) {
      float total = lane < warps ? warp_sums[lane] : 0.0f;
      total = warp_sum(total);
      if (lane == 0) out[r] = total;
    }
    __syncthreads();
  }
}
