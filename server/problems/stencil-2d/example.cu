// One Jacobi step of the 5-point stencil on an f32 grid [ny, nx]; boundary points copied. Each thread owns 4
// consecutive columns and walks down 16 rows with the rows above, at and below in registers, so that every row is
// read from memory about once; the left and right neighbours come from the next lanes by shuffles (from memory only
// at a warp's ends). 16-byte loads and stores where rows start 16-byte aligned (nx a multiple of 4), guarded
// element accesses otherwise and at the right edge.
#define ROWS 16
#define FULL 0xffffffffu

__device__ __forceinline__ float4 load4(const float* __restrict__ src, int row, int c0, int ny, int nx, bool vec) {
  // Columns c0 .. c0+3 of `row`; zero outside the grid (such values are never used).
  if (row < 0 || row >= ny) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const float* p = src + (size_t)row * nx + c0;
  if (vec && c0 + 3 < nx) return *reinterpret_cast<const float4*>(p);
  float v[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v[e] = c0 + e < nx ? p[e] : 0.0f;
  return make_float4(v[0], v[1], v[2], v[3]);
}

extern "C" __global__ void __launch_bounds__(128) jacobi5_rows(const float* __restrict__ src,
                                                               float* __restrict__ dst, int ny, int nx) {
  const int lane = threadIdx.x & 31;
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  const int r0 = blockIdx.y * ROWS;
  const int r1 = min(r0 + ROWS, ny);
  const bool vec = (nx & 3) == 0;

  float4 up = load4(src, r0 - 1, c0, ny, nx, vec);
  float4 mid = load4(src, r0, c0, ny, nx, vec);
  // The loop's bounds are the block's, so every lane of a warp reaches each shuffle.
  for (int r = r0; r < r1; ++r) {
    const float4 down = load4(src, r + 1, c0, ny, nx, vec);
    float left = __shfl_up_sync(FULL, mid.w, 1);
    float right = __shfl_down_sync(FULL, mid.x, 1);
    const float* row = src + (size_t)r * nx;
    if (lane == 0) left = (c0 >= 1 && c0 - 1 < nx) ? row[c0 - 1] : 0.0f;
    if (lane == 31) right = c0 + 4 < nx ? row[c0 + 4] : 0.0f;

    const float u[4] = {up.x, up.y, up.z, up.w};
    const float m[4] = {mid.x, mid.y, mid.z, mid.w};
    const float d[4] = {down.x, down.y, down.z, down.w};
    const bool edge_row = r == 0 || r == ny - 1;
    float out[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int c = c0 + e;
      const float l = e == 0 ? left : m[e - 1];
      const float rr = e == 3 ? right : m[e + 1];
      out[e] = (edge_row || c == 0 || c == nx - 1) ? m[e] : 0.25f * ((u[e] + d[e]) + (l + rr));
    }
    float* o = dst + (size_t)r * nx + c0;
    if (vec && c0 + 3 < nx) {
      *reinterpret_cast<float4*>(o) = make_float4(out[0], out[1], out[2], out[3]);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (c0 + e < nx) o[e] = out[e];
    }
    up = mid;
    mid = down;
  }
}
