// One block of BLOCK threads per row, three passes over the row: its max, the sum of exp(x - max), and the output.
// Each reduction is a tree in shared memory.
#define BLOCK 256

extern "C" __global__ void softmax(const float* x, float* y, int rows, int cols) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;

  float m = __int_as_float(0xff800000);  // -infinity
  for (int c = t; c < cols; c += BLOCK) m = fmaxf(m, xr[c]);
  s[t] = m;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] = fmaxf(s[t], s[t + stride]);
    __syncthreads();
  }
  m = s[0];
  __syncthreads();  // every thread has read s[0] before s is reused

  float sum = 0.0f;
  for (int c = t; c < cols; c += BLOCK) sum += expf(xr[c] - m);
  s[t] = sum;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  sum = s[0];

  for (int c = t; c < cols; c += BLOCK) yr[c] = expf(xr[c] - m) / sum;
}
