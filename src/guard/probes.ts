/** The hit-rate monitor's probes: what one is, and the constants of the per-pass probe. */
import { isIdentifier, type MatchPolicy, quotedParts, WORD } from '../match.js';
import { isQuestion, type QueryAnalysis } from '../query.js';


/**
 * A probe of the hit-rate monitor: a stated anchor fact (positive) or a perturbation of it
 * that the transcript never states (negative). A probe hits when the agent's search over
 * raw spans or over summaries does not answer "not in transcript". The raw part is
 * measured when the probe joins the set: no pass can change the raw namespace (rules 1 and
 * 5; audits check that it still returns what it holds). The summary part is what a pass
 * can change, and only by adding a summary (superseded ones stay searchable), so each pass
 * asks just that summary, by the rule search's miss decision applies to one candidate
 * (`answersText`). That is equal to re-running the whole set except where the new summary
 * would not have ranked among search's judged candidates: the check errs towards a hit,
 * the direction that raises the rate.
 */
export interface Probe {
  query: string;
  positive: boolean;
  /** Built on first use: most probes are ruled out by what an answer must hold before any analysis. */
  analysis?: QueryAnalysis;
  /**
   * Digit runs and quoted parts a text must hold to answer the probe by search's rule (see
   * {@link requiredParts}), built on first need: a text lacking one of the probe's
   * {@link requiredDigits} lacks one of them too. A positive probe is a raw hit and never asks.
   */
  required?: { numbers: string[]; quoted: string[] };
  /** What every answer holds of the probe's digits ({@link requiredDigits}); null: nothing known. */
  digits: readonly string[] | null;
  raw: boolean;
  summary: boolean;
}

/**
 * What a text must hold to answer `query` by search's rule for one candidate (`answersText`),
 * as far as that rule requires it of every answer. A question is judged by the miss decision
 * (a day or year it names is matched against the turn's fields): nothing. A statement is
 * answered by a text that holds it whole, or holds each of its quoted parts (`quotedParts`:
 * in the text, or case-folded in the lower-cased text) and is consistent with it, or, when
 * it has no quoted part, `matches` it — which, under a policy requiring every value
 * (minValueCoverage ≥ 1), needs each of its values in the lower-cased text (`profileQuery`:
 * every word holding a digit, with a sign or percent sign stuck to it, and every identifier
 * of 5+ characters that is a path, a dotted or snake_case name or camelCase). Those are
 * `numbers` here. Of an ASCII statement they are its lower-cased words holding a digit and
 * its identifiers, each within a value `matches` requires and within the lower-cased
 * statement, so a text holding the statement whole holds them too (lower-casing ASCII is
 * per character). Of any other statement, only its digit runs: lower-casing some letters
 * depends on their neighbours (a final sigma), and a word may differ where a digit run
 * cannot. The digits of a statement with a quoted part are not required: a digit identifier
 * outside the quote need only not be contradicted ("ran `npm run build` with 4822 errors"
 * answers "ran `npm run build` on node18 with 4822 errors").
 */
export function requiredParts(query: string, policy: MatchPolicy): { numbers: string[]; quoted: string[] } {
  if (isQuestion(query)) return { numbers: [], quoted: [] };
  // A quoted part is backticked or double-quoted: a query with neither quote has none.
  const quoted = query.includes('`') || query.includes('"') ? quotedParts(query) : [];
  const numbers = quoted.length === 0 && policy.minValueCoverage >= 1 ? (ASCII.test(query) ? asciiValues(query) : [...new Set(query.match(/\d+/g) ?? [])]) : [];
  return { numbers, quoted };
}

const ASCII = /^[\x00-\x7f]*$/;

/** An ASCII statement's values as `profileQuery` finds them, without the sign or percent sign it adds (lower-cased, each once). */
function asciiValues(query: string): string[] {
  const out: string[] = [];
  for (const m of query.matchAll(WORD)) {
    const w = m[0];
    if (!/\d/.test(w) && !isIdentifier(w)) continue;
    const v = w.toLowerCase();
    if (!out.includes(v)) out.push(v);
  }
  return out;
}

/**
 * The digit runs of a statement without a quote character, under a policy requiring every
 * value (minValueCoverage ≥ 1): each lies within a part {@link requiredParts} requires (of an
 * ASCII statement, within the word holding it, which a WORD match never cuts — digits are word
 * characters; of any other, it is one), so a lower-cased text lacking one lacks a required part
 * and cannot answer. A cheap necessary condition, asked before requiredParts is built. Null for
 * a question, a statement with a quote character or a policy not requiring every value, whose
 * required parts need not cover their digits.
 */
export function requiredDigits(query: string, policy: MatchPolicy): string[] | null {
  if (policy.minValueCoverage < 1 || query.includes('`') || query.includes('"') || isQuestion(query)) return null;
  return query.match(DIGIT_RUNS) ?? [];
}

const DIGIT_RUNS = /\d+/g;

/** Whether a text (and its lower-cased form) holds what {@link requiredParts} says an answer must. */
export function holdsRequired(p: { numbers: readonly string[]; quoted: readonly string[] }, text: string, lowered: string): boolean {
  return p.numbers.every((n) => lowered.includes(n)) && p.quoted.every((q) => text.includes(q) || lowered.includes(q.toLowerCase()));
}

/** Anchors of the turns a pass's summary speaks for, probed per pass besides the session-wide set. */
export const LOCAL_PROBES = 64;
/** Fewer pairs than this say too little for the pass's own rate to be judged on its own. */
export const MIN_LOCAL_PAIRS = 4;
/** The seed's rule: a rise of more than 15% over one pass. */
export const HIT_RATE_RISE = 0.15;

