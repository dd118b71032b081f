// The adapters as a user imports them: each subpath resolves by the package's name to its
// built module with its types, and each framework is an optional peer dependency whose
// range holds the version the adapters are tested against.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const semver = require('semver') as { satisfies(v: string, r: string): boolean };
const pkg = JSON.parse(fs.readFileSync(path.resolve('package.json'), 'utf8')) as {
  exports: Record<string, { types: string; import: string }>;
  files: string[];
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional: boolean }>;
};

const SUBPATHS: Record<string, string[]> = {
  'spanguard/mcp': ['createMcpServer', 'runMcpCommand', 'MissingPeerError'],
  'spanguard/openai-agents': ['SpanguardSession'],
  'spanguard/ai-sdk': ['spanguardConversation'],
  'spanguard/langgraph': ['SpanguardChatMessageHistory'],
};

describe('each host subpath resolves by name to its module and types', () => {
  it('imports spanguard/mcp, /openai-agents, /ai-sdk, /langgraph and finds their exports; types and sources ship', () => {
    const script = `const want = ${JSON.stringify(SUBPATHS)};
      for (const [spec, names] of Object.entries(want)) {
        const m = await import(spec);
        for (const n of names) if (typeof m[n] !== 'function') throw new Error(spec + ' lacks ' + n);
      }
      console.log('ok');`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: path.resolve('.') });
    expect(r.stdout.trim(), r.stderr).toBe('ok');
    for (const sub of Object.keys(SUBPATHS)) {
      const e = pkg.exports[sub.replace('spanguard', '.')]!;
      expect(fs.existsSync(path.resolve(e.types)), e.types).toBe(true);
      expect(fs.existsSync(path.resolve(e.import)), e.import).toBe(true);
    }
    // The sources the maps point at ship too: every module under src/, the adapters' included.
    expect(pkg.files).toContain('src/**/*.ts');
  });
});

describe('each framework is an optional peer dependency whose range holds the tested version', () => {
  it('@modelcontextprotocol/sdk, zod, @openai/agents, ai, @langchain/core: optional, and the installed version satisfies the range', () => {
    for (const name of ['@modelcontextprotocol/sdk', 'zod', '@openai/agents', 'ai', '@langchain/core']) {
      expect(pkg.peerDependenciesMeta[name], name).toEqual({ optional: true });
      const installed = (JSON.parse(fs.readFileSync(path.resolve('node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
      expect(semver.satisfies(installed, pkg.peerDependencies[name]!), `${name} ${installed} in ${pkg.peerDependencies[name]}`).toBe(true);
    }
  });
});
