// One block of BLOCK threads per row, three passes over the row: the mean, the variance as the mean of squared
// deviations from it (no cancellation), and the output. Each reduction is a tree in shared memory.
#define BLOCK 256

// The sum of v over the block, returned to every thread; every thread of the block must call it.
__device__ float block_sum(float v, float* s) {
  s[threadIdx.x] = v;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  float total = s[0];
  __syncthreads();  // every thread has read s[0] before s is reused
  return total;
}

extern "C" __global__ void layer_norm(const float* x, const float* gamma, const float* beta, float* y, int rows,
                                      int cols, float eps) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;

  float sum = 0.0f;
  for (int c = t; c < cols; c += BLOCK) sum += xr[c];
  const float mean = block_sum(sum, s) / cols;

  float sq = 0.0f;
  for (int c = t; c < cols; c += BLOCK) {
    float d = xr[c] - mean;
    sq += d * d;
  }
  const float inv_std = 1.0f / sqrtf(block_sum(sq, s) / cols + eps);

  for (int c = t; c < cols; c += BLOCK) yr[c] = (xr[c] - mean) * inv_std * gamma[c] + beta[c];
}
