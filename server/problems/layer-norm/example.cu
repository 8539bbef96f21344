// One block of BLOCK threads per row, the two-pass statistics of the reference (the mean, then the mean of squared
// deviations from it: no cancellation) without its re-reads: each thread keeps its first CACHE float4s of the row in
// registers, so rows of up to 4 * CACHE * BLOCK elements are read from memory once, and the passes over them run from
// registers. Reductions use warp shuffles and one shared slot per warp.
// Rows go as float4 from the first element at which x and y are 16-byte aligned (a row of a width not a multiple of 4
// starts anywhere); the few elements before and after are scalars, as is everything when a base pointer is not
// 16-byte aligned. gamma and beta go as float4 where their own alignment allows.
#define BLOCK 256
#define WARPS (BLOCK / 32)
#define CACHE 8

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of v over the block, returned to every thread; every thread of the block must call it.
__device__ __forceinline__ float block_sum(float v, float* warp_sums) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < WARPS; w++) total += warp_sums[w];
  __syncthreads();  // every thread has read warp_sums before the next call writes it
  return total;
}

__device__ __forceinline__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

__device__ __forceinline__ float sq_dev4(float4 v, float mean) {
  float a = v.x - mean, b = v.y - mean, c = v.z - mean, d = v.w - mean;
  return (a * a + b * b) + (c * c + d * d);
}

// Writes the output float4 j of the row's body, which covers columns head + 4j .. head + 4j + 3.
__device__ __forceinline__ void write4(float4* y4, int j, float4 u, int head, const float* __restrict__ gamma,
                                       const float* __restrict__ beta, bool gb_vec, float mean, float inv_std) {
  const int c = head + 4 * j;
  float4 g, b;
  if (gb_vec) {
    g = __ldg(reinterpret_cast<const float4*>(gamma + c));
    b = __ldg(reinterpret_cast<const float4*>(beta + c));
  } else {
    g = make_float4(__ldg(gamma + c), __ldg(gamma + c + 1), __ldg(gamma + c + 2), __ldg(gamma + c + 3));
    b = make_float4(__ldg(beta + c), __ldg(beta + c + 1), __ldg(beta + c + 2), __ldg(beta + c + 3));
  }
  u.x = (u.x - mean) * inv_std * g.x + b.x;
  u.y = (u.y - mean) * inv_std * g.y + b.y;
  u.z = (u.z - mean) * inv_std * g.z + b.z;
  u.w = (u.w - mean) * inv_std * g.w + b.w;
  y4[j] = u;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    layer_norm_cached(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                      float* __restrict__ y, int rows, int cols, float eps) {
  __shared__ float warp_sums[WARPS];
  const int t = threadIdx.x;
  const long long start = (long long)blockIdx.x * cols;
  const float* xr = x + start;
  float* yr = y + start;
  const bool xy_aligned =
      ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0;
  // Elements [head, body_end) as float4s, [0, head) and [body_end, cols) as scalars.
  const int head = xy_aligned ? min(cols, (int)((4 - (start & 3)) & 3)) : cols;
  const int n4 = (cols - head) / 4;
  const int body_end = head + 4 * n4;
  const float4* x4 = reinterpret_cast<const float4*>(xr + head);
  float4* y4 = reinterpret_cast<float4*>(yr + head);
  const bool gb_vec =
      head == 0 &&
      ((reinterpret_cast<unsigned long long>(gamma) | reinterpret_cast<unsigned long long>(beta)) & 15) == 0;

  float4 v[CACHE];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < CACHE; k++) {
    v[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (t + k * BLOCK < n4) {
      v[k] = __ldg(x4 + t + k * BLOCK);
      sum += sum4(v[k]);
    }
  }
#pragma unroll 4
  for (int j = t + CACHE * BLOCK; j < n4; j += BLOCK) sum += sum4(__ldg(x4 + j));
  for (int c = t; c < head; c += BLOCK) sum += __ldg(xr + c);
  for (int c = body_end + t; c < cols; c += BLOCK) sum += __ldg(xr + c);
  const float mean = block_sum(sum, warp_sums) / cols;

  float sq = 0.0f;
#pragma unroll
  for (int k = 0; k < CACHE; k++)
    if (t + k * BLOCK < n4) sq += sq_dev4(v[k], mean);
#pragma unroll 4
  for (int j = t + CACHE * BLOCK; j < n4; j += BLOCK) sq += sq_dev4(__ldg(x4 + j), mean);
  for (int c = t; c < head; c += BLOCK) {
    float d = __ldg(xr + c) - mean;
    sq += d * d;
  }
  for (int c = body_end + t; c < cols; c += BLOCK) {
    float d = __ldg(xr + c) - mean;
    sq += d * d;
  }
  const float inv_std = rsqrtf(block_sum(sq, warp_sums) / cols + eps);

#pragma unroll
  for (int k = 0; k < CACHE; k++)
    if (t + k * BLOCK < n4) write4(y4, t + k * BLOCK, v[k], head, gamma, beta, gb_vec, mean, inv_std);
  for (int j = t + CACHE * BLOCK; j < n4; j += BLOCK)
    write4(y4, j, __ldg(x4 + j), head, gamma, beta, gb_vec, mean, inv_std);
  for (int c = t; c < head; c += BLOCK) yr[c] = (__ldg(xr + c) - mean) * inv_std * __ldg(gamma + c) + __ldg(beta + c);
  for (int c = body_end + t; c < cols; c += BLOCK)
    yr[c] = (__ldg(xr + c) - mean) * inv_std * __ldg(gamma + c) + __ldg(beta + c);
}
