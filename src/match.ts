/**
 * Honest misses. A hybrid index always has a nearest neighbour; the question is whether it
 * really answers the query. A candidate "matches" when it covers the query's distinctive
 * terms, and every value the query names (a number, a version, an identifier with digits)
 * appears in it. A query for a value that was never stated therefore comes back as
 * "not in transcript" instead of the closest wrong span.
 *
 * This runs in JS over the few candidate texts a query already fetched, so it adds no
 * crossing of the native boundary.
 */

const STOP = new Set(
  'a an and are as at be but by did do does for from had has have how i in is it its me my of on or our so that the their them then there these they this to was we were what when where which who why will with you your'.split(
    ' ',
  ),
);

/** Lower-cased word and value terms; identifiers are also split on `_ . / -` and camelCase. */
export function matchTerms(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split(/[^\p{L}\p{N}_./:-]+/u)) {
    const w = raw.replace(/^[.:/_-]+|[.:/_-]+$/g, '');
    if (!w) continue;
    const lower = w.toLowerCase();
    out.push(lower);
    if (/[_./:-]/.test(w) || /[a-z][A-Z]/.test(w)) {
      for (const part of w.split(/[_./:-]+|(?<=[a-z])(?=[A-Z])/)) if (part) out.push(part.toLowerCase());
    }
  }
  return out;
}

/** A standalone number, optionally with a unit or version dots: `40`, `3.5ms`, `0.33s`, `v2.26.2`, `95%`. */
const VALUE = /^v?\d+(?:[.,:/]\d+)*(?:[a-zµ%/]+(?:\/[a-z]+)?)?$/i;

export interface MatchPolicy {
  /** Share of the query's distinctive terms a candidate must contain. */
  minCoverage: number;
  /** Share of the query's values (standalone numbers) a candidate must contain. */
  minValueCoverage: number;
}

/** Calibrated on the transcripts in shared/data (see bench/quality.ts). */
export const DEFAULT_MATCH_POLICY: MatchPolicy = { minCoverage: 0.5, minValueCoverage: 1 };

export interface QueryProfile {
  terms: string[];
  values: string[];
  /** One precompiled test per term, run against the lower-cased candidate text. */
  tests: Map<string, RegExp>;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

export function profileQuery(query: string): QueryProfile {
  const terms = [...new Set(matchTerms(query).filter((t) => !STOP.has(t) && t.length > 1))];
  const values = new Set<string>();
  for (const raw of query.split(/[\s,;()[\]{}<>"'`=]+/)) {
    const w = raw.replace(/[.:]+$/, '').toLowerCase();
    if (VALUE.test(w)) values.add(w);
  }
  for (const v of values) if (!terms.includes(v)) terms.push(v);
  const tests = new Map<string, RegExp>();
  for (const t of terms) {
    // Values need both boundaries (40 must not match 140 or 40.5); words only a leading one,
    // which gives plain prefix stemming (allow matches allows).
    tests.set(t, values.has(t) ? new RegExp(`(?<![\\p{L}\\p{N}.])${escape(t)}(?![\\p{N}]|\\.\\p{N})`, 'u') : new RegExp(`(?<![\\p{L}\\p{N}])${escape(t)}`, 'u'));
  }
  return { terms, values: [...values], tests };
}

/** Coverage of the query's terms and values by `text`. */
export function coverage(profile: QueryProfile, text: string): { terms: number; values: number } {
  if (profile.terms.length === 0) return { terms: 0, values: 1 };
  const lower = text.toLowerCase();
  let t = 0;
  let v = 0;
  for (const term of profile.terms) {
    if (profile.tests.get(term)!.test(lower)) {
      t++;
      if (profile.values.includes(term)) v++;
    }
  }
  return {
    terms: t / profile.terms.length,
    values: profile.values.length === 0 ? 1 : v / profile.values.length,
  };
}

export function matches(profile: QueryProfile, text: string, policy: MatchPolicy = DEFAULT_MATCH_POLICY): boolean {
  const c = coverage(profile, text);
  return c.terms >= policy.minCoverage && c.values >= policy.minValueCoverage;
}
