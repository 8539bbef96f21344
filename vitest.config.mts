import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    pool: 'forks', // native code: a crash takes down one fork, not the runner
    execArgv: ['--expose-gc'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'nvrtc', include: ['test/nvrtc/**/*.test.ts'], testTimeout: 60_000 } },
      {
        extends: true,
        test: { name: 'gpu', include: ['test/gpu/**/*.test.ts'], fileParallelism: false, testTimeout: 120_000 },
      },
      // The evaluation service (server/): API, store, queue and GPU supervisors, with fake GPU children.
      { extends: true, test: { name: 'server', include: ['test/server/**/*.test.ts'], testTimeout: 60_000 } },
    ],
  },
});
