// SPDX-License-Identifier: MIT
#include "loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "cuda_api.h"

namespace drv {
#define CUDAKIT_DEFINE_ENTRY(field, sym, ver, sig) loader::Entry<sig> field{sym, ver};
CUDAKIT_DRIVER_API(CUDAKIT_DEFINE_ENTRY)
#undef CUDAKIT_DEFINE_ENTRY
}  // namespace drv

namespace nvrtcapi {
#define CUDAKIT_DEFINE_ENTRY(field, optional, sig) loader::Entry<sig> field{#field, 0};
CUDAKIT_NVRTC_API(CUDAKIT_DEFINE_ENTRY)
#undef CUDAKIT_DEFINE_ENTRY
}  // namespace nvrtcapi

namespace loader {
namespace {

using GetProcAddressV2 = cu::CUresult(const char*, void**, int, cu::cuuint64_t, int*);
using GetProcAddressV1 = cu::CUresult(const char*, void**, int, cu::cuuint64_t);

void* g_cuda = nullptr;
void* g_nvrtc = nullptr;
GetProcAddressV2* g_getProcV2 = nullptr;
GetProcAddressV1* g_getProcV1 = nullptr;
LibraryStatus g_driver;
LibraryStatus g_nvrtcStatus;
std::once_flag g_driverOnce;
std::once_flag g_nvrtcOnce;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::string DlError() {
  const char* e = dlerror();
  return e != nullptr ? std::string(e) : std::string("unknown error");
}

// The file a handle was loaded from (for messages and to find libnvrtc-builtins beside libnvrtc).
std::string PathOf(void* handle, const char* fallback) {
  struct link_map* map = nullptr;
  if (handle != nullptr && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

void* TryOpen(const std::string& name, int flags, LibraryStatus* st) {
  void* h = dlopen(name.c_str(), flags);
  if (h == nullptr) st->tried.push_back(name + ": " + DlError());
  return h;
}

void LoadDriver() {
  LibraryStatus& st = g_driver;
  std::string override = Env("CUDAKIT_LIBCUDA_PATH");
  std::vector<std::string> names;
  if (!override.empty()) {
    names.push_back(override);  // an explicit choice is not second-guessed
  } else {
    names = {"libcuda.so.1", "libcuda.so"};
  }
  for (const auto& n : names) {
    g_cuda = TryOpen(n, RTLD_NOW | RTLD_LOCAL, &st);
    if (g_cuda != nullptr) {
      st.path = PathOf(g_cuda, n.c_str());
      break;
    }
  }
  if (g_cuda == nullptr) {
    st.code = "CUDA_DRIVER_NOT_FOUND";
    st.message = "The NVIDIA driver library (libcuda.so.1) could not be loaded.";
    return;
  }
  g_getProcV2 = reinterpret_cast<GetProcAddressV2*>(dlsym(g_cuda, "cuGetProcAddress_v2"));
  if (g_getProcV2 == nullptr) g_getProcV1 = reinterpret_cast<GetProcAddressV1*>(dlsym(g_cuda, "cuGetProcAddress"));
  if (g_getProcV2 == nullptr && g_getProcV1 == nullptr) {
    st.code = "CUDA_DRIVER_TOO_OLD";
    st.message = st.path + " has no cuGetProcAddress: the driver predates CUDA 11.3.";
    return;
  }
  auto* init = drv::cuInit.Get();
  auto* version = drv::cuDriverGetVersion.Get();
  if (init == nullptr || version == nullptr) {
    st.code = "CUDA_DRIVER_TOO_OLD";
    st.message = "cuInit could not be resolved from " + st.path;
    return;
  }
  int v = 0;
  version(&v);
  st.version = v;
  cu::CUresult r = init(0);
  if (r != cu::CUDA_SUCCESS) {
    st.initResult = r;
    st.code = "CUDA_INIT_FAILED";
    st.message = "cuInit(0) failed with CUDA error " + std::to_string(r);
    return;
  }
  st.loaded = true;
}

void LoadBuiltinsBeside(const std::string& nvrtcPath, int major, int minor) {
  auto slash = nvrtcPath.rfind('/');
  if (slash == std::string::npos) return;
  std::string dir = nvrtcPath.substr(0, slash + 1);
  // NVRTC dlopens its builtins by soname; having them loaded already makes that succeed outside the loader path.
  const std::string candidates[] = {
      dir + "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor),
      dir + "libnvrtc-builtins.so." + std::to_string(major),
      dir + "libnvrtc-builtins.so",
  };
  for (const auto& c : candidates) {
    if (dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr) return;
    dlerror();
  }
}

void LoadNvrtc() {
  LibraryStatus& st = g_nvrtcStatus;
  const char* sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};
  std::string override = Env("CUDAKIT_NVRTC_PATH");
  if (!override.empty()) g_nvrtc = TryOpen(override, RTLD_NOW | RTLD_LOCAL, &st);
  if (g_nvrtc == nullptr && override.empty()) {
    for (const char* n : sonames) {  // one the process already has (e.g. loaded by another library)
      g_nvrtc = dlopen(n, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
      if (g_nvrtc != nullptr) break;
    }
    dlerror();
    for (const char* n : sonames) {
      if (g_nvrtc != nullptr) break;
      g_nvrtc = TryOpen(n, RTLD_NOW | RTLD_LOCAL, &st);
    }
    std::vector<std::string> dirs;
    for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
      std::string root = Env(var);
      if (!root.empty()) {
        dirs.push_back(root + "/lib64");
        dirs.push_back(root + "/lib");
      }
    }
    dirs.push_back("/usr/local/cuda/lib64");
    dirs.push_back("/usr/local/cuda/targets/x86_64-linux/lib");
    for (const auto& d : dirs) {
      for (const char* n : sonames) {
        if (g_nvrtc != nullptr) break;
        g_nvrtc = TryOpen(d + "/" + n, RTLD_NOW | RTLD_LOCAL, &st);
      }
    }
  }
  if (g_nvrtc == nullptr) {
    st.code = "NVRTC_NOT_FOUND";
    st.message = "The NVRTC library (libnvrtc) could not be loaded.";
    return;
  }
  st.path = PathOf(g_nvrtc, override.empty() ? "libnvrtc" : override.c_str());
  auto* version = reinterpret_cast<nvrtc::nvrtcResult (*)(int*, int*)>(dlsym(g_nvrtc, "nvrtcVersion"));
  if (version == nullptr) {
    st.code = "NVRTC_NOT_FOUND";
    st.message = st.path + " is not an NVRTC library (no nvrtcVersion)";
    g_nvrtc = nullptr;
    return;
  }
  int major = 0, minor = 0;
  version(&major, &minor);
  st.version = major * 1000 + minor * 10;
  LoadBuiltinsBeside(st.path, major, minor);
  st.loaded = true;
}

}  // namespace

const LibraryStatus& Driver() {
  std::call_once(g_driverOnce, LoadDriver);
  return g_driver;
}

const LibraryStatus& Nvrtc() {
  std::call_once(g_nvrtcOnce, LoadNvrtc);
  return g_nvrtcStatus;
}

void* ResolveDriverSymbol(const char* symbol, int cudaVersion, std::string* why) {
  // LoadDriver resolves cuInit through here after setting g_cuda, so Driver() is never re-entered.
  if (g_cuda == nullptr) Driver();
  if (g_getProcV2 == nullptr && g_getProcV1 == nullptr) {
    *why = g_driver.message;
    return nullptr;
  }
  void* fn = nullptr;
  int status = cu::CU_GET_PROC_ADDRESS_SUCCESS;
  // Exactly the version whose ABI cuda_api.h declares: a newer version can change a call's parameters (CUDA 13's
  // cuCtxSynchronize takes a context), so "the newest the driver has" is not safe.
  const int requested = cudaVersion;
  cu::CUresult r = g_getProcV2 != nullptr
                       ? g_getProcV2(symbol, &fn, requested, cu::CU_GET_PROC_ADDRESS_DEFAULT, &status)
                       : g_getProcV1(symbol, &fn, requested, cu::CU_GET_PROC_ADDRESS_DEFAULT);
  if (r != cu::CUDA_SUCCESS || fn == nullptr) {
    int have = g_driver.version;
    *why = std::string(symbol) + " needs a driver for CUDA " + std::to_string(cudaVersion / 1000) + "." +
           std::to_string((cudaVersion % 1000) / 10) + " or newer; this driver supports CUDA " +
           std::to_string(have / 1000) + "." + std::to_string((have % 1000) / 10) +
           (status == cu::CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? " (the symbol exists in a newer version only)"
                                                                     : "");
    return nullptr;
  }
  return fn;
}

void* ResolveNvrtcSymbol(const char* symbol) {
  if (!Nvrtc().loaded) return nullptr;
  return dlsym(g_nvrtc, symbol);
}

}  // namespace loader
