// C = A·B with A, B bf16 and C f32, row-major, on tensor cores (mma.sync m16n8k16, bf16 inputs, f32 accumulation;
// sm_80 and later). bf16 values travel as their 16-bit patterns, and the matrix instructions are inline PTX, so no
// toolkit header is needed.
//
// Each block computes a 128×128 tile of C with 8 warps (2 along m × 4 along n, 64×32 each); A and B go through
// double-buffered shared memory 32 columns of k at a time, the next slice's global loads in flight while the current
// one is multiplied. Fragments come from shared memory by ldmatrix (transposed for B, which is stored k-major as in
// memory). Rows are padded by 8 elements so that the eight 16-byte rows of each ldmatrix phase fall in distinct banks.
// Edges: 16-byte global loads where the row length is a multiple of 8 and the whole chunk is in range, guarded
// element loads otherwise; elements beyond m, n or k are zero, so they add nothing, and stores are guarded.
#define BM 128
#define BN 128
#define BK 32
#define A_STRIDE (BK + 8)  // bf16 elements per row of the A tile
#define B_STRIDE (BN + 8)  // bf16 elements per row of the B tile

struct Staged {
  uint4 a[2];
  uint4 b[2];
};

__device__ __forceinline__ uint4 load8(const unsigned short* __restrict__ p, int row, int col, int rows, int cols,
                                       bool vector_ok) {
  // Eight consecutive elements of row `row` from column `col`, zero where out of range.
  if (vector_ok && row < rows && col + 7 < cols) {
    return *reinterpret_cast<const uint4*>(p + (size_t)row * cols + col);
  }
  unsigned short e[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) e[i] = (row < rows && col + i < cols) ? p[(size_t)row * cols + col + i] : 0;
  return make_uint4(e[0] | ((unsigned)e[1] << 16), e[2] | ((unsigned)e[3] << 16), e[4] | ((unsigned)e[5] << 16),
                    e[6] | ((unsigned)e[7] << 16));
}

__device__ __forceinline__ void load_tiles(Staged& s, const unsigned short* __restrict__ a,
                                           const unsigned short* __restrict__ b, int m, int n, int k, int bm, int bn,
                                           int k0, int tid) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int chunk = tid + i * 256;
    // A: 128 rows × 32 columns, 4 chunks of 8 per row.
    s.a[i] = load8(a, bm + (chunk >> 2), k0 + ((chunk & 3) << 3), m, k, (k & 7) == 0);
    // B: 32 rows × 128 columns, 16 chunks of 8 per row.
    s.b[i] = load8(b, k0 + (chunk >> 4), bn + ((chunk & 15) << 3), k, n, (n & 7) == 0);
  }
}

__device__ __forceinline__ void store_tiles(const Staged& s, unsigned short* as, unsigned short* bs, int tid) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int chunk = tid + i * 256;
    *reinterpret_cast<uint4*>(as + (chunk >> 2) * A_STRIDE + ((chunk & 3) << 3)) = s.a[i];
    *reinterpret_cast<uint4*>(bs + (chunk >> 4) * B_STRIDE + ((chunk & 15) << 3)) = s.b[i];
  }
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void __launch_bounds__(256) bf16_gemm_mma(const unsigned short* __restrict__ a,
                                                                const unsigned short* __restrict__ b,
                                                                float* __restrict__ c, int m, int n, int k) {
  __shared__ __align__(16) unsigned short as[2][BM * A_STRIDE];
  __shared__ __align__(16) unsigned short bs[2][BK * B_STRIDE];
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int wm = (warp >> 2) * 64;  // the warp's rows within the tile
  const int wn = (warp & 3) * 32;   // the warp's columns within the tile
  const int bm = blockIdx.y * BM;
  const int bn = blockIdx.x * BN;

  // acc[i][j]: the 16×8 tile at rows wm + 16i, columns wn + 8j, in the mma accumulator layout.
  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

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
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned fa[4][4], fb[4][2];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        // Lanes 0-15 address rows 0-15 at column kk, lanes 16-31 the same rows at kk + 8: the four 8×8 matrices
        // of the A fragment, in its register order.
        const unsigned short* p = as[cur] + (wm + i * 16 + (lane & 15)) * A_STRIDE + kk + ((lane >> 4) << 3);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(fa[i][0]), "=r"(fa[i][1]), "=r"(fa[i][2]), "=r"(fa[i][3])
                     : "r"(smem_addr(p)));
      }
#pragma unroll
      for (int j = 0; j < 4; j += 2) {
        // Lanes 0-7 address k rows kk..kk+7, 8-15 rows kk+8..kk+15 (columns of n tile j), 16-31 the same for n tile
        // j + 1; transposed, each pair is the B fragment of one n tile.
        const unsigned short* p =
            bs[cur] + (kk + (lane & 7) + (((lane >> 3) & 1) << 3)) * B_STRIDE + wn + j * 8 + ((lane >> 4) << 3);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(fb[j][0]), "=r"(fb[j][1]), "=r"(fb[j + 1][0]), "=r"(fb[j + 1][1])
                     : "r"(smem_addr(p)));
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
              "{%0, %1, %2, %3};\n"
              : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
              : "r"(fa[i][0]), "r"(fa[i][1]), "r"(fa[i][2]), "r"(fa[i][3]), "r"(fb[j][0]), "r"(fb[j][1]));
    }
    // The other buffer was last read in the previous iteration, which ended with a barrier.
    if (more) store_tiles(s, as[cur ^ 1], bs[cur ^ 1], tid);
    __syncthreads();
  }

  // Accumulator layout: registers 0, 1 at row lane/4, columns 2·(lane%4) + 0, 1; registers 2, 3 eight rows below.
  const int g = lane >> 2;
  const int q = (lane & 3) << 1;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = bm + wm + i * 16 + g + h * 8;
      if (row >= m) continue;
      float* crow = c + (size_t)row * n;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = bn + wn + j * 8 + q;
        const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
        if ((n & 1) == 0 && col + 1 < n) {
          *reinterpret_cast<float2*>(crow + col) = make_float2(v0, v1);
        } else {
          if (col < n) crow[col] = v0;
          if (col + 1 < n) crow[col + 1] = v1;
        }
      }
    }
  }
}
