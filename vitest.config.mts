import { defineConfig } from 'vitest/config';

const TIERS = 'test/tiers.ts';
/** The files that take over a minute on 2 cores (`npm run test:load`): load, the distributed mode, the package. */
const LONG = [
  'server/test/load.test.ts',
  'server/test/cluster/distributed-load.test.ts',
  'server/test/cluster/distributed.test.ts',
  'test/unit/package.test.ts',
];

export default defineConfig({
  test: {
    pool: 'forks', // native code: a crash takes down one fork, not the runner
    execArgv: ['--expose-gc'],
    // The nvrtc and gpu tiers print one line each when they skip, and why (test/tiers.ts).
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], exclude: ['test/unit/package.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'nvrtc',
          // The service's defences that need real NVRTC live with its other security tests.
          include: ['test/nvrtc/**/*.test.ts', 'server/test/**/*.nvrtc.test.ts'],
          testTimeout: 60_000,
          globalSetup: [TIERS],
        },
      },
      {
        extends: true,
        test: {
          name: 'gpu',
          include: ['test/gpu/**/*.test.ts', 'server/test/**/*.gpu.test.ts'],
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
          include: ['server/test/**/*.test.ts'],
          exclude: [...LONG, 'server/test/**/*.nvrtc.test.ts', 'server/test/**/*.gpu.test.ts'],
          testTimeout: 60_000,
        },
      },
      // `npm run test:load`, not `npm test`: the files over a minute on 2 cores, one after the other. The load tests
      // measure what 2 cores do under 64 clients, so nothing else may share them (the package test's two parallel
      // prebuild compiles once stretched them past their limits).
      {
        extends: true,
        test: {
          name: 'load',
          include: LONG,
          fileParallelism: false,
          testTimeout: 60_000,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
