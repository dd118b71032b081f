// A BM25 lookup whose postings are few runs on the JS thread (LexicalIndex `searchWithin`):
// the index sums the postings of the terms it would walk and searches only when the sum is
// within the bound, answering exactly what `search` answers; otherwise it answers null and
// searches nothing, and store.search sends the lookup to the pool (`searchAsync`). Pool jobs
// are counted as they are queued, not timed.
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { addon, RecordKind } from '../../src/native.js';
import { search, SYNC_BM25_POSTINGS } from '../../src/search.js';
import { searchContextOf, type EngineContext } from '../../src/store/context.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const testing = (addon() as unknown as { _testing: { background(): { queued: number; jobs: number; offThread: number } } })._testing;

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

async function filledStore(n: number, extra: { turn: number; role: string; text: string }[] = []): Promise<SpanStore> {
  const store = await SpanStore.open(tmpDir(), { durability: 'none' });
  open.push(store);
  const turns = [...realTurns(n).map((t) => ({ turn: t.turn, role: t.role, text: t.text })), ...extra.map((t) => ({ ...t, turn: n + t.turn }))];
  for (let i = 0; i < turns.length; i += 1000) await store.appendMany(turns.slice(i, i + 1000));
  await store.catchUp();
  return store;
}

describe('LexicalIndex searchWithin: search on this thread within a bound on its postings', () => {
  it('answers what search answers when the query terms hold at most maxPostings postings, null with one fewer', async () => {
    // "quokka" in 7 spans, "wombat" in 5 (2 of them with both): 12 postings in all.
    const extra = [
      ...Array.from({ length: 5 }, (_, i) => ({ turn: i + 1, role: 'user', text: `the quokka ate ${i} leaves` })),
      ...Array.from({ length: 3 }, (_, i) => ({ turn: i + 6, role: 'assistant', text: `a wombat dug ${i} holes` })),
      ...Array.from({ length: 2 }, (_, i) => ({ turn: i + 9, role: 'user', text: `quokka and wombat ${i}` })),
    ];
    const store = await filledStore(300, extra);
    const lex = store.lexical;
    for (const [q, postings] of [
      ['quokka', 7],
      ['wombat', 5],
      ['quokka wombat', 12],
      ['Quokkas WOMBAT quokka', 12],
    ] as const) {
      for (const [lo, hi] of [
        [NaN, NaN],
        [303, 309],
      ]) {
        const sync = lex.search(q, 10, RecordKind.raw, lo, hi);
        const within = lex.searchWithin(q, 10, RecordKind.raw, lo, hi, postings);
        expect(within).not.toBeNull();
        expect([...within!.ids]).toEqual([...sync.ids]);
        expect([...within!.scores]).toEqual([...sync.scores]);
        expect(lex.searchWithin(q, 10, RecordKind.raw, lo, hi, postings - 1)).toBeNull();
      }
    }
    // Terms the namespace does not hold walk nothing: an empty answer within any bound.
    expect([...lex.searchWithin('zzyzx qwxv', 10, RecordKind.raw, NaN, NaN, 0)!.ids]).toEqual([]);
    expect([...lex.searchWithin('quokka', 10, RecordKind.summary, NaN, NaN, 0)!.ids]).toEqual([]);
  });

  it('rejects a bound that is not a non-negative integer, and bad search arguments, with their codes', async () => {
    const store = await filledStore(50);
    const lex = store.lexical;
    for (const bad of [-1, 1.5, NaN, Infinity, '5' as unknown as number, undefined as unknown as number])
      expect(() => lex.searchWithin('agent', 10, RecordKind.raw, NaN, NaN, bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => lex.searchWithin('agent', 0, RecordKind.raw, NaN, NaN, 10)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => lex.searchWithin('agent', 10, 7, NaN, NaN, 10)).toThrow(expect.objectContaining({ code: 'UNKNOWN_KIND' }));
  });
});

describe('store.search: BM25 on this thread when its postings are few, on the pool otherwise', () => {
  const queries = ['which file did the agent edit first?', 'what did the tests print after the fix', 'def main python', 'error'];

  it('a search whose BM25 postings are within SYNC_BM25_POSTINGS queues only its vector lookup; with a bound of 0 the BM25 goes to the pool too; the answers are the same', async () => {
    const store = await filledStore(1500);
    expect(store.stats().spans.raw).toBeLessThan(SYNC_BM25_POSTINGS);
    const engine = (store as unknown as { engine: EngineContext }).engine;
    const ctx = (syncPostings?: number) => ({
      ...searchContextOf(engine, () => store.verdict().state),
      ...(syncPostings === undefined ? {} : { syncPostings }),
    });
    for (const q of queries) {
      let before = testing.background().queued;
      const onThread = await search(ctx(), q, { k: 10 });
      expect(testing.background().queued - before).toBe(1);
      before = testing.background().queued;
      const pooled = await search(ctx(0), q, { k: 10 });
      expect(testing.background().queued - before).toBe(2);
      expect(onThread.hits.map((h) => [h.spanId, h.score, h.via])).toEqual(pooled.hits.map((h) => [h.spanId, h.score, h.via]));
      expect([onThread.miss, onThread.missReason]).toEqual([pooled.miss, pooled.missReason]);
      // The store's own search takes the default bound.
      before = testing.background().queued;
      const viaStore = await store.search(q, { k: 10 });
      expect(testing.background().queued - before).toBe(1);
      expect(viaStore.hits.map((h) => [h.spanId, h.score])).toEqual(onThread.hits.map((h) => [h.spanId, h.score]));
    }
  }, 60_000);

  it('a question naming a time runs its second BM25 lookup (over the turns of that time) under the same bound', async () => {
    const store = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(store);
    const day = Date.UTC(2024, 4, 8);
    await store.appendMany(
      Array.from({ length: 40 }, (_, i) => ({ turn: i + 1, role: i % 2 ? 'assistant' : 'user', text: `deploy step ${i} of the release pipeline`, timestamp: day + (i - 20) * 3_600_000 })),
    );
    await store.catchUp();
    const engine = (store as unknown as { engine: EngineContext }).engine;
    const base = searchContextOf(engine, () => store.verdict().state);
    const q = 'what deploy step ran on 2024-05-08?';
    let before = testing.background().queued;
    const onThread = await search(base, q, { k: 5 });
    expect(testing.background().queued - before).toBe(1);
    before = testing.background().queued;
    const pooled = await search({ ...base, syncPostings: 0 }, q, { k: 5 });
    // The vector lookup, the BM25 lookup and the one over the day's turns.
    expect(testing.background().queued - before).toBe(3);
    expect(onThread.hits.map((h) => [h.spanId, h.score])).toEqual(pooled.hits.map((h) => [h.spanId, h.score]));
  });
});
