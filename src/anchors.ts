/**
 * Anchors: state-establishing spans whose loss changes later behaviour (a constraint, a
 * number, a configuration value). The host may flag one (`anchor: true`); otherwise these
 * rules detect them at append time, and the flag is stored in the record, so what counts as
 * an anchor is part of the log, not recomputed later.
 *
 * | rule            | example                                   |
 * |-----------------|-------------------------------------------|
 * | quantity        | `40 req/s`, `3.5ms`, `512 MiB`, `95%`, `Ran 173 tests in 1.479s` |
 * | constraint      | "must", "never", "at most", "no more than", "limit", "required" next to a number, or in a user/system turn |
 * | configuration   | `RATE_LIMIT=40`, `timeout: 30`, `--max-retries 5` |
 *
 * Each detected anchor yields one pinned fact: the verbatim line around the first match,
 * which audits and compaction probes query for.
 */
import { ROLE_NAMES } from './native.js';

const UNIT =
  String.raw`(?:req\/s|requests?\/s(?:ec)?|rps|qps|tps|ops\/s|[kKmMgGtT]i?[bB](?:\/s)?|bytes?|ms|µs|us|ns|s|sec(?:onds?)?|min(?:utes?)?|h(?:ours?)?|days?|%|percent|tokens?|chars?|lines?|px|[kKmMgG]?Hz|retries|attempts|workers|threads|connections|tests?|passed|failed|errors?|skipped|items?)`;
const QUANTITY = new RegExp(String.raw`(?<![\w.])\d+(?:[.,]\d+)?\s?${UNIT}(?![\w])`);
const CONSTRAINT =
  /\b(?:must(?: not)?|never|always|at most|at least|no more than|no fewer than|no less than|up to|limit(?:ed|s)?|max(?:imum)?|min(?:imum)?|required?|do not|don't|shall(?: not)?|cannot|can't|exceed)\b/i;
const CONFIG = /(?:^|\s)(?:--?[a-z][\w-]*[ =]|[A-Za-z_][\w.]*\s?[=:]\s?)["']?\d[\w.]*/m;
const HAS_NUMBER = /\d/;
/**
 * What the facts found depend on: the rules' patterns and the version of the code that cuts
 * the fact around a match (lineAround, distinctiveLine). Facts kept on disk by other rules
 * are not used (src/store/facts.ts). Raise the version with any change to how a fact is cut.
 */
export const DETECTION_RULES = `1\u0000${QUANTITY.source}\u0000${CONFIG.source}/${CONFIG.flags}\u0000${CONSTRAINT.source}/${CONSTRAINT.flags}`;

export type AnchorRule = 'quantity' | 'constraint' | 'configuration';

export interface AnchorMatch {
  rule: AnchorRule;
  /** Verbatim substring of the text to pin (the line around the match, at most 160 chars). */
  fact: string;
}

/** Returns the first anchor rule that matches, with the fact to pin; null if none. */
export function detectAnchor(text: string, role: string): AnchorMatch | null {
  if (text.length === 0) return null;
  // The whole text is scanned, however long: a constraint stated at the end of a long tool
  // output is as much an anchor as one at its head (one linear pass per rule).
  const head = text;
  const q = QUANTITY.exec(head);
  if (q) return { rule: 'quantity', fact: lineAround(text, q.index, q[0].length) };
  const k = CONFIG.exec(head);
  if (k) return { rule: 'configuration', fact: lineAround(text, k.index, k[0].length) };
  const c = CONSTRAINT.exec(head);
  if (c) {
    const line = lineAround(text, c.index, c[0].length);
    if (HAS_NUMBER.test(line) || role === 'user' || role === 'system') return { rule: 'constraint', fact: line };
  }
  return null;
}

/** The trimmed line containing [at, at+len), cut to at most `max` chars around the match. */
export function lineAround(text: string, at: number, len: number, max = 160): string {
  let start = text.lastIndexOf('\n', at) + 1;
  let end = text.indexOf('\n', at + len);
  if (end < 0) end = text.length;
  while (start < at && /\s/.test(text[start]!)) start++;
  while (end > at + len && /\s/.test(text[end - 1]!)) end--;
  if (end - start > max) {
    const mid = at + Math.floor(len / 2);
    start = Math.max(start, mid - Math.floor(max / 2));
    end = Math.min(end, start + max);
    // Never cut a surrogate pair: the fact must stay valid UTF-16 to be stored and queried.
    if (/[\uDC00-\uDFFF]/.test(text[start] ?? '')) start++;
    if (/[\uD800-\uDBFF]/.test(text[end - 1] ?? '')) end--;
  }
  return text.slice(start, end);
}

/**
 * A value that was never stated, made from a real one: every number in `fact` is changed
 * (digits shifted), and if it has none, its longest identifier gets a character changed.
 * `variant` picks among deterministic perturbations so a caller can retry on collision.
 */
export function perturb(fact: string, variant = 0): string {
  // Each run of ASCII digits bumped, in one scan (a pass perturbs every anchor it evicts).
  let out = '';
  let last = 0;
  const n = fact.length;
  for (let i = 0; i < n; ) {
    if (!isDigit(fact.charCodeAt(i))) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < n && isDigit(fact.charCodeAt(j))) j++;
    out += fact.slice(last, i) + bump(fact.slice(i, j), variant);
    last = i = j;
  }
  if (last > 0) return out + fact.slice(last);
  const ids = fact.match(IDENTIFIERS) ?? [];
  const longest = ids.sort((a, b) => b.length - a.length)[0];
  if (!longest) return `${fact} ${variant}7`;
  // The letter nearest the middle, changed to another letter of the same case: never a
  // `_` (turned into punctuation it would only split the identifier, which a tokenizer
  // folds away) and never a case-only change (search is case-insensitive, so that would be
  // the same value, not a never-stated one).
  const mid = Math.floor(longest.length / 2);
  let i = mid;
  for (let d = 0; d < longest.length; d++) {
    if (/[A-Za-z]/.test(longest[mid + d] ?? '')) { i = mid + d; break; }
    if (/[A-Za-z]/.test(longest[mid - d] ?? '')) { i = mid - d; break; }
  }
  const c = longest[i]!;
  const lower = c.toLowerCase();
  const shifted = String.fromCharCode(((lower.charCodeAt(0) - 97 + 1 + (variant % 25)) % 26) + 97);
  const swapped = c === lower ? shifted : shifted.toUpperCase();
  return fact.replace(longest, longest.slice(0, i) + swapped + longest.slice(i + 1));
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/** A digit run `m` plus (1 + variant % 7)·10^min(len − 1, variant % 3), its width kept. */
function bump(m: string, variant: number): string {
  const step = 1 + (variant % 7);
  const at = Math.max(0, Math.min(m.length - 1, variant % 3));
  // Up to 15 digits the sum (< 1.7·10^15) is exact in a double: no BigInt to build.
  const s = m.length <= 15 && Number.isInteger(variant) ? String(Number(m) + step * 10 ** at) : (BigInt(m) + BigInt(step) * 10n ** BigInt(at)).toString();
  // Keep the width so formatting (zero padding, alignment) still looks real.
  return s.length < m.length ? s.padStart(m.length, '0') : s;
}

/** The identifiers `perturb` changes a letter of, in a fact without digits. */
const IDENTIFIERS = /[A-Za-z_][A-Za-z0-9_]{3,}/g;
const IDENTIFIER = new RegExp(IDENTIFIERS.source);
const DIGIT = /\d/;
const MULTI_DIGIT = /\d{2,}/;

/**
 * Whether some `perturb(fact, variant)` can be a distinctive value (`distinctiveValue`):
 * false for a fact without digits that has an identifier, whose perturbations change one
 * letter of it for another and so hold no digit, which every distinctive value has. A caller
 * that needs a distinctive perturbation skips such a fact without building any.
 */
export const perturbsToValue = (fact: string): boolean => DIGIT.test(fact) || !IDENTIFIER.test(fact);

/**
 * The value phrases of a perturbed fact: each changed number with the word next to it on
 * either side (`collected 15 items`, `ID: 2`). A perturbation whose every such phrase is
 * stated somewhere in the transcript is near-true — "collected 15 items" was printed by
 * another run — not a never-stated value, and makes no probe. Null when some number has no
 * word beside it (then the perturbation cannot be near-true by its words).
 */
export function valuePhrases(perturbed: string): string[] | null {
  const around = /(?:[\p{L}_][\p{L}\p{N}_]*[^\p{L}\p{N}\n]{1,3})?[+\-]?\d+(?:[.,]\d+)*%?(?:[^\p{L}\p{N}\n]{1,3}[\p{L}_][\p{L}\p{N}_]*)?/gu;
  const phrases = [...perturbed.matchAll(around)].map((m) => m[0]);
  if (phrases.length === 0 || phrases.some((p) => !/\p{L}/u.test(p))) return null;
  return phrases;
}

/**
 * A fact with a distinctive value: a multi-digit number, a decimal, a number with a unit,
 * or an identifier with digits. A fact whose numbers are all single bare digits (`table_id
 * = 1`, `found 5 actions`) makes a weak probe: its perturbation is usually stated somewhere
 * else in other words (`table_id=2`), true in substance, so it is not used as a
 * never-stated probe.
 */
export const distinctiveValue = (fact: string): boolean =>
  // A multi-digit number first, on its own: most facts have one, and it needs no Unicode scan.
  MULTI_DIGIT.test(fact) ||
  /\d[.,]\d|[\p{L}_]\d|\d(?:\s?(?:ms|µs|us|ns|s|sec|seconds?|mins?|minutes?|h|hours?|days?|%|[kKmMgGtT]i?[bB]|bytes?|px|tokens?|chars?|lines?|tests?|items?|errors?|passed|failed|skipped|warnings?|req\/s|rps|qps|workers|threads|retries|attempts|connections))(?![\p{L}])/u.test(fact);

/** The fact an anchor pins: what detection matched, or its first non-empty line for host-flagged anchors. */
export function anchorFact(text: string, role: number): string | null {
  const m = detectAnchor(text, ROLE_NAMES[role] ?? 'other');
  if (m) return m.fact;
  return distinctiveLine(text);
}

/** The longest line of at most 160 chars (verbatim), or null for a span with no text. */
export function distinctiveLine(text: string): string | null {
  let best: string | null = null;
  let at = 0;
  while (at <= text.length) {
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    const trimmed = text.slice(at, end).trim();
    if (trimmed.length >= 8 && (!best || trimmed.length > best.length)) {
      best = trimmed.length > 160 ? lineAround(text, at + text.slice(at, end).indexOf(trimmed), trimmed.length) : trimmed;
    }
    at = end + 1;
  }
  return best;
}
