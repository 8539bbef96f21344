// SPDX-License-Identifier: MIT
// The CUDA sources several test files run or compile, each written once. saxpy(a, x, y, n) is y = a·x + y over n
// floats; its variants keep its name and parameters, so one job or command line takes any of them.

/** saxpy, one element per thread. */
export const SAXPY = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;

/** saxpy with four elements per thread: launched with a quarter of the threads. */
export const SAXPY4 = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  for (int k = i; k < i + 4 && k < n; k++) y[k] = a * x[k] + y[k];
}
`;

/** saxpy's signature, writing through an illegal address: a sticky fault that loses the context. */
export const SAXPY_ILLEGAL = `extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ((float*)0x10)[i] = a * x[i];
}
`;

/** out = a + b over n floats. */
export const VECTOR_ADD = `
extern "C" __global__ void vector_add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
`;

/** k(y, n): y = 1 over the first n floats, one block; the kernel of the service tests' job (jobs.ts). */
export const FILL = 'extern "C" __global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }';
