import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Two cores: integration tests spawn real coordinators and workers, so keep files from piling up.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 30_000,
    reporters: ['default'],
    // Once per run: where a missing service's skip line is marked as said (test/helpers/services.ts).
    globalSetup: ['test/helpers/global-setup.ts'],
  },
});
