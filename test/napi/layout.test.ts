// The house rules of native/ that need no build: the engine never uses Node-API, every
// binding entry point runs in the error guard, no file is over 1,000 lines
// (scripts/lint-native.mjs; `npm run lint:native` adds the clang-format check).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/native.js';

describe('native/ keeps its house rules', () => {
  it('lint-native finds no engine file using Node-API, no unguarded entry point, no file over 1,000 lines', () => {
    const r = spawnSync(process.execPath, [path.join(packageRoot, 'scripts/lint-native.mjs'), '--no-format'], {
      cwd: packageRoot,
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
