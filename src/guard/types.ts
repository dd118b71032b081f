/** What a compaction pass is asked, and the receipt it gives. */

export interface CompactionRequest {
  /** Ids leaving the live window: raw spans, or earlier summaries when re-summarizing. */
  evict: number[];
  /** Entries this pass replaces with its summary: summaries only. */
  rewrite?: number[];
  summary: { text: string; turnStart: number; turnEnd: number; tokens?: number };
  /** Override the store's anchor policy for this pass. */
  policy?: 'refuse' | 'spill';
}

export interface CompactionReceipt {
  pass: number;
  summaryId: number;
  /** Raw ids evicted. */
  evicted: number[];
  evictedSummaries: number[];
  /** Anchors kept verbatim in the window (policy `spill`). */
  spilled: number[];
  /** Summaries this pass superseded. */
  superseded: number[];
  /** Raw span ids refused (always empty on a returned receipt: a refusal throws under `refuse`). */
  refused: number[];
  anchorsChecked: number;
  /** Max distance between an evicted anchor and what its probe returned (0: the anchor itself). */
  divergence: number;
  hitRateBefore: number | null;
  hitRateAfter: number | null;
  eventId: number;
  /** Where the pass's time went, in µs. The guard's own work is `check + anchors + monitor + record`, with `grounding` beside it; `summary` is the store appending and indexing the new summary, which a pass costs with or without a guard. */
  timing: PassTiming;
}

/** Microseconds per phase of one compaction pass (wall clock, this process). */
export interface PassTiming {
  /** Rules 1 and 2: reading the named ids back and checking them by identity. */
  check: number;
  /** Rule 4: the probe of every evicted anchor against the pre-compaction index. */
  anchors: number;
  /** The hit-rate monitor: before and after over the probe set. */
  monitor: number;
  /** The pass's event: its JSON built once, applied to the guard state and the verdict after the append, and any further event (a degrade, a verdict change) appended (rule 9). */
  record: number;
  /** The one append of the summary and its pass's event record (both rows, one crossing, one write), and indexing the summary (lexical + vector). */
  summary: number;
  /** Checking that every value the summary states is stated by what it replaces. */
  grounding: number;
}
