// A TILE x TILE tile per block, staged through shared memory so that both the reads of x and the writes of y are
// coalesced along a row; the extra column of the tile keeps the column-wise accesses free of bank conflicts. The
// tiles are numbered along one grid dimension (no grid.y limit on the row count); partial tiles at the edges are
// guarded. Launch with TILE x ROWS threads.
#define TILE 32
#define ROWS 8

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
    transpose_tiled(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  const int tiles_x = (cols + TILE - 1) / TILE;
  const int c0 = (blockIdx.x % tiles_x) * TILE;  // the tile's first column of x
  const int r0 = (blockIdx.x / tiles_x) * TILE;  // its first row
  const int tx = threadIdx.x, ty = threadIdx.y;

  const int c = c0 + tx;
  if (c < cols) {
    for (int k = ty; k < TILE; k += ROWS) {
      int r = r0 + k;
      if (r < rows) tile[k][tx] = x[(long long)r * cols + c];
    }
  }
  __syncthreads();
  const int r = r0 + tx;  // now the output's column
  if (r < rows) {
    for (int k = ty; k < TILE; k += ROWS) {
      int cc = c0 + k;
      if (cc < cols) y[(long long)cc * rows + r] = tile[tx][k];
    }
  }
}
