// A query (search, ContextWindow.recall) is at most MAX_QUERY_CHARS characters: longer is
// INVALID_ARGUMENT before any analysis, so no query can cost more than that bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContextWindow, SpanStore } from '../../src/index.js';
import { analyzedPart, MAX_QUERY_CHARS, MAX_QUERY_WORDS } from '../../src/search.js';
import { tmpDir } from '../helpers/data.js';

let store: SpanStore;
/** Distinct filler words: qxaa, qxab, … (the long line the store holds), qyaa, qyab, … (nowhere). */
const filler = (n: number, p = 'qy') => Array.from({ length: n }, (_, i) => `${p}${String.fromCharCode(97 + Math.floor(i / 26) % 26)}${String.fromCharCode(97 + (i % 26))}`);
const LONG_LINE = `${filler(300, 'qx').join(' ')} zebrafish`;
beforeAll(async () => {
  store = await SpanStore.open(tmpDir(), { durability: 'none' });
  await store.append({ turn: 1, role: 'user', text: 'The upstream API allows 40 req/s.' });
  await store.append({ turn: 2, role: 'assistant', text: 'The zebrafish fixture is loaded.' });
  await store.append({ turn: 3, role: 'user', text: LONG_LINE });
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

describe(`a query's first ${MAX_QUERY_WORDS} words are analyzed; past them it is matched verbatim and embedded, never analyzed`, () => {
  it('the analyzed part ends with the last allowed word; a shorter query is whole', () => {
    const words = filler(300);
    expect(analyzedPart(`${words.join(' ')}?`)).toBe(words.slice(0, MAX_QUERY_WORDS).join(' '));
    expect(analyzedPart('Which fixture is loaded?')).toBe('Which fixture is loaded?');
  });
  it('a word past the bound adds no term: a question naming zebrafish only there has nothing in common with the store', async () => {
    const late = await store.search(`What about ${filler(300).join(' ')} zebrafish?`);
    expect(late).toMatchObject({ miss: true, missReason: 'nothing-in-common' });
    const early = await store.search(`What about zebrafish ${filler(300).join(' ')}?`);
    expect(early.miss).toBe(false);
    expect(early.hits[0]!.text).toContain('zebrafish');
  });
  it('a question cut short is still a question: its words need not all be in the answer', async () => {
    const r = await store.search(`The zebrafish ${filler(300).join(' ')} was loaded, right?`);
    expect(r.miss).toBe(false);
  });
  it('the whole query is still matched verbatim', async () => {
    const r = await store.search(LONG_LINE);
    expect(r.miss).toBe(false);
    expect(r.hits[0]).toMatchObject({ turnStart: 3, via: 'exact' });
  });
});
