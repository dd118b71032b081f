// A term's test runs as a literal search with its boundaries checked by hand (compiling a
// Unicode-class pattern per new term costs a query milliseconds): it must answer exactly as the
// term's pattern does, on every text, for words (a leading boundary) and values (both).
import { describe, expect, it } from 'vitest';
import { contextPatternOf, literalContextTest, literalTermTest, profileQuery, termPattern } from '../../src/match.js';
import { prng } from '../../src/prng.js';

// Characters around a term that decide its boundaries: ASCII letters and digits, `_`, `.`,
// punctuation, a non-ASCII letter and digit, astral letters and digits (surrogate pairs), a
// lone surrogate, a space, a line break.
const AROUND = ['a', 'z', 'Q', '0', '9', '_', '.', '-', '/', ' ', '\n', 'é', 'ß', '٣', '²', '𝒜', '𝟘', '\ud800', '\udc00', "'", '%', '+'];
const TERMS = ['40', '0.33s', 'utf-8', 'float16', 'parse', 'self.mask', 'a', '1.2', 'x_y', "'or 0'", 'v2.26.2', 'café', '+76', '300%', 'é', '.5', '_init'];

describe('a term tested as a literal answers as its pattern does', () => {
  const r = prng(21);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const texts = (term: string): string[] => {
    const out = [term, `${term}${term}`, ''];
    for (let i = 0; i < 400; i++) {
      let s = '';
      const parts = 1 + Math.floor(r() * 3);
      for (let p = 0; p < parts; p++) {
        for (let n = Math.floor(r() * 3); n > 0; n--) s += pick(AROUND);
        s += r() < 0.8 ? term : term.slice(0, Math.max(1, term.length - 1));
        for (let n = Math.floor(r() * 3); n > 0; n--) s += pick(AROUND);
      }
      out.push(s);
    }
    return out;
  };
  for (const bounded of [false, true]) {
    it(`${bounded ? 'values (bounded on both sides)' : 'words (a leading boundary)'}: ${TERMS.length} terms, 403 texts each`, () => {
      let held = 0;
      let checked = 0;
      for (const term of TERMS) {
        const literal = literalTermTest(term, bounded);
        expect(literal, term).not.toBeNull();
        const re = new RegExp(termPattern(term, bounded), 'u');
        for (const text of texts(term)) {
          const want = re.test(text);
          expect(literal!.test(text), `${JSON.stringify(term)} in ${JSON.stringify(text)}`).toBe(want);
          if (want) held++;
          checked++;
        }
      }
      // Both answers were exercised, not only one.
      expect(held).toBeGreaterThan(checked / 10);
      expect(checked - held).toBeGreaterThan(checked / 10);
    });
  }
  // A value next to its words: the word before at most 4 non-word characters away or across a
  // linking word ("limit of 40", "timeout set to 30"), the word after at most 4 away.
  const SEPARATORS = [
    ' ',
    '  ',
    '=',
    ' -> ',
    '....',
    ' of  ',
    ' = ',
    ': ',
    '\t',
    '-',
    '_',
    '.',
    ' of ',
    ' set to ',
    ' is ',
    'of',
    ' x ',
    '(',
    '  -  ',
    '𝟘',
    '😀',
    '\ud800',
    ' is  ',
    '   is ',
    '',
  ];
  const CONTEXTS: [string | null, string, string | null][] = [
    ['limit', '40', 'req'],
    ['limit', '40', null],
    [null, '40', 'req'],
    ['collected', '50', 'items'],
    ['version', '1.2', null],
    ['rate.limit', '3.5', 'ms'],
    ['x', '7', 'y'],
  ];
  it(`contexts: ${CONTEXTS.length} value contexts, 600 texts each`, () => {
    let held = 0;
    let checked = 0;
    for (const [before, value, after] of CONTEXTS) {
      const literal = literalContextTest(before, value, after);
      const re = new RegExp(contextPatternOf(before, value, after), 'u');
      expect(literal.source).toBe(re.source);
      expect(literal).not.toBeInstanceOf(RegExp);
      for (let i = 0; i < 600; i++) {
        let s = '';
        for (let n = Math.floor(r() * 2); n > 0; n--) s += pick(AROUND);
        if (r() < 0.85) s += pick([before ?? 'w', `${before ?? 'w'}s`, `_${before ?? 'w'}`, 'other', `a${before ?? 'w'}`]);
        s += pick(SEPARATORS);
        s += r() < 0.85 ? value : `${value}${pick(AROUND)}`;
        s += pick(SEPARATORS);
        if (r() < 0.85) s += pick([after ?? 'w', `${after ?? 'w'}x`, 'other']);
        for (let n = Math.floor(r() * 2); n > 0; n--) s += pick(AROUND);
        const want = re.test(s);
        expect(literal.test(s), `${JSON.stringify([before, value, after])} in ${JSON.stringify(s)}`).toBe(want);
        if (want) held++;
        checked++;
      }
    }
    // Both answers were exercised (a few hundred texts hold their context).
    expect(held).toBeGreaterThan(checked / 25);
    expect(checked - held).toBeGreaterThan(checked / 10);
  });
  it('a term with surrogates or past the pattern length keeps its compiled pattern', () => {
    expect(literalTermTest('𝒜bc', false)).toBeNull();
    expect(literalTermTest('q'.repeat(5000), true)).toBeNull();
  });
  it("a profile's tests hold as the patterns do", () => {
    const p = profileQuery('did parse print 40 for utf-8?');
    expect(p.tests.get('parse')!.test('reparse then parsed')).toBe(true);
    expect(p.tests.get('parse')!.test('reparse')).toBe(false);
    expect(p.tests.get('40')!.test('1.40 and 140 and 40.5')).toBe(false);
    expect(p.tests.get('40')!.test('got 40.')).toBe(true);
    expect(p.tests.get('utf-8')!.test('utf-8x')).toBe(false);
    expect(p.tests.get('utf-8')!.test('(utf-8)')).toBe(true);
  });
});
