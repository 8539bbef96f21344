// SPDX-License-Identifier: MIT
// Module entry: per-env state, the export table, and the cleanup hook that releases what the env still owns
// when a worker or the process exits.
#include <uv.h>

#include "common.h"

namespace cudakit {

// A worker's env: frees everything it still owns, in dependency order, after its work has finished, and releases
// the retained primary contexts. The main thread's env (the process is ending): releases nothing one by one and
// waits for nothing, because the driver frees all of the process's GPU resources when it ends and stops kernels
// still running; waiting here would make process.exit() wait for a kernel that may never end.
// Never throws: the env is going away.
static void Cleanup(void* arg) {
  auto* addon = static_cast<Addon*>(arg);
  addon->tornDown = true;
  StopWaiter(*addon);
  ReleaseKernelSlots(*addon);
  if (addon->mainThread) {
    for (auto& [key, r] : addon->resources) {
      // The ArrayBuffers' own finalizers may still run after this hook: they must not call the driver either.
      if (r.kind == Kind::HostMemory) static_cast<HostAlloc*>(r.record)->freed = true;
    }
  } else if (loader::Driver().loaded) {
    for (auto& [dev, ctx] : addon->retained) {
      if (TryBindContext(ctx) == CUDA_SUCCESS) CU_TRY(cuCtxSynchronize);
    }
    const Kind order[] = {Kind::GraphExec,        Kind::Graph,        Kind::Event,
                          Kind::Module,           Kind::DeviceMemory, Kind::HostMemory,
                          Kind::HostRegistration, Kind::Stream};
    for (Kind k : order) {
      for (auto& [key, r] : addon->resources) {
        if (r.kind != k || TryBindContext(r.ctx) != CUDA_SUCCESS) continue;
        switch (k) {
          case Kind::GraphExec:
            CU_TRY(cuGraphExecDestroy, reinterpret_cast<CUgraphExec>(key));
            break;
          case Kind::Graph:
            CU_TRY(cuGraphDestroy, reinterpret_cast<CUgraph>(key));
            break;
          case Kind::Event:
            CU_TRY(cuEventDestroy, reinterpret_cast<CUevent>(key));
            break;
          case Kind::Module:
            CU_TRY(cuModuleUnload, reinterpret_cast<CUmodule>(key));
            break;
          case Kind::DeviceMemory:
            CU_TRY(cuMemFree, static_cast<CUdeviceptr>(key));
            break;
          case Kind::HostMemory:
            static_cast<HostAlloc*>(r.record)->freed = true;  // the ArrayBuffer's finalizer must not free it again
            CU_TRY(cuMemFreeHost, reinterpret_cast<void*>(key));
            break;
          case Kind::HostRegistration:
            CU_TRY(cuMemHostUnregister, reinterpret_cast<void*>(key));
            break;
          case Kind::Stream:
            CU_TRY(cuStreamDestroy, reinterpret_cast<CUstream>(key));
            break;
        }
      }
    }
    for (auto& [dev, ctx] : addon->retained) CU_TRY(cuDevicePrimaryCtxRelease, dev);
  }
  addon->resources.clear();
  addon->retained.clear();
}

// stats() -> live resources of this env, for leak tests and diagnostics
static Napi::Value Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Addon& addon = GetAddon(env);
  double deviceBytes = 0, hostBytes = 0;
  uint32_t counts[8] = {0};
  for (auto& [key, r] : addon.resources) {
    counts[static_cast<int>(r.kind)]++;
    if (r.kind == Kind::DeviceMemory) deviceBytes += static_cast<double>(r.bytes);
    if (r.kind == Kind::HostMemory) hostBytes += static_cast<double>(r.bytes);
  }
  uint32_t slots = 0;
  for (auto* s : addon.slots) slots += s != nullptr ? 1 : 0;
  Napi::Object o = Napi::Object::New(env);
  o.Set("deviceAllocations", counts[static_cast<int>(Kind::DeviceMemory)]);
  o.Set("deviceBytes", deviceBytes);
  o.Set("hostAllocations", counts[static_cast<int>(Kind::HostMemory)]);
  o.Set("hostBytes", hostBytes);
  o.Set("hostRegistrations", counts[static_cast<int>(Kind::HostRegistration)]);
  o.Set("modules", counts[static_cast<int>(Kind::Module)]);
  o.Set("streams", counts[static_cast<int>(Kind::Stream)]);
  o.Set("events", counts[static_cast<int>(Kind::Event)]);
  o.Set("graphs", counts[static_cast<int>(Kind::Graph)]);
  o.Set("graphExecs", counts[static_cast<int>(Kind::GraphExec)]);
  o.Set("kernelSlots", slots);
  return o;
}

// nop(): does nothing; the benchmark uses it to measure the cost of one N-API call on this machine. A plain N-API
// callback, as launchKernel is.
static napi_value Nop(napi_env, napi_callback_info) { return nullptr; }

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* addon = new Addon();
  uv_loop_t* loop = nullptr;
  napi_get_uv_event_loop(env, &loop);
  addon->mainThread = loop == uv_default_loop();  // workers run their own loops
  env.SetInstanceData<Addon>(addon);              // deleted by node-addon-api when the env goes away
  napi_add_env_cleanup_hook(env, Cleanup, addon);
  InitErrors(env, exports);
  InitDevice(env, exports);
  InitMemory(env, exports);
  InitProgram(env, exports);
  InitModule(env, exports);
  InitKernel(env, exports);
  InitStream(env, exports);
  InitEvent(env, exports);
  InitGraph(env, exports);
  InitStaging(env, exports);
  InitBench(env, exports);
  InitCupti(env, exports);
  Export(env, exports, "stats", Stats);
  ExportPlain(env, exports, "nop", Nop, nullptr);
  return exports;
}

}  // namespace cudakit

static Napi::Object InitAll(Napi::Env env, Napi::Object exports) { return cudakit::Init(env, exports); }
NODE_API_MODULE(cudakit, InitAll)
