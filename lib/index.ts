// SPDX-License-Identifier: MIT
// cudakit: the CUDA Driver API and NVRTC for Node.js. Public surface (values first, then types).
export { DEFAULT_POOL_CACHE_LIMIT_BYTES, Device } from './device.js';
export { AbortError, CudaError, CompileError, TimeoutError, contextLostBy } from './errors.js';
export { DeviceBuffer, DeviceArray, HostRegistration, freeHost, isPinned } from './memory.js';
export { Program, ObjectCode, compileFlags, nvrtcVersion, supportedArchs, parseDiagnostics } from './program.js';
export { Module } from './module.js';
export { Kernel, toHalfBits, toBf16Bits } from './kernel.js';
export { Stream } from './stream.js';
export { Event } from './event.js';
export { Graph, GraphExec } from './graph.js';
export { probe } from './probe.js';
export { getNative as native } from './native.js';
export { clearMemoryCache, defaultCacheDir } from './cache.js';
export { bench, compare } from './bench.js';
export { check, inputSets } from './check.js';
export { parseArgSpec, parseArgSpecs, signatureOf } from './argspec.js';
export { formatComparison, formatDuration, formatJson, formatResult, histogram } from './format.js';
export { PRESETS, bootstrapRatio, medianCI, quantile, summarize, verdict } from './stats.js';

export type { DeviceAttributeName } from './attributes.js';
export type { ComputeCapability, MemoryInfo, LaunchLimits } from './device.js';
export type { Diagnostic } from './errors.js';
export type { AllocOptions, CopyOptions, TypedArrayConstructor } from './memory.js';
export type { CompileOptions, CompileTarget, CppStandard, ProgramOptions } from './program.js';
export type { JitOptions, LoadModuleOptions } from './module.js';
export type {
  ArgFor, ArgsFor, BytesType, Dim3, KernelAttributes, LaunchConfig, ParamType, ScalarType, Signature, StructType,
  VectorElement, VectorType,
} from './kernel.js';
export type { StreamOptions, CaptureMode } from './stream.js';
export type { RecordOptions } from './event.js';
export type { WaitOptions } from './wait.js';
export type { ProbeResult } from './probe.js';
export type { Native, NativeStats, Handle } from './native.js';
export type { BenchArgs, BenchOptions, CompareOptions, CompareTarget } from './bench.js';
export type {
  BenchEnvironment, BenchMode, BenchResult, BenchSample, CompareResult, PresetName, Summary, Throughput, Verdict,
} from './bench-types.js';
export type { PeakBandwidth, PeakBandwidthMethod } from './bench-types.js';
export type { CheckOptions, CheckResult, Defence, ErrorFigures, HostValue, Mismatch, Reference, TrialResult } from './check.js';
export type { CheckFault } from './check.js';
export type { ArgSpec, BufferArgSpec, BufferDType, InitSpec, ScalarArgSpec } from './argspec.js';
export type { StoppingRule } from './stats.js';
