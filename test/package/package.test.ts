// The package as a user installs it: the prebuild path (node-gyp-build with PREBUILDS_ONLY=1
// skips build/Release), what the tarball holds, its public types in a consumer project, and
// the README's example.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/native.js';

describe('prebuilds: npm run prebuild output loads without build/Release', () => {
  it('loads prebuilds/linux-x64/spanguard.napi.glibc.node under PREBUILDS_ONLY=1 and appends', () => {
    execFileSync(process.execPath, [path.join(packageRoot, 'scripts', 'prebuild.mjs'), '--no-build'], { stdio: 'pipe' });
    const prebuild = path.join(packageRoot, 'prebuilds', 'linux-x64', 'spanguard.napi.glibc.node');
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
    expect(out.file).toBe(prebuild);
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

describe('the tarball holds the package and nothing test-only', () => {
  it('npm pack lists no tests, fuzz, stress or campaign sources, dev scripts or orphan maps; every native source and LICENSE are in; ≤ 5 MB unpacked without prebuilds', () => {
    // --ignore-scripts: list what the "files" rules select now, without prepack's rebuild.
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: packageRoot, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const [pack] = JSON.parse(r.stdout) as { files: { path: string; size: number }[] }[];
    const files = pack!.files.map((f) => f.path);
    expect(files).toContain('LICENSE');
    expect(files).toContain('scripts/install.mjs');
    expect(files).toContain('scripts/package-dir.cjs');
    expect(files.filter((f) => /^(test|bench|examples|fuzz|campaign)\/|^scripts\/(test-asan|prebuild|prepack|consumer-smoke|lint-native)|\.test\.|^\.ci\//.test(f))).toEqual([]);
    // Every C++ source the build compiles, in every folder of native/ (an install without a
    // prebuild compiles them).
    const nativeSources = fs.readdirSync(path.join(packageRoot, 'native'), { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.(cpp|h)$/.test(f))
      .map((f) => path.posix.join('native', f.split(path.sep).join('/')));
    expect(nativeSources.length).toBeGreaterThan(0);
    for (const f of nativeSources) expect(files).toContain(f);
    // Every source map points at sources the tarball holds.
    for (const map of files.filter((f) => f.endsWith('.map'))) {
      const { sources } = JSON.parse(fs.readFileSync(path.join(packageRoot, map), 'utf8')) as { sources: string[] };
      for (const src of sources) expect(files, `${map} -> ${src}`).toContain(path.posix.join(path.posix.dirname(map), src));
    }
    const unpacked = pack!.files.filter((f) => !f.path.startsWith('prebuilds/')).reduce((n, f) => n + f.size, 0);
    expect(unpacked).toBeLessThanOrEqual(5_000_000);
  });
});

describe('the public types compile in a consumer TypeScript project, without internals', () => {
  it('tsc --strict with skipLibCheck off accepts the README calls and rejects an @internal member', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-types-'));
    fs.mkdirSync(path.join(dir, 'node_modules'));
    fs.symlinkSync(packageRoot, path.join(dir, 'node_modules', 'spanguard'), 'dir');
    fs.writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
    fs.writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: false, noEmit: true, types: ['node'], typeRoots: [path.join(packageRoot, 'node_modules', '@types')] },
        files: ['use.ts'],
      }),
    );
    fs.writeFileSync(
      path.join(dir, 'use.ts'),
      `import { SpanStore, ContextWindow, SpanguardError, type SearchResult, type Verdict } from 'spanguard';
const store = await SpanStore.open('/tmp/never-opened');
const id: number = await store.append({ turn: 1, role: 'user', text: 'at most 40 req/s' });
const r: SearchResult = await store.search('rate limit', { k: 3 });
const v: Verdict = store.verdict();
const w = new ContextWindow(store, { budgetTokens: 32000 });
console.log(id, r.miss, v.state, w, SpanguardError);
// @ts-expect-error the log is @internal: not in the published types
store.log;
await store.close();
`,
    );
    const tsc = spawnSync(process.execPath, [path.join(packageRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { encoding: 'utf8' });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
