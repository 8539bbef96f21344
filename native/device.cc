// SPDX-License-Identifier: MIT
// Devices and primary contexts: cuDevice*, cuDevicePrimaryCtx*, cuCtx*, cuMemGetInfo, the default memory pool,
// peer access between devices.
// (ctxSynchronizeAsync lives in event.cc with the other Promise waits.)
#include <cstdio>

#include "common.h"

namespace cudakit {

// cuDriverGetVersion
static Napi::Value DriverGetVersion(const Napi::CallbackInfo& info) {
  int v = 0;
  CU_CALL(info.Env(), cuDriverGetVersion, &v);
  return Napi::Number::New(info.Env(), v);
}

// cuDeviceGetCount
static Napi::Value DeviceGetCount(const Napi::CallbackInfo& info) {
  int n = 0;
  CU_CALL(info.Env(), cuDeviceGetCount, &n);
  return Napi::Number::New(info.Env(), n);
}

// cuDeviceGet(ordinal) -> CUdevice
static Napi::Value DeviceGet(const Napi::CallbackInfo& info) {
  CUdevice d = 0;
  CU_CALL(info.Env(), cuDeviceGet, &d, ArgI32(info, 0, "ordinal"));
  return Napi::Number::New(info.Env(), d);
}

// cuDeviceGetName
static Napi::Value DeviceGetName(const Napi::CallbackInfo& info) {
  char name[256] = {0};
  CU_CALL(info.Env(), cuDeviceGetName, name, sizeof(name) - 1, ArgI32(info, 0, "device"));
  return Napi::String::New(info.Env(), name);
}

// cuDeviceGetUuid -> 'GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx' (nvidia-smi's spelling)
static Napi::Value DeviceGetUuid(const Napi::CallbackInfo& info) {
  CUuuid u{};
  CU_CALL(info.Env(), cuDeviceGetUuid, &u, ArgI32(info, 0, "device"));
  char s[64];
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::snprintf(s, sizeof(s), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return Napi::String::New(info.Env(), s);
}

// cuDeviceGetPCIBusId
static Napi::Value DeviceGetPCIBusId(const Napi::CallbackInfo& info) {
  char id[64] = {0};
  CU_CALL(info.Env(), cuDeviceGetPCIBusId, id, sizeof(id) - 1, ArgI32(info, 0, "device"));
  return Napi::String::New(info.Env(), id);
}

// cuDeviceGetAttribute(device, attribute)
static Napi::Value DeviceGetAttribute(const Napi::CallbackInfo& info) {
  int v = 0;
  CU_CALL(info.Env(), cuDeviceGetAttribute, &v, ArgI32(info, 1, "attribute"), ArgI32(info, 0, "device"));
  return Napi::Number::New(info.Env(), v);
}

// cuDeviceTotalMem
static Napi::Value DeviceTotalMem(const Napi::CallbackInfo& info) {
  size_t bytes = 0;
  CU_CALL(info.Env(), cuDeviceTotalMem, &bytes, ArgI32(info, 0, "device"));
  return Napi::Number::New(info.Env(), static_cast<double>(bytes));
}

// cuDeviceCanAccessPeer(device, peerDevice) -> whether `device` can access `peerDevice`'s memory directly
static Napi::Value DeviceCanAccessPeer(const Napi::CallbackInfo& info) {
  int can = 0;
  CU_CALL(info.Env(), cuDeviceCanAccessPeer, &can, ArgI32(info, 0, "device"), ArgI32(info, 1, "peerDevice"));
  return Napi::Boolean::New(info.Env(), can != 0);
}

// cuDevicePrimaryCtxRetain: once per env and device; released by the env's cleanup hook.
static Napi::Value DevicePrimaryCtxRetain(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int dev = ArgI32(info, 0, "device");
  Addon& addon = GetAddon(env);
  auto it = addon.retained.find(dev);
  if (it != addon.retained.end()) return HandleValue(env, it->second);
  CUcontext ctx = nullptr;
  CU_CALL(env, cuDevicePrimaryCtxRetain, &ctx, dev);
  addon.retained[dev] = ctx;
  return HandleValue(env, ctx);
}

// devicePrimaryCtxRetainAsync(device) -> Promise of the context: cuDevicePrimaryCtxRetain on a libuv pool thread,
// so creating the context (about 0.1 s) overlaps the caller's other work. The env keeps one retain per device: if
// the synchronous form retained it meanwhile (it waits inside the driver for the same context), the extra one is
// released here.
class RetainWorker : public Napi::AsyncWorker {
 public:
  RetainWorker(Napi::Env env, int dev) : Napi::AsyncWorker(env, "cudakit:primaryCtxRetain"), d_(env), dev_(dev) {}
  void Execute() override { result_ = CU_TRY(cuDevicePrimaryCtxRetain, &ctx_, dev_); }
  void OnOK() override {
    Napi::Env env = Env();
    if (result_ != CUDA_SUCCESS) {
      d_.Reject(MakeCudaError(env, "cuDevicePrimaryCtxRetain", result_).Value());
      return;
    }
    Addon& addon = GetAddon(env);
    auto it = addon.retained.find(dev_);
    if (it != addon.retained.end()) {
      CU_TRY(cuDevicePrimaryCtxRelease, dev_);
      d_.Resolve(HandleValue(env, it->second));
      return;
    }
    addon.retained[dev_] = ctx_;
    d_.Resolve(HandleValue(env, ctx_));
  }
  Napi::Promise Promise() { return d_.Promise(); }

 private:
  Napi::Promise::Deferred d_;
  int dev_;
  CUcontext ctx_ = nullptr;
  CUresult result_ = CUDA_SUCCESS;
};

static Napi::Value DevicePrimaryCtxRetainAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int dev = ArgI32(info, 0, "device");
  Addon& addon = GetAddon(env);
  auto it = addon.retained.find(dev);
  if (it != addon.retained.end()) {
    auto d = Napi::Promise::Deferred::New(env);
    d.Resolve(HandleValue(env, it->second));
    return d.Promise();
  }
  NeedDriver(env, drv::cuDevicePrimaryCtxRetain);  // a missing driver throws here, as the synchronous form does
  auto* w = new RetainWorker(env, dev);
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

// cuCtxSynchronize (ctx bound first)
static Napi::Value CtxSynchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuCtxSynchronize);
  return env.Undefined();
}

// cuMemGetInfo -> [freeBytes, totalBytes]
static Napi::Value MemGetInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  size_t freeBytes = 0, totalBytes = 0;
  CU_CALL(env, cuMemGetInfo, &freeBytes, &totalBytes);
  Napi::Array a = Napi::Array::New(env, 2);
  a.Set(0u, static_cast<double>(freeBytes));
  a.Set(1u, static_cast<double>(totalBytes));
  return a;
}

// cuCtxSetLimit(ctx, limit, value) / cuCtxGetLimit(ctx, limit)
static Napi::Value CtxSetLimit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuCtxSetLimit, ArgI32(info, 1, "limit"), static_cast<size_t>(ArgU64(info, 2, "value")));
  return env.Undefined();
}
static Napi::Value CtxGetLimit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  size_t v = 0;
  CU_CALL(env, cuCtxGetLimit, &v, ArgI32(info, 1, "limit"));
  return Napi::Number::New(env, static_cast<double>(v));
}

// cuCtxResetPersistingL2Cache
static Napi::Value CtxResetPersistingL2Cache(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuCtxResetPersistingL2Cache);
  return env.Undefined();
}

// cuCtxGetStreamPriorityRange -> [least, greatest]
static Napi::Value CtxGetStreamPriorityRange(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  int least = 0, greatest = 0;
  CU_CALL(env, cuCtxGetStreamPriorityRange, &least, &greatest);
  Napi::Array a = Napi::Array::New(env, 2);
  a.Set(0u, least);
  a.Set(1u, greatest);
  return a;
}

// cuCtxEnablePeerAccess(ctx, peerCtx) (ctx bound first): ctx may then access memory allocated in peerCtx. One
// direction only; CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED is thrown like any other failure.
static Napi::Value CtxEnablePeerAccess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuCtxEnablePeerAccess, ArgHandle<CUcontext>(info, 1, "peerCtx"), 0u);
  return env.Undefined();
}

// cuDeviceGetDefaultMemPool(device) -> pool
static Napi::Value DeviceGetDefaultMemPool(const Napi::CallbackInfo& info) {
  CUmemoryPool pool = nullptr;
  CU_CALL(info.Env(), cuDeviceGetDefaultMemPool, &pool, ArgI32(info, 0, "device"));
  return HandleValue(info.Env(), pool);
}

// Attributes from RELEASE_THRESHOLD (4) on are cuuint64_t (bigint here); the reuse flags before it are int.
static bool IsU64PoolAttribute(int attr) { return attr >= CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; }

// cuMemPoolSetAttribute(pool, attribute, value)
static Napi::Value MemPoolSetAttribute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto pool = ArgHandle<CUmemoryPool>(info, 0, "pool");
  int attr = ArgI32(info, 1, "attribute");
  if (IsU64PoolAttribute(attr)) {
    cuuint64_t v = ArgU64(info, 2, "value");
    CU_CALL(env, cuMemPoolSetAttribute, pool, attr, &v);
  } else {
    int v = ArgI32(info, 2, "value");
    CU_CALL(env, cuMemPoolSetAttribute, pool, attr, &v);
  }
  return env.Undefined();
}

// cuMemPoolGetAttribute(pool, attribute) -> bigint (64-bit attributes) or number
static Napi::Value MemPoolGetAttribute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto pool = ArgHandle<CUmemoryPool>(info, 0, "pool");
  int attr = ArgI32(info, 1, "attribute");
  if (IsU64PoolAttribute(attr)) {
    cuuint64_t v = 0;
    CU_CALL(env, cuMemPoolGetAttribute, pool, attr, &v);
    return ToBigInt(env, v);
  }
  int v = 0;
  CU_CALL(env, cuMemPoolGetAttribute, pool, attr, &v);
  return Napi::Number::New(env, v);
}

// cuMemPoolTrimTo(pool, minBytesToKeep)
static Napi::Value MemPoolTrimTo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CU_CALL(env, cuMemPoolTrimTo, ArgHandle<CUmemoryPool>(info, 0, "pool"),
          static_cast<size_t>(ArgU64(info, 1, "minBytesToKeep")));
  return env.Undefined();
}

// cuMemPoolSetAccess(pool, device, flags): one access descriptor, for a device (flags: CUmemAccess_flags)
static Napi::Value MemPoolSetAccess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto pool = ArgHandle<CUmemoryPool>(info, 0, "pool");
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = ArgI32(info, 1, "device");
  desc.flags = ArgI32(info, 2, "flags");
  CU_CALL(env, cuMemPoolSetAccess, pool, &desc, size_t{1});
  return env.Undefined();
}

void InitDevice(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "driverGetVersion", DriverGetVersion);
  Export(env, exports, "deviceGetCount", DeviceGetCount);
  Export(env, exports, "deviceGet", DeviceGet);
  Export(env, exports, "deviceGetName", DeviceGetName);
  Export(env, exports, "deviceGetUuid", DeviceGetUuid);
  Export(env, exports, "deviceGetPCIBusId", DeviceGetPCIBusId);
  Export(env, exports, "deviceGetAttribute", DeviceGetAttribute);
  Export(env, exports, "deviceTotalMem", DeviceTotalMem);
  Export(env, exports, "deviceCanAccessPeer", DeviceCanAccessPeer);
  Export(env, exports, "devicePrimaryCtxRetain", DevicePrimaryCtxRetain);
  Export(env, exports, "devicePrimaryCtxRetainAsync", DevicePrimaryCtxRetainAsync);
  Export(env, exports, "ctxSynchronize", CtxSynchronize);
  Export(env, exports, "memGetInfo", MemGetInfo);
  Export(env, exports, "ctxSetLimit", CtxSetLimit);
  Export(env, exports, "ctxGetLimit", CtxGetLimit);
  Export(env, exports, "ctxResetPersistingL2Cache", CtxResetPersistingL2Cache);
  Export(env, exports, "ctxGetStreamPriorityRange", CtxGetStreamPriorityRange);
  Export(env, exports, "ctxEnablePeerAccess", CtxEnablePeerAccess);
  Export(env, exports, "deviceGetDefaultMemPool", DeviceGetDefaultMemPool);
  Export(env, exports, "memPoolSetAttribute", MemPoolSetAttribute);
  Export(env, exports, "memPoolGetAttribute", MemPoolGetAttribute);
  Export(env, exports, "memPoolTrimTo", MemPoolTrimTo);
  Export(env, exports, "memPoolSetAccess", MemPoolSetAccess);
}

}  // namespace cudakit
