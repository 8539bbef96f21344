// SPDX-License-Identifier: MIT
// The evaluation layer: one job (a JSON-serialisable EvalJob) through the whole pipeline, compile → check →
// time → re-check → report, for the command line, spec files and the evaluation service. It stands on
// core/index.ts and measure/index.ts. The first block is the public API, which the package root re-exports; the
// second is for the command line above it.
export { evaluate } from './pipeline.js';
export { emptyReport, errorOf as evalErrorOf } from './report.js';
export { InvalidJobError, validateJob } from './validate.js';
export { profileJob } from './profile.js';
export { DIM_EXPR_LIMITS, evalDimExpr, parseDimExpr } from './dims.js';
export { InvalidProblemError, PROBLEM_LIMITS, validateProblem } from './problem.js';
export { caseJob, caseName, caseWork } from './problem-case.js';
export { evaluateProblem } from './evaluate-problem.js';
export { caseScore, problemScore } from './score.js';

export type {
  BenchSpec,
  EvalArg,
  EvalArgObject,
  EvalBufferArg,
  EvalCheck,
  EvalCheckOptions,
  EvalPrecision,
  EvalData,
  EvalExpected,
  EvalInit,
  EvalJob,
  EvalKernelRef,
  EvalKernelRole,
  EvalOptions,
  EvalPhase,
  EvalProgress,
  EvalScalarArg,
  EvalScalarType,
  EvalSource,
  EvalTimingOptions,
  JsReference,
} from './job.js';
export type { EvalCompileFacts, EvalError, EvalReport } from './report.js';
export type { JobProblem } from './validate.js';
export type { DimEvalOptions, DimExpr } from './dims.js';
export type {
  CaseVisibility,
  DimValue,
  EvalProblem,
  LaunchDim,
  ProblemArg,
  ProblemBufferArg,
  ProblemCase,
  ProblemCheckOptions,
  ProblemPrecision,
  ProblemDim,
  ProblemKernelRef,
  ProblemSubmission,
  ProblemTimingOptions,
  Tolerance,
} from './problem-types.js';
export type { CaseWork } from './problem-case.js';
export type { ProblemCaseReport, ProblemEvalOptions, ProblemProgress, ProblemReport } from './evaluate-problem.js';
export type { CaseScore, CaseTiming, ProblemScore } from './score.js';
export type { ProfileJobOptions } from './profile.js';

// For the layers above.
export { compileSource, externCKernels, readSource } from './source.js';
export type { SourceText } from './source.js';
export { prepareJob } from './validate.js';
export { loadJobReference } from './reference-kernel.js';
export type { LoadedReference } from './reference-kernel.js';
export type { PreparedArg, PreparedJob } from './validate.js';
export { paint, progressLine, row } from '../measure/index.js';
