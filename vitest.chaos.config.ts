import { defineConfig } from 'vitest/config';

// The chaos run (npm run test:chaos): one long test, kept out of `npm test`.
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.chaos.ts'],
    testTimeout: 60 * 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    globalSetup: ['test/helpers/globalSetup.ts'],
  },
});
