

/** One lookup: a value as spelled, and which of its sides must be bounded in the source. */
export interface Check {
  value: string;
  /** The occurrence in the source must be bounded on the left / the right. */
  left: boolean;
  right: boolean;
  /** A quoted part: a plain substring test. */
  quote: boolean;
  /** A dotted version: `v` before it is optional on both sides. */
  version: boolean;
  /** Compared against lower-cased sources (a summary part whose lower-casing changed its length). */
  caseBlind: boolean;
  /**
   * A number's content-word neighbours in the summary (lower-cased): a source occurrence
   * must have one of them beside it. `bounded`: the word before is whole (not at a cut).
   */
  before?: { word: string; bounded: boolean };
  after?: string;
}

export const WORD_CHAR = /[\p{L}\p{N}_]/u;
export const NUMBER_CHAR = /\p{N}/u;
export const DOTTED_VERSION = /^[vV]?\d+(?:\.\d+)+$/;

/** The code point ending at `at` (a surrogate pair whole), or '' at the start. */
export function charBefore(s: string, at: number): string {
  if (at <= 0) return '';
  const c = s.charCodeAt(at - 1);
  if (c >= 0xdc00 && c <= 0xdfff && at >= 2) return s.slice(at - 2, at);
  return s[at - 1]!;
}

/** The code point starting at `at`, or '' at the end. */
export function charAfter(s: string, at: number): string {
  if (at >= s.length) return '';
  const c = s.charCodeAt(at);
  if (c >= 0xd800 && c <= 0xdbff && at + 1 < s.length) return s.slice(at, at + 2);
  return s[at]!;
}

/**
 * The bounds of match.ts's value test, `(?<![\p{L}\p{N}_]|\p{N}\.)` before and
 * `(?![\p{L}\p{N}_]|\.\p{N})` after, as character checks (no pattern per value and source).
 */
export function leftBounded(s: string, at: number): boolean {
  const c = charBefore(s, at);
  if (c === '') return true;
  if (WORD_CHAR.test(c)) return false;
  return !(c === '.' && NUMBER_CHAR.test(charBefore(s, at - 1)));
}

export function rightBounded(s: string, end: number): boolean {
  const c = charAfter(s, end);
  if (c === '') return true;
  if (WORD_CHAR.test(c)) return false;
  return !(c === '.' && NUMBER_CHAR.test(charAfter(s, end + 1)));
}

export const GAP_CHAR = /[^\p{L}\p{N}]/u;
/** The function words match.ts lets stand between a value and the word before it ("limit of 40", "timeout set to 30"). */
export const BETWEEN = ['of', 'is', 'was', 'at', 'to', 'are', 'were', '=', 'by', 'set to'];

/** Whether `source` ends, at `end`, with 1-`max` characters that are not letters or digits; the lengths that do. */
export function gapsBefore(source: string, end: number, max: number): number[] {
  const out: number[] = [];
  for (let g = 1; g <= max && end - g >= 0 && GAP_CHAR.test(source[end - g]!); g++) out.push(g);
  return out;
}

/** Whether the word `w` ends at `end` in `source` (lower-cased), whole on its left when `bounded`. */
export function wordEndsAt(source: string, end: number, w: string, bounded: boolean): boolean {
  const at = end - w.length;
  return at >= 0 && source.slice(at, end).toLowerCase() === w && (!bounded || !WORD_CHAR.test(charBefore(source, at)));
}

/**
 * Whether one of the summary's content-word neighbours of a number stands beside its
 * occurrence [start, end) in the source, across at most 4 characters that are not letters or
 * digits (the word before may also stand one function word away: "limit of 40") —
 * match.ts's "values next to their words", one side sufficing as for a question: "rate
 * limit 40 req/s" is held by "limit: 40 req/s", "limit of 40" and "40 req/s", not by a
 * source whose only `40` is "took 40 ms".
 */
export function beside(source: string, start: number, end: number, c: Check): boolean {
  if (!c.before && !c.after) return true;
  if (c.before) {
    const { word, bounded } = c.before;
    for (const g of gapsBefore(source, start, 4)) if (wordEndsAt(source, start - g, word, bounded)) return true;
    // Or one function word apart: `limit of 40`, `timeout set to 30`.
    for (const g2 of gapsBefore(source, start, 2))
      for (const f of BETWEEN) {
        const fEnd = start - g2;
        if (!wordEndsAt(source, fEnd, f, true)) continue;
        for (const g1 of gapsBefore(source, fEnd - f.length, 2)) if (wordEndsAt(source, fEnd - f.length - g1, word, bounded)) return true;
      }
  }
  if (c.after) {
    const w = c.after;
    for (let g = 0; g <= 4 && end + g < source.length; g++) {
      if (g > 0 && !GAP_CHAR.test(source[end + g - 1]!)) break;
      if (source.slice(end + g, end + g + w.length).toLowerCase() === w) return true;
    }
  }
  return false;
}

/**
 * Whether `source` holds the check's value with the bounds (and beside the words) it asks
 * for: indexOf, then the bounds per occurrence, then the neighbours.
 */
export function holds(source: string, check: Check, context: boolean): boolean {
  // A version is looked up bare; a `v` before it, in the source or the summary, is notation.
  const needle = check.version ? check.value.replace(/^[vV]/, '') : check.value;
  for (let at = source.indexOf(needle); at >= 0; at = source.indexOf(needle, at + 1)) {
    const end = at + needle.length;
    if (check.right && !rightBounded(source, end)) continue;
    if ((!check.left || leftBounded(source, at)) && (!context || beside(source, at, end, check))) return true;
    // `2.26.2` stated, `v2.26.2` in the source (or the other way round).
    if (check.version && /[vV]/.test(charBefore(source, at)) && (!check.left || leftBounded(source, at - 1)) && (!context || beside(source, at - 1, end, check))) return true;
  }
  return false;
}

/**
 * What window.ts's extractiveSummary keeps: a span's first line up to 120 chars, and its
 * anchor fact up to 160 — a fact is a line, or a 160-char window of a longer line
 * (anchors.ts lineAround), cut at both ends then, less a char not to split a surrogate pair.
 */
