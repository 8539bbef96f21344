// SPDX-License-Identifier: MIT
// NVRTC. Compilation is one native call (create, add name expressions, compile, read log/code/lowered names,
// destroy) so that the Promise form can run the whole sequence on a libuv pool thread without touching JS.
#include <chrono>
#include <memory>

#include "common.h"

namespace cudakit {

// nvrtcVersion -> [major, minor]
static Napi::Value NvrtcVersion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int major = 0, minor = 0;
  int r = NeedNvrtc(env, nvrtcapi::nvrtcVersion)(&major, &minor);
  if (r != nvrtc::NVRTC_SUCCESS) ThrowNvrtc(env, "nvrtcVersion", r, "");
  Napi::Array a = Napi::Array::New(env, 2);
  a.Set(0u, major);
  a.Set(1u, minor);
  return a;
}

// nvrtcGetSupportedArchs -> number[] (empty when this NVRTC predates the call)
static Napi::Value NvrtcGetSupportedArchs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  NeedNvrtc(env, nvrtcapi::nvrtcVersion);
  auto* count = nvrtcapi::nvrtcGetNumSupportedArchs.Get();
  auto* list = nvrtcapi::nvrtcGetSupportedArchs.Get();
  std::vector<int> archs;
  int n = 0;
  if (count != nullptr && list != nullptr && count(&n) == nvrtc::NVRTC_SUCCESS && n > 0) {
    archs.resize(n);
    if (list(archs.data()) != nvrtc::NVRTC_SUCCESS) archs.clear();
  }
  Napi::Array a = Napi::Array::New(env, archs.size());
  for (size_t i = 0; i < archs.size(); i++) a.Set(static_cast<uint32_t>(i), archs[i]);
  return a;
}

struct CompileJob {
  // inputs
  std::string source, name, target;
  std::vector<std::string> headerNames, headerSources, options, nameExpressions;
  // outputs
  int result = 0;
  std::string failedCall;  // which NVRTC call returned `result`
  std::string log;
  std::vector<char> code;
  std::vector<std::string> loweredNames;
  double elapsedMs = 0;  // wall time of the NVRTC calls, create to destroy

  void Run() {
    auto t0 = std::chrono::steady_clock::now();
    RunNvrtc();
    elapsedMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  void RunNvrtc() {
    nvrtc::nvrtcProgram prog = nullptr;
    std::vector<const char*> hs, hn, opts;
    for (auto& s : headerSources) hs.push_back(s.c_str());
    for (auto& s : headerNames) hn.push_back(s.c_str());
    for (auto& s : options) opts.push_back(s.c_str());
    result = nvrtcapi::nvrtcCreateProgram.Get()(&prog, source.c_str(), name.c_str(), static_cast<int>(hs.size()),
                                                hs.data(), hn.data());
    if (result != nvrtc::NVRTC_SUCCESS) {
      failedCall = "nvrtcCreateProgram";
      return;
    }
    for (auto& e : nameExpressions) {
      result = nvrtcapi::nvrtcAddNameExpression.Get()(prog, e.c_str());
      if (result != nvrtc::NVRTC_SUCCESS) {
        failedCall = "nvrtcAddNameExpression";
        nvrtcapi::nvrtcDestroyProgram.Get()(&prog);
        return;
      }
    }
    result = nvrtcapi::nvrtcCompileProgram.Get()(prog, static_cast<int>(opts.size()), opts.data());
    if (result != nvrtc::NVRTC_SUCCESS) failedCall = "nvrtcCompileProgram";
    size_t logSize = 0;
    if (nvrtcapi::nvrtcGetProgramLogSize.Get()(prog, &logSize) == nvrtc::NVRTC_SUCCESS && logSize > 1) {
      log.resize(logSize);
      nvrtcapi::nvrtcGetProgramLog.Get()(prog, &log[0]);
      log.resize(logSize - 1);  // drop the terminating NUL
    }
    if (result == nvrtc::NVRTC_SUCCESS) ReadOutputs(prog);
    nvrtcapi::nvrtcDestroyProgram.Get()(&prog);
  }

  void ReadOutputs(nvrtc::nvrtcProgram prog) {
    size_t size = 0;
    if (target == "cubin") {
      auto* getSize = nvrtcapi::nvrtcGetCUBINSize.Get();
      auto* get = nvrtcapi::nvrtcGetCUBIN.Get();
      if (getSize == nullptr || get == nullptr) {
        result = 7;  // NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: this NVRTC cannot emit CUBIN
        failedCall = "nvrtcGetCUBIN";
        return;
      }
      result = getSize(prog, &size);
      if (result == nvrtc::NVRTC_SUCCESS) {
        code.resize(size);
        result = get(prog, code.data());
      }
      if (result != nvrtc::NVRTC_SUCCESS) failedCall = "nvrtcGetCUBIN";
    } else {
      result = nvrtcapi::nvrtcGetPTXSize.Get()(prog, &size);
      if (result == nvrtc::NVRTC_SUCCESS) {
        code.resize(size);
        result = nvrtcapi::nvrtcGetPTX.Get()(prog, code.data());
        // PTX is text: keep the bytes, without the terminating NUL
        if (!code.empty() && code.back() == '\0') code.pop_back();
      }
      if (result != nvrtc::NVRTC_SUCCESS) failedCall = "nvrtcGetPTX";
    }
    if (result != nvrtc::NVRTC_SUCCESS) return;
    for (auto& e : nameExpressions) {
      const char* lowered = nullptr;
      int r = nvrtcapi::nvrtcGetLoweredName.Get()(prog, e.c_str(), &lowered);
      loweredNames.push_back(r == nvrtc::NVRTC_SUCCESS && lowered != nullptr ? lowered : "");
    }
  }

  Napi::Object ToJs(Napi::Env env) const {
    Napi::Object o = Napi::Object::New(env);
    o.Set("result", result);
    o.Set("failedCall", failedCall);
    const char* s = nvrtcapi::nvrtcGetErrorString.Get() != nullptr ? nvrtcapi::nvrtcGetErrorString.Get()(result) : "";
    o.Set("resultName", s != nullptr ? s : "");
    o.Set("log", log);
    o.Set("elapsedMs", elapsedMs);
    if (result == nvrtc::NVRTC_SUCCESS) {
      o.Set("code", Napi::Buffer<char>::Copy(env, code.data(), code.size()));
      Napi::Array names = Napi::Array::New(env, loweredNames.size());
      for (size_t i = 0; i < loweredNames.size(); i++) names.Set(static_cast<uint32_t>(i), loweredNames[i]);
      o.Set("loweredNames", names);
    }
    return o;
  }
};

static std::vector<std::string> StringArray(Napi::Env env, Napi::Value v, const char* name) {
  std::vector<std::string> out;
  if (v.IsUndefined()) return out;
  if (!v.IsArray()) throw Napi::TypeError::New(env, std::string("Expected an array of strings for ") + name);
  auto a = v.As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); i++) {
    Napi::Value e = a.Get(i);
    if (!e.IsString()) throw Napi::TypeError::New(env, std::string("Expected an array of strings for ") + name);
    out.push_back(e.As<Napi::String>().Utf8Value());
  }
  return out;
}

// Reads { source, name, headerNames, headerSources, options, nameExpressions, target } and checks NVRTC is there.
static CompileJob* ReadJob(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  NeedNvrtc(env, nvrtcapi::nvrtcCreateProgram);
  NeedNvrtc(env, nvrtcapi::nvrtcDestroyProgram);
  NeedNvrtc(env, nvrtcapi::nvrtcCompileProgram);
  NeedNvrtc(env, nvrtcapi::nvrtcGetProgramLogSize);
  NeedNvrtc(env, nvrtcapi::nvrtcGetProgramLog);
  NeedNvrtc(env, nvrtcapi::nvrtcGetPTXSize);
  NeedNvrtc(env, nvrtcapi::nvrtcGetPTX);
  NeedNvrtc(env, nvrtcapi::nvrtcAddNameExpression);
  NeedNvrtc(env, nvrtcapi::nvrtcGetLoweredName);
  if (!info[0].IsObject()) throw Napi::TypeError::New(env, "compileProgram expects an object");
  Napi::Object o = info[0].As<Napi::Object>();
  auto* job = new CompileJob();
  try {
    if (!o.Get("source").IsString()) throw Napi::TypeError::New(env, "Expected a string for source");
    job->source = o.Get("source").As<Napi::String>().Utf8Value();
    job->name = o.Get("name").IsString() ? o.Get("name").As<Napi::String>().Utf8Value() : "program.cu";
    job->target = o.Get("target").IsString() ? o.Get("target").As<Napi::String>().Utf8Value() : "cubin";
    job->headerNames = StringArray(env, o.Get("headerNames"), "headerNames");
    job->headerSources = StringArray(env, o.Get("headerSources"), "headerSources");
    job->options = StringArray(env, o.Get("options"), "options");
    job->nameExpressions = StringArray(env, o.Get("nameExpressions"), "nameExpressions");
    if (job->headerNames.size() != job->headerSources.size()) {
      throw Napi::RangeError::New(env, "headerNames and headerSources differ in length");
    }
  } catch (...) {
    delete job;
    throw;
  }
  return job;
}

// compileProgram(spec) -> { result, resultName, failedCall, log, code?, loweredNames? }; NVRTC failures are
// reported in the result (lib/program.ts turns them into CompileError with parsed diagnostics).
static Napi::Value CompileProgram(const Napi::CallbackInfo& info) {
  std::unique_ptr<CompileJob> job(ReadJob(info));
  job->Run();
  return job->ToJs(info.Env());
}

class CompileWorker : public Napi::AsyncWorker {
 public:
  CompileWorker(Napi::Env env, CompileJob* job) : Napi::AsyncWorker(env, "cudakit:nvrtcCompile"), d_(env), job_(job) {}
  void Execute() override { job_->Run(); }
  void OnOK() override { d_.Resolve(job_->ToJs(Env())); }
  Napi::Promise Promise() { return d_.Promise(); }

 private:
  Napi::Promise::Deferred d_;
  std::unique_ptr<CompileJob> job_;
};

// compileProgramAsync(spec) -> Promise of the same object, compiled on a libuv pool thread
static Napi::Value CompileProgramAsync(const Napi::CallbackInfo& info) {
  auto* w = new CompileWorker(info.Env(), ReadJob(info));
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

void InitProgram(Napi::Env env, Napi::Object exports) {
  Export(env, exports, "nvrtcVersion", NvrtcVersion);
  Export(env, exports, "nvrtcGetSupportedArchs", NvrtcGetSupportedArchs);
  Export(env, exports, "compileProgram", CompileProgram);
  Export(env, exports, "compileProgramAsync", CompileProgramAsync);
}

}  // namespace cudakit
