// SPDX-License-Identifier: MIT
// Shared by every native/*.cc: per-env state, error raising, argument readers and context binding.
#pragma once

#include <napi.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda_api.h"
#include "loader.h"

namespace cudakit {

using namespace cu;

// What the env owns, so that a worker's exit or the process's exit releases it (cleanup hook in addon.cc).
enum class Kind : uint8_t { DeviceMemory, HostMemory, HostRegistration, Module, Stream, Event, Graph, GraphExec };

struct Resource {
  Kind kind;
  CUcontext ctx;
  size_t bytes;  // memory only: what was reported to V8 as external memory
  void* record;  // HostMemory: the HostAlloc shared with the ArrayBuffer's finalizer
};

// A pinned allocation is freed by dispose, by its ArrayBuffer's finalizer or by env cleanup, whichever is first.
struct HostAlloc {
  void* ptr;
  CUcontext ctx;
  bool freed;
};

// A launch slot (kernel.cc): a function bound to an ArrayBuffer that lib/ writes the launch configuration and the
// packed arguments into. Buffer layout (little-endian), shared with lib/core/kernel.ts (LaunchHeader):
//   u32[0..2] grid x,y,z   u32[3..5] block x,y,z   u32[6] dynamic shared memory bytes
//   u32[7] launch flags: bit 0 cooperative
//   u64 at byte 32: stream handle
//   u32[10..12] thread block cluster dimensions x,y,z (0: no cluster)
//   bytes 64..: kernel parameters at the offsets given to kernelSlotCreate
// A header with launch attributes (cooperative, cluster) launches through cuLaunchKernelEx, one without through
// cuLaunchKernel: the same rules for kernel.launch() and for the launches the benchmark loop makes (bench.cc).
constexpr size_t kParamBase = 64;
constexpr uint32_t kLaunchCooperative = 1;

struct KernelSlot {
  CUcontext ctx;
  CUfunction fn;
  Napi::Reference<Napi::ArrayBuffer> buffer;  // keeps `data` alive
  uint8_t* data;
  std::vector<void*> params;  // pointers into data, one per kernel parameter
};

struct SlotHeader {
  uint32_t grid[3], block[3], smem;
  uint32_t flags;       // kLaunchCooperative
  uint32_t cluster[3];  // all 0: no cluster
  CUstream stream;
  bool HasAttributes() const { return (flags & kLaunchCooperative) != 0 || cluster[0] != 0; }
};

struct Waiter;  // event.cc

struct Addon {
  Napi::FunctionReference makeError;  // lib/errors.ts: (kind, code, api, result, message, extra) => Error
  std::unordered_map<uintptr_t, Resource> resources;
  std::unordered_map<int, CUcontext> retained;  // device ordinal -> primary context retained by this env
  std::vector<KernelSlot*> slots;               // kernel.cc: index = slot id
  std::vector<uint32_t> freeSlots;
  Waiter* waiter = nullptr;
  bool tornDown = false;
  bool mainThread = false;  // the process's main env, not a worker's
};

Addon& GetAddon(Napi::Env env);

// ---- errors ----
[[noreturn]] void ThrowCuda(Napi::Env env, const char* api, CUresult result, const std::string& extra = "");
[[noreturn]] void ThrowLoader(Napi::Env env, const loader::LibraryStatus& status, const char* api);
[[noreturn]] void ThrowMissing(Napi::Env env, const char* api, const std::string& why);
[[noreturn]] void ThrowNvrtc(Napi::Env env, const char* api, int result, const std::string& log);
Napi::Error MakeCudaError(Napi::Env env, const char* api, CUresult result, const std::string& extra = "");
std::string ErrorName(CUresult r);

// Resolves a driver entry point or throws CUDA_DRIVER_NOT_FOUND / CUDA_DRIVER_TOO_OLD naming the call.
template <typename Fn>
Fn* NeedDriver(Napi::Env env, loader::Entry<Fn>& e) {
  Fn* f = e.fn.load(std::memory_order_acquire);
  if (f != nullptr) return f;
  const auto& st = loader::Driver();
  if (!st.loaded) ThrowLoader(env, st, e.symbol);
  f = e.Get();
  if (f == nullptr) ThrowMissing(env, e.symbol, e.why);
  return f;
}

template <typename Fn>
Fn* NeedNvrtc(Napi::Env env, loader::Entry<Fn>& e) {
  Fn* f = e.fn.load(std::memory_order_acquire);
  if (f != nullptr) return f;
  const auto& st = loader::Nvrtc();
  if (!st.loaded) ThrowLoader(env, st, e.symbol);
  f = e.Get();
  if (f == nullptr) ThrowMissing(env, e.symbol, e.why);
  return f;
}

// Calls a driver entry point and throws CudaError on failure: CU_CALL(env, cuMemAlloc, &ptr, bytes).
#define CU_CALL(env, name, ...)                                                         \
  do {                                                                                  \
    ::cu::CUresult cu_result_ = ::cudakit::NeedDriver(env, ::drv::name)(__VA_ARGS__);   \
    if (cu_result_ != ::cu::CUDA_SUCCESS) ::cudakit::ThrowCuda(env, #name, cu_result_); \
  } while (0)

// For paths that must not throw (cleanup, other threads): the result, or CUDA_ERROR_NOT_FOUND if unresolvable.
#define CU_TRY(name, ...) (::drv::name.Get() != nullptr ? ::drv::name.Get()(__VA_ARGS__) : ::cu::CUDA_ERROR_NOT_FOUND)

// Makes ctx current on the calling thread if it is not already (cheap: cuCtxGetCurrent reads thread-local state).
void BindContext(Napi::Env env, CUcontext ctx);
// Same, without throwing: for threads that are not JS threads.
CUresult TryBindContext(CUcontext ctx);

// ---- arguments (type checks only; lib/ validates meaning) ----
uint64_t ArgU64(const Napi::CallbackInfo& info, size_t i, const char* name);
int64_t ArgI64(const Napi::CallbackInfo& info, size_t i, const char* name);
double ArgNumber(const Napi::CallbackInfo& info, size_t i, const char* name);
uint32_t ArgU32(const Napi::CallbackInfo& info, size_t i, const char* name);
int32_t ArgI32(const Napi::CallbackInfo& info, size_t i, const char* name);
bool ArgBool(const Napi::CallbackInfo& info, size_t i, const char* name);
std::string ArgString(const Napi::CallbackInfo& info, size_t i, const char* name);

// Bytes of an ArrayBuffer, TypedArray, DataView or Buffer.
struct Bytes {
  uint8_t* data;
  size_t length;
};
Bytes ArgBytes(const Napi::CallbackInfo& info, size_t i, const char* name);

template <typename T>
T ArgHandle(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return reinterpret_cast<T>(static_cast<uintptr_t>(ArgU64(info, i, name)));
}

inline Napi::BigInt ToBigInt(Napi::Env env, uint64_t v) { return Napi::BigInt::New(env, v); }
template <typename T>
Napi::BigInt HandleValue(Napi::Env env, T h) {
  return Napi::BigInt::New(env, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h)));
}

// ---- resource bookkeeping ----
void Track(Napi::Env env, uintptr_t key, Kind kind, CUcontext ctx, size_t bytes = 0, void* record = nullptr);
// Returns false when key was not tracked (double free, or a handle this env does not own).
bool Untrack(Napi::Env env, uintptr_t key, Kind kind, Resource* out = nullptr);
void RequireTracked(Napi::Env env, uintptr_t key, Kind kind, const char* what);

// Export helper: exports["name"] = fn.
inline void Export(Napi::Env env, Napi::Object exports, const char* name, Napi::Function::Callback fn) {
  exports.Set(name, Napi::Function::New(env, fn, name));
}

// exports["name"] = fn, a plain N-API callback with `data` (for the hot paths that skip node-addon-api's wrapper).
inline void ExportPlain(Napi::Env env, Napi::Object exports, const char* name, napi_callback fn, void* data) {
  napi_value f = nullptr;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, name, NAPI_AUTO_LENGTH, fn, data, &f));
  exports.Set(name, Napi::Value(env, f));
}

// Per-file init functions, called from addon.cc.
void InitErrors(Napi::Env env, Napi::Object exports);
void InitDevice(Napi::Env env, Napi::Object exports);
void InitMemory(Napi::Env env, Napi::Object exports);
void InitProgram(Napi::Env env, Napi::Object exports);
void InitModule(Napi::Env env, Napi::Object exports);
void InitKernel(Napi::Env env, Napi::Object exports);
void InitStream(Napi::Env env, Napi::Object exports);
void InitEvent(Napi::Env env, Napi::Object exports);
void InitGraph(Napi::Env env, Napi::Object exports);
void InitStaging(Napi::Env env, Napi::Object exports);

// kernel.cc, for bench.cc: a slot id from JS (RangeError when not live), its header, and its launch.
KernelSlot* SlotFromValue(Napi::Env env, Napi::Value v);
SlotHeader ReadHeader(const uint8_t* data);
// Resolves the driver entry point the slot's launch needs, or throws (CUDA_DRIVER_TOO_OLD ...): call it before
// TryLaunchSlot, which does not throw.
void ResolveSlotLaunch(Napi::Env env, const KernelSlot& slot);
// Launches the slot as its header says, on `stream` (the header's own stream for kernel.launch()): cuLaunchKernel,
// or cuLaunchKernelEx with the header's launch attributes. Never throws; *api names the call that was made.
CUresult TryLaunchSlot(const KernelSlot& slot, CUstream stream, const char** api);
void InitBench(Napi::Env env, Napi::Object exports);
void InitCupti(Napi::Env env, Napi::Object exports);

// Teardown pieces, called from the env cleanup hook in addon.cc.
void ReleaseKernelSlots(Addon& addon);
void StopWaiter(Addon& addon);

}  // namespace cudakit
