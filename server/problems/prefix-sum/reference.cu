// Inclusive scan of n i32 values in one launch: a chained scan. Each block takes the next tile of 8192 values in
// the order blocks start (an atomic counter, not blockIdx: a block only ever waits for tiles that blocks already
// running have taken, so it cannot wait for a block that never gets scheduled), scans it, then waits for the
// previous tile's inclusive prefix and publishes its own.
//
// scratch (u64, zeroed): [0] the tile counter, [1] the count of blocks done, [2 + t] tile t's status word (high half
// READY, low half its inclusive prefix; one 64-bit word, so a reader never sees one half without the other). The
// last block to finish zeroes it all again: the buffer is reused as it is by the next launch.
#define THREADS 1024
#define ITEMS 8
#define TILE (THREADS * ITEMS)
#define PAD(i) ((i) + ((i) >> 5))  // one word of padding per 32: a thread's ITEMS consecutive values in distinct banks
#define READY (1ull << 32)
#define FULL 0xffffffffu

__device__ __forceinline__ unsigned long long load_volatile(const unsigned long long* p) {
  return *reinterpret_cast<const volatile unsigned long long*>(p);
}

__device__ __forceinline__ void store_volatile(unsigned long long* p, unsigned long long v) {
  *reinterpret_cast<volatile unsigned long long*>(p) = v;
}

extern "C" __global__ void __launch_bounds__(THREADS) scan_chained(const int* __restrict__ x, int* __restrict__ y,
                                                                   unsigned long long* scratch, int n) {
  __shared__ int data[PAD(TILE)];
  __shared__ int warp_sums[THREADS / 32];
  __shared__ unsigned tile_s;
  __shared__ int prefix_s;
  __shared__ bool last_s;
  unsigned long long* const counter = scratch;
  unsigned long long* const done = scratch + 1;
  unsigned long long* const status = scratch + 2;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  if (tid == 0) tile_s = (unsigned)atomicAdd(counter, 1ull);
  __syncthreads();
  const unsigned tile = tile_s;
  const size_t base = (size_t)tile * TILE;

  // Coalesced loads into shared memory; values past n are zero.
  for (int i = 0; i < ITEMS; ++i) {
    const size_t g = base + i * THREADS + tid;
    data[PAD(i * THREADS + tid)] = g < (size_t)n ? x[g] : 0;
  }
  __syncthreads();

  // Each thread scans its ITEMS consecutive values, then the threads' sums are scanned across the block.
  int v[ITEMS];
  int sum = 0;
  for (int i = 0; i < ITEMS; ++i) {
    sum += data[PAD(tid * ITEMS + i)];
    v[i] = sum;
  }
  int incl = sum;
  for (int d = 1; d < 32; d <<= 1) {
    const int t = __shfl_up_sync(FULL, incl, d);
    if (lane >= d) incl += t;
  }
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    int w = warp_sums[lane];
    for (int d = 1; d < 32; d <<= 1) {
      const int t = __shfl_up_sync(FULL, w, d);
      if (lane >= d) w += t;
    }
    warp_sums[lane] = w;
  }
  __syncthreads();
  const int before = (warp > 0 ? warp_sums[warp - 1] : 0) + incl - sum;  // this thread's exclusive prefix
  const int total = warp_sums[THREADS / 32 - 1];

  // The chain: the previous tile's inclusive prefix, then this one's.
  if (tid == 0) {
    int prefix = 0;
    if (tile > 0) {
      unsigned long long s;
      do {
        s = load_volatile(&status[tile - 1]);
      } while ((s & READY) == 0);
      prefix = (int)(unsigned)s;
    }
    store_volatile(&status[tile], READY | (unsigned)(prefix + total));
    prefix_s = prefix;
  }
  __syncthreads();
  const int offset = prefix_s + before;
  for (int i = 0; i < ITEMS; ++i) data[PAD(tid * ITEMS + i)] = offset + v[i];
  __syncthreads();
  for (int i = 0; i < ITEMS; ++i) {
    const size_t g = base + i * THREADS + tid;
    if (g < (size_t)n) y[g] = data[PAD(i * THREADS + tid)];
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
