// SPDX-License-Identifier: MIT
// CUPTI's activity API, loaded at run time like libcuda: the few calls and record fields the benchmark reads
// (kernel, memcpy and memset start/end timestamps), declared here, no CUPTI header. lib/core/cupti.ts finds the
// library and decides what to trace; this only loads it, turns activity kinds on and off, and hands back records.
//
// Records are read in CUPTI's buffer-completion callback (which may run on a CUPTI thread) into a compact list under
// a mutex; cuptiActivityStop() forces a flush, turns the kinds off and returns the list.
#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.h"

namespace cudakit {
namespace {

using CUptiResult = int;
constexpr CUptiResult kCuptiSuccess = 0;
constexpr uint32_t kFlushForced = 1;  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED

// CUpti_ActivityKind values whose records we read.
constexpr uint32_t kKindMemcpy = 1;
constexpr uint32_t kKindMemset = 2;
constexpr uint32_t kKindKernel = 3;
constexpr uint32_t kKindConcurrentKernel = 10;

// Field offsets, the same in every CUPTI since CUDA 11 (CUpti_ActivityKernel4 … 10, CUpti_ActivityMemcpy5/6,
// CUpti_ActivityMemset3/4): the records only grew at their ends.
constexpr size_t kStartAt = 16, kEndAt = 24;
constexpr size_t kKernelStreamAt = 48, kKernelCorrelationAt = 92, kKernelNameAt = 104;
constexpr size_t kCopyStreamAt = 40, kCopyCorrelationAt = 44;

using RequestFn = void (*)(uint8_t** buffer, size_t* size, size_t* maxRecords);
using CompleteFn = void (*)(void* ctx, uint32_t streamId, uint8_t* buffer, size_t size, size_t validSize);

struct Api {
  CUptiResult (*getVersion)(uint32_t*);
  CUptiResult (*registerCallbacks)(RequestFn, CompleteFn);
  CUptiResult (*enable)(uint32_t);
  CUptiResult (*disable)(uint32_t);
  CUptiResult (*flushAll)(uint32_t);
  CUptiResult (*getNextRecord)(uint8_t*, size_t, void**);
  CUptiResult (*getNumDroppedRecords)(void*, uint32_t, size_t*);
  CUptiResult (*getResultString)(CUptiResult, const char**);
};

struct Record {
  uint32_t kind, streamId, correlationId;
  int32_t name;  // index into State::names; -1 for copies and sets
  uint64_t start, end;
};

struct State {
  std::mutex mutex;
  void* handle = nullptr;
  std::string path;
  uint32_t version = 0;
  std::vector<std::string> tried;
  Api api{};
  bool registered = false;
  bool tracing = false;
  std::vector<Record> records;
  std::vector<std::string> names;
  std::unordered_map<std::string, int32_t> nameIndex;
  size_t dropped = 0;
  std::string callbackError;
};

State& S() {
  static State* s = new State();  // never destroyed: CUPTI may call back while the process exits
  return *s;
}

constexpr size_t kBufferBytes = 8u << 20;

void OnRequest(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *maxRecords = 0;  // as many as fit
}

template <typename T>
T At(const uint8_t* record, size_t offset) {
  T v;
  std::memcpy(&v, record + offset, sizeof(T));
  return v;
}

void OnComplete(void* ctx, uint32_t streamId, uint8_t* buffer, size_t size, size_t validSize) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  void* cursor = nullptr;
  while (buffer != nullptr && validSize > 0) {
    CUptiResult r = s.api.getNextRecord(buffer, validSize, &cursor);
    if (r != kCuptiSuccess) break;  // CUPTI_ERROR_MAX_LIMIT_REACHED: the buffer's end
    const auto* rec = static_cast<const uint8_t*>(cursor);
    uint32_t kind = At<uint32_t>(rec, 0);
    Record out{kind, 0, 0, -1, At<uint64_t>(rec, kStartAt), At<uint64_t>(rec, kEndAt)};
    if (kind == kKindKernel || kind == kKindConcurrentKernel) {
      out.streamId = At<uint32_t>(rec, kKernelStreamAt);
      out.correlationId = At<uint32_t>(rec, kKernelCorrelationAt);
      const char* name = At<const char*>(rec, kKernelNameAt);
      std::string key = name != nullptr ? name : "";
      auto it = s.nameIndex.find(key);
      if (it == s.nameIndex.end()) {
        it = s.nameIndex.emplace(key, static_cast<int32_t>(s.names.size())).first;
        s.names.push_back(key);
      }
      out.name = it->second;
    } else if (kind == kKindMemcpy || kind == kKindMemset) {
      out.streamId = At<uint32_t>(rec, kCopyStreamAt);
      out.correlationId = At<uint32_t>(rec, kCopyCorrelationAt);
    } else {
      continue;
    }
    s.records.push_back(out);
  }
  size_t dropped = 0;
  if (s.api.getNumDroppedRecords(ctx, streamId, &dropped) == kCuptiSuccess) s.dropped += dropped;
  std::free(buffer);
}

std::string ResultName(CUptiResult r) {
  const char* text = nullptr;
  State& s = S();
  if (s.api.getResultString != nullptr && s.api.getResultString(r, &text) == kCuptiSuccess && text != nullptr)
    return text;
  return "CUPTI error " + std::to_string(r);
}

[[noreturn]] void ThrowCupti(Napi::Env env, const char* api, CUptiResult r) {
  Napi::Error e = Napi::Error::New(env, std::string(api) + " failed: " + ResultName(r));
  e.Value().Set("code", "CUDAKIT_CUPTI");
  e.Value().Set("api", api);
  e.Value().Set("result", r);
  throw e;
}

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  return *out != nullptr;
}

Napi::Object StatusObject(Napi::Env env, const State& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("loaded", s.handle != nullptr);
  o.Set("path", s.path);
  o.Set("version", s.version);
  Napi::Array tried = Napi::Array::New(env, s.tried.size());
  for (size_t i = 0; i < s.tried.size(); i++) tried.Set(static_cast<uint32_t>(i), s.tried[i]);
  o.Set("tried", tried);
  return o;
}

// cuptiLoad(candidates: string[]) -> { loaded, path, version, tried }: the first candidate that opens and has the
// activity API; once loaded, the same library whatever is asked.
Napi::Value CuptiLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "cuptiLoad expects an array of library paths");
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.handle != nullptr) return StatusObject(env, s);
  s.tried.clear();
  Napi::Array list = info[0].As<Napi::Array>();
  for (uint32_t i = 0; i < list.Length() && s.handle == nullptr; i++) {
    std::string name = list.Get(i).ToString().Utf8Value();
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      s.tried.push_back(name + ": " + (e != nullptr ? e : "not loadable"));
      continue;
    }
    Api api{};
    bool ok = Resolve(h, "cuptiGetVersion", &api.getVersion) &&
              Resolve(h, "cuptiActivityRegisterCallbacks", &api.registerCallbacks) &&
              Resolve(h, "cuptiActivityEnable", &api.enable) && Resolve(h, "cuptiActivityDisable", &api.disable) &&
              Resolve(h, "cuptiActivityFlushAll", &api.flushAll) &&
              Resolve(h, "cuptiActivityGetNextRecord", &api.getNextRecord) &&
              Resolve(h, "cuptiActivityGetNumDroppedRecords", &api.getNumDroppedRecords) &&
              Resolve(h, "cuptiGetResultString", &api.getResultString);
    if (!ok) {
      s.tried.push_back(name + ": not a CUPTI library (no activity API)");
      continue;  // left open: dlclose is not in the portable build's glibc baseline, and this is rare
    }
    struct link_map* map = nullptr;
    s.path = dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && map->l_name[0] != 0
                 ? map->l_name
                 : name;
    s.api = api;
    s.handle = h;
    uint32_t v = 0;
    if (api.getVersion(&v) == kCuptiSuccess) s.version = v;
  }
  return StatusObject(env, s);
}

std::vector<uint32_t> Kinds(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "expected an array of CUPTI activity kinds");
  std::vector<uint32_t> kinds;
  Napi::Array list = info[0].As<Napi::Array>();
  for (uint32_t i = 0; i < list.Length(); i++) kinds.push_back(list.Get(i).ToNumber().Uint32Value());
  return kinds;
}

// cuptiActivityStart(kinds): registers the buffer callbacks (once), drops what is left of an earlier trace and
// enables the kinds; on a failure, disables the ones it enabled and throws (code CUDAKIT_CUPTI).
Napi::Value CuptiActivityStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<uint32_t> kinds = Kinds(info);
  State& s = S();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.handle == nullptr) throw Napi::Error::New(env, "cuptiActivityStart: CUPTI is not loaded (cuptiLoad)");
  if (s.tracing) throw Napi::Error::New(env, "cuptiActivityStart: a trace is already running");
  Api api = s.api;
  lock.unlock();  // CUPTI may call back (and take the mutex) from inside these calls
  if (!s.registered) {
    CUptiResult r = api.registerCallbacks(OnRequest, OnComplete);
    if (r != kCuptiSuccess) ThrowCupti(env, "cuptiActivityRegisterCallbacks", r);
    s.registered = true;
  }
  for (size_t i = 0; i < kinds.size(); i++) {
    CUptiResult r = api.enable(kinds[i]);
    if (r != kCuptiSuccess) {
      for (size_t j = 0; j < i; j++) api.disable(kinds[j]);
      ThrowCupti(env, "cuptiActivityEnable", r);
    }
  }
  lock.lock();
  s.records.clear();
  s.dropped = 0;
  s.tracing = true;
  return env.Undefined();
}

// cuptiActivityStop(kinds) -> { records: Float64Array, names: string[], dropped }: flushes every buffer (forced:
// call it after the traced work has finished), disables the kinds and returns the records since start, six numbers
// each: kind, streamId, correlationId, name index (-1 for copies and sets), start and end in ns after the earliest
// start in the list (exact as doubles).
Napi::Value CuptiActivityStop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<uint32_t> kinds = Kinds(info);
  State& s = S();
  if (s.handle == nullptr || !s.tracing) throw Napi::Error::New(env, "cuptiActivityStop: no trace is running");
  CUptiResult flushed = s.api.flushAll(kFlushForced);
  CUptiResult disabled = kCuptiSuccess;
  for (uint32_t k : kinds) {
    CUptiResult r = s.api.disable(k);
    if (r != kCuptiSuccess && disabled == kCuptiSuccess) disabled = r;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  s.tracing = false;
  std::vector<Record> records;
  records.swap(s.records);
  if (flushed != kCuptiSuccess) ThrowCupti(env, "cuptiActivityFlushAll", flushed);
  if (disabled != kCuptiSuccess) ThrowCupti(env, "cuptiActivityDisable", disabled);
  uint64_t base = UINT64_MAX;
  for (const Record& r : records) base = r.start != 0 && r.start < base ? r.start : base;
  if (base == UINT64_MAX) base = 0;
  Napi::Float64Array out = Napi::Float64Array::New(env, records.size() * 6);
  for (size_t i = 0; i < records.size(); i++) {
    const Record& r = records[i];
    out[i * 6] = r.kind;
    out[i * 6 + 1] = r.streamId;
    out[i * 6 + 2] = r.correlationId;
    out[i * 6 + 3] = r.name;
    // A record without timestamps (0, 0) stays 0 → -base: negative, which the caller rejects.
    out[i * 6 + 4] = static_cast<double>(static_cast<int64_t>(r.start - base));
    out[i * 6 + 5] = static_cast<double>(static_cast<int64_t>(r.end - base));
  }
  Napi::Array names = Napi::Array::New(env, s.names.size());
  for (size_t i = 0; i < s.names.size(); i++) names.Set(static_cast<uint32_t>(i), s.names[i]);
  Napi::Object o = Napi::Object::New(env);
  o.Set("records", out);
  o.Set("names", names);
  o.Set("dropped", static_cast<double>(s.dropped));
  return o;
}

}  // namespace

void InitCupti(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "cuptiLoad", CuptiLoad);
  Export(env, exports, "cuptiActivityStart", CuptiActivityStart);
  Export(env, exports, "cuptiActivityStop", CuptiActivityStop);
}

}  // namespace cudakit
