// SPDX-License-Identifier: MIT
// The native baseline for `npm run bench`: the same measurements as bench/run.ts, made with direct CUDA Driver
// API and NVRTC calls from C. bench/run.ts builds it against the CUDA toolkit of the machine it runs on,
//   cc -O2 -I$CUDA/include baseline.c -L$CUDA/lib64 -L$CUDA/lib64/stubs -lcuda <the libnvrtc cudakit loaded>
//     -ldl -o baseline
// starts it (once per round) and sends it one command per line, interleaved with its own measurements of the same
// thing, so both sides see the same machine state. Each command prints one JSON line with the median of its samples.
//   compile | enqueue | enqueue-procaddress | trip | graph | copy | module | ctx | quit
// Usage: baseline <nvrtc flag>...
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "enqueue.h"

#define CK(call)                                                              \
  do {                                                                        \
    CUresult r_ = (call);                                                     \
    if (r_ != CUDA_SUCCESS) {                                                 \
      const char* s_ = NULL;                                                  \
      cuGetErrorName(r_, &s_);                                                \
      fprintf(stderr, "%s:%d %s failed: %s\n", __FILE__, __LINE__, #call, s_); \
      exit(1);                                                                \
    }                                                                         \
  } while (0)
#define NK(call)                                                          \
  do {                                                                    \
    nvrtcResult r_ = (call);                                              \
    if (r_ != NVRTC_SUCCESS) {                                            \
      fprintf(stderr, "%s failed: %s\n", #call, nvrtcGetErrorString(r_)); \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

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

static int g_nflags;
static const char** g_flags;
static CUstream g_stream;
static CUfunction g_empty;
static void* g_cubin;

static void* compile(size_t* size) {
  nvrtcProgram p;
  NK(nvrtcCreateProgram(&p, COMPILE_SOURCE, "bench.cu", 0, NULL, NULL));
  nvrtcResult r = nvrtcCompileProgram(p, g_nflags, g_flags);
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

static void cmd_compile(void) {
  enum { N = 3 };
  double ms[N];
  for (int i = 0; i < N; i++) {
    size_t size;
    double t0 = now_us();
    free(compile(&size));
    ms[i] = (now_us() - t0) / 1e3;
  }
  printf("{\"compileColdMs\": %.4f}\n", median(ms, N));
}

// Host time of one cuLaunchKernel, in batches of 1000 (synchronized between batches, outside the timing).
static double enqueue_with(LaunchFn launch) {
  enum { BATCH = 1000, BATCHES = 10 };
  double us[BATCHES];
  for (int b = 0; b < BATCHES; b++) {
    CUresult status;
    us[b] = enqueue_batch_us(launch, g_empty, g_stream, BATCH, &status);
    CK(status);
    CK(cuStreamSynchronize(g_stream));
  }
  return median(us, BATCHES);
}

static void cmd_enqueue(void) { printf("{\"launchEnqueueUs\": %.4f}\n", enqueue_with(cuLaunchKernel)); }

// The same through the pointer cuGetProcAddress gives for the ABI version cudakit asks for (4000).
static void cmd_enqueue_procaddress(void) {
  void* fn = NULL;
  CUdriverProcAddressQueryResult q;
  CK(cuGetProcAddress("cuLaunchKernel", &fn, 4000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
  printf("{\"launchEnqueueProcAddressUs\": %.4f}\n", enqueue_with((LaunchFn)fn));
}

// NVRTC loaded with dlopen (from a copy of the same library, so it is a separate instance), the way cudakit
// loads it: tells whether being dlopened, rather than linked, changes NVRTC's own speed.
static void cmd_compile_dlopen(void) {
  const char* path = getenv("BASELINE_NVRTC_COPY");
  void* h = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (h == NULL) {
    printf("{}\n");
    return;
  }
  typedef nvrtcResult (*Create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  typedef nvrtcResult (*Compile)(nvrtcProgram, int, const char* const*);
  typedef nvrtcResult (*Destroy)(nvrtcProgram*);
  typedef nvrtcResult (*Size)(nvrtcProgram, size_t*);
  typedef nvrtcResult (*Get)(nvrtcProgram, char*);
  Create create = (Create)dlsym(h, "nvrtcCreateProgram");
  Compile comp = (Compile)dlsym(h, "nvrtcCompileProgram");
  Destroy destroy = (Destroy)dlsym(h, "nvrtcDestroyProgram");
  Size size = (Size)dlsym(h, "nvrtcGetCUBINSize");
  Get get = (Get)dlsym(h, "nvrtcGetCUBIN");
  enum { N = 3 };
  double ms[N];
  for (int i = -1; i < N; i++) {  // i = -1: warm-up (first use of this instance)
    nvrtcProgram p;
    size_t n = 0;
    double t0 = now_us();
    create(&p, COMPILE_SOURCE, "bench.cu", 0, NULL, NULL);
    if (comp(p, g_nflags, g_flags) != NVRTC_SUCCESS) exit(1);
    size(p, &n);
    char* c = malloc(n);
    get(p, c);
    destroy(&p);
    free(c);
    if (i >= 0) ms[i] = (now_us() - t0) / 1e3;
  }
  printf("{\"compileDlopenMs\": %.4f}\n", median(ms, N));
}

static void cmd_trip(void) {
  enum { BATCHES = 20, BATCH = 50 };  // batches, so reading the clock does not count
  double us[BATCHES];
  for (int b = 0; b < BATCHES; b++) {
    double t0 = now_us();
    for (int i = 0; i < BATCH; i++) {
      CK(cuLaunchKernel(g_empty, 1, 1, 1, 1, 1, 1, 0, g_stream, NULL, NULL));
      CK(cuStreamSynchronize(g_stream));
    }
    us[b] = (now_us() - t0) / BATCH;
  }
  printf("{\"roundTripUs\": %.4f}\n", median(us, BATCHES));
}

static void cmd_graph(void) {
  enum { NODES = 100, REPLAYS = 20, SAMPLES = 10 };
  static CUgraphExec exec = NULL;
  static CUevent e0, e1;
  if (exec == NULL) {
    CUgraph graph;
    CK(cuStreamBeginCapture(g_stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < NODES; i++) CK(cuLaunchKernel(g_empty, 1, 1, 1, 1, 1, 1, 0, g_stream, NULL, NULL));
    CK(cuStreamEndCapture(g_stream, &graph));
    CK(cuGraphInstantiate(&exec, graph, 0));
    CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    for (int w = 0; w < 5; w++) CK(cuGraphLaunch(exec, g_stream));
  }
  double us[SAMPLES];
  for (int k = 0; k < SAMPLES; k++) {
    CK(cuEventRecord(e0, g_stream));
    for (int r = 0; r < REPLAYS; r++) CK(cuGraphLaunch(exec, g_stream));
    CK(cuEventRecord(e1, g_stream));
    CK(cuEventSynchronize(e1));
    float ms;
    CK(cuEventElapsedTime(&ms, e0, e1));
    us[k] = ms * 1e3 / (REPLAYS * NODES);
  }
  printf("{\"graphPerKernelUs\": %.4f}\n", median(us, SAMPLES));
}

// 256 MiB copies, pinned and pageable (pageable memory touched first, like a filled TypedArray).
static void cmd_copy(void) {
  const size_t bytes = (size_t)256 << 20;
  CUdeviceptr d;
  void *pinned, *pageable;
  CK(cuMemAlloc(&d, bytes));
  CK(cuMemHostAlloc(&pinned, bytes, CU_MEMHOSTALLOC_PORTABLE));
  pageable = malloc(bytes);
  memset(pageable, 1, bytes);
  memset(pinned, 1, bytes);
  enum { COPIES = 3 };
  double a[COPIES], b[COPIES], c[COPIES], e[COPIES];
  for (int i = 0; i < COPIES; i++) {
    double t0 = now_us();
    CK(cuMemcpyHtoD(d, pinned, bytes));
    double t1 = now_us();
    CK(cuMemcpyDtoH(pinned, d, bytes));
    double t2 = now_us();
    CK(cuMemcpyHtoD(d, pageable, bytes));
    double t3 = now_us();
    CK(cuMemcpyDtoH(pageable, d, bytes));
    double t4 = now_us();
    a[i] = bytes / ((t1 - t0) * 1e3);
    b[i] = bytes / ((t2 - t1) * 1e3);
    c[i] = bytes / ((t3 - t2) * 1e3);
    e[i] = bytes / ((t4 - t3) * 1e3);
  }
  printf("{\"h2dPinnedGBs\": %.4f, \"d2hPinnedGBs\": %.4f, \"h2dPageableGBs\": %.4f, \"d2hPageableGBs\": %.4f}\n",
         median(a, COPIES), median(b, COPIES), median(c, COPIES), median(e, COPIES));
  CK(cuMemFree(d));
  CK(cuMemFreeHost(pinned));
  free(pageable);
}

// Module load + unload of the benchmark's CUBIN, and the same with one kernel looked up (with lazy loading, the
// default since CUDA 12.2, the function's code is loaded at that lookup).
static void cmd_module(void) {
  enum { BATCHES = 15, BATCH = 20 };
  double plain[BATCHES], withKernel[BATCHES];
  for (int b = 0; b < BATCHES; b++) {
    CUmodule m;
    CUfunction f;
    double t0 = now_us();
    for (int i = 0; i < BATCH; i++) {
      CK(cuModuleLoadData(&m, g_cubin));
      CK(cuModuleUnload(m));
    }
    double t1 = now_us();
    for (int i = 0; i < BATCH; i++) {
      CK(cuModuleLoadData(&m, g_cubin));
      CK(cuModuleGetFunction(&f, m, "empty"));
      CK(cuModuleUnload(m));
    }
    double t2 = now_us();
    plain[b] = (t1 - t0) / BATCH;
    withKernel[b] = (t2 - t1) / BATCH;
  }
  printf("{\"moduleLoadUnloadUs\": %.4f, \"moduleLoadKernelUnloadUs\": %.4f}\n", median(plain, BATCHES),
         median(withKernel, BATCHES));
}

static void cmd_ctx(void) {
  enum { GETS = 1000000 };
  CUcontext cur;
  double t0 = now_us();
  for (int i = 0; i < GETS; i++) CK(cuCtxGetCurrent(&cur));
  printf("{\"ctxGetCurrentNs\": %.3f}\n", (now_us() - t0) * 1e3 / GETS);
}

int main(int argc, const char** argv) {
  g_nflags = argc - 1;
  g_flags = argv + 1;
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&g_stream, CU_STREAM_DEFAULT));
  size_t size;
  void* cubin = compile(&size);
  g_cubin = cubin;
  CUmodule mod;
  CK(cuModuleLoadData(&mod, cubin));
  CK(cuModuleGetFunction(&g_empty, mod, "empty"));
  for (int w = 0; w < 2000; w++) CK(cuLaunchKernel(g_empty, 1, 1, 1, 1, 1, 1, 0, g_stream, NULL, NULL));
  CK(cuStreamSynchronize(g_stream));
  printf("{\"ready\": true}\n");
  fflush(stdout);

  char line[64];
  while (fgets(line, sizeof(line), stdin) != NULL) {
    line[strcspn(line, "\r\n")] = '\0';
    if (strcmp(line, "compile") == 0) cmd_compile();
    else if (strcmp(line, "enqueue") == 0) cmd_enqueue();
    else if (strcmp(line, "enqueue-procaddress") == 0) cmd_enqueue_procaddress();
    else if (strcmp(line, "compile-dlopen") == 0) cmd_compile_dlopen();
    else if (strcmp(line, "trip") == 0) cmd_trip();
    else if (strcmp(line, "graph") == 0) cmd_graph();
    else if (strcmp(line, "copy") == 0) cmd_copy();
    else if (strcmp(line, "module") == 0) cmd_module();
    else if (strcmp(line, "ctx") == 0) cmd_ctx();
    else if (strcmp(line, "quit") == 0) break;
    else printf("{\"error\": \"unknown command\"}\n");
    fflush(stdout);
  }
  return 0;
}
