// SPDX-License-Identifier: MIT
// Kernel launch: cuLaunchKernel / cuLaunchKernelEx from a launch slot. A slot binds a function to an ArrayBuffer
// that lib/ writes the launch configuration and the packed arguments into, so a launch is one N-API call with one
// number and no allocation on either side. TryLaunchSlot is the one launch of a slot: kernel.launch() and the
// benchmark loop (bench.cc) both go through it, so what is timed is what was launched.
#include <cstring>

#include "common.h"

namespace cudakit {

// kernelSlotCreate(ctx, function, arrayBuffer, paramOffsets: number[]) -> slot id
static Napi::Value KernelSlotCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  CUfunction fn = ArgHandle<CUfunction>(info, 1, "function");
  if (!info[2].IsArrayBuffer()) throw Napi::TypeError::New(env, "Expected an ArrayBuffer for buffer");
  if (!info[3].IsArray()) throw Napi::TypeError::New(env, "Expected an array of numbers for paramOffsets");
  auto ab = info[2].As<Napi::ArrayBuffer>();
  auto offsets = info[3].As<Napi::Array>();
  auto* slot = new KernelSlot{ctx, fn, Napi::Persistent(ab), static_cast<uint8_t*>(ab.Data()), {}};
  for (uint32_t i = 0; i < offsets.Length(); i++) {
    Napi::Value o = offsets.Get(i);
    double off = o.IsNumber() ? o.As<Napi::Number>().DoubleValue() : -1;
    if (!(off >= 0 && kParamBase + off < ab.ByteLength())) {
      delete slot;
      throw Napi::RangeError::New(env, "paramOffsets[" + std::to_string(i) + "] is outside the buffer");
    }
    slot->params.push_back(slot->data + kParamBase + static_cast<size_t>(off));
  }
  if (ab.ByteLength() < kParamBase) {
    delete slot;
    throw Napi::RangeError::New(env, "the slot buffer must hold at least 64 header bytes");
  }
  Addon& addon = GetAddon(env);
  uint32_t id;
  if (!addon.freeSlots.empty()) {
    id = addon.freeSlots.back();
    addon.freeSlots.pop_back();
    addon.slots[id] = slot;
  } else {
    id = static_cast<uint32_t>(addon.slots.size());
    addon.slots.push_back(slot);
  }
  return Napi::Number::New(env, id);
}

// The live slot with this id, or a RangeError.
static KernelSlot* LiveSlot(Napi::Env env, Addon& addon, uint32_t id) {
  if (id >= addon.slots.size() || addon.slots[id] == nullptr) {
    throw Napi::RangeError::New(env, "not a live kernel launch slot");
  }
  return addon.slots[id];
}

KernelSlot* SlotFromValue(Napi::Env env, Napi::Value v) {
  return LiveSlot(env, GetAddon(env), v.IsNumber() ? v.As<Napi::Number>().Uint32Value() : UINT32_MAX);
}

static KernelSlot* SlotArg(const Napi::CallbackInfo& info) { return SlotFromValue(info.Env(), info[0]); }

// kernelSlotDestroy(slot)
static Napi::Value KernelSlotDestroy(const Napi::CallbackInfo& info) {
  KernelSlot* slot = SlotArg(info);
  Addon& addon = GetAddon(info.Env());
  uint32_t id = info[0].As<Napi::Number>().Uint32Value();
  addon.slots[id] = nullptr;
  addon.freeSlots.push_back(id);
  delete slot;
  return info.Env().Undefined();
}

SlotHeader ReadHeader(const uint8_t* d) {
  SlotHeader h;
  std::memcpy(h.grid, d, 12);
  std::memcpy(h.block, d + 12, 12);
  std::memcpy(&h.smem, d + 24, 4);
  std::memcpy(&h.flags, d + 28, 4);
  uint64_t s;
  std::memcpy(&s, d + 32, 8);
  h.stream = reinterpret_cast<CUstream>(static_cast<uintptr_t>(s));
  std::memcpy(h.cluster, d + 40, 12);
  return h;
}

// cuLaunchKernelEx with the given attributes (cooperative, cluster dimensions when cluster[0] > 0).
static CUresult LaunchEx(const KernelSlot& slot, const SlotHeader& h, CUstream stream, bool cooperative,
                         const uint32_t cluster[3]) {
  CUlaunchAttribute attrs[2];
  std::memset(attrs, 0, sizeof(attrs));
  unsigned n = 0;
  if (cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    n++;
  }
  if (cluster[0] > 0) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = cluster[0];
    attrs[n].value.clusterDim.y = cluster[1];
    attrs[n].value.clusterDim.z = cluster[2];
    n++;
  }
  CUlaunchConfig cfg{h.grid[0], h.grid[1], h.grid[2], h.block[0], h.block[1], h.block[2], h.smem, stream, attrs, n};
  return CU_TRY(cuLaunchKernelEx, &cfg, slot.fn, const_cast<void**>(slot.params.data()), nullptr);
}

// The launch itself, from a header already read.
static CUresult Launch(const KernelSlot& slot, const SlotHeader& h, CUstream stream, const char** api) {
  if (!h.HasAttributes()) {
    *api = "cuLaunchKernel";
    return CU_TRY(cuLaunchKernel, slot.fn, h.grid[0], h.grid[1], h.grid[2], h.block[0], h.block[1], h.block[2], h.smem,
                  stream, const_cast<void**>(slot.params.data()), nullptr);
  }
  *api = "cuLaunchKernelEx";
  return LaunchEx(slot, h, stream, (h.flags & kLaunchCooperative) != 0, h.cluster);
}

static void Resolve(Napi::Env env, const SlotHeader& h) {
  if (h.HasAttributes()) {
    NeedDriver(env, drv::cuLaunchKernelEx);
  } else {
    NeedDriver(env, drv::cuLaunchKernel);
  }
}

void ResolveSlotLaunch(Napi::Env env, const KernelSlot& slot) { Resolve(env, ReadHeader(slot.data)); }

CUresult TryLaunchSlot(const KernelSlot& slot, CUstream stream, const char** api) {
  return Launch(slot, ReadHeader(slot.data), stream, api);
}

// launchKernel(slot): the slot's launch as its header says (cuLaunchKernel, or cuLaunchKernelEx with the header's
// launch attributes), on the header's stream. A plain N-API callback, the Addon its data: this is the call a program
// makes thousands of times a second, and node-addon-api's wrapper (its CallbackInfo, the instance-data lookup, the
// type check, the undefined it returns) costs about 20 ns of it (nop() both ways: 41 and 20 ns on a 2-core machine).
static napi_value LaunchKernel(napi_env rawEnv, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg = nullptr;
  void* addon = nullptr;
  Napi::Env env(rawEnv);
  try {
    NAPI_THROW_IF_FAILED(env, napi_get_cb_info(rawEnv, info, &argc, &arg, nullptr, &addon), nullptr);
    uint32_t id = UINT32_MAX;  // not a number (or no argument): no slot
    if (argc < 1 || napi_get_value_uint32(rawEnv, arg, &id) != napi_ok) id = UINT32_MAX;
    KernelSlot* slot = LiveSlot(env, *static_cast<Addon*>(addon), id);
    BindContext(env, slot->ctx);
    SlotHeader h = ReadHeader(slot->data);
    Resolve(env, h);
    const char* api = nullptr;
    CUresult r = Launch(*slot, h, h.stream, &api);
    if (r != CUDA_SUCCESS) ThrowCuda(env, api, r);
  } catch (const Napi::Error& e) {
    e.ThrowAsJavaScriptException();
  }
  return nullptr;  // undefined
}

// launchKernelEx(slot, cooperative, clusterX, clusterY, clusterZ): cuLaunchKernelEx with these launch attributes
// instead of the header's (the raw layer's explicit form)
static Napi::Value LaunchKernelEx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  KernelSlot* slot = SlotArg(info);
  bool cooperative = ArgBool(info, 1, "cooperative");
  const uint32_t cluster[3] = {ArgU32(info, 2, "clusterX"), ArgU32(info, 3, "clusterY"), ArgU32(info, 4, "clusterZ")};
  BindContext(env, slot->ctx);
  NeedDriver(env, drv::cuLaunchKernelEx);
  SlotHeader h = ReadHeader(slot->data);
  CUresult r = LaunchEx(*slot, h, h.stream, cooperative, cluster);
  if (r != CUDA_SUCCESS) ThrowCuda(env, "cuLaunchKernelEx", r);
  return env.Undefined();
}

void ReleaseKernelSlots(Addon& addon) {
  for (auto* s : addon.slots) delete s;
  addon.slots.clear();
  addon.freeSlots.clear();
}

void InitKernel(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "kernelSlotCreate", KernelSlotCreate);
  Export(env, exports, "kernelSlotDestroy", KernelSlotDestroy);
  ExportPlain(env, exports, "launchKernel", LaunchKernel, &GetAddon(env));
  Export(env, exports, "launchKernelEx", LaunchKernelEx);
}

}  // namespace cudakit
