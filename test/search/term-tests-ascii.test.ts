// A term's literal test reads the characters around it by code range for ASCII (no pattern):
// each range's ends must be letters or digits exactly as `\p{L}`/`\p{N}` say — the ends of
// `A-Z`, `a-z`, `0-9` and their neighbours outside (`@`, `[`, `` ` ``, `{`, `/`, `:`).
import { describe, expect, it } from 'vitest';
import { literalTermTest, termPattern } from '../../src/match.js';

const EDGES = ['A', 'Z', '@', '[', 'a', 'z', '`', '{', '0', '9', '/', ':', '_'];

describe('the literal test reads ASCII letters and digits to the ends of their ranges', () => {
  for (const bounded of [false, true]) {
    it(`${bounded ? 'values' : 'words'}: a character at a range's end before or after the term`, () => {
      for (const term of ['40', 'parse', 'x1']) {
        const literal = literalTermTest(term, bounded)!;
        const re = new RegExp(termPattern(term, bounded), 'u');
        for (const c of EDGES) {
          for (const text of [`${c}${term}`, `${term}${c}`, ` ${term} ${c}`]) expect(literal.test(text), `${term} in ${JSON.stringify(text)}`).toBe(re.test(text));
        }
      }
      // Upper-case letters are letters: a term run on after one is not bounded.
      expect(literalTermTest('parse', bounded)!.test('Aparse')).toBe(false);
      expect(literalTermTest('parse', bounded)!.test('Zparse')).toBe(false);
    });
  }
});
