// SPDX-License-Identifier: MIT
// The measuring layer: timing (bench, compare), correctness (check, inputSets), statistics, argument specs and
// reports. It stands on the core layer (core/index.ts, core/sampler.ts); eval/ imports it through this file only.
// The first block is the public API, which the package root re-exports; the second is for the layers above.
export { bench, compare } from './bench.js';
export { check, inputSets } from './check.js';
export { parseArgSpec, parseArgSpecs, signatureOf } from './argspec.js';
export { formatComparison, formatDuration, formatJson, formatResult, histogram } from './format.js';
export { PRESETS, bootstrapRatio, medianCI, quantile, summarize, verdict } from './stats.js';

export type { BenchArgs, BenchOptions, CompareOptions, CompareTarget } from './bench.js';
export type {
  BenchEnvironment, BenchMode, BenchResult, BenchSample, CompareResult, PeakBandwidth, PeakBandwidthMethod, PresetName,
  Summary, Throughput, Verdict,
} from './types.js';
export type {
  CheckFault, CheckOptions, CheckResult, Defence, ErrorFigures, HostValue, Mismatch, Reference, TrialResult,
} from './check.js';
export type { ArgSpec, BufferArgSpec, BufferDType, InitSpec, ScalarArgSpec } from './argspec.js';
export type { StoppingRule } from './stats.js';

// For the layers above.
export { progressLine } from './format.js';
export type { FormatOptions } from './format.js';
