// SPDX-License-Identifier: MIT
// Raising errors: every failure becomes an instance of lib/errors.ts's classes, built by the factory that lib/
// registers once (setErrorFactory), so `instanceof CudaError` holds and messages are worded in one place.
#include "common.h"

namespace cudakit {

std::string ErrorName(CUresult r) {
  const char* name = nullptr;
  if (CU_TRY(cuGetErrorName, r, &name) == CUDA_SUCCESS && name != nullptr) return name;
  return "CUDA_ERROR_" + std::to_string(r);
}

static std::string ErrorString(CUresult r) {
  const char* s = nullptr;
  if (CU_TRY(cuGetErrorString, r, &s) == CUDA_SUCCESS && s != nullptr) return s;
  return "";
}

static Napi::Error Build(Napi::Env env, const char* kind, const std::string& code, const char* api, double result,
                         const std::string& message, Napi::Value extra) {
  Addon& addon = GetAddon(env);
  if (!addon.makeError.IsEmpty()) {
    Napi::Value e =
        addon.makeError.Call({Napi::String::New(env, kind), Napi::String::New(env, code), Napi::String::New(env, api),
                              Napi::Number::New(env, result), Napi::String::New(env, message), extra});
    return Napi::Error(env, e);
  }
  // The raw layer used before lib/ registered its factory: still a coded error.
  Napi::Error err = Napi::Error::New(env, std::string(api) + " failed: " + code + ": " + message);
  err.Value().Set("code", code);
  err.Value().Set("api", api);
  err.Value().Set("result", result);
  return err;
}

Napi::Error MakeCudaError(Napi::Env env, const char* api, CUresult result, const std::string& extra) {
  return Build(env, "cuda", ErrorName(result), api, result, ErrorString(result),
               extra.empty() ? env.Undefined() : Napi::String::New(env, extra));
}

void ThrowCuda(Napi::Env env, const char* api, CUresult result, const std::string& extra) {
  throw MakeCudaError(env, api, result, extra);
}

void ThrowLoader(Napi::Env env, const loader::LibraryStatus& st, const char* api) {
  if (st.code == "CUDA_INIT_FAILED") ThrowCuda(env, "cuInit", st.initResult);
  Napi::Array tried = Napi::Array::New(env, st.tried.size());
  for (size_t i = 0; i < st.tried.size(); i++) tried.Set(static_cast<uint32_t>(i), st.tried[i]);
  throw Build(env, "loader", st.code, api, -1, st.message, tried);
}

void ThrowMissing(Napi::Env env, const char* api, const std::string& why) {
  throw Build(env, "loader", "CUDA_DRIVER_TOO_OLD", api, -1, why.empty() ? std::string(api) + " is unavailable" : why,
              env.Undefined());
}

void ThrowNvrtc(Napi::Env env, const char* api, int result, const std::string& log) {
  const char* s = nullptr;
  if (auto* f = nvrtcapi::nvrtcGetErrorString.Get()) s = f(result);
  std::string name = s != nullptr ? s : "NVRTC_ERROR_" + std::to_string(result);
  throw Build(env, "nvrtc", name, api, result, name, Napi::String::New(env, log));
}

// setErrorFactory(fn): lib/errors.ts registers how errors are built.
static Napi::Value SetErrorFactory(const Napi::CallbackInfo& info) {
  if (!info[0].IsFunction()) throw Napi::TypeError::New(info.Env(), "setErrorFactory expects a function");
  Addon& addon = GetAddon(info.Env());
  addon.makeError = Napi::Persistent(info[0].As<Napi::Function>());
  return info.Env().Undefined();
}

static Napi::Object StatusObject(Napi::Env env, const loader::LibraryStatus& st) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("loaded", st.loaded);
  o.Set("path", st.path);
  o.Set("code", st.code);
  o.Set("message", st.message);
  o.Set("version", st.version);
  o.Set("initResult", st.initResult);
  if (st.initResult != 0) o.Set("initError", ErrorName(st.initResult));
  Napi::Array tried = Napi::Array::New(env, st.tried.size());
  for (size_t i = 0; i < st.tried.size(); i++) tried.Set(static_cast<uint32_t>(i), st.tried[i]);
  o.Set("tried", tried);
  return o;
}

// driverStatus() / nvrtcStatus(): load (once) and report; never throw.
static Napi::Value DriverStatus(const Napi::CallbackInfo& info) { return StatusObject(info.Env(), loader::Driver()); }
static Napi::Value NvrtcStatus(const Napi::CallbackInfo& info) { return StatusObject(info.Env(), loader::Nvrtc()); }

// getErrorName(result) / getErrorString(result): cuGetErrorName / cuGetErrorString.
static Napi::Value GetErrorName(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), ErrorName(ArgI32(info, 0, "result")));
}
static Napi::Value GetErrorString(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), ErrorString(ArgI32(info, 0, "result")));
}

void InitErrors(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "setErrorFactory", SetErrorFactory);
  Export(env, exports, "driverStatus", DriverStatus);
  Export(env, exports, "nvrtcStatus", NvrtcStatus);
  Export(env, exports, "getErrorName", GetErrorName);
  Export(env, exports, "getErrorString", GetErrorString);
}

}  // namespace cudakit
