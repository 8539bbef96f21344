// SPDX-License-Identifier: MIT
// The C launch loop as a shared library, which bench/run.ts loads (through koffi) into the Node process it measures
// cudakit in: C's cuLaunchKernel and Kernel.launch then run on the same thread, context, stream and function,
// batch after batch, so what differs between them is cudakit's own code and not the host's state. (The time of a
// launch varies between processes on one machine by more than cudakit's share of it: see bench/RESULTS.md.)
//   cc -O2 -shared -fPIC -I$CUDA/include enqueue-lib.c -L$CUDA/lib64/stubs -lcuda -o libenqueue.so
#include "enqueue.h"

// µs per launch of `count` cuLaunchKernel calls in the calling thread's current context; -1 - the CUresult when
// a launch fails.
double baseline_enqueue_us(unsigned long long fn, unsigned long long stream, int count) {
  CUresult status;
  double us = enqueue_batch_us(cuLaunchKernel, (CUfunction)fn, (CUstream)stream, count, &status);
  return status == CUDA_SUCCESS ? us : -1.0 - (double)status;
}

// One launch per call, for a loop in JavaScript through koffi: another way from JavaScript into C, beside cudakit's
// raw layer. Returns the CUresult.
int baseline_launch_once(unsigned long long fn, unsigned long long stream) {
  return cuLaunchKernel((CUfunction)fn, 1, 1, 1, 1, 1, 1, 0, (CUstream)stream, NULL, NULL);
}

// Nothing: the cost of a koffi call alone, beside one N-API call's.
int baseline_nothing(void) { return 0; }
