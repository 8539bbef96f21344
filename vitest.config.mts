import { defineConfig } from 'vitest/config';

const TIERS = 'test/tiers.ts';

export default defineConfig({
  test: {
    pool: 'forks', // native code: a crash takes down one fork, not the runner
    execArgv: ['--expose-gc'],
    // The nvrtc and gpu tiers print one line each when they skip, and why (test/tiers.ts).
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'nvrtc',
          // The service's defences that need real NVRTC live with its other security tests.
          include: ['test/nvrtc/**/*.test.ts', 'test/server/**/*.nvrtc.test.ts'],
          testTimeout: 60_000,
          globalSetup: [TIERS],
        },
      },
      {
        extends: true,
        test: {
          name: 'gpu',
          include: ['test/gpu/**/*.test.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          globalSetup: [TIERS],
        },
      },
      // The evaluation service (server/): API, store, queue and GPU supervisors, with fake GPU children.
      {
        extends: true,
        test: {
          name: 'server',
          include: ['test/server/**/*.test.ts'],
          exclude: [
            'test/server/load.test.ts',
            'test/server/distributed-load.test.ts',
            'test/server/**/*.nvrtc.test.ts',
          ],
          testTimeout: 60_000,
        },
      },
      // The load tests last and alone, one after the other: they measure what 2 cores do under 64 clients, so nothing else may share them
      // (the package test's two parallel prebuild compiles once stretched it past its limits).
      {
        extends: true,
        test: {
          name: 'load',
          include: ['test/server/load.test.ts', 'test/server/distributed-load.test.ts'],
          fileParallelism: false,
          testTimeout: 60_000,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
