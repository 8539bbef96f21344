// SPDX-License-Identifier: MIT
// A service with --python on this machine's GPUs, for the Python GPU tests: the sandbox as `nobody` (needs root), the
// interpreter $CUDAKIT_TEST_PYTHON, else python3 on PATH, checked as the server checks it at start. Where it cannot be
// made, `why` says why (the suite skips, unless CUDAKIT_REQUIRE_PYTHON=1 makes that a failure).
import { expect } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import type { App } from '../../src/http/shared.js';
import { serviceContainment } from '../../src/run/containment.js';
import { LocalGpuPool } from '../../src/run/local-pool.js';
import { checkPython, pythonHidden, type PythonFacts } from '../../src/run/python.js';
import { findExecutable } from '../../src/run/which.js';
import { EmbeddedQueue } from '../../src/schedule/embedded-queue.js';
import { EvalService } from '../../src/service.js';
import { MemoryJobStore } from '../../src/store/memory.js';

export interface PythonService {
  app: App | undefined;
  service: EvalService | undefined;
  why: string | undefined;
  close(): Promise<void>;
}

/** Starts the service, or says why it cannot; throws where CUDAKIT_REQUIRE_PYTHON=1 and it cannot. */
export async function startPythonService(label: string): Promise<PythonService> {
  const store = new MemoryJobStore();
  const python = process.env.CUDAKIT_TEST_PYTHON ?? (await findExecutable('python3'));
  let facts: PythonFacts | undefined;
  let hidden: string[] = [];
  let why: string | undefined;
  const containment = process.getuid?.() === 0 ? serviceContainment('nobody') : undefined;
  if (containment === undefined) why = 'not root (the sandbox of Python jobs needs root)';
  else if (python === undefined) why = 'no python3 on PATH';
  else {
    hidden = pythonHidden(containment, []);
    facts = await checkPython(python, containment, hidden).catch((e: Error) => {
      why = e.message;
      return undefined;
    });
  }
  if (why !== undefined) {
    if (process.env.CUDAKIT_REQUIRE_PYTHON === '1') throw new Error(`CUDAKIT_REQUIRE_PYTHON=1, but ${why}`);
    console.log(`${label} skipped: ${why}`);
    return { app: undefined, service: undefined, why, close: () => store.close() };
  }
  console.log(`${label}: Python ${facts!.python}, torch ${facts!.torch}, triton ${facts!.triton}`);
  const pool = new LocalGpuPool({
    isolation: 'process',
    containment: containment!,
    python: facts!,
    pythonService: { path: python!, hidden },
  });
  const queue = new EmbeddedQueue();
  const service = new EvalService({ store, submitQueue: queue, runQueue: queue, pool });
  const app = await buildApp({ service, underPressure: false });
  await pool.start();
  await service.start();
  expect(pool.unavailableReason).toBeUndefined();
  return {
    app,
    service,
    why,
    close: async () => {
      await service.drain(5000);
      await app.close();
      await store.close();
    },
  };
}
