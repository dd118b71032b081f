/**
 * The store's public shapes: options, what a host appends, what comes back (spans, hits,
 * search results, stats).
 */
import type { Durability, RecordKindName } from '../native.js';
import type { MatchPolicy } from '../match.js';
import type { Support } from '../support.js';
import type { VerdictState } from '../verdict.js';
import type { ReplicaOptions } from '../replica/index.js';
import type { CatchUpProgress } from '../catchup.js';

/** Host embedder: returns one vector of `dims` floats per text. */
export type Embedder = (texts: string[]) => Promise<Float32Array[]>;

export interface SpanStoreOptions {
  /** How long the session must stay answerable, in seconds (default 30 days). */
  horizonSeconds?: number;
  /** How long raw spans are retained, in seconds (default: forever). Shorter than the horizon is refused unless `bestEffort`. */
  rawTtlSeconds?: number;
  /** Accept retention shorter than the horizon; the verdict can then never be `lossless`. */
  bestEffort?: boolean;
  /** `sync`: durable before append resolves; `group` (default): shared fdatasync; `none`: page cache, flushed at close; `replicated` (needs `replica`): `group`, and append resolves once its records are in the object store. */
  durability?: Durability | 'replicated';
  /** Ship the log to S3-compatible object storage (docs/replication.md). */
  replica?: ReplicaOptions;
  /** Host embedder; default: the built-in deterministic feature-hashing embedder. */
  embedder?: Embedder;
  /** Vector dimensions (default 256 for the built-in embedder; required with `embedder`). */
  dims?: number;
  /** Audit every this many compactions (default 50; above 500 the verdict cannot be lossless). */
  auditEvery?: number;
  /** Verdict turns `unknown` after this many compactions without a passing audit (default 50). */
  unknownAfter?: number;
  /** What compaction does with anchors it cannot verify: throw (`refuse`, default) or keep them in the window (`spill`). */
  policy?: 'refuse' | 'spill';
  /**
   * The seed's ε: the largest cosine distance allowed between an evicted anchor and the span
   * its probe returns first (0 when that span states the probe verbatim); above it the anchor
   * is refused (or spilled). Default 0.1; 0..2.
   */
  maxDivergence?: number;
  /**
   * A summary that states a value none of the spans it replaces states (src/grounding.ts):
   * `mark` (default) accepts the pass, records the values and never returns the summary as
   * evidence for them; `refuse` throws UNGROUNDED_SUMMARY and records the refusal.
   */
  grounding?: 'mark' | 'refuse';
  /** Open without the writer lock; no writes. Sees records other processes append after `refresh()`. */
  readOnly?: boolean;
  /** Segment size in bytes (default 64 MiB). */
  segmentBytes?: number;
  /** Largest text accepted, in UTF-8 bytes (default 16 MiB). */
  maxTextBytes?: number;
  /** Vector scalar kind (default `f16`). */
  vectorScalar?: 'f32' | 'f16' | 'i8';
  /**
   * From this many vectors of a kind on, the vector index is partitioned at the next
   * checkpoint or open (an inverted file: a search scans the nearest lists to a fifth of the
   * rows, on two threads, instead of every row; docs/VECTOR_FORMAT.md, "Partitions").
   * Default `Infinity`: never. An integer of at least 64. A partitioned index stays so when
   * reopened without the option; `rebuild()` builds it by the option in force.
   */
  vectorPartitionAbove?: number;
  /** Probe-set size for the per-pass hit-rate monitor: this many stated anchor facts, drawn across the session, and as many never-stated perturbations (default 16 + 16; each pass also probes the anchors its own summary speaks for). */
  hitRateProbes?: number;
  /** Facts checked per scheduled audit (default 32). */
  auditSample?: number;
  /** Override the honest-miss thresholds. */
  matchPolicy?: MatchPolicy;
  /**
   * An open that finds an index more than this many ids behind the log (a rebuild from the
   * log, a reopen after many unindexed appends) resolves before the catch-up ends: the
   * indexes catch up in the background, by jobs on the thread pool (src/catchup.ts).
   * Until they are caught up the store answers with what is indexed and says so:
   * `stats().indexLag` has code `CATCHING_UP`, the verdict is not lossless, and compactions,
   * audits and `catchUp()` wait for the catch-up. Default 10,000; `Infinity`: open always
   * waits (still by pool jobs: the event loop runs meanwhile).
   */
  backgroundCatchUpAbove?: number;
  /** Called after each catch-up job with where the index stands (src/catchup.ts `CatchUpProgress`). */
  onCatchUp?: (progress: CatchUpProgress) => void;
  /**
   * Called as every long operation moves on: open, catch-up, the rebuild of an index from the
   * log, repair, checkpoint and close (`StoreProgress`, docs/api.md). An exception it throws is
   * ignored: the operation goes on. Without it nothing is built to report.
   */
  onProgress?: (progress: StoreProgress) => void;
}

/**
 * Where a long store operation stands (`onProgress`). An operation's first event has phase
 * `start` and its last `end`, once each; `index` events come after each catch-up job the
 * operation ran, in `onCatchUp`'s shape: the index the job advanced, one past the highest id
 * it covers now (`highWater`), and the log's next id (the job's work is done when every index
 * reaches it).
 */
export interface StoreProgress {
  /**
   * `catch-up`: indexing appended spans (`index` events only); `rebuild`: an index the open
   * found missing, stale or corrupt, filled again from the log (`start`, `index`…, `end`, per
   * index); `open`, `repair`, `checkpoint`, `close`: the calls of those names.
   */
  operation: 'open' | 'catch-up' | 'rebuild' | 'repair' | 'checkpoint' | 'close';
  /**
   * `start`, then the operation's steps, then `end`: `log` (an open's log opened, its tail
   * recovered), `load` (an open's index files loaded), `replay` (an open's trail replay),
   * `index` (a catch-up job), `audit` (the repair's full audit), `flush` (the log made
   * durable), `save` (the indexes written), `release` (the indexes' memory freed).
   */
  phase: 'start' | 'log' | 'load' | 'replay' | 'index' | 'audit' | 'flush' | 'save' | 'release' | 'end';
  /** The index the event is about (`index` events, and a rebuild's `start` and `end`). */
  index?: 'lexical' | 'vector';
  /** `index` events: one past the highest id the index covers now. */
  highWater?: number;
  /** `index` events: the log's next id when the job ended. */
  nextId?: number;
}

/** What a host appends: one turn (or a few consecutive turns as one span). */
export interface TurnInput {
  turn: number;
  /** Last turn covered when the span joins several turns (default `turn`). */
  turnEnd?: number;
  role: string;
  text: string;
  /** Who said it, when the role is not enough (a person's name in a multi-party chat); searchable, and matched by "what did <name> say". */
  speaker?: string;
  tokens?: number;
  /** true: always an anchor; false: never; absent: detected. */
  anchor?: boolean;
  meta?: Record<string, unknown>;
  /** Milliseconds since the epoch (default now). */
  timestamp?: number;
  /**
   * An idempotency key (1–256 characters, unique per turn): a batch whose turns are all
   * already stored under their keys is not stored again, and their ids come back. Recognized
   * while among the last 65,536 keyed turns. Stored in the span's `meta.key`.
   */
  key?: string;
}

/** An index that could not catch up with the log: the spans are stored, not yet indexed. */
export interface IndexLag {
  index: 'lexical' | 'vector';
  /** The first span id the index lacks. */
  fromId: number;
  code: string;
  message: string;
}

export interface Span {
  id: number;
  kind: RecordKindName;
  role: string;
  turnStart: number;
  turnEnd: number;
  timestamp: number;
  tokens: number;
  anchor: boolean;
  text: string;
  /** The `speaker` given at append, if any. */
  speaker?: string;
  meta: Record<string, unknown> | null;
}

export type MatchedVia = 'exact' | 'lexical' | 'vector';

export interface Hit {
  spanId: number;
  kind: 'raw' | 'summary';
  turnStart: number;
  turnEnd: number;
  score: number;
  via: MatchedVia;
  text: string;
  /** The span's role, speaker and timestamp (ms), for "who said it" and "when". */
  role?: string;
  speaker?: string;
  timestamp?: number;
  /** What of the query this span holds (terms, values, names, party, time); search hits only. */
  support?: Support;
  /** Verdict state when the query ran. */
  verdict: VerdictState;
  /** False unless the verdict is lossless: do not act on exact values from this hit. */
  trustExactRecall: boolean;
  /** True for a summary that a later pass re-summarized. */
  superseded?: boolean;
}

export interface SearchOptions {
  k?: number;
  kinds?: ('raw' | 'summary')[];
  /** Inclusive turn range filter. */
  turns?: [number, number];
  /** `raw`: the caller needs a verbatim raw span; resolving only to a summary degrades the verdict. */
  expect?: 'raw' | 'any';
  /** Only spans said by this speaker (or role), or any of these. */
  speaker?: string | string[];
  /** Only spans whose timestamp (ms since the epoch) lies in [from, to]. */
  time?: [number, number];
}

export interface SearchResult {
  hits: Hit[];
  /** "Not in transcript": the query's specific content (a value, an identifier, a name) is stated nowhere, or contradicted, or said only by another party than the one it names. */
  miss: boolean;
  /** Why it is a miss: `value-not-stated`, `value-contradicted`, `name-not-stated`, `other-party`, `no-candidates`, `summary-only`. */
  missReason?: string;
  /** What was looked for and not found. */
  missDetail?: string;
  verdict: VerdictState;
  trustExactRecall: boolean;
  /**
   * True when the query (or a quoted part of it) holds nothing the index can narrow — no
   * letter, digit or identifier: a rule of box drawing, `|  |` — and the store holds more text
   * than the exact-phrase path reads for such a query (EXACT_SCAN_BYTES, newest spans first):
   * an older span holding it verbatim may be missing from the hits, and a miss does not say
   * it is absent. `findExact` reads every span.
   */
  exactPartial?: boolean;
}

export interface StoreStats {
  dir: string;
  spans: { raw: number; summary: number; event: number };
  nextId: number;
  bytesOnDisk: number;
  durability: Durability | 'replicated';
  readOnly: boolean;
  lexical: Record<string, number | string>;
  vector: Record<string, number | string>;
  simd: string;
  passes: number;
  evicted: number;
  anchors: number;
  pinnedFacts: number;
  /** Torn tails cut at open. zerosOnly: every cut byte was zero — no record was cut into (a `sync`/`group` writer killed with its zero prefill, or data the disk never got). */
  recoveries: { file: string; offset: number; droppedBytes: number; zerosOnly: boolean }[];
  /** An index behind the log (its catch-up failed; the spans are stored), or null. */
  indexLag: IndexLag | null;
}
