// The host integration guide's examples: each file under examples/hosts runs and recalls
// the evicted constraint with a lossless verdict, and docs/integrations.md shows each one
// verbatim.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const DIR = path.resolve('examples/hosts');
const GUIDE = fs.readFileSync(path.resolve('docs/integrations.md'), 'utf8');
const EXAMPLES = ['mcp-client.mjs', 'openai-agents.mjs', 'ai-sdk.mjs', 'langgraph.mjs'];

describe('every host example runs and recalls the evicted constraint', () => {
  for (const file of EXAMPLES) {
    it(`examples/hosts/${file}`, () => {
      const r = spawnSync(process.execPath, [path.join(DIR, file)], { encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/The upstream API allows 40 req\/s; never exceed it\./);
      expect(r.stdout).toMatch(/^verdict: lossless$/m);
      if (file !== 'mcp-client.mjs') {
        const [, tokens, passes] = /^window: (\d+) tokens, (\d+) passes$/m.exec(r.stdout)!;
        expect(Number(tokens)).toBeLessThanOrEqual(2_000);
        expect(Number(passes)).toBeGreaterThan(0);
      } else expect(r.stdout).toMatch(/^tools: recall, search, exact, verdict, pin, audit$/m);
    });
  }
});

describe('docs/integrations.md shows each example verbatim', () => {
  it('every examples/hosts file is a code block of the guide, and the guide has no other js block', () => {
    const blocks = [...GUIDE.matchAll(/```js\n([\s\S]*?)\n```/g)].map((m) => m[1]);
    const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.mjs')).sort();
    expect(files).toEqual([...EXAMPLES].sort());
    for (const f of EXAMPLES) expect(blocks, f).toContain(fs.readFileSync(path.join(DIR, f), 'utf8').trimEnd());
    expect(blocks).toHaveLength(EXAMPLES.length);
  });
});
