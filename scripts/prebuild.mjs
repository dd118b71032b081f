#!/usr/bin/env node
// `npm run prebuild`: build the addon with cmake-js and copy it where node-gyp-build looks
// for prebuilds: prebuilds/<platform>-<arch>/spanguard.napi.node. prebuildify only drives
// node-gyp, so a cmake-js project does its own copy. Pass --no-build to copy the existing
// build/Release output only.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

if (!process.argv.includes('--no-build')) {
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
  const r = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', 'build'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
const built = path.join(root, 'build', 'Release', 'spanguard.node');
if (!fs.existsSync(built)) {
  console.error(`prebuild: ${built} does not exist; build first`);
  process.exit(1);
}
const dir = path.join(root, 'prebuilds', `${process.platform}-${process.arch}`);
fs.mkdirSync(dir, { recursive: true });
const out = path.join(dir, 'spanguard.napi.node');
fs.copyFileSync(built, out + '.tmp');
fs.renameSync(out + '.tmp', out);
if (process.platform !== 'win32') spawnSync('strip', ['--strip-unneeded', out], { stdio: 'inherit' });
console.log(`prebuild: wrote ${path.relative(root, out)}`);
