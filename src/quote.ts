/**
 * Quotes: where a statement is an excerpt of one span, word for word but for a changed word.
 *
 * A statement searched for ("- DO NOT MODIFY: Tests, configuration files (pyproject.toml, …)",
 * a line recalled from the transcript) quotes the place whose words it repeats in order. When
 * one span holds it word for word except for a few changed words — a number shifted, an
 * identifier with a letter changed, a word misspelled into another (`configvration`) — the
 * statement is a misquote of that place: what it says is not stated there, and a looser match
 * elsewhere (a span sharing only its file names) does not make it stated (src/support.ts,
 * rule 8).
 *
 * Words are runs of letters, digits and `_`, compared lower-cased; punctuation and white space
 * between them are not compared (`start_line=6` and `start_line = 6` are the same words). Two
 * words that differ only by their normal form (`configured` / `configures`) are the same word.
 */
import { normalForm } from './query.js';

/** Fewest words a statement has for the quote rule to read it: shorter ones are decided by their values. */
export const QUOTE_MIN_WORDS = 4;
/** At most one changed word per this many words of the quote (and at least one changed word allowed). */
export const QUOTE_WORDS_PER_CHANGE = 5;

const WORD = /[\p{L}\p{N}_]+/gu;
/** Occurrences of an anchor word read per span: a word repeated thousands of times in a log anchors nothing new. */
const MAX_ANCHORS = 64;

/** How a span holds a statement's words, when it holds them at one place nearly in full. */
export interface QuoteHold {
  /**
   * `words`: every word, in order, at one place. `changed`: every word in order at one place
   * but for a few changed ones (`asked` → `stated`). `cut`: the words in order, none changed,
   * up to the span's start or end, with the rest of the statement beyond it (the span holds a
   * part of the quote: the rest is read in the span beside it, src/support.ts settleCutQuote).
   */
  kind: 'words' | 'changed' | 'cut';
  /** The statement's words that the span states otherwise (`changed`). */
  asked: string[];
  /** What the span states in their place. */
  stated: string[];
  /** `cut`: how many of the query's words lie beyond the span's edge. */
  outside?: number;
}

/** The word that opens a question: the asker's, not the quote's ("Did the library hold 179 books…"). */
const ASKING = /^(?:who|whom|whose|what|which|when|where|why|how|did|do|does|is|are|was|were|has|have|had|can|could|should|would|will)$/;

/**
 * The query's words, lower-cased, or null when it is too short to be read as a quote. A
 * question's opening question word is left out: "Did the library hold 179 books in total?"
 * quotes "the library holds 179 books in total".
 */
export function quoteWords(query: string, question = false): string[] | null {
  const words = query.toLowerCase().match(WORD) ?? [];
  if (question && words.length > 0 && ASKING.test(words[0]!)) words.shift();
  return words.length >= QUOTE_MIN_WORDS ? words : null;
}

const sameWord = (a: string, b: string) => a === b || (/^\p{L}+$/u.test(a) && /^\p{L}+$/u.test(b) && normalForm(a) === normalForm(b));

/**
 * A statement's two anchors (its two longest words, with their positions) and the characters
 * a quote of it may take (with room for wider spacing): once per statement, not per span read.
 */
const places = new WeakMap<readonly string[], { anchors: (readonly [string, number])[]; reach: number }>();
function placesOf(words: readonly string[]): { anchors: (readonly [string, number])[]; reach: number } {
  let p = places.get(words);
  if (!p) {
    const byLength = words.map((w, i) => [w, i] as const).sort((x, y) => y[0].length - x[0].length);
    p = { anchors: byLength.slice(0, 2), reach: words.reduce((s, w) => s + w.length, 0) * 2 + 4 * words.length + 64 };
    places.set(words, p);
  }
  return p;
}

/**
 * How `text` holds the statement `words` (quoteWords): the best place in it, by the fewest
 * changed words, or null when no place holds the statement nearly in full. A place is found
 * from the occurrences of two anchor words (the statement's two longest, at different
 * positions: one of them may be the changed word), and read in a stretch of characters around
 * each: the text is never split into words as a whole.
 */
export function quoteHold(words: readonly string[], text: string, lowered?: string, question = false): QuoteHold | null {
  const n = words.length;
  const lower = lowered ?? text.toLowerCase();
  const maxChanged = Math.max(1, Math.floor(n / QUOTE_WORDS_PER_CHANGE));
  const { anchors, reach } = placesOf(words);
  let best: QuoteHold | null = null;
  let bestChanged = Number.POSITIVE_INFINITY;
  const tried = new Set<number>();
  for (const [anchor, pos] of anchors) {
    let seen = 0;
    for (let at = lower.indexOf(anchor); at >= 0 && seen < MAX_ANCHORS; at = lower.indexOf(anchor, at + 1)) {
      if (isWordChar(lower, at - 1) || isWordChar(lower, at + anchor.length)) continue;
      // Only where a word beside the anchor is the statement's word beside it (one of the two
      // may be the changed word): most occurrences of a word are no quote of the statement,
      // and this is read without splitting anything into words.
      if (!besideHolds(lower, at, anchor.length, pos > 0 ? words[pos - 1]! : null, pos + 1 < n ? words[pos + 1]! : null)) continue;
      seen++;
      const from = Math.max(0, at - reach);
      const to = Math.min(lower.length, at + anchor.length + reach);
      // The stretch starts and ends on word boundaries (a word cut by the stretch is not read).
      let a = from;
      if (from > 0) while (a < at && isWordChar(lower, a)) a++;
      let b = to;
      if (to < lower.length) while (b > at && isWordChar(lower, b - 1)) b--;
      // Of the stretch's words, those the statement can lie on: `pos` before the anchor and
      // the rest from it (the stretch's bounds still decide where the span is cut).
      const local = wordsIn(lower, wordsBack(lower, at, a, pos), at);
      const k = local.length;
      for (const x of wordsIn(lower, at, b, n - pos)) local.push(x);
      if (local[k]?.at !== at) continue;
      const start = k - pos;
      // The same place reached from the other anchor is read once.
      if (start >= 0 && start < local.length) {
        if (tried.has(local[start]!.at)) continue;
        tried.add(local[start]!.at);
      }
      // Words of the statement before the span's first word or after its last: the span is cut there.
      const cutBefore = start < 0 && from === 0;
      const cutAfter = start + n > local.length && to === lower.length;
      if ((start < 0 && !cutBefore) || (start + n > local.length && !cutAfter)) continue;
      const asked: string[] = [];
      const stated: string[] = [];
      let inside = 0;
      for (let i = 0; i < n && asked.length <= maxChanged; i++) {
        const x = local[start + i];
        if (!x) continue;
        inside++;
        if (!sameWord(words[i]!, x.w)) {
          asked.push(words[i]!);
          stated.push(x.w);
        }
      }
      if (asked.length > maxChanged) continue;
      // A question's words are the asker's: one of them differing from the span's is a changed
      // value only when it is a value (a digit in it, asked or stated) or the span's word with
      // one letter changed ("configvration"); "what is the on-call alias?" is no misquote of
      // "… is the on-call rotation".
      if (question && asked.some((w, i) => !/\d/.test(w) && !/\d/.test(stated[i]!) && !oneLetterApart(w, stated[i]!))) continue;
      const cut = inside < n;
      // A part cut by the span's edge is read only when it is most of the statement, and only
      // word for word: a changed word is told from the asker's own words around a quote
      // (`what did the tool call … print?`) only where every word of the statement is read.
      if (cut && (inside < QUOTE_MIN_WORDS || inside * 2 < n || asked.length > 0)) continue;
      const hold: QuoteHold = { kind: asked.length > 0 ? 'changed' : cut ? 'cut' : 'words', asked, stated, ...(cut ? { outside: n - inside } : {}) };
      if (hold.kind === 'words') return hold;
      const rank = asked.length + (cut ? 0.5 : 0);
      if (rank < bestChanged) {
        best = hold;
        bestChanged = rank;
      }
    }
  }
  return best;
}

/**
 * Whether the word right before [at, at+len) is `before`, or the word right after it is
 * `after` (a text edge on a side counts as held; no word on either side, as held): at most 8
 * characters of punctuation and spacing between them.
 */
function besideHolds(lower: string, at: number, len: number, before: string | null, after: string | null): boolean {
  if (before === null && after === null) return true;
  if (after !== null) {
    let j = at + len;
    const stop = Math.min(lower.length, j + 8);
    while (j < stop && !isWordChar(lower, j)) j++;
    if (j >= lower.length || (lower.startsWith(after, j) && !isWordChar(lower, j + after.length))) return true;
  }
  if (before !== null) {
    let j = at;
    const stop = Math.max(0, j - 8);
    while (j > stop && !isWordChar(lower, j - 1)) j--;
    if (j === 0 || (j >= before.length && lower.startsWith(before, j - before.length) && !isWordChar(lower, j - before.length - 1))) return true;
  }
  return false;
}

/** Two words of the same length but for at most one letter, differing in one letter, or one letter inserted. */
function oneLetterApart(a: string, b: string): boolean {
  if (Math.abs(a.length - b.length) > 1 || a === b) return false;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (a.length === b.length) return a.slice(i + 1) === b.slice(i + 1);
  const [long, short] = a.length > b.length ? [a, b] : [b, a];
  return long.slice(i + 1) === short.slice(i);
}

const WORD_ASCII = Uint8Array.from({ length: 128 }, (_, c) => ((c >= 48 && c <= 57) || (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 ? 1 : 0));
const WORD_POINT = /^[\p{L}\p{N}_]$/u;

/** Code units of the word character (WORD's) at `i` of `s`, none past `end`; 0 when it is none. */
function wordUnits(s: string, i: number, end: number): number {
  const c = s.charCodeAt(i);
  if (c < 128) return WORD_ASCII[c]!;
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < end) {
    const d = s.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return WORD_POINT.test(s.slice(i, i + 2)) ? 2 : 0;
  }
  return WORD_POINT.test(s[i]!) ? 1 : 0;
}

/**
 * The words (WORD's matches) of `s` between `from` and `to`, with where each starts: the
 * matches of WORD over `s.slice(from, to)`, read character by character (the stretches around
 * a quote's anchors are read for every candidate of a search, and a regular expression's
 * match objects cost most of that).
 */
export function wordsIn(s: string, from: number, to: number, max = Number.POSITIVE_INFINITY): { w: string; at: number }[] {
  const out: { w: string; at: number }[] = [];
  let i = from;
  while (i < to && out.length < max) {
    let u = wordUnits(s, i, to);
    if (u === 0) {
      i++;
      continue;
    }
    const start = i;
    while (u > 0) {
      i += u;
      u = i < to ? wordUnits(s, i, to) : 0;
    }
    out.push({ w: s.slice(start, i), at: start });
  }
  return out;
}

/**
 * Where the `count`-th word (WORD's) before `at` starts, words reaching back no further than
 * `from` (`from` itself when fewer lie between): the words of `s.slice(from, at)` read from
 * their end, so that wordsIn from there to `at` gives the last `count` of them.
 */
export function wordsBack(s: string, at: number, from: number, count: number): number {
  let j = at;
  // The code point that ends at j: its units and whether it is a word character (a surrogate
  // pair is one, as WORD reads it from `from` on).
  let units = 1;
  const wordBefore = (): boolean => {
    const c = s.charCodeAt(j - 1);
    if (c < 128) {
      units = 1;
      return WORD_ASCII[c] === 1;
    }
    if (c >= 0xdc00 && c <= 0xdfff && j - 2 >= from) {
      const h = s.charCodeAt(j - 2);
      if (h >= 0xd800 && h <= 0xdbff) {
        units = 2;
        return WORD_POINT.test(s.slice(j - 2, j));
      }
    }
    units = 1;
    return WORD_POINT.test(s[j - 1]!);
  };
  for (let words = 0; words < count; words++) {
    while (j > from && !wordBefore()) j -= units;
    if (j <= from) return from;
    while (j > from && wordBefore()) j -= units;
  }
  return j;
}

function isWordChar(s: string, i: number): boolean {
  if (i < 0 || i >= s.length) return false;
  const c = s.charCodeAt(i);
  if (c < 128) return WORD_ASCII[c] === 1;
  return /[\p{L}\p{N}]/u.test(s[i]!);
}
