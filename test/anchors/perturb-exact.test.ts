// perturb's digit arithmetic: a number of up to 15 digits is bumped in a double, a longer
// one as a BigInt. Both must give what exact arithmetic gives, digit for digit.
import { describe, expect, it } from 'vitest';
import { perturb } from '../../src/anchors.js';
import { prng } from '../../src/prng.js';

/** The rule in exact arithmetic: each digit run + (1 + variant % 7)·10^min(len−1, variant % 3), width kept. */
function exact(fact: string, variant: number): string {
  return fact.replace(/\d+/g, (m) => {
    const n = BigInt(m) + BigInt(1 + (variant % 7)) * 10n ** BigInt(Math.max(0, Math.min(m.length - 1, variant % 3)));
    const s = n.toString();
    return s.length < m.length ? s.padStart(m.length, '0') : s;
  });
}

describe('perturb: digit runs bumped exactly, whatever their length', () => {
  it('at the edges: 15 and 16 digits, all nines, leading zeros, single digits', () => {
    const numbers = [
      '0', '9', '09', '99', '007', '0099', '999999999999999', '9999999999999999', '123456789012345', '1234567890123456',
      '9007199254740991', '9007199254740993', '18014398509481985', '000000000000000000019', '99999999999999999999999',
      '4503599627370495', '4503599627370497', '100000000000000',
    ];
    for (const n of numbers)
      for (let v = 0; v < 21; v++) {
        const fact = `took ${n} ms, then ${n}`;
        expect(perturb(fact, v), `${n} variant ${v}`).toBe(exact(fact, v));
      }
  });
  it('on random facts of 1 to 24 digit runs', () => {
    const rand = prng(0x51ed);
    for (let i = 0; i < 3000; i++) {
      const runs = 1 + Math.floor(rand() * 3);
      const parts: string[] = [];
      for (let r = 0; r < runs; r++) {
        const len = 1 + Math.floor(rand() * 24);
        let digits = '';
        for (let d = 0; d < len; d++) digits += String(rand() < 0.3 ? 9 : Math.floor(rand() * 10));
        parts.push(`${['id ', 'v', 'x=', ' '][r % 4]}${digits}`);
      }
      const fact = parts.join(' and ');
      const v = Math.floor(rand() * 10);
      expect(perturb(fact, v), fact).toBe(exact(fact, v));
    }
  });
  it('only ASCII digits are digits (as /\\d/ has it), at the ends of the fact too', () => {
    for (const fact of ['7 ms', 'took 12', '٣ items and ３ more, 4 left', 'x٣4y', '0', '9', 'no digits here 4x4']) {
      for (let v = 0; v < 8; v++) expect(perturb(fact, v), `${fact} ${v}`).toBe(exact(fact, v));
    }
  });
});
