// Inclusive scan of n i32 values in one launch: a single-pass scan with decoupled look-back. Each block takes the
// next tile of 4096 values in the order blocks start (an atomic counter, not blockIdx: a block only waits for tiles
// that running blocks have taken, so it never waits for one that is not scheduled), scans it, publishes its
// aggregate at once, then sums its predecessors' published values 32 tiles at a time (one per lane of the first
// warp) back to the nearest one whose inclusive prefix is known, and publishes its own inclusive prefix.
//
// scratch (u64, zeroed): [0] the tile counter, [1] the count of blocks done, [2 + t] tile t's status word (high half
// AGGREGATE or INCLUSIVE, low half the value; one 64-bit word, so a reader never sees one half without the other).
// The last block to finish zeroes it all again: the buffer is reused as it is by the next launch.
//
// A thread holds 16 values, four 16-byte groups, one in each quarter of the tile (so that every load and store is a
// coalesced 16-byte access); the four quarters are scanned side by side.
#define THREADS 256
#define WARPS (THREADS / 32)
#define SEGMENT (THREADS * 4)
#define TILE (SEGMENT * 4)
#define AGGREGATE (1ull << 32)
#define INCLUSIVE (2ull << 32)
#define FULL 0xffffffffu

__device__ __forceinline__ unsigned long long load_volatile(const unsigned long long* p) {
  return *reinterpret_cast<const volatile unsigned long long*>(p);
}

__device__ __forceinline__ void store_volatile(unsigned long long* p, unsigned long long v) {
  *reinterpret_cast<volatile unsigned long long*>(p) = v;
}

__device__ __forceinline__ int warp_sum(int v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(FULL, v, d);
  return v;
}

extern "C" __global__ void __launch_bounds__(THREADS) scan_lookback(const int* __restrict__ x, int* __restrict__ y,
                                                                    unsigned long long* scratch, int n) {
  __shared__ int warp_tot[WARPS][4];
  __shared__ unsigned tile_s;
  __shared__ int exclusive_s;
  __shared__ bool last_s;
  unsigned long long* const counter = scratch;
  unsigned long long* const done = scratch + 1;
  unsigned long long* const status = scratch + 2;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  if (tid == 0) tile_s = (unsigned)atomicAdd(counter, 1ull);
  __syncthreads();
  const unsigned tile = tile_s;
  const size_t base = (size_t)tile * TILE;

  // Four groups of four consecutive values, local inclusive scans; values past n are zero.
  int v[4][4];
  int sum[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const size_t g = base + (size_t)q * SEGMENT + 4 * tid;
    if (g + 3 < (size_t)n) {
      const int4 t = *reinterpret_cast<const int4*>(x + g);
      v[q][0] = t.x, v[q][1] = t.y, v[q][2] = t.z, v[q][3] = t.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[q][e] = g + e < (size_t)n ? x[g + e] : 0;
    }
    v[q][1] += v[q][0];
    v[q][2] += v[q][1];
    v[q][3] += v[q][2];
    sum[q] = v[q][3];
  }

  // The four groups' sums scanned across the block together: in the warp by shuffles, then across warps.
  int incl[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) incl[q] = sum[q];
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int t = __shfl_up_sync(FULL, incl[q], d);
      if (lane >= d) incl[q] += t;
    }
  }
  if (lane == 31) {
#pragma unroll
    for (int q = 0; q < 4; ++q) warp_tot[warp][q] = incl[q];
  }
  __syncthreads();
  int before[4];    // this thread's exclusive prefix within its quarter
  int seg_tot[4];   // each quarter's total
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    int w = 0, all = 0;
#pragma unroll
    for (int k = 0; k < WARPS; ++k) {
      const int t = warp_tot[k][q];
      if (k < warp) w += t;
      all += t;
    }
    before[q] = w + incl[q] - sum[q];
    seg_tot[q] = all;
  }
  const int total = seg_tot[0] + seg_tot[1] + seg_tot[2] + seg_tot[3];

  // Decoupled look-back, by the first warp.
  if (warp == 0) {
    int exclusive = 0;
    if (tile == 0) {
      if (lane == 0) store_volatile(&status[0], INCLUSIVE | (unsigned)total);
    } else {
      if (lane == 0) store_volatile(&status[tile], AGGREGATE | (unsigned)total);
      int end = (int)tile - 1;  // the nearest predecessor not yet summed
      while (true) {
        const int at = end - lane;
        unsigned long long s;
        // Wait until all 32 predecessors in the window have published; before tile 0 counts as inclusive 0.
        do {
          s = at >= 0 ? load_volatile(&status[at]) : INCLUSIVE;
        } while (!__all_sync(FULL, (s >> 32) != 0));
        const unsigned found = __ballot_sync(FULL, (s & INCLUSIVE) != 0);
        int value = (int)(unsigned)s;
        if (found != 0) {
          // Aggregates of the lanes before the nearest inclusive prefix, and that prefix.
          if (lane > __ffs(found) - 1) value = 0;
          exclusive += warp_sum(value);
          break;
        }
        exclusive += warp_sum(value);
        end -= 32;
      }
      if (lane == 0) store_volatile(&status[tile], INCLUSIVE | (unsigned)(exclusive + total));
    }
    if (lane == 0) exclusive_s = exclusive;
  }
  __syncthreads();

  int offset = exclusive_s;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const size_t g = base + (size_t)q * SEGMENT + 4 * tid;
    const int o = offset + before[q];
    if (g + 3 < (size_t)n) {
      *reinterpret_cast<int4*>(y + g) = make_int4(o + v[q][0], o + v[q][1], o + v[q][2], o + v[q][3]);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (g + e < (size_t)n) y[g + e] = o + v[q][e];
    }
    offset += seg_tot[q];
  }

  // This block reads and writes no more scratch; the last one to get here resets it for the next launch.
  if (tid == 0) {
    __threadfence();
    last_s = atomicAdd(done, 1ull) == gridDim.x - 1;
  }
  __syncthreads();
  if (last_s) {
    __threadfence();
    for (unsigned t = tid; t < gridDim.x; t += THREADS) status[t] = 0;
    if (tid == 0) {
      *counter = 0;
      *done = 0;
    }
  }
}
