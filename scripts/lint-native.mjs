#!/usr/bin/env node
// Checks the C++ house rules (npm run lint:native):
//   1. the engine (everything in native/ outside native/napi/) never includes Node-API;
//   2. every Node-API entry point in native/napi/ runs its body in Guard or GuardAsync
//      (napi/guard.h), so no C++ exception of any type escapes into Node-API;
//   3. no file in native/ or fuzz/ is over 1,000 lines;
//   4. clang-format --dry-run --Werror over native/ and fuzz/ (.clang-format at the root).
// --no-format skips 4 (the test suite runs 1-3; clang-format may not be installed there).
// The build checks rule 1 too: CMakeLists.txt compiles the engine without the Node-API
// include paths.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
const MAX_LINES = 1000;

function sources(dir) {
  const abs = path.join(root, dir);
  if (!fs.existsSync(abs)) return [];
  return fs
    .readdirSync(abs, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(cpp|h)$/.test(f))
    .map((f) => path.join(dir, f).split(path.sep).join('/'))
    .sort();
}

const problems = [];
const nativeFiles = sources('native');
const checked = [...nativeFiles, ...sources('fuzz')];

for (const file of nativeFiles) {
  if (file.startsWith('native/napi/')) continue;
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  if (/#\s*include\s*[<"](napi\.h|node_api\.h|js_native_api\.h)[>"]/.test(text) || /\bNapi::|\bnapi_(value|env)\b/.test(text)) {
    problems.push(`${file}: the engine must not use Node-API (only native/napi/ may)`);
  }
}

// An entry point: a function or constructor taking `const Napi::CallbackInfo& info`. Its
// first statement (after an optional `Napi::Env env = info.Env();`) must enter the guard.
const entry = /^(\s*)(?:static\s+)?(?:explicit\s+)?(?:[\w:<>]+\s+)?(\w+)\(const Napi::CallbackInfo& \w+\)(?:\s*:[^{]*)?\s*\{\s*$/;
for (const file of nativeFiles.filter((f) => f.startsWith('native/napi/') && f.endsWith('.cpp'))) {
  const lines = fs.readFileSync(path.join(root, file), 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = entry.exec(lines[i]);
    if (!m) continue;
    let j = i + 1;
    while (j < lines.length && /^\s*(\/\/.*)?$/.test(lines[j])) j++;
    if (/^\s*Napi::Env env = \w+\.Env\(\);\s*$/.test(lines[j])) j++;
    if (!/^\s*(return\s+)?Guard(Async)?\(/.test(lines[j] ?? '')) {
      problems.push(`${file}:${i + 1}: entry point ${m[2]} does not run its body in Guard/GuardAsync`);
    }
  }
}

for (const file of checked) {
  const n = fs.readFileSync(path.join(root, file), 'utf8').split('\n').length - 1;
  if (n > MAX_LINES) problems.push(`${file}: ${n} lines (at most ${MAX_LINES})`);
}

if (!args.has('--no-format')) {
  const r = spawnSync('clang-format', ['--dry-run', '--Werror', ...checked], { cwd: root, encoding: 'utf8' });
  if (r.error) {
    problems.push(`clang-format: ${r.error.message} (install it: apt-get install -y clang-format)`);
  } else if (r.status !== 0) {
    const files = new Set([...r.stderr.matchAll(/^([^\s:]+):\d+:\d+: error/gm)].map((x) => x[1]));
    problems.push(`clang-format: ${files.size} file(s) not formatted: ${[...files].join(', ')} (clang-format -i <files>)`);
  }
}

if (problems.length > 0) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
console.log(`lint:native: ${checked.length} files checked`);
