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
// src/guard/anchors.ts (the id checks and the anchor acceptance rule) and src/guard/probes.ts
// (what the monitor requires of an answer before asking search's rule): the tests that state
// those rules, directly and through compact(). src/match.ts (the honest-miss match): the
// search tests, less quality.test.ts (its results are computed in beforeAll).
// Per target: the test files, and their order (Stryker bails at the first failing test, so
// the files that state the target's rules directly come first and the broad ones last).
// Seconds: the file's tests, one run of the guard's set (vitest --reporter=verbose).
const TARGETS: Record<string, { include: string[]; order: string[] }> = {
  guard: {
    include: ['test/guard/*.test.ts', 'test/verdict/*.test.ts', 'test/audit/*.test.ts'],
    order: [
      'test/guard/retention-set.test.ts', // 0.2 s
      'test/guard/mutants.test.ts', // 1.4 s: the rules one at a time
      'test/guard/guard.test.ts', // 1.9 s
      'test/guard/caller-data.test.ts', // 0.6 s
      'test/guard/grounding-guard.test.ts', // 0.3 s
      'test/audit/audit.test.ts', // 0.3 s
      'test/verdict/verdict.test.ts', // < 0.1 s
      'test/verdict/mutants.test.ts', // < 0.1 s
      'test/guard/hit-rate.test.ts', // 1.0 s: whole replays through ContextWindow
    ],
  },
  anchors: {
    include: ['test/guard/mutants.test.ts', 'test/guard/required-parts.test.ts', 'test/guard/caller-data.test.ts', 'test/guard/guard.test.ts'],
    order: ['test/guard/mutants.test.ts', 'test/guard/required-parts.test.ts', 'test/guard/caller-data.test.ts', 'test/guard/guard.test.ts'],
  },
  // src/match.ts: the search tests (the pure matching rules first, whole searches after).
  match: {
    include: ['test/search/*.test.ts'],
    order: [
      'test/search/mutants.test.ts',
      'test/search/match.test.ts',
      'test/search/long-terms.test.ts',
      'test/search/query-length.test.ts',
      'test/search/miss.test.ts',
      'test/search/natural.test.ts',
      'test/search/yield.test.ts',
    ],
  },
};
const target = process.env.SPANGUARD_MUTATE ?? 'guard';

export default defineConfig({
  test: {
    include: (TARGETS[target] ?? TARGETS.guard!).include,
    exclude: [...configDefaults.exclude, 'test/guard/grounding.test.ts', 'test/search/quality.test.ts'],
    sequence: { sequencer: cheapFirst((TARGETS[target] ?? TARGETS.guard!).order) },
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
