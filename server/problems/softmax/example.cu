// One block of BLOCK threads per row, two passes: the first keeps a running (max, sum of exp(x - max)) per thread,
// rescaling the sum when the max grows (the online softmax), and merges the pairs with warp shuffles and then across
// warps; the second writes exp(x - max) times the sum's reciprocal. Rows whose start is 16-byte aligned (the base
// pointers aligned and cols a multiple of 4) are read and written as float4.
#define BLOCK 256
#define WARPS (BLOCK / 32)

#define NEG_INF __int_as_float(0xff800000)

struct MaxSum {
  float m;  // the running max, -infinity before any element
  float s;  // the sum of exp(x - m) over the elements seen
};

__device__ __forceinline__ MaxSum max_sum(float m, float s) {
  MaxSum p = {m, s};
  return p;
}

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  float m = fmaxf(a.m, b.m);
  if (m == NEG_INF) return a;  // both empty: no exp(-inf - -inf)
  return max_sum(m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m));
}

__device__ __forceinline__ void add(MaxSum& p, float v) {
  if (v > p.m) {
    p.s = p.s * __expf(p.m - v) + 1.0f;
    p.m = v;
  } else {
    p.s += __expf(v - p.m);
  }
}

__device__ __forceinline__ MaxSum warp_merge(MaxSum p) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    p = merge(p, max_sum(__shfl_xor_sync(0xffffffffu, p.m, offset), __shfl_xor_sync(0xffffffffu, p.s, offset)));
  }
  return p;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    softmax_online(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ MaxSum warp_part[WARPS];
  __shared__ MaxSum row;
  const int t = threadIdx.x;
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;
  const bool vec = ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0 &&
                   (cols & 3) == 0;
  const int cols4 = vec ? cols / 4 : 0;  // float4s per row; the scalar loops take the rest

  MaxSum p = max_sum(NEG_INF, 0.0f);
  for (int c = t; c < cols4; c += BLOCK) {
    float4 v = __ldg(reinterpret_cast<const float4*>(xr) + c);
    add(p, v.x);
    add(p, v.y);
    add(p, v.z);
    add(p, v.w);
  }
  for (int c = 4 * cols4 + t; c < cols; c += BLOCK) add(p, __ldg(xr + c));

  p = warp_merge(p);
  if ((t & 31) == 0) warp_part[t >> 5] = p;
  __syncthreads();
  if (t < 32) {
    MaxSum q = warp_merge(t < WARPS ? warp_part[t] : max_sum(NEG_INF, 0.0f));
    if (t == 0) row = q;
  }
  __syncthreads();
  const float m = row.m, inv = 1.0f / row.s;

  for (int c = t; c < cols4; c += BLOCK) {
    float4 v = __ldg(reinterpret_cast<const float4*>(xr) + c);
    v.x = __expf(v.x - m) * inv;
    v.y = __expf(v.y - m) * inv;
    v.z = __expf(v.z - m) * inv;
    v.w = __expf(v.w - m) * inv;
    reinterpret_cast<float4*>(yr)[c] = v;
  }
  for (int c = 4 * cols4 + t; c < cols; c += BLOCK) yr[c] = __expf(__ldg(xr + c) - m) * inv;
}
