/** The hit-rate monitor's probes: what one is, and the constants of the per-pass probe. */
import type { QueryAnalysis } from '../query.js';


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
  /** Built on first use: most probes are ruled out by their values before any analysis. */
  analysis?: QueryAnalysis;
  /** The numbers of the probe: a summary missing any of them cannot answer it. */
  numbers: string[];
  raw: boolean;
  summary: boolean;
}

/** The digit runs of a probe (the same lower-cased or not): every one must be in a text that answers it. */
export const numbersOf = (q: string): string[] => [...new Set(q.match(/\d+/g) ?? [])];

/** Anchors of the turns a pass's summary speaks for, probed per pass besides the session-wide set. */
export const LOCAL_PROBES = 64;
/** Fewer pairs than this say too little for the pass's own rate to be judged on its own. */
export const MIN_LOCAL_PAIRS = 4;
/** The seed's rule: a rise of more than 15% over one pass. */
export const HIT_RATE_RISE = 0.15;

