// An anchor's fact is detection's match, kept from the append that ran it: the same fact
// anchorFact gives from the span's text, for detected and host-flagged anchors alike.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { anchorFact } from '../../src/anchors.js';
import { ROLE_CODES } from '../../src/native.js';
import { FACTS_FILE, readFacts, rulesDigest, writeFacts } from '../../src/store/facts.js';
import { tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

describe('anchorFactOf is anchorFact, kept from append', () => {
  it('detected, host-flagged and unknown-role anchors: the fact a fresh computation gives', async () => {
    const s = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(s);
    const turns = [
      { turn: 1, role: 'user', text: 'Setup notes\nThe upstream API enforces a rate limit of 40 req/s per token.' },
      { turn: 2, role: 'assistant', text: 'done, nothing to report here at all', anchor: true },
      { turn: 3, role: 'developer', text: 'never exceed 3 retries\nsecond line' },
      { turn: 4, role: 'tool', text: 'x'.repeat(5000) + '\ntimeout = 30s\n' + 'y'.repeat(5000) },
    ];
    const ids = await s.appendMany(turns);
    for (const [i, id] of ids.entries()) {
      const span = s.get(id)!;
      if (!span.anchor) continue;
      const code = (ROLE_CODES as Record<string, number>)[turns[i]!.role] ?? 0;
      expect(s.anchorFactOf(id, span.text, code), `span ${id}`).toBe(anchorFact(span.text, code));
    }
    expect(s.anchorFactOf(ids[0]!, 'unrelated text given later', 2)).toBe(anchorFact(turns[0]!.text, 2));
  });
});

// A reopened store reads where each fact lies from index/anchor-facts.json (written at close
// and checkpoint) instead of running detection again: only when the file is this store's,
// of this log's history and of these detection rules.
describe('anchor facts kept across a reopen', () => {
  const A = 'limit is 40 req/s for the public api';
  const B = 'a preamble line that says nothing at all\nnever exceed 3 retries on this endpoint';
  const role = ROLE_CODES.user!;
  const indexDir = (dir: string) => path.join(dir, 'index');
  async function reopen(dir: string): Promise<SpanStore> {
    const s = await SpanStore.open(dir, { durability: 'none' });
    open.push(s);
    return s;
  }

  it('close writes each fact\'s place; the reopened store cuts the fact from the text there', async () => {
    const dir = tmpDir();
    const s = await SpanStore.open(dir, { durability: 'none' });
    const [id] = await s.appendMany([{ turn: 1, role: 'user', text: B }, { turn: 2, role: 'assistant', text: 'plain words' }]);
    await s.close();
    const f = readFacts(indexDir(dir))!;
    expect(f.rules).toBe(rulesDigest());
    const at = f.ids.indexOf(id!);
    expect(B.slice(f.starts[at]!, f.ends[at]!)).toBe(anchorFact(B, role));
    expect((await reopen(dir)).anchorFactOf(id!, B, role)).toBe(anchorFact(B, role));
    await open.pop()!.close();
    // The reopened store believes the file (its identity matched): pointed elsewhere, it cuts there.
    writeFacts(indexDir(dir), { ...readFacts(indexDir(dir))!, ids: [id!], starts: [2], ends: [9] });
    expect((await reopen(dir)).anchorFactOf(id!, B, role)).toBe(B.slice(2, 9));
  });

  it('a file of another history under the same ids (same store id, other turns) is ignored', async () => {
    const dir = tmpDir();
    const s = await SpanStore.open(dir, { durability: 'none' });
    await s.appendMany([{ turn: 1, role: 'assistant', text: 'plain words' }]);
    await s.close();
    const other = tmpDir();
    fs.cpSync(dir, other, { recursive: true });
    // The same store, two histories from here: turn A in one, turn B (and one more) in the other.
    const s1 = await SpanStore.open(dir, { durability: 'none' });
    const [idA] = await s1.appendMany([{ turn: 2, role: 'user', text: A }]);
    await s1.close();
    const s2 = await SpanStore.open(other, { durability: 'none' });
    const [idB] = await s2.appendMany([{ turn: 2, role: 'user', text: B }, { turn: 3, role: 'assistant', text: 'more plain words' }]);
    await s2.close();
    expect(idB).toBe(idA);
    fs.copyFileSync(path.join(indexDir(dir), FACTS_FILE), path.join(indexDir(other), FACTS_FILE));
    expect(readFacts(indexDir(other))!.highWater).toBeLessThanOrEqual((await reopen(other)).log.nextId());
    expect(open[0]!.anchorFactOf(idB!, B, role)).toBe(anchorFact(B, role));
  });

  it('a file of another store or of other detection rules is ignored, and so is a place outside the text', async () => {
    const dir = tmpDir();
    const s = await SpanStore.open(dir, { durability: 'none' });
    const [id] = await s.appendMany([{ turn: 1, role: 'user', text: B }]);
    await s.close();
    const f = readFacts(indexDir(dir))!;
    const wrong = { ids: [id!], starts: [2], ends: [9] };
    for (const bad of [
      { ...wrong, storeId: 'another-store' },
      { ...wrong, rules: '0123456789abcdef' },
      { ...wrong, ends: [B.length + 1] },
      { ...wrong, starts: [9], ends: [2] },
    ]) {
      writeFacts(indexDir(dir), { ...f, ...bad });
      expect((await reopen(dir)).anchorFactOf(id!, B, role), JSON.stringify(bad)).toBe(anchorFact(B, role));
      await open.pop()!.close();
    }
  });
});
