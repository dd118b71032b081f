// The guard's mutation runs, one file at a time, each against the tests that reach it
// (vitest.mutate.guard.config.ts), per-test coverage, two runners; the rest of
// stryker.config.json is shared. Each target has its own incremental file and reports, so a
// run neither reuses nor overwrites another's, and a run cut short is resumed by the next.
//
//   npm run mutate:guard      src/guard.ts
//   npm run mutate:anchors    src/guard/anchors.ts and src/guard/probes.ts
//   npm run mutate:match      src/match.ts (against the search tests)
//
// src/guard.ts can be run in line ranges (`npx stryker run stryker.guard.config.mjs --mutate
// src/guard.ts:60-200`): the incremental file keeps every range's results for the next run.
import fs from 'node:fs';

const base = JSON.parse(fs.readFileSync(new URL('./stryker.config.json', import.meta.url), 'utf8'));
delete base.$schema;

const target = process.env.SPANGUARD_MUTATE ?? 'guard';
const TARGETS = { guard: ['src/guard.ts'], anchors: ['src/guard/anchors.ts', 'src/guard/probes.ts'], match: ['src/match.ts'] };
if (!(target in TARGETS)) throw new Error(`SPANGUARD_MUTATE=${target}: one of ${Object.keys(TARGETS).join(', ')}`);
// Read by vitest.mutate.guard.config.ts in the runner processes (they inherit the environment).
process.env.SPANGUARD_MUTATE = target;

export default {
  ...base,
  mutate: TARGETS[target],
  vitest: { ...base.vitest, configFile: 'vitest.mutate.guard.config.ts' },
  incrementalFile: `reports/stryker-incremental-${target}.json`,
  htmlReporter: { fileName: `reports/mutation/${target}/mutation.html` },
  jsonReporter: { fileName: `reports/mutation/${target}/mutation.json` },
  concurrency: 2,
  // The rule tests of one target run in seconds: a mutant that hangs (a loop bound mutated)
  // is cut after three times its tests' own time plus 10 s, not 30 s.
  timeoutMS: 10000,
};
