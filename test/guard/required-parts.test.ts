// requiredParts reads a query's quoted parts only when it holds a quote character: the same
// parts quotedParts finds in any query (a query without one has none).
import { describe, expect, it } from 'vitest';
import { requiredParts } from '../../src/guard/probes.js';
import { DEFAULT_MATCH_POLICY, quotedParts } from '../../src/match.js';
import { isQuestion } from '../../src/query.js';
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
