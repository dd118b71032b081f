// Bad arguments → typed errors (SpanguardError with a stable code), and nothing changes.
import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { addon } from '../../src/native.js';
import { SpanguardError } from '../../src/errors.js';
import { addDocs, asDocs, memorySource, openIndex, tempDir, type LexIndex } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
const fresh = (): LexIndex => openIndex(path.join(tmp.dir, `err-${n++}.idx`));

function expectCode(fn: () => unknown, code: string) {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(SpanguardError);
  expect((caught as SpanguardError).code).toBe(code);
}

describe('bad arguments → typed errors', () => {
  it('constructor needs a path', () => {
    const Ctor = addon().LexicalIndex as unknown as new (...a: unknown[]) => unknown;
    expectCode(() => new Ctor(), 'INVALID_ARGUMENT');
    expectCode(() => new Ctor(''), 'INVALID_ARGUMENT');
    expectCode(() => new Ctor(42), 'INVALID_ARGUMENT');
  });
  it('phraseHas validates phrases, ids and kind', () => {
    const ix = fresh();
    const docs = asDocs(['alpha beta gamma']);
    addDocs(ix, docs);
    const src = { ids: Float64Array.of(0), kinds: Uint8Array.of(1), texts: ['alpha beta gamma'] };
    const h = ix.phraseHas.bind(ix) as (...a: unknown[]) => unknown;
    expectCode(() => h(src, ['alpha'], Float64Array.of(0, 1), 1), 'INVALID_ARGUMENT');
    expectCode(() => h(src, ['alpha'], [0], 1), 'INVALID_ARGUMENT');
    expectCode(() => h(src, ['alpha'], Uint32Array.of(0), 1), 'INVALID_ARGUMENT');
    expectCode(() => h(src, [7], Float64Array.of(0), 1), 'INVALID_ARGUMENT');
    expectCode(() => h(src, ['alpha'], Float64Array.of(-1), 1), 'INVALID_ARGUMENT');
    expectCode(() => h(src, ['alpha'], Float64Array.of(0.5), 1), 'INVALID_ARGUMENT');
    expectCode(() => h(src, [''], Float64Array.of(0), 1), 'INVALID_ARGUMENT');
    expectCode(() => h(src, ['alpha'], Float64Array.of(0), 9), 'UNKNOWN_KIND');
    expect(Array.from(h(src, ['beta gam', 'delta'], Float64Array.of(0, 0), 1) as Uint8Array)).toEqual([1, 0]);
  });
  it('search validates query, k, kind and the turn range', () => {
    const ix = fresh();
    addDocs(ix, asDocs(['alpha']));
    const s = ix.search.bind(ix) as (...a: unknown[]) => unknown;
    expectCode(() => s(42, 10, 1, NaN, NaN), 'INVALID_ARGUMENT');
    expectCode(() => s('alpha', 0, 1, NaN, NaN), 'INVALID_ARGUMENT');
    expectCode(() => s('alpha', 1.5, 1, NaN, NaN), 'INVALID_ARGUMENT');
    expectCode(() => s('alpha', NaN, 1, NaN, NaN), 'INVALID_ARGUMENT');
    expectCode(() => s('alpha', 1e9, 1, NaN, NaN), 'INVALID_ARGUMENT');
    expectCode(() => s('alpha', 10, 3, NaN, NaN), 'UNKNOWN_KIND');
    expectCode(() => s('alpha', 10, 0, NaN, NaN), 'UNKNOWN_KIND');
    expectCode(() => s('alpha', 10, '1', NaN, NaN), 'INVALID_ARGUMENT');
    expectCode(() => s('alpha', 10, 1, 5, 4), 'INVALID_ARGUMENT');
    expectCode(() => s('alpha', 10, 1, 'x', 4), 'INVALID_ARGUMENT');
  });
  it('add refuses ids that do not strictly increase past the high water, and indexes nothing of the batch', () => {
    const ix = fresh();
    addDocs(ix, asDocs(['zero', 'one']));
    const before = ix.stats();
    expectCode(() => addDocs(ix, [{ id: 2, text: 'two' }, { id: 2, text: 'dup' }]), 'INVALID_ARGUMENT');
    expectCode(() => addDocs(ix, [{ id: 1, text: 'again' }]), 'INVALID_ARGUMENT');
    expectCode(() => addDocs(ix, [{ id: 2.5, text: 'frac' }]), 'INVALID_ARGUMENT');
    expectCode(() => addDocs(ix, [{ id: -1, text: 'neg' }]), 'INVALID_ARGUMENT');
    expectCode(() => addDocs(ix, [{ id: 2 ** 53, text: 'big' }]), 'INVALID_ARGUMENT');
    expect(ix.stats()).toEqual(before);
    expect(ix.highWater()).toBe(2);
  });
  it('add refuses unknown kinds, reversed or non-integer turns, wrong column types and lengths', () => {
    const ix = fresh();
    expectCode(() => addDocs(ix, [{ id: 0, text: 'a' }, { id: 1, kind: 9, text: 'b' }]), 'UNKNOWN_KIND');
    expectCode(() => addDocs(ix, [{ id: 0, turnStart: 5, turnEnd: 4, text: 'a' }]), 'INVALID_TURN');
    expectCode(() => addDocs(ix, [{ id: 0, turnStart: NaN, text: 'a' }]), 'INVALID_TURN');
    expectCode(() => addDocs(ix, [{ id: 0, turnStart: 1.5, turnEnd: 2, text: 'a' }]), 'INVALID_TURN');
    const add = ix.add.bind(ix) as (...a: unknown[]) => unknown;
    expectCode(() => add([0], new Uint8Array([1]), new Float64Array([0]), new Float64Array([0]), ['a']), 'INVALID_ARGUMENT');
    expectCode(() => add(new Float64Array([0]), new Uint8Array([1, 1]), new Float64Array([0]), new Float64Array([0]), ['a']), 'INVALID_ARGUMENT');
    expectCode(() => add(new Float64Array([0]), new Uint8Array([1]), new Float64Array([0]), new Float64Array([0]), [7]), 'INVALID_ARGUMENT');
    expect(ix.highWater()).toBe(0);
    expect(ix.stats().rawDocs).toBe(0);
  });
  it('empty text is valid; events advance the high water without being indexed', () => {
    const ix = fresh();
    expect(addDocs(ix, [{ id: 0, text: '' }, { id: 1, kind: 3, text: 'event text' }])).toBe(1);
    expect(ix.highWater()).toBe(2);
    expect(ix.stats().rawDocs).toBe(1);
    expect(Array.from(ix.search('event', 5, 1, NaN, NaN).ids)).toEqual([]);
  });
  it('phrase validates its source, phrase, kind and limit', () => {
    const docs = asDocs(['alpha beta']);
    const ix = fresh();
    addDocs(ix, docs);
    const src = memorySource(docs);
    const p = ix.phrase.bind(ix) as (...a: unknown[]) => unknown;
    expectCode(() => p(src, '', 1, 10), 'INVALID_ARGUMENT');
    expectCode(() => p(src, 42, 1, 10), 'INVALID_ARGUMENT');
    expectCode(() => p(src, 'alpha', 4, 10), 'UNKNOWN_KIND');
    expectCode(() => p(src, 'alpha', 1, 0), 'INVALID_ARGUMENT');
    expectCode(() => p(src, 'alpha', 1, 2.5), 'INVALID_ARGUMENT');
    expectCode(() => p(src, 'alpha', 1, NaN), 'INVALID_ARGUMENT');
    expectCode(() => p({}, 'alpha', 1, 10), 'INVALID_ARGUMENT');
    expectCode(() => p({ ids: [0], kinds: new Uint8Array([1]), texts: ['x'] }, 'alpha', 1, 10), 'INVALID_ARGUMENT');
    expectCode(() => p(null, 'alpha', 1, 10), 'INVALID_ARGUMENT');
  });
  it('a source that lacks an indexed span is CORRUPT (index and log disagree), not a silent miss', () => {
    const ix = fresh();
    addDocs(ix, asDocs(['alpha beta', 'alpha gamma']));
    const short = memorySource(asDocs(['alpha beta']));
    expectCode(() => ix.phrase(short as never, 'alpha', 1, Infinity), 'CORRUPT');
  });
  it('catchUp and tokenize reject non-log / non-string arguments', () => {
    const ix = fresh();
    expectCode(() => (ix.catchUp as (...a: unknown[]) => unknown)(undefined), 'INVALID_ARGUMENT');
    expectCode(() => (ix.catchUp as (...a: unknown[]) => unknown)({}), 'INVALID_ARGUMENT');
    expectCode(() => (ix.tokenize as (...a: unknown[]) => unknown)(5), 'INVALID_ARGUMENT');
  });
});
