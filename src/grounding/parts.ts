

export interface Part {
  text: string;
  /** The text may start / end mid-word: a value touching that end need not be bounded there. */
  cutStart: boolean;
  cutEnd: boolean;
}

/** The extractive summarizer's line prefix: `- t123 role: ` or `- t123–125 role: `. */
export const EXTRACTIVE_PREFIX = /(?<!\S)- t\d+(?:–\d+)? [^\s:]+: /g;
export const EXTRACTIVE_LINE = /^- t\d+(?:–\d+)? [^\s:]+: /;
/** The same prefix cut short at the end of a part (a re-summary keeps 120 chars of a line of prefixes). */
export const EXTRACTIVE_PREFIX_CUT = /(?<!\S)- t\d*(?:–\d*)?(?: [^\s:]*:?)?\s*(?=…|$)/g;
/** Its line for spans that did not fit: `- … 4 more span(s)`. */
export const MORE_SPANS = /^\s*-?\s*…\s*\d+ more span\(s\)\s*$/;
/** The window's summary header (ContextWindow.messages), should a host hand it back in. */
export const HEADER = /\[summary of turns [^\]\n]*\]/gi;
/** "turn 12", "turns 3-9", "Turns 3–9", "turns 3 to 9", "turns 3, 5 and 9". */
export const TURN_WORDS = /(?<![\p{L}\p{N}_])turns?\s+\d+(?:\s*(?:[–—-]|to|through|and|,)\s*t?\d+)*(?![\p{L}\p{N}_])/giu;
/** `t12–15`, `t12-t15`, and a lone turn reference in brackets: `(t12)`, `[t12–15]`. */
export const TURN_RANGE = /(?<![\p{L}\p{N}_])t\d+\s*[–—-]\s*t?\d+(?![\p{L}\p{N}_])/gu;
export const TURN_BRACKETED = /[([]t\d+[)\]]/g;
/** List numbering at the start of a line: `1.`, `12)`. */
export const LIST_NUMBER = /^(\s*)\d+[.)](?=\s)/;

export const FIRST_LINE_KEPT = 120;
export const FACT_KEPT = 160;
export const SEPARATOR = ' … ';

/** Framing stripped from a piece of text; a gap wider than a word context's reach (4 chars) in its place, so the words either side are not read as neighbours. */
export function unframed(text: string): string {
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
export function extractiveParts(content: string, cutAtEnd: boolean): Part[] {
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
export function extractiveRecord(lines: readonly string[], i: number): [string, number] {
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
export function parts(summary: string): Part[] {
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

export const EXTRACTIVE_CITE = /^- t(\d+)(?:–(\d+))? [^\s:]+: /;

/**
 * The summary's lines in the extractive format: the turns each cites, and its quoted pieces
 * (the text after the prefix, split at the summarizer's separator), each of which that
 * summarizer copies verbatim from the span it cites.
 */
export function extractiveQuotes(summary: string): { from: number; to: number; pieces: string[] }[] {
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
