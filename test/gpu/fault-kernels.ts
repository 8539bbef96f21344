// SPDX-License-Identifier: MIT
// The kernels the service's GPU tests run, embedded and distributed alike: scale(a, x, y, n), y = a·x, checked
// against SCALE, and two that misbehave (an illegal address; a loop that never ends).

export const N = 1 << 16;
export const SCALE = `extern "C" __global__ void scale(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
`;
export const ILLEGAL = `extern "C" __global__ void scale(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ((float*)0x10)[i] = a * x[i];
}
`;
// clock64() is never negative in practice: the loop never ends, and the compiler cannot drop it.
export const ENDLESS = `extern "C" __global__ void scale(float a, const float* x, float* y, int n) {
  long long t = 0;
  while (t >= 0) t = clock64();
  y[0] = (float)t;
}
`;
/** A native request body for `source`'s scale(). */
export const scaleJob = (
  name: string,
  source: string,
  more: Record<string, unknown> = {},
): Record<string, unknown> => ({
  name,
  source,
  kernel: 'scale',
  grid: N / 256,
  block: 256,
  args: ['f32=2.5', `ptr:f32[${N}]=uniform(-1,1)`, `ptr:f32[${N}]:out`, `i32=${N}`],
  reference: { source: { text: SCALE, name: 'ref.cu' }, kernel: 'scale' },
  check: { trials: 2 },
  timing: { preset: 'quick' },
  ...more,
});
