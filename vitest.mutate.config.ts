import path from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// The tests `npm run mutate` (Stryker, stryker.config.json) runs against each mutant of
// the files that hold the verdict's rules: src/guard.ts, verdict.ts, audit.ts, match.ts,
// support.ts and query.ts. They import ../src/*.ts directly and spawn no dist/cli.js,
// so there is no tsc global setup.
//
// Left out: test/scenario/scenario.test.ts (a 14,200-turn session built in beforeAll, ~55 s a run)
// and test/search/quality.test.ts (ingest and measure in beforeAll, ~12 s a run). Their
// assertions read results computed in beforeAll, which Stryker's per-test coverage
// attributes to no test, so they would be run for a mutant only through the few test
// bodies that search, paying the whole beforeAll each time, and kill next to nothing.
// `npm test` still runs them.
const FILES = [
  // Cheapest first: Stryker bails at the first failing test, so a mutant that a fast unit
  // test kills never waits for a slow file. Seconds are one run of the file on its own.
  'test/verdict/verdict.test.ts', // ~2 s
  'test/search/miss.test.ts', // ~3 s
  'test/guard/retention-set.test.ts', // ~4 s
  'test/search/natural.test.ts', // ~5 s
  'test/window/window.test.ts', // ~5 s
  'test/guard/caller-data.test.ts', // ~7 s
  'test/guard/grounding.test.ts', // ~9 s
  'test/guard/guard.test.ts', // ~12 s
  'test/guard/hit-rate.test.ts', // ~15 s
];

/**
 * A sequencer running the listed files in their order, files not listed first (new files —
 * the mutants.test.ts ones, anything added under test/guard or test/search — are small).
 * Shared with vitest.mutate.guard.config.ts.
 */
export function cheapFirst(files: readonly string[]): typeof BaseSequencer {
  const rank = (spec: TestSpecification): number => files.indexOf(path.relative(spec.project.config.root, spec.moduleId).split(path.sep).join('/'));
  return class CheapFirst extends BaseSequencer {
    override async sort(specs: TestSpecification[]): Promise<TestSpecification[]> {
      return [...specs].sort((a, b) => rank(a) - rank(b));
    }
  };
}

export default defineConfig({
  test: {
    include: ['test/verdict/*.test.ts', 'test/guard/*.test.ts', 'test/search/*.test.ts', 'test/window/window.test.ts'],
    exclude: [...configDefaults.exclude, 'test/search/quality.test.ts'],
    sequence: { sequencer: cheapFirst(FILES) },
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
