// SPDX-License-Identifier: MIT
// The measuring layer: timing (bench, compare), correctness (check, inputSets), device metrics (profile, under
// Nsight Compute), statistics, the roofline floor (the GPUs' datasheet peaks), argument specs and reports. It stands
// on the core layer (core/index.ts, core/sampler.ts); eval/ imports it through this file only.
// The first block is the public API, which the package root re-exports; the second is for the layers above.
export { bench } from './bench.js';
export { driftProbe } from './drift.js';
export { compare } from './compare.js';
export { check } from './check.js';
export { inputSets } from './input-sets.js';
export { checkArgSpecs, parseArgSpec, parseArgSpecs, signatureOf } from './argspec.js';
export { formatComparison, formatDuration, formatJson, formatResult, histogram } from './format.js';
export { PRESETS, bootstrapRatio, medianCI, quantile, shouldStop, summarize, verdict } from './stats.js';
export { DEVICE_PEAKS, devicePeakOf, rooflineFloorMs } from './roofline.js';
export { profile } from './profile.js';
export { DEFAULT_DEVICE_METRICS, METRIC_GROUPS } from './profile-ncu.js';
export { formatDeviceMetrics } from './profile-format.js';

export type { BenchArgs, BenchOptions } from './bench-options.js';
export type { DriftProbe } from '../core/sampler.js';
export type { CompareOptions, CompareTarget } from './compare.js';
export type {
  BenchEnvironment,
  BenchMode,
  BenchResult,
  BenchSample,
  BenchTimer,
  DriftReport,
  CompareResult,
  PeakBandwidth,
  PeakBandwidthMethod,
  PresetName,
  Summary,
  Throughput,
  Verdict,
} from './types.js';
export type { CheckOptions, CheckPrecision, HostCandidate } from './check.js';
export type { CheckFault, CheckResult, ErrorFigures, TrialResult } from './check-result.js';
export type { Defence, Mismatch } from './compare-output.js';
export type { InputSets, InputSetsOptions } from './input-sets.js';
export type { HostValue, Reference, ReferenceBinding, ReferenceKernel } from './reference.js';
export type {
  ArgScalarType,
  ArgSpec,
  BufferArgSpec,
  BufferDType,
  InitSpec,
  ScalarArgSpec,
  SequenceAxis,
} from './argspec.js';
export type { StopDecision, StopReason, StoppingRule } from './stats.js';
export type { DevicePeak } from './roofline.js';
export type { GpuWork, WorkTarget } from './work.js';
export type {
  DeviceMetric,
  DeviceMetricGroup,
  DeviceMetrics,
  ProfileFailure,
  ProfileLaunch,
  ProfileOptions,
  ProfileResult,
} from './profile.js';

// For the layers above.
export { paint, progressLine, row } from './format.js';
export { CHECK_OPTION_KEYS } from './check.js';
export { buildCheckResult } from './check-result.js';
export { matchReferenceIo } from './reference.js';
export { createRng, normal, splitmix64 } from './random.js';
export { argumentLabel, roleOf } from './argspec.js';
export { checkProfileOptions } from './profile.js';
export type { BufferRole } from './argspec.js';
export type { FormatOptions } from './format.js';
