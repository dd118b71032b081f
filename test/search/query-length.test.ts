// A query (search, ContextWindow.recall) is at most MAX_QUERY_CHARS characters: longer is
// INVALID_ARGUMENT before any analysis, so no query can cost more than that bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContextWindow, SpanStore } from '../../src/index.js';
import { MAX_QUERY_CHARS } from '../../src/search.js';
import { tmpDir } from '../helpers/data.js';

let store: SpanStore;
beforeAll(async () => {
  store = await SpanStore.open(tmpDir(), { durability: 'none' });
  await store.append({ turn: 1, role: 'user', text: 'The upstream API allows 40 req/s.' });
});
afterAll(async () => store.close());

describe(`a query is at most ${MAX_QUERY_CHARS.toLocaleString('en')} characters`, () => {
  it('the documented figure', () => expect(MAX_QUERY_CHARS).toBe(16_384));
  it(`${MAX_QUERY_CHARS} characters are searched; one more, or 50,000, is INVALID_ARGUMENT naming the limit`, async () => {
    const r = await store.search('a'.repeat(MAX_QUERY_CHARS));
    expect(r.miss).toBe(true);
    for (const n of [MAX_QUERY_CHARS + 1, 50_000])
      await expect(store.search('a'.repeat(n))).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_ARGUMENT', message: expect.stringContaining(`the limit is ${MAX_QUERY_CHARS}`) });
  });
  it('recall too', async () => {
    const w = new ContextWindow(store, { budgetTokens: 1000 });
    await expect(w.recall('word '.repeat(10_000))).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_ARGUMENT' });
  });
  it('a query that is not a string is INVALID_ARGUMENT', async () => {
    for (const q of [undefined, null, 5, 1n, ['a']]) await expect(store.search(q as string)).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_ARGUMENT' });
  });
});
