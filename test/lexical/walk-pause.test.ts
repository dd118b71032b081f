// A BM25 walk on the pool lets a waiting catch-up step take the index, then goes on where it
// was: the walk re-reads where the streams it reads now lie (the index may have grown meanwhile)
// and answers for the index as it stood when it began.
import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { addDocs, appendToLog, asDocs, openIndex, openSpanLog, rng, tempDir, type LexIndex } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
const fresh = (): LexIndex => openIndex(path.join(tmp.dir, `ix-${n++}.idx`));

// Documents of words from a small vocabulary (every word in many documents: long posting
// lists, streams on the heap) and one word of their own (a term whose stream is kept inline).
// Letters only: the tokenizer splits a word where letters and digits meet.
const letters = (i: number): string => (i < 26 ? String.fromCharCode(97 + i) : letters(Math.floor(i / 26) - 1) + letters(i % 26));
const vocab = Array.from({ length: 40 }, (_, i) => `w${letters(i)}q`);
function texts(count: number, seed: number, from = 0): string[] {
  const r = rng(seed);
  return Array.from({ length: count }, (_, i) => {
    const words = Array.from({ length: 8 + Math.floor(r() * 40) }, () => vocab[Math.floor(r() * vocab.length)]!);
    words.push(`own${letters(from + i)}x`);
    return words.join(' ');
  });
}

const same = (a: { ids: Float64Array; scores: Float32Array }, b: { ids: Float64Array; scores: Float32Array }) => {
  expect([...a.ids]).toEqual([...b.ids]);
  expect([...a.scores]).toEqual([...b.scores]);
};

describe('a paused walk answers for the index as it stood when it began', () => {
  const ix = fresh();
  addDocs(ix, asDocs(texts(6000, 1)));
  // Each pause adds a document holding the query's words (their streams grow, and move when a
  // heap block is reallocated) and words of its own (new terms: the term table grows, and the
  // streams kept inline in it move with it).
  let added = 0;
  const growth = (count: number) => {
    const out = texts(count, 100 + added, 6000 + added).map((t, i) => `${t} ${vocab.join(' ')} fresh${letters(added + i)}a fresh${letters(added + i)}b fresh${letters(added + i)}c`);
    added += count;
    return out;
  };

  it('document at a time (MaxScore): the same hits and scores as before the documents were added', () => {
    // The last query's rare word prunes the walk before its first poll: no pause, same answer.
    for (const [q, pauses] of [
      [`${vocab[1]} ${vocab[2]}`, true],
      [`${vocab[3]} ${vocab[4]} ${vocab[5]}`, true],
      [`own${letters(77)}x ${vocab[6]}`, false],
    ] as const) {
      for (const k of [1, 10, 100]) {
        const before = ix.search(q, k, 1, NaN, NaN);
        const docs = ix.stats().rawDocs as number;
        const got = ix._searchPausing(q, k, 1, NaN, NaN, growth(300));
        if (pauses) expect(got.pauses, q).toBeGreaterThan(0);
        expect(ix.stats().rawDocs as number, q).toBe(docs + got.pauses);
        same(got, before);
      }
    }
  });

  it('a posting list kept inline in the term table, when the table grows during the pause', () => {
    // A word of two documents (its few bytes live inside the term table) after all the others,
    // beside a common word the walk reaches hundreds of documents through before them: the
    // first pause comes while the rare word's second posting is still unread, and adds one
    // document of 20,000 new words, so the term table grows (its entries move) meanwhile.
    const hw = ix.highWater();
    addDocs(ix, [
      { id: hw, text: `pairword ${vocab[9]} ${vocab[9]}` },
      { id: hw + 1, text: `pairword ${vocab[10]}` },
    ]);
    const q = `pairword ${vocab[9]}`;
    const before = ix.search(q, 200, 1, NaN, NaN);
    expect([...before.ids].slice(0, 2).sort()).toEqual([hw, hw + 1]);
    const wide = Array.from({ length: 20_000 }, (_, i) => `wide${letters(i)}z`).join(' ');
    const got = ix._searchPausing(q, 200, 1, NaN, NaN, [wide, ...growth(50)]);
    expect(got.pauses).toBeGreaterThan(0);
    same(got, before);
  });

  it('term at a time (every term common): the same hits and scores as before the documents were added', () => {
    // The first pause adds 4,000 documents holding the query's words: their lists outgrow
    // their heap blocks, which are reallocated (moved, where the allocator cannot grow them).
    const q = vocab.slice(10, 16).join(' ');
    const accumulated = ix.stats().bm25Accumulated as number;
    const before = ix.search(q, 50, 1, NaN, NaN);
    const got = ix._searchPausing(q, 50, 1, NaN, NaN, growth(4000), 4000);
    expect(ix.stats().bm25Accumulated as number).toBe(accumulated + 2);
    expect(got.pauses).toBeGreaterThan(0);
    same(got, before);
  });

  it('a turn window is applied to the documents the walk began with', () => {
    const q = `${vocab[7]} ${vocab[8]}`;
    const before = ix.search(q, 20, 1, 1000, 4000);
    same(ix._searchPausing(q, 20, 1, 1000, 4000, growth(300)), before);
  });

  it('once the additions are in, a new walk sees them', () => {
    const q = `fresh${letters(0)}a fresh${letters(0)}b`;
    expect(ix.search(q, 5, 1, NaN, NaN).ids.length).toBe(1);
  });
});

describe('a catch-up step waits for a turn of a walk on the pool, not for the whole walk', () => {
  it('searchAsync lets a catch-up that comes during its walk in (the index counts the pauses)', async () => {
    const log = openSpanLog(path.join(tmp.dir, `log-${n++}`));
    const ix = fresh();
    // Long lists: 60,000 documents of the 40 words; a query of six of them walks ~2·10^5
    // postings or more, many times the half millisecond a walk runs before it lets others in.
    await appendToLog(log, texts(60_000, 2).map((text) => ({ text })));
    ix.catchUp(log);
    const q = vocab.slice(20, 26).join(' ');
    let pauses = 0;
    for (let round = 0; round < 20 && pauses === 0; round++) {
      await appendToLog(log, texts(2000, 50 + round, 60_000 + round * 2000).map((text) => ({ text })));
      const before = ix.stats().bm25Pauses as number;
      const walk = ix.searchAsync(q, 10, 1, NaN, NaN);
      const catchUp = ix.catchUpAsync(log);
      const [hits] = await Promise.all([walk, catchUp]);
      expect(hits.ids.length).toBe(10);
      pauses = (ix.stats().bm25Pauses as number) - before;
    }
    expect(pauses).toBeGreaterThan(0);
    expect(ix.highWater()).toBe(log.nextId());
  });
});
