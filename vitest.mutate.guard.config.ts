import { configDefaults, defineConfig } from 'vitest/config';
import { cheapFirst } from './vitest.mutate.config.js';

// The tests the guard's mutation runs (stryker.guard.config.mjs) run against each mutant.
// src/guard.ts: the guard's, the verdict's and the audit's rule tests, nothing else — a
// mutant of the guard is reached only through compact(), which these folders exercise; the
// search, window and scenario tests the whole-run config (vitest.mutate.config.ts) adds
// would be run for every guard mutant their sessions happen to compact in. Left out too:
// test/guard/grounding.test.ts, whose subject is src/grounding.ts (the guard's grounding
// rule is grounding-guard.test.ts) and whose 600-turn window (~15 s) would run for every
// guard mutant that survives the other files.
// src/guard/anchors.ts (the id checks and the anchor acceptance rule): the tests that state
// those rules, directly and through compact().
const FILES = [
  // Cheapest first: Stryker bails at the first failing test. Seconds: one run of the file alone.
  'test/verdict/verdict.test.ts', // < 1 s
  'test/verdict/mutants.test.ts', // < 1 s
  'test/audit/audit.test.ts', // ~1 s
  'test/guard/retention-set.test.ts', // ~1 s
  'test/guard/grounding-guard.test.ts', // ~1 s
  'test/guard/caller-data.test.ts', // ~5 s
  'test/guard/hit-rate.test.ts', // ~10 s
  'test/guard/guard.test.ts', // ~10 s
  'test/guard/mutants.test.ts', // ~10 s
];

const TESTS: Record<string, string[]> = {
  guard: ['test/guard/*.test.ts', 'test/verdict/*.test.ts', 'test/audit/*.test.ts'],
  anchors: ['test/guard/mutants.test.ts', 'test/guard/caller-data.test.ts', 'test/guard/guard.test.ts'],
};
const target = process.env.SPANGUARD_MUTATE ?? 'guard';

export default defineConfig({
  test: {
    include: TESTS[target] ?? TESTS.guard!,
    exclude: [...configDefaults.exclude, 'test/guard/grounding.test.ts'],
    sequence: { sequencer: cheapFirst(FILES) },
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
