// The guard's mutation run: src/guard.ts and src/guard/anchors.ts against the guard's,
// verdict's and audit's tests only (vitest.mutate.guard.config.ts), per-test coverage,
// two runners. `npm run mutate:guard`; the rest of stryker.config.json is shared. Its own
// incremental file and reports, so it neither reuses nor overwrites the whole run's.
import fs from 'node:fs';

const base = JSON.parse(fs.readFileSync(new URL('./stryker.config.json', import.meta.url), 'utf8'));
delete base.$schema;

export default {
  ...base,
  mutate: ['src/guard.ts', 'src/guard/anchors.ts'],
  vitest: { ...base.vitest, configFile: 'vitest.mutate.guard.config.ts' },
  incrementalFile: 'reports/stryker-incremental-guard.json',
  htmlReporter: { fileName: 'reports/mutation/guard/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/guard/mutation.json' },
  concurrency: 2,
};
