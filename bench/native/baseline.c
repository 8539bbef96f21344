// SPDX-License-Identifier: MIT
// The native baseline for `npm run bench`: the same measurements as bench/run.ts, made with direct CUDA Driver
// API and NVRTC calls from C, in the same run on the same machine. Built on the GPU host against the toolkit:
//   cc -O2 -I$CUDA/include baseline.c -L$CUDA/lib64 -lcuda -lnvrtc -o baseline
// Usage: baseline <nvrtc flag>...   Prints one JSON object with medians.
#include <cuda.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(call)                                                                   \
  do {                                                                             \
    CUresult r_ = (call);                                                          \
    if (r_ != CUDA_SUCCESS) {                                                      \
      const char* s_ = NULL;                                                       \
      cuGetErrorName(r_, &s_);                                                     \
      fprintf(stderr, "%s:%d %s failed: %s\n", __FILE__, __LINE__, #call, s_);      \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)
#define NK(call)                                                                   \
  do {                                                                             \
    nvrtcResult r_ = (call);                                                       \
    if (r_ != NVRTC_SUCCESS) {                                                     \
      fprintf(stderr, "%s failed: %s\n", #call, nvrtcGetErrorString(r_));          \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, n, sizeof(double), cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Kept identical to COMPILE_SOURCE in bench/run.ts.
static const char* COMPILE_SOURCE =
    "template <typename T> __global__ void axpy(T a, const T* x, T* y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void empty() {}\n"
    "template __global__ void axpy<float>(float, const float*, float*, int);\n"
    "template __global__ void axpy<double>(double, const double*, double*, int);\n";

static void* compile(int nflags, const char** flags, size_t* size) {
  nvrtcProgram p;
  NK(nvrtcCreateProgram(&p, COMPILE_SOURCE, "bench.cu", 0, NULL, NULL));
  nvrtcResult r = nvrtcCompileProgram(p, nflags, flags);
  if (r != NVRTC_SUCCESS) {
    size_t n;
    nvrtcGetProgramLogSize(p, &n);
    char* log = malloc(n);
    nvrtcGetProgramLog(p, log);
    fprintf(stderr, "compile failed:\n%s\n", log);
    exit(1);
  }
  NK(nvrtcGetCUBINSize(p, size));
  void* cubin = malloc(*size);
  NK(nvrtcGetCUBIN(p, cubin));
  NK(nvrtcDestroyProgram(&p));
  return cubin;
}

int main(int argc, const char** argv) {
  int nflags = argc - 1;
  const char** flags = argv + 1;
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CUstream s;
  CK(cuStreamCreate(&s, CU_STREAM_DEFAULT));

  // NVRTC compile, cold (no cache exists at this level)
  enum { COMPILES = 8 };
  double compile_ms[COMPILES];
  size_t cubin_size = 0;
  void* cubin = NULL;
  for (int i = 0; i < COMPILES; i++) {
    double t0 = now_us();
    void* c = compile(nflags, flags, &cubin_size);
    compile_ms[i] = (now_us() - t0) / 1e3;
    if (cubin) free(cubin);
    cubin = c;
  }
  CUmodule mod;
  CK(cuModuleLoadData(&mod, cubin));
  CUfunction empty;
  CK(cuModuleGetFunction(&empty, mod, "empty"));

  // launch enqueue: host time of cuLaunchKernel, in batches of 1000
  enum { BATCH = 1000, BATCHES = 30 };
  double enqueue_us[BATCHES];
  for (int w = 0; w < 2000; w++) CK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CK(cuStreamSynchronize(s));
  for (int b = 0; b < BATCHES; b++) {
    double t0 = now_us();
    for (int i = 0; i < BATCH; i++) CK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    enqueue_us[b] = (now_us() - t0) / BATCH;
    CK(cuStreamSynchronize(s));
  }

  // what binding a context costs (cudakit checks the current context before each call)
  enum { GETS = 1000000 };
  double t_get = now_us();
  CUcontext cur;
  for (int i = 0; i < GETS; i++) CK(cuCtxGetCurrent(&cur));
  double ctxGetCurrentNs = (now_us() - t_get) * 1e3 / GETS;

  // launch + synchronize round trip
  enum { TRIPS = 3000 };
  static double trip_us[TRIPS];
  for (int i = 0; i < TRIPS; i++) {
    double t0 = now_us();
    CK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CK(cuStreamSynchronize(s));
    trip_us[i] = now_us() - t0;
  }

  // graph replay: 100 captured launches, per kernel
  enum { NODES = 100, REPLAYS = 20, GRAPH_SAMPLES = 30 };
  CUgraph graph;
  CUgraphExec exec;
  CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < NODES; i++) CK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CK(cuStreamEndCapture(s, &graph));
  CK(cuGraphInstantiate(&exec, graph, 0));
  CUevent e0, e1;
  CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  for (int w = 0; w < 5; w++) CK(cuGraphLaunch(exec, s));
  double graph_us[GRAPH_SAMPLES];
  for (int k = 0; k < GRAPH_SAMPLES; k++) {
    CK(cuEventRecord(e0, s));
    for (int r = 0; r < REPLAYS; r++) CK(cuGraphLaunch(exec, s));
    CK(cuEventRecord(e1, s));
    CK(cuEventSynchronize(e1));
    float ms;
    CK(cuEventElapsedTime(&ms, e0, e1));
    graph_us[k] = ms * 1e3 / (REPLAYS * NODES);
  }

  // 256 MiB copies, pinned and pageable (pageable memory touched first, like a filled TypedArray)
  const size_t bytes = (size_t)256 << 20;
  enum { COPIES = 10 };
  CUdeviceptr d;
  CK(cuMemAlloc(&d, bytes));
  void* pinned;
  CK(cuMemHostAlloc(&pinned, bytes, CU_MEMHOSTALLOC_PORTABLE));
  void* pageable = malloc(bytes);
  memset(pageable, 1, bytes);
  memset(pinned, 1, bytes);
  double h2d_pinned[COPIES], d2h_pinned[COPIES], h2d_pageable[COPIES], d2h_pageable[COPIES];
  for (int i = 0; i < COPIES + 1; i++) {
    double t0 = now_us();
    CK(cuMemcpyHtoD(d, pinned, bytes));
    double t1 = now_us();
    CK(cuMemcpyDtoH(pinned, d, bytes));
    double t2 = now_us();
    CK(cuMemcpyHtoD(d, pageable, bytes));
    double t3 = now_us();
    CK(cuMemcpyDtoH(pageable, d, bytes));
    double t4 = now_us();
    if (i == 0) continue;  // warm-up
    h2d_pinned[i - 1] = bytes / ((t1 - t0) * 1e3);
    d2h_pinned[i - 1] = bytes / ((t2 - t1) * 1e3);
    h2d_pageable[i - 1] = bytes / ((t3 - t2) * 1e3);
    d2h_pageable[i - 1] = bytes / ((t4 - t3) * 1e3);
  }

  printf("{\"launchEnqueueUs\": %.4f, \"roundTripUs\": %.4f, \"graphPerKernelUs\": %.4f, "
         "\"h2dPinnedGBs\": %.3f, \"d2hPinnedGBs\": %.3f, \"h2dPageableGBs\": %.3f, \"d2hPageableGBs\": %.3f, "
         "\"compileColdMs\": %.3f, \"cubinBytes\": %zu, \"ctxGetCurrentNs\": %.2f}\n",
         median(enqueue_us, BATCHES), median(trip_us, TRIPS), median(graph_us, GRAPH_SAMPLES),
         median(h2d_pinned, COPIES), median(d2h_pinned, COPIES), median(h2d_pageable, COPIES),
         median(d2h_pageable, COPIES), median(compile_ms, COMPILES), cubin_size, ctxGetCurrentNs);
  return 0;
}
