// bench/hybrid-scale.ts times queries up to the documented maximum size (MAX_QUERY_CHARS):
// each set is the natural questions run together, cut at a word, within the length it names.
import { describe, expect, it } from 'vitest';
import { LONG_SIZES, longQueries } from '../../bench/hybrid-scale.js';
import { MAX_QUERY_CHARS } from '../../src/search.js';

const questions = [
  'Which port did the server listen on?',
  'What did pytest report after the fix?',
  'Why was the migration rolled back',
  'How many retries did the client make?',
  'Which file held the settings?',
  'What version of numpy was installed?',
  'Who asked for the rollback?',
  'When did the build first pass?',
];

describe('long queries for the size bench', () => {
  it('the longest set is the documented maximum, the shortest a quarter of it', () => {
    expect(LONG_SIZES[LONG_SIZES.length - 1]).toBe(MAX_QUERY_CHARS);
    expect(LONG_SIZES[0]).toBe(MAX_QUERY_CHARS / 4);
  });

  it('every query is within its size, short of it by less than a word, ends a question, and no two are alike (as many questions as queries)', () => {
    for (const size of LONG_SIZES) {
      const qs = longQueries(questions, size, 8);
      expect(qs).toHaveLength(8);
      expect(new Set(qs).size).toBe(8);
      for (const q of qs) {
        expect(q.length).toBeLessThanOrEqual(size);
        expect(q.length).toBeGreaterThan(size - 16);
        expect(q.endsWith('?')).toBe(true);
        expect(q).not.toMatch(/\s\?$/);
      }
    }
  });

  it('a question set that is empty is refused', () => {
    expect(() => longQueries([], 100, 1)).toThrow(/no questions/);
  });
});
