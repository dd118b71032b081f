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

const isValue = (t: string): boolean => /\d/.test(t);

export interface MatchPolicy {
  /** Share of the query's distinctive terms a candidate must contain. */
  minCoverage: number;
  /** Share of the query's value terms (containing digits) a candidate must contain. */
  minValueCoverage: number;
}

/** Calibrated on the transcripts in shared/data (see scripts/quality.mjs). */
export const DEFAULT_MATCH_POLICY: MatchPolicy = { minCoverage: 0.5, minValueCoverage: 1 };

export interface QueryProfile {
  terms: string[];
  values: string[];
}

export function profileQuery(query: string): QueryProfile {
  const terms = [...new Set(matchTerms(query).filter((t) => !STOP.has(t)))];
  return { terms, values: terms.filter(isValue) };
}

/** Coverage of the query's terms and values by `text`. */
export function coverage(profile: QueryProfile, text: string): { terms: number; values: number } {
  if (profile.terms.length === 0) return { terms: 0, values: 1 };
  const have = new Set(matchTerms(text));
  let t = 0;
  let v = 0;
  for (const term of profile.terms) if (have.has(term)) t++;
  for (const value of profile.values) if (have.has(value)) v++;
  return {
    terms: t / profile.terms.length,
    values: profile.values.length === 0 ? 1 : v / profile.values.length,
  };
}

export function matches(profile: QueryProfile, text: string, policy: MatchPolicy = DEFAULT_MATCH_POLICY): boolean {
  const c = coverage(profile, text);
  return c.terms >= policy.minCoverage && c.values >= policy.minValueCoverage;
}
