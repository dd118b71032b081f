/**
 * Summary grounding: a summary may not state a value its sources do not.
 *
 * A compaction pass replaces spans with a summary, and the agent later acts on what the
 * summary says. A summarizer that writes a plausible but wrong value ("rate limit 45 req/s"
 * where the turns said 40) plants a fact nobody stated. The rule: every value the summary
 * states occurs verbatim in the spans it summarizes — the raw spans the pass evicts, plus
 * the texts of the summaries it re-summarizes (which were themselves grounded when written).
 *
 * What a value is, is match.ts's definition (`profileQuery`), the one search holds a
 * candidate to, so the guard and recall cannot disagree on it:
 *  - numbers, with a sign or marker stuck to them and a percent sign (`40`, `3.5ms`, `+76`,
 *    `-1`, `300%`, `0x1f`), and versions (`v2.26.2`);
 *  - identifiers with digits (`float16`, `utf-8`, `res1`);
 *  - identifiers without digits of 5+ chars: paths, dotted, snake_case and camelCase names
 *    (`django/db/models/base.py`, `self.mask`, `ValueError`, `req/s`);
 *  - quoted parts: backticked or double-quoted text of 6+ chars (match.ts `quotedParts`),
 *    compared as a substring.
 *
 * How a value is compared:
 *  - Verbatim, case included. profileQuery lower-cases what it extracts (search is
 *    case-blind); here each value is compared as the summary spells it. Numbers and versions
 *    are not normalized (`40` is not `40.0`). Identifiers keep their case because it is part
 *    of what they name: `MAX_RETRIES` and `max_retries` are two variables, `README.md` and
 *    `readme.md` two files on most filesystems, `10Mb` and `10MB` two sizes; a summarizer
 *    copying an identifier has no reason to re-case it. (A part of a summary whose
 *    lower-casing changes its length, a rare letter like `İ`, is compared case-blind.)
 *  - Bounded, by match.ts's value test: `40` is not `140`, `40.5` or `float40`; `self.mask`
 *    is not `self.masked`.
 *  - A `v` before a dotted version is notation: `v2.26.2` and `2.26.2` ground each other.
 *  - Beside its words (`context`, default on): a number with content words beside it in the
 *    summary (not stop words, not values; at most 4 characters of punctuation away) must
 *    stand beside one of them in the source (the word before may be one function word
 *    away there: "limit of 40") — match.ts's "values next to their words", one side
 *    sufficing as for a question. Without it, "rate limit 45 req/s" is grounded by any
 *    45 in the evicted turns (a line number, "took 45 ms"), and long tool outputs hold most
 *    small numbers somewhere.
 *
 * Framing, not values (taken out before extraction):
 *  - turn references: `t12–15`, `(t12)`, "turn 12", "turns 3-9", "turns 3 to 9";
 *  - ContextWindow's header `[summary of turns 12–15; …]`, the extractive summarizer's line
 *    prefix `- t123–125 assistant: ` (anywhere in a line, whole or cut short: a re-summary
 *    quotes its sources' first lines) and its `- … 4 more span(s)` line;
 *  - list numbering at the start of a line (`1.`, `2)`).
 *
 * Cuts. A value next to a cut may be a piece of a source value (`12345` kept as `123`): on
 * the side of the cut it need not be bounded, so a source occurrence it begins or ends
 * grounds it. Cuts are the summarizer's, not every line end: in the extractive format, the
 * first line at 120 chars, the start of an anchor fact, its end when it is a full 160-char
 * window, the end of a re-summarized line; in other text, an ellipsis `…` (both sides).
 * No value or quote is read across an ellipsis.
 *
 * Cost. Extraction: one profileQuery, over the distinct runs of the summary that could hold
 * a value (a digit, `_`, a joiner or camelCase), linear in the summary (≤ a few KB). Search:
 * each distinct value with indexOf, source by source, until one holds it (bounded, beside
 * its word); a value no source holds scans each source once. O(V · Σ|source|) in the worst
 * case — V distinct values, each indexOf native and linear — and far less in practice, a
 * grounded value stopping at its first good occurrence. Tokenizing each source into a set
 * would be one pass, but a JS tokenizer over 100s of KB of tool output costs more than a few
 * dozen native scans, and a set answers neither the cut lookups nor the neighbours. Over the
 * full miniswe replay (bench/grounding.bench.ts; 2,074 passes, sources p50 27 KB, max
 * 868 KB): CPU time per pass p50 121 µs, p99 564 µs, max 1.1 ms, mostly extraction
 * (docs/GROUNDING.md).
 */
import { pieceAt, profileQuery, quotedParts } from './match.js';

export interface GroundingResult {
  /** True when every value the summary states occurs in at least one source. */
  grounded: boolean;
  /** The values the summary states, in order, as compared (see `summaryValues`). */
  values: string[];
  /** The values no source holds. */
  ungrounded: string[];
}

/** A source with the turns it covers: lets a quote citing turns be checked against them. */
export interface GroundingSource {
  text: string;
  turnStart: number;
  turnEnd: number;
}

export interface GroundingOptions {
  /**
   * A number must also stand beside one of its content-word neighbours in the summary
   * (default true). Off: the value alone, anywhere in a source.
   */
  context?: boolean;
}

/** One lookup: a value as spelled, and which of its sides must be bounded in the source. */
interface Check {
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

interface Part {
  text: string;
  /** The text may start / end mid-word: a value touching that end need not be bounded there. */
  cutStart: boolean;
  cutEnd: boolean;
}

/** The extractive summarizer's line prefix: `- t123 role: ` or `- t123–125 role: `. */
const EXTRACTIVE_PREFIX = /(?<!\S)- t\d+(?:–\d+)? [^\s:]+: /g;
const EXTRACTIVE_LINE = /^- t\d+(?:–\d+)? [^\s:]+: /;
/** The same prefix cut short at the end of a part (a re-summary keeps 120 chars of a line of prefixes). */
const EXTRACTIVE_PREFIX_CUT = /(?<!\S)- t\d*(?:–\d*)?(?: [^\s:]*:?)?\s*(?=…|$)/g;
/** Its line for spans that did not fit: `- … 4 more span(s)`. */
const MORE_SPANS = /^\s*-?\s*…\s*\d+ more span\(s\)\s*$/;
/** The window's summary header (ContextWindow.messages), should a host hand it back in. */
const HEADER = /\[summary of turns [^\]\n]*\]/gi;
/** "turn 12", "turns 3-9", "Turns 3–9", "turns 3 to 9", "turns 3, 5 and 9". */
const TURN_WORDS = /(?<![\p{L}\p{N}_])turns?\s+\d+(?:\s*(?:[–—-]|to|through|and|,)\s*t?\d+)*(?![\p{L}\p{N}_])/giu;
/** `t12–15`, `t12-t15`, and a lone turn reference in brackets: `(t12)`, `[t12–15]`. */
const TURN_RANGE = /(?<![\p{L}\p{N}_])t\d+\s*[–—-]\s*t?\d+(?![\p{L}\p{N}_])/gu;
const TURN_BRACKETED = /[([]t\d+[)\]]/g;
/** List numbering at the start of a line: `1.`, `12)`. */
const LIST_NUMBER = /^(\s*)\d+[.)](?=\s)/;

const WORD_CHAR = /[\p{L}\p{N}_]/u;
const NUMBER_CHAR = /\p{N}/u;
const DOTTED_VERSION = /^[vV]?\d+(?:\.\d+)+$/;

/** The code point ending at `at` (a surrogate pair whole), or '' at the start. */
function charBefore(s: string, at: number): string {
  if (at <= 0) return '';
  const c = s.charCodeAt(at - 1);
  if (c >= 0xdc00 && c <= 0xdfff && at >= 2) return s.slice(at - 2, at);
  return s[at - 1]!;
}

/** The code point starting at `at`, or '' at the end. */
function charAfter(s: string, at: number): string {
  if (at >= s.length) return '';
  const c = s.charCodeAt(at);
  if (c >= 0xd800 && c <= 0xdbff && at + 1 < s.length) return s.slice(at, at + 2);
  return s[at]!;
}

/**
 * The bounds of match.ts's value test, `(?<![\p{L}\p{N}_]|\p{N}\.)` before and
 * `(?![\p{L}\p{N}_]|\.\p{N})` after, as character checks (no pattern per value and source).
 */
function leftBounded(s: string, at: number): boolean {
  const c = charBefore(s, at);
  if (c === '') return true;
  if (WORD_CHAR.test(c)) return false;
  return !(c === '.' && NUMBER_CHAR.test(charBefore(s, at - 1)));
}

function rightBounded(s: string, end: number): boolean {
  const c = charAfter(s, end);
  if (c === '') return true;
  if (WORD_CHAR.test(c)) return false;
  return !(c === '.' && NUMBER_CHAR.test(charAfter(s, end + 1)));
}

const GAP_CHAR = /[^\p{L}\p{N}]/u;
/** The function words match.ts lets stand between a value and the word before it ("limit of 40", "timeout set to 30"). */
const BETWEEN = ['of', 'is', 'was', 'at', 'to', 'are', 'were', '=', 'by', 'set to'];

/** Whether `source` ends, at `end`, with 1-`max` characters that are not letters or digits; the lengths that do. */
function gapsBefore(source: string, end: number, max: number): number[] {
  const out: number[] = [];
  for (let g = 1; g <= max && end - g >= 0 && GAP_CHAR.test(source[end - g]!); g++) out.push(g);
  return out;
}

/** Whether the word `w` ends at `end` in `source` (lower-cased), whole on its left when `bounded`. */
function wordEndsAt(source: string, end: number, w: string, bounded: boolean): boolean {
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
function beside(source: string, start: number, end: number, c: Check): boolean {
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
function holds(source: string, check: Check, context: boolean): boolean {
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
const FIRST_LINE_KEPT = 120;
const FACT_KEPT = 160;
const SEPARATOR = ' … ';

/** Framing stripped from a piece of text; a gap wider than a word context's reach (4 chars) in its place, so the words either side are not read as neighbours. */
function unframed(text: string): string {
  const GAP = '      ';
  return text
    .replace(HEADER, GAP)
    .replace(EXTRACTIVE_PREFIX, GAP)
    .replace(EXTRACTIVE_PREFIX_CUT, GAP)
    .replace(TURN_WORDS, GAP)
    .replace(TURN_RANGE, GAP)
    .replace(TURN_BRACKETED, GAP);
}

/**
 * One line of the extractive format, its prefix taken off: `first[ … fact]`, all of it cut
 * short when it is itself the first line of a summary being re-summarized (`cutAtEnd`).
 * Where the summarizer may have cut: the first line's end at 120 chars; a fact's start
 * (lineAround centres its window on the match, so a fact near a long line's end is cut at
 * its start only, at any length), and its end when it is a full 160-char window; the end
 * of the whole when an outer line cut it. Nowhere else: a line it kept whole ends where
 * its source line ends.
 */
function extractiveParts(content: string, cutAtEnd: boolean): Part[] {
  // A re-summary's line holds its source summary's first line, prefix and all.
  const nested = EXTRACTIVE_LINE.exec(content);
  if (nested) return extractiveParts(content.slice(nested[0].length), cutAtEnd || content.length >= FIRST_LINE_KEPT);
  // The first line was cut when the separator stands at 120 chars, or when there is no fact
  // and the line is 120 chars long; the fact was cut at its end when, after a separator, 158
  // to 160 chars remain.
  let firstCutAt = -1;
  let factCutAtEnd = false;
  if (content.startsWith(SEPARATOR, FIRST_LINE_KEPT)) firstCutAt = FIRST_LINE_KEPT;
  else if (content.length === FIRST_LINE_KEPT && !content.includes('\n')) firstCutAt = FIRST_LINE_KEPT;
  for (let k = content.indexOf(SEPARATOR); k >= 0; k = content.indexOf(SEPARATOR, k + 1)) {
    const factLength = content.length - (k + SEPARATOR.length);
    if (factLength >= FACT_KEPT - 2 && factLength <= FACT_KEPT) factCutAtEnd = true;
  }
  const out: Part[] = [];
  let from = 0;
  for (;;) {
    const ellipsis = content.indexOf('…', from);
    const to = ellipsis < 0 ? content.length : ellipsis;
    const text = unframed(content.slice(from, to));
    const last = ellipsis < 0;
    // After a separator: a fact's start (or a cut the first line itself quoted).
    const cutStart = from > 0 && content.startsWith(SEPARATOR, from - 2);
    const cutEnd = (firstCutAt >= 0 && to === firstCutAt + 1) || (last && (cutAtEnd || factCutAtEnd || firstCutAt === content.length));
    if (text.trim().length > 0) out.push({ text, cutStart, cutEnd });
    if (last) return out;
    from = ellipsis + 1;
  }
}

/**
 * The extractive line at `lines[i]` with the lines after it that have no prefix (an anchor
 * fact can span two lines), and the index of its last line.
 */
function extractiveRecord(lines: readonly string[], i: number): [string, number] {
  let record = lines[i]!;
  while (i + 1 < lines.length && !EXTRACTIVE_LINE.test(lines[i + 1]!) && !MORE_SPANS.test(lines[i + 1]!)) record += '\n' + lines[++i];
  return [record, i];
}

/**
 * The summary cut into parts: framing stripped, lines split at ellipses (no value is read
 * across one), each part marked with the ends where it may have been cut. An ellipsis an
 * author writes marks a cut on both sides; in the extractive format, only the summarizer's
 * own cuts count (see extractiveParts).
 */
function parts(summary: string): Part[] {
  const out: Part[] = [];
  const lines = summary.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    if (MORE_SPANS.test(raw)) continue;
    const prefix = EXTRACTIVE_LINE.exec(raw);
    if (prefix) {
      const [record, last] = extractiveRecord(lines, i);
      i = last;
      out.push(...extractiveParts(record.slice(prefix[0].length), false));
      continue;
    }
    const pieces = unframed(raw).replace(LIST_NUMBER, '$1').split('…');
    pieces.forEach((text, j) => {
      if (text.trim().length > 0) out.push({ text, cutStart: j > 0, cutEnd: j < pieces.length - 1 });
    });
  }
  return out;
}

const JOINER = /[./:-]/;
const isWordChar = (c: string | undefined) => c !== undefined && WORD_CHAR.test(c);
/**
 * The word before `at` across 1-4 characters that are not word characters (a word as
 * match.ts reads one: letters, digits and `_`, joined by `. / : -` inside), or null.
 */
function wordBefore(t: string, at: number): { word: string; at: number } | null {
  let end = at;
  while (end > 0 && at - end < 4 && !isWordChar(t[end - 1])) end--;
  if (end === at || end === 0 || !isWordChar(t[end - 1])) return null;
  let start = end - 1;
  while (start > 0 && (isWordChar(t[start - 1]) || (JOINER.test(t[start - 1]!) && isWordChar(t[start - 2])))) start--;
  return { word: t.slice(start, end), at: start };
}

/** The word after `end` across 0-4 characters that are not word characters, or null. */
function wordAfter(t: string, end: number): string | null {
  let start = end;
  while (start < t.length && start - end < 4 && !isWordChar(t[start])) start++;
  if (!isWordChar(t[start])) return null;
  let stop = start + 1;
  while (stop < t.length && (isWordChar(t[stop]) || (JOINER.test(t[stop]!) && isWordChar(t[stop + 1])))) stop++;
  return t.slice(start, stop);
}
const HAS_LETTER = /\p{L}/u;
const HAS_DIGIT = /\d/;
const LETTER_OR_NUMBER = /[\p{L}\p{N}]/u;
/** A digit, `_`, or a joiner between two characters: the mark of a number or an identifier (camelCase aside). */
const VALUE_MARK = /[\d_]|[./:-](?=.)/;
const CAMEL = /\p{Ll}\p{Lu}/u;
const NON_ASCII = /[^\x00-\x7f]/;

/** A character a value is made of or stuck to: letters, digits, `_`, the joiners `. / : -`, the markers `+ ± $ # ~`, and `%`. */
function pieceChar(c: number, ch: string): boolean {
  if (c < 128) return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 46 || c === 47 || c === 58 || c === 45 || c === 43 || c === 36 || c === 35 || c === 126 || c === 37;
  return ch === '±' || LETTER_OR_NUMBER.test(ch);
}

/**
 * The runs of `text` that could hold a value, into `out`: runs of piece characters (trailing
 * joiners off) with a digit, `_`, a joiner inside, or camelCase.
 */
function collectPieces(text: string, out: Set<string>): void {
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 32;
    // Surrogate halves are taken as piece characters: an astral letter or digit stays in its run.
    const inPiece = i < text.length && ((c >= 0xd800 && c <= 0xdfff) || pieceChar(c, text[i]!));
    if (inPiece) {
      if (start < 0) start = i;
      continue;
    }
    if (start < 0) continue;
    let end = i;
    while (end > start && JOINER.test(text[end - 1]!)) end--;
    const piece = text.slice(start, end);
    start = -1;
    if (piece.length === 0) continue;
    if (VALUE_MARK.test(piece) || (/[a-z][A-Z]/.test(piece) || (NON_ASCII.test(piece) && CAMEL.test(piece)))) out.add(piece);
  }
}

/** The lookups a summary needs, in order of first occurrence, deduplicated. */
function checks(summary: string): Check[] {
  const ps = parts(summary);
  if (ps.length === 0) return [];
  // One profile for the whole summary, over the distinct pieces of it that could hold a
  // value. A piece is a run of the characters a value is made of or stuck to (letters,
  // digits, `_`, the joiners `. / : -`, the markers `+ ± $ # ~` and `%`); profileQuery reads
  // a value within such a run (a sign two characters back, a percent sign right after), so
  // the pieces alone yield the summary's values. Kept: those with a digit (every number has
  // one), a joiner or `_` (a path, dotted or snake_case name), or camelCase. Spaced wider
  // than profileQuery's 4-character reach for word contexts, they also spare it compiling
  // context patterns, most of its cost (contexts are read below, at each value's
  // occurrences); and a summary repeats itself (`<returncode>0</returncode>` on every other
  // line), so the distinct pieces are a fraction of its text.
  const candidates = new Set<string>();
  for (const p of ps) collectPieces(p.text, candidates);
  const profile = profileQuery([...candidates].join('      '));
  const standalone = new Set(profile.standalone);
  const identifiers = new Set(profile.identifiers);
  // A camelCase identifier is a value by its case: another spelling of it that lost the
  // case (`valueerror` beside `ValueError`) is a plain word, not a value.
  const spelledAsIdentifier = new Map<string, boolean>();
  const isIdentifier = (spelling: string, v: string) => {
    let r = spelledAsIdentifier.get(spelling);
    if (r === undefined) spelledAsIdentifier.set(spelling, (r = profileQuery(spelling).identifiers.includes(v)));
    return r;
  };
  const lowers = ps.map((p) => p.text.toLowerCase());
  const starts: number[] = [];
  for (let i = 0, at = 0; i < ps.length; at += lowers[i]!.length + 1, i++) starts.push(at);
  // Where each part's text begins and ends, past the joiners and spaces a cut may leave.
  const firstWordAt = ps.map((p) => p.text.search(/[^\s./:-]/));
  const lastWordEnd = ps.map((p) => p.text.replace(/[\s./:-]+$/, '').length);
  const found: { at: number; check: Check }[] = [];
  // All parts, lower-cased, one after the other (each followed by a newline): one indexOf
  // per value over the whole summary, each occurrence mapped to its part.
  const joined = lowers.join('\n') + '\n';
  const partAt = (at: number) => pieceAt(starts, at);
  for (const v of profile.values) {
    const version = DOTTED_VERSION.test(v);
    const occ: { at: number; check: Check; bounded: boolean }[] = [];
    for (let g = joined.indexOf(v); g >= 0; g = joined.indexOf(v, g + 1)) {
      const i = partAt(g);
      const p = ps[i]!;
      const lower = lowers[i]!;
      const at = g - starts[i]!;
      const end = at + v.length;
      if (end > lower.length) continue;
      const caseBlind = lower.length !== p.text.length;
      const cutBefore = p.cutStart && at <= firstWordAt[i]!;
      const cutAfter = p.cutEnd && end >= lastWordEnd[i]!;
      const lb = leftBounded(lower, at);
      const rb = rightBounded(lower, end);
      const check: Check = { value: caseBlind ? v : p.text.slice(at, end), left: lb && !cutBefore, right: rb && !cutAfter, quote: false, version, caseBlind };
      const bounded = (lb || cutBefore) && (rb || cutAfter);
      if (bounded && standalone.has(v)) {
        // Its content-word neighbours, at most 4 characters of punctuation away. A word at
        // a cut may be a piece of a longer one: matched without its cut side's bound.
        const b = wordBefore(p.text, at);
        if (b && HAS_LETTER.test(b.word) && !HAS_DIGIT.test(b.word)) check.before = { word: b.word.toLowerCase(), bounded: !(p.cutStart && b.at <= firstWordAt[i]!) };
        const a = wordAfter(p.text, end);
        if (a !== null && HAS_LETTER.test(a) && !HAS_DIGIT.test(a)) check.after = a.toLowerCase();
      }
      occ.push({ at: g, bounded, check });
    }
    // The value's own occurrences are the bounded ones (`40` in `140` is not it); should
    // none be (a word like `3.-40`), each occurrence is held to the bounds it has.
    const bounded = occ.filter((o) => o.bounded);
    const own = bounded.length > 0 ? bounded : occ;
    // Spelled one way, the value is spelled as the word that made it one; spelled several
    // ways, each spelling must be an identifier by itself.
    const several = identifiers.has(v) && new Set(own.map((o) => o.check.value)).size > 1;
    for (const o of own) {
      if (several && !o.check.caseBlind && !isIdentifier(o.check.value, v)) continue;
      found.push(o);
    }
  }
  // Neighbours are content words, as match.ts's contexts take them: letters, no digits, no
  // stop word. Stop words are match.ts's: the terms of a profile of the neighbours are those
  // that are not (of single letters, only `a` and `i` are stop words).
  const neighbours = new Set<string>();
  for (const { check: c } of found) {
    if (c.before) neighbours.add(c.before.word);
    if (c.after) neighbours.add(c.after);
  }
  if (neighbours.size > 0) {
    const terms = new Set(profileQuery([...neighbours].join('      ')).terms);
    // Terms are words trimmed of `. : / _ -` at either end (`_op_priority` → `op_priority`).
    const content = (w: string) => {
      const t = w.replace(/^[.:/_-]+|[.:/_-]+$/g, '');
      return t.length > 1 ? terms.has(t) : t.length === 1 && t !== 'a' && t !== 'i';
    };
    for (const { check: c } of found) {
      if (c.before && !content(c.before.word)) delete c.before;
      if (c.after && !content(c.after)) delete c.after;
    }
  }
  ps.forEach((p, i) => {
    for (const q of quotedParts(p.text)) found.push({ at: starts[i]! + p.text.indexOf(q), check: { value: q, left: false, right: false, quote: true, version: false, caseBlind: false } });
  });
  found.sort((a, b) => a.at - b.at);
  const seen = new Set<string>();
  const out: Check[] = [];
  for (const { check: c } of found) {
    const key = `${+c.quote}${+c.left}${+c.right}${+c.caseBlind}${c.before ? +c.before.bounded : '-'}\u0000${c.value}\u0000${c.before?.word ?? ''}\u0000${c.after ?? ''}`;
    if (!seen.has(key)) (seen.add(key), out.push(c));
  }
  return out;
}

/**
 * The values a text states, as they are compared: verbatim (case kept), framing excluded;
 * numbers with their sign or percent sign, identifiers, and the contents of quoted parts.
 */
export function summaryValues(text: string): string[] {
  return [...new Set(checks(text).map((c) => c.value))];
}

/** The extractive line prefix with its cited turns. */
const EXTRACTIVE_CITE = /^- t(\d+)(?:–(\d+))? [^\s:]+: /;

/**
 * The summary's lines in the extractive format: the turns each cites, and its quoted pieces
 * (the text after the prefix, split at the summarizer's separator), each of which that
 * summarizer copies verbatim from the span it cites.
 */
function extractiveQuotes(summary: string): { from: number; to: number; pieces: string[] }[] {
  const out: { from: number; to: number; pieces: string[] }[] = [];
  const lines = summary.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = EXTRACTIVE_CITE.exec(lines[i]!);
    if (!m) continue;
    const [whole, last] = extractiveRecord(lines, i);
    i = last;
    const record = whole.slice(m[0].length);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    out.push({ from, to, pieces: record.split(SEPARATOR).map((p) => p.trim()).filter((p) => p.length > 0) });
  }
  return out;
}

/**
 * Whether every value `summary` states occurs, verbatim and bounded, in at least one of
 * `sources` (the raw spans the pass evicts, and the texts of the summaries it re-summarizes).
 * An empty summary, or one that states no value, is grounded.
 *
 * A line in the extractive format (`- t12–15 role: first line … fact`) is a quote of the
 * span it cites: each of its pieces must occur verbatim in a source covering the cited
 * turns (any source, when the sources carry no turns or none covers them). A piece that does
 * not makes its values ungrounded — those the cited turns do not hold, or all of them when
 * they hold each one elsewhere: a listing's line number, a test count another run printed,
 * stated beside the wrong line.
 */
export function checkGrounding(summary: string, sources: readonly (string | GroundingSource)[], options: GroundingOptions = {}): GroundingResult {
  const texts = sources.map((s) => (typeof s === 'string' ? s : s.text));
  const result = checkValues(summary, texts, options);
  const misquoted = new Set<string>();
  for (const q of extractiveQuotes(summary)) {
    const covering = sources.filter((s): s is GroundingSource => typeof s !== 'string' && s.turnStart <= q.from && q.to <= s.turnEnd).map((s) => s.text);
    const within = covering.length > 0 ? covering : texts;
    for (const piece of q.pieces) {
      if (within.some((t) => t.includes(piece))) continue;
      // The values the cited turns do not hold are the misquote; when they hold each one
      // (elsewhere than the quote says), all of them are.
      const wrong = checkValues(piece, within, options).ungrounded;
      for (const v of wrong.length > 0 ? wrong : summaryValues(piece)) misquoted.add(v);
    }
  }
  if (misquoted.size === 0) return result;
  const bad = new Set([...result.ungrounded, ...misquoted]);
  const values = [...new Set([...result.values, ...misquoted])];
  return { grounded: false, values, ungrounded: values.filter((v) => bad.has(v)) };
}

function checkValues(summary: string, sources: readonly string[], options: GroundingOptions): GroundingResult {
  const context = options.context ?? true;
  const cs = checks(summary);
  let lowered: string[] | undefined;
  const bad = new Set<string>();
  for (const c of cs) {
    let ok = false;
    if (c.caseBlind) {
      lowered ??= sources.map((s) => s.toLowerCase());
      for (const s of lowered) {
        if (c.quote ? s.includes(c.value) : holds(s, c, context)) {
          ok = true;
          break;
        }
      }
    } else {
      for (const s of sources) {
        if (c.quote ? s.includes(c.value) : holds(s, c, context)) {
          ok = true;
          break;
        }
      }
    }
    if (!ok) bad.add(c.value);
  }
  const values = [...new Set(cs.map((c) => c.value))];
  return { grounded: bad.size === 0, values, ungrounded: values.filter((v) => bad.has(v)) };
}
