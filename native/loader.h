// SPDX-License-Identifier: MIT
// Run-time loading of libcuda (dlopen + cuGetProcAddress, each entry resolved on first use) and libnvrtc (dlopen
// from a list of places + dlsym). Nothing here touches N-API: callers turn failures into JS errors.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "cuda_api.h"

namespace loader {

struct LibraryStatus {
  bool loaded = false;
  std::string path;                // what was loaded
  std::string code;                // CUDA_DRIVER_NOT_FOUND, NVRTC_NOT_FOUND, CUDA_INIT_FAILED ...
  std::string message;             // why it failed
  std::vector<std::string> tried;  // every place looked at, in order, with the reason each failed
  int version = 0;                 // cuDriverGetVersion / nvrtcVersion as major*1000 + minor*10
  int initResult = 0;              // cuInit's result when dlopen worked but cuInit failed
};

// Loads libcuda and calls cuInit(0) once per process; later calls return the same status.
const LibraryStatus& Driver();
// Loads libnvrtc (and libnvrtc-builtins beside it) once per process.
const LibraryStatus& Nvrtc();

// Resolves a driver entry point through cuGetProcAddress. Returns nullptr and fills `why` when the driver lacks it.
void* ResolveDriverSymbol(const char* symbol, int cudaVersion, std::string* why);
void* ResolveNvrtcSymbol(const char* symbol);

// One lazily resolved entry point.
template <typename Fn>
struct Entry {
  const char* symbol;
  int version;  // CUDA version for cuGetProcAddress; 0 for an NVRTC symbol (dlsym)
  std::atomic<Fn*> fn{nullptr};
  std::atomic<bool> missing{false};
  std::string why;  // written once, before `missing` is set

  Entry(const char* s, int v) : symbol(s), version(v) {}
  // nullptr when the library is absent or lacks the symbol.
  Fn* Get() {
    Fn* f = fn.load(std::memory_order_acquire);
    if (f != nullptr || missing.load(std::memory_order_acquire)) return f;
    return Resolve();
  }
  Fn* Resolve() {
    std::string reason;
    void* p = version > 0 ? ResolveDriverSymbol(symbol, version, &reason) : ResolveNvrtcSymbol(symbol);
    if (p == nullptr) {
      if (!resolving.exchange(true)) {
        why = version > 0 ? reason : std::string(symbol) + " was not found in " + Nvrtc().path;
        missing.store(true, std::memory_order_release);
      }
      return nullptr;
    }
    Fn* f = reinterpret_cast<Fn*>(p);
    fn.store(f, std::memory_order_release);
    return f;
  }
  std::atomic<bool> resolving{false};
};

}  // namespace loader

namespace drv {
using namespace cu;
#define CUDAKIT_DECLARE_ENTRY(field, sym, ver, sig) extern loader::Entry<sig> field;
CUDAKIT_DRIVER_API(CUDAKIT_DECLARE_ENTRY)
#undef CUDAKIT_DECLARE_ENTRY
}  // namespace drv

namespace nvrtcapi {
#define CUDAKIT_DECLARE_ENTRY(field, optional, sig) extern loader::Entry<sig> field;
CUDAKIT_NVRTC_API(CUDAKIT_DECLARE_ENTRY)
#undef CUDAKIT_DECLARE_ENTRY
}  // namespace nvrtcapi
