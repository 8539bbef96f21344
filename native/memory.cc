// SPDX-License-Identifier: MIT
// Device and pinned host memory: cuMemAlloc*, cuMemFree*, cuMemcpy* (cuMemcpyPeer* between devices), cuMemset*,
// cuMemHostAlloc/Register; and tensor maps of device memory (cuTensorMapEncodeTiled).
#include <cmath>
#include <cstring>

#include "common.h"

namespace cudakit {

// cuMemAlloc(ctx, bytes) -> ptr
static Napi::Value MemAlloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  size_t bytes = ArgU64(info, 1, "bytes");
  BindContext(env, ctx);
  CUdeviceptr p = 0;
  CU_CALL(env, cuMemAlloc, &p, bytes);
  Track(env, p, Kind::DeviceMemory, ctx, bytes);
  return ToBigInt(env, p);
}

// cuMemAllocAsync(ctx, bytes, stream) -> ptr
static Napi::Value MemAllocAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  size_t bytes = ArgU64(info, 1, "bytes");
  CUstream s = ArgHandle<CUstream>(info, 2, "stream");
  BindContext(env, ctx);
  CUdeviceptr p = 0;
  CU_CALL(env, cuMemAllocAsync, &p, bytes, s);
  Track(env, p, Kind::DeviceMemory, ctx, bytes);
  return ToBigInt(env, p);
}

// cuMemFree(ptr). Only memory this env allocated; a second free is an error, never a crash.
static Napi::Value MemFree(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUdeviceptr p = ArgU64(info, 0, "ptr");
  RequireTracked(env, p, Kind::DeviceMemory, "ptr");
  Resource r{};
  Untrack(env, p, Kind::DeviceMemory, &r);
  BindContext(env, r.ctx);
  CU_CALL(env, cuMemFree, p);
  return env.Undefined();
}

// cuMemFreeAsync(ptr, stream)
static Napi::Value MemFreeAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUdeviceptr p = ArgU64(info, 0, "ptr");
  CUstream s = ArgHandle<CUstream>(info, 1, "stream");
  RequireTracked(env, p, Kind::DeviceMemory, "ptr");
  Resource r{};
  Untrack(env, p, Kind::DeviceMemory, &r);
  BindContext(env, r.ctx);
  CU_CALL(env, cuMemFreeAsync, p, s);
  return env.Undefined();
}

// cuMemcpyHtoD(ctx, dst, srcView) / cuMemcpyHtoDAsync(ctx, dst, srcView, stream)
static Napi::Value MemcpyHtoD(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CUdeviceptr dst = ArgU64(info, 1, "dst");
  Bytes src = ArgBytes(info, 2, "src");
  if (info.Length() > 3) {
    CU_CALL(env, cuMemcpyHtoDAsync, dst, src.data, src.length, ArgHandle<CUstream>(info, 3, "stream"));
  } else {
    CU_CALL(env, cuMemcpyHtoD, dst, src.data, src.length);
  }
  return env.Undefined();
}

// cuMemcpyDtoH(ctx, dstView, src) / cuMemcpyDtoHAsync(ctx, dstView, src, stream)
static Napi::Value MemcpyDtoH(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  Bytes dst = ArgBytes(info, 1, "dst");
  CUdeviceptr src = ArgU64(info, 2, "src");
  if (info.Length() > 3) {
    CU_CALL(env, cuMemcpyDtoHAsync, dst.data, src, dst.length, ArgHandle<CUstream>(info, 3, "stream"));
  } else {
    CU_CALL(env, cuMemcpyDtoH, dst.data, src, dst.length);
  }
  return env.Undefined();
}

// cuMemcpyDtoD(ctx, dst, src, bytes) / cuMemcpyDtoDAsync(ctx, dst, src, bytes, stream)
static Napi::Value MemcpyDtoD(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CUdeviceptr dst = ArgU64(info, 1, "dst");
  CUdeviceptr src = ArgU64(info, 2, "src");
  size_t bytes = ArgU64(info, 3, "bytes");
  if (info.Length() > 4) {
    CU_CALL(env, cuMemcpyDtoDAsync, dst, src, bytes, ArgHandle<CUstream>(info, 4, "stream"));
  } else {
    CU_CALL(env, cuMemcpyDtoD, dst, src, bytes);
  }
  return env.Undefined();
}

// cuMemcpyPeer(dstCtx, dst, srcCtx, src, bytes) / cuMemcpyPeerAsync(dstCtx, dst, srcCtx, src, bytes, stream):
// between the memory of two contexts (two devices); dstCtx is bound first, and `stream` belongs to it.
static Napi::Value MemcpyPeer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext dstCtx = ArgHandle<CUcontext>(info, 0, "dstCtx");
  CUdeviceptr dst = ArgU64(info, 1, "dst");
  CUcontext srcCtx = ArgHandle<CUcontext>(info, 2, "srcCtx");
  CUdeviceptr src = ArgU64(info, 3, "src");
  size_t bytes = ArgU64(info, 4, "bytes");
  BindContext(env, dstCtx);
  if (info.Length() > 5) {
    CU_CALL(env, cuMemcpyPeerAsync, dst, dstCtx, src, srcCtx, bytes, ArgHandle<CUstream>(info, 5, "stream"));
  } else {
    CU_CALL(env, cuMemcpyPeer, dst, dstCtx, src, srcCtx, bytes);
  }
  return env.Undefined();
}

// cuMemsetD{8,16,32}Async(ctx, dst, value, count, stream, elementBytes)
static Napi::Value MemsetAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CUdeviceptr dst = ArgU64(info, 1, "dst");
  uint32_t value = ArgU32(info, 2, "value");
  size_t count = ArgU64(info, 3, "count");
  CUstream s = ArgHandle<CUstream>(info, 4, "stream");
  switch (ArgU32(info, 5, "elementBytes")) {
    case 1:
      CU_CALL(env, cuMemsetD8Async, dst, static_cast<unsigned char>(value), count, s);
      break;
    case 2:
      CU_CALL(env, cuMemsetD16Async, dst, static_cast<unsigned short>(value), count, s);
      break;
    case 4:
      CU_CALL(env, cuMemsetD32Async, dst, value, count, s);
      break;
    default:
      throw Napi::RangeError::New(env, "elementBytes must be 1, 2 or 4");
  }
  return env.Undefined();
}

static void FreeHostAlloc(Napi::Env env, HostAlloc* h) {
  if (h->freed) return;
  h->freed = true;
  Untrack(env, reinterpret_cast<uintptr_t>(h->ptr), Kind::HostMemory);
  if (TryBindContext(h->ctx) == CUDA_SUCCESS) CU_TRY(cuMemFreeHost, h->ptr);
}

// cuMemHostAlloc(ctx, bytes, flags) -> ArrayBuffer over page-locked memory
static Napi::Value MemHostAlloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  size_t bytes = ArgU64(info, 1, "bytes");
  unsigned flags = ArgU32(info, 2, "flags");
  BindContext(env, ctx);
  void* p = nullptr;
  CU_CALL(env, cuMemHostAlloc, &p, bytes == 0 ? 1 : bytes, flags);
  auto* h = new HostAlloc{p, ctx, false};
  Track(env, reinterpret_cast<uintptr_t>(p), Kind::HostMemory, ctx, bytes, h);
  return Napi::ArrayBuffer::New(
      env, p, bytes,
      [](Napi::Env e, void*, HostAlloc* hint) {
        FreeHostAlloc(e, hint);
        delete hint;
      },
      h);
}

// cuMemFreeHost(arrayBuffer): detaches the ArrayBuffer first so no view can reach freed memory.
static Napi::Value MemFreeHost(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArrayBuffer()) throw Napi::TypeError::New(env, "memFreeHost expects the ArrayBuffer of memHostAlloc");
  auto ab = info[0].As<Napi::ArrayBuffer>();
  if (ab.IsDetached()) return env.Undefined();
  void* p = ab.Data();
  auto& map = GetAddon(env).resources;
  auto it = map.find(reinterpret_cast<uintptr_t>(p));
  if (it == map.end() || it->second.kind != Kind::HostMemory) {
    throw Napi::Error::New(env, "memFreeHost: this ArrayBuffer was not allocated by memHostAlloc");
  }
  CUcontext ctx = it->second.ctx;
  static_cast<HostAlloc*>(it->second.record)->freed = true;  // the finalizer may run inside Detach()
  Untrack(env, reinterpret_cast<uintptr_t>(p), Kind::HostMemory);
  ab.Detach();
  BindContext(env, ctx);
  CU_CALL(env, cuMemFreeHost, p);
  return env.Undefined();
}

// cuMemHostRegister(ctx, view) / cuMemHostUnregister(ctx, view): pins memory JS already owns.
static Napi::Value MemHostRegister(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  Bytes b = ArgBytes(info, 1, "view");
  BindContext(env, ctx);
  CU_CALL(env, cuMemHostRegister, b.data, b.length, CU_MEMHOSTREGISTER_PORTABLE);
  Track(env, reinterpret_cast<uintptr_t>(b.data), Kind::HostRegistration, ctx);
  return env.Undefined();
}

static Napi::Value MemHostUnregister(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes b = ArgBytes(info, 1, "view");
  Resource r{};
  if (!Untrack(env, reinterpret_cast<uintptr_t>(b.data), Kind::HostRegistration, &r)) {
    throw Napi::Error::New(env, "memHostUnregister: this memory is not registered");
  }
  BindContext(env, r.ctx);
  CU_CALL(env, cuMemHostUnregister, b.data);
  return env.Undefined();
}

// cuMemHostGetDevicePointer(ctx, arrayBuffer) -> the device address of memHostAlloc(..., DEVICEMAP) memory
static Napi::Value MemHostGetDevicePointer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  Bytes b = ArgBytes(info, 1, "buffer");
  CUdeviceptr p = 0;
  CU_CALL(env, cuMemHostGetDevicePointer, &p, b.data, 0u);
  return ToBigInt(env, p);
}

// An array argument of at most `max` unsigned integers (numbers or bigints), each at most `limit`.
static std::vector<uint64_t> ArgU64Array(const Napi::CallbackInfo& info, size_t i, const char* name, size_t max,
                                         uint64_t limit) {
  Napi::Env env = info.Env();
  if (!info[i].IsArray()) throw Napi::TypeError::New(env, std::string("Expected an array of integers for ") + name);
  Napi::Array a = info[i].As<Napi::Array>();
  if (a.Length() > max) {
    throw Napi::RangeError::New(env, std::string(name) + " has more than " + std::to_string(max) + " entries");
  }
  std::vector<uint64_t> out(a.Length());
  for (uint32_t k = 0; k < a.Length(); k++) {
    Napi::Value v = a.Get(k);
    bool ok = false;
    uint64_t x = 0;
    if (v.IsBigInt()) {
      x = v.As<Napi::BigInt>().Uint64Value(&ok);
    } else if (v.IsNumber()) {
      double d = v.As<Napi::Number>().DoubleValue();
      ok = d >= 0 && d <= 9007199254740991.0 && std::floor(d) == d;
      x = ok ? static_cast<uint64_t>(d) : 0;
    }
    if (!ok || x > limit) {
      throw Napi::RangeError::New(
          env, std::string(name) + "[" + std::to_string(k) + "] must be an integer from 0 to " + std::to_string(limit));
    }
    out[k] = x;
  }
  return out;
}

// tensorMapEncodeTiled(dataType, globalAddress, globalDim, globalStrides, boxDim, elementStrides, interleave, swizzle,
// l2Promotion, oobFill) -> the 128-byte CUtensorMap as an ArrayBuffer. The rank is globalDim's length; globalStrides
// has rank - 1 entries. No context is needed. The library checks the driver's rules before calling.
static Napi::Value TensorMapEncodeTiled(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t dataType = ArgI32(info, 0, "dataType");
  uint64_t address = ArgU64(info, 1, "globalAddress");
  std::vector<uint64_t> dims = ArgU64Array(info, 2, "globalDim", 5, UINT64_MAX);
  std::vector<uint64_t> strides = ArgU64Array(info, 3, "globalStrides", 4, UINT64_MAX);
  std::vector<uint64_t> box64 = ArgU64Array(info, 4, "boxDim", 5, UINT32_MAX);
  std::vector<uint64_t> element64 = ArgU64Array(info, 5, "elementStrides", 5, UINT32_MAX);
  if (dims.empty() || strides.size() + 1 != dims.size() || box64.size() != dims.size() ||
      element64.size() != dims.size()) {
    throw Napi::RangeError::New(env,
                                "tensorMapEncodeTiled: globalDim, boxDim and elementStrides need the rank's "
                                "length (1 to 5), globalStrides one less");
  }
  std::vector<unsigned> box(box64.begin(), box64.end());
  std::vector<unsigned> element(element64.begin(), element64.end());
  uint64_t none = 0;  // a rank-1 map has no strides, but the driver wants a pointer
  alignas(64) uint64_t map[16] = {};
  CU_CALL(env, cuTensorMapEncodeTiled, map, dataType, static_cast<unsigned>(dims.size()),
          reinterpret_cast<void*>(static_cast<uintptr_t>(address)), dims.data(),
          strides.empty() ? &none : strides.data(), box.data(), element.data(), ArgI32(info, 6, "interleave"),
          ArgI32(info, 7, "swizzle"), ArgI32(info, 8, "l2Promotion"), ArgI32(info, 9, "oobFill"));
  Napi::ArrayBuffer out = Napi::ArrayBuffer::New(env, sizeof map);
  std::memcpy(out.Data(), map, sizeof map);
  return out;
}

void InitMemory(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "tensorMapEncodeTiled", TensorMapEncodeTiled);
  Export(env, exports, "memHostGetDevicePointer", MemHostGetDevicePointer);
  Export(env, exports, "memAlloc", MemAlloc);
  Export(env, exports, "memAllocAsync", MemAllocAsync);
  Export(env, exports, "memFree", MemFree);
  Export(env, exports, "memFreeAsync", MemFreeAsync);
  Export(env, exports, "memcpyHtoD", MemcpyHtoD);
  Export(env, exports, "memcpyDtoH", MemcpyDtoH);
  Export(env, exports, "memcpyDtoD", MemcpyDtoD);
  Export(env, exports, "memcpyPeer", MemcpyPeer);
  Export(env, exports, "memsetAsync", MemsetAsync);
  Export(env, exports, "memHostAlloc", MemHostAlloc);
  Export(env, exports, "memFreeHost", MemFreeHost);
  Export(env, exports, "memHostRegister", MemHostRegister);
  Export(env, exports, "memHostUnregister", MemHostUnregister);
}

}  // namespace cudakit
