// The quote rule (src/quote.ts) reads the words of a stretch around each anchor of a quote
// character by character; they must be exactly the words its WORD pattern finds there — runs
// of letters, digits and `_`, astral letters whole, a pair cut by the stretch's end not a
// letter — or a quote would be found where its words are not, or missed where they are.
import { describe, expect, it } from 'vitest';
import { wordsBack, wordsIn } from '../../src/quote.js';
import { prng } from '../../src/prng.js';

const WORD = /[\p{L}\p{N}_]+/gu;
const viaPattern = (s: string, from: number, to: number) => [...s.slice(from, to).matchAll(WORD)].map((m) => ({ w: m[0], at: from + m.index! }));

/** 20,000 random strings of word and non-word units (lone surrogates included), each with a stretch [from, to) of it. */
function* stretches(seed: number): Generator<{ s: string; from: number; to: number }> {
  const units = ['a', 'Z', '_', '7', ' ', '-', '.', '\n', 'é', 'ß', '\u00b2', '\u4e2d', '\u2003', '\u{1d400}', '\u{1f600}', '\ud835', '\udc00'];
  const r = prng(seed);
  for (let t = 0; t < 20_000; t++) {
    let s = '';
    for (let n = Math.floor(r() * 16); n > 0; n--) s += units[Math.floor(r() * units.length)];
    const from = Math.floor(r() * (s.length + 1));
    yield { s, from, to: from + Math.floor(r() * (s.length - from + 1)) };
  }
}

describe('the words of a stretch are the WORD pattern’s matches over it', () => {
  it('on hand-picked edges: punctuation, `_`, accents, digits, astral letters and emoji, a pair cut by either end', () => {
    const s = 'start_line=6, naïve ß² 中文 \u{1d400}x \u{1f600}y end';
    for (const [from, to] of [
      [0, s.length],
      [3, 17],
      [s.indexOf('\u{1d400}') + 1, s.length],
      [0, s.indexOf('\u{1d400}') + 1],
      [s.indexOf('\u{1f600}'), s.length - 1],
    ] as const)
      expect(wordsIn(s, from, to)).toEqual(viaPattern(s, from, to));
  });

  it('on 20,000 random strings over an alphabet of word and non-word units, lone surrogates included', () => {
    for (const { s, from, to } of stretches(42)) expect(wordsIn(s, from, to)).toEqual(viaPattern(s, from, to));
  });
});

describe('reading back from an anchor finds where its last words before it start', () => {
  it('on 20,000 random strings: the words from there to the anchor are the last `count` of the stretch before it', () => {
    const r = prng(3);
    for (const { s, from, to: at } of stretches(7)) {
      const count = Math.floor(r() * 5);
      const all = viaPattern(s, from, at);
      expect(wordsIn(s, wordsBack(s, at, from, count), at)).toEqual(all.slice(Math.max(0, all.length - count)));
    }
  });
});
