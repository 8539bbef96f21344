// SPDX-License-Identifier: MIT
// Modules and functions: cuModuleLoadDataEx, cuModuleGetFunction/Global, cuFuncGet/SetAttribute,
// cuFuncGetParamInfo, occupancy queries.
#include <cstring>
#include <memory>

#include "common.h"

namespace cudakit {

// cuModuleLoadDataEx(ctx, image, jitOptions: [option, value][]) -> [module, infoLog]
// A failed load throws CudaError whose extra text is the JIT error log (PTX errors).
static Napi::Value ModuleLoadData(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  Bytes image = ArgBytes(info, 1, "image");
  // PTX must be NUL-terminated: text is copied with a NUL appended. CUBIN (ELF) and fatbin images carry their own
  // sizes and are passed as they are.
  static const uint8_t kElf[4] = {0x7f, 'E', 'L', 'F'};
  static const uint8_t kFatbin[4] = {0x50, 0xed, 0x55, 0xba};
  bool binary =
      image.length >= 4 && (std::memcmp(image.data, kElf, 4) == 0 || std::memcmp(image.data, kFatbin, 4) == 0);
  std::vector<char> text;
  if (!binary) {
    text.assign(image.data, image.data + image.length);
    text.push_back('\0');
  }
  const void* data = binary ? static_cast<const void*>(image.data) : text.data();

  constexpr size_t kLogBytes = 16384;
  std::unique_ptr<char[]> infoLog(new char[kLogBytes]);
  std::unique_ptr<char[]> errorLog(new char[kLogBytes]);
  infoLog[0] = errorLog[0] = '\0';  // the JIT writes NUL-terminated text, if any
  std::vector<int> options = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  std::vector<void*> values = {infoLog.get(), reinterpret_cast<void*>(kLogBytes), errorLog.get(),
                               reinterpret_cast<void*>(kLogBytes)};
  if (info.Length() > 2 && info[2].IsArray()) {
    auto pairs = info[2].As<Napi::Array>();
    for (uint32_t i = 0; i < pairs.Length(); i++) {
      Napi::Value pair = pairs.Get(i);
      if (!pair.IsArray() || pair.As<Napi::Array>().Length() != 2) {
        throw Napi::TypeError::New(env, "jitOptions must be [option, value] pairs");
      }
      auto p = pair.As<Napi::Array>();
      if (!p.Get(0u).IsNumber() || !p.Get(1u).IsNumber()) {
        throw Napi::TypeError::New(env, "jitOptions must be [option, value] pairs of numbers");
      }
      options.push_back(p.Get(0u).As<Napi::Number>().Int32Value());
      values.push_back(reinterpret_cast<void*>(static_cast<uintptr_t>(p.Get(1u).As<Napi::Number>().Int64Value())));
    }
  }
  BindContext(env, ctx);
  CUmodule m = nullptr;
  CUresult r = NeedDriver(env, drv::cuModuleLoadDataEx)(&m, data, static_cast<unsigned>(options.size()), options.data(),
                                                        values.data());
  if (r != CUDA_SUCCESS)
    ThrowCuda(env, "cuModuleLoadDataEx", r, std::string(errorLog.get(), strnlen(errorLog.get(), kLogBytes)));
  Track(env, reinterpret_cast<uintptr_t>(m), Kind::Module, ctx);
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, HandleValue(env, m));
  out.Set(1u, Napi::String::New(env, infoLog.get(), strnlen(infoLog.get(), kLogBytes)));
  return out;
}

// cuModuleUnload(module)
static Napi::Value ModuleUnload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto m = ArgHandle<CUmodule>(info, 0, "module");
  Resource r{};
  if (!Untrack(env, reinterpret_cast<uintptr_t>(m), Kind::Module, &r)) {
    throw Napi::Error::New(env, "moduleUnload: not a live module");
  }
  BindContext(env, r.ctx);
  CU_CALL(env, cuModuleUnload, m);
  return env.Undefined();
}

// cuModuleGetFunction(ctx, module, name) -> function
static Napi::Value ModuleGetFunction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  auto m = ArgHandle<CUmodule>(info, 1, "module");
  RequireTracked(env, reinterpret_cast<uintptr_t>(m), Kind::Module, "module");
  CUfunction f = nullptr;
  std::string name = ArgString(info, 2, "name");
  CU_CALL(env, cuModuleGetFunction, &f, m, name.c_str());
  return HandleValue(env, f);
}

// cuModuleGetGlobal(ctx, module, name) -> [ptr, bytes]
static Napi::Value ModuleGetGlobal(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  auto m = ArgHandle<CUmodule>(info, 1, "module");
  RequireTracked(env, reinterpret_cast<uintptr_t>(m), Kind::Module, "module");
  std::string name = ArgString(info, 2, "name");
  CUdeviceptr p = 0;
  size_t bytes = 0;
  CU_CALL(env, cuModuleGetGlobal, &p, &bytes, m, name.c_str());
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, ToBigInt(env, p));
  out.Set(1u, Napi::Number::New(env, static_cast<double>(bytes)));
  return out;
}

// cuFuncGetAttribute(ctx, function, attribute)
static Napi::Value FuncGetAttribute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  int v = 0;
  CU_CALL(env, cuFuncGetAttribute, &v, ArgI32(info, 2, "attribute"), ArgHandle<CUfunction>(info, 1, "function"));
  return Napi::Number::New(env, v);
}

// cuFuncSetAttribute(ctx, function, attribute, value)
static Napi::Value FuncSetAttribute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuFuncSetAttribute, ArgHandle<CUfunction>(info, 1, "function"), ArgI32(info, 2, "attribute"),
          ArgI32(info, 3, "value"));
  return env.Undefined();
}

// cuFuncGetParamInfo(ctx, function, count) -> [offset, size][] for parameters 0..count-1, or null where the driver
// lacks the call (CUDA < 12.4). count < 0: probe until the driver says there are no more (an API error by design).
static Napi::Value FuncGetParamInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  auto f = ArgHandle<CUfunction>(info, 1, "function");
  int32_t count = ArgI32(info, 2, "count");
  auto* get = drv::cuFuncGetParamInfo.Get();
  if (get == nullptr) return env.Null();
  Napi::Array out = Napi::Array::New(env);
  for (size_t i = 0; count < 0 || i < static_cast<size_t>(count); i++) {
    size_t offset = 0, size = 0;
    CUresult r = get(f, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
    if (r == CUDA_ERROR_NOT_SUPPORTED) return env.Null();
    if (r != CUDA_SUCCESS) ThrowCuda(env, "cuFuncGetParamInfo", r);
    Napi::Array pair = Napi::Array::New(env, 2);
    pair.Set(0u, static_cast<double>(offset));
    pair.Set(1u, static_cast<double>(size));
    out.Set(static_cast<uint32_t>(i), pair);
  }
  return out;
}

// cuOccupancyMaxActiveBlocksPerMultiprocessor(ctx, function, blockSize, dynamicSmemBytes)
static Napi::Value OccupancyMaxActiveBlocks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  int n = 0;
  CU_CALL(env, cuOccupancyMaxActiveBlocksPerMultiprocessor, &n, ArgHandle<CUfunction>(info, 1, "function"),
          ArgI32(info, 2, "blockSize"), static_cast<size_t>(ArgU64(info, 3, "dynamicSmemBytes")));
  return Napi::Number::New(env, n);
}

// cuOccupancyMaxPotentialBlockSize(ctx, function, dynamicSmemBytes, blockSizeLimit) -> [minGridSize, blockSize]
static Napi::Value OccupancyMaxPotentialBlockSize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  int minGrid = 0, block = 0;
  CU_CALL(env, cuOccupancyMaxPotentialBlockSize, &minGrid, &block, ArgHandle<CUfunction>(info, 1, "function"), nullptr,
          static_cast<size_t>(ArgU64(info, 2, "dynamicSmemBytes")), ArgI32(info, 3, "blockSizeLimit"));
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, minGrid);
  out.Set(1u, block);
  return out;
}

void InitModule(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "moduleLoadData", ModuleLoadData);
  Export(env, exports, "moduleUnload", ModuleUnload);
  Export(env, exports, "moduleGetFunction", ModuleGetFunction);
  Export(env, exports, "moduleGetGlobal", ModuleGetGlobal);
  Export(env, exports, "funcGetAttribute", FuncGetAttribute);
  Export(env, exports, "funcSetAttribute", FuncSetAttribute);
  Export(env, exports, "funcGetParamInfo", FuncGetParamInfo);
  Export(env, exports, "occupancyMaxActiveBlocksPerMultiprocessor", OccupancyMaxActiveBlocks);
  Export(env, exports, "occupancyMaxPotentialBlockSize", OccupancyMaxPotentialBlockSize);
}

}  // namespace cudakit
