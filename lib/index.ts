// SPDX-License-Identifier: MIT
// cudakit: the CUDA Driver API and NVRTC for Node.js. The package root: the public API of the core layer (the
// binding), the measure layer (bench, compare, check) and the eval layer (evaluate), values first, then types.
export {
  AbortError, CompileError, CudaError, DEFAULT_POOL_CACHE_LIMIT_BYTES, Device, DeviceArray, DeviceBuffer, Event, Graph,
  GraphExec, HostRegistration, Kernel, KernelFunction, Module, ObjectCode, Program, Stream, TimeoutError,
  clearMemoryCache, compileFlags, contextLostBy, defaultCacheDir, freeHost, fromBf16Bits, fromHalfBits, isPinned, native,
  nvrtcVersion, parseDiagnostics, probe, supportedArchs, toBf16Bits, toHalfBits,
} from './core/index.js';
export {
  PRESETS, bench, bootstrapRatio, check, checkArgSpecs, compare, formatComparison, formatDuration, formatJson,
  formatResult, histogram, inputSets, medianCI, parseArgSpec, parseArgSpecs, quantile, signatureOf, summarize, verdict,
} from './measure/index.js';
export { InvalidJobError, evaluate, validateJob } from './eval/index.js';

export type {
  AllocOptions, ArgFor, ArgsFor, BytesType, CaptureMode, CompileOptions, CompileTarget, CompiledParam,
  ComputeCapability, CopyOptions, CppStandard, DType, DeviceAttributeName, Diagnostic, Dim3, Handle, JitOptions,
  KernelAttributes, LaunchConfig, LaunchLimits, LoadModuleOptions, MemoryInfo, Native, NativeStats, ParamType,
  ProbeResult, ProgramOptions, RecordOptions, ScalarType, Signature, StreamOptions, StructType, TypedArrayConstructor,
  VectorElement, VectorType, WaitOptions,
} from './core/index.js';
export type {
  ArgScalarType, ArgSpec, BenchArgs, BenchEnvironment, BenchMode, BenchOptions, BenchResult, BenchSample,
  BufferArgSpec, BufferDType, CheckFault, CheckOptions, CheckResult, CompareOptions, CompareResult, CompareTarget,
  Defence, ErrorFigures, HostValue, InitSpec, InputSets, InputSetsOptions, Mismatch, PeakBandwidth,
  PeakBandwidthMethod, PresetName, Reference, ReferenceBinding, ReferenceKernel, ScalarArgSpec, SequenceAxis,
  StoppingRule, Summary, Throughput, TrialResult, Verdict,
} from './measure/index.js';
export type {
  BenchSpec, EvalArg, EvalArgObject, EvalBufferArg, EvalCheck, EvalCheckOptions, EvalCompileFacts, EvalData, EvalError,
  EvalExpected, EvalInit, EvalJob, EvalKernelRef, EvalKernelRole, EvalOptions, EvalPhase, EvalProgress, EvalReport,
  EvalScalarArg, EvalScalarType, EvalSource, EvalTimingOptions, JobProblem, JsReference,
} from './eval/index.js';
