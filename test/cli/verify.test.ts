// `spanguard verify` checks every checksum of every file, spawned as a user runs it: exit 0
// only when everything checks, 3 for log corruption, 4 for a damaged, missing or foreign
// index file or indexes that disagree with the log.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';

const CLI = path.resolve('dist/cli.js');
const verify = (dir: string, json = true) => spawnSync(process.execPath, [CLI, 'verify', dir, ...(json ? ['--json'] : [])], { encoding: 'utf8' });

async function makeStore(tag: string): Promise<string> {
  const dir = tmpDir(`verify-${tag}-`);
  const s = await SpanStore.open(dir, { durability: 'none', segmentBytes: 16 * 1024 });
  await s.appendMany(Array.from({ length: 200 }, (_, i) => ({ turn: i + 1, role: i % 2 ? 'assistant' : 'user', text: `${tag} turn ${i + 1}: ${i * 13} tests passed in suite s${i % 9}` })));
  await s.close();
  return dir;
}

let clean: string;
let other: string;
beforeAll(async () => {
  clean = await makeStore('mine');
  other = await makeStore('other');
});

function damaged(fn: (dir: string) => void): string {
  const dir = tmpDir('verify-row-');
  fs.cpSync(clean, dir, { recursive: true });
  fn(dir);
  return dir;
}
const flipAt = (file: string, at: (n: number) => number) => {
  const b = fs.readFileSync(file);
  const i = at(b.length);
  b[i] = b[i]! ^ 0x01;
  fs.writeFileSync(file, b);
};

describe('verify exits 0 only when every file checks', () => {
  it('a clean store: exit 0, no damaged index file, no disagreement', () => {
    const r = verify(clean);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, indexFiles: [], disagreements: [] });
  });
});

describe('verify exits 4 for a damaged, missing or foreign index file', () => {
  const ROWS: [string, (dir: string) => void, 'lexical' | 'vector' | 'both', RegExp][] = [
    ['a bit flipped in the lexical index body (its body CRC fails)', (d) => flipAt(path.join(d, 'index', 'lexical.idx'), (n) => n - 9), 'lexical', /lexical\.idx rejected: body checksum mismatch/],
    ['a bit flipped in the vectors.bin header', (d) => flipAt(path.join(d, 'index', 'vector', 'vectors.bin'), () => 3), 'vector', /vectors\.bin rejected: .*header/],
    ['a bit flipped in a vectors.bin record', (d) => flipAt(path.join(d, 'index', 'vector', 'vectors.bin'), (n) => Math.floor(n / 2)), 'vector', /vectors\.bin: corrupt record at offset \d+/],
    ['a bit flipped in the raw snapshot', (d) => flipAt(path.join(d, 'index', 'vector', 'index.raw.flat'), (n) => n - 5), 'vector', /index\.raw\.flat rejected: payload CRC mismatch/],
    ['the lexical index deleted', (d) => fs.rmSync(path.join(d, 'index', 'lexical.idx')), 'lexical', /lexical\.idx is missing/],
    ["another store's vectors.bin", (d) => fs.copyFileSync(path.join(other, 'index', 'vector', 'vectors.bin'), path.join(d, 'index', 'vector', 'vectors.bin')), 'vector', /vectors\.bin is not the file its identity names/],
    ["another store's identity.json", (d) => fs.copyFileSync(path.join(other, 'index', 'identity.json'), path.join(d, 'index', 'identity.json')), 'both', /built for store/],
  ];
  for (const [what, apply, index, reason] of ROWS) {
    it(what, () => {
      const dir = damaged(apply);
      const r = verify(dir);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(4);
      const out = JSON.parse(r.stdout);
      expect(out.ok).toBe(false);
      expect(out.log.ok).toBe(true);
      expect(out.indexFiles.map((p: { index: string }) => p.index)).toEqual(index === 'both' ? ['lexical', 'vector'] : [index]);
      expect(out.indexFiles.map((p: { reason: string }) => p.reason).join(' ')).toMatch(reason);
      // Read-only: the files are left as they were, and a second verify says the same.
      expect(verify(dir).status).toBe(4);
    });
  }

  it('the text output names the index and the reason', () => {
    const dir = damaged((d) => flipAt(path.join(d, 'index', 'lexical.idx'), (n) => n - 9));
    const r = verify(dir, false);
    expect(r.status).toBe(4);
    expect(r.stdout).toMatch(/index files: DAMAGED/);
    expect(r.stdout).toMatch(/lexical: lexical\.idx rejected: body checksum mismatch \[file=.*lexical\.idx offset=64\]/);
  });

  it('after a writer opened and closed the store (rebuilding and recording), verify exits 0 again', async () => {
    const dir = damaged((d) => flipAt(path.join(d, 'index', 'vector', 'vectors.bin'), () => 3));
    expect(verify(dir).status).toBe(4);
    const s = await SpanStore.open(dir, { durability: 'none' });
    expect(s.events().filter((e) => e.event.type === 'index-rebuilt')).toHaveLength(1);
    await s.close();
    expect(verify(dir).status).toBe(0);
  });
});

describe('verify exits 3 for log corruption, whatever the indexes', () => {
  it('a bit flipped in a record of a log segment: exit 3 naming the segment and offset', () => {
    const dir = damaged((d) => {
      const seg = fs.readdirSync(path.join(d, 'log')).filter((f) => f.startsWith('seg-')).sort()[0]!;
      flipAt(path.join(d, 'log', seg), (n) => Math.floor(n / 3));
      flipAt(path.join(d, 'index', 'lexical.idx'), (n) => n - 9);
    });
    const r = verify(dir);
    expect(r.status).toBe(3);
    const out = JSON.parse(r.stdout);
    expect(out.ok).toBe(false);
    expect(String(out.file)).toMatch(/log\/seg-\d+\.log$/);
    expect(out.offset).toEqual(expect.any(Number));
  });
});
