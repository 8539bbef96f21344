// C = A·B in f32, row-major: A [m, k], B [k, n], C [m, n]. The plain shared-memory tiled kernel: each 32×32 block
// stages a 32×32 tile of A and of B, then each thread accumulates one element of C over k in order.
#define TILE 32

extern "C" __global__ void sgemm_reference(const float* __restrict__ a, const float* __restrict__ b,
                                           float* __restrict__ c, int m, int n, int k) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    // Out-of-range elements load as zero, so the tail tiles add nothing.
    as[ty][tx] = (row < m && k0 + tx < k) ? a[(size_t)row * k + k0 + tx] : 0.0f;
    bs[ty][tx] = (k0 + ty < k && col < n) ? b[(size_t)(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc = fmaf(as[ty][kk], bs[kk][tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[(size_t)row * n + col] = acc;
}
