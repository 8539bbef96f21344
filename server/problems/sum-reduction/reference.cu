// Two stages in one launch: each block sums a grid-strided share of x into partials[blockIdx.x]; the block that
// finishes last (a ticket from an atomic counter) sums the partials into out[0] and resets the counter for the next
// launch. Nothing accumulates into out, so its initial contents do not matter. Launch with at most MAX_BLOCKS blocks
// of BLOCK threads.
#define BLOCK 256
#define MAX_BLOCKS 1024

__device__ float partials[MAX_BLOCKS];
__device__ unsigned int blocks_done;  // 0 when the module loads; the last block sets it back to 0

// Tree sum of s[0..BLOCK) in shared memory; every thread of the block must call it. The result is in s[0].
__device__ void block_sum(float* s) {
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
}

extern "C" __global__ void sum_reduction(const float* x, float* out, int n) {
  __shared__ float s[BLOCK];
  __shared__ bool is_last;
  float acc = 0.0f;
  for (long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * BLOCK) acc += x[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  block_sum(s);

  if (threadIdx.x == 0) {
    partials[blockIdx.x] = s[0];
    __threadfence();  // the partial is visible to every block before the ticket is taken
    is_last = atomicAdd(&blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last) return;  // uniform across the block

  __threadfence();
  acc = 0.0f;
  for (int i = threadIdx.x; i < gridDim.x; i += BLOCK) acc += __ldcg(&partials[i]);  // from L2, not a stale L1
  s[threadIdx.x] = acc;
  __syncthreads();
  block_sum(s);
  if (threadIdx.x == 0) {
    out[0] = s[0];
    blocks_done = 0;
  }
}
