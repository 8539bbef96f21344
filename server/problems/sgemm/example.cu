// C = A·B in f32, row-major. Each block computes a 128×128 tile of C with 256 threads, 8×8 elements per thread from
// registers; A and B are staged through double-buffered shared memory 8 columns of k at a time, the next slice's
// global loads in flight while the current one is multiplied. Vector loads and stores where the row length allows
// them (a multiple of 4), guarded scalar ones otherwise and at the edges; out-of-range elements load as zero.
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8

struct Staged {
  float a[4];
  float b[4];
};

__device__ __forceinline__ void load_tiles(Staged& s, const float* __restrict__ a, const float* __restrict__ b,
                                           int m, int n, int k, int bm, int bn, int k0, int tid) {
  // A: 128 rows × 8 columns, 4 consecutive columns per thread.
  const int arow = bm + (tid >> 1);
  const int acol = k0 + ((tid & 1) << 2);
  if ((k & 3) == 0 && arow < m && acol + 3 < k) {
    const float4 v = *reinterpret_cast<const float4*>(a + (size_t)arow * k + acol);
    s.a[0] = v.x, s.a[1] = v.y, s.a[2] = v.z, s.a[3] = v.w;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) s.a[i] = (arow < m && acol + i < k) ? a[(size_t)arow * k + acol + i] : 0.0f;
  }
  // B: 8 rows × 128 columns, 4 consecutive columns per thread.
  const int brow = k0 + (tid >> 5);
  const int bcol = bn + ((tid & 31) << 2);
  if ((n & 3) == 0 && brow < k && bcol + 3 < n) {
    const float4 v = *reinterpret_cast<const float4*>(b + (size_t)brow * n + bcol);
    s.b[0] = v.x, s.b[1] = v.y, s.b[2] = v.z, s.b[3] = v.w;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) s.b[i] = (brow < k && bcol + i < n) ? b[(size_t)brow * n + bcol + i] : 0.0f;
  }
}

__device__ __forceinline__ void store_tiles(const Staged& s, float (*as)[BM], float (*bs)[BN], int tid) {
  // A is stored transposed (k-major), so that a thread's 8 rows are one 32-byte read.
  const int arow = tid >> 1;
  const int acol = (tid & 1) << 2;
#pragma unroll
  for (int i = 0; i < 4; ++i) as[acol + i][arow] = s.a[i];
  *reinterpret_cast<float4*>(&bs[tid >> 5][(tid & 31) << 2]) = make_float4(s.b[0], s.b[1], s.b[2], s.b[3]);
}

extern "C" __global__ void __launch_bounds__(256) sgemm_tiled(const float* __restrict__ a,
                                                              const float* __restrict__ b, float* __restrict__ c,
                                                              int m, int n, int k) {
  __shared__ __align__(16) float as[2][BK][BM];
  __shared__ __align__(16) float bs[2][BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid & 15;  // columns tx*4 .. +3 and 64 + tx*4 .. +3
  const int ty = tid >> 4;  // rows ty*8 .. +7
  const int bm = blockIdx.y * BM;
  const int bn = blockIdx.x * BN;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  Staged s;
  load_tiles(s, a, b, m, n, k, bm, bn, 0, tid);
  store_tiles(s, as[0], bs[0], tid);
  __syncthreads();

  const int tiles = (k + BK - 1) / BK;
  for (int t = 0; t < tiles; ++t) {
    const int cur = t & 1;
    const bool more = t + 1 < tiles;
    if (more) load_tiles(s, a, b, m, n, k, bm, bn, (t + 1) * BK, tid);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float ra[TM], rb[TN];
      const float4 a0 = *reinterpret_cast<const float4*>(&as[cur][kk][ty * TM]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[cur][kk][ty * TM + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[cur][kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[cur][kk][64 + tx * 4]);
      ra[0] = a0.x, ra[1] = a0.y, ra[2] = a0.z, ra[3] = a0.w, ra[4] = a1.x, ra[5] = a1.y, ra[6] = a1.z, ra[7] = a1.w;
      rb[0] = b0.x, rb[1] = b0.y, rb[2] = b0.z, rb[3] = b0.w, rb[4] = b1.x, rb[5] = b1.y, rb[6] = b1.z, rb[7] = b1.w;
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    // The other buffer was last read in the previous iteration, which ended with a barrier.
    if (more) store_tiles(s, as[cur ^ 1], bs[cur ^ 1], tid);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm + ty * TM + i;
    if (row >= m) break;
    float* crow = c + (size_t)row * n;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = bn + h * 64 + tx * 4;
      const float* v = &acc[i][h * 4];
      if ((n & 3) == 0 && col + 3 < n) {
        *reinterpret_cast<float4*>(crow + col) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < n) crow[col + j] = v[j];
      }
    }
  }
}
