/** The values a summary states, and the lookup each one needs in the sources. */
import { pieceAt, profileQuery, quotedParts } from '../match.js';
import { type Check, DOTTED_VERSION, WORD_CHAR, leftBounded, rightBounded } from './holds.js';
import { parts } from './parts.js';

export const JOINER = /[./:-]/;
export const isWordChar = (c: string | undefined) => c !== undefined && WORD_CHAR.test(c);
/**
 * The word before `at` across 1-4 characters that are not word characters (a word as
 * match.ts reads one: letters, digits and `_`, joined by `. / : -` inside), or null.
 */
export function wordBefore(t: string, at: number): { word: string; at: number } | null {
  let end = at;
  while (end > 0 && at - end < 4 && !isWordChar(t[end - 1])) end--;
  if (end === at || end === 0 || !isWordChar(t[end - 1])) return null;
  let start = end - 1;
  while (start > 0 && (isWordChar(t[start - 1]) || (JOINER.test(t[start - 1]!) && isWordChar(t[start - 2])))) start--;
  return { word: t.slice(start, end), at: start };
}

/** The word after `end` across 0-4 characters that are not word characters, or null. */
export function wordAfter(t: string, end: number): string | null {
  let start = end;
  while (start < t.length && start - end < 4 && !isWordChar(t[start])) start++;
  if (!isWordChar(t[start])) return null;
  let stop = start + 1;
  while (stop < t.length && (isWordChar(t[stop]) || (JOINER.test(t[stop]!) && isWordChar(t[stop + 1])))) stop++;
  return t.slice(start, stop);
}
export const HAS_LETTER = /\p{L}/u;
export const HAS_DIGIT = /\d/;
export const LETTER_OR_NUMBER = /[\p{L}\p{N}]/u;
/** A digit, `_`, or a joiner between two characters: the mark of a number or an identifier (camelCase aside). */
export const VALUE_MARK = /[\d_]|[./:-](?=.)/;
export const CAMEL = /\p{Ll}\p{Lu}/u;
export const NON_ASCII = /[^\x00-\x7f]/;

/** A character a value is made of or stuck to: letters, digits, `_`, the joiners `. / : -`, the markers `+ ± $ # ~`, and `%`. */
export function pieceChar(c: number, ch: string): boolean {
  if (c < 128) return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 46 || c === 47 || c === 58 || c === 45 || c === 43 || c === 36 || c === 35 || c === 126 || c === 37;
  return ch === '±' || LETTER_OR_NUMBER.test(ch);
}

/**
 * The runs of `text` that could hold a value, into `out`: runs of piece characters (trailing
 * joiners off) with a digit, `_`, a joiner inside, or camelCase.
 */
export function collectPieces(text: string, out: Set<string>): void {
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
export function checks(summary: string): Check[] {
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
