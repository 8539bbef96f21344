// SPDX-License-Identifier: MIT
// cudakit: the CUDA Driver API and NVRTC for Node.js. Public surface (values first, then types).
export { DEFAULT_POOL_CACHE_LIMIT_BYTES, Device } from './core/device.js';
export { AbortError, CudaError, CompileError, TimeoutError, contextLostBy } from './core/errors.js';
export { DeviceBuffer, DeviceArray, HostRegistration, freeHost, isPinned } from './core/memory.js';
export { Program, ObjectCode, compileFlags, nvrtcVersion, supportedArchs, parseDiagnostics } from './core/program.js';
export { Module } from './core/module.js';
export { Kernel, toHalfBits, toBf16Bits } from './core/kernel.js';
export { Stream } from './core/stream.js';
export { Event } from './core/event.js';
export { Graph, GraphExec } from './core/graph.js';
export { probe } from './core/probe.js';
export { getNative as native } from './core/native.js';
export { clearMemoryCache, defaultCacheDir } from './core/cache.js';
export { bench, compare } from './measure/bench.js';
export { check, inputSets } from './measure/check.js';
export { parseArgSpec, parseArgSpecs, signatureOf } from './measure/argspec.js';
export { formatComparison, formatDuration, formatJson, formatResult, histogram } from './measure/format.js';
export { PRESETS, bootstrapRatio, medianCI, quantile, summarize, verdict } from './measure/stats.js';

export type { DeviceAttributeName } from './core/attributes.js';
export type { ComputeCapability, MemoryInfo, LaunchLimits } from './core/device.js';
export type { Diagnostic } from './core/errors.js';
export type { AllocOptions, CopyOptions, TypedArrayConstructor } from './core/memory.js';
export type { CompileOptions, CompileTarget, CppStandard, ProgramOptions } from './core/program.js';
export type { JitOptions, LoadModuleOptions } from './core/module.js';
export type {
  ArgFor, ArgsFor, BytesType, Dim3, KernelAttributes, LaunchConfig, ParamType, ScalarType, Signature, StructType,
  VectorElement, VectorType,
} from './core/kernel.js';
export type { StreamOptions, CaptureMode } from './core/stream.js';
export type { RecordOptions } from './core/event.js';
export type { WaitOptions } from './core/wait.js';
export type { ProbeResult } from './core/probe.js';
export type { Native, NativeStats, Handle } from './core/native.js';
export type { BenchArgs, BenchOptions, CompareOptions, CompareTarget } from './measure/bench.js';
export type {
  BenchEnvironment, BenchMode, BenchResult, BenchSample, CompareResult, PresetName, Summary, Throughput, Verdict,
} from './measure/types.js';
export type { PeakBandwidth, PeakBandwidthMethod } from './measure/types.js';
export type { CheckOptions, CheckResult, Defence, ErrorFigures, HostValue, Mismatch, Reference, TrialResult } from './measure/check.js';
export type { CheckFault } from './measure/check.js';
export type { ArgSpec, BufferArgSpec, BufferDType, InitSpec, ScalarArgSpec } from './measure/argspec.js';
export type { StoppingRule } from './measure/stats.js';
