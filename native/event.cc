// SPDX-License-Identifier: MIT
// Events: cuEventCreate/Record/Synchronize/Query/ElapsedTime/Destroy, and Promise waits.
//
// Promise waits (eventWaitAsync, streamSynchronizeAsync) do not park a libuv pool thread per wait: one waiter
// thread per env polls every pending event with cuEventQuery and resolves the promises through one
// thread-safe function. It polls tightly for the first 2 ms of a wait (completion is seen within a microsecond or
// so), then every 200 us, so a long wait costs almost no CPU and at most 200 us of extra latency; after the last
// wait it lingers 200 us before sleeping, so a loop of launch-and-await never pays a thread wake-up.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>

#include "common.h"

namespace cudakit {

using Clock = std::chrono::steady_clock;

struct Pending {
  CUcontext ctx;
  CUevent event;
  bool pooledEvent;  // created by streamSynchronizeAsync: goes back to the pool when done
  Napi::Promise::Deferred deferred;
  const char* api;
  CUresult result = CUDA_SUCCESS;
  Clock::time_point since;
};

static void ResolveOnJsThread(Napi::Env env, Napi::Function, void*, Pending* p);
using WaitTsfn = Napi::TypedThreadSafeFunction<void, Pending, ResolveOnJsThread>;

struct Waiter {
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Pending*> incoming;
  bool stop = false;
  WaitTsfn tsfn;
  size_t pending = 0;                                  // JS thread only
  std::vector<std::pair<CUcontext, CUevent>> spare;    // pooled events, JS thread only

  void Loop() {
    std::vector<Pending*> active;
    auto idleSince = Clock::now();
    for (;;) {
      // Linger briefly before sleeping: back-to-back waits (launch, await, launch ...) then skip a thread wake-up.
      while (active.empty() && Clock::now() - idleSince < std::chrono::microseconds(200)) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (stop || !incoming.empty()) break;
        }
        std::this_thread::yield();
      }
      {
        std::unique_lock<std::mutex> lock(mu);
        if (active.empty()) cv.wait(lock, [&] { return stop || !incoming.empty(); });
        if (stop) break;
        while (!incoming.empty()) {
          active.push_back(incoming.front());
          incoming.pop_front();
        }
      }
      auto oldest = Clock::now();
      for (size_t i = 0; i < active.size();) {
        Pending* p = active[i];
        CUresult r = TryBindContext(p->ctx);
        if (r == CUDA_SUCCESS) r = CU_TRY(cuEventQuery, p->event);
        if (r != CUDA_ERROR_NOT_READY) {
          p->result = r;
          tsfn.NonBlockingCall(p);
          active[i] = active.back();
          active.pop_back();
        } else {
          if (p->since < oldest) oldest = p->since;
          i++;
        }
      }
      if (active.empty()) {
        idleSince = Clock::now();
        continue;
      }
      if (Clock::now() - oldest < std::chrono::milliseconds(2)) {
        std::this_thread::yield();
      } else {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait_for(lock, std::chrono::microseconds(200), [&] { return stop || !incoming.empty(); });
      }
    }
  }
};

static void ResolveOnJsThread(Napi::Env env, Napi::Function, void*, Pending* p) {
  if (env != nullptr) {
    Addon& addon = GetAddon(env);
    Waiter* w = addon.waiter;
    if (p->result == CUDA_SUCCESS) {
      p->deferred.Resolve(env.Undefined());
    } else {
      p->deferred.Reject(MakeCudaError(env, p->api, p->result).Value());
    }
    if (w != nullptr) {
      if (p->pooledEvent) w->spare.emplace_back(p->ctx, p->event);
      if (--w->pending == 0) w->tsfn.Unref(env);
    }
  }
  delete p;
}

static Waiter* GetWaiter(Napi::Env env) {
  Addon& addon = GetAddon(env);
  if (addon.waiter == nullptr) {
    auto* w = new Waiter();
    w->tsfn = WaitTsfn::New(env, "cudakit:eventWait", 0, 1);
    w->tsfn.Unref(env);  // only pending waits keep the process alive
    w->thread = std::thread([w] { w->Loop(); });
    addon.waiter = w;
  }
  return addon.waiter;
}

static Napi::Promise Enqueue(Napi::Env env, CUcontext ctx, CUevent ev, bool pooled, const char* api) {
  Waiter* w = GetWaiter(env);
  auto* p = new Pending{ctx, ev, pooled, Napi::Promise::Deferred::New(env), api, CUDA_SUCCESS, Clock::now()};
  Napi::Promise promise = p->deferred.Promise();
  if (w->pending++ == 0) w->tsfn.Ref(env);
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->incoming.push_back(p);
  }
  w->cv.notify_one();
  return promise;
}

void StopWaiter(Addon& addon) {
  Waiter* w = addon.waiter;
  if (w == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->stop = true;
  }
  w->cv.notify_one();
  if (w->thread.joinable()) w->thread.join();
  w->tsfn.Abort();
  for (auto& [ctx, ev] : w->spare) {
    if (TryBindContext(ctx) == CUDA_SUCCESS) CU_TRY(cuEventDestroy, ev);
  }
  addon.waiter = nullptr;
  // `w` itself is leaked on purpose: queued tsfn calls may still reference the Pending objects' env.
}

// cuEventCreate(ctx, flags) -> event
static Napi::Value EventCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  BindContext(env, ctx);
  CUevent e = nullptr;
  CU_CALL(env, cuEventCreate, &e, ArgU32(info, 1, "flags"));
  Track(env, reinterpret_cast<uintptr_t>(e), Kind::Event, ctx);
  return HandleValue(env, e);
}

// cuEventDestroy(event)
static Napi::Value EventDestroy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto e = ArgHandle<CUevent>(info, 0, "event");
  Resource r{};
  if (!Untrack(env, reinterpret_cast<uintptr_t>(e), Kind::Event, &r)) {
    throw Napi::Error::New(env, "eventDestroy: not a live event");
  }
  BindContext(env, r.ctx);
  CU_CALL(env, cuEventDestroy, e);
  return env.Undefined();
}

// cuEventRecord(ctx, event, stream)
static Napi::Value EventRecord(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuEventRecord, ArgHandle<CUevent>(info, 1, "event"), ArgHandle<CUstream>(info, 2, "stream"));
  return env.Undefined();
}

// cuEventSynchronize(ctx, event)
static Napi::Value EventSynchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CU_CALL(env, cuEventSynchronize, ArgHandle<CUevent>(info, 1, "event"));
  return env.Undefined();
}

// cuEventQuery(ctx, event) -> true when complete
static Napi::Value EventQuery(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  CUresult r = NeedDriver(env, drv::cuEventQuery)(ArgHandle<CUevent>(info, 1, "event"));
  if (r == CUDA_ERROR_NOT_READY) return Napi::Boolean::New(env, false);
  if (r != CUDA_SUCCESS) ThrowCuda(env, "cuEventQuery", r);
  return Napi::Boolean::New(env, true);
}

// cuEventElapsedTime(ctx, start, end) -> milliseconds
static Napi::Value EventElapsedTime(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BindContext(env, ArgHandle<CUcontext>(info, 0, "ctx"));
  float ms = 0;
  CU_CALL(env, cuEventElapsedTime, &ms, ArgHandle<CUevent>(info, 1, "start"), ArgHandle<CUevent>(info, 2, "end"));
  return Napi::Number::New(env, ms);
}

// eventWaitAsync(ctx, event) -> Promise<void> resolved when the event completes
static Napi::Value EventWaitAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  auto e = ArgHandle<CUevent>(info, 1, "event");
  NeedDriver(env, drv::cuEventQuery);
  return Enqueue(env, ctx, e, false, "cuEventSynchronize");
}

// streamSynchronizeAsync(ctx, stream) -> Promise<void>: records a pooled event on the stream and waits for it
static Napi::Value StreamSynchronizeAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  auto s = ArgHandle<CUstream>(info, 1, "stream");
  BindContext(env, ctx);
  Waiter* w = GetWaiter(env);
  CUevent e = nullptr;
  for (size_t i = 0; i < w->spare.size(); i++) {
    if (w->spare[i].first == ctx) {
      e = w->spare[i].second;
      w->spare[i] = w->spare.back();
      w->spare.pop_back();
      break;
    }
  }
  if (e == nullptr) CU_CALL(env, cuEventCreate, &e, CU_EVENT_DISABLE_TIMING);
  CUresult r = NeedDriver(env, drv::cuEventRecord)(e, s);
  if (r != CUDA_SUCCESS) {
    w->spare.emplace_back(ctx, e);
    ThrowCuda(env, "cuEventRecord", r);
  }
  return Enqueue(env, ctx, e, true, "cuStreamSynchronize");
}

void InitEvent(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "eventCreate", EventCreate);
  Export(env, exports, "eventDestroy", EventDestroy);
  Export(env, exports, "eventRecord", EventRecord);
  Export(env, exports, "eventSynchronize", EventSynchronize);
  Export(env, exports, "eventQuery", EventQuery);
  Export(env, exports, "eventElapsedTime", EventElapsedTime);
  Export(env, exports, "eventWaitAsync", EventWaitAsync);
  Export(env, exports, "streamSynchronizeAsync", StreamSynchronizeAsync);
}

}  // namespace cudakit
