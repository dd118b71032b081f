#!/usr/bin/env node
// Prints the directory of an installed npm package, looked up the way Node looks it up from
// this package (./node_modules, then each parent's node_modules: where npm hoists it when
// spanguard is a dependency). CMakeLists.txt calls it for the header-only packages the addon
// compiles against. Reads package.json directly, so packages whose "exports" hide
// package.json are found too.   Usage: node scripts/package-dir.cjs <package-name>
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const name = process.argv[2];
if (!name) {
  console.error('usage: package-dir.cjs <package-name>');
  process.exit(2);
}
for (const dir of require.resolve.paths(name) ?? []) {
  const candidate = path.join(dir, name);
  if (fs.existsSync(path.join(candidate, 'package.json'))) {
    process.stdout.write(candidate);
    process.exit(0);
  }
}
console.error(`${name} is not installed where Node looks from ${__dirname}`);
process.exit(1);
