// One Jacobi step of the 5-point stencil on an f32 grid [ny, nx], row-major: an interior point becomes the mean of
// its four neighbours, a boundary point (first or last row or column) is copied. One thread per point, a block
// along a row so that its loads and its store are coalesced; the neighbours' re-reads hit the cache.
extern "C" __global__ void jacobi5_reference(const float* __restrict__ src, float* __restrict__ dst, int ny,
                                             int nx) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= ny || j >= nx) return;
  const size_t at = (size_t)i * nx + j;
  if (i == 0 || i == ny - 1 || j == 0 || j == nx - 1) {
    dst[at] = src[at];
  } else {
    dst[at] = 0.25f * (src[at - nx] + src[at + nx] + src[at - 1] + src[at + 1]);
  }
}
