#!/usr/bin/env node
// `npm run prebuild` (and `npm pack` through scripts/prepack.mjs): build the addon with
// cmake-js and copy it where node-gyp-build looks for prebuilds:
// prebuilds/linux-x64/spanguard.napi.glibc.node. The glibc tag keeps node-gyp-build from
// offering it on musl (Alpine), where it would not load; there the install compiles.
// prebuildify only drives node-gyp, so a cmake-js project does its own copy. Only linux-x64
// with glibc is prebuilt: it is the one platform built and load-tested here. Pass --no-build
// to copy the existing build/Release output only. The copy is stripped, then loaded in a
// child process: a prebuild that does not load is not written.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const glibc = process.platform === 'linux' && Boolean(process.report?.getReport().header.glibcVersionRuntime);
if (process.platform !== 'linux' || process.arch !== 'x64' || !glibc) {
  console.error(`prebuild: only linux-x64 with glibc is prebuilt, this is ${process.platform}-${process.arch}${process.platform === 'linux' && !glibc ? ' (musl)' : ''}`);
  process.exit(1);
}

if (!process.argv.includes('--no-build')) {
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
  const r = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', 'build', `--CDNODE_EXECUTABLE=${process.execPath}`], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
const built = path.join(root, 'build', 'Release', 'spanguard.node');
if (!fs.existsSync(built)) {
  console.error(`prebuild: ${built} does not exist; build first`);
  process.exit(1);
}
const dir = path.join(root, 'prebuilds', 'linux-x64');
fs.mkdirSync(dir, { recursive: true });
const out = path.join(dir, 'spanguard.napi.glibc.node');
const tmp = `${out}.tmp`;
fs.copyFileSync(built, tmp);
const strip = spawnSync('strip', ['--strip-unneeded', tmp], { stdio: 'inherit' });
if (strip.status !== 0) console.warn('prebuild: strip failed; the prebuild keeps its symbols');
// process.dlopen, not require: require would read a .tmp file as JavaScript.
const check = `const m = { exports: {} }; process.dlopen(m, ${JSON.stringify(tmp)}); if (typeof m.exports.simdIsa !== 'function') throw new Error('not the spanguard addon'); console.log(m.exports.simdIsa())`;
const load = spawnSync(process.execPath, ['-e', check], { encoding: 'utf8' });
if (load.status !== 0) {
  fs.rmSync(tmp, { force: true });
  console.error(`prebuild: the stripped addon does not load:\n${load.stderr}`);
  process.exit(1);
}
fs.renameSync(tmp, out);
console.log(`prebuild: wrote ${path.relative(root, out)} (${fs.statSync(out).size} bytes, loads; SIMD ${load.stdout.trim()})`);
