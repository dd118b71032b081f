// Support (src/support.ts) reads every content term of a query, however many it has: the
// table of the query's word forms keeps the first terms as bits of one integer and the rest
// beside them, and a span holding only a late term holds it all the same.
import { describe, expect, it } from 'vitest';
import { analyzeQuery } from '../../src/query.js';
import { supportOf } from '../../src/support.js';

const WORDS = ['amber', 'basalt', 'cobalt', 'dolomite', 'emerald', 'feldspar', 'garnet', 'hematite', 'jasper', 'kyanite', 'lazurite', 'malachite', 'nephrite', 'obsidian', 'peridot', 'quartzite', 'rhodonite', 'sapphire', 'topaz', 'unakite', 'variscite', 'wavellite', 'xenotime', 'yttrium', 'zircon', 'azurite', 'beryl', 'calcite', 'diopside', 'epidote', 'fluorite', 'gypsum', 'halite', 'iolite'];
const span = (text: string) => ({ text, role: 'assistant', timestamp: 0, meta: null });

describe('a query of more than thirty terms', () => {
  const a = analyzeQuery(`${WORDS.join(' ')} minerals`);

  it('has its terms in order, past the thirtieth', () => {
    expect(a.terms.length).toBeGreaterThan(32);
    expect(a.terms.map((t) => t.term).slice(30, 34)).toEqual(WORDS.slice(30, 34));
  });

  it('finds a late term alone, in its plain and inflected forms', () => {
    for (const w of WORDS.slice(30)) {
      expect(supportOf(a, span(`the sample held ${w} only`)).terms.matched).toEqual([w]);
      expect(supportOf(a, span(`two ${w}s were found`)).terms.matched).toEqual([w]);
    }
  });

  it('finds early and late terms together, and misses the rest', () => {
    const s = supportOf(a, span(`amber, ${WORDS[29]} and ${WORDS[33]}`));
    expect(s.terms.matched).toEqual(['amber', WORDS[29], WORDS[33]]);
    expect(s.terms.missing).toHaveLength(a.terms.length - 3);
  });
});
