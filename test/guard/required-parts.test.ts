// requiredParts reads a query's quoted parts only when it holds a quote character: the same
// parts quotedParts finds in any query (a query without one has none).
import { describe, expect, it } from 'vitest';
import { holdsRequired, requiredDigits, requiredParts } from '../../src/guard/probes.js';
import { DEFAULT_MATCH_POLICY, profileQuery, quotedParts } from '../../src/match.js';
import { analyzeQuery, isQuestion } from '../../src/query.js';
import { answersText } from '../../src/support.js';
import { distinctiveValue } from '../../src/anchors.js';
import { prng } from '../../src/prng.js';

const PIECES = ['ran', ' ', ' ', 'npm run build', '`', '`', '"', '"', "'", "'", '‘', '’', '“', '”', '40', '7', 'ms', 'errors', 'did', '?', '\n', 'x', 'config.yaml', '3.5', 'v2', '_id9', 'µs'];

describe('requiredParts: the quoted parts quotedParts finds, read only where a quote is', () => {
  it('on random queries of words, numbers and every kind of quote', () => {
    const rand = prng(0x9a77);
    let withQuoted = 0;
    for (let i = 0; i < 5000; i++) {
      let q = '';
      for (let j = 0, n = 1 + Math.floor(rand() * 14); j < n; j++) q += PIECES[Math.floor(rand() * PIECES.length)]!;
      const { quoted } = requiredParts(q, DEFAULT_MATCH_POLICY);
      expect(quoted, JSON.stringify(q)).toEqual(isQuestion(q) ? [] : quotedParts(q));
      if (quoted.length > 0) withQuoted++;
    }
    expect(withQuoted).toBeGreaterThan(100);
  });
});

describe('distinctiveValue: a multi-digit number is tested first, the answer unchanged', () => {
  it('on random facts', () => {
    const rand = prng(0xd157);
    const pieces = ['limit', ' ', '40', '7', '.', ',', '5', 'ms', 'x', 'v', '_', 'é', 'items', 'req/s', '%', 'GiB', 'a'];
    const full = /\d{2,}|\d[.,]\d|[\p{L}_]\d|\d(?:\s?(?:ms|µs|us|ns|s|sec|seconds?|mins?|minutes?|h|hours?|days?|%|[kKmMgGtT]i?[bB]|bytes?|px|tokens?|chars?|lines?|tests?|items?|errors?|passed|failed|skipped|warnings?|req\/s|rps|qps|workers|threads|retries|attempts|connections))(?![\p{L}])/u;
    for (let i = 0; i < 5000; i++) {
      let f = '';
      for (let j = 0, n = 1 + Math.floor(rand() * 8); j < n; j++) f += pieces[Math.floor(rand() * pieces.length)]!;
      expect(distinctiveValue(f), JSON.stringify(f)).toBe(full.test(f));
    }
  });
});

// What requiredParts says an answer must hold is a pre-check that rules a probe out before
// any analysis: it must never rule out a text search's rule for one candidate takes as an
// answer (answersText), or the monitor would miss the hit a summary makes.
describe('requiredParts: every part it requires is held by every answer', () => {
  const VALUE_PIECES = [
    'ran', ' ', ' ', ' ', 'limit', 'items', 'collected', '40', '7', '+76', '-1', '300%', '3.5ms', 'v2.26.2', 'float16', 'utf-8', 'res1',
    '/opt/miniconda4/envs/bin/python4', 'django.test.__main__', 'self.mask', 'fooBar', 'snake_case_name', 'config.yaml', 'ValueError',
    ':', '=', ',', '.', '(', ')', '/', '-', '_', '\n', 'x', 'Ab', 'é', 'Σ', 'ΑΣ', 'µs', '`npm run build`', '"proxy v2"', '?', 'did ',
  ];
  const statement = (rand: () => number) => {
    let q = '';
    for (let j = 0, n = 1 + Math.floor(rand() * 10); j < n; j++) q += VALUE_PIECES[Math.floor(rand() * VALUE_PIECES.length)]!;
    return q;
  };

  it('each required part lies within a value search requires and, for an ASCII statement, within the statement', () => {
    const rand = prng(0x7e91);
    let words = 0;
    for (let i = 0; i < 3000; i++) {
      const q = statement(rand);
      const { numbers } = requiredParts(q, DEFAULT_MATCH_POLICY);
      const values = profileQuery(q).values;
      for (const r of numbers) {
        expect(
          values.some((v) => v.includes(r)),
          `${JSON.stringify(q)}: ${JSON.stringify(r)} in none of ${JSON.stringify(values)}`,
        ).toBe(true);
        if (/^[\x00-\x7f]*$/.test(q)) expect(q.toLowerCase().includes(r), JSON.stringify(q)).toBe(true);
        else expect(r, JSON.stringify(q)).toMatch(/^\d+$/);
        if (!/^\d+$/.test(r)) words++;
      }
    }
    // Words and identifiers, not only digit runs, were required.
    expect(words).toBeGreaterThan(300);
  });

  it('a text that answers a statement holds what it requires (the statement, its parts, other texts)', () => {
    const rand = prng(0x51a7);
    let answered = 0;
    for (let i = 0; i < 800; i++) {
      const q = statement(rand);
      const parts = requiredParts(q, DEFAULT_MATCH_POLICY);
      const a = analyzeQuery(q);
      const texts = [q, `before ${q} after`, q.toLowerCase(), q.toUpperCase(), `${statement(rand)} ${q.replace(/ /g, '  ')}`, statement(rand), `${statement(rand)}\n${statement(rand)}`];
      for (const text of texts) {
        if (!answersText(a, text)) continue;
        answered++;
        expect(holdsRequired(parts, text, text.toLowerCase()), `${JSON.stringify(q)} answered by ${JSON.stringify(text)}`).toBe(true);
      }
    }
    expect(answered).toBeGreaterThan(800);
  });

  it('an ASCII statement requires its words holding a digit and its identifiers, not just digit runs', () => {
    const q = '/opt/miniconda4/envs/testbed/bin/python4: No module named django.test.__main__';
    expect(requiredParts(q, DEFAULT_MATCH_POLICY).numbers).toEqual(['opt/miniconda4/envs/testbed/bin/python4', 'django.test.__main__']);
    // A summary holding the digits but not the path is ruled out before any analysis, as search rules it out.
    const summary = 'summary of 4 turns: python 4 was missing';
    expect(answersText(analyzeQuery(q), summary)).toBe(false);
    expect(holdsRequired(requiredParts(q, DEFAULT_MATCH_POLICY), summary, summary.toLowerCase())).toBe(false);
    // Every identifier search requires, each once: 5+ characters, a dotted, snake_case (one
    // separator or more) or camelCase name; a word of letters alone is no value.
    expect(requiredParts('set self.mask and ab_cd, foo__bar and fooBar; 40 of 40, then words', DEFAULT_MATCH_POLICY).numbers).toEqual([
      'self.mask',
      'ab_cd',
      'foo__bar',
      'foobar',
      '40',
    ]);
    expect(profileQuery('set self.mask and ab_cd, foo__bar and fooBar; 40 of 40, then words').values.sort()).toEqual(['40', 'ab_cd', 'foo__bar', 'foobar', 'self.mask']);
    // Any other statement: its digit runs (a final sigma lower-cases by its neighbours).
    expect(requiredParts('ΑΣ x12 héllo 7', DEFAULT_MATCH_POLICY).numbers).toEqual(['12', '7']);
  });
});

// requiredDigits is asked before requiredParts is built: a text lacking one of its digit
// runs must lack a part requiredParts requires, or the monitor would miss a hit.
describe('requiredDigits: a text holding what requiredParts requires holds every digit run it names', () => {
  const PIECES = ['ran', ' ', ' ', ' ', 'limit', '40', '7', '+76', '-1', '300%', '3.5ms', 'v2.26.2', 'float16', 'res1', '/opt/conda4/bin/python4', 'django.test', 'fooBar', 'x_9y', ':', '=', '.', '/', '-', '_', '\n', 'é', 'Σ', 'ΑΣ', '٣', '𝟘', 'µs', '`npm 12 build`', '"proxy v2"', '?', 'did '];
  it('on random queries, against texts made of exactly the required parts', () => {
    const rand = prng(0xd161);
    let judged = 0;
    for (let i = 0; i < 5000; i++) {
      let q = '';
      for (let j = 0, n = 1 + Math.floor(rand() * 10); j < n; j++) q += PIECES[Math.floor(rand() * PIECES.length)]!;
      const digits = requiredDigits(q, DEFAULT_MATCH_POLICY);
      if (digits === null) continue;
      const parts = requiredParts(q, DEFAULT_MATCH_POLICY);
      // The least a text can hold and still hold every required part: those parts alone.
      for (const text of [parts.numbers.join(' '), parts.numbers.join(''), [...parts.numbers].reverse().join('|') + parts.quoted.join(' ')]) {
        if (!holdsRequired(parts, text, text.toLowerCase())) continue;
        judged++;
        for (const d of digits) expect(text.toLowerCase().includes(d), `${JSON.stringify(q)}: ${d} not in ${JSON.stringify(text)}`).toBe(true);
      }
    }
    expect(judged).toBeGreaterThan(2000);
  });
  it('the digit runs of a plain statement; nothing known for a question, a quote character or a policy not requiring every value', () => {
    expect(requiredDigits('The blue pool keeps 120 workers busy for 3 days.', DEFAULT_MATCH_POLICY)).toEqual(['120', '3']);
    expect(requiredDigits('The blue pool keeps its workers busy.', DEFAULT_MATCH_POLICY)).toEqual([]);
    expect(requiredDigits('ΑΣ x12 héllo 7', DEFAULT_MATCH_POLICY)).toEqual(['12', '7']);
    expect(requiredDigits('Did the pool keep 120 workers busy?', DEFAULT_MATCH_POLICY)).toBeNull();
    expect(requiredDigits('ran `npm run build` with 4822 errors', DEFAULT_MATCH_POLICY)).toBeNull();
    expect(requiredDigits('the "proxy" sets 40 workers', DEFAULT_MATCH_POLICY)).toBeNull();
    expect(requiredDigits('The blue pool keeps 120 workers busy.', { ...DEFAULT_MATCH_POLICY, minValueCoverage: 0.99 })).toBeNull();
    expect(requiredDigits('The blue pool keeps 120 workers busy.', { ...DEFAULT_MATCH_POLICY, minValueCoverage: 1 })).toEqual(['120']);
  });
});
