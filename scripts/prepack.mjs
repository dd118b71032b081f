#!/usr/bin/env node
// `npm pack` / `npm publish` run this first (the prepack script), so the tarball never
// depends on what happened to be built before:
//   1. dist/ is compiled afresh (a stale file of a removed module would otherwise ship);
//   2. the linux-x64 glibc prebuild is built and load-checked (scripts/prebuild.mjs), and
//      prebuilds/ holds nothing else.
// SPANGUARD_PACK_NO_PREBUILD=1 packs without a prebuild (every install then compiles).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (args) => {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
};

fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
// tsc is incremental: without its build info it re-emits every file into the empty dist/.
fs.rmSync(path.join(root, 'build', 'tsconfig.tsbuildinfo'), { force: true });
run([require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json']);

fs.rmSync(path.join(root, 'prebuilds'), { recursive: true, force: true });
if (process.env.SPANGUARD_PACK_NO_PREBUILD === '1') {
  console.log('prepack: SPANGUARD_PACK_NO_PREBUILD=1, packing without a prebuild');
} else {
  run([path.join(root, 'scripts', 'prebuild.mjs')]);
}
