/**
 * Honest misses. A hybrid index always has a nearest neighbour; the question is whether it
 * really answers the query. The rules, each one there because a never-stated probe on the
 * real transcripts got through without it (eval/quality.ts measures them: `npm run quality`):
 *
 * 1. Values. Every number the query states is a value, wherever it stands (`'527i`,
 *    `~3.103s`, `verbosity=4)`, `Found 79 test(s)`), with a sign or marker stuck to it
 *    (`+76`, `-1`) and a percent sign (`300%`). So is every identifier with digits
 *    (`float16`, `utf-8`, `res1`) and every identifier without digits of 5+ chars: a path,
 *    a dotted or snake_case name, camelCase (`django/db/models/base.py`, `ValueError`).
 *    A match holds all of them, bounded (`40` is not `140`, `40.5` or `float40`).
 * 2. Values next to their words. A value with content words beside it in the query (at
 *    most 4 chars of punctuation away, not across a quote) has them beside it in the
 *    candidate: `verbosity=4` is not matched by `verbosity=2 ... 4`.
 * 3. Coverage. At least `minCoverage` of the query's terms (stop words aside).
 * 4. Locality. Rules 1–3 hold within one window: the lines around an occurrence of the key
 *    value, as many as the query has. A long log that says "collected" on one line, "50"
 *    on another and "items" on a third has not said "collected 50 items".
 * 5. No contradiction. A distinctive term missing from the window must not have a one-edit
 *    variant (`sepauator` / `separator`) anywhere in the candidate, nor an identifier with
 *    digits a variant with other digits (`utf-15` / `utf-8`).
 * 6. Quotes. A candidate that holds the query's quoted parts verbatim (a command in
 *    backticks) need not cover the rest, but must be `consistent` with it.
 *
 * This runs in JS over the few candidate texts a query already fetched, so it adds no
 * crossing of the native boundary.
 */

const STOP = new Set(
  'a about after all also am an and any are as at be been before being both but by can could did do does each either for from had has have he her here his how i if in into is it its just may me might more most my no nor not now of off on once only or other our out over she should so some such than that the their them then there these they this those through to too under until up very was we were what when where which while who whom why will with would you your'.split(
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

/**
 * The query's words with their offsets: letters, digits and `_`, joined by `. / : -` inside
 * a word (`astropy/io/fits/header.py`, `utf-8`, `1.479s`, `10:10`).
 */
/** A word: letters, digits and `_`, joined by `. / : -` inside it (paths, dotted names, versions). */
export const WORD = /[\p{L}\p{N}_]+(?:[./:-][\p{L}\p{N}_]+)*/gu;
/** A word that is a value: it starts with a digit (`40`, `3.5ms`, `0.33s`, `527i`, `0x1f`, `2.1`) or is a version (`v2.26.2`). */
const VALUE = /^(?:v\d|\d)/i;
const HAS_DIGIT = /\d/;

/**
 * A word that is a value though it holds no digit: 5+ characters, and a path, a dotted or
 * snake_case name, or camelCase (`django/db/models/base.py`, `ValueError`).
 */
export function isIdentifier(w: string): boolean {
  return w.length >= 5 && !HAS_DIGIT.test(w) && (/[\p{L}\p{N}][_./]+[\p{L}\p{N}]/u.test(w) || /\p{Ll}\p{Lu}/u.test(w));
}
/** A backticked or double-quoted part of a query, long enough to be specific (>= 6 chars). */
const QUOTED = /`([^`]{6,})`|"([^"\n]{6,})"/g;

export interface MatchPolicy {
  /** Share of the query's distinctive terms a candidate must contain. */
  minCoverage: number;
  /** Share of the query's values (numbers, identifiers with digits) a candidate must contain. */
  minValueCoverage: number;
}

/**
 * Calibrated on the transcripts in shared/data with eval/quality.ts (`--dir` reused,
 * `--min-coverage X`, unit exchange, 1,000 headline probes; "natural" = recall@10 of the
 * questions without quotes and "In <where>," framing, the path this threshold governs):
 *
 * | minCoverage | misses miniswe | misses bookminder | natural miniswe (396) | natural bookminder (12) |
 * |-------------|----------------|-------------------|-----------------------|-------------------------|
 * | 0.3         | 0.998          | 0.994             | 0.909                 | 0.667                   |
 * | 0.4         | 0.998          | 0.997             | 0.909                 | 0.667                   |
 * | **0.5**     | 0.998          | 0.999             | **0.937**             | 0.750                   |
 * | 0.6         | 0.998          | 0.999             | 0.672                 | 0.833                   |
 * | 0.7         | 0.998          | 1.000             | 0.093                 | 0.500                   |
 *
 * Misses are decided by the value, context and locality rules, nearly flat in minCoverage;
 * natural recall peaks at 0.5 on the large set (below it, more wrong spans pass and crowd
 * the evidence out of the top 10; above it, the question's own framing words, absent from
 * the evidence, sink it). Values: all required (minValueCoverage 1).
 */
export const DEFAULT_MATCH_POLICY: MatchPolicy = { minCoverage: 0.5, minValueCoverage: 1 };

export interface QueryProfile {
  terms: string[];
  /**
   * What a match must contain, lower-cased: standalone values (`40`, `0.33s`, `+76`),
   * identifiers with digits (`float16`, `utf-8`, `res1`) and `identifiers`.
   */
  values: string[];
  /** The standalone values only: a candidate pinned by a verbatim quote must still contain these. */
  standalone: string[];
  /** Identifiers with digits: under a verbatim quote they need only not be contradicted. */
  digitIds: string[];
  /**
   * Identifiers without digits, 5+ chars: paths, dotted names, snake_case, camelCase
   * (`django/db/models/base.py`, `self.mask`, `ValueError`). Required like values: the
   * same command on another file is another fact. Under a verbatim quote, only not contradicted.
   */
  identifiers: string[];
  /** The query's quoted parts (as `quotedParts` returns them). */
  quoted: string[];
  /** Everything the query backticks or double-quotes, however short (`<U9`, `"a"`). */
  allQuoted: string[];
  /** One test per term and value, run against the lower-cased candidate text. */
  tests: Map<string, TermTest>;
  /** Lines the query spans: a match must hold within a window of about that many lines. */
  lines: number;
  /** The term whose occurrences anchor the windows: a value if there is one, else the longest term. */
  key: string | null;
  /** Per standalone value with content words next to it in the query: it must stand next to them in the candidate too. */
  contexts: ContextTest[];
  /**
   * The same contexts one side at a time: a question's wording around a value is the
   * asker's ("did runserver 0 print…"), so a question needs the value next to its words on
   * one side only; a statement (a quoted fact) on both.
   */
  contextSides: ContextTest[][];
  /** How many contexts there are, known without compiling them. */
  readonly contextCount: number;
  /**
   * Removes the contexts whose pattern source `drop` accepts (the first one only, unless
   * `all`), before or after they are compiled: a context is dropped by its text, so dropping
   * one compiles nothing.
   */
  dropContexts(drop: (source: string) => boolean, all: boolean): void;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const L = '\\p{L}\\p{N}_';

/**
 * The longest stretch of a term written into a pattern. V8 refuses to compile a pattern
 * whose literal runs past about 32,000 characters ("Regular expression too large"); a
 * longer term (a base64 blob, a minified line) is matched by its first 1,024 characters,
 * which no other word shares by chance.
 */
export const MAX_TERM_PATTERN_CHARS = 1024;

/**
 * The term's first (or, for `tail`, last) MAX_TERM_PATTERN_CHARS characters, never cut
 * inside a surrogate pair, and whether it was cut.
 */
function patternPart(t: string, tail = false): { part: string; cut: boolean } {
  if (t.length <= MAX_TERM_PATTERN_CHARS) return { part: t, cut: false };
  if (tail) {
    let start = t.length - MAX_TERM_PATTERN_CHARS;
    const c = t.charCodeAt(start);
    if (c >= 0xdc00 && c <= 0xdfff) start++;
    return { part: t.slice(start), cut: true };
  }
  let end = MAX_TERM_PATTERN_CHARS;
  const c = t.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return { part: t.slice(0, end), cut: true };
}

/** The word before a value, ending where the value's separator starts: bounded at its start unless cut to its tail. */
function wordBefore(w: string): string {
  const { part, cut } = patternPart(w, true);
  return cut ? escape(part) : `(?<![${L}])${escape(part)}`;
}

/** A word: a leading boundary only, so plain prefix stemming holds (allow matches allows). */
const wordTest = (t: string) => `(?<![\\p{L}\\p{N}])${escape(patternPart(t).part)}`;

/**
 * A value or identifier with digits, bounded so that `40` does not match `140`, `40.5` or
 * `float40`. A value cut to its first MAX_TERM_PATTERN_CHARS runs on over the characters a
 * word or value is made of, so the boundary and the context words after it still apply.
 */
const valueTest = (v: string) => {
  const { part, cut } = patternPart(v);
  return `(?<![${L}]|\\p{N}\\.)${escape(part)}${cut ? `[${L}.'’+-]*` : ''}(?![${L}]|\\.\\p{N})`;
};

/** What a term's test does: whether a (lower-cased) text holds the term. A RegExp is one. */
export interface TermTest {
  test(text: string): boolean;
}

const LETTER_OR_NUMBER = /^[\p{L}\p{N}]$/u;
const NUMBER = /^\p{N}$/u;
const isSurrogate = (c: number) => c >= 0xd800 && c <= 0xdfff;

/** The code point of `text` ending at `at` (a surrogate pair read whole), or '' at the start. */
function pointBefore(text: string, at: number): string {
  if (at <= 0) return '';
  const c = text.charCodeAt(at - 1);
  if (c >= 0xdc00 && c <= 0xdfff && at >= 2) {
    const h = text.charCodeAt(at - 2);
    if (h >= 0xd800 && h <= 0xdbff) return text.slice(at - 2, at);
  }
  return text[at - 1]!;
}

/** The code point of `text` starting at `at` (a surrogate pair read whole), or '' at the end. */
function pointAt(text: string, at: number): string {
  if (at >= text.length) return '';
  const c = text.charCodeAt(at);
  if (c >= 0xd800 && c <= 0xdbff && at + 1 < text.length) {
    const l = text.charCodeAt(at + 1);
    if (l >= 0xdc00 && l <= 0xdfff) return text.slice(at, at + 2);
  }
  return text[at]!;
}

/** `\p{L}|\p{N}` (with `_` when `under`) for one code point: ASCII by range, the rest by a pattern compiled once. */
function letterOrNumber(p: string, under: boolean): boolean {
  if (p === '') return false;
  const c = p.charCodeAt(0);
  if (c < 128) return (c >= 48 && c <= 57) || (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (under && c === 95);
  return LETTER_OR_NUMBER.test(p);
}
const isNumber = (p: string) => p !== '' && (p.charCodeAt(0) < 128 ? p >= '0' && p <= '9' : NUMBER.test(p));

/**
 * wordTest's and valueTest's patterns, run as a literal search with the boundaries checked by
 * hand. Compiling a pattern with Unicode classes costs V8 a quarter to a half of a millisecond
 * (and as much again on its first runs), which a query pays for each term it has not seen
 * before: a quote of 30 new words, ten milliseconds. The literal is searched with indexOf and
 * the code points around each occurrence are read as the pattern's look-arounds read them.
 * Only a term the pattern writes whole and without surrogates (a literal a u-flag pattern reads
 * code point by code point) is run this way; the others keep their compiled pattern.
 */
class LiteralTest implements TermTest {
  constructor(
    readonly literal: string,
    readonly bounded: boolean,
  ) {}
  test(text: string): boolean {
    const lit = this.literal;
    for (let at = text.indexOf(lit); at >= 0; at = text.indexOf(lit, at + 1)) if (this.holdsAt(text, at)) return true;
    return false;
  }
  /** Whether the occurrence of the literal at `at` has the pattern's boundaries. */
  holdsAt(text: string, at: number): boolean {
    const before = pointBefore(text, at);
    // (?<![\p{L}\p{N}])literal
    if (!this.bounded) return !letterOrNumber(before, false);
    // (?<![\p{L}\p{N}_]|\p{N}\.)literal(?![\p{L}\p{N}_]|\.\p{N})
    if (letterOrNumber(before, true) || (before === '.' && isNumber(pointBefore(text, at - 1)))) return false;
    const end = at + this.literal.length;
    const after = pointAt(text, end);
    return !(letterOrNumber(after, true) || (after === '.' && isNumber(pointAt(text, end + 1))));
  }
}

/** A literal LiteralTest can run as the pattern would, else null (the pattern is compiled). */
function literalOf(t: string): string | null {
  if (t.length === 0 || t.length > MAX_TERM_PATTERN_CHARS) return null;
  for (let i = 0; i < t.length; i++) if (isSurrogate(t.charCodeAt(i))) return null;
  return t;
}

/** The pattern of a word's test (wordTest) or, `bounded`, a value's (valueTest). */
export const termPattern = (term: string, bounded: boolean): string => (bounded ? valueTest(term) : wordTest(term));

/** The literal search that stands for termPattern's pattern, or null where only the pattern holds the term. */
export function literalTermTest(term: string, bounded: boolean): TermTest | null {
  const literal = literalOf(term);
  return literal === null ? null : new LiteralTest(literal, bounded);
}

/** A value's context in the query: the content word right before it and right after it (null: none there). */
interface ContextParts {
  before: string | null;
  value: string;
  after: string | null;
}

/** A context's test, with the pattern it stands for (`source`: what dropContexts reads). */
export interface ContextTest extends TermTest {
  readonly source: string;
}

/** Not a letter or a number (one code point): the separator class of a context's pattern. */
const NON_WORD = '[^\\p{L}\\p{N}]';
/** Words the text may put between a value and the word before it ("limit of 40", "timeout set to 30"). */
const LINKS = ['of', 'is', 'was', 'at', 'to', 'are', 'were', '=', 'by', 'set to'];

/**
 * The pattern of a value next to its words: the word before (`useBefore`) at most 4 non-word
 * characters away, or 1–2 of them, a linking word and 1–2 more; the value bounded as
 * valueTest bounds it; the word after (`useAfter`) at most 4 non-word characters away.
 */
function contextPattern(c: ContextParts, useBefore: boolean, useAfter: boolean): string {
  const before =
    useBefore && c.before !== null ? `(?<=${wordBefore(c.before)}(?:${NON_WORD}{1,4}|${NON_WORD}{1,2}(?:${LINKS.join('|')})${NON_WORD}{1,2}))` : '';
  const after = useAfter && c.after !== null ? `(?=${NON_WORD}{0,4}${escape(patternPart(c.after).part)})` : '';
  return before + valueTest(c.value) + after;
}

/** Not a letter or a number: one code point as read by pointBefore/pointAt ('' is the text's edge, no character). */
const nonWord = (p: string) => p !== '' && !letterOrNumber(p, false);

/**
 * contextPattern's pattern run as a literal search (see LiteralTest): each bounded occurrence of
 * the value, then the separators around it counted code point by code point as the pattern's
 * look-behind and look-ahead count them, each way they could split.
 */
class ContextLiteralTest implements ContextTest {
  private readonly value: LiteralTest;
  constructor(
    readonly source: string,
    value: string,
    private readonly before: string | null,
    private readonly after: string | null,
  ) {
    this.value = new LiteralTest(value, true);
  }
  /** Whether `text` ends at `at` with the word before, bounded at its start (wordBefore). */
  private wordEndsAt(text: string, at: number): boolean {
    const w = this.before!;
    return at >= w.length && text.startsWith(w, at - w.length) && !letterOrNumber(pointBefore(text, at - w.length), true);
  }
  /** The offsets 1–`max` non-word code points before `at` (or after it, `forward`) reach, nearest first. */
  private static reach(text: string, at: number, max: number, forward: boolean): number[] {
    const out: number[] = [];
    let q = at;
    for (let n = 0; n < max; n++) {
      const p = forward ? pointAt(text, q) : pointBefore(text, q);
      if (!nonWord(p)) break;
      q += forward ? p.length : -p.length;
      out.push(q);
    }
    return out;
  }
  private beforeHolds(text: string, at: number): boolean {
    for (const q of ContextLiteralTest.reach(text, at, 4, false)) if (this.wordEndsAt(text, q)) return true;
    for (const q of ContextLiteralTest.reach(text, at, 2, false)) {
      for (const link of LINKS) {
        if (q < link.length || !text.startsWith(link, q - link.length)) continue;
        for (const r of ContextLiteralTest.reach(text, q - link.length, 2, false)) if (this.wordEndsAt(text, r)) return true;
      }
    }
    return false;
  }
  private afterHolds(text: string, end: number): boolean {
    const w = this.after!;
    if (text.startsWith(w, end)) return true;
    for (const q of ContextLiteralTest.reach(text, end, 4, true)) if (text.startsWith(w, q)) return true;
    return false;
  }
  test(text: string): boolean {
    const v = this.value.literal;
    for (let at = text.indexOf(v); at >= 0; at = text.indexOf(v, at + 1)) {
      if (!this.value.holdsAt(text, at)) continue;
      if (this.before !== null && !this.beforeHolds(text, at)) continue;
      if (this.after !== null && !this.afterHolds(text, at + v.length)) continue;
      return true;
    }
    return false;
  }
}

/** contextPattern's test: a literal search where its words and value allow one, else the compiled pattern. */
function contextTest(c: ContextParts, useBefore: boolean, useAfter: boolean): ContextTest {
  const source = contextPattern(c, useBefore, useAfter);
  const before = useBefore ? c.before : null;
  const after = useAfter ? c.after : null;
  if (literalOf(c.value) === null || (before !== null && literalOf(before) === null) || (after !== null && literalOf(after) === null))
    return cachedRegExp(source);
  return new ContextLiteralTest(source, c.value, before, after);
}

/** A context's test by its parts, for checking it against contextPattern's pattern. */
export function literalContextTest(before: string | null, value: string, after: string | null): ContextTest {
  return contextTest({ before, value, after }, before !== null, after !== null);
}

/** contextPattern's pattern, by its parts. */
export const contextPatternOf = (before: string | null, value: string, after: string | null): string =>
  contextPattern({ before, value, after }, before !== null, after !== null);

/** Compiled patterns (the tests no literal search stands for), shared across queries: compiling one with Unicode classes costs far more than running it. */
const compiled = new Map<string, RegExp>();
function cachedRegExp(source: string): RegExp {
  let re = compiled.get(source);
  if (re === undefined) {
    if (compiled.size >= 8192) compiled.clear();
    re = new RegExp(source, 'u');
    compiled.set(source, re);
  }
  return re;
}

/**
 * Term tests: a literal search for a word or value (defineTerm), the other patterns compiled on
 * first use (a question's words are matched by search's own word sets, so most of them are never
 * needed as patterns).
 */
class LazyTests extends Map<string, TermTest> {
  private readonly sources = new Map<string, string>();
  define(key: string, source: string): void {
    super.delete(key);
    this.sources.set(key, source);
  }
  /** A word's test (wordTest) or, `bounded`, a value's (valueTest): a literal search where it can be one. */
  defineTerm(key: string, term: string, bounded: boolean): void {
    const literal = literalTermTest(term, bounded);
    if (literal === null) this.define(key, termPattern(term, bounded));
    else {
      this.sources.set(key, '');
      super.set(key, literal);
    }
  }
  override get(key: string): TermTest | undefined {
    let re = super.get(key);
    if (re === undefined) {
      const source = this.sources.get(key);
      if (source === undefined) return undefined;
      re = cachedRegExp(source);
      super.set(key, re);
    }
    return re;
  }
  override has(key: string): boolean {
    return this.sources.has(key);
  }
}

/**
 * A hyphenated compound a question states as its claim (`pytest-asyncio`, `ubuntu-latest`):
 * held bounded, written with a hyphen, an underscore or nothing between its parts
 * (`pytest_asyncio`, `pytestasyncio`), never by its parts apart.
 */
export function defineCompound(profile: QueryProfile, compound: string): void {
  const parts = compound.split('-').map((p) => escape(patternPart(p).part));
  (profile.tests as LazyTests).define(compound, `(?<![${L}-])${parts.join('[-_]?')}(?![${L}]|-[${L}])`);
}

/**
 * What a yes/no question says an expression evaluates to (`Min()` evaluates to `-oo`), under
 * the claim key `key`: held where the expression stands right before the value, joined by
 * `=`, `==`, `:`, `->`, `=>`, `→` or a verb of result (returns, gives, evaluates to, is, will
 * return…), quotes and backticks around either allowed. The value is bounded and keeps its
 * sign: `Min() = oo` does not hold `-oo`, and `Max() = -oo` says nothing of `Min()`.
 */
export function defineRelation(profile: QueryProfile, key: string, expr: string, value: string): void {
  const q = '[`\'"]?';
  const link = `\\s*(?:(?:==?|:|->|=>|→)|(?:(?:will|would|should|now|still|then)\\s+)?(?:returns?|returned|return|gives?|gave|yields?|yielded|evaluates?(?:\\s+to)?|evaluated(?:\\s+to)?|equals?(?:\\s+to)?|becomes?|became|is|was|be)\\b)\\s*`;
  (profile.tests as LazyTests).define(key, `(?<![${L}.])${escape(patternPart(expr).part)}${q}${link}${q}(?<![${L}+-])${escape(patternPart(value).part)}(?![${L}])`);
}

/** A short quoted part a question states (`'or 0'`): held verbatim, bounded like a value (`'or 0'` is not `or 00`). */
export function defineQuotedValue(profile: QueryProfile, part: string): void {
  (profile.tests as LazyTests).defineTerm(part, part, true);
}

export function profileQuery(query: string): QueryProfile {
  const terms = [...new Set(matchTerms(query).filter((t) => !STOP.has(t) && t.length > 1))];
  const lowerQuery = query.toLowerCase();
  // Quoted parts (as `quotedParts` finds them) are segments of their own: a value's
  // neighbour is never taken across the quote, since the quoted text sits verbatim in its
  // evidence and the words around it need not (`colspan="2"` is no quoted part).
  const quoted: [number, number][] = [];
  for (const m of query.matchAll(QUOTED)) quoted.push([m.index!, m.index! + m[0].length]);
  const segment = (at: number) => quoted.findIndex(([a, b]) => a <= at && at < b);
  const words = [...lowerQuery.matchAll(WORD)].map((m) => {
    let w = m[0];
    let at = m.index!;
    let end = at + w.length;
    // A sign or marker stuck to a number is part of the value (`+76 lines` is not `Read 76
    // lines`, `-1` is not `1`), and so is a percent sign (`300%` is not `300 pairs`).
    if (VALUE.test(w)) {
      if (/[+\-±$#~]/.test(lowerQuery[at - 1] ?? '') && !/[\p{L}\p{N}_]/u.test(lowerQuery[at - 2] ?? '')) w = lowerQuery[--at]! + w;
      if (lowerQuery[end] === '%') (w += '%'), end++;
    }
    return { w, at, end, seg: segment(at) };
  });
  const standalone = new Set<string>();
  const digitIds = new Set<string>();
  for (const { w } of words) {
    if (!HAS_DIGIT.test(w)) continue;
    (VALUE.test(w.replace(/^[+\-±$#~]/, '')) ? standalone : digitIds).add(w);
  }
  const identifiers = new Set<string>();
  for (const m of query.matchAll(WORD)) if (isIdentifier(m[0])) identifiers.add(m[0].toLowerCase());
  const values = [...standalone, ...digitIds, ...identifiers];
  for (const v of values) if (!terms.includes(v)) terms.push(v);
  const tests = new LazyTests();
  for (const t of terms) {
    // Values need both boundaries (40 must not match 140 or 40.5); words only a leading one,
    // which gives plain prefix stemming (allow matches allows).
    tests.defineTerm(t, t, standalone.has(t) || digitIds.has(t) || identifiers.has(t));
  }
  const key = [...standalone].sort((a, b) => b.length - a.length)[0] ?? [...digitIds].sort((a, b) => b.length - a.length)[0] ?? [...terms].sort((a, b) => b.length - a.length)[0] ?? null;
  // "collected 50 items": 50 must stand next to collected and items (its content-word
  // neighbours in the query, at most 4 characters of punctuation away: `version = "1"`),
  // not just anywhere.
  // Parts and sources only: most candidates fail on their values first, so the tests are made
  // on first use (a literal search, or a compiled pattern for a word too long or astral).
  const contextSources: { both: string; sides: string[]; parts: ContextParts }[] = [];
  const content = (n: { w: string } | undefined) => !!n && /\p{L}/u.test(n.w) && !HAS_DIGIT.test(n.w) && !STOP.has(n.w);
  words.forEach((cur, i) => {
    if (!standalone.has(cur.w)) return;
    const prev = words[i - 1];
    const next = words[i + 1];
    // The word before may stand one function word away in the text ("limit 40" is held by
    // "limit of 40", "timeout set to 30" by "timeout is 30").
    const parts: ContextParts = {
      before: content(prev) && prev!.seg === cur.seg && cur.at - prev!.end <= 4 ? prev!.w : null,
      value: cur.w,
      after: content(next) && next!.seg === cur.seg && next!.at - cur.end <= 4 ? next!.w : null,
    };
    if (parts.before !== null || parts.after !== null)
      contextSources.push({
        parts,
        both: contextPattern(parts, true, true),
        sides: [parts.before !== null ? contextPattern(parts, true, false) : null, parts.after !== null ? contextPattern(parts, false, true) : null].filter(
          (x): x is string => x !== null,
        ),
      });
  });
  let contexts: ContextTest[] | null = null;
  let contextSides: ContextTest[][] | null = null;
  return {
    terms,
    values,
    standalone: [...standalone],
    digitIds: [...digitIds],
    identifiers: [...identifiers],
    quoted: quotedParts(query),
    allQuoted: [...query.matchAll(/`([^`]+)`|"([^"\n]+)"/g)].map((m) => (m[1] ?? m[2])!),
    tests,
    lines: query.split('\n').length,
    key,
    get contexts(): ContextTest[] {
      return (contexts ??= contextSources.map((c) => contextTest(c.parts, true, true)));
    },
    get contextSides(): ContextTest[][] {
      return (contextSides ??= contextSources.map((c) => [
        ...(c.parts.before !== null ? [contextTest(c.parts, true, false)] : []),
        ...(c.parts.after !== null ? [contextTest(c.parts, false, true)] : []),
      ]));
    },
    get contextCount(): number {
      return contextSources.length;
    },
    dropContexts(drop: (source: string) => boolean, all: boolean): void {
      for (let i = 0; i < contextSources.length; i++) {
        if (!drop(contextSources[i]!.both)) continue;
        contextSources.splice(i, 1);
        contexts?.splice(i, 1);
        contextSides?.splice(i, 1);
        if (!all) return;
        i--;
      }
    },
  };
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

/** `float16` -> `float#`: an identifier with its digit runs blanked, to spot `float32` stated where `float16` was asked. */
const skeleton = (t: string) => t.replace(/\d+/g, '#');

/**
 * A candidate contradicts the query when it lacks a distinctive query term but holds a
 * one-edit variant of it (`parseConfigFile` asked, `parseConfigFjle` never stated), or an
 * identifier with digits the query names appears with other digits (`utf-15` asked,
 * `utf-8` stated): the transcript says something close but different, which is a miss,
 * not a match.
 */
export function contradicts(profile: QueryProfile, text: string, whole: string = text, digitIdsOnly = false): boolean {
  // Only distinctive terms: identifiers (letters with `_`, digits or dots) of 5+ chars, or
  // words of 8+; short words have real one-edit neighbours (line/like) and standalone
  // numbers are checked by the value rules.
  const distinctive = (t: string) => /\p{L}/u.test(t) && (t.length >= 8 || (t.length >= 5 && /[_\d./-]/.test(t)));
  const lower = text.toLowerCase();
  const missing = profile.terms.filter(
    (t) => ((!digitIdsOnly && distinctive(t)) || profile.digitIds.includes(t)) && !profile.standalone.includes(t) && !profile.tests.get(t)!.test(lower),
  );
  if (missing.length === 0) return false;
  // Terms missing from the window, variants anywhere in the candidate: a window that says
  // "if the" at a line end and "separator" on the next must not let "sepauator" through.
  const tokens = new Set(matchTerms(whole));
  for (const m of missing) {
    const sk = profile.digitIds.includes(m) ? skeleton(m) : null;
    for (const tok of tokens) if (oneEditVariant(m, tok) || (sk !== null && tok !== m && skeleton(tok) === sk)) return true;
  }
  return false;
}

/**
 * Every standalone value with words beside it in the query stands next to them in `text`:
 * on both sides for a statement ("rate limit 40 req/s" is held by "rate limit of 40 req/s";
 * "Found 50 test(s)" is not held by "head -n 50 tests/…"), on one side at least for a
 * question (`eitherSide`: its wording around a value is the asker's). "collected 51 items"
 * is never held by a log that says "collected 50 items".
 */
export function contextHolds(profile: QueryProfile, text: string, eitherSide = false): boolean {
  return eitherSide ? profile.contextSides.every((sides) => sides.some((re) => re.test(text))) : profile.contexts.every((re) => re.test(text));
}

function passes(profile: QueryProfile, lower: string, policy: MatchPolicy): boolean {
  // Every value required: a plain substring test rules most candidates out before any
  // regular expression runs (each value's test matches that very string, bounded).
  if (policy.minValueCoverage >= 1) for (const v of profile.values) if (!lower.includes(v)) return false;
  const c = coverage(profile, lower);
  return c.terms >= policy.minCoverage && c.values >= policy.minValueCoverage && contextHolds(profile, lower);
}

/**
 * A candidate matches when one window of it — the lines around an occurrence of the
 * query's key term, as many as the query has — holds every value and enough of the
 * terms, and nothing in the candidate contradicts a distinctive term. Locality is what
 * tells "collected 50 items" (never printed) from a long log that says "collected" on one
 * line, "50" on another and "items" on a third.
 */
export function matches(profile: QueryProfile, text: string, policy: MatchPolicy = DEFAULT_MATCH_POLICY, lowered?: string): boolean {
  const lower = lowered ?? text.toLowerCase();
  if (!passes(profile, lower, policy)) return false;
  const lines = lower.split('\n');
  if (profile.key === null || lines.length <= profile.lines) return !contradicts(profile, text);
  const keyTest = profile.tests.get(profile.key)!;
  const reach = profile.lines - 1;
  for (let i = 0; i < lines.length; i++) {
    if (!keyTest.test(lines[i]!)) continue;
    const window = lines.slice(Math.max(0, i - reach), Math.min(lines.length, i + reach + 1)).join('\n');
    // A term is missing when the matching window lacks it; its variants are looked for in
    // the whole candidate (tokenized only when a distinctive term is missing, which is rare
    // for a real match).
    if (passes(profile, window, policy) && !contradicts(profile, window, text)) return true;
  }
  return false;
}

/**
 * For a candidate that contains the query's quoted parts verbatim (a command in backticks,
 * a quoted message): the rest of the query need not be covered, but it must not contradict
 * the candidate — every standalone value present next to the quote and next to its words,
 * no identifier with other digits, no one-edit variant of a distinctive term. Identifiers
 * that the candidate does not mention at all (`In episode astropy__astropy-13033`, a name
 * the transcript never prints) are framing, not a contradiction.
 */
export function consistent(profile: QueryProfile, text: string, eitherSide = false): boolean {
  // Every quote of the query, however short, is verbatim in the candidate: "I don't see
  // `assumptions5` ... in `__new__`" is not answered by a span that has `__new__` and no
  // `assumptions5`, nor "`_dtype` as `<U9`" by one with `_dtype` and no `<U9`.
  const lowerText = text.toLowerCase();
  if (!profile.allQuoted.every((p) => text.includes(p) || lowerText.includes(p.toLowerCase()))) return false;
  // The rest of the query is read next to the quote: in the lines around an occurrence of a
  // quoted part, as many more as the query has, not anywhere in a long output.
  // The phrase path verified the quote against the raw text; lower-cased only as a fallback.
  const hay = profile.quoted.some((p) => text.includes(p)) ? text : text.toLowerCase();
  const lines = hay.split('\n');
  const starts: number[] = [];
  for (let i = 0, at = 0; i < lines.length; at += lines[i]!.length + 1, i++) starts.push(at);
  const lineOf = (at: number) => pieceAt(starts, at);
  const reach = profile.lines;
  const tried = new Set<number>();
  for (const quotedPart of profile.quoted) {
    const part = hay === text ? quotedPart : quotedPart.toLowerCase();
    for (let at = hay.indexOf(part); at >= 0; at = hay.indexOf(part, at + 1)) {
      const a = lineOf(at);
      if (tried.has(a)) continue;
      tried.add(a);
      const b = lineOf(at + part.length);
      const window = lines
        .slice(Math.max(0, a - reach), Math.min(lines.length, b + reach + 1))
        .join('\n')
        .toLowerCase();
      if (
        profile.standalone.every((v) => profile.tests.get(v)!.test(window)) &&
        contextHolds(profile, window, eitherSide) &&
        !contradicts(profile, window, text)
      )
        return true;
      if (tried.size > 64) return false;
    }
  }
  return false;
}

/** The index of the piece an offset falls in, given each piece's start offset (ascending). */
export function pieceAt(starts: readonly number[], at: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= at) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Backticked or double-quoted parts of a query, long enough to be specific (>= 6 chars). */
export function quotedParts(query: string): string[] {
  const out: string[] = [];
  for (const m of query.matchAll(QUOTED)) out.push((m[1] ?? m[2])!);
  return out;
}
