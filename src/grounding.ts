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
import { holds } from './grounding/holds.js';
import { extractiveQuotes } from './grounding/parts.js';
import { checks, summaryValues } from './grounding/values.js';

export { summaryValues };

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
