// SPDX-License-Identifier: MIT
// The evaluation layer: one job (a JSON-serialisable EvalJob) through the whole pipeline, compile → check → time →
// re-check → report, for the command line, spec files and the evaluation service. It stands on core/index.ts and
// measure/index.ts.
export {};
