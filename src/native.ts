/**
 * The raw addon surface, typed in one place. Nothing outside `src/` touches the addon; the
 * classes here are wrapped by SpanStore. Validation and defaults live in TypeScript, and
 * C++ re-checks what it must to never crash on bad input.
 *
 * Ids cross the boundary as JS numbers: span ids are u64 on disk but the store refuses to
 * assign one above Number.MAX_SAFE_INTEGER (2^53 - 1), so they are exact doubles.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { makeError } from './errors.js';
import { installAppendWrapper } from './log-append.js';

/** Record kinds as stored in the log (docs/FORMAT.md). */
export const RecordKind = { raw: 1, summary: 2, event: 3 } as const;
export type RecordKindName = keyof typeof RecordKind;
export const KIND_NAMES: Record<number, RecordKindName> = { 1: 'raw', 2: 'summary', 3: 'event' };

/** Record flags (bit set). */
export const RecordFlag = { anchor: 1 } as const;

/** Durability modes as the addon takes them. */
export const DurabilityCode = { none: 0, group: 1, sync: 2 } as const;
export type Durability = keyof typeof DurabilityCode;

/** Roles are stored as a byte; unknown host roles map to `other` and keep their name in meta. */
export const ROLE_CODES: Record<string, number> = { other: 0, system: 1, user: 2, assistant: 3, tool: 4 };
export const ROLE_NAMES: Record<number, string> = { 0: 'other', 1: 'system', 2: 'user', 3: 'assistant', 4: 'tool' };

/**
 * The stored code of a role name, or undefined for a host role without one. Own keys only:
 * a host role named like an Object.prototype member (`constructor`, `toString`,
 * `__proto__`) has no code and is kept by name like any other host role.
 */
export function roleCodeOf(role: string): number | undefined {
  return Object.hasOwn(ROLE_CODES, role) ? ROLE_CODES[role] : undefined;
}

export interface NativeSpanLogOptions {
  readOnly: boolean;
  durability: number; // DurabilityCode
  segmentBytes: number;
  maxTextBytes: number;
}

/** The numeric columns of an append batch (one row per record). */
export interface AppendNumericColumns {
  kinds: Uint8Array;
  flags: Uint8Array;
  roles: Uint8Array;
  turnStart: Float64Array;
  turnEnd: Float64Array;
  timestamps: Float64Array; // ms since the epoch
  tokens: Uint32Array;
}

/** One append batch, in columns so the boundary is crossed once per batch. */
export interface AppendColumns extends AppendNumericColumns {
  texts: string[];
  metas: (string | null)[]; // JSON text or null
}

/**
 * The byte form of a batch, for hosts that hold UTF-8 already (read from a file or a socket,
 * or packed once with {@link packTexts}): record i's text is
 * `texts[textOffsets[i] .. textOffsets[i + 1])`, so `textOffsets` has one more entry than
 * there are rows, non-decreasing, the last at most `texts.length`. Meta likewise, or
 * null/absent for none (an empty slice is no meta). The log checks the offsets
 * (INVALID_ARGUMENT) and the UTF-8 (INVALID_UTF8: overlong forms, surrogates, > U+10FFFF,
 * truncated sequences) of every record before writing any, then copies each text once
 * into the record it encodes: no JS string is converted.
 */
export interface AppendByteColumns extends AppendNumericColumns {
  texts: Uint8Array;
  textOffsets: Uint32Array;
  metas?: Uint8Array | null;
  metaOffsets?: Uint32Array;
}

/**
 * Packs strings into the byte form ({@link AppendByteColumns} `texts` + `textOffsets`).
 * Refuses a string with a lone surrogate (INVALID_UTF8), as the string form does, rather
 * than letting TextEncoder turn it into U+FFFD. This is the cost a host holding JS strings
 * pays to use the byte form (bench/append.bench.ts measures it).
 */
export function packTexts(texts: readonly string[]): { bytes: Uint8Array; offsets: Uint32Array } {
  const offsets = new Uint32Array(texts.length + 1);
  let total = 0;
  for (let i = 0; i < texts.length; i++) {
    const t = texts[i]!;
    if (!t.isWellFormed()) throw makeError('INVALID_UTF8', `text ${i} is not valid UTF-8 (it contains a lone surrogate)`);
    total += Buffer.byteLength(t, 'utf8');
    offsets[i + 1] = total;
  }
  const bytes = Buffer.allocUnsafe(total);
  for (let i = 0; i < texts.length; i++) bytes.write(texts[i]!, offsets[i]!, 'utf8');
  return { bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, total), offsets };
}

/** A record as read back from the log: the text is a copy, never a view into the mapping. */
export interface NativeSpan {
  id: number;
  kind: number;
  flags: number;
  role: number;
  turnStart: number;
  turnEnd: number;
  timestamp: number;
  tokens: number;
  text: string;
  meta: string | null;
}

export interface RecoveryReport {
  /** clean: every byte is a valid record; tornTail: an incomplete last record was dropped; corrupt: a bad record before the tail. */
  outcome: 'clean' | 'torn-tail' | 'corrupt';
  /** Byte offset just past the last valid record. */
  validEnd: number;
  /** Number of valid records. */
  records: number;
  /** Id of the first record after the header; the next id is firstId + records. */
  firstId: number;
  /** Where the problem is (corrupt or torn-tail), else -1. */
  errorOffset: number;
  message: string;
}

export interface LogStats {
  firstId: number;
  nextId: number;
  segments: number;
  bytes: number;
  durability: number;
  readOnly: boolean;
  /** True once an fsync failed: the log refuses every later write. */
  failed: boolean;
  /** Torn tails truncated when this log was opened (file, offset, bytes). */
  /** zerosOnly: every cut byte was zero (a sync/group writer's prefill, or data the disk never got); no record was cut into. */
  recoveries: { file: string; offset: number; droppedBytes: number; zerosOnly: boolean }[];
}

export interface VerifyReport {
  ok: boolean;
  records: number;
  bytes: number;
  problems: { file: string; offset: number; outcome: string; message: string }[];
}

export interface NativeSpanLog {
  /**
   * Writes the batch and assigns contiguous ids; resolves with the first id once durable
   * under the log's mode. On any bad record nothing is written (a large byte-form batch is
   * checked chunk by chunk as it is written, and cut back before the promise rejects; the
   * error is the one a whole-batch check gives: docs/FORMAT.md, "Large batches"). Under
   * `group`, ids are assigned at the call and the records of every append made before the
   * next check phase are written with one pwrite, then one fdatasync. An `append`, `flush` or
   * `close` of this log made while the native side reads the batch (from an element getter
   * of `texts` or `metas`; from a column getter too where code generation from strings is
   * disabled, since the column properties are then read natively) rejects with
   * `INVALID_ARGUMENT`; column getters otherwise run in JS before the call.
   */
  append(cols: AppendColumns | AppendByteColumns): Promise<number>;
  get(id: number): NativeSpan | undefined;
  /** One crossing for many ids; holes for unknown ids. */
  getMany(ids: Float64Array): (NativeSpan | undefined)[];
  /** Records [fromId, fromId + limit), in id order; `kindMask` (bit k = kind k) keeps only those kinds. */
  scan(fromId: number, limit: number, kindMask?: number): NativeSpan[];
  /** Ids in [fromId, fromId + limit) of the kinds in `kindMask` whose flags include `flags`; no texts copied. */
  scanIds(fromId: number, limit: number, kindMask: number, flags: number): Float64Array;
  /**
   * Drops this process's resident pages of every sealed segment's read mapping (madvise
   * MADV_DONTNEED): the pages stay in the page cache and a later read faults its page back.
   * Returns the bytes of mapping advised.
   */
  releaseResident(): number;
  firstId(): number;
  /** One past the last id written. */
  nextId(): number;
  /** Readers: map records another process appended since open; returns nextId. */
  refresh(): number;
  /** fdatasync now (for `none`). */
  flush(): Promise<void>;
  /** CRC scan of every segment. */
  verify(): VerifyReport;
  stats(): LogStats;
  /** Waits for in-flight syncs, flushes, unmaps, releases the lock. Idempotent. */
  close(): Promise<void>;
}

export interface LexicalHits {
  ids: Float64Array;
  scores: Float32Array;
}

/** Texts held by the host instead of a SpanLog (consecutive ids), for `phrase`. */
export interface LexicalTextSource {
  ids: Float64Array;
  kinds: Uint8Array;
  texts: string[];
}

export interface NativeLexicalIndex {
  /** Span ids held in namespace `kind`, ascending. */
  ids(kind: number): Float64Array;
  /**
   * ids(kind) copied on the thread pool, under the lock a catch-up's steps take (at 10^6
   * spans 8 MB); releaseAsync throws INVALID_ARGUMENT until it settles.
   */
  idsAsync(kind: number): Promise<Float64Array>;
  /** One past the highest span id indexed (or skipped as an event); answered without the index's lock, so it never waits for a pool search or a catch-up step. */
  highWater(): number;
  /**
   * Index raw and summary records from highWater() to log.nextId(), or one slice of that
   * (the caller yields to the event loop between slices): at most `limit` ids, and no more
   * records than it takes to reach `maxBytes` of text and metadata (at least one). Returns
   * records indexed.
   */
  catchUp(log: NativeSpanLog, limit?: number, maxBytes?: number): number;
  /**
   * catchUp's slice indexed on the thread pool: the slice's records are copied out of the log
   * on this thread (only the copy costs the event loop), then indexed in steps of about a
   * millisecond each under the index's lock. Reads meanwhile (search, phrase, phraseHas, ids,
   * stats) wait at most one step and see every id below the high water they read,
   * none above it. Until it settles add, catchUp, catchUpAsync and save throw
   * INVALID_ARGUMENT. Resolves with the records indexed; a failure rejects with its code.
   */
  catchUpAsync(log: NativeSpanLog, limit?: number, maxBytes?: number): Promise<number>;
  /**
   * Direct ingest (the same path catchUp uses): ids strictly increasing from highWater(),
   * kind 3 (event) only advances the high water. The batch is checked whole first.
   * Returns the raw and summary records indexed.
   */
  add(ids: Float64Array, kinds: Uint8Array, turnStart: Float64Array, turnEnd: Float64Array, texts: string[]): number;
  /** BM25 top-k over one namespace (kind 1 raw / 2 summary), optional turn range filter (NaN = open). */
  search(query: string, k: number, kind: number, turnMin: number, turnMax: number): LexicalHits;
  /**
   * `search` on the thread pool (awaited at once by a search, so it may take this thread's
   * core): the arguments are checked on this thread (a bad one rejects
   * with its code), the BM25 top-k runs under the index's lock, so the event loop turns while
   * it walks the postings. A long walk lets a waiting catch-up step or call of this thread take
   * the index once it has run half a millisecond, then goes on (`stats().bm25Pauses` counts
   * it): the answer is the index's as it stood when the walk began. The same hits as `search`
   * on that index; releaseAsync throws INVALID_ARGUMENT until it settles.
   */
  searchAsync(query: string, k: number, kind: number, turnMin: number, turnMax: number): Promise<LexicalHits>;
  /**
   * Test seam of the pausing walk: `search` on this thread, pausing at every poll; each pause
   * adds the next `perPause` (1) of `texts` as raw documents (the next span ids), as a catch-up
   * step taking the index meanwhile would. `pauses`: how many it made.
   */
  _searchPausing(query: string, k: number, kind: number, turnMin: number, turnMax: number, texts: string[], perPause?: number): LexicalHits & { pauses: number };
  /**
   * `search` on this thread when the query's terms (those query-term selection keeps) hold at
   * most `maxPostings` postings in all (an integer ≥ 0), else null with nothing searched: the
   * sum bounds the walk's cost before it starts, so a caller runs the small searches here and
   * sends the rest to `searchAsync`. The same hits as `search` whenever it answers.
   */
  searchWithin(query: string, k: number, kind: number, turnMin: number, turnMax: number, maxPostings: number): LexicalHits | null;
  /** Ids (ascending) of every span of `kind` whose text contains `phrase` verbatim (checked against the source's text); limit ≥ 1 or Infinity. */
  phrase(log: NativeSpanLog | LexicalTextSource, phrase: string, kind: number, limit: number): Float64Array;
  /**
   * `phrase`, except that a phrase the index cannot narrow (no word character) is checked
   * against the newest texts only, until `scanBytes` bytes of text have been read; `complete`
   * is false when older texts went unread (every other phrase is answered in full).
   */
  phraseWithin(log: NativeSpanLog | LexicalTextSource, phrase: string, kind: number, limit: number, scanBytes: number): { ids: Float64Array; complete: boolean };
  /** 1 where span `ids[i]` is among `phrase(phrases[i])`'s answers (postings seeked to that span, text verified); one crossing per batch. */
  phraseHas(log: NativeSpanLog | LexicalTextSource, phrases: string[], ids: Float64Array, kind: number): Uint8Array;
  /** The tokenizer's output, for tests and debugging. */
  tokenize(text: string): string[];
  /** Persist crash-safely (temp + fsync + rename + dir fsync). */
  save(): void;
  /**
   * `save()` on the addon's write lane (below the JS thread's priority). Until it settles the index can be read but not changed:
   * add, catchUp and save throw INVALID_ARGUMENT.
   */
  saveAsync(): Promise<void>;
  stats(): Record<string, number | string>;
  /**
   * Frees the index on the thread pool (the collector would free it on the JS thread); later
   * calls throw CLOSED at once. Resolves true when this call released it, false when it was
   * released already. Refused (INVALID_ARGUMENT) while a save or a pool catch-up runs.
   */
  releaseAsync(): Promise<boolean>;
}

export interface NativeEmbedder {
  readonly dims: number;
  /** Row-major n x dims, L2-normalized. */
  embed(texts: string[]): Float32Array;
}

export interface VectorHits {
  ids: Float64Array;
  distances: Float32Array;
}

export interface NativeVectorIndexOptions {
  dims: number;
  scalar: 'f32' | 'f16' | 'i8';
  /** Namespaces with fewer vectors than this are searched by an exact scan (default: measured crossover). */
  exactBelow?: number;
  /** Open beside a live writer: no lock, no writes (add/catchUp of new spans and save throw READ_ONLY). */
  readOnly?: boolean;
  /**
   * binary, f16 (default true): the rows are read in place through a read-only mapping of
   * `vectors.bin` (the records hold the same f16 bytes) instead of a copy in anonymous
   * memory; false keeps the copy. Same answers either way (docs/VECTOR_FORMAT.md, "Rows").
   */
  mapRows?: boolean;
  /**
   * Strategy at and above `exactBelow` (default 'binary'): 'binary' scans 512-bit SimHash
   * signatures (of every vector, or of the nearest lists once partitioned) with the query's
   * rotated coordinates at 4 bits, and reranks the nearest `max(rerankMin, size * rerankShare)`
   * (partitioned: `probeRerank`) by that estimate exactly; 'hnsw' walks a usearch graph.
   * See docs/VECTOR_FORMAT.md.
   */
  ann?: 'binary' | 'hnsw';
  /** binary, unpartitioned: candidates reranked exactly per query, at least (default 512) ... */
  rerankMin?: number;
  /** ... and this share of the namespace (default 1/512). */
  rerankShare?: number;
  /**
   * binary: a namespace of at least this many rows is split into coarse lists (an inverted
   * file over the signatures) at the next checkpoint or open, and a query scans only the
   * nearest lists (default Infinity: never — on the bench's generated vectors the nearest lists need a fifth of the rows to hold 0.95 of a quote's exact top-10, where the full scan keeps 0.99). See docs/VECTOR_FORMAT.md, "Partitions".
   */
  partitionAbove?: number;
  /** Partitioned: a query takes the nearest lists up to a cap of this many rows (default 16,384) ... */
  probeMin?: number;
  /** ... or this share of the namespace, whichever is more (default 1/5). */
  probeShare?: number;
  /**
   * Partitioned: past the nearest list, a list is taken only while its centroid lies within
   * this cosine distance of the nearest centroid's (default Infinity: up to the cap).
   */
  probeMargin?: number;
  /** Partitioned: candidates reranked exactly per query (default 4,096), whatever the namespace's size. */
  probeRerank?: number;
  /**
   * Partitioned: threads a search scans its lists on, 1 or 2 (default 2): from 65,536 rows
   * probed, the lists are split between the calling thread and a helper thread of the index's
   * own. The answer is the same either way; `stats().probedSplit` counts the split searches.
   */
  searchThreads?: number;
  /** HNSW parameters (defaults 16 / 128 / 64). */
  connectivity?: number;
  expansionAdd?: number;
  expansionSearch?: number;
}

export interface NativeVectorIndex {
  readonly dims: number;
  /** Span ids with a vector in namespace `kind` (duplicates' aliases included), ascending. */
  ids(kind: number): Float64Array;
  /**
   * ids(kind) read on the thread pool (the walk over duplicates' aliases and the sort: tens
   * of ms at 10^6 spans), under the lock a catch-up's steps take; close and closeAsync throw
   * INVALID_ARGUMENT until it settles.
   */
  idsAsync(kind: number): Promise<Float64Array>;
  highWater(): number;
  /** Built-in embedder path: embed records [highWater, log.nextId) in C++ and add them; `limit` and `maxBytes` cut it to one slice as for the lexical index. */
  catchUp(log: NativeSpanLog, embedder: NativeEmbedder, limit?: number, maxBytes?: number): number;
  /**
   * catchUp's slice embedded and indexed on the thread pool, as NativeLexicalIndex
   * `catchUpAsync` does (search, ids, stats and highWater wait at most one step); until it
   * settles add, catchUp, catchUpAsync, save and close throw INVALID_ARGUMENT.
   */
  catchUpAsync(log: NativeSpanLog, embedder: NativeEmbedder, limit?: number, maxBytes?: number): Promise<number>;
  /** Host embedder path: store vectors (appended to the vectors file) and index them. */
  add(ids: Float64Array, kinds: Uint8Array, vectors: Float32Array): void;
  /**
   * Cosine distance top-k spans in one namespace (a span indexed as several windows counts
   * once). `strategy` forces the exact scan or the index's `ann` (naming the other ann is an
   * INVALID_ARGUMENT error); by default the namespace's size picks.
   */
  search(query: Float32Array, k: number, kind: number, strategy?: 'exact' | 'binary' | 'hnsw'): VectorHits;
  /**
   * `search` begun on a helper thread (the query is copied), so the caller's next calls (the
   * lexical lookups of a hybrid search) overlap the signature scan; `searchEnd()` returns its
   * hits, running it on the calling thread if the helper has not started. Any other call
   * finishes a begun search first; a later `searchBegin` drops an uncollected result.
   */
  searchBegin(query: Float32Array, k: number, kind: number, strategy?: 'exact' | 'binary' | 'hnsw'): void;
  /** The hits of the search `searchBegin` started; INVALID_ARGUMENT when none is pending. */
  searchEnd(): VectorHits;
  /**
   * `search` on the addon's read lane (threads of its own, kept off this thread's core), under
   * the lock a catch-up's steps take, with buffers of its
   * own (any number may be in flight, unlike searchBegin's one slot): the arguments are
   * checked on this thread (a bad one rejects with its code) and the query copied. The same
   * hits as `search`; close and closeAsync throw INVALID_ARGUMENT until it settles.
   */
  searchAsync(query: Float32Array, k: number, kind: number, strategy?: 'exact' | 'binary' | 'hnsw'): Promise<VectorHits>;
  /**
   * The hits of a `searchAsync` still in flight, when this thread can have them now, else
   * null (await the promise: it settles with the same hits either way). Finished on the lane:
   * its hits, without waiting for the completion to reach this thread. Not started yet, the
   * index free (never waited for) and the namespace at most `stealRows` vectors: run here now
   * (the lane's turn then does nothing). Otherwise waits up to `spinMicros` (default 0) for
   * the lane, without sleeping. Null for a promise that is not an unsettled searchAsync of
   * this index.
   */
  searchTake(search: Promise<VectorHits>, stealRows: number, spinMicros?: number): VectorHits | null;
  /** Test seam: a pool job that holds this index's lock (as a read-lane search does) for `ms` milliseconds. */
  _holdAsync(ms: number): Promise<void>;
  save(): void;
  /** `save()` on the addon's write lane; until it settles add, catchUp, save and close throw INVALID_ARGUMENT (search is fine). */
  saveAsync(): Promise<void>;
  stats(): Record<string, number | string>;
  /** Releases the vectors file's writer lock and the memory, without saving. Idempotent; later calls throw CLOSED. */
close(): void;
  /**
   * close() with the memory freed on the thread pool; later calls throw CLOSED at once, the
   * vectors file's lock is released when it resolves. Resolves true when this call released
   * the index, false when it was closed already.
   */
  closeAsync(): Promise<boolean>;
}

/** An engine object built on the thread pool, for its class constructor to adopt (once). */
export type PreparedHandle = { readonly __prepared: unique symbol };

export interface Addon {
  setErrorFactory(make: (code: string, message: string) => Error): void;
  SpanLog: new (dir: string, options: NativeSpanLogOptions, prepared?: PreparedHandle) => NativeSpanLog;
  /** Opens a log on the thread pool (lock, recovery scan, mappings); `new SpanLog(dir, options, handle)` adopts it. */
  prepareSpanLog(dir: string, options: NativeSpanLogOptions): Promise<PreparedHandle>;
  /** Loads a lexical index file on the thread pool; `new LexicalIndex(file, handle)` adopts it. */
  prepareLexicalIndex(file: string): Promise<PreparedHandle>;
  /** Opens a vector index on the thread pool; `new VectorIndex(dir, options, handle)` adopts it. */
  prepareVectorIndex(dir: string, options: NativeVectorIndexOptions): Promise<PreparedHandle>;
  /** Recovery as a pure function over one segment's bytes. */
  recoverSegment(bytes: Uint8Array): RecoveryReport;
  LexicalIndex: new (file: string, prepared?: PreparedHandle) => NativeLexicalIndex;
  /** The form the lexical index files a (case-folded) token under beside itself: Porter2 stem, diacritics folded, leading zeros dropped. */
  normalizeTerm(token: string): string;
  Embedder: new (dims: number) => NativeEmbedder;
  VectorIndex: new (dir: string, options: NativeVectorIndexOptions, prepared?: PreparedHandle) => NativeVectorIndex;
  /** The SIMD instruction set NumKong dispatches to on this CPU. */
  simdIsa(): string;
}

/**
 * Opens a span log with its heavy part (the writer lock, the recovery scan of every segment,
 * the mappings) on the thread pool: the event loop keeps running while a large log opens.
 */
export async function openSpanLog(dir: string, options: NativeSpanLogOptions): Promise<NativeSpanLog> {
  const a = addon();
  return new a.SpanLog(dir, options, await a.prepareSpanLog(dir, options));
}

/** Loads a lexical index file on the thread pool (a missing or bad file gives an empty index, as `new LexicalIndex` does). */
export async function openLexicalIndex(file: string): Promise<NativeLexicalIndex> {
  const a = addon();
  return new a.LexicalIndex(file, await a.prepareLexicalIndex(file));
}

/** Opens a vector index (vectors file, snapshots) on the thread pool. */
export async function openVectorIndex(dir: string, options: NativeVectorIndexOptions): Promise<NativeVectorIndex> {
  const a = addon();
  return new a.VectorIndex(dir, options, await a.prepareVectorIndex(dir, options));
}

/** Package root: the nearest directory above this file whose package.json is spanguard's (src/, dist/ or a bench build). */
export const packageRoot = ((): string => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (pkg.name === 'spanguard') return dir;
    } catch {
      // not here; keep walking up
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error('spanguard: cannot find the package root (package.json)');
    dir = up;
  }
})();

let loaded: Addon | undefined;

/** Loads the addon once (build/Release first, then prebuilds/, as node-gyp-build does). */
export function addon(): Addon {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  const nodeGypBuild = require('node-gyp-build') as (dir: string) => Addon;
  // SPANGUARD_ADDON_PATH loads a specific build (the ASAN build in `npm run test:asan`).
  const explicit = process.env.SPANGUARD_ADDON_PATH;
  const a = explicit ? (require(path.resolve(explicit)) as Addon) : nodeGypBuild(packageRoot);
  a.setErrorFactory(makeError);
  installAppendWrapper(a.SpanLog as unknown as { prototype: object }, makeSpan);
  loaded = a;
  return a;
}

/** Builds a span read from the log: one call V8 turns into an object of a fixed shape. */
function makeSpan(
  id: number,
  kind: number,
  flags: number,
  role: number,
  turnStart: number,
  turnEnd: number,
  timestamp: number,
  tokens: number,
  text: string,
  meta: string | null,
): NativeSpan {
  return { id, kind, flags, role, turnStart, turnEnd, timestamp, tokens, text, meta };
}
