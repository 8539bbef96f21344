// SPDX-License-Identifier: MIT
// The core layer: the safe binding of the CUDA Driver API and NVRTC. The layers above (measure/, eval/) import it
// through this file only (measure/ also through sampler.ts, the TypeScript side of native/bench.cc). The first block
// is the public API, which the package root re-exports; the second is what the layers above share but users do not
// need.
export { DEFAULT_POOL_CACHE_LIMIT_BYTES, Device } from './device.js';
export { AbortError, CODE_RENAMES, CudaError, CompileError, TimeoutError, contextLostBy, nextCode } from './errors.js';
export { DeviceBuffer, DeviceArray } from './memory.js';
export { HostRegistration, freeHost, isPinned } from './host.js';
export {
  Program,
  ObjectCode,
  compileFlags,
  isArch,
  nvrtcVersion,
  supportedArchNames,
  supportedArchs,
  parseDiagnostics,
} from './program.js';
export { Module } from './module.js';
export { Kernel } from './kernel.js';
export { KernelFunction } from './function.js';
export { fromBf16Bits, fromFp8Bits, fromHalfBits, isFp8, toBf16Bits, toFp8Bits, toHalfBits } from './dtype.js';
export { Stream } from './stream.js';
export { Event } from './event.js';
export { Graph, GraphExec } from './graph.js';
export { TensorMap } from './tensor-map.js';
export { TENSOR_MAP_PARAM } from './args.js';
export { TENSOR_MAP_HEADER, TENSOR_MAP_HEADER_NAME } from './tensor-map-header.js';
export { probe } from './probe.js';
export { cuptiStatus } from './cupti.js';
export { getNative as native } from './native.js';
export { clearMemoryCache, defaultCacheDir } from './cache.js';

export type { DeviceAttributeName } from './attributes.js';
export type { ComputeCapability, MemoryInfo, LaunchLimits } from './device.js';
export type { Diagnostic } from './errors.js';
export type { AllocOptions, CopyOptions, DeviceCopy } from './memory.js';
export type { DType, TypedArrayConstructor } from './dtype.js';
export type {
  Arch,
  CompileOptions,
  CompileTarget,
  ComputeArch,
  CppStandard,
  ProgramOptions,
  SmArch,
} from './program.js';
export type { JitOptions, LoadModuleOptions } from './module.js';
export type {
  ArgFor,
  ArgsFor,
  BytesType,
  ParamType,
  ScalarType,
  Signature,
  StructType,
  VectorElement,
  VectorType,
} from './args.js';
export type { Dim3, LaunchConfig } from './kernel.js';
export type { TensorMapDType, TensorMapLayout, TensorMapTiledOptions } from './tensor-map.js';
export type { CompiledParam, KernelAttributes } from './function.js';
export type { StreamOptions, CaptureMode } from './stream.js';
export type { RecordOptions } from './event.js';
export type { AbortSignalLike, WaitOptions } from './wait.js';
export type { ProbeResult } from './probe.js';
export type { CuptiStatus } from './cupti.js';
export type { CuptiLoadStatus, CuptiRecords, Native, NativeStats, Handle } from './native.js';

// For the layers above.
export { codedError, isContextLost } from './errors.js';
export { checkCompiledSignature } from './kernel.js';
export { COMPILE_OPTION_KEYS } from './program.js';
export {
  ActivityTrace,
  disableCupti,
  durationTick,
  inComputeSanitizer,
  sampleDurations,
  underComputeSanitizer,
} from './cupti.js';
export type { ActivityRecord } from './cupti.js';
export {
  checkBoolean,
  checkInt,
  checkObject,
  checkOptions,
  checkPositiveInt,
  checkSize,
  checkString,
  describe,
  isBufferSource,
  rangeError,
  typeError,
} from './validate.js';
export { DTYPES, DTYPE_INFO, SCALAR_BYTES, TYPED_ARRAYS, fromDeviceBytes, isDType, toDeviceBytes } from './dtype.js';
export type { DTypeInfo, Fp8DType, HostArray } from './dtype.js';
