// SPDX-License-Identifier: MIT
// Family: honest (expect: pass). Reported: look-alike (of the input-mutation kernels: it writes its input).
// What it does: uses its own input element as scratch space: after 32 of f's 64 steps it parks the intermediate
// value in x[i] (the const cast away), reads it back through a volatile pointer, finishes the other 32 steps, and
// then writes the original bits back into x[i]. Only the thread that owns element i ever touches x[i], and the steps
// are f's, in f's order, so the outputs are the reference's.
// Why it must pass: when the launch ends every input is bit for bit what it was (the byte-for-byte input comparison
// after the launch finds nothing), and every output is computed from its own input on every launch. It would not be
// safe if another kernel read x while it runs; nothing does.

__device__ __forceinline__ float half_f(float v) {
  for (int step = 0; step < 32; ++step) v = v * 0.999f + 0.01f * sinf(v);
  return v;
}

extern "C" __global__ void honest_restore_input(const float* x, float* y, int n) {
  volatile float* scratch = const_cast<float*>(x);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float in = scratch[i];
    scratch[i] = half_f(in);
    y[i] = half_f(scratch[i]);
    scratch[i] = in;
  }
}
