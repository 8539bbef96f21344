// SPDX-License-Identifier: MIT
// The C side of the launch-enqueue measurement, one definition for both places it runs: the baseline program
// (baseline.c, a process of its own) and the library bench/run.ts loads into its own Node process (enqueue-lib.c),
// where it launches through the very context, stream and function that Kernel.launch uses.
#ifndef CUDAKIT_BENCH_ENQUEUE_H
#define CUDAKIT_BENCH_ENQUEUE_H
#include <cuda.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

typedef CUresult (*LaunchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);

// Host time of `count` launches of `fn` (no parameters, one thread) on `stream`, in µs per launch; stops at the
// first failed launch and returns -1 with its status in *status.
static double enqueue_batch_us(LaunchFn launch, CUfunction fn, CUstream stream, int count, CUresult* status) {
  double t0 = now_us();
  for (int i = 0; i < count; i++) {
    CUresult r = launch(fn, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
    if (r != CUDA_SUCCESS) {
      *status = r;
      return -1;
    }
  }
  *status = CUDA_SUCCESS;
  return (now_us() - t0) / count;
}
#endif
