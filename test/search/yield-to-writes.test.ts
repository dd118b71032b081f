// While the store's appends are being indexed (writesPending), a search sends its BM25 lookup
// to the pool only once its vector lookups have settled: one pool job at a time, so a
// search beside a write load leaves a core to the appends' indexing. Events are ordered,
// not timed.
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import type { NativeLexicalIndex, NativeVectorIndex } from '../../src/native.js';
import { search } from '../../src/search.js';
import { searchContextOf, type EngineContext } from '../../src/store/context.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

async function filledStore(n: number): Promise<SpanStore> {
  const store = await SpanStore.open(tmpDir(), { durability: 'none' });
  open.push(store);
  const turns = realTurns(n);
  await store.appendMany(turns.map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
  await store.catchUp();
  return store;
}

/** `target` with its `searchAsync` replaced by `wrap(original)`; every other member as it is. */
function withSearchAsync<T extends object>(target: T, wrap: (original: (...a: unknown[]) => Promise<unknown>) => (...a: unknown[]) => Promise<unknown>): T {
  return new Proxy(target, {
    get(t, p) {
      const v = Reflect.get(t, p) as unknown;
      if (p === 'searchAsync') return wrap((v as (...a: unknown[]) => Promise<unknown>).bind(t));
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}

describe('search: under a write load, the BM25 pool lookup waits for the vector lookups', () => {
  const queries = ['which file did the agent edit first?', 'what did the tests print after the fix', 'def main python'];

  it('writesPending true: every vector lookup has settled before the BM25 lookup is queued; false: it is queued first; the answers are the same', async () => {
    const store = await filledStore(1500);
    const engine = (store as unknown as { engine: EngineContext }).engine;
    const base = searchContextOf(engine, () => store.verdict().state);
    for (const q of queries) {
      const answers = [];
      for (const pending of [true, false]) {
        const events: string[] = [];
        const vector = withSearchAsync(base.vector as NativeVectorIndex, (f) => (...a) => f(...a).then((r) => (events.push('vector settled'), r)));
        const lexical = withSearchAsync(base.lexical as NativeLexicalIndex, (f) => (...a) => (events.push('bm25 queued'), f(...a)));
        const result = await search({ ...base, vector, lexical, syncPostings: 0, writesPending: () => pending }, q, { k: 10 });
        const firstBm25 = events.indexOf('bm25 queued');
        expect(firstBm25).toBeGreaterThanOrEqual(0);
        expect(events.filter((e) => e === 'vector settled').length).toBeGreaterThanOrEqual(1);
        if (pending) expect(events.lastIndexOf('vector settled')).toBeLessThan(firstBm25);
        else expect(firstBm25).toBe(0);
        answers.push(result.hits.map((h) => [h.spanId, h.score, h.via]));
      }
      expect(answers[0]).toEqual(answers[1]);
    }
  }, 60_000);

  it('store.search asks the store whether appends are being indexed', async () => {
    const store = await filledStore(1500);
    const indexes = (store as unknown as { indexes: { writing(): boolean; lexical: NativeLexicalIndex; vector: NativeVectorIndex } }).indexes;
    const { lexical, vector } = indexes;
    const writing = indexes.writing;
    try {
      for (const pending of [true, false]) {
        const events: string[] = [];
        indexes.writing = () => pending;
        indexes.vector = withSearchAsync(vector, (f) => (...a) => f(...a).then((r) => (events.push('vector settled'), r)));
        // searchWithin saying no (as past its bound on postings) sends the lookup to the pool.
        const pooled = withSearchAsync(lexical, (f) => (...a) => (events.push('bm25 queued'), f(...a)));
        indexes.lexical = new Proxy(pooled, { get: (t, p) => (p === 'searchWithin' ? () => null : Reflect.get(t, p)) });
        await store.search('which file did the agent edit first?', { k: 10 });
        const firstBm25 = events.indexOf('bm25 queued');
        expect(firstBm25).toBeGreaterThanOrEqual(0);
        if (pending) expect(events.lastIndexOf('vector settled')).toBeLessThan(firstBm25);
        else expect(firstBm25).toBe(0);
      }
    } finally {
      indexes.writing = writing;
      indexes.lexical = lexical;
      indexes.vector = vector;
    }
  });

  it('the store says appends are being indexed while a catch-up runs, and not once it is done', async () => {
    const store = await filledStore(200);
    const indexes = (store as unknown as { indexes: { writing(): boolean } }).indexes;
    expect(indexes.writing()).toBe(false);
    await store.appendMany(realTurns(400).slice(200).map((t) => ({ turn: t.turn + 10_000, role: t.role, text: t.text })));
    const caught = store.catchUp();
    expect(indexes.writing()).toBe(true);
    await caught;
    expect(indexes.writing()).toBe(false);
  });
});
