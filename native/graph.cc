// SPDX-License-Identifier: MIT
// Graphs captured from streams: cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphGetNodes, destroy.
#include "common.h"

namespace cudakit {

// cuGraphInstantiateWithFlags(ctx, graph) -> graphExec
static Napi::Value GraphInstantiate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  auto g = ArgHandle<CUgraph>(info, 1, "graph");
  RequireTracked(env, reinterpret_cast<uintptr_t>(g), Kind::Graph, "graph");
  BindContext(env, ctx);
  CUgraphExec exec = nullptr;
  CU_CALL(env, cuGraphInstantiateWithFlags, &exec, g, 0ull);
  Track(env, reinterpret_cast<uintptr_t>(exec), Kind::GraphExec, ctx);
  return HandleValue(env, exec);
}

// cuGraphLaunch(ctx, graphExec, stream)
static Napi::Value GraphLaunch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuGraphLaunch, ArgHandle<CUgraphExec>(info, 1, "graphExec"), ArgHandle<CUstream>(info, 2, "stream"));
  return env.Undefined();
}

// cuGraphGetNodes(ctx, graph) -> node count
static Napi::Value GraphGetNodeCount(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  size_t n = 0;
  CU_CALL(env, cuGraphGetNodes, ArgHandle<CUgraph>(info, 1, "graph"), nullptr, &n);
  return Napi::Number::New(env, static_cast<double>(n));
}

// cuGraphDestroy(graph) / cuGraphExecDestroy(graphExec)
static Napi::Value GraphDestroy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto g = ArgHandle<CUgraph>(info, 0, "graph");
  Resource r{};
  if (!Untrack(env, reinterpret_cast<uintptr_t>(g), Kind::Graph, &r)) {
    throw Napi::Error::New(env, "graphDestroy: not a live graph");
  }
  BindContext(env, r.ctx);
  CU_CALL(env, cuGraphDestroy, g);
  return env.Undefined();
}

static Napi::Value GraphExecDestroy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto e = ArgHandle<CUgraphExec>(info, 0, "graphExec");
  Resource r{};
  if (!Untrack(env, reinterpret_cast<uintptr_t>(e), Kind::GraphExec, &r)) {
    throw Napi::Error::New(env, "graphExecDestroy: not a live graph exec");
  }
  BindContext(env, r.ctx);
  CU_CALL(env, cuGraphExecDestroy, e);
  return env.Undefined();
}

void InitGraph(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "graphInstantiate", GraphInstantiate);
  Export(env, exports, "graphLaunch", GraphLaunch);
  Export(env, exports, "graphGetNodeCount", GraphGetNodeCount);
  Export(env, exports, "graphDestroy", GraphDestroy);
  Export(env, exports, "graphExecDestroy", GraphExecDestroy);
}

}  // namespace cudakit
