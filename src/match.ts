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
  /** Lines the query spans: a match must hold within a window of about that many lines. */
  lines: number;
  /** The term whose occurrences anchor the windows: a value if there is one, else the longest term. */
  key: string | null;
  /** Per value with a word next to it in the query: the value must stand next to that word in the candidate too. */
  contexts: RegExp[];
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
  const key = [...values].sort((a, b) => b.length - a.length)[0] ?? [...terms].sort((a, b) => b.length - a.length)[0] ?? null;
  // "collected 50 items": 50 must be collected's or items' neighbour, not just anywhere.
  const contexts: RegExp[] = [];
  const words = query.toLowerCase().split(/\s+/).map((w) => w.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}%/]+$/gu, ''));
  words.forEach((w, i) => {
    if (!values.has(w)) return;
    const around = [words[i - 1], words[i + 1]].filter((n): n is string => !!n && /\p{L}/u.test(n) && !values.has(n));
    if (around.length === 0) return;
    const v = `(?<![\\p{L}\\p{N}.])${escape(w)}(?![\\p{N}]|\\.\\p{N})`;
    const alts: string[] = [];
    if (words[i - 1] && around.includes(words[i - 1]!)) alts.push(`${escape(words[i - 1]!)}[^\\p{L}\\p{N}]{1,3}${v}`);
    if (words[i + 1] && around.includes(words[i + 1]!)) alts.push(`${v}[^\\p{L}\\p{N}]{0,3}${escape(words[i + 1]!)}`);
    contexts.push(new RegExp(alts.join('|'), 'u'));
  });
  return { terms, values: [...values], tests, lines: query.split('\n').length, key, contexts };
}

/** Coverage of the query's terms and values by `text` (already lower-cased). */
export function coverage(profile: QueryProfile, text: string): { terms: number; values: number } {
  if (profile.terms.length === 0) return { terms: 0, values: 1 };
  const lower = text;
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

/**
 * True when `b` is `a` with one letter or digit changed, inserted or removed — but not a
 * difference of punctuation (`test-summary` / `test_summary`) or of a plural `s`, which
 * restate the same thing.
 */
function oneEditVariant(a: string, b: string): boolean {
  if (a === b) return false;
  const la = a.length;
  const lb = b.length;
  if (Math.abs(la - lb) > 1) return false;
  let i = 0;
  while (i < la && i < lb && a[i] === b[i]) i++;
  const alnum = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}]/u.test(c);
  if (la === lb) return a.slice(i + 1) === b.slice(i + 1) && alnum(a[i]) && alnum(b[i]);
  const [long, short] = la > lb ? [a, b] : [b, a];
  if (long.slice(i + 1) !== short.slice(i)) return false;
  const extra = long[i];
  return alnum(extra) && !(extra === 's' && i === long.length - 1);
}

/**
 * A candidate contradicts the query when it lacks a distinctive query term but holds a
 * one-edit variant of it (`parseConfigFile` asked, `parseConfigFjle` never stated): the
 * transcript says something close but different, which is a miss, not a match.
 */
export function contradicts(profile: QueryProfile, text: string): boolean {
  // Only distinctive terms: identifiers (letters with `_`, digits or dots) of 5+ chars, or
  // words of 8+; short words have real one-edit neighbours (line/like) and numbers are
  // checked by the value rules.
  const distinctive = (t: string) => /\p{L}/u.test(t) && (t.length >= 8 || (t.length >= 5 && /[_\d./-]/.test(t)));
  const lower = text.toLowerCase();
  const missing = profile.terms.filter((t) => distinctive(t) && !profile.values.includes(t) && !profile.tests.get(t)!.test(lower));
  if (missing.length === 0) return false;
  const tokens = new Set(matchTerms(text));
  for (const m of missing) for (const tok of tokens) if (oneEditVariant(m, tok)) return true;
  return false;
}

function passes(profile: QueryProfile, lower: string, policy: MatchPolicy): boolean {
  const c = coverage(profile, lower);
  return c.terms >= policy.minCoverage && c.values >= policy.minValueCoverage && profile.contexts.every((re) => re.test(lower));
}

/**
 * A candidate matches when one window of it — the lines around an occurrence of the
 * query's key term, as many as the query has — holds every value and enough of the
 * terms, and nothing in the candidate contradicts a distinctive term. Locality is what
 * tells "collected 50 items" (never printed) from a long log that says "collected" on one
 * line, "50" on another and "items" on a third.
 */
export function matches(profile: QueryProfile, text: string, policy: MatchPolicy = DEFAULT_MATCH_POLICY): boolean {
  const lower = text.toLowerCase();
  if (!passes(profile, lower, policy)) return false;
  const lines = lower.split('\n');
  if (profile.key === null || lines.length <= profile.lines) return !contradicts(profile, text);
  const keyTest = profile.tests.get(profile.key)!;
  const reach = profile.lines - 1;
  for (let i = 0; i < lines.length; i++) {
    if (!keyTest.test(lines[i]!)) continue;
    const window = lines.slice(Math.max(0, i - reach), Math.min(lines.length, i + reach + 1)).join('\n');
    // The contradiction check reads only the matching window: a variant stated pages away
    // says nothing about this line, and tokenizing whole tool outputs is the cost.
    if (passes(profile, window, policy) && !contradicts(profile, window)) return true;
  }
  return false;
}

/**
 * For a candidate that contains a quoted part of the query verbatim (a command in
 * backticks, a quoted message): the rest of the query need not be covered, but it must not
 * contradict the candidate — every value stated next to its word, no one-edit variant of a
 * distinctive term.
 */
export function consistent(profile: QueryProfile, text: string): boolean {
  const lower = text.toLowerCase();
  for (const v of profile.values) if (!profile.tests.get(v)!.test(lower)) return false;
  if (!profile.contexts.every((re) => re.test(lower))) return false;
  return !contradicts(profile, text);
}

/** Backticked or double-quoted parts of a query, long enough to be specific (>= 6 chars). */
export function quotedParts(query: string): string[] {
  const out: string[] = [];
  for (const m of query.matchAll(/`([^`]{6,})`|"([^"\n]{6,})"/g)) out.push((m[1] ?? m[2])!);
  return out;
}
