// One block of BLOCK threads per row, two passes: the first reads the row once, each thread keeping a Welford
// (count, mean, sum of squared deviations) of its elements, merged across the warp with shuffles and across warps
// through shared memory (Chan's formula: no cancellation however large the mean); the second writes the output.
// Rows whose start is 16-byte aligned (the pointers aligned and cols a multiple of 4) go as float4.
#define BLOCK 256
#define WARPS (BLOCK / 32)

struct Stats {
  float n;     // elements seen (exact: cols is far below 2^24)
  float mean;  // their mean
  float m2;    // the sum of their squared deviations from it
};

__device__ __forceinline__ Stats stats(float n, float mean, float m2) {
  Stats s = {n, mean, m2};
  return s;
}

__device__ __forceinline__ void push(Stats& s, float v) {
  s.n += 1.0f;
  float d = v - s.mean;
  s.mean += d / s.n;
  s.m2 += d * (v - s.mean);
}

__device__ __forceinline__ Stats merge(Stats a, Stats b) {
  if (b.n == 0.0f) return a;
  if (a.n == 0.0f) return b;
  float n = a.n + b.n;
  float d = b.mean - a.mean;
  float wb = b.n / n;
  return stats(n, a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb);
}

__device__ __forceinline__ Stats warp_merge(Stats s) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    s = merge(s, stats(__shfl_xor_sync(0xffffffffu, s.n, offset), __shfl_xor_sync(0xffffffffu, s.mean, offset),
                       __shfl_xor_sync(0xffffffffu, s.m2, offset)));
  }
  return s;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    layer_norm_welford(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                       float* __restrict__ y, int rows, int cols, float eps) {
  __shared__ Stats warp_part[WARPS];
  __shared__ float row_mean, row_inv_std;
  const int t = threadIdx.x;
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;
  const unsigned long long bases = reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y) |
                                   reinterpret_cast<unsigned long long>(gamma) |
                                   reinterpret_cast<unsigned long long>(beta);
  const bool vec = (bases & 15) == 0 && (cols & 3) == 0;
  const int cols4 = vec ? cols / 4 : 0;  // float4s per row; the scalar loops take the rest

  Stats s = stats(0.0f, 0.0f, 0.0f);
  for (int c = t; c < cols4; c += BLOCK) {
    float4 v = __ldg(reinterpret_cast<const float4*>(xr) + c);
    push(s, v.x);
    push(s, v.y);
    push(s, v.z);
    push(s, v.w);
  }
  for (int c = 4 * cols4 + t; c < cols; c += BLOCK) push(s, __ldg(xr + c));

  s = warp_merge(s);
  if ((t & 31) == 0) warp_part[t >> 5] = s;
  __syncthreads();
  if (t < 32) {
    Stats q = warp_merge(t < WARPS ? warp_part[t] : stats(0.0f, 0.0f, 0.0f));
    if (t == 0) {
      row_mean = q.mean;
      row_inv_std = rsqrtf(q.m2 / cols + eps);
    }
  }
  __syncthreads();
  const float mean = row_mean, inv_std = row_inv_std;

  for (int c = t; c < cols4; c += BLOCK) {
    float4 v = __ldg(reinterpret_cast<const float4*>(xr) + c);
    float4 g = __ldg(reinterpret_cast<const float4*>(gamma) + c);
    float4 b = __ldg(reinterpret_cast<const float4*>(beta) + c);
    v.x = (v.x - mean) * inv_std * g.x + b.x;
    v.y = (v.y - mean) * inv_std * g.y + b.y;
    v.z = (v.z - mean) * inv_std * g.z + b.z;
    v.w = (v.w - mean) * inv_std * g.w + b.w;
    reinterpret_cast<float4*>(yr)[c] = v;
  }
  for (int c = 4 * cols4 + t; c < cols; c += BLOCK) yr[c] = (__ldg(xr + c) - mean) * inv_std * gamma[c] + beta[c];
}
