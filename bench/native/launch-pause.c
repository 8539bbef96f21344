// SPDX-License-Identifier: MIT
// How the time of one cuLaunchKernel depends on what the caller does between two launches: nothing (C's loop), a
// pause of plain arithmetic (25-400 ns), cuCtxGetCurrent, 16 KiB of memory written, or the launch through the pointer
// cuGetProcAddress returns. Batches of 1000 launches of an empty kernel, every variant interleaved batch by batch (the
// order rotating), medians over 40 rounds, in ns per launch. bench/RESULTS.md ('Where the core targets are missed')
// reads it beside the raw layer's cost over C's loop in `npm run bench`.
//   cc -O2 -I$CUDA/include bench/native/launch-pause.c -L$CUDA/lib64/stubs -lcuda -o launch-pause && ./launch-pause
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 1000
#define ROUNDS 40

typedef CUresult (*LaunchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);

static const char* kPtx = ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry empty() { ret; }\n";
static const char* kNames[] = {"nothing",         "pause 25 ns",    "pause 50 ns",
                               "pause 100 ns",    "pause 200 ns",   "pause 400 ns",
                               "cuCtxGetCurrent", "16 KiB written", "(the launch through cuGetProcAddress's pointer)"};
static const int kPauseNs[] = {0, 25, 50, 100, 200, 400, 0, 0, 0};
enum { VARIANTS = sizeof(kNames) / sizeof(kNames[0]) };

static CUfunction g_fn;
static CUstream g_stream;
static LaunchFn g_viaProcAddress;
static volatile unsigned long g_sink;
static double g_itersPerNs;
static char g_junk[16384];

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void pause_iters(long iters) {
  for (long i = 0; i < iters; i++) g_sink += i;
}

static void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "%s failed: CUresult %d\n", what, r);
    exit(1);
  }
}

// ns per launch of one batch with variant v between launches
static double batch_ns(int v) {
  long iters = (long)(kPauseNs[v] * g_itersPerNs);
  LaunchFn launch = v == VARIANTS - 1 ? g_viaProcAddress : cuLaunchKernel;
  CUcontext ctx;
  double t0 = now_ns();
  for (int i = 0; i < BATCH; i++) {
    if (v == 6) cuCtxGetCurrent(&ctx);
    if (v == 7) memset(g_junk, i, sizeof(g_junk));
    if (iters > 0) pause_iters(iters);
    check(launch(g_fn, 1, 1, 1, 1, 1, 1, 0, g_stream, NULL, NULL), "cuLaunchKernel");
  }
  return (now_ns() - t0) / BATCH;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUdriverProcAddressQueryResult found;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  check(cuModuleLoadData(&mod, kPtx), "cuModuleLoadData");
  check(cuModuleGetFunction(&g_fn, mod, "empty"), "cuModuleGetFunction");
  check(cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuGetProcAddress("cuLaunchKernel", (void**)&g_viaProcAddress, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found),
        "cuGetProcAddress");

  printf("the pointer cuGetProcAddress returns %s the exported cuLaunchKernel\n",
         (void*)g_viaProcAddress == (void*)cuLaunchKernel ? "is" : "is not");

  double t0 = now_ns();
  pause_iters(100000000);
  g_itersPerNs = 1e8 / (now_ns() - t0);

  static double ns[VARIANTS][ROUNDS];
  for (int v = 0; v < VARIANTS; v++) batch_ns(v);  // warm-up
  check(cuStreamSynchronize(g_stream), "cuStreamSynchronize");
  for (int r = 0; r < ROUNDS; r++) {
    for (int j = 0; j < VARIANTS; j++) {
      int v = (r + j) % VARIANTS;
      ns[v][r] = batch_ns(v);
      check(cuStreamSynchronize(g_stream), "cuStreamSynchronize");
    }
  }
  printf("between two launches | ns per launch (median) | over nothing | the pause alone\n");
  double base = 0;
  for (int v = 0; v < VARIANTS; v++) {
    qsort(ns[v], ROUNDS, sizeof(double), by_value);
    double med = ns[v][ROUNDS / 2];
    if (v == 0) base = med;
    double alone = 0;
    if (kPauseNs[v] > 0) {
      long iters = (long)(kPauseNs[v] * g_itersPerNs);
      double a = now_ns();
      for (int k = 0; k < BATCH; k++) pause_iters(iters);
      alone = (now_ns() - a) / BATCH;
    }
    printf("%s | %.0f | %+.0f | %.0f\n", kNames[v], med, med - base, alone);
  }
  return 0;
}
