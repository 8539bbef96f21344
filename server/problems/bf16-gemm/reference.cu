// C = A·B with A [m, k] and B [k, n] in bf16 and C [m, n] in f32, row-major, accumulated in f32. bf16 values are
// taken as their 16-bit patterns (the top half of an f32), so no toolkit header is needed. The plain shared-memory
// tiled kernel: each thread accumulates one element of C over k in order, on CUDA cores.
#define TILE 32

__device__ __forceinline__ float bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

extern "C" __global__ void bf16_gemm_reference(const unsigned short* __restrict__ a,
                                               const unsigned short* __restrict__ b, float* __restrict__ c, int m,
                                               int n, int k) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    // Out-of-range elements load as zero, so the tail tiles add nothing.
    as[ty][tx] = (row < m && k0 + tx < k) ? bf16_to_f32(a[(size_t)row * k + k0 + tx]) : 0.0f;
    bs[ty][tx] = (k0 + ty < k && col < n) ? bf16_to_f32(b[(size_t)(k0 + ty) * n + col]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc = fmaf(as[ty][kk], bs[kk][tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[(size_t)row * n + col] = acc;
}
