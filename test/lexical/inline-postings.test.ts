// Postings of rare terms live inline in their term record (ByteVec, up to 8 bytes in place of
// the heap pointer): most terms of a transcript occur once (ids, numbers, hashes), and a heap
// block per stream doubled the index's memory at 10^6 spans. A stream that outgrows the inline
// bytes moves to the heap; answers, saved files and reloads are the same either way.
import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { addDocs, asDocs, memorySource, openIndex, tempDir, type Doc } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

// Doc i holds a term of its own (`uniq<i>`, one posting: inline), `shared` in every doc
// (its streams outgrow the inline bytes after a few docs) and `grow` at i's first
// positions in every 3rd doc (position streams of varying length).
const docs: Doc[] = asDocs(
  Array.from({ length: 300 }, (_, i) => `uniq${i} shared ${i % 3 === 0 ? Array.from({ length: 1 + (i % 7) }, () => 'grow').join(' ') : 'other'} tail${i % 50}`),
);

describe('inline postings', () => {
  it('a term of one posting keeps both its streams inline; a common one does not', () => {
    const ix = openIndex(path.join(tmp.dir, 'a.idx'));
    addDocs(ix, docs);
    const s = ix.stats();
    // Every uniq<i> (300 terms, 1 posting, 1 position) and nothing else holds both inline:
    // `shared`, `grow`, `other` and the tail<k> (6 postings each) reach the heap at least
    // for their doc stream.
    expect(s.inlineStreams).toBeGreaterThanOrEqual(600);
    expect(s.inlineStreams).toBeLessThan(2 * s.rawTerms);
    // The 300 single-posting terms cost no heap block: postings memory is the few common
    // terms' blocks, far below 2 blocks of 16 bytes per term.
    expect(s.memoryPostingsBytes).toBeLessThan(16 * s.rawTerms);
  });

  it('answers the same across the inline/heap boundary, and after a save and reload', () => {
    const file = path.join(tmp.dir, 'b.idx');
    const ix = openIndex(file);
    addDocs(ix, docs);
    const src = memorySource(docs);
    const ask = (x: typeof ix) => ({
      uniq: [0, 1, 150, 299].map((i) => Array.from(x.search(`uniq${i}`, 5, 1, NaN, NaN).ids)),
      shared: Array.from(x.search('shared grow', 20, 1, NaN, NaN).ids),
      phrase: ['shared grow grow grow', 'uniq7 shared other', 'grow tail'].map((p) => Array.from(x.phrase(src as never, p, 1, Infinity))),
    });
    const before = ask(ix);
    expect(before.uniq).toEqual([[0], [1], [150], [299]]);
    // Every doc with 3+ `grow` in a row: i % 3 == 0 and 1 + i % 7 >= 3.
    const expected = docs.filter((d) => d.text.includes('shared grow grow grow')).map((d) => d.id);
    expect(before.phrase[0]).toEqual(expected);
    expect(before.phrase[1]).toEqual([7]);
    ix.save();
    const reopened = openIndex(file);
    expect(reopened.stats().loadedFrom).toBe('file');
    expect(ask(reopened)).toEqual(before);
    expect(reopened.stats().inlineStreams).toBe(ix.stats().inlineStreams);
  });
});
