// Global setup for the run: when it ends, stops the RGW a replica test file started under the
// run's TMPDIR (test/replica/rgw.ts) by its pid files. Listed after test/global-setup.ts, so
// its teardown runs first, before the run's TMPDIR is removed.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export default function setup(): () => void {
  const dir = path.join(process.env.TMPDIR ?? '/tmp', 'rgw');
  return () => {
    if (!fs.existsSync(path.join(dir, 'run'))) return;
    execFileSync(path.resolve(import.meta.dirname, '../../scripts/rgw/stop.sh'), [dir], { stdio: 'inherit' });
  };
}
