// The query sets beyond substrings (bench/data.ts): questions generated from the spans are
// question-shaped (5–20 words), deterministic, and not quotes of the span they came from.
import { describe, expect, it } from 'vitest';
import { generatedQuestions, naturalQuestions } from '../../bench/data.js';
import { rng } from '../../bench/lib.js';
import { loadData } from '../../bench/data.js';

const texts = loadData(3000, 'gen').spans.map((s) => s.text);

describe('generated questions are 5–20 words and are not substrings of any span', () => {
  const qs = generatedQuestions(texts, 200, rng(1234));

  it('makes as many as asked, each of 5–20 words', () => {
    expect(qs).toHaveLength(200);
    for (const q of qs) {
      const n = q.split(/\s+/).length;
      expect(n).toBeGreaterThanOrEqual(5);
      expect(n).toBeLessThanOrEqual(20);
    }
  });

  it('no question occurs verbatim in the spans (not even its content words in a row)', () => {
    const all = texts.join('\n').toLowerCase();
    for (const q of qs) expect(all.includes(q.toLowerCase())).toBe(false);
  });

  it('the same seed gives the same questions', () => {
    expect(generatedQuestions(texts, 200, rng(1234))).toEqual(qs);
  });
});

describe('natural questions are the shared file\'s questions of 5–20 words', () => {
  it('keeps only 5–20-word questions, with their category', () => {
    const nq = naturalQuestions();
    for (const x of nq) {
      const n = x.question.split(/\s+/).filter(Boolean).length;
      expect(n).toBeGreaterThanOrEqual(5);
      expect(n).toBeLessThanOrEqual(20);
      expect(typeof x.category).toBe('string');
    }
  });
});
