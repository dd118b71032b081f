import { describe, expect, it } from 'vitest';
import { dot, native } from './helpers.js';

const DIMS = 256;

describe('embedder: deterministic', () => {
  it('gives bit-identical vectors for the same text, across calls and instances', () => {
    const texts = ['rate limit is 40 req/s', 'def snake_case_name(): return 3.5ms', 'ÉCOLE Straße λόγος', ''];
    const a = new native.Embedder(DIMS).embed(texts);
    const b = new native.Embedder(DIMS).embed([...texts].reverse()).slice();
    const again = new native.Embedder(DIMS).embed(texts);
    expect(Buffer.from(again.buffer)).toEqual(Buffer.from(a.buffer));
    for (let i = 0; i < texts.length; i++) {
      const j = texts.length - 1 - i;
      expect(Array.from(a.subarray(i * DIMS, (i + 1) * DIMS))).toEqual(Array.from(b.subarray(j * DIMS, (j + 1) * DIMS)));
    }
  });

  it('batched and one-by-one embedding agree', () => {
    const e = new native.Embedder(DIMS);
    const texts = Array.from({ length: 50 }, (_, i) => `turn ${i}: the build took ${i * 7} ms in src/mod_${i}.ts`);
    const all = e.embed(texts);
    texts.forEach((t, i) => expect(Array.from(e.embed([t]))).toEqual(Array.from(all.subarray(i * DIMS, (i + 1) * DIMS))));
  });
});

describe('embedder: L2-normalized, row-major n x dims', () => {
  it.each([64, 256, 384, 4096])('dims %i', (dims) => {
    const e = new native.Embedder(dims);
    expect(e.dims).toBe(dims);
    const v = e.embed(['one two three', 'x', 'a much longer text with numbers 42 and identifiers fooBar']);
    expect(v.length).toBe(3 * dims);
    for (let i = 0; i < 3; i++) expect(dot(v, i, v, i, dims)).toBeCloseTo(1, 5);
  });

  it('embeds an empty or separator-only text to the zero vector', () => {
    const v = new native.Embedder(DIMS).embed(['', '   ', '(); ,']);
    expect(v.every((x) => x === 0)).toBe(true);
  });

  it('rejects bad dims and non-string texts with INVALID_ARGUMENT', () => {
    for (const d of [0, 7, 4097, 12.5, -1]) expect(() => new native.Embedder(d)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const e = new native.Embedder(DIMS);
    expect(() => e.embed(['ok', 3 as never])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => e.embed('not an array' as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('embedder: near-duplicates are closer than unrelated text', () => {
  const e = new native.Embedder(DIMS);
  const sim = (a: string, b: string) => {
    const v = e.embed([a, b]);
    return dot(v, 0, v, 1, DIMS);
  };

  it('a lightly edited sentence stays close; an unrelated one does not', () => {
    const src = 'The upstream API enforces a rate limit of 40 req/s per token, so batch the calls in fetch_user_profiles.';
    const near = 'the upstream api enforces a rate limit of 40 req/s per token so batch calls in fetch_user_profiles';
    const unrelated = 'Refactored the markdown renderer to escape backticks inside table cells.';
    expect(sim(src, near)).toBeGreaterThan(0.8);
    expect(sim(src, unrelated)).toBeLessThan(0.2);
  });

  it('numbers and units are features: the right value wins', () => {
    const q = 'rate limit 40 req/s';
    expect(sim(q, 'the rate limit is 40 req/s')).toBeGreaterThan(sim(q, 'the rate limit is 400 req/min'));
  });

  it('identifiers are kept whole and split into parts', () => {
    const doc = 'call parse_user_config() before loadPlugins()';
    expect(sim('parse_user_config', doc)).toBeGreaterThan(sim('parse_user_config', 'call the function before the plugins'));
    expect(sim('user config', doc)).toBeGreaterThan(sim('user config', 'an unrelated sentence about rendering'));
    expect(sim('load plugins', doc)).toBeGreaterThan(sim('load plugins', 'an unrelated sentence about rendering'));
  });

  it('is case-insensitive for ASCII and keeps UTF-8 words', () => {
    expect(sim('Hello World', 'hello world')).toBeCloseTo(1, 5);
    expect(sim('Straße München', 'Straße München ist schön')).toBeGreaterThan(0.5);
  });
});
