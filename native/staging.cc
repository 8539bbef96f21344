// SPDX-License-Identifier: MIT
// Staged copies between pageable host memory (ordinary TypedArrays) and the device.
//
// The driver copies pageable memory through one internal pinned buffer with one CPU thread, which caps it far below
// the bus (about 11 GB/s H2D on an H100 host). Here W helper threads each own a stream and two pinned chunks: a
// thread copies chunk k into one pinned slot while the DMA engine moves chunk k-1 from the other, and the W threads
// run side by side, so CPU memcpy bandwidth scales with W and overlaps the transfer.
//
// Ordering: every helper stream first waits on an event recorded on the caller's stream (the legacy default stream
// when none), so the copy sees all earlier work there; the call returns once all helper streams are done, so later
// work sees the copied data. Like cuMemcpyHtoD on pageable memory, the call is synchronous for the host.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <thread>

#include "common.h"

namespace cudakit {
namespace {

enum class Direction { HtoD, DtoH };

struct Job {
  Direction dir;
  CUcontext ctx;
  uint8_t* host;
  CUdeviceptr dev;
  size_t bytes;
  size_t chunk;
  unsigned workers;
  CUevent start;
  std::mutex mu;
  std::condition_variable done;
  unsigned remaining;
  CUresult error = CUDA_SUCCESS;
  const char* failedApi = nullptr;

  void Fail(CUresult r, const char* api) {
    std::lock_guard<std::mutex> lock(mu);
    if (error == CUDA_SUCCESS) {
      error = r;
      failedApi = api;
    }
  }
  bool Failed() {
    std::lock_guard<std::mutex> lock(mu);
    return error != CUDA_SUCCESS;
  }
};

// A pool thread's resources in one context.
struct Lane {
  CUstream stream = nullptr;
  void* slot[2] = {nullptr, nullptr};
  CUevent ready[2] = {nullptr, nullptr};
  size_t chunk = 0;
};

#define STAGE_TRY(job, call, api) \
  do {                            \
    CUresult r_ = (call);         \
    if (r_ != CUDA_SUCCESS) {     \
      (job).Fail(r_, api);        \
      return;                     \
    }                             \
  } while (0)

class Stager {
 public:
  static Stager& Get() {
    static Stager* s = new Stager();  // never destroyed: its threads live as long as the process
    return *s;
  }

  // Retains the context's device primary context for the process lifetime, so pinned chunks and helper streams
  // created in it stay valid whatever the envs that use cudakit do with their own retains.
  CUresult Adopt(CUcontext ctx) {
    std::lock_guard<std::mutex> lock(mu_);
    if (adopted_.count(ctx) != 0) return CUDA_SUCCESS;
    CUdevice dev = 0;
    CUresult r = CU_TRY(cuCtxGetDevice, &dev);
    CUcontext retained = nullptr;
    if (r == CUDA_SUCCESS) r = CU_TRY(cuDevicePrimaryCtxRetain, &retained, dev);
    if (r != CUDA_SUCCESS) return r;
    CUevent start = nullptr;
    r = CU_TRY(cuEventCreate, &start, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) return r;
    adopted_[ctx] = start;
    return CUDA_SUCCESS;
  }

  CUevent StartEvent(CUcontext ctx) {
    std::lock_guard<std::mutex> lock(mu_);
    return adopted_[ctx];
  }

  void Run(Job& job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (threads_.size() < job.workers) {
        size_t index = threads_.size();
        threads_.emplace_back([this, index] { Loop(index); });
        threads_.back().detach();
      }
      job.remaining = job.workers;
      for (unsigned w = 0; w < job.workers; w++) tasks_.push_back({&job, w});
    }
    cv_.notify_all();
    std::unique_lock<std::mutex> lock(job.mu);
    job.done.wait(lock, [&] { return job.remaining == 0; });
  }

 private:
  struct Task {
    Job* job;
    unsigned worker;
  };

  void Loop(size_t index) {
    std::map<CUcontext, Lane> lanes;  // this thread's resources, per context
    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !tasks_.empty(); });
        t = tasks_.front();
        tasks_.pop_front();
      }
      Work(*t.job, t.worker, lanes[t.job->ctx]);
      std::lock_guard<std::mutex> lock(t.job->mu);
      if (--t.job->remaining == 0) t.job->done.notify_all();
    }
  }

  static void Prepare(Job& job, Lane& lane) {
    STAGE_TRY(job, TryBindContext(job.ctx), "cuCtxSetCurrent");
    if (lane.stream == nullptr)
      STAGE_TRY(job, CU_TRY(cuStreamCreateWithPriority, &lane.stream, 1u, 0), "cuStreamCreate");
    for (int i = 0; i < 2; i++) {
      if (lane.ready[i] == nullptr)
        STAGE_TRY(job, CU_TRY(cuEventCreate, &lane.ready[i], CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    }
    if (lane.chunk < job.chunk) {
      for (int i = 0; i < 2; i++) {
        if (lane.slot[i] != nullptr) {
          CU_TRY(cuEventSynchronize, lane.ready[i]);
          CU_TRY(cuMemFreeHost, lane.slot[i]);
          lane.slot[i] = nullptr;
        }
        STAGE_TRY(job, CU_TRY(cuMemHostAlloc, &lane.slot[i], job.chunk, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
      }
      lane.chunk = job.chunk;
    }
  }

  static void Work(Job& job, unsigned w, Lane& lane) {
    Prepare(job, lane);
    if (job.Failed()) return;
    STAGE_TRY(job, CU_TRY(cuStreamWaitEvent, lane.stream, job.start, 0u), "cuStreamWaitEvent");
    size_t chunks = (job.bytes + job.chunk - 1) / job.chunk;
    auto offset = [&](size_t i) { return i * job.chunk; };
    auto length = [&](size_t i) { return std::min(job.chunk, job.bytes - i * job.chunk); };
    if (job.dir == Direction::HtoD) {
      unsigned k = 0;
      for (size_t i = w; i < chunks; i += job.workers, k++) {
        int s = k & 1;
        STAGE_TRY(job, CU_TRY(cuEventSynchronize, lane.ready[s]), "cuEventSynchronize");  // slot free again
        std::memcpy(lane.slot[s], job.host + offset(i), length(i));
        STAGE_TRY(job, CU_TRY(cuMemcpyHtoDAsync, job.dev + offset(i), lane.slot[s], length(i), lane.stream),
                  "cuMemcpyHtoDAsync");
        STAGE_TRY(job, CU_TRY(cuEventRecord, lane.ready[s], lane.stream), "cuEventRecord");
        if (job.Failed()) return;
      }
    } else {
      std::vector<size_t> mine;
      for (size_t i = w; i < chunks; i += job.workers) mine.push_back(i);
      auto issue = [&](size_t j) -> CUresult {
        int s = j & 1;
        CUresult r = CU_TRY(cuMemcpyDtoHAsync, lane.slot[s], job.dev + offset(mine[j]), length(mine[j]), lane.stream);
        return r == CUDA_SUCCESS ? CU_TRY(cuEventRecord, lane.ready[s], lane.stream) : r;
      };
      if (!mine.empty()) STAGE_TRY(job, issue(0), "cuMemcpyDtoHAsync");
      for (size_t j = 0; j < mine.size(); j++) {
        if (j + 1 < mine.size()) STAGE_TRY(job, issue(j + 1), "cuMemcpyDtoHAsync");  // overlaps the memcpy below
        STAGE_TRY(job, CU_TRY(cuEventSynchronize, lane.ready[j & 1]), "cuEventSynchronize");
        std::memcpy(job.host + offset(mine[j]), lane.slot[j & 1], length(mine[j]));
        if (job.Failed()) return;
      }
    }
    STAGE_TRY(job, CU_TRY(cuStreamSynchronize, lane.stream), "cuStreamSynchronize");
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;
  std::vector<std::thread> threads_;
  std::map<CUcontext, CUevent> adopted_;
};

void RunStaged(const Napi::CallbackInfo& info, Direction dir) {
  Napi::Env env = info.Env();
  CUcontext ctx = ArgHandle<CUcontext>(info, 0, "ctx");
  Bytes host = ArgBytes(info, dir == Direction::HtoD ? 2 : 1, dir == Direction::HtoD ? "src" : "dst");
  CUdeviceptr dev = ArgU64(info, dir == Direction::HtoD ? 1 : 2, dir == Direction::HtoD ? "dst" : "src");
  CUstream stream = ArgHandle<CUstream>(info, 3, "stream");
  size_t chunk = ArgU64(info, 4, "chunkBytes");
  uint32_t threads = ArgU32(info, 5, "threads");
  if (chunk < 4096 || threads < 1 || threads > 64)
    throw Napi::RangeError::New(env, "chunkBytes >= 4096, threads in [1, 64]");
  if (host.length == 0) return;
  NeedDriver(env, drv::cuMemHostAlloc);
  BindContext(env, ctx);
  Stager& stager = Stager::Get();
  CUresult r = stager.Adopt(ctx);
  if (r != CUDA_SUCCESS) ThrowCuda(env, "cuDevicePrimaryCtxRetain", r);
  CUevent start = stager.StartEvent(ctx);
  CU_CALL(env, cuEventRecord, start, stream);
  size_t chunks = (host.length + chunk - 1) / chunk;
  Job job;
  job.dir = dir;
  job.ctx = ctx;
  job.host = host.data;
  job.dev = dev;
  job.bytes = host.length;
  job.chunk = chunk;
  job.workers = static_cast<unsigned>(std::min<size_t>(threads, chunks));
  job.start = start;
  stager.Run(job);
  if (job.error != CUDA_SUCCESS) ThrowCuda(env, job.failedApi, job.error);
}

}  // namespace

// memcpyHtoDStaged(ctx, dst, srcView, stream, chunkBytes, threads)
static Napi::Value MemcpyHtoDStaged(const Napi::CallbackInfo& info) {
  RunStaged(info, Direction::HtoD);
  return info.Env().Undefined();
}

// memcpyDtoHStaged(ctx, dstView, src, stream, chunkBytes, threads)
static Napi::Value MemcpyDtoHStaged(const Napi::CallbackInfo& info) {
  RunStaged(info, Direction::DtoH);
  return info.Env().Undefined();
}

void InitStaging(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "memcpyHtoDStaged", MemcpyHtoDStaged);
  Export(env, exports, "memcpyDtoHStaged", MemcpyDtoHStaged);
}

}  // namespace cudakit
