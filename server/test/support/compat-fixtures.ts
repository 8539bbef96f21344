// SPDX-License-Identifier: MIT
// The compatible routes' fixtures (test/fixtures/compat/: the original server's payloads, as they are) and the Python a
// server with --python reports, for the tests of Python kernels on those routes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CompareRequest } from '../../src/compat/schemas.js';
import type { PythonFacts } from '../../src/run/python.js';

export const COMPAT_FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'compat');

/** A fixture of test/fixtures/compat/, parsed afresh (a test may change it). */
export const compatFixture = (file: string): CompareRequest =>
  JSON.parse(readFileSync(join(COMPAT_FIXTURES, file), 'utf8')) as CompareRequest;

/** What a GPU's host with a Python reports (/v1/gpus shows it). */
export const PYTHON: PythonFacts = {
  path: '/usr/bin/python3',
  python: '3.12.3',
  torch: '2.11.0+cu130',
  triton: '3.6.0',
  cudaVersion: '13.0',
};
