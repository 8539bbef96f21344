// SPDX-License-Identifier: MIT
// Kernel launch: cuLaunchKernel / cuLaunchKernelEx from a launch slot. A slot binds a function to an ArrayBuffer
// that lib/ writes the launch configuration and the packed arguments into, so a launch is one N-API call with one
// number and no allocation on either side.
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

KernelSlot* SlotFromValue(Napi::Env env, Napi::Value v) {
  Addon& addon = GetAddon(env);
  uint32_t id = v.IsNumber() ? v.As<Napi::Number>().Uint32Value() : UINT32_MAX;
  if (id >= addon.slots.size() || addon.slots[id] == nullptr) {
    throw Napi::RangeError::New(env, "not a live kernel launch slot");
  }
  return addon.slots[id];
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
  uint64_t s;
  std::memcpy(&s, d + 32, 8);
  h.stream = reinterpret_cast<CUstream>(static_cast<uintptr_t>(s));
  return h;
}

// launchKernel(slot): cuLaunchKernel with the slot's configuration and arguments
static Napi::Value LaunchKernel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  KernelSlot* slot = SlotArg(info);
  BindContext(env, slot->ctx);
  SlotHeader h = ReadHeader(slot->data);
  CU_CALL(env, cuLaunchKernel, slot->fn, h.grid[0], h.grid[1], h.grid[2], h.block[0], h.block[1], h.block[2], h.smem,
          h.stream, slot->params.data(), nullptr);
  return env.Undefined();
}

// launchKernelEx(slot, cooperative, clusterX, clusterY, clusterZ): cuLaunchKernelEx with launch attributes
static Napi::Value LaunchKernelEx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  KernelSlot* slot = SlotArg(info);
  bool cooperative = ArgBool(info, 1, "cooperative");
  uint32_t cx = ArgU32(info, 2, "clusterX"), cy = ArgU32(info, 3, "clusterY"), cz = ArgU32(info, 4, "clusterZ");
  BindContext(env, slot->ctx);
  SlotHeader h = ReadHeader(slot->data);
  CUlaunchAttribute attrs[2];
  std::memset(attrs, 0, sizeof(attrs));
  unsigned n = 0;
  if (cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    n++;
  }
  if (cx > 0) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = cx;
    attrs[n].value.clusterDim.y = cy;
    attrs[n].value.clusterDim.z = cz;
    n++;
  }
  CUlaunchConfig cfg{h.grid[0], h.grid[1], h.grid[2], h.block[0], h.block[1], h.block[2], h.smem, h.stream, attrs, n};
  CU_CALL(env, cuLaunchKernelEx, &cfg, slot->fn, slot->params.data(), nullptr);
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
  Export(env, exports, "launchKernel", LaunchKernel);
  Export(env, exports, "launchKernelEx", LaunchKernelEx);
}

}  // namespace cudakit
