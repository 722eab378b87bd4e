import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // One test file per CPU, not vitest's default of one less: most of a file's time is spent
    // waiting for the processes it starts (git, narwal nodes, the store's stand-ins), and on a
    // two-CPU machine the default runs the files one at a time (the whole run took 12m41s with
    // one worker, 10m01s with two, every test passing both times).
    maxWorkers: availableParallelism(),
    globalSetup: ['test/helpers/globalSetup.ts'],
  },
});
