// SPDX-License-Identifier: MIT
// What most test files import, from test/support/ where it lives: the tier gates, the in-process command line and
// the kernels a test compiles.
export { describeGpu, describeMultiGpu, describeNvrtc, machine } from './support/gates.js';
export { type CliRun, cli } from './support/cli.js';
export { VECTOR_ADD } from './support/kernels.js';
