// y = conv2d(x, w), NCHW f32, 3×3, stride 1, padding 1, as an implicit GEMM: Y[co][pixel] = Σ_kk W[co][kk] ·
// X[kk][pixel], with kk = ci·9 + kh·3 + kw over c_in·9 and pixel = (image, oh, ow) over n·h·w. The weights are
// already that row-major W; X (im2col) is never built: its elements are gathered from x as the tiles are loaded.
// Each block computes 64 output channels × 128 pixels with 256 threads, 4 × 8 per thread from registers, through
// double-buffered shared memory 8 values of kk at a time, the next slice's loads in flight while the current one is
// multiplied. Padding, and tiles past c_out, n·h·w or c_in·9, load as zero; stores are guarded.
#define BM 64   // output channels per block
#define BN 128  // pixels per block
#define BK 8    // kk per slice

struct Staged {
  float a[2];
  float b[4];
};

// The pixel this thread gathers for, fixed for the whole kernel: its image's offset in x, its row and column.
struct Pixel {
  size_t base;  // offset of the image in x
  int oh, ow;
  bool valid;
};

__device__ __forceinline__ void load_tiles(Staged& s, const float* __restrict__ x, const float* __restrict__ wt,
                                           const Pixel& px, int c_out, int h, int w, int kdim, int bco, int k0,
                                           int tid) {
  // W: 64 channels × 8 kk, consecutive threads along kk.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int e = tid + r * 256;
    const int co = bco + (e >> 3);
    const int kk = k0 + (e & 7);
    s.a[r] = (co < c_out && kk < kdim) ? wt[(size_t)co * kdim + kk] : 0.0f;
  }
  // X: 8 kk × 128 pixels; this thread's pixel, kk = k0 + (tid >> 7) + 2r.
  const size_t plane = (size_t)h * w;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int kk = k0 + (tid >> 7) + 2 * r;
    float v = 0.0f;
    if (px.valid && kk < kdim) {
      const int ci = kk / 9;
      const int rem = kk - ci * 9;
      const int kh = rem / 3;
      const int kw = rem - kh * 3;
      const int ih = px.oh + kh - 1;
      const int iw = px.ow + kw - 1;
      if (ih >= 0 && ih < h && iw >= 0 && iw < w) v = x[px.base + ci * plane + (size_t)ih * w + iw];
    }
    s.b[r] = v;
  }
}

__device__ __forceinline__ void store_tiles(const Staged& s, float (*as)[BM], float (*bs)[BN], int tid) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int e = tid + r * 256;
    as[e & 7][e >> 3] = s.a[r];
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) bs[(tid >> 7) + 2 * r][tid & 127] = s.b[r];
}

extern "C" __global__ void __launch_bounds__(256) conv2d_implicit_gemm(const float* __restrict__ x,
                                                                       const float* __restrict__ wt,
                                                                       float* __restrict__ y, int n, int c_in,
                                                                       int c_out, int h, int w) {
  __shared__ __align__(16) float as[2][BK][BM];
  __shared__ __align__(16) float bs[2][BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid & 15;  // pixels tx + 16j, j < 8: consecutive threads, consecutive pixels
  const int ty = tid >> 4;  // channels ty*4 .. +3
  const int hw = h * w;
  const long long npix = (long long)n * hw;
  const int kdim = c_in * 9;
  const int bco = blockIdx.y * BM;
  const long long bp = (long long)blockIdx.x * BN;

  Pixel px;
  {
    const long long p = bp + (tid & 127);
    px.valid = p < npix;
    const int img = px.valid ? (int)(p / hw) : 0;
    const int pix = px.valid ? (int)(p - (long long)img * hw) : 0;
    px.oh = pix / w;
    px.ow = pix - px.oh * w;
    px.base = (size_t)img * c_in * hw;
  }

  float acc[4][8];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  Staged s;
  load_tiles(s, x, wt, px, c_out, h, w, kdim, bco, 0, tid);
  store_tiles(s, as[0], bs[0], tid);
  __syncthreads();

  const int tiles = (kdim + BK - 1) / BK;
  for (int t = 0; t < tiles; ++t) {
    const int cur = t & 1;
    const bool more = t + 1 < tiles;
    if (more) load_tiles(s, x, wt, px, c_out, h, w, kdim, bco, (t + 1) * BK, tid);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 a = *reinterpret_cast<const float4*>(&as[cur][kk][ty * 4]);
      const float ra[4] = {a.x, a.y, a.z, a.w};
      float rb[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) rb[j] = bs[cur][kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    // The other buffer was last read in the previous iteration, which ended with a barrier.
    if (more) store_tiles(s, as[cur ^ 1], bs[cur ^ 1], tid);
    __syncthreads();
  }

#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const long long p = bp + tx + 16 * j;
    if (p >= npix) continue;
    const int img = (int)(p / hw);
    const int pix = (int)(p - (long long)img * hw);
    float* yp = y + (size_t)img * c_out * hw + pix;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int co = bco + ty * 4 + i;
      if (co < c_out) yp[(size_t)co * hw] = acc[i][j];
    }
  }
}
