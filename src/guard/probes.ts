/** The hit-rate monitor's probes: what one is, and the constants of the per-pass probe. */
import type { MatchPolicy } from '../match.js';
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
  /** Built on first use: most probes are ruled out by their digits before any analysis. */
  analysis?: QueryAnalysis;
  /** What a text must hold to answer the probe by search's rule (see {@link requiredDigits}). */
  numbers: string[];
  raw: boolean;
  summary: boolean;
}

/**
 * The digit runs a text must hold to answer `query` by search's rule for one candidate
 * (`answersText`), or none where that rule does not require them all. For a statement (not
 * a question) without a quoted part (no backtick or double quote), an answer holds the whole
 * query verbatim or `matches` it, and under a policy that requires every value
 * (minValueCoverage ≥ 1) `matches` requires each of the query's values — every word holding
 * a digit is one — in the text, so each digit run too. A quoted part relaxes that (the rest
 * need only not contradict the quote: "ran `npm run build` with 4822 errors" answers "ran
 * `npm run build` on node18 with 4822 errors") and a question is judged by the miss decision
 * (a day or year it names is matched against the turn's fields): for those nothing is
 * required, and the monitor asks `answersText` itself.
 */
export function requiredDigits(query: string, policy: MatchPolicy): string[] {
  if (policy.minValueCoverage < 1 || isQuestion(query) || /[`"]/.test(query)) return [];
  return [...new Set(query.match(/\d+/g) ?? [])];
}

/** Anchors of the turns a pass's summary speaks for, probed per pass besides the session-wide set. */
export const LOCAL_PROBES = 64;
/** Fewer pairs than this say too little for the pass's own rate to be judged on its own. */
export const MIN_LOCAL_PAIRS = 4;
/** The seed's rule: a rise of more than 15% over one pass. */
export const HIT_RATE_RISE = 0.15;

