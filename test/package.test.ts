// The package as a user installs it: the prebuild path (node-gyp-build with PREBUILDS_ONLY=1
// skips build/Release) and the README's example.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/native.js';

describe('prebuilds: npm run prebuild output loads without build/Release', () => {
  it('loads prebuilds/<platform>-<arch>/spanguard.napi.node under PREBUILDS_ONLY=1 and appends', () => {
    execFileSync(process.execPath, [path.join(packageRoot, 'scripts', 'prebuild.mjs'), '--no-build'], { stdio: 'pipe' });
    const prebuild = path.join(packageRoot, 'prebuilds', `${process.platform}-${process.arch}`, 'spanguard.napi.node');
    expect(fs.existsSync(prebuild)).toBe(true);
    const script = `
      const { createRequire } = require('node:module');
      const ngb = require('node-gyp-build');
      const file = ngb.resolve(${JSON.stringify(packageRoot)});
      if (!file.includes('prebuilds')) throw new Error('loaded ' + file);
      import(${JSON.stringify(path.join(packageRoot, 'dist', 'index.js'))}).then(async ({ SpanStore }) => {
        const dir = require('node:fs').mkdtempSync(require('node:path').join(require('node:os').tmpdir(), 'sg-prebuild-'));
        const s = await SpanStore.open(dir);
        const id = await s.append({ turn: 1, role: 'user', text: 'from the prebuild' });
        console.log(JSON.stringify({ file, text: s.get(id).text }));
        await s.close();
      });`;
    const r = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, PREBUILDS_ONLY: '1' }, encoding: 'utf8', cwd: packageRoot });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout);
    expect(out.file).toContain(path.join('prebuilds', `${process.platform}-${process.arch}`));
    expect(out.text).toBe('from the prebuild');
  });
});

describe('the README example runs', () => {
  it('examples/quickstart.mjs recalls the evicted constraint and misses the never-stated one', () => {
    const r = spawnSync(process.execPath, [path.join(packageRoot, 'examples', 'quickstart.mjs')], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/recall: found .*40 req\/s/s);
    expect(r.stdout).toMatch(/never stated: not-in-transcript/);
    expect(r.stdout).toMatch(/verdict: lossless/);
  });
});
