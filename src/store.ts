/**
 * SpanStore: the public face of the engine. An append-only span log (the retention set,
 * immutable and keyed by span id), two derived indexes caught up from it (lexical BM25 +
 * phrase, and vectors), the compaction guard, the audit scheduler and the verdict.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  addon,
  DurabilityCode,
  KIND_NAMES,
  RecordFlag,
  RecordKind,
  ROLE_CODES,
  ROLE_NAMES,
  roleCodeOf,
  type AppendColumns,
  type Durability,
  type NativeEmbedder,
  type NativeLexicalIndex,
  type NativeSpan,
  type NativeSpanLog,
  type NativeVectorIndex,
  type RecordKindName,
} from './native.js';
import { ErrorCode, SpanguardError } from './errors.js';
import { detectAnchor } from './anchors.js';
import { checkMeta, MAX_ROLE_CHARS, metaText as toMetaText } from './meta.js';
import type { GuardEvent, RetentionEvent, StoreEvent } from './events.js';
import { randomUUID } from 'node:crypto';
import {
  IDENTITY_VERSION,
  identityMismatch,
  identityOf,
  identityVouches,
  indexAgreement,
  lexicalFileProblems,
  lexicalFiles,
  readIdentity,
  vectorFileProblems,
  vectorFiles,
  vectorHighWater,
  writeIdentity,
} from './upkeep.js';
import { HitRateMonitor, VerdictMonitor, type Verdict, type VerdictState } from './verdict.js';
import { DEFAULT_MATCH_POLICY, type MatchPolicy } from './match.js';
import { CompactionGuard, type CompactionReceipt, type CompactionRequest } from './guard.js';
import { anchorFact, Auditor, type AuditReport } from './audit.js';
import { search as runSearch, type SearchContext } from './search.js';
import type { Support } from './support.js';
import { clearRestoreNote, startReplica, takeRestoreNote, type ReplicaOptions, type ReplicaStatus, type Shipper } from './replica/index.js';

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
  /** Probe-set size for the per-pass hit-rate monitor: this many stated anchor facts, drawn across the session, and as many never-stated perturbations (default 16 + 16; each pass also probes the anchors its own summary speaks for). */
  hitRateProbes?: number;
  /** Facts checked per scheduled audit (default 32). */
  auditSample?: number;
  /** Override the honest-miss thresholds. */
  matchPolicy?: MatchPolicy;
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

const DEFAULTS = {
  horizonSeconds: 30 * 24 * 3600,
  durability: 'group' as Durability,
  dims: 256,
  auditEvery: 50,
  unknownAfter: 50,
  policy: 'refuse' as const,
  maxDivergence: 0.1,
  grounding: 'mark' as const,
  segmentBytes: 64 * 1024 * 1024,
  maxTextBytes: 16 * 1024 * 1024,
  vectorScalar: 'f16' as const,
  hitRateProbes: 16,
  auditSample: 32,
};

const APPEND_CHUNK = 4096;
/** A retry is recognized while its key is among the last KEY_WINDOW keyed raw spans. */
export const KEY_WINDOW = 65536;
const MAX_KEY_LENGTH = 256;
/** Anchor facts kept from append (~160 chars each: a few MiB at most). */
const FACT_CACHE = 16384;

function invalid(message: string): never {
  throw new SpanguardError(ErrorCode.INVALID_OPTIONS, message);
}

function checkPositiveInt(name: string, v: unknown, max = Number.MAX_SAFE_INTEGER): void {
  if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v <= 0 || v > max))
    invalid(`${name} must be a positive integer${max < Number.MAX_SAFE_INTEGER ? ` <= ${max}` : ''}, got ${String(v)}`);
}

type Resolved = Required<Omit<SpanStoreOptions, 'embedder' | 'rawTtlSeconds' | 'matchPolicy' | 'replica'>> & {
  replica: ReplicaOptions | undefined;
  embedder: Embedder | undefined;
  rawTtlSeconds: number;
  matchPolicy: MatchPolicy;
};

function resolveOptions(options: SpanStoreOptions): Resolved {
  if (options === null || typeof options !== 'object') invalid('options must be an object');
  const known = new Set([
    'horizonSeconds', 'rawTtlSeconds', 'bestEffort', 'durability', 'embedder', 'dims', 'auditEvery', 'unknownAfter',
    'policy', 'maxDivergence', 'grounding', 'readOnly', 'segmentBytes', 'maxTextBytes', 'vectorScalar', 'hitRateProbes', 'auditSample', 'matchPolicy', 'replica',
  ]);
  for (const k of Object.keys(options)) if (!known.has(k)) invalid(`unknown option "${k}"`);
  if (options.durability !== undefined && !(options.durability in DurabilityCode) && options.durability !== 'replicated')
    invalid(`durability must be 'sync', 'group', 'none' or 'replicated', got ${String(options.durability)}`);
  if (options.durability === 'replicated' && options.replica === undefined) invalid(`durability 'replicated' needs the replica option`);
  if (options.policy !== undefined && options.policy !== 'refuse' && options.policy !== 'spill')
    invalid(`policy must be 'refuse' or 'spill', got ${String(options.policy)}`);
  if (options.vectorScalar !== undefined && !['f32', 'f16', 'i8'].includes(options.vectorScalar))
    invalid(`vectorScalar must be 'f32', 'f16' or 'i8'`);
  if (options.embedder !== undefined && typeof options.embedder !== 'function') invalid('embedder must be a function');
  if (options.embedder !== undefined && options.dims === undefined) invalid('dims is required with a host embedder');
  if (options.grounding !== undefined && options.grounding !== 'mark' && options.grounding !== 'refuse')
    invalid(`grounding must be 'mark' or 'refuse', got ${String(options.grounding)}`);
  if (options.maxDivergence !== undefined && (typeof options.maxDivergence !== 'number' || !(options.maxDivergence >= 0 && options.maxDivergence <= 2)))
    invalid(`maxDivergence must be a number in 0..2, got ${String(options.maxDivergence)}`);
  checkPositiveInt('horizonSeconds', options.horizonSeconds);
  checkPositiveInt('rawTtlSeconds', options.rawTtlSeconds);
  checkPositiveInt('dims', options.dims, 4096);
  checkPositiveInt('auditEvery', options.auditEvery);
  checkPositiveInt('unknownAfter', options.unknownAfter);
  checkPositiveInt('segmentBytes', options.segmentBytes, 2 ** 40);
  checkPositiveInt('maxTextBytes', options.maxTextBytes, 1024 * 1024 * 1024);
  checkPositiveInt('hitRateProbes', options.hitRateProbes, 4096);
  checkPositiveInt('auditSample', options.auditSample, 1_000_000);
  if (options.segmentBytes !== undefined && options.segmentBytes < 4096) invalid('segmentBytes must be at least 4096');
  return {
    horizonSeconds: options.horizonSeconds ?? DEFAULTS.horizonSeconds,
    rawTtlSeconds: options.rawTtlSeconds ?? Number.POSITIVE_INFINITY,
    bestEffort: options.bestEffort ?? false,
    durability: options.durability ?? DEFAULTS.durability,
    embedder: options.embedder,
    dims: options.dims ?? DEFAULTS.dims,
    auditEvery: options.auditEvery ?? DEFAULTS.auditEvery,
    unknownAfter: options.unknownAfter ?? DEFAULTS.unknownAfter,
    policy: options.policy ?? DEFAULTS.policy,
    maxDivergence: options.maxDivergence ?? DEFAULTS.maxDivergence,
    grounding: options.grounding ?? DEFAULTS.grounding,
    readOnly: options.readOnly ?? false,
    segmentBytes: options.segmentBytes ?? DEFAULTS.segmentBytes,
    maxTextBytes: options.maxTextBytes ?? DEFAULTS.maxTextBytes,
    vectorScalar: options.vectorScalar ?? DEFAULTS.vectorScalar,
    hitRateProbes: options.hitRateProbes ?? DEFAULTS.hitRateProbes,
    auditSample: options.auditSample ?? DEFAULTS.auditSample,
    matchPolicy: options.matchPolicy ?? DEFAULT_MATCH_POLICY,
    replica: options.replica,
  };
}

/**
 * The vector index's options: an exact SIMD scan below 2,500 vectors per namespace, the
 * binary-signature scan with an exact rerank of the nearest max(1,024, 1/128 of the
 * namespace) above. bench/vector-crossover.bench.ts (real turns, f16, top-10 p50): the
 * binary strategy overtakes the scan between 2,000 and 3,000 vectors (3,000: 48 vs 60 µs;
 * 16,000: 85 vs 298 µs) at recall@10 0.999–1.000 against it. On the bench's vectors
 * (bench/README.md) recall@10 against brute force is ≥ 0.99 at 10^4 and 0.988 at 10^5 and
 * 10^6 (p50 ≈ 0.4 / 3.3 ms), where HNSW at ef 256 gave 0.950 / 0.590; inserts are O(1)
 * (≈ 7 µs a vector at 10^6, where HNSW inserts took ≈ 300 µs).
 */
function vectorOptions(o: Resolved) {
  return { dims: o.dims, scalar: o.vectorScalar, exactBelow: 2_500, ann: 'binary' as const, rerankMin: 1024, rerankShare: 1 / 128, readOnly: o.readOnly };
}

/** A growable bitset over span ids. */
export class IdSet {
  private bits = new Uint8Array(1024);
  size = 0;
  has(id: number): boolean {
    const byte = id >>> 3;
    return byte < this.bits.length && (this.bits[byte]! & (1 << (id & 7))) !== 0;
  }
  /** The ids held, ascending (a scan of the bitset that skips empty bytes). */
  *ids(): Generator<number> {
    const bits = this.bits;
    for (let byte = 0; byte < bits.length; byte++) {
      const b = bits[byte]!;
      if (b === 0) continue;
      for (let bit = 0; bit < 8; bit++) if (b & (1 << bit)) yield byte * 8 + bit;
    }
  }
  add(id: number): void {
    const byte = id >>> 3;
    if (byte >= this.bits.length) {
      const next = new Uint8Array(Math.max(this.bits.length * 2, byte + 1));
      next.set(this.bits);
      this.bits = next;
    }
    if ((this.bits[byte]! & (1 << (id & 7))) === 0) {
      this.bits[byte]! |= 1 << (id & 7);
      this.size++;
    }
  }
}

/** Guard state rebuilt from the log at open; the guard and auditor share it. */
export interface GuardState {
  /** Raw ids evicted from the live window by accepted passes. */
  evicted: IdSet;
  /** Raw ids flagged as anchors, in id order. */
  anchors: number[];
  /** Summaries that are in the window (not evicted, not superseded). */
  liveSummaries: Set<number>;
  superseded: Set<number>;
  /** Host-pinned facts. */
  pins: { fact: string; spanId: number }[];
  passes: number;
  lastTurn: number;
  /** Summaries accepted with values nothing they replaced states: never evidence for those values. */
  ungrounded: Map<number, string[]>;
}

export class SpanStore {
  /** @internal */ readonly log: NativeSpanLog;
  /** @internal */ lexical: NativeLexicalIndex;
  /** @internal */ vector: NativeVectorIndex;
  /** @internal */ readonly embedderNative: NativeEmbedder;
  /** @internal */ readonly state: GuardState;
  /** @internal */ readonly monitor: VerdictMonitor;
  /** @internal */ readonly hitRate: HitRateMonitor;
  /** @internal */ readonly options: Resolved;
  private readonly guard: CompactionGuard;
  private readonly auditor: Auditor;
  private closed = false;
  /** The retention declaration still to record (see replay()). */
  private retentionPending: RetentionEvent | null = null;
  /** The store's id, from its `store` event; null until recorded (see recordRetention). */
  private storeId: string | null = null;
  private pending = new Set<Promise<unknown>>();
  /** Anchor facts by span id (anchorFactOf), the most recent FACT_CACHE. */
  private facts = new Map<number, string | null>();
  /** Idempotency keys of recent raw spans (built on the first keyed append). */
  private keys: Map<string, number> | null = null;
  /** Why an index is behind the log (its catch-up failed), or null. */
  private lag: IndexLag | null = null;
  private lastVerdictState: VerdictState;
  /** A reader's vector index rebuilt from the log lives here (it may not write the store's files); removed at close. */
  private privateVectorDir: string | null = null;
  /** Why vectors.bin was rejected when the index was opened (the index then started empty). */
  private vectorOpenError: string | null = null;
  /** Ships the log to object storage (the `replica` option), or null. */
  private replica: Shipper | null = null;
  /**
   * @internal What the open found wrong with the derived files, per index, and whether the
   * index was rebuilt: what a writer records as `index-rebuilt` events, and what `verify`
   * reports (a reader records nothing).
   */
  derivedProblems: { index: 'lexical' | 'vector'; reason: string }[] = [];

  private constructor(
    readonly dir: string,
    options: Resolved,
    log: NativeSpanLog,
    lexical: NativeLexicalIndex,
    vector: NativeVectorIndex,
    embedder: NativeEmbedder,
  ) {
    this.options = options;
    this.log = log;
    this.lexical = lexical;
    this.vector = vector;
    this.embedderNative = embedder;
    this.state = {
      evicted: new IdSet(),
      anchors: [],
      liveSummaries: new Set(),
      superseded: new Set(),
      pins: [],
      passes: 0,
      lastTurn: -1,
      ungrounded: new Map(),
    };
    const bestEffortReason =
      options.rawTtlSeconds < options.horizonSeconds
        ? `raw TTL ${options.rawTtlSeconds}s is shorter than the horizon ${options.horizonSeconds}s`
        : undefined;
    this.monitor = new VerdictMonitor({
      unknownAfter: options.unknownAfter,
      auditEvery: options.auditEvery,
      bestEffort: options.bestEffort,
      ...(bestEffortReason ? { bestEffortReason } : {}),
    });
    this.hitRate = new HitRateMonitor(0.15);
    this.guard = new CompactionGuard(this);
    this.auditor = new Auditor(this);
    this.lastVerdictState = 'lossless';
  }

  /**
   * Opens (or creates) a store in `dir`. Takes the writer lock unless `readOnly`; recovers a
   * torn log tail; loads the indexes and catches them up from the log (rebuilding any that is
   * missing, stale or corrupt); replays the event trail to restore the guard and verdict.
   */
  static async open(dir: string, options: SpanStoreOptions = {}): Promise<SpanStore> {
    if (typeof dir !== 'string' || dir.length === 0) invalid('dir must be a non-empty path');
    const o = resolveOptions(options);
    if (o.rawTtlSeconds < o.horizonSeconds && !o.bestEffort) {
      throw new SpanguardError(
        ErrorCode.RETENTION_TOO_SHORT,
        `rawTtlSeconds (${o.rawTtlSeconds}) is shorter than horizonSeconds (${o.horizonSeconds}): evicted turns would expire while the session can still ask for them. Raise the TTL, or open with bestEffort: true (the verdict is then never lossless).`,
        { rawTtlSeconds: o.rawTtlSeconds, horizonSeconds: o.horizonSeconds },
      );
    }
    const a = addon();
    const logDir = path.join(dir, 'log');
    const indexDir = path.join(dir, 'index');
    if (!o.readOnly) {
      fs.mkdirSync(logDir, { recursive: true, mode: 0o700 });
      fs.mkdirSync(path.join(indexDir, 'vector'), { recursive: true, mode: 0o700 });
    } else if (!fs.existsSync(logDir)) {
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `no spanguard store at ${dir} (missing ${logDir})`);
    }
    const log = new a.SpanLog(logDir, {
      readOnly: o.readOnly,
      durability: DurabilityCode[o.durability === 'replicated' ? 'group' : o.durability],
      segmentBytes: o.segmentBytes,
      maxTextBytes: o.maxTextBytes,
    });
    // A failed open releases everything it took: the log (its lock, maps and helper thread)
    // and the vector index (the lock on vectors.bin, its memory), so the next open of this
    // store in this process is not refused.
    let vector: NativeVectorIndex | undefined;
    let store: SpanStore | undefined;
    try {
      const embedder = new a.Embedder(o.embedder ? 64 : o.dims);
      const lexical = new a.LexicalIndex(path.join(indexDir, 'lexical.idx'));
      // Strategy and crossover: vectorOptions() above. vectors.bin is derived data too: one
      // whose header fails its check is set aside and the index rebuilt from the log (replay).
      let vectorOpenError: string | null = null;
      let privateDir: string | null = null;
      try {
        vector = new a.VectorIndex(path.join(indexDir, 'vector'), vectorOptions(o));
      } catch (e) {
        if (!(e instanceof SpanguardError) || e.code !== ErrorCode.CORRUPT) throw e;
        vectorOpenError = e.message;
        ({ index: vector, privateDir } = SpanStore.freshVector(indexDir, o));
      }
      store = new SpanStore(dir, o, log, lexical, vector, embedder);
      store.vectorOpenError = vectorOpenError;
      store.privateVectorDir = privateDir;
      await store.replay();
      if (o.replica !== undefined && !o.readOnly) {
        store.replica = await startReplica(dir, o.durability, o.replica);
        const gap = takeRestoreNote(dir);
        if (gap !== null) await store.recordEvent({ type: 'degrade', pass: store.state.passes, reason: 'replica-gap', detail: gap, spanIds: [] });
        clearRestoreNote(dir);
      }
      return store;
    } catch (e) {
      if (store) store.releaseIndexes();
      else vector?.close();
      await log.close();
      throw e;
    }
  }

  /**
   * An empty vector index over the store's vector directory, its old files removed (a
   * writer), or over a private temporary directory (a reader, which may not touch the
   * store's files; removed at close).
   */
  private static freshVector(indexDir: string, o: Resolved): { index: NativeVectorIndex; privateDir: string | null } {
    const a = addon();
    const vdir = path.join(indexDir, 'vector');
    if (o.readOnly) {
      const privateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-vector-'));
      try {
        return { index: new a.VectorIndex(privateDir, { ...vectorOptions(o), readOnly: false }), privateDir };
      } catch (e) {
        fs.rmSync(privateDir, { recursive: true, force: true });
        throw e;
      }
    }
    for (const f of fs.readdirSync(vdir)) fs.rmSync(path.join(vdir, f), { force: true, recursive: true });
    return { index: new a.VectorIndex(vdir, vectorOptions(o)), privateDir: null };
  }

  /** Closes the vector index and removes a reader's private one; the lexical index holds no descriptor or lock. Idempotent. */
  private releaseIndexes(): void {
    this.vector.close();
    if (this.privateVectorDir !== null) {
      fs.rmSync(this.privateVectorDir, { recursive: true, force: true });
      this.privateVectorDir = null;
    }
  }

  // ---------------------------------------------------------------- open-time replay

  private async replay(): Promise<void> {
    const next = this.log.nextId();
    const disagreements: string[] = [];
    // The anchors (ids only) and the event trail restore the guard; no raw text is copied.
    const first = this.log.firstId();
    for (const id of this.log.scanIds(first, next - first, 1 << RecordKind.raw, RecordFlag.anchor)) this.state.anchors.push(id);
    // Turns never go backwards, so the last raw record holds the highest turn.
    for (let hi = next; hi > first && this.state.lastTurn < 0; hi -= APPEND_CHUNK) {
      const lo = Math.max(first, hi - APPEND_CHUNK);
      const ids = this.log.scanIds(lo, hi - lo, 1 << RecordKind.raw, 0);
      if (ids.length > 0) this.state.lastTurn = this.log.get(ids[ids.length - 1]!)!.turnEnd;
    }
    const events: [number, GuardEvent][] = [];
    for (let from = first; from < next; from += APPEND_CHUNK) {
      for (const r of this.log.scan(from, Math.min(APPEND_CHUNK, next - from), 1 << RecordKind.event)) {
        try {
          events.push([r.id, JSON.parse(r.text) as GuardEvent]);
        } catch {
          disagreements.push(`event record ${r.id} is not valid JSON`);
        }
      }
    }
    // Index identity (src/upkeep.ts): an index built for another store or another log
    // history is rebuilt from this log, and the rebuild recorded.
    const storeEvent = events.find(([, e]) => e.type === 'store')?.[1] as StoreEvent | undefined;
    this.storeId = storeEvent?.storeId ?? null;
    const identity = readIdentity(path.join(this.dir, 'index'));
    // Damaged derived files (src/upkeep.ts): a file that fails its own checks, is missing
    // while the identity says it covered records, or is not the file the identity names
    // means the index is rebuilt from the log; either way the finding is recorded.
    const found = {
      lexical: lexicalFileProblems(this.lexical, this.log, this.storeId, identity),
      vector: vectorFileProblems(this.vector, this.storeId, identity, this.vectorOpenError),
    };
    const rebuilt: { name: string; reason: string }[] = [];
    for (const name of ['lexical', 'vector'] as const) {
      const problems = found[name];
      const hw = name === 'lexical' ? this.lexical.highWater() : vectorHighWater(this.vector, this.storeId, identity);
      // An index this store's identity vouches for (or that has none to go by) covering ids
      // the log does not hold: the log lost what the index saw. A disagreement, recorded
      // as a degrade below; the index is rebuilt. A damaged or foreign file's high water
      // says nothing about the log: that is a rebuild like any other.
      if (hw > next && !problems.some((p) => p.rebuild) && (identity === null || identityVouches(name, hw, this.storeId, identity))) {
        const d = `${name} index covers ids up to ${hw - 1} but the log ends at ${next - 1}`;
        disagreements.push(d);
        this.derivedProblems.push({ index: name, reason: d });
        this.rebuildIndex(name);
        continue;
      }
      const why = identityMismatch(name, hw, this.log, this.storeId, identity);
      if (why !== null) problems.push({ reason: why, rebuild: true });
      if (problems.length === 0) continue;
      if (problems.some((p) => p.rebuild)) this.rebuildIndex(name);
      const reason = problems.map((p) => p.reason).join('; ');
      rebuilt.push({ name, reason });
      this.derivedProblems.push({ index: name, reason });
    }
    for (const [id, e] of events) this.applyEvent(id, e);
    this.lastVerdictState = this.monitor.verdict().state;
    // The retention this store is opened with is a declaration: recorded when it differs
    // from the last one recorded, so a best-effort past is never forgotten on reopen.
    const declared = events.filter(([, e]) => e.type === 'retention').at(-1)?.[1] as RetentionEvent | undefined;
    const ttl = Number.isFinite(this.options.rawTtlSeconds) ? this.options.rawTtlSeconds : null;
    const bestEffort = this.options.bestEffort || (ttl !== null && ttl < this.options.horizonSeconds);
    const retentionChanged =
      !declared || declared.horizonSeconds !== this.options.horizonSeconds || declared.rawTtlSeconds !== ttl || declared.bestEffort !== bestEffort;
    await this.catchUpIndexes();
    if (!this.options.readOnly && retentionChanged) {
      this.retentionPending = { type: 'retention', pass: this.state.passes, horizonSeconds: this.options.horizonSeconds, rawTtlSeconds: ttl, bestEffort };
      // A best-effort declaration is recorded at once: it must never be lost. Otherwise the
      // record waits for the first compaction or the close (the verdict only concerns
      // evicted turns), so a new store's turns keep contiguous ids from 1.
      if (bestEffort || this.log.nextId() > this.log.firstId()) await this.recordRetention();
    } else if (!this.options.readOnly && this.storeId === null && this.log.nextId() > this.log.firstId()) await this.recordRetention();
    if (!this.options.readOnly) for (const r of rebuilt) await this.recordEvent({ type: 'index-rebuilt', pass: this.state.passes, index: r.name, reason: r.reason });
    if (!this.options.readOnly) {
      // The log only reports a torn tail; recording it keeps the trail complete.
      for (const r of this.log.stats().recoveries)
        await this.recordEvent({ type: 'recovery', pass: this.state.passes, file: r.file, offset: r.offset, droppedBytes: r.droppedBytes, zerosOnly: r.zerosOnly });
    }
    if (disagreements.length > 0 && !this.options.readOnly) {
      await this.recordEvent({
        type: 'degrade',
        pass: this.state.passes,
        reason: 'index-disagreement',
        detail: disagreements.join('; '),
        spanIds: [],
      });
    }
  }

  /** Applies one event to the in-memory guard state and the verdict monitor. */
  private applyEvent(id: number, e: GuardEvent): void {
    switch (e.type) {
      case 'pass':
        for (const [a, b] of e.evicted) for (let x = a; x <= b; x++) this.state.evicted.add(x);
        for (const s of e.evictedSummaries) this.state.liveSummaries.delete(s);
        for (const s of e.superseded) {
          this.state.superseded.add(s);
          this.state.liveSummaries.delete(s);
        }
        this.state.liveSummaries.add(e.summaryId);
        if (e.ungrounded && e.ungrounded.length > 0) this.state.ungrounded.set(e.summaryId, e.ungrounded);
        this.state.passes = Math.max(this.state.passes, e.pass);
        this.hitRate.restore(e.pass, e.hitRateAfter);
        break;
      case 'pin':
        if (!e.auto) this.state.pins.push({ fact: e.fact, spanId: e.spanId });
        break;
      default:
        break;
    }
    this.monitor.apply(id, e);
  }

  /** Records the store's id (once in its life) and a pending retention declaration. */
  private async recordRetention(): Promise<void> {
    if (this.storeId === null) {
      const storeId = randomUUID();
      await this.recordEvent({ type: 'store', storeId });
      this.storeId = storeId;
    }
    const e = this.retentionPending;
    if (e === null) return;
    this.retentionPending = null;
    await this.recordEvent({ ...e, pass: this.state.passes });
  }

  /** Writes the indexes' identity next to them (after they were saved). */
  private saveIdentity(): void {
    if (this.storeId === null) return;
    writeIdentity(path.join(this.dir, 'index'), {
      version: IDENTITY_VERSION,
      storeId: this.storeId,
      lexical: { ...identityOf(this.log, this.lexical.highWater()), files: lexicalFiles(this.lexical) },
      vector: { ...identityOf(this.log, this.vector.highWater()), files: vectorFiles(this.vector) },
    });
  }

  /** @internal Appends a guard event to the log and applies it; records a verdict change too. */
  async recordEvent(e: GuardEvent): Promise<number> {
    this.assertWritable();
    const text = JSON.stringify(e);
    const id = await this.log.append({
      kinds: Uint8Array.of(RecordKind.event),
      flags: Uint8Array.of(0),
      roles: Uint8Array.of(0),
      turnStart: Float64Array.of(Math.max(0, this.state.lastTurn)),
      turnEnd: Float64Array.of(Math.max(0, this.state.lastTurn)),
      timestamps: Float64Array.of(Date.now()),
      tokens: Uint32Array.of(0),
      texts: [text],
      metas: [null],
    });
    this.applyEvent(id, e);
    if (e.type !== 'verdict') {
      const v = this.monitor.verdict();
      if (v.state !== this.lastVerdictState) {
        const from = this.lastVerdictState;
        this.lastVerdictState = v.state;
        await this.recordEvent({ type: 'verdict', pass: this.state.passes, from, to: v.state, reasons: v.reasons });
      }
    }
    return id;
  }

  // ---------------------------------------------------------------- append

  /** Appends one turn; resolves with its span id once durable under the store's mode. */
  async append(turn: TurnInput): Promise<number> {
    const ids = await this.appendMany([turn]);
    return ids[0]!;
  }

  /**
   * Appends turns as raw spans, in order, with contiguous ids: one batch of any size,
   * validated whole before anything is written, written whole or not at all (one log append,
   * so an append made meanwhile takes ids after it). Resolves once the records are durable
   * under the store's mode; indexing follows and never un-stores them (see `indexLag`).
   * Turns with a `key` already stored (a retry) are not stored again: their ids come back.
   */
  async appendMany(turns: readonly TurnInput[]): Promise<number[]> {
    this.assertWritable();
    if (!Array.isArray(turns)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'appendMany expects an array of turns');
    const retried = this.storedKeys(turns);
    if (retried !== null) {
      // A retry after REPLICA_UNAVAILABLE resolves once its stored turns are replicated.
      if (retried.length > 0) await this.replicate(Math.max(...retried) + 1, []);
      return retried;
    }
    const vetoed: number[] = [];
    const facts: (string | undefined)[] = [];
    const cols = this.columns(turns, 0, vetoed, facts);
    const appended = this.track(this.log.append(cols));
    // `replicated`: ship while the local group commit runs, not after it — from the check
    // phase after the one that writes the batch (an immediate queued by an immediate).
    if (this.replica !== null && this.options.durability === 'replicated') setImmediate(() => setImmediate(() => this.replica?.kick()));
    const first = await appended;
    const replicated = this.replicate(first + turns.length, cols.texts);
    const ids = Array.from({ length: turns.length }, (_, j) => first + j);
    for (let j = 0; j < turns.length; j++) {
      if (!(cols.flags[j]! & RecordFlag.anchor)) continue;
      this.state.anchors.push(first + j);
      if (facts[j] !== undefined) this.rememberFact(first + j, facts[j]!);
    }
    for (let j = 0; j < turns.length; j++) if (turns[j]!.key !== undefined) this.rememberKey(turns[j]!.key!, first + j);
    if (turns.length > 0) this.state.lastTurn = Math.max(this.state.lastTurn, cols.turnEnd[turns.length - 1]!);
    await this.catchUpIndexes();
    // After the whole batch, so its ids stay contiguous.
    if (vetoed.length > 0) await this.recordEvent({ type: 'anchor-veto', spanIds: vetoed.slice(0, 4096).map((j) => first + j) });
    await replicated;
    return ids;
  }

  /** `replicated`: resolves once the object store holds every id below `nextId`; otherwise tells the shipper what is pending. */
  private replicate(nextId: number, texts: readonly (string | null)[]): Promise<void> | undefined {
    if (this.replica === null) return undefined;
    if (this.options.durability !== 'replicated') {
      let bytes = 0;
      for (const t of texts) bytes += 64 + (t?.length ?? 0);
      this.replica.noteAppend(bytes);
      return undefined;
    }
    const p = this.replica.waitFor(nextId);
    p.catch(() => undefined);
    return p;
  }

  /** Where the object-store replica stands (docs/replication.md), or null without the `replica` option. */
  replicaStatus(): ReplicaStatus | null {
    this.assertOpen();
    return this.replica?.status() ?? null;
  }

  // ---------------------------------------------------------------- anchor facts

  /**
   * @internal The fact an anchor span pins (audit.ts `anchorFact`): detection's match, kept
   * from the append that ran it for the last FACT_CACHE anchors, else computed from the span.
   * A pass probes each anchor it evicts, and detection over a long tool output costs tens of
   * microseconds, paid at append already.
   */
  anchorFactOf(id: number, text: string, role: number): string | null {
    const known = this.facts.get(id);
    if (known !== undefined) return known;
    const fact = anchorFact(text, role);
    this.rememberFact(id, fact);
    return fact;
  }

  private rememberFact(id: number, fact: string | null): void {
    this.facts.set(id, fact);
    if (this.facts.size > FACT_CACHE) this.facts.delete(this.facts.keys().next().value!);
  }

  // ---------------------------------------------------------------- retries (idempotency keys)

  /**
   * A batch's keys checked against the keys already stored. null: store the batch. Ids: every
   * turn of the batch is keyed and already stored under its key with the same role and text
   * (a retry of an append whose outcome the host did not see): nothing is written again.
   */
  private storedKeys(turns: readonly TurnInput[]): number[] | null {
    let keyed = 0;
    const seen = new Set<string>();
    for (let i = 0; i < turns.length; i++) {
      const key = (turns[i] as TurnInput | null)?.key;
      if (key === undefined) continue;
      if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH)
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `turn at index ${i}: key must be a non-empty string of at most ${MAX_KEY_LENGTH} characters`);
      if (seen.has(key)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `turn at index ${i}: key ${JSON.stringify(key)} appears twice in the batch`);
      seen.add(key);
      keyed++;
    }
    if (keyed === 0) return null;
    const keys = this.recentKeys();
    const stored: number[] = [];
    const fresh: number[] = [];
    for (let i = 0; i < turns.length; i++) {
      const key = turns[i]!.key;
      const id = key === undefined ? undefined : keys.get(key);
      if (id === undefined) {
        fresh.push(i);
        continue;
      }
      const span = this.get(id);
      const t = turns[i]!;
      if (!span || span.text !== t.text || span.role !== t.role || span.turnStart !== t.turn)
        throw new SpanguardError(
          ErrorCode.INVALID_ARGUMENT,
          `turn at index ${i}: key ${JSON.stringify(key)} is already stored as span ${id} with another turn, role or text`,
          { spanId: id },
        );
      stored.push(id);
    }
    if (stored.length === 0) return null;
    if (fresh.length > 0)
      throw new SpanguardError(
        ErrorCode.INVALID_ARGUMENT,
        `${stored.length} turn(s) of the batch are already stored under their keys, but the turn at index ${fresh[0]} is not: a retry repeats the batch as it was appended`,
      );
    return stored;
  }

  /** The keys of the last KEY_WINDOW raw spans (read from the log once), plus those appended since. */
  private recentKeys(): Map<string, number> {
    if (this.keys !== null) return this.keys;
    const keys = new Map<string, number>();
    const first = this.log.firstId();
    const found: [string, number][] = [];
    let raw = 0;
    for (let hi = this.log.nextId(); hi > first && raw < KEY_WINDOW; hi -= APPEND_CHUNK) {
      const lo = Math.max(first, hi - APPEND_CHUNK);
      const chunk = this.log.scan(lo, hi - lo, 1 << RecordKind.raw);
      for (let j = chunk.length - 1; j >= 0 && raw < KEY_WINDOW; j--, raw++) {
        const r = chunk[j]!;
        if (!r.meta || !r.meta.includes('"key"')) continue;
        const key = (JSON.parse(r.meta) as { key?: unknown }).key;
        if (typeof key === 'string') found.push([key, r.id]);
      }
    }
    for (let j = found.length - 1; j >= 0; j--) keys.set(found[j]![0], found[j]![1]);
    this.keys = keys;
    return keys;
  }

  private rememberKey(key: string, id: number): void {
    const keys = this.recentKeys();
    keys.delete(key);
    keys.set(key, id);
    if (keys.size > KEY_WINDOW) keys.delete(keys.keys().next().value!);
  }

  private columns(turns: readonly TurnInput[], offset: number, vetoed: number[] = [], facts: (string | undefined)[] = []): AppendColumns {
    const n = turns.length;
    const cols: AppendColumns = {
      kinds: new Uint8Array(n).fill(RecordKind.raw),
      flags: new Uint8Array(n),
      roles: new Uint8Array(n),
      turnStart: new Float64Array(n),
      turnEnd: new Float64Array(n),
      timestamps: new Float64Array(n),
      tokens: new Uint32Array(n),
      texts: new Array<string>(n),
      metas: new Array<string | null>(n),
    };
    let prev = this.state.lastTurn;
    const now = Date.now();
    for (let i = 0; i < n; i++) {
      const t = turns[i];
      const where = `turn at index ${offset + i}`;
      if (t === null || typeof t !== 'object') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where} is not an object`);
      if (typeof t.turn !== 'number' || !Number.isSafeInteger(t.turn) || t.turn < 0)
        throw new SpanguardError(ErrorCode.INVALID_TURN, `${where}: turn must be a non-negative integer, got ${String(t.turn)}`);
      const end = t.turnEnd ?? t.turn;
      if (typeof end !== 'number' || !Number.isSafeInteger(end) || end < t.turn)
        throw new SpanguardError(ErrorCode.INVALID_TURN, `${where}: turnEnd must be an integer >= turn, got ${String(t.turnEnd)}`);
      if (t.turn < prev)
        throw new SpanguardError(ErrorCode.TURN_ORDER, `${where}: turn ${t.turn} goes backwards (previous span reached turn ${prev})`, {
          turn: t.turn,
          previous: prev,
        });
      prev = Math.max(prev, end);
      if (typeof t.text !== 'string') throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: text must be a string`);
      if (!t.text.isWellFormed())
        throw new SpanguardError(ErrorCode.INVALID_UTF8, `${where}: text is not valid UTF-8 (it contains a lone surrogate)`);
      if (typeof t.role !== 'string' || t.role.length === 0 || t.role.length > MAX_ROLE_CHARS)
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: role must be a non-empty string of at most ${MAX_ROLE_CHARS} characters`);
      if (t.timestamp !== undefined && (typeof t.timestamp !== 'number' || !Number.isSafeInteger(t.timestamp) || t.timestamp < 0))
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: timestamp must be an integer number of milliseconds since the epoch, >= 0, got ${typeof t.timestamp === 'number' ? t.timestamp : typeof t.timestamp}`);
      if (t.tokens !== undefined && (!Number.isInteger(t.tokens) || t.tokens < 0 || t.tokens > 0xffffffff))
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: tokens must be a non-negative integer`);
      if (t.anchor !== undefined && typeof t.anchor !== 'boolean')
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: anchor must be a boolean`);
      const roleCode = roleCodeOf(t.role);
      let meta: Record<string, unknown> | undefined = t.meta === undefined ? undefined : checkMeta(t.meta, where);
      if (roleCode === undefined) meta = { ...(meta ?? {}), role: t.role };
      if (t.speaker !== undefined) {
        if (typeof t.speaker !== 'string' || t.speaker.length === 0 || t.speaker.length > 256)
          throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `${where}: speaker must be a non-empty string of at most 256 characters`);
        meta = { ...(meta ?? {}), speaker: t.speaker };
      }
      // Checked by storedKeys before the batch got here.
      if (t.key !== undefined) meta = { ...(meta ?? {}), key: t.key };
      let metaText: string | null = null;
      if (meta !== undefined) {
        metaText = toMetaText(meta, where);
        if (!metaText.isWellFormed()) throw new SpanguardError(ErrorCode.INVALID_UTF8, `${where}: meta is not valid UTF-8`);
      }
      // Detection runs whatever the host says: a host may add anchors, not remove them. A
      // veto of a detected anchor is recorded (see appendMany) and the anchor kept.
      const match = detectAnchor(t.text, t.role);
      const detected = match !== null;
      if (match) facts[i] = match.fact;
      const anchor = t.anchor === true || detected;
      if (t.anchor === false && detected) vetoed.push(i);
      cols.flags[i] = anchor ? RecordFlag.anchor : 0;
      cols.roles[i] = roleCode ?? 0;
      cols.turnStart[i] = t.turn;
      cols.turnEnd[i] = end;
      cols.timestamps[i] = t.timestamp ?? now;
      cols.tokens[i] = t.tokens ?? 0;
      cols.texts[i] = t.text;
      cols.metas[i] = metaText;
    }
    return cols;
  }

  /** @internal Appends a summary record (kind summary) and indexes it in the summary namespace. */
  async appendSummary(text: string, turnStart: number, turnEnd: number, tokens: number): Promise<number> {
    if (!text.isWellFormed()) throw new SpanguardError(ErrorCode.INVALID_UTF8, 'summary text is not valid UTF-8');
    const id = await this.track(
      this.log.append({
        kinds: Uint8Array.of(RecordKind.summary),
        flags: Uint8Array.of(0),
        roles: Uint8Array.of(ROLE_CODES.system!),
        turnStart: Float64Array.of(turnStart),
        turnEnd: Float64Array.of(turnEnd),
        timestamps: Float64Array.of(Date.now()),
        tokens: Uint32Array.of(tokens),
        texts: [text],
        metas: [null],
      }),
    );
    await this.catchUpIndexes();
    return id;
  }

  /**
   * Brings both indexes up to the end of the log (the only way anything gets indexed). Never
   * throws: the spans are in the log already, so a failure (a full disk, a host embedder that
   * throws) leaves the index behind, recorded in `lag` — the verdict and `stats().indexLag`
   * say so — and the next append, search or `catchUp()` tries again.
   */
  private async catchUpIndexes(): Promise<void> {
    try {
      await this.catchUpOrThrow();
      this.lag = null;
    } catch (e) {
      const err = e as { code?: unknown; message?: unknown };
      const lexicalBehind = this.lexical.highWater() < this.log.nextId();
      this.lag = {
        index: lexicalBehind ? 'lexical' : 'vector',
        fromId: Math.max(lexicalBehind ? this.lexical.highWater() : this.vector.highWater(), this.log.firstId()),
        code: typeof err.code === 'string' ? err.code : ErrorCode.IO_ERROR,
        message: String(err.message ?? e),
      };
    }
  }

  /**
   * Catches the indexes up with the log now; rejects with the failure when one stays behind
   * (the spans stay stored either way). Appends and searches do this on their own.
   */
  async catchUp(): Promise<void> {
    this.assertOpen();
    await this.catchUpIndexes();
    const lag = this.lag;
    if (lag !== null) throw new SpanguardError(lag.code as ErrorCode, `the ${lag.index} index lacks spans from ${lag.fromId} on: ${lag.message}`, { ...lag });
  }

  /**
   * A reader catches the lexical index up in memory; its vector index stays at what the
   * writer persisted (the exact and BM25 paths still cover the newest spans).
   */
  private async catchUpOrThrow(): Promise<void> {
    this.lexical.catchUp(this.log);
    // A reader's vector index stays at what the writer saved, unless it was rebuilt in a
    // private directory: then the reader fills it from the log itself.
    if (this.options.readOnly && this.privateVectorDir === null) return;
    if (!this.options.embedder) {
      this.vector.catchUp(this.log, this.embedderNative);
      return;
    }
    const next = this.log.nextId();
    // Ids start at the log's first id (1 in a new store), not at 0: a batch is scanned from
    // there, and the next one starts after its last record.
    for (let from = Math.max(this.vector.highWater(), this.log.firstId()); from < next; ) {
      const records = this.log.scan(from, Math.min(256, next - from));
      from = records.length > 0 ? records[records.length - 1]!.id + 1 : next;
      const batch = records.filter((r) => r.kind === RecordKind.raw || r.kind === RecordKind.summary);
      if (batch.length === 0) continue;
      let vectors: Float32Array[];
      try {
        vectors = await this.options.embedder(batch.map((r) => r.text));
      } catch (e) {
        throw new SpanguardError(ErrorCode.EMBEDDER_FAILED, `host embedder failed: ${(e as Error).message}`);
      }
      if (!Array.isArray(vectors) || vectors.length !== batch.length)
        throw new SpanguardError(
          ErrorCode.DIMENSION_MISMATCH,
          `host embedder returned ${Array.isArray(vectors) ? vectors.length : typeof vectors} vectors for ${batch.length} texts`,
        );
      const flat = new Float32Array(batch.length * this.options.dims);
      vectors.forEach((v, i) => {
        if (!(v instanceof Float32Array) || v.length !== this.options.dims)
          throw new SpanguardError(
            ErrorCode.DIMENSION_MISMATCH,
            `host embedder returned a vector of length ${(v as Float32Array)?.length} for span ${batch[i]!.id}; declared dims ${this.options.dims}`,
          );
        flat.set(v, i * this.options.dims);
      });
      this.vector.add(Float64Array.from(batch, (r) => r.id), Uint8Array.from(batch, (r) => r.kind), flat);
    }
  }

  /** @internal Embeds query texts with whichever embedder the store uses. */
  async embedQuery(texts: string[]): Promise<Float32Array> {
    if (!this.options.embedder) return this.embedderNative.embed(texts);
    const vs = await this.options.embedder(texts);
    const flat = new Float32Array(texts.length * this.options.dims);
    vs.forEach((v, i) => {
      if (!(v instanceof Float32Array) || v.length !== this.options.dims)
        throw new SpanguardError(ErrorCode.DIMENSION_MISMATCH, `host embedder returned a vector of the wrong length for a query`);
      for (const x of v) if (!Number.isFinite(x)) throw new SpanguardError(ErrorCode.NON_FINITE_VECTOR, 'host embedder returned a non-finite value');
      flat.set(v, i * this.options.dims);
    });
    return flat;
  }

  // ---------------------------------------------------------------- reads

  /** The span, verbatim, with its turn range; undefined for an unknown id. */
  get(id: number): Span | undefined {
    this.assertOpen();
    if (!Number.isSafeInteger(id) || id < 0) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `span id must be a non-negative integer, got ${String(id)}`);
    const r = this.log.get(id);
    return r ? toSpan(r) : undefined;
  }

  /** Many spans in one crossing; `undefined` holes for unknown ids. */
  getMany(ids: readonly number[]): (Span | undefined)[] {
    this.assertOpen();
    if (!Array.isArray(ids)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'getMany expects an array of span ids');
    for (const id of ids)
      if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0)
        throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `span ids must be non-negative integers, got ${typeof id === 'number' ? id : typeof id}`);
    return this.log.getMany(Float64Array.from(ids)).map((r) => (r ? toSpan(r) : undefined));
  }

  /**
   * Hybrid search (src/search.ts): exact phrase, BM25 (stems, fields) and vector candidates
   * fused by reciprocal rank, reranked by their support for the query; `miss` ("not in
   * transcript") only when the query's specific content is stated nowhere (src/support.ts).
   */
  async search(query: string, options: SearchOptions = {}): Promise<SearchResult> {
    this.assertOpen();
    return runSearch(this.searchContext(), query, options);
  }

  private searchContext(): SearchContext {
    return {
      log: this.log,
      lexical: this.lexical,
      vector: this.vector,
      embedQuery: (t) => this.embedQuery(t),
      verdictState: () => this.monitor.verdict().state,
      superseded: this.state.superseded,
      ungrounded: this.state.ungrounded,
      passes: this.state.passes,
      readOnly: this.options.readOnly,
      recordEvent: (e) => this.recordEvent(e),
      matchPolicy: this.options.matchPolicy,
    };
  }

  /** Every raw span containing `phrase` verbatim (byte-exact, verified against the log). */
  findExact(phrase: string, options: { limit?: number } = {}): Hit[] {
    this.assertOpen();
    if (typeof phrase !== 'string' || phrase.length === 0)
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'phrase must be a non-empty string');
    const ids = this.lexical.phrase(this.log, phrase, RecordKind.raw, options.limit ?? 1_000_000);
    const v = this.monitor.verdict().state;
    return this.log.getMany(ids).flatMap((s) =>
      s
        ? [
            {
              spanId: s.id,
              kind: 'raw' as const,
              turnStart: s.turnStart,
              turnEnd: s.turnEnd,
              score: 1,
              via: 'exact' as const,
              text: s.text,
              verdict: v,
              trustExactRecall: v === 'lossless',
            },
          ]
        : [],
    );
  }

  // ---------------------------------------------------------------- guard, audits, verdict

  /**
   * One compaction pass. `evict`: ids leaving the live window; `rewrite`: entries this pass
   * replaces with its summary (summaries only: a raw id throws LosslessRetrievalBoundaryError);
   * `summary`: the new entry. Returns a receipt, or throws (CompactionRefusedError for
   * anchors that are not verifiably retrievable under the `refuse` policy).
   */
  async compact(request: CompactionRequest): Promise<CompactionReceipt> {
    this.assertWritable();
    await this.recordRetention();
    const receipt = await this.guard.compact(request);
    // Scheduled audits, and the first audit as soon as anything is evicted: until one
    // confirms a fact from an evicted span the verdict is unknown, not lossless.
    if (this.state.passes % this.options.auditEvery === 0 || this.monitor.needsFirstAudit) await this.audit();
    return receipt;
  }

  /** Pins a fact that must come back verbatim from raw span `spanId` (whose text contains it); audits check it. */
  async pin(fact: string, spanId: number): Promise<void> {
    this.assertWritable();
    if (typeof fact !== 'string' || fact.length === 0) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'fact must be a non-empty string');
    if (!fact.isWellFormed()) throw new SpanguardError(ErrorCode.INVALID_UTF8, 'fact is not valid UTF-8');
    const s = this.log.get(spanId);
    if (!s || s.kind !== RecordKind.raw)
      throw new SpanguardError(ErrorCode.UNKNOWN_SPAN, `cannot pin to span ${spanId}: no raw span has that id`, { spanId });
    // A pin is a promise that the span states the fact: one it does not state would fail
    // every audit from now on and degrade the store for good.
    if (!s.text.includes(fact))
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `cannot pin to span ${spanId}: its text does not contain the fact verbatim`, { spanId });
    await this.recordEvent({ type: 'pin', fact, spanId, auto: false });
  }

  /** Runs an audit now: pinned facts (host and anchors) and a sample of evicted spans. */
  async audit(options: { full?: boolean } = {}): Promise<AuditReport> {
    this.assertWritable();
    return this.auditor.run(options.full ?? false);
  }

  /**
   * The verdict with its reasons and evidence (computed from the event trail), and while an
   * index is behind the log, `unknown` at best: recall cannot yet reach the spans it lacks.
   */
  verdict(): Verdict {
    this.assertOpen();
    const v = this.monitor.verdict();
    const lag = this.lag;
    const extra: string[] = [];
    if (lag !== null)
      extra.push(`the ${lag.index} index lacks spans from id ${lag.fromId} on (${lag.code}: ${lag.message}); they are stored and are indexed at the next append, search or catchUp()`);
    const behind = this.replica?.behind() ?? null;
    if (behind !== null) extra.push(behind);
    if (extra.length === 0) return v;
    const state = v.state === 'lossless' ? 'unknown' : v.state;
    const reasons = v.state === 'lossless' ? extra : [...v.reasons, ...extra];
    return { ...v, state, reasons, trustExactRecall: false };
  }

  /** The recorded events, oldest first: the verdict's explanation. */
  events(): { id: number; event: GuardEvent }[] {
    this.assertOpen();
    const out: { id: number; event: GuardEvent }[] = [];
    const next = this.log.nextId();
    for (let from = this.log.firstId(); from < next; from += APPEND_CHUNK)
      for (const r of this.log.scan(from, Math.min(APPEND_CHUNK, next - from), 1 << RecordKind.event))
        out.push({ id: r.id, event: JSON.parse(r.text) as GuardEvent });
    return out;
  }

  /**
   * Rebuilds every index from the log, then runs a full audit. Only a passing audit after
   * the rebuild clears a degraded verdict; the repair is recorded either way.
   */
  async repair(): Promise<{ rebuilt: string[]; audit: AuditReport; verdict: Verdict }> {
    this.assertWritable();
    this.rebuildIndex('lexical');
    this.rebuildIndex('vector');
    await this.catchUpIndexes();
    // The monitor's probes were measured against the old indexes: measure them afresh.
    this.guard.resetProbes();
    const report = await this.auditor.check(true);
    // Only an audit that checked something, and a fact from an evicted span when any was
    // evicted, can vouch for the rebuilt indexes — and only indexes that agree with the log.
    const agree = indexAgreement(this.log, this.lexical, this.vector).length === 0;
    const vouches = agree && report.passed && (this.state.evicted.size === 0 || report.checkedEvicted > 0);
    await this.recordEvent({ type: 'repair', pass: this.state.passes, rebuilt: ['lexical', 'vector'], auditPassed: vouches });
    if (report.passed) await this.auditor.record(report);
    return { rebuilt: ['lexical', 'vector'], audit: report, verdict: this.monitor.verdict() };
  }

  /**
   * Replaces one index with an empty one that the next catch-up fills from the log. A writer
   * removes the old files first (every file of the vector index, vectors.bin included: a
   * rebuild never reloads what it replaces); a reader builds in memory (lexical) or in a
   * private temporary directory (vector).
   */
  private rebuildIndex(name: 'lexical' | 'vector'): void {
    const a = addon();
    const indexDir = path.join(this.dir, 'index');
    if (name === 'lexical') {
      const file = path.join(indexDir, 'lexical.idx');
      if (!this.options.readOnly) fs.rmSync(file, { force: true });
      this.lexical = new a.LexicalIndex(this.options.readOnly ? path.join(indexDir, 'lexical.rebuild-in-memory') : file);
    } else {
      this.releaseIndexes();
      ({ index: this.vector, privateDir: this.privateVectorDir } = SpanStore.freshVector(indexDir, this.options));
    }
  }

  /**
   * Checks, id by id, that the indexes hold exactly the log's raw and summary spans
   * (src/upkeep.ts `indexAgreement`). On a writable store a disagreement is recorded and
   * degrades the verdict; `repair()` rebuilds.
   */
  async verifyIndexes(): Promise<string[]> {
    this.assertOpen();
    const disagreements = indexAgreement(this.log, this.lexical, this.vector);
    if (disagreements.length > 0 && !this.options.readOnly)
      await this.recordEvent({ type: 'degrade', pass: this.state.passes, reason: 'index-disagreement', detail: disagreements.join('; ').slice(0, 2000), spanIds: [] });
    return disagreements;
  }

  /** Readers: picks up records another process appended; returns how many are new. */
  async refresh(): Promise<number> {
    this.assertOpen();
    const before = this.log.nextId();
    const after = this.log.refresh();
    if (after > before) {
      for (const r of this.log.scan(before, after - before)) {
        if (r.kind === RecordKind.raw && r.flags & RecordFlag.anchor) this.state.anchors.push(r.id);
        if (r.kind === RecordKind.event) this.applyEvent(r.id, JSON.parse(r.text) as GuardEvent);
      }
      await this.catchUpIndexes();
    }
    return after - before;
  }

  /** Persists both indexes crash-safely (after flushing the log, so no index is ahead of it). */
  async checkpoint(): Promise<void> {
    this.assertWritable();
    await this.recordRetention();
    await this.log.flush();
    this.lexical.save();
    this.vector.save();
    this.saveIdentity();
  }

  stats(): StoreStats {
    this.assertOpen();
    const ls = this.log.stats();
    const counts = { raw: 0, summary: 0, event: 0 };
    const lex = this.lexical.stats();
    const vec = this.vector.stats();
    counts.raw = Number(lex.rawDocs ?? 0);
    counts.summary = Number(lex.summaryDocs ?? 0);
    counts.event = ls.nextId - ls.firstId - counts.raw - counts.summary;
    return {
      dir: this.dir,
      spans: counts,
      nextId: ls.nextId,
      bytesOnDisk: dirBytes(this.dir),
      durability: this.options.durability,
      readOnly: this.options.readOnly,
      lexical: lex,
      vector: vec,
      simd: addon().simdIsa(),
      passes: this.state.passes,
      evicted: this.state.evicted.size,
      anchors: this.state.anchors.length,
      pinnedFacts: this.state.pins.length + this.state.anchors.length,
      recoveries: ls.recoveries,
      indexLag: this.lag,
    };
  }

  /** Waits for in-flight appends, checkpoints the indexes, flushes and closes the log. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    await Promise.allSettled([...this.pending]);
    let declared: unknown = null;
    if (!this.options.readOnly && !this.replica?.fenced && (this.retentionPending !== null || this.storeId === null) && this.log.nextId() > this.log.firstId() && !this.log.stats().failed)
      await this.recordRetention().catch((e: unknown) => (declared = e));
    this.closed = true;
    try {
      if (declared !== null) throw declared;
      if (!this.options.readOnly && !this.log.stats().failed) {
        await this.log.flush();
        try {
          this.lexical.save();
          this.vector.save();
          this.saveIdentity();
        } catch {
          // The log is flushed: every span is kept. The indexes are derived from it, and the
          // next open catches up (or rebuilds) whatever an index file lacks, so a close on a
          // full disk still closes.
        }
      }
    } finally {
      this.releaseIndexes();
      await this.log.close();
      await this.replica?.stop();
    }
  }

  /** @internal */
  assertOpen(): void {
    if (this.closed) throw new SpanguardError(ErrorCode.CLOSED, 'the store is closed');
  }

  /** @internal */
  assertWritable(): void {
    this.assertOpen();
    if (this.options.readOnly) throw new SpanguardError(ErrorCode.READ_ONLY, 'the store was opened readOnly');
    if (this.replica?.fenced) throw this.replica.fenced;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.pending.add(p);
    const done = () => this.pending.delete(p);
    p.then(done, done);
    return p;
  }
}

/** @internal */
export function toSpan(r: NativeSpan): Span {
  let meta: Record<string, unknown> | null = null;
  if (r.meta) meta = JSON.parse(r.meta) as Record<string, unknown>;
  const role = (meta && typeof meta.role === 'string' && r.role === 0 ? meta.role : ROLE_NAMES[r.role]) ?? 'other';
  return {
    id: r.id,
    kind: KIND_NAMES[r.kind] ?? 'raw',
    role,
    turnStart: r.turnStart,
    turnEnd: r.turnEnd,
    timestamp: r.timestamp,
    tokens: r.tokens,
    anchor: (r.flags & RecordFlag.anchor) !== 0,
    text: r.text,
    ...(meta && typeof meta.speaker === 'string' ? { speaker: meta.speaker } : {}),
    meta,
  };
}

/**
 * Bytes of every file under `dir`. A writer in another process renames and creates files
 * while this runs (a segment roll, an index's temp file saved and renamed into place): an
 * entry gone between the listing and its stat counts for nothing, as if listed a moment later.
 */
export function dirBytes(dir: string): number {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    throw new SpanguardError(ErrorCode.IO_ERROR, `cannot list ${dir}: ${(e as Error).message}`, { file: dir });
  }
  return entries.reduce((total, entry) => total + entryBytes(path.join(dir, entry.name), entry), 0);
}

function entryBytes(p: string, entry: fs.Dirent): number {
  if (entry.isFile()) return fs.statSync(p, { throwIfNoEntry: false })?.size ?? 0;
  if (!entry.isDirectory()) return 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(p, { withFileTypes: true });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 0;
    throw new SpanguardError(ErrorCode.IO_ERROR, `cannot list ${p}: ${(e as Error).message}`, { file: p });
  }
  return entries.reduce((total, e) => total + entryBytes(path.join(p, e.name), e), 0);
}

