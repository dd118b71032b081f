import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts', 'test/replica/rgw-global.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Crash and lock tests fork children and fsync a lot; two cores, so keep files serial-ish.
    pool: 'forks',
    maxWorkers: 2,
  },
});
