// Index identity: a derived index file is this store's and this log history's, or it is
// rebuilt from the log at open and the rebuild recorded.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { readIdentity } from '../../src/store/identity.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

const FACT = 'The upstream API enforces a rate limit of 40 req/s per token.';
async function makeStore(text: (i: number) => string, n = 60): Promise<string> {
  const dir = tmpDir();
  const s = await SpanStore.open(dir, { durability: 'none' });
  await s.appendMany(Array.from({ length: n }, (_, i) => ({ turn: i + 1, role: 'user', text: text(i) })));
  await s.close();
  return dir;
}
const copyIndexes = (from: string, to: string) => {
  for (const f of ['lexical.idx']) fs.copyFileSync(path.join(from, 'index', f), path.join(to, 'index', f));
  for (const f of fs.readdirSync(path.join(from, 'index', 'vector'))) fs.copyFileSync(path.join(from, 'index', 'vector', f), path.join(to, 'index', 'vector', f));
};

/** `index` answering ids(kind) and idsAsync(kind) (what the agreement check reads) with `edit` of its real ids. */
function withIds<T extends { ids(kind: number): Float64Array; idsAsync(kind: number): Promise<Float64Array> }>(index: T, edit: (ids: Float64Array, kind: number) => Float64Array): T {
  return new Proxy(index, {
    get: (t, p) => {
      if (p === 'ids') return (kind: number) => edit(t.ids(kind), kind);
      if (p === 'idsAsync') return async (kind: number) => edit(await t.idsAsync(kind), kind);
      const v = Reflect.get(t, p);
      return typeof v === 'function' ? (v as () => unknown).bind(t) : v;
    },
  });
}

describe('each index names the store and the log history it was built from', () => {
  it('close writes the identity: the store id recorded in the log, each index high water and last-record digest', async () => {
    const dir = await makeStore((i) => `turn ${i}`);
    const id = readIdentity(path.join(dir, 'index'))!;
    const s = await SpanStore.open(dir, { durability: 'none' });
    open.push(s);
    const storeEvent = s.events().find((e) => e.event.type === 'store')!.event as { storeId: string };
    expect(id.storeId).toBe(storeEvent.storeId);
    expect(id.lexical.lastDigest).toMatch(/^[0-9a-f]{32}$/);
    expect(s.events().some((e) => e.event.type === 'index-rebuilt')).toBe(false);
  });
});

describe("another store's index files of the same size are rebuilt and recorded", () => {
  it('same ids, other text: rebuilt at open, an index-rebuilt event, and findExact of a stated value works', async () => {
    const mine = await makeStore((i) => (i === 30 ? FACT : `my turn ${i}`));
    const other = await makeStore((i) => `other turn ${i}`);
    copyIndexes(other, mine);
    fs.copyFileSync(path.join(other, 'index', 'identity.json'), path.join(mine, 'index', 'identity.json'));
    const s = await SpanStore.open(mine, { durability: 'none' });
    open.push(s);
    const rebuilt = s.events().filter((e) => e.event.type === 'index-rebuilt').map((e) => e.event as { index: string; reason: string });
    expect(rebuilt.map((r) => r.index).sort()).toEqual(['lexical', 'vector']);
    expect(rebuilt[0]!.reason).toMatch(/built for store/);
    expect(s.findExact('rate limit of 40 req/s')).toHaveLength(1);
  });
  it('index files without their identity are rebuilt too', async () => {
    const mine = await makeStore((i) => (i === 30 ? FACT : `my turn ${i}`));
    const other = await makeStore((i) => `other turn ${i}`);
    copyIndexes(other, mine);
    fs.rmSync(path.join(mine, 'index', 'identity.json'));
    const s = await SpanStore.open(mine, { durability: 'none' });
    open.push(s);
    expect(s.events().filter((e) => e.event.type === 'index-rebuilt')).toHaveLength(2);
    expect(s.findExact('rate limit of 40 req/s')).toHaveLength(1);
  });
  it('the same store id with another log history (a last record that differs) is rebuilt', async () => {
    const dir = await makeStore((i) => (i === 30 ? FACT : `my turn ${i}`));
    // The identity of a history that ended differently: its last digest does not match.
    const file = path.join(dir, 'index', 'identity.json');
    const id = JSON.parse(fs.readFileSync(file, 'utf8'));
    id.lexical.lastDigest = '0'.repeat(32);
    fs.writeFileSync(file, JSON.stringify(id));
    const s = await SpanStore.open(dir, { durability: 'none' });
    open.push(s);
    const rebuilt = s.events().filter((e) => e.event.type === 'index-rebuilt').map((e) => e.event as { index: string; reason: string });
    expect(rebuilt).toEqual([expect.objectContaining({ index: 'lexical', reason: expect.stringMatching(/another log history/) })]);
  });
});

describe('verify compares the log and the indexes id by id, not counts', () => {
  it('agreeing indexes: no disagreement', async () => {
    const dir = await makeStore((i) => `turn ${i}`);
    const s = await SpanStore.open(dir, { durability: 'none' });
    open.push(s);
    expect(await s.verifyIndexes()).toEqual([]);
  });
  it('a text without features (only punctuation) has no vector and that is no disagreement; a text with features lacking one is', async () => {
    const dir = await makeStore((i) => (i % 7 === 3 ? '.'.repeat(400) : i % 7 === 5 ? '--- *** ---' : `turn ${i}`));
    const s = await SpanStore.open(dir, { durability: 'none' });
    open.push(s);
    expect(await s.verifyIndexes()).toEqual([]);
    expect(s.verdict().state).not.toBe('degraded');
    // The same store with one featured span's vector hidden disagrees.
    s.vector = withIds(s.vector, (ids, kind) => ids.filter((id) => !(kind === 1 && id === 2)));
    expect((await s.verifyIndexes()).join(' ')).toMatch(/vector index lacks 1 raw span\(s\) of the log with text \(first 2\)/);
  });
  it('an index with the same count but other ids disagrees, and the disagreement degrades', async () => {
    const dir = await makeStore((i) => `turn ${i}`);
    const s = await SpanStore.open(dir, { durability: 'none' });
    open.push(s);
    // A lexical index holding as many raw spans, under other ids.
    s.lexical = withIds(s.lexical, (ids, kind) => ids.map((id) => (kind === 1 && id === 5 ? 0 : id)).sort());
    const d = await s.verifyIndexes();
    expect(d.join(' ')).toMatch(/lexical index lacks 1 raw span/);
    expect(d.join(' ')).toMatch(/lexical index holds 1 raw id\(s\) the log does not/);
    expect(s.verdict().state).toBe('degraded');
  });
});

describe('an index whose files are the ones its identity names is trusted at every reopen', () => {
  it('events recorded at open after the last vector (a new retention each time) rebuild nothing', async () => {
    const dir = await makeStore((i) => `turn ${i}`, 20);
    for (let k = 0; k < 3; k++) {
      // Each open records a retention declaration: the log grows past the last vector.
      const s = await SpanStore.open(dir, { durability: 'none', horizonSeconds: 3_600 + k });
      expect(s.events().filter((e) => e.event.type === 'index-rebuilt')).toEqual([]);
      await s.close();
    }
  });
});
