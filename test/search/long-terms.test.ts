// A term of any length compiles: V8 refuses a pattern whose literal runs past about 32,000
// characters, so a longer word or value (a base64 blob, a minified line) is matched by its
// first MAX_TERM_PATTERN_CHARS characters instead of throwing a SyntaxError.
import { describe, expect, it } from 'vitest';
import { coverage, matches, MAX_TERM_PATTERN_CHARS, profileQuery } from '../../src/match.js';
import { analyzeQuery } from '../../src/query.js';
import { answersText, supportOf } from '../../src/support.js';

const span = (text: string) => ({ text, role: 2, meta: null, timestamp: 0, turnStart: 1, turnEnd: 1 });

describe(`a term longer than ${MAX_TERM_PATTERN_CHARS} characters is matched by its first ${MAX_TERM_PATTERN_CHARS}, never a SyntaxError`, () => {
  it('a 50,000-letter word: held where it is written, missing where it is not', () => {
    const blob = 'q'.repeat(50_000);
    const p = profileQuery(`token ${blob} rejected`);
    expect(coverage(p, `the token ${blob} was rejected`).terms).toBe(1);
    expect(coverage(p, 'the token was rejected').terms).toBeCloseTo(2 / 3);
  });
  it('a 40,000-digit value keeps its context words on both sides', () => {
    const n = '7'.repeat(40_000);
    const p = profileQuery(`limit ${n} req`);
    expect(matches(p, `the limit ${n} req`)).toBe(true);
    expect(matches(p, `the limit ${n} bytes`)).toBe(false);
    expect(matches(p, 'the limit 7 req')).toBe(false);
  });
  it('a 40,000-letter word before and after a value', () => {
    const w = 'b'.repeat(40_000);
    const p = profileQuery(`${w} 40 ${w}`);
    expect(matches(p, `${w} 40 ${w}`)).toBe(true);
    expect(matches(p, `${w} 41 ${w}`)).toBe(false);
  });
  it('through the query analysis and support (a 60,000-character word of astral letters too)', () => {
    for (const word of ['a'.repeat(60_000), '𝒜'.repeat(30_000)]) {
      const a = analyzeQuery(`did the build print ${word}?`);
      // Support reads a text's first 16,384 characters (docs/api.md): the word is longer.
      expect(supportOf(a, span(`the build printed ${word}`)).terms.matched).toEqual(['build', 'print']);
      expect(() => answersText(a, `the build printed ${word}`)).not.toThrow();
      expect(answersText(a, 'nothing of the kind')).toBe(false);
    }
  });
});
