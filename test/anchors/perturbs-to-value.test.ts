// perturbsToValue: the guard skips building a fact's perturbation when none of them can be
// a distinctive value. It must say false only when that holds for every variant.
import { describe, expect, it } from 'vitest';
import { distinctiveValue, perturb, perturbsToValue } from '../../src/anchors.js';
import { prng } from '../../src/prng.js';

const PIECES = ['rate', 'limit', 'is', 'of', 'x', 'MAX_RETRIES', 'api', '_tmp', 'réseau', 'to', 'at', '40', '3', '0.5', '7', 'ms', 'req/s', '%', 'v2', 'a1b', '=', ':', '--', '`', '"', '"', ' ', ' ', '\t', '-', '.', 'ÄÖÜ', 'TTL', 'run'];

describe('perturbsToValue', () => {
  it('false only for facts none of whose perturbations is a distinctive value', () => {
    const rand = prng(0x7e57);
    let skipped = 0;
    for (let i = 0; i < 4000; i++) {
      const n = 1 + Math.floor(rand() * 8);
      let fact = '';
      for (let j = 0; j < n; j++) fact += PIECES[Math.floor(rand() * PIECES.length)]!;
      if (perturbsToValue(fact)) continue;
      skipped++;
      for (let v = 0; v < 25; v++) expect(distinctiveValue(perturb(fact, v)), `${JSON.stringify(fact)} variant ${v}`).toBe(false);
    }
    expect(skipped).toBeGreaterThan(100);
  });

  it('true for a fact with digits, and for one without digits or an identifier (its perturbation appends digits)', () => {
    for (const fact of ['limit is 40 req/s', 'run v2 now', 'x = 10 of 30']) {
      expect(perturbsToValue(fact), fact).toBe(true);
      expect(distinctiveValue(perturb(fact, 0)), fact).toBe(true);
    }
    // No identifier of four characters: `perturb` appends "07", a distinctive value.
    expect(perturbsToValue('abc def ghi!')).toBe(true);
    expect(distinctiveValue(perturb('abc def ghi!', 0))).toBe(true);
    expect(perturbsToValue('never exceed the budget')).toBe(false);
    expect(perturbsToValue('go to _tmp !')).toBe(false);
  });
});
