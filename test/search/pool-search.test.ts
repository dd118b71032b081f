// A search's index lookups run on the thread pool: the BM25 top-k (LexicalIndex
// `searchAsync`, unless its postings are few: test/search/bm25-on-thread.test.ts) and the
// vector search (VectorIndex `searchAsync`, its hits taken on the JS thread when the pool has
// finished it or not started it: test/vector/search-take.test.ts) under each index's lock,
// while the event loop turns. They answer what the synchronous calls answer on the same
// index; searches in flight at once each get their own answers; a store closes while one is
// in flight (the close waits for its pool reads). Turns of the loop are counted, not timed.
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { addon, RecordKind } from '../../src/native.js';
import { realTurns, tmpDir } from '../helpers/data.js';
import { search } from '../../src/search.js';
import { searchContextOf, type EngineContext } from '../../src/store/context.js';

const testing = (addon() as unknown as { _testing: { background(): { queued: number; jobs: number; offThread: number } } })._testing;

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

async function filledStore(n: number): Promise<SpanStore> {
  const store = await SpanStore.open(tmpDir(), { durability: 'none' });
  open.push(store);
  const turns = realTurns(n);
  for (let i = 0; i < turns.length; i += 1000) await store.appendMany(turns.slice(i, i + 1000).map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
  await store.catchUp();
  return store;
}

/** Quotes of stored texts and a few questions: what the load bench's searcher asks. */
function queriesOf(store: SpanStore, n: number): string[] {
  const texts = [...store.getMany(Array.from({ length: 60 }, (_, i) => 1 + i * 7))].flatMap((s) => (s && s.text.length > 80 ? [s.text] : []));
  const quotes = texts.slice(0, n).map((t, i) => t.slice(i % 20, (i % 20) + 60 + (i % 5) * 25));
  return [...quotes, 'which file did the agent edit first?', 'what did the tests print after the fix', 'error', 'def main python'];
}

/** Turns of the event loop (setImmediate hops) until `p` settles: 0 for work done before the promise was returned. */
async function turnsUntil(p: Promise<unknown>): Promise<number> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  let turns = 0;
  while (!done) {
    await new Promise((r) => setImmediate(r));
    turns++;
  }
  return turns;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => null,
    (e: unknown) => e,
  );
}

describe('searchAsync: the BM25 and vector lookups of a search run on the thread pool', () => {
  it('answer exactly what search answers on the same store: ids, scores and distances, with turn ranges and both kinds', async () => {
    const store = await filledStore(3000);
    const lex = store.lexical;
    const vec = store.vector;
    const before = testing.background().offThread;
    let jobs = 0;
    for (const q of queriesOf(store, 16)) {
      for (const [kind, lo, hi] of [
        [RecordKind.raw, NaN, NaN],
        [RecordKind.raw, 200, 900],
        [RecordKind.summary, NaN, NaN],
      ] as const) {
        const sync = lex.search(q, 50, kind, lo, hi);
        const pooled = await lex.searchAsync(q, 50, kind, lo, hi);
        jobs++;
        expect([...pooled.ids]).toEqual([...sync.ids]);
        expect([...pooled.scores]).toEqual([...sync.scores]);
      }
      const qv = await store.embedQuery([q]);
      for (const strategy of [undefined, 'exact'] as const) {
        const sync = vec.search(qv, 50, RecordKind.raw, strategy);
        const pooled = await vec.searchAsync(qv, 50, RecordKind.raw, strategy);
        jobs++;
        expect([...pooled.ids]).toEqual([...sync.ids]);
        expect([...pooled.distances]).toEqual([...sync.distances]);
      }
    }
    expect(jobs).toBeGreaterThan(50);
    // Every one ran on a thread of the pool.
    expect(testing.background().offThread - before).toBe(jobs);
  }, 60_000);

  it('bad arguments reject with their typed error before anything is queued', async () => {
    const store = await filledStore(200);
    const before = testing.background().jobs;
    expect(await rejection(store.lexical.searchAsync('x', 0, RecordKind.raw, NaN, NaN))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await rejection(store.lexical.searchAsync('x', 5, 7, NaN, NaN))).toMatchObject({ code: 'UNKNOWN_KIND' });
    expect(await rejection(store.lexical.searchAsync('x', 5, RecordKind.raw, 9, 3))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await rejection(store.vector.searchAsync(new Float32Array(3), 5, RecordKind.raw))).toMatchObject({ code: 'DIMENSION_MISMATCH' });
    const qv = await store.embedQuery(['x']);
    expect(await rejection(store.vector.searchAsync(qv, 5, RecordKind.raw, 'hnsw'))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(testing.background().jobs).toBe(before);
  });

  it('an index cannot be released or closed under a search in flight; once it settles it can, and later searches reject CLOSED', async () => {
    const store = await filledStore(500);
    const lex = new (addon().LexicalIndex)(`${tmpDir()}/lexical.idx`);
    lex.catchUp(store.log);
    const pending = lex.searchAsync('the agent ran the tests', 10, RecordKind.raw, NaN, NaN);
    expect(await rejection(lex.releaseAsync())).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((await pending).ids.length).toBeGreaterThan(0);
    expect(await lex.releaseAsync()).toBe(true);
    expect(await rejection(lex.searchAsync('the agent', 10, RecordKind.raw, NaN, NaN))).toMatchObject({ code: 'CLOSED' });
    const qv = await store.embedQuery(['the agent ran the tests']);
    const vecPending = store.vector.searchAsync(qv, 10, RecordKind.raw);
    expect(await rejection(store.vector.closeAsync())).toMatchObject({ code: 'INVALID_ARGUMENT' });
    await vecPending;
  });
});

describe('store.search: the event loop turns while it runs, and concurrent searches keep their own answers', () => {
  it('each search queues its vector lookup as a pool job (its BM25 lookup, of few postings here, on this thread); the answer is the one it gives alone', async () => {
    const store = await filledStore(1500);
    for (const q of queriesOf(store, 6)) {
      const alone = await store.search(q, { k: 10 });
      const before = testing.background().queued;
      const again = await store.search(q, { k: 10 });
      expect(testing.background().queued - before).toBe(1);
      expect(again.hits.map((h) => [h.spanId, h.score])).toEqual(alone.hits.map((h) => [h.spanId, h.score]));
    }
  }, 60_000);

  it('a search that may not take its vector hits on this thread (stealVectorRows 0, no spin) lets the loop turn until the pool job settles', async () => {
    const store = await filledStore(1500);
    const engine = (store as unknown as { engine: EngineContext }).engine;
    const ctx = { ...searchContextOf(engine, () => store.verdict().state), stealVectorRows: 0, takeSpinMicros: 0 };
    for (const q of queriesOf(store, 6)) {
      const alone = await store.search(q, { k: 10 });
      // Counted as queued: a pool job of an earlier search whose hits were taken on this thread
      // may still run (doing nothing) meanwhile, so jobs run are not this search's alone.
      const before = testing.background().queued;
      const pending = search(ctx, q, { k: 10 });
      // Queued, and not run on this thread: the loop turns before it settles.
      expect(await turnsUntil(pending)).toBeGreaterThanOrEqual(1);
      expect(testing.background().queued - before).toBe(1);
      const again = await pending;
      expect(again.hits.map((h) => [h.spanId, h.score])).toEqual(alone.hits.map((h) => [h.spanId, h.score]));
    }
  }, 60_000);

  it('searches started together answer what each answers alone (each vector search has its own result)', async () => {
    const store = await filledStore(1500);
    const qs = queriesOf(store, 8);
    const alone = [];
    for (const q of qs) alone.push(await store.search(q, { k: 10, kinds: ['raw', 'summary'] }));
    const together = await Promise.all(qs.map((q) => store.search(q, { k: 10, kinds: ['raw', 'summary'] })));
    for (let i = 0; i < qs.length; i++) expect(together[i]!.hits.map((h) => [h.spanId, h.via, h.score])).toEqual(alone[i]!.hits.map((h) => [h.spanId, h.via, h.score]));
  }, 60_000);

  it('a close while searches are in flight waits for their pool reads and closes', async () => {
    const writer = await filledStore(1500);
    const qs = queriesOf(writer, 4);
    await writer.close();
    // A reader's close goes straight to releasing its indexes (nothing to flush or save).
    for (let round = 0; round < 5; round++) {
      const store = await SpanStore.open(writer.dir, { readOnly: true });
      const searches = qs.map((q) =>
        store.search(q, { k: 10 }).then(
          () => 'answered',
          (e: { code?: string }) => e.code ?? String(e),
        ),
      );
      await store.close();
      for (const r of await Promise.all(searches)) expect(['answered', 'CLOSED']).toContain(r);
    }
  }, 60_000);
});
