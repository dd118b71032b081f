// Compiles the TypeScript once so tests that spawn the CLI (dist/cli.js) or child
// processes run the code under test, not a stale build.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

export default function setup(): void {
  const require = createRequire(import.meta.url);
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json'], {
    stdio: 'inherit',
  });
}
