// SPDX-License-Identifier: MIT
// The benchmark measurement loop (lib/measure/bench.ts decides what to run and when to stop; this runs the samples).
//
// One sample, on the harness's own stream (docs/benchmarking.md, "Hiding launch latency"):
//   [fresh inputs: the sample's number written to the epoch word; the input set's refresh launches, which regenerate
//    its inputs from it, so no two timed launches see the same bytes]
//   [cold: reset persisting L2 lines; flush L2 by reading 2 × L2 bytes of other data; synchronize]
//   block the stream behind a spin kernel that waits on a host-mapped flag (with a device-side timeout), so what
//   follows is queued before the GPU starts and launch latency is hidden;
//   clock probe; start event; the kernel (or a graph replay); stop event; clock probe; release the flag; wait;
//   [snapshot: when the sample is one the caller chose, its outputs copied device to device, untimed]
// The kernel is launched through its slot exactly as kernel.launch() launches it (TryLaunchSlot in kernel.cc):
// cuLaunchKernel, or cuLaunchKernelEx when the slot carries launch attributes (cooperative, cluster dimensions).
// GPU time comes from the events, the SM clock from the two probes (clock64 over %globaltimer on SM 0), and the
// launch call's host time from steady_clock. No JS runs between a start and a stop event.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "common.h"

namespace cudakit {

using Clock = std::chrono::steady_clock;

struct SnapshotCopy {
  CUdeviceptr src, dst;
  size_t bytes;
};

// After sample `sample`, once it has run, `copies` keep what it wrote (device to device, outside the timed interval).
struct Snapshot {
  size_t sample;
  std::vector<SnapshotCopy> copies;
};

struct BenchSpec {
  CUcontext ctx;
  CUstream stream;
  std::vector<KernelSlot*> slots;                 // one per input set
  std::vector<uint32_t> order;                    // input set per sample; its length is the number of samples
  std::vector<std::vector<KernelSlot*>> refresh;  // per input set: launches run before each of its samples, untimed
  CUdeviceptr epochPtr;                           // the u32 the refresh launches read: epochBase + the sample's index
  uint32_t epochBase;
  std::vector<Snapshot> snapshots;
  bool flush;
  bool empty;  // nothing between the events: measures the event pair's own cost
  bool block;  // hold the stream behind the spin kernel (off under profilers and sanitizers, which serialize kernels)
  CUgraphExec graph;  // graph mode: replayed instead of a launch
  CUdeviceptr flushPtr;
  size_t flushVectors;  // 16-byte vectors the flush kernel reads
  CUfunction flushFn;
  uint32_t flushBlocks;
  CUdeviceptr sinkPtr;
  CUfunction blockFn;
  CUfunction probeFn;
  uint32_t probeBlocks;
  CUdeviceptr probeOut;  // device: u64[4] = start ns, start clock, end ns, end clock
  volatile int* flag;    // host view of mapped memory: [0] release flag, [1] timed out
  CUdeviceptr flagDev;   // device view of the same
  uint64_t timeoutNs;
};

static CUresult Launch1(CUfunction f, uint32_t grid, CUstream s, void** params) {
  return CU_TRY(cuLaunchKernel, f, grid, 1u, 1u, 1u, 1u, 1u, 0u, s, params, nullptr);
}

// benchSamples(spec) -> Float64Array [gpuMs, launchUs, clockMHz] per sample; throws CudaError on a failed call,
// and 'CUDAKIT_BENCH_TIMEOUT' when the spin kernel timed out (something in the stream synchronized).
static Napi::Value BenchSamples(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw Napi::TypeError::New(env, "benchSamples expects a spec object");
  Napi::Object o = info[0].As<Napi::Object>();
  auto u64 = [&](const char* key) -> uint64_t {
    Napi::Value v = o.Get(key);
    if (v.IsBigInt()) {
      bool lossless = false;
      return v.As<Napi::BigInt>().Uint64Value(&lossless);
    }
    if (v.IsNumber()) return static_cast<uint64_t>(v.As<Napi::Number>().Int64Value());
    throw Napi::TypeError::New(env, std::string("benchSamples: ") + key + " must be a bigint or number");
  };
  BenchSpec s{};
  s.ctx = reinterpret_cast<CUcontext>(u64("ctx"));
  s.stream = reinterpret_cast<CUstream>(u64("stream"));
  Napi::Value slots = o.Get("slots");
  Napi::Value order = o.Get("order");
  if (!slots.IsArray() || !order.IsArray()) throw Napi::TypeError::New(env, "benchSamples: slots and order arrays");
  for (uint32_t i = 0; i < slots.As<Napi::Array>().Length(); i++) {
    s.slots.push_back(SlotFromValue(env, slots.As<Napi::Array>().Get(i)));
  }
  for (uint32_t i = 0; i < order.As<Napi::Array>().Length(); i++) {
    uint32_t k = order.As<Napi::Array>().Get(i).As<Napi::Number>().Uint32Value();
    if (k >= s.slots.size() && !s.slots.empty())
      throw Napi::RangeError::New(env, "benchSamples: order names a missing input set");
    s.order.push_back(k);
  }
  Napi::Value refresh = o.Get("refresh");
  if (refresh.IsArray()) {
    Napi::Array sets = refresh.As<Napi::Array>();
    if (sets.Length() != s.slots.size())
      throw Napi::RangeError::New(env, "benchSamples: refresh must list launches for every input set");
    for (uint32_t i = 0; i < sets.Length(); i++) {
      Napi::Value list = sets.Get(i);
      if (!list.IsArray()) throw Napi::TypeError::New(env, "benchSamples: refresh entries must be arrays");
      std::vector<KernelSlot*> launches;
      for (uint32_t j = 0; j < list.As<Napi::Array>().Length(); j++) {
        launches.push_back(SlotFromValue(env, list.As<Napi::Array>().Get(j)));
      }
      s.refresh.push_back(std::move(launches));
    }
    s.epochPtr = u64("epochPtr");
    s.epochBase = static_cast<uint32_t>(u64("epochBase"));
    if (s.epochPtr == 0) throw Napi::RangeError::New(env, "benchSamples: refresh needs epochPtr");
  }
  Napi::Value snapshots = o.Get("snapshots");
  if (snapshots.IsArray()) {
    Napi::Array list = snapshots.As<Napi::Array>();
    for (uint32_t i = 0; i < list.Length(); i++) {
      Napi::Value entry = list.Get(i);
      if (!entry.IsObject()) throw Napi::TypeError::New(env, "benchSamples: snapshots entries must be objects");
      Napi::Object e = entry.As<Napi::Object>();
      Napi::Value sample = e.Get("sample");
      Napi::Value copies = e.Get("copies");
      if (!sample.IsNumber() || !copies.IsArray())
        throw Napi::TypeError::New(env, "benchSamples: a snapshot is { sample: number, copies: [src, dst, bytes][] }");
      Snapshot snap{static_cast<size_t>(sample.As<Napi::Number>().Int64Value()), {}};
      if (snap.sample >= s.order.size()) throw Napi::RangeError::New(env, "benchSamples: a snapshot names no sample");
      Napi::Array c = copies.As<Napi::Array>();
      for (uint32_t j = 0; j < c.Length(); j++) {
        Napi::Value triple = c.Get(j);
        if (!triple.IsArray() || triple.As<Napi::Array>().Length() != 3)
          throw Napi::TypeError::New(env, "benchSamples: a snapshot copy is [src, dst, bytes]");
        Napi::Array t = triple.As<Napi::Array>();
        auto handle = [&](uint32_t k) -> uint64_t {
          Napi::Value v = t.Get(k);
          bool lossless = false;
          if (v.IsBigInt()) return v.As<Napi::BigInt>().Uint64Value(&lossless);
          if (v.IsNumber()) return static_cast<uint64_t>(v.As<Napi::Number>().Int64Value());
          throw Napi::TypeError::New(env, "benchSamples: snapshot copy fields must be bigints or numbers");
        };
        snap.copies.push_back({handle(0), handle(1), static_cast<size_t>(handle(2))});
      }
      s.snapshots.push_back(std::move(snap));
    }
  }
  s.flush = o.Get("flush").ToBoolean();
  s.empty = o.Get("empty").ToBoolean();
  s.block = !o.Get("noBlock").ToBoolean();
  s.graph = reinterpret_cast<CUgraphExec>(u64("graph"));
  s.flushPtr = u64("flushPtr");
  s.flushVectors = u64("flushVectors");
  s.flushFn = reinterpret_cast<CUfunction>(u64("flushFn"));
  s.flushBlocks = static_cast<uint32_t>(u64("flushBlocks"));
  s.sinkPtr = u64("sinkPtr");
  s.blockFn = reinterpret_cast<CUfunction>(u64("blockFn"));
  s.probeFn = reinterpret_cast<CUfunction>(u64("probeFn"));
  s.probeBlocks = static_cast<uint32_t>(u64("probeBlocks"));
  s.probeOut = u64("probeOut");
  s.flagDev = u64("flagDev");
  s.timeoutNs = u64("timeoutNs");
  Bytes flagHost = ArgBytes(info, 1, "flagHost");
  if (flagHost.length < 8) throw Napi::RangeError::New(env, "benchSamples: flagHost must hold two int32");
  s.flag = reinterpret_cast<volatile int*>(flagHost.data);
  if (s.slots.empty() && s.graph == nullptr && !s.empty)
    throw Napi::RangeError::New(env, "benchSamples: nothing to run");

  BindContext(env, s.ctx);
  for (KernelSlot* slot : s.slots) ResolveSlotLaunch(env, *slot);
  for (auto& launches : s.refresh)
    for (KernelSlot* slot : launches) ResolveSlotLaunch(env, *slot);
  CUevent start = nullptr, stop = nullptr;
  CU_CALL(env, cuEventCreate, &start, 0u);
  CUresult r = CU_TRY(cuEventCreate, &stop, 0u);
  if (r != CUDA_SUCCESS) {
    CU_TRY(cuEventDestroy, start);
    ThrowCuda(env, "cuEventCreate", r);
  }
  const size_t n = s.order.size();
  Napi::Float64Array out = Napi::Float64Array::New(env, n * 3);
  const char* failed = nullptr;
  bool timedOut = false;
  CUdeviceptr probeStart = s.probeOut, probeEnd = s.probeOut + 16;
  uint64_t flagDev = s.flagDev, timeout = s.timeoutNs;
  void* blockParams[] = {&flagDev, &timeout};
  void* probeStartParams[] = {&probeStart};
  void* probeEndParams[] = {&probeEnd};
  CUdeviceptr flushPtr = s.flushPtr, sinkPtr = s.sinkPtr;
  long long flushVectors = static_cast<long long>(s.flushVectors);
  void* flushParams[] = {&flushPtr, &flushVectors, &sinkPtr};

  for (size_t i = 0; i < n && failed == nullptr; i++) {
    KernelSlot* slot = s.graph == nullptr && !s.empty ? s.slots[s.order[i]] : nullptr;
#define STEP(call, api)               \
  if ((r = (call)) != CUDA_SUCCESS) { \
    failed = api;                     \
    break;                            \
  }
    do {
      if (!s.refresh.empty() && s.graph == nullptr && !s.empty) {
        STEP(CU_TRY(cuMemsetD32Async, s.epochPtr, s.epochBase + static_cast<uint32_t>(i), 1u, s.stream),
             "cuMemsetD32Async");
        const char* api = nullptr;
        for (KernelSlot* fill : s.refresh[s.order[i]]) STEP(TryLaunchSlot(*fill, s.stream, &api), api);
        if (failed != nullptr) break;
      }
      if (s.flush) {
        STEP(CU_TRY(cuCtxResetPersistingL2Cache), "cuCtxResetPersistingL2Cache");
        // Reading (not writing) other data leaves L2 full of clean lines: the kernel then pays no write-back of
        // dirty lines a memset would have left, which is how Nsight Compute's cache control leaves it too.
        STEP(CU_TRY(cuLaunchKernel, s.flushFn, s.flushBlocks, 1u, 1u, 256u, 1u, 1u, 0u, s.stream, flushParams, nullptr),
             "cuLaunchKernel");
      }
      STEP(CU_TRY(cuStreamSynchronize, s.stream), "cuStreamSynchronize");
      s.flag[0] = 0;
      s.flag[1] = 0;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (s.block) STEP(Launch1(s.blockFn, 1, s.stream, blockParams), "cuLaunchKernel");
      STEP(Launch1(s.probeFn, s.probeBlocks, s.stream, probeStartParams), "cuLaunchKernel");
      STEP(CU_TRY(cuEventRecord, start, s.stream), "cuEventRecord");
      auto t0 = Clock::now();
      if (s.empty) {
        // the event pair alone
      } else if (s.graph != nullptr) {
        STEP(CU_TRY(cuGraphLaunch, s.graph, s.stream), "cuGraphLaunch");
      } else {
        // The slot's own launch (kernel.cc), attributes included: what check() verified is what is timed.
        const char* api = nullptr;
        STEP(TryLaunchSlot(*slot, s.stream, &api), api);
      }
      auto t1 = Clock::now();
      STEP(CU_TRY(cuEventRecord, stop, s.stream), "cuEventRecord");
      STEP(Launch1(s.probeFn, s.probeBlocks, s.stream, probeEndParams), "cuLaunchKernel");
      std::atomic_thread_fence(std::memory_order_seq_cst);
      s.flag[0] = 1;  // release the spin kernel: everything above is queued
      STEP(CU_TRY(cuStreamSynchronize, s.stream), "cuStreamSynchronize");
      if (s.flag[1] != 0) {
        timedOut = true;
        break;
      }
      float ms = 0;
      STEP(CU_TRY(cuEventElapsedTime, &ms, start, stop), "cuEventElapsedTime");
      uint64_t probe[4] = {0, 0, 0, 0};
      STEP(CU_TRY(cuMemcpyDtoH, probe, s.probeOut, sizeof(probe)), "cuMemcpyDtoH");
      double ns = static_cast<double>(probe[2] - probe[0]);
      double clocks = static_cast<double>(probe[3] - probe[1]);
      out[i * 3] = ms;
      out[i * 3 + 1] = std::chrono::duration<double, std::micro>(t1 - t0).count();
      out[i * 3 + 2] = ns > 0 ? clocks / ns * 1000.0 : 0.0;  // cycles per ns × 1000 = MHz
      // Stream-ordered before the next sample's refresh and launch, which the next iteration's wait covers.
      for (const Snapshot& snap : s.snapshots) {
        if (snap.sample != i || failed != nullptr) continue;
        for (const SnapshotCopy& c : snap.copies)
          STEP(CU_TRY(cuMemcpyDtoDAsync, c.dst, c.src, c.bytes, s.stream), "cuMemcpyDtoDAsync");
      }
      if (failed != nullptr) break;
    } while (false);
#undef STEP
    if (timedOut) break;
  }
  s.flag[0] = 1;  // never leave a spin kernel waiting
  CU_TRY(cuStreamSynchronize, s.stream);
  CU_TRY(cuEventDestroy, start);
  CU_TRY(cuEventDestroy, stop);
  if (failed != nullptr) ThrowCuda(env, failed, r);
  if (timedOut) {
    Napi::Error e = Napi::Error::New(
        env,
        "the benchmark's blocking kernel timed out: something synchronized the stream while it was held "
        "(lazy module loading, a profiler, or a kernel that waits on the host)");
    e.Value().Set("code", "CUDAKIT_BENCH_TIMEOUT");
    throw e;
  }
  return out;
}

void InitBench(Napi::Env env, Napi::Object exports) { Export(env, exports, "benchSamples", BenchSamples); }

}  // namespace cudakit
