// SPDX-License-Identifier: MIT
// Events: cuEventCreate/Record/Synchronize/Query/ElapsedTime/Destroy, and Promise waits.
//
// Promise waits never park a libuv pool thread, so a wait on a kernel that never ends cannot starve fs, dns or
// compileAsync of pool threads:
// - Event and stream waits (eventWaitAsync, streamSynchronizeAsync): one waiter thread per env polls every pending
//   event with cuEventQuery and resolves the promises through one thread-safe function. It polls tightly for the
//   first 2 ms of a wait (completion is seen within a microsecond or so), then every 200 us, so a long wait costs
//   almost no CPU and at most 200 us of extra latency; after the last wait it lingers 200 us before sleeping, so a
//   loop of launch-and-await never pays a thread wake-up.
// - Context waits (ctxSynchronizeAsync): cuCtxSynchronize cannot be polled, so a second thread of our own blocks
//   in it, one call serving every wait queued before it started.
// A wait given a waitId can be abandoned (waitAbandon): its promise then no longer keeps the process alive, and
// it is dropped when the GPU gets there (possibly never).
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <thread>
#include <unordered_map>

#include "common.h"

namespace cudakit {

using Clock = std::chrono::steady_clock;

// A condition variable whose timed wait runs on CLOCK_MONOTONIC, as std::condition_variable::wait_for does, but
// through pthread_cond_timedwait on a monotonic condition (glibc 2.3.3): libstdc++'s steady-clock waits call
// pthread_cond_clockwait (glibc 2.30), above the prebuilds' floor (native/compat.cc). A system_clock deadline would
// not do: a step of the wall clock would stretch the wait by as much.
class MonotonicCondition {
 public:
  MonotonicCondition() {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&cond_, &attr);
    pthread_condattr_destroy(&attr);
  }
  ~MonotonicCondition() { pthread_cond_destroy(&cond_); }
  MonotonicCondition(const MonotonicCondition&) = delete;
  MonotonicCondition& operator=(const MonotonicCondition&) = delete;

  void NotifyOne() { pthread_cond_signal(&cond_); }

  template <typename Predicate>
  void Wait(std::unique_lock<std::mutex>& lock, Predicate done) {
    while (!done()) pthread_cond_wait(&cond_, lock.mutex()->native_handle());
  }

  // Waits until `done()` or `timeout` has passed; returns `done()`.
  template <typename Predicate>
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::chrono::nanoseconds timeout, Predicate done) {
    timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    int64_t ns = deadline.tv_nsec + timeout.count();
    deadline.tv_sec += static_cast<decltype(deadline.tv_sec)>(ns / 1000000000);
    deadline.tv_nsec = static_cast<decltype(deadline.tv_nsec)>(ns % 1000000000);
    while (!done()) {
      if (pthread_cond_timedwait(&cond_, lock.mutex()->native_handle(), &deadline) == ETIMEDOUT) return done();
    }
    return true;
  }

 private:
  pthread_cond_t cond_;
};

struct Pending {
  Pending(Napi::Env env, uint32_t id, CUcontext ctx, CUevent event, bool pooled, const char* api)
      : id(id),
        ctx(ctx),
        event(event),
        pooledEvent(pooled),
        deferred(Napi::Promise::Deferred::New(env)),
        api(api),
        since(Clock::now()) {}
  uint32_t id;  // 0: not abandonable
  CUcontext ctx;
  CUevent event;     // nullptr: a context synchronize
  bool pooledEvent;  // created by streamSynchronizeAsync: goes back to the pool when done
  Napi::Promise::Deferred deferred;
  const char* api;
  CUresult result = CUDA_SUCCESS;
  Clock::time_point since;
  std::atomic<bool> abandoned{false};  // set on the JS thread, read by the waiter threads
};

static void ResolveOnJsThread(Napi::Env env, Napi::Function, void*, Pending* p);
using WaitTsfn = Napi::TypedThreadSafeFunction<void, Pending, ResolveOnJsThread>;

struct Waiter {
  std::thread thread;     // polls events
  std::thread ctxThread;  // blocks in cuCtxSynchronize
  std::mutex mu;
  MonotonicCondition cv;  // the event thread: waits with a timeout
  std::condition_variable ctxCv;
  std::deque<Pending*> incoming;
  std::deque<Pending*> ctxIncoming;
  bool stop = false;
  bool ctxBusy = false;  // the context thread is inside cuCtxSynchronize (guarded by mu)
  WaitTsfn tsfn;
  size_t pending = 0;                                // JS thread only: waits that keep the process alive
  std::vector<std::pair<CUcontext, CUevent>> spare;  // pooled events, JS thread only
  std::unordered_map<uint32_t, Pending*> byId;       // JS thread only: abandonable waits still in flight

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
        if (active.empty()) cv.Wait(lock, [&] { return stop || !incoming.empty(); });
        if (stop) break;
        while (!incoming.empty()) {
          active.push_back(incoming.front());
          incoming.pop_front();
        }
      }
      auto oldest = Clock::now();
      for (size_t i = 0; i < active.size();) {
        Pending* p = active[i];
        CUresult r = CUDA_ERROR_NOT_READY;
        if (!p->abandoned.load(std::memory_order_acquire)) {
          r = TryBindContext(p->ctx);
          if (r == CUDA_SUCCESS) r = CU_TRY(cuEventQuery, p->event);
        }
        if (r != CUDA_ERROR_NOT_READY || p->abandoned.load(std::memory_order_acquire)) {
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
        cv.WaitFor(lock, std::chrono::microseconds(200), [&] { return stop || !incoming.empty(); });
      }
    }
  }

  void CtxLoop() {
    for (;;) {
      std::vector<Pending*> batch;
      {
        std::unique_lock<std::mutex> lock(mu);
        ctxBusy = false;
        ctxCv.wait(lock, [&] { return stop || !ctxIncoming.empty(); });
        if (stop) return;
        batch.assign(ctxIncoming.begin(), ctxIncoming.end());
        ctxIncoming.clear();
        ctxBusy = true;
      }
      // One synchronize per context covers every wait that was queued before it started.
      for (size_t i = 0; i < batch.size(); i++) {
        Pending* p = batch[i];
        if (p->abandoned.load(std::memory_order_acquire)) continue;
        bool done = false;
        for (size_t j = 0; j < i; j++) done = done || (batch[j]->ctx == p->ctx && !batch[j]->abandoned.load());
        if (done) continue;
        CUresult r = TryBindContext(p->ctx);
        if (r == CUDA_SUCCESS) r = CU_TRY(cuCtxSynchronize);
        for (size_t j = i; j < batch.size(); j++) {
          if (batch[j]->ctx == p->ctx) batch[j]->result = r;
        }
      }
      for (Pending* p : batch) tsfn.NonBlockingCall(p);
    }
  }
};

static void ResolveOnJsThread(Napi::Env env, Napi::Function, void*, Pending* p) {
  if (env != nullptr) {
    Addon& addon = GetAddon(env);
    Waiter* w = addon.waiter;
    bool abandoned = p->abandoned.load();
    if (abandoned || p->result == CUDA_SUCCESS) {
      p->deferred.Resolve(env.Undefined());  // an abandoned wait's promise has no listener left
    } else {
      p->deferred.Reject(MakeCudaError(env, p->api, p->result).Value());
    }
    if (w != nullptr) {
      if (p->id != 0) w->byId.erase(p->id);
      if (p->pooledEvent) {
        if (p->result == CUDA_SUCCESS) {
          w->spare.emplace_back(p->ctx, p->event);
        } else if (TryBindContext(p->ctx) == CUDA_SUCCESS) {
          CU_TRY(cuEventDestroy, p->event);  // still pending (abandoned) or failed: never reused
        }
      }
      if (!abandoned && --w->pending == 0) w->tsfn.Unref(env);
    }
  }
  delete p;
}

static Waiter* GetWaiter(Napi::Env env) {
  Addon& addon = GetAddon(env);
  if (addon.waiter == nullptr) {
    auto* w = new Waiter();
    w->tsfn = WaitTsfn::New(env, "cudakit:wait", 0, 1);
    w->tsfn.Unref(env);  // only pending waits keep the process alive
    w->thread = std::thread([w] { w->Loop(); });
    w->ctxThread = std::thread([w] { w->CtxLoop(); });
    addon.waiter = w;
  }
  return addon.waiter;
}

static uint32_t WaitId(const Napi::CallbackInfo& info, size_t i) {
  return info.Length() > i && !info[i].IsUndefined() ? ArgU32(info, i, "waitId") : 0;
}

static void CheckWaitId(Napi::Env env, Waiter* w, uint32_t id) {
  if (id != 0 && w->byId.count(id) != 0) throw Napi::RangeError::New(env, "waitId is already in use");
}

static Napi::Promise Enqueue(Napi::Env env, uint32_t id, CUcontext ctx, CUevent ev, bool pooled, const char* api) {
  Waiter* w = GetWaiter(env);
  CheckWaitId(env, w, id);
  auto* p = new Pending(env, id, ctx, ev, pooled, api);
  Napi::Promise promise = p->deferred.Promise();
  if (id != 0) w->byId[id] = p;
  if (w->pending++ == 0) w->tsfn.Ref(env);
  {
    std::lock_guard<std::mutex> lock(w->mu);
    (ev == nullptr ? w->ctxIncoming : w->incoming).push_back(p);
  }
  if (ev == nullptr) {
    w->ctxCv.notify_one();
  } else {
    w->cv.NotifyOne();
  }
  return promise;
}

void StopWaiter(Addon& addon) {
  Waiter* w = addon.waiter;
  if (w == nullptr) return;
  bool ctxBusy;
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->stop = true;
    ctxBusy = w->ctxBusy;
  }
  w->cv.NotifyOne();
  w->ctxCv.notify_one();
  if (w->thread.joinable()) w->thread.join();
  // A context thread inside cuCtxSynchronize may wait for a kernel that never ends: leave it, never join it.
  if (ctxBusy) {
    w->ctxThread.detach();
  } else if (w->ctxThread.joinable()) {
    w->ctxThread.join();
  }
  w->tsfn.Abort();
  for (auto& [ctx, ev] : w->spare) {
    if (TryBindContext(ctx) == CUDA_SUCCESS) CU_TRY(cuEventDestroy, ev);
  }
  addon.waiter = nullptr;
  // `w` itself is leaked on purpose: queued tsfn calls and a detached context thread may still reference it.
}

// waitAbandon(waitId) -> true when the wait was still in flight: its promise settles as resolved, unobserved, and
// no longer keeps the process alive.
static Napi::Value WaitAbandon(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = ArgU32(info, 0, "waitId");
  Waiter* w = GetAddon(env).waiter;
  if (w == nullptr) return Napi::Boolean::New(env, false);
  auto it = w->byId.find(id);
  if (it == w->byId.end() || it->second->abandoned.load()) return Napi::Boolean::New(env, false);
  it->second->abandoned.store(true, std::memory_order_release);
  if (--w->pending == 0) w->tsfn.Unref(env);
  return Napi::Boolean::New(env, true);
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

// eventWaitAsync(ctx, event, waitId?) -> Promise<void> resolved when the event completes
static Napi::Value EventWaitAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  auto e = ArgHandle<CUevent>(info, 1, "event");
  uint32_t id = WaitId(info, 2);
  NeedDriver(env, drv::cuEventQuery);
  return Enqueue(env, id, ctx, e, false, "cuEventSynchronize");
}

// ctxSynchronizeAsync(ctx, waitId?) -> Promise<void>: cuCtxSynchronize on the env's context thread
static Napi::Value CtxSynchronizeAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  uint32_t id = WaitId(info, 1);
  NeedDriver(env, drv::cuCtxSynchronize);
  return Enqueue(env, id, ctx, nullptr, false, "cuCtxSynchronize");
}

// streamSynchronizeAsync(ctx, stream, waitId?) -> Promise<void>: records a pooled event on the stream, waits for it
static Napi::Value StreamSynchronizeAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  auto s = ArgHandle<CUstream>(info, 1, "stream");
  uint32_t id = WaitId(info, 2);
  BindContext(env, ctx);
  Waiter* w = GetWaiter(env);
  CheckWaitId(env, w, id);
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
  return Enqueue(env, id, ctx, e, true, "cuStreamSynchronize");
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
  Export(env, exports, "ctxSynchronizeAsync", CtxSynchronizeAsync);
  Export(env, exports, "waitAbandon", WaitAbandon);
}

}  // namespace cudakit
