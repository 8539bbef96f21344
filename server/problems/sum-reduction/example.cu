// One launch, two stages, as a grid of at most MAX_BLOCKS blocks: each thread sums its grid-strided share of x with
// 16-byte loads, several in flight; warp shuffles and one shared slot per warp reduce the block to one partial; the
// block that finishes last (a ticket from an atomic counter) adds the partials into out[0] and resets the counter
// for the next launch. Launch with a block of BLOCK threads.
#define BLOCK 256
#define WARPS (BLOCK / 32)
#define MAX_BLOCKS 1024
#define UNROLL 4

__device__ float partials[MAX_BLOCKS];
__device__ unsigned int blocks_done;  // 0 when the module loads; the last block sets it back to 0

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of v over the block, in thread 0; every thread of the block must call it.
__device__ __forceinline__ float block_sum(float v, float* warp_sums) {
  v = warp_sum(v);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = threadIdx.x < WARPS ? warp_sums[threadIdx.x] : 0.0f;
  if (warp == 0) v = warp_sum(v);
  return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    sum_reduction_vec(const float* __restrict__ x, float* __restrict__ out, int n) {
  __shared__ float warp_sums[WARPS];
  __shared__ bool is_last;
  const long long tid = blockIdx.x * (long long)BLOCK + threadIdx.x;
  const long long threads = (long long)gridDim.x * BLOCK;
  float acc = 0.0f;
  long long scalar_from = 0;  // where the scalar loop starts: past what the float4 loop covered
  if ((reinterpret_cast<unsigned long long>(x) & 15) == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const long long n4 = n / 4;
    long long i = tid;
    // UNROLL independent loads per iteration keep more bytes in flight per thread.
    for (; i + (UNROLL - 1) * threads < n4; i += UNROLL * threads) {
      float4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u++) v[u] = __ldg(&x4[i + u * threads]);
#pragma unroll
      for (int u = 0; u < UNROLL; u++) acc += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    for (; i < n4; i += threads) {
      float4 v = __ldg(&x4[i]);
      acc += (v.x + v.y) + (v.z + v.w);
    }
    scalar_from = 4 * n4;
  }
  for (long long i = scalar_from + tid; i < n; i += threads) acc += x[i];

  acc = block_sum(acc, warp_sums);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = acc;
    __threadfence();  // the partial is visible to every block before the ticket is taken
    is_last = atomicAdd(&blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last) return;  // uniform across the block

  __threadfence();
  acc = 0.0f;
  for (int i = threadIdx.x; i < gridDim.x; i += BLOCK) acc += __ldcg(&partials[i]);  // from L2, not a stale L1
  acc = block_sum(acc, warp_sums);
  if (threadIdx.x == 0) {
    out[0] = acc;
    blocks_done = 0;
  }
}
