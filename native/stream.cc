// SPDX-License-Identifier: MIT
// Streams: cuStreamCreateWithPriority, cuStreamDestroy, cuStreamSynchronize, cuStreamQuery, cuStreamWaitEvent,
// stream capture. (Promise waits live in event.cc.)
#include "common.h"

namespace cudakit {

// cuStreamCreateWithPriority(ctx, flags, priority) -> stream
static Napi::Value StreamCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  BindContext(env, ctx);
  CUstream s = nullptr;
  CU_CALL(env, cuStreamCreateWithPriority, &s, ArgU32(info, 1, "flags"), ArgI32(info, 2, "priority"));
  Track(env, reinterpret_cast<uintptr_t>(s), Kind::Stream, ctx);
  return HandleValue(env, s);
}

// cuStreamDestroy(stream)
static Napi::Value StreamDestroy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto s = ArgHandle<CUstream>(info, 0, "stream");
  Resource r{};
  if (!Untrack(env, reinterpret_cast<uintptr_t>(s), Kind::Stream, &r)) {
    throw Napi::Error::New(env, "streamDestroy: not a live stream");
  }
  BindContext(env, r.ctx);
  CU_CALL(env, cuStreamDestroy, s);
  return env.Undefined();
}

// cuStreamSynchronize(ctx, stream)
static Napi::Value StreamSynchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuStreamSynchronize, ArgHandle<CUstream>(info, 1, "stream"));
  return env.Undefined();
}

// cuStreamQuery(ctx, stream) -> true when all work is done, false while some is pending
static Napi::Value StreamQuery(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CUresult r = NeedDriver(env, drv::cuStreamQuery)(ArgHandle<CUstream>(info, 1, "stream"));
  if (r == CUDA_ERROR_NOT_READY) return Napi::Boolean::New(env, false);
  if (r != CUDA_SUCCESS) ThrowCuda(env, "cuStreamQuery", r);
  return Napi::Boolean::New(env, true);
}

// cuStreamWaitEvent(ctx, stream, event)
static Napi::Value StreamWaitEvent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuStreamWaitEvent, ArgHandle<CUstream>(info, 1, "stream"), ArgHandle<CUevent>(info, 2, "event"), 0u);
  return env.Undefined();
}

// cuStreamBeginCapture(ctx, stream, mode)
static Napi::Value StreamBeginCapture(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuStreamBeginCapture, ArgHandle<CUstream>(info, 1, "stream"), ArgI32(info, 2, "mode"));
  return env.Undefined();
}

// cuStreamEndCapture(ctx, stream) -> graph
static Napi::Value StreamEndCapture(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  BindContext(env, ctx);
  CUgraph g = nullptr;
  CU_CALL(env, cuStreamEndCapture, ArgHandle<CUstream>(info, 1, "stream"), &g);
  Track(env, reinterpret_cast<uintptr_t>(g), Kind::Graph, ctx);
  return HandleValue(env, g);
}

void InitStream(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "streamCreate", StreamCreate);
  Export(env, exports, "streamDestroy", StreamDestroy);
  Export(env, exports, "streamSynchronize", StreamSynchronize);
  Export(env, exports, "streamQuery", StreamQuery);
  Export(env, exports, "streamWaitEvent", StreamWaitEvent);
  Export(env, exports, "streamBeginCapture", StreamBeginCapture);
  Export(env, exports, "streamEndCapture", StreamEndCapture);
}

}  // namespace cudakit
