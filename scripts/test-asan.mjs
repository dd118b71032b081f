#!/usr/bin/env node
// npm run test:asan — the span log tests against an AddressSanitizer + UBSan build.
//
// Recipe (what this script does, by hand):
//   node node_modules/cmake-js/bin/cmake-js compile --out build-asan --CDSPANGUARD_SANITIZE=ON
//   SPANGUARD_ADDON_PATH=$PWD/build-asan/Release/spanguard.node \
//   LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
//   ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
//     npx vitest run test/log
//
// Why LD_PRELOAD: node itself is not built with ASan, so the runtime must be loaded before
// anything else or ASan refuses to start ("ASan runtime does not come first"). Leak
// detection is off because V8 keeps allocations alive until exit by design. Child
// processes spawned by the tests inherit the environment, so they run the ASan build too.
// SPANGUARD_ADDON_PATH makes src/native.ts load that .node file instead of build/Release.
// Extra args are passed to vitest (e.g. a file filter).
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args, env) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (r.status !== 0) process.exit(r.status ?? 1);
};

run(process.execPath, [path.join(root, 'node_modules/cmake-js/bin/cmake-js'), 'compile', '--out', 'build-asan', '--CDSPANGUARD_SANITIZE=ON']);
const addonPath = path.join(root, 'build-asan/Release/spanguard.node');
if (!fs.existsSync(addonPath)) {
  console.error(`no ASan build at ${addonPath}`);
  process.exit(1);
}
const gccLib = (name) => execFileSync('gcc', [`-print-file-name=${name}`], { encoding: 'utf8' }).trim();
const preload = [gccLib('libasan.so'), gccLib('libubsan.so')].join(':');
const env = {
  SPANGUARD_ADDON_PATH: addonPath,
  LD_PRELOAD: preload,
  ASAN_OPTIONS: 'detect_leaks=0:abort_on_error=1',
  UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
};
// A run that silently loaded build/Release would pass without testing anything: prove the
// loader picks the ASan build before running the suite.
run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json']);
const probe = `import(${JSON.stringify(path.join(root, 'dist/native.js'))}).then((m) => { m.addon();
  const maps = require('node:fs').readFileSync('/proc/self/maps', 'utf8');
  if (!maps.includes(${JSON.stringify(addonPath)})) { console.error('the ASan addon was not loaded: does src/native.ts honour SPANGUARD_ADDON_PATH?'); process.exit(1); } })`;
run(process.execPath, ['-e', probe], env);
const args = process.argv.slice(2);
run(process.execPath, [path.join(root, 'node_modules/vitest/vitest.mjs'), 'run', ...(args.length ? args : ['test/log'])], env);
