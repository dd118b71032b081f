// searchBegin / searchEnd: a search run on the index's helper thread while the caller does
// other work (hybrid search's lexical lookups), collected later; every other call finishes it
// first, so the engine runs one call at a time.
import { describe, expect, it } from 'vitest';
import { filledBinary, nearQueries, plainHits, row } from './helpers.js';

const RAW = 1;
const SUMMARY = 2;
const dims = 32;

const filled = (tag: string, n = 3000) => filledBinary(tag, dims, n);
const plain = plainHits;

describe('vector searchBegin / searchEnd', () => {
  it('returns what search returns, for every strategy and k', () => {
    const { ix, m } = filled('ov-eq');
    const qs = nearQueries(m, dims, 40, 0.2, 3);
    for (let q = 0; q < 40; q++) {
      const qv = row(qs, q, dims);
      for (const [k, strategy] of [
        [10, undefined],
        [100, undefined],
        [7, 'exact'],
      ] as const) {
        ix.searchBegin(qv, k, RAW, strategy);
        const got = ix.searchEnd();
        expect(plain(got)).toEqual(plain(ix.search(qv, k, RAW, strategy)));
      }
    }
    ix.close();
  });

  it('keeps its own copy of the query: changing the caller’s array after searchBegin changes nothing', () => {
    const { ix, m } = filled('ov-copy');
    const qv = row(m, 5, dims);
    const want = plain(ix.search(qv, 10, RAW));
    ix.searchBegin(qv, 10, RAW);
    qv.fill(0).set(row(m, 900, dims));
    expect(plain(ix.searchEnd())).toEqual(want);
    ix.close();
  });

  it('another call finishes a begun search first and searchEnd still returns it: the result is the index as it was at searchBegin', () => {
    const { ix, m } = filled('ov-settle');
    const qv = row(m, 11, dims);
    const before = plain(ix.search(qv, 5, RAW));
    ix.searchBegin(qv, 5, RAW);
    // The same vector under a new id, which the next search finds at distance 0 ahead of all.
    ix.add(Float64Array.of(10_000), Uint8Array.of(RAW), qv);
    const other = ix.search(qv, 5, RAW);
    expect(Array.from(other.ids)).toContain(10_000);
    expect(plain(ix.searchEnd())).toEqual(before);
    ix.close();
  });

  it('a searchEnd without a pending search is a typed INVALID_ARGUMENT error, as is a second searchEnd', () => {
    const { ix, m } = filled('ov-none', 200);
    expect(() => ix.searchEnd()).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    ix.searchBegin(row(m, 1, dims), 3, RAW);
    expect(ix.searchEnd().ids.length).toBe(3);
    expect(() => ix.searchEnd()).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    ix.close();
  });

  it('a later searchBegin drops an uncollected result; arguments are checked at searchBegin', () => {
    const { ix, m } = filled('ov-drop', 500);
    ix.searchBegin(row(m, 1, dims), 3, RAW);
    ix.searchBegin(row(m, 2, dims), 4, SUMMARY);
    expect(ix.searchEnd().ids.length).toBe(0); // the summary namespace is empty
    expect(() => ix.searchBegin(new Float32Array(dims + 1), 3, RAW)).toThrow(expect.objectContaining({ code: 'DIMENSION_MISMATCH' }));
    expect(() => ix.searchBegin(row(m, 1, dims), 3, 9)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => ix.searchEnd()).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    ix.close();
  });

  it('close() with a search begun and never collected finishes it and closes; later calls are CLOSED', () => {
    const { ix, m } = filled('ov-close', 500);
    ix.searchBegin(row(m, 1, dims), 3, RAW);
    ix.close();
    expect(() => ix.searchEnd()).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    expect(() => ix.searchBegin(row(m, 1, dims), 3, RAW)).toThrow(expect.objectContaining({ code: 'CLOSED' }));
  });
});
