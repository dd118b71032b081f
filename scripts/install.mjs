#!/usr/bin/env node
// `npm install` hook. Load a prebuild when one fits this platform and Node-API version;
// otherwise compile the addon from source with cmake-js (no download: Node-API headers come
// from the node-api-headers package, usearch's from the usearch package, wherever npm put
// them: CMakeLists.txt asks Node). node-gyp-build's own fallback would run
// `node-gyp rebuild`, which cannot build a cmake-js project, hence this script.
// SPANGUARD_FORCE_BUILD=1 compiles even when a prebuild loads.
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function loads() {
  try {
    require('node-gyp-build')(root);
    return true;
  } catch {
    return false;
  }
}

const force = process.env.SPANGUARD_FORCE_BUILD === '1';
if (!force && loads()) {
  console.log('spanguard: native addon found (prebuild or earlier build), not compiling');
  process.exit(0);
}

console.log(`spanguard: ${force ? 'SPANGUARD_FORCE_BUILD=1' : 'no prebuild fits'}; compiling the native addon with cmake-js`);
const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
const args = [cmakeJs, 'compile', '--out', 'build', `--CDNODE_EXECUTABLE=${process.execPath}`];
if (process.env.SPANGUARD_DEBUG === '1') args.push('--debug');
const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
if (result.status !== 0) {
  console.error('spanguard: native build failed. It needs cmake >= 3.15 and a C++17 compiler (g++ or clang).');
  process.exit(result.status ?? 1);
}
if (!loads()) {
  console.error('spanguard: the addon was built but does not load');
  process.exit(1);
}
