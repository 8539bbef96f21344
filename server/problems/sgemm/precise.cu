// C = A·B for the f32 inputs, every product and sum in f64, C written as f64: the precision policy's reference
// (problem.json's check.precision). A candidate's error against it may be at most 32 times the f32 reference kernel's,
// so a kernel that multiplies in TF32 or fp16, or accumulates in fp16, fails however loose the tolerance.
#define TILE 32

extern "C" __global__ void sgemm_precise(const float* __restrict__ a, const float* __restrict__ b,
                                         double* __restrict__ c, int m, int n, int k) {
  __shared__ double as[TILE][TILE];
  __shared__ double bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  double acc = 0.0;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    as[ty][tx] = (row < m && k0 + tx < k) ? (double)a[(size_t)row * k + k0 + tx] : 0.0;
    bs[ty][tx] = (k0 + ty < k && col < n) ? (double)b[(size_t)(k0 + ty) * n + col] : 0.0;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc = fma(as[ty][kk], bs[kk][tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[(size_t)row * n + col] = acc;
}
