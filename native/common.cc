// SPDX-License-Identifier: MIT
#include "common.h"

#include <cmath>

namespace cudakit {

Addon& GetAddon(Napi::Env env) { return *env.GetInstanceData<Addon>(); }

void BindContext(Napi::Env env, CUcontext ctx) {
  CUcontext current = nullptr;
  CU_CALL(env, cuCtxGetCurrent, &current);
  if (current != ctx) CU_CALL(env, cuCtxSetCurrent, ctx);
}

CUresult TryBindContext(CUcontext ctx) {
  CUcontext current = nullptr;
  CUresult r = CU_TRY(cuCtxGetCurrent, &current);
  if (r != CUDA_SUCCESS) return r;
  return current == ctx ? CUDA_SUCCESS : CU_TRY(cuCtxSetCurrent, ctx);
}

static std::string Received(const Napi::Value& v) {
  switch (v.Type()) {
    case napi_undefined:
      return "undefined";
    case napi_null:
      return "null";
    case napi_boolean:
      return "a boolean";
    case napi_number:
      return "a number";
    case napi_string:
      return "a string";
    case napi_bigint:
      return "a bigint";
    case napi_function:
      return "a function";
    default:
      return "an object";
  }
}

[[noreturn]] static void BadArg(const Napi::CallbackInfo& info, size_t i, const char* name, const char* expected) {
  throw Napi::TypeError::New(
      info.Env(), std::string("Expected ") + expected + " for " + name + " but received " + Received(info[i]));
}

uint64_t ArgU64(const Napi::CallbackInfo& info, size_t i, const char* name) {
  Napi::Value v = info[i];
  if (v.IsBigInt()) {
    bool lossless = false;
    uint64_t r = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) throw Napi::RangeError::New(info.Env(), std::string(name) + " does not fit in 64 unsigned bits");
    return r;
  }
  if (v.IsNumber()) {
    double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= 0 && d <= 9007199254740991.0 && std::floor(d) == d)) {
      throw Napi::RangeError::New(info.Env(), std::string(name) + " must be a non-negative safe integer");
    }
    return static_cast<uint64_t>(d);
  }
  BadArg(info, i, name, "a bigint or a non-negative integer");
}

int64_t ArgI64(const Napi::CallbackInfo& info, size_t i, const char* name) {
  Napi::Value v = info[i];
  if (v.IsBigInt()) {
    bool lossless = false;
    int64_t r = v.As<Napi::BigInt>().Int64Value(&lossless);
    if (!lossless) throw Napi::RangeError::New(info.Env(), std::string(name) + " does not fit in 64 signed bits");
    return r;
  }
  if (v.IsNumber()) {
    double d = v.As<Napi::Number>().DoubleValue();
    if (!(std::fabs(d) <= 9007199254740991.0 && std::floor(d) == d)) {
      throw Napi::RangeError::New(info.Env(), std::string(name) + " must be a safe integer");
    }
    return static_cast<int64_t>(d);
  }
  BadArg(info, i, name, "a bigint or an integer");
}

double ArgNumber(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (!info[i].IsNumber()) BadArg(info, i, name, "a number");
  return info[i].As<Napi::Number>().DoubleValue();
}

uint32_t ArgU32(const Napi::CallbackInfo& info, size_t i, const char* name) {
  double d = ArgNumber(info, i, name);
  if (!(d >= 0 && d <= 4294967295.0 && std::floor(d) == d)) {
    throw Napi::RangeError::New(info.Env(), std::string(name) + " must be an integer in [0, 2^32)");
  }
  return static_cast<uint32_t>(d);
}

int32_t ArgI32(const Napi::CallbackInfo& info, size_t i, const char* name) {
  double d = ArgNumber(info, i, name);
  if (!(d >= -2147483648.0 && d <= 2147483647.0 && std::floor(d) == d)) {
    throw Napi::RangeError::New(info.Env(), std::string(name) + " must be a 32-bit integer");
  }
  return static_cast<int32_t>(d);
}

bool ArgBool(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (!info[i].IsBoolean()) BadArg(info, i, name, "a boolean");
  return info[i].As<Napi::Boolean>().Value();
}

std::string ArgString(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (!info[i].IsString()) BadArg(info, i, name, "a string");
  return info[i].As<Napi::String>().Utf8Value();
}

Bytes ArgBytes(const Napi::CallbackInfo& info, size_t i, const char* name) {
  Napi::Value v = info[i];
  if (v.IsArrayBuffer()) {
    auto ab = v.As<Napi::ArrayBuffer>();
    return {static_cast<uint8_t*>(ab.Data()), ab.ByteLength()};
  }
  if (v.IsTypedArray()) {
    auto ta = v.As<Napi::TypedArray>();
    auto ab = ta.ArrayBuffer();
    return {static_cast<uint8_t*>(ab.Data()) + ta.ByteOffset(), ta.ByteLength()};
  }
  if (v.IsDataView()) {
    auto dv = v.As<Napi::DataView>();
    return {static_cast<uint8_t*>(dv.Data()), dv.ByteLength()};
  }
  BadArg(info, i, name, "an ArrayBuffer, TypedArray or DataView");
}

void Track(Napi::Env env, uintptr_t key, Kind kind, CUcontext ctx, size_t bytes, void* record) {
  GetAddon(env).resources[key] = Resource{kind, ctx, bytes, record};
  // V8 only collects forgotten wrappers sooner if it knows what they hold.
  if (bytes > 0) Napi::MemoryManagement::AdjustExternalMemory(env, static_cast<int64_t>(bytes));
}

bool Untrack(Napi::Env env, uintptr_t key, Kind kind, Resource* out) {
  auto& map = GetAddon(env).resources;
  auto it = map.find(key);
  if (it == map.end() || it->second.kind != kind) return false;
  if (out != nullptr) *out = it->second;
  if (it->second.bytes > 0) {
    Napi::MemoryManagement::AdjustExternalMemory(env, -static_cast<int64_t>(it->second.bytes));
  }
  map.erase(it);
  return true;
}

void RequireTracked(Napi::Env env, uintptr_t key, Kind kind, const char* what) {
  auto& map = GetAddon(env).resources;
  auto it = map.find(key);
  if (it == map.end() || it->second.kind != kind) {
    throw Napi::Error::New(env, std::string(what) + " is not a live handle owned by this thread's cudakit");
  }
}

}  // namespace cudakit
