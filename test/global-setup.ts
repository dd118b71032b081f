// Compiles the TypeScript once so tests that spawn the CLI (dist/cli.js) or child
// processes run the code under test, not a stale build. And gives the run one temporary
// directory (TMPDIR, so os.tmpdir() in workers and child processes) that is removed when
// the run ends: stores, logs and killed writers' files do not pile up across runs (a killed
// `none` writer's reserved blocks stay allocated until its log is reopened or deleted).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

export default function setup(): () => void {
  const require = createRequire(import.meta.url);
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json'], {
    stdio: 'inherit',
  });
  const run = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-tests-'));
  const before = process.env.TMPDIR;
  process.env.TMPDIR = run;
  return () => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    fs.rmSync(run, { recursive: true, force: true, maxRetries: 3 });
  };
}
