// The signature scan's kernels (native/vector/binary_scan.cpp) against a plain oracle: each
// CPU path the addon may pick (portable, popcnt, AVX-512) writes the same distances and
// collects the same rows, for the Hamming distance and for the asymmetric estimate.
import { describe, expect, it } from 'vitest';
import { addon } from '../../src/native.js';

type Scan = { dist: Uint16Array; cand: Uint32Array } | null;
const testing = (addon() as unknown as {
  _testing: { vectorScan(blocks: BigUint64Array, words: number, q: BigUint64Array, impl: string, asym: boolean, bias: number, tau: number): Scan };
})._testing;

const PLANES = 4;
const IMPLS = ['portable', 'popcnt', 'avx512'];

function rng(seed: number): () => bigint {
  let s = BigInt(seed);
  return () => {
    s = (s + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
    let z = s;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
    return z ^ (z >> 31n);
  };
}

const bit = (w: bigint, b: number) => Number((w >> BigInt(b)) & 1n);
/** Word `w` of row `r` in blocks of 8 rows, word-major. */
const word = (blocks: BigUint64Array, words: number, r: number, w: number) => blocks[Math.floor(r / 8) * words * 8 + w * 8 + (r % 8)]!;

function hammingOracle(blocks: BigUint64Array, words: number, q: BigUint64Array, r: number): number {
  let d = 0;
  for (let w = 0; w < words; w++) for (let b = 0; b < 64; b++) d += bit(word(blocks, words, r, w) ^ q[w]!, b);
  return d;
}

/** bias − Σ over the row's set bits of the query coordinate there (planes: its 4-bit two's complement). */
function asymOracle(blocks: BigUint64Array, words: number, planes: BigUint64Array, bias: number, r: number): number {
  let s = 0;
  for (let w = 0; w < words; w++) {
    for (let b = 0; b < 64; b++) {
      if (!bit(word(blocks, words, r, w), b)) continue;
      let v = 0;
      for (let k = 0; k < PLANES; k++) v |= bit(planes[k * words + w]!, b) << k;
      s += v >= 8 ? v - 16 : v;
    }
  }
  return bias - s;
}

describe('scan kernels: every CPU path gives the oracle\'s distances and rows', () => {
  for (const words of [1, 4, 8]) {
    it(`${words} word(s) a signature, 13 blocks`, () => {
      const next = rng(words);
      const blocks = BigUint64Array.from({ length: 13 * words * 8 }, () => next());
      const q = BigUint64Array.from({ length: words }, () => next());
      const planes = BigUint64Array.from({ length: PLANES * words }, () => next());
      const bias = 7 * 64 * words;
      const ham = Array.from({ length: 13 * 8 }, (_, r) => hammingOracle(blocks, words, q, r));
      const asym = Array.from({ length: 13 * 8 }, (_, r) => asymOracle(blocks, words, planes, bias, r));
      const hamTau = [...ham].sort((a, b) => a - b)[20]!;
      const asymTau = [...asym].sort((a, b) => a - b)[20]!;
      let ran = 0;
      for (const impl of IMPLS) {
        const h = testing.vectorScan(blocks, words, q, impl, false, 0, hamTau);
        const a = testing.vectorScan(blocks, words, planes, impl, true, bias, asymTau);
        if (impl === 'portable') expect(h).not.toBeNull();
        if (!h || !a) continue;
        ran++;
        expect(Array.from(h.dist), impl).toEqual(ham);
        expect(Array.from(h.cand), impl).toEqual(ham.flatMap((d, r) => (d <= hamTau ? [r] : [])));
        expect(Array.from(a.dist), impl).toEqual(asym);
        expect(Array.from(a.cand), impl).toEqual(asym.flatMap((d, r) => (d <= asymTau ? [r] : [])));
      }
      expect(ran).toBeGreaterThanOrEqual(1);
    });
  }
});
