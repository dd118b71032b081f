// findExact's phrase is bounded as a search's query is (MAX_QUERY_CHARS): a longer phrase is
// INVALID_ARGUMENT before any lookup, so no call costs more than that bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { MAX_QUERY_CHARS } from '../../src/search.js';
import { tmpDir } from '../helpers/data.js';

let store: SpanStore;
/** A span whose text is exactly MAX_QUERY_CHARS characters: the longest phrase findExact takes. */
const LONGEST = `${'ab '.repeat(MAX_QUERY_CHARS / 3)}${'z'.repeat(MAX_QUERY_CHARS % 3)}`;
beforeAll(async () => {
  store = await SpanStore.open(tmpDir(), { durability: 'none' });
  await store.append({ turn: 1, role: 'user', text: 'The upstream API allows 40 req/s.' });
  await store.append({ turn: 2, role: 'tool', text: LONGEST });
});
afterAll(async () => store.close());

describe(`findExact takes a phrase of at most ${MAX_QUERY_CHARS.toLocaleString('en')} characters`, () => {
  it('a phrase of exactly the limit is looked up and found', () => {
    expect(LONGEST.length).toBe(MAX_QUERY_CHARS);
    const hits = store.findExact(LONGEST);
    expect(hits.map((h) => h.turnStart)).toEqual([2]);
  });
  it('one character more, or 50,000, is INVALID_ARGUMENT naming the limit, as search refuses its query', async () => {
    for (const n of [MAX_QUERY_CHARS + 1, 50_000]) {
      const phrase = 'a'.repeat(n);
      expect(() => store.findExact(phrase)).toThrow(expect.objectContaining({ name: 'SpanguardError', code: 'INVALID_ARGUMENT', message: `phrase is ${n} characters; the limit is ${MAX_QUERY_CHARS}` }));
      await expect(store.search(phrase)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining(`the limit is ${MAX_QUERY_CHARS}`) });
    }
  });
  it('an empty phrase or a non-string is INVALID_ARGUMENT', () => {
    for (const p of ['', undefined, null, 5, ['a']]) expect(() => store.findExact(p as string)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
