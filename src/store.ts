/**
 * SpanStore: the public face of the engine. An append-only span log (the retention set,
 * immutable and keyed by span id), two derived indexes caught up from it (lexical BM25 +
 * phrase, and vectors), the compaction guard, the audit scheduler and the verdict. The
 * parts live in src/store/: options, spans (append validation, keys), the event trail,
 * index upkeep, and the engine context the guard and the auditor receive.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DurabilityCode, openSpanLog, RecordFlag, RecordKind, type NativeLexicalIndex, type NativeSpanLog, type NativeVectorIndex } from './native.js';
import { ErrorCode, SpanguardError } from './errors.js';
import type { GuardEvent, RetentionEvent } from './events.js';
import { HitRateMonitor, VerdictMonitor, type Verdict, type VerdictState } from './verdict.js';
import { CompactionGuard, type CompactionReceipt, type CompactionRequest } from './guard.js';
import { Auditor, type AuditReport } from './audit.js';
import { MAX_QUERY_CHARS, search as runSearch } from './search.js';
import { checkRetention, invalid, resolveOptions, type Resolved } from './store/options.js';
import { checkSpanId, checkSpanIds, exactHits, KeyIndex, summaryColumns, toSpan, turnColumns } from './store/spans.js';
import { FactCache } from './store/facts.js';
import { applyEvent, applyRecords, eventColumns, newGuardState, readTrail, readTrailInSlices, restoreSpans, retentionChange, type GuardState } from './store/trail.js';
import { collectStats } from './store/stats.js';
import { Indexes } from './store/upkeep.js';
import { reportProgress } from './store/progress.js';
import { ScanSlicer } from './catchup.js';
import { engineContextOf, searchContextOf, type EngineContext } from './store/context.js';
import type { Hit, SearchOptions, SearchResult, Span, SpanStoreOptions, StoreStats, TurnInput } from './store/types.js';
import type { ReplicaStatus, Shipper } from './replica/index.js';
import { openReplica, replicate } from './store/replication.js';

export type * from './store/types.js';
export { dirBytes } from './store/disk.js';

export class SpanStore {
  /** @internal */ readonly log: NativeSpanLog;
  /** @internal */ readonly state: GuardState = newGuardState();
  /** @internal */ readonly monitor: VerdictMonitor;
  /** @internal */ readonly hitRate = new HitRateMonitor(0.15);
  /** @internal */ readonly options: Resolved;
  /** @internal The view of this store the guard and the auditor receive. */
  readonly engine: EngineContext;
  private readonly indexes: Indexes;
  private readonly guard: CompactionGuard;
  private readonly auditor: Auditor;
  private readonly keys: KeyIndex;
  private readonly facts = new FactCache();
  private closed = false;
  /** The retention declaration still to record (see replay()). */
  private retentionPending: RetentionEvent | null = null;
  /** The store's id, from its `store` event; null until recorded (see recordRetention). */
  private storeId: string | null = null;
  private pending = new Set<Promise<unknown>>();
  private lastVerdictState: VerdictState = 'lossless';
  /** Ships the log to object storage (the `replica` option), or null. */
  private replica: Shipper | null = null;

  private constructor(
    readonly dir: string,
    options: Resolved,
    log: NativeSpanLog,
    indexes: Indexes,
  ) {
    this.options = options;
    this.log = log;
    this.indexes = indexes;
    const bestEffortReason =
      options.rawTtlSeconds < options.horizonSeconds ? `raw TTL ${options.rawTtlSeconds}s is shorter than the horizon ${options.horizonSeconds}s` : undefined;
    this.monitor = new VerdictMonitor({
      unknownAfter: options.unknownAfter,
      auditEvery: options.auditEvery,
      bestEffort: options.bestEffort,
      ...(bestEffortReason ? { bestEffortReason } : {}),
    });
    this.keys = new KeyIndex(log, (id) => this.get(id));
    this.engine = engineContextOf(this, indexes);
    this.guard = new CompactionGuard(this.engine);
    this.auditor = new Auditor(this.engine);
  }

  /** @internal The indexes as they are now; a rebuild (or a test injecting a fault) replaces them. */
  get lexical(): NativeLexicalIndex {
    return this.indexes.lexical;
  }
  set lexical(index: NativeLexicalIndex) {
    this.indexes.lexical = index;
  }
  /** @internal */
  get vector(): NativeVectorIndex {
    return this.indexes.vector;
  }
  set vector(index: NativeVectorIndex) {
    this.indexes.vector = index;
  }
  /** @internal */ get embedderNative() {
    return this.indexes.embedder;
  }
  /** @internal What the open found wrong with the derived files (src/store/upkeep.ts). */
  get derivedProblems() {
    return this.indexes.derivedProblems;
  }

  /**
   * Opens (or creates) a store in `dir`. Takes the writer lock unless `readOnly`; recovers a
   * torn log tail; loads the indexes and catches them up from the log (rebuilding any that is
   * missing, stale or corrupt); replays the event trail to restore the guard and verdict.
   */
  static async open(dir: string, options: SpanStoreOptions = {}): Promise<SpanStore> {
    if (typeof dir !== 'string' || dir.length === 0) invalid('dir must be a non-empty path');
    const o = resolveOptions(options);
    checkRetention(o);
    const logDir = path.join(dir, 'log');
    if (!o.readOnly) {
      fs.mkdirSync(logDir, { recursive: true, mode: 0o700 });
      fs.mkdirSync(path.join(dir, 'index', 'vector'), { recursive: true, mode: 0o700 });
    } else if (!fs.existsSync(logDir)) {
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `no spanguard store at ${dir} (missing ${logDir})`);
    }
    reportProgress(o, 'open', 'start');
    try {
      return await SpanStore.openIn(dir, o, logDir);
    } finally {
      reportProgress(o, 'open', 'end');
    }
  }

  /**
   * open() once the options are checked and the directories made. Progress: `log` (the log
   * opened and its tail recovered), `load` (the index files loaded), `replay` (the trail and
   * the derived files' checks; an index rebuilt or caught up reports its own events).
   */
  private static async openIn(dir: string, o: Resolved, logDir: string): Promise<SpanStore> {
    // The heavy parts of opening (the log's recovery scan and mappings, loading the index
    // files) run on the thread pool: the host's event loop keeps running meanwhile.
    const log = await openSpanLog(logDir, {
      readOnly: o.readOnly,
      durability: DurabilityCode[o.durability === 'replicated' ? 'group' : o.durability],
      segmentBytes: o.segmentBytes,
      maxTextBytes: o.maxTextBytes,
    });
    reportProgress(o, 'open', 'log');
    // A failed open releases everything it took: the log (its lock, maps and helper thread)
    // and the vector index (the lock on vectors.bin, its memory), so the next open of this
    // store in this process is not refused.
    let indexes: Indexes | undefined;
    try {
      indexes = await Indexes.open(dir, o, log);
      reportProgress(o, 'open', 'load');
      const store = new SpanStore(dir, o, log, indexes);
      reportProgress(o, 'open', 'replay');
      await store.replay();
      // The anchor facts the last close or checkpoint kept, when they are this log's.
      store.facts.load(path.join(dir, 'index'), store.storeId, log);
      if (o.replica !== undefined && !o.readOnly) {
        const recordGap = (detail: string) => store.recordEvent({ type: 'degrade', pass: store.state.passes, reason: 'replica-gap', detail, spanIds: [] });
        await openReplica(dir, o.durability, o.replica, (shipper) => (store.replica = shipper), recordGap);
      }
      return store;
    } catch (e) {
      // A background catch-up started by the replay holds the indexes until its job settles.
      await indexes?.stop();
      indexes?.release();
      await log.close();
      throw e;
    }
  }

  /** The open-time replay: the guard state from the log, the derived files checked, the trail applied, what was found recorded. */
  private async replay(): Promise<void> {
    // Both read every record of the log: in slices that let the host's event loop run.
    const slicer = new ScanSlicer();
    await restoreSpans(this.state, this.log, slicer);
    const events = await readTrailInSlices(this.log, slicer);
    const disagreements = events.flatMap((r) => (r.error === undefined ? [] : [r.error]));
    for (const r of events) if (r.event?.type === 'store') this.storeId ??= r.event.storeId;
    const derived = this.indexes.checkDerived(this.storeId);
    disagreements.push(...derived.disagreements);
    for (let i = 0; i < events.length; i++) {
      const r = events[i]!;
      if (r.event) applyEvent(this, r.id, r.event);
      if ((i & 1023) === 1023) await slicer.pause();
    }
    this.lastVerdictState = this.monitor.state();
    const retention = retentionChange(events, this.options, this.state.passes);
    // A long backlog is caught up after open resolves (backgroundCatchUpAbove); a short one now.
    if (this.indexes.backlog() > this.options.backgroundCatchUpAbove) this.indexes.startBackground();
    else await this.indexes.catchUp();
    if (this.options.readOnly) return;
    if (retention !== null) {
      this.retentionPending = retention;
      // A best-effort declaration is recorded at once: it must never be lost. Otherwise the
      // record waits for the first compaction or the close (the verdict only concerns
      // evicted turns), so a new store's turns keep contiguous ids from 1.
      if (retention.bestEffort || this.log.nextId() > this.log.firstId()) await this.recordRetention();
    } else if (this.storeId === null && this.log.nextId() > this.log.firstId()) await this.recordRetention();
    for (const r of derived.rebuilt) await this.recordEvent({ type: 'index-rebuilt', pass: this.state.passes, index: r.name, reason: r.reason });
    // The log only reports a torn tail; recording it keeps the trail complete.
    for (const r of this.log.stats().recoveries)
      await this.recordEvent({ type: 'recovery', pass: this.state.passes, file: r.file, offset: r.offset, droppedBytes: r.droppedBytes, zerosOnly: r.zerosOnly });
    if (disagreements.length > 0)
      await this.recordEvent({ type: 'degrade', pass: this.state.passes, reason: 'index-disagreement', detail: disagreements.join('; '), spanIds: [] });
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

  /** @internal Appends a guard event to the log and applies it; records a verdict change too. */
  async recordEvent(e: GuardEvent): Promise<number> {
    this.assertWritable();
    const id = await this.log.append(eventColumns(e, this.state.lastTurn));
    await this.applyRecorded(id, e);
    return id;
  }

  /** @internal Applies event `e`, which this store wrote to the log as record `id`; records a verdict change too. */
  async applyRecorded(id: number, e: GuardEvent): Promise<void> {
    applyEvent(this, id, e);
    // The state alone first: the reasons are built only when it changed and they are recorded.
    if (e.type !== 'verdict' && this.monitor.state() !== this.lastVerdictState) {
      const v = this.monitor.verdict();
      const from = this.lastVerdictState;
      this.lastVerdictState = v.state;
      await this.recordEvent({ type: 'verdict', pass: this.state.passes, from, to: v.state, reasons: v.reasons });
    }
  }

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
    const retried = this.keys.stored(turns);
    if (retried !== null) {
      // A retry after REPLICA_UNAVAILABLE resolves once its stored turns are replicated.
      if (retried.length > 0) await replicate(this.replica, this.options.durability, Math.max(...retried) + 1, []);
      return retried;
    }
    const vetoed: number[] = [];
    const facts: (string | undefined)[] = [];
    const cols = turnColumns(turns, this.state.lastTurn, vetoed, facts);
    const appended = this.track(this.log.append(cols));
    // Indexed beside the group commit's fdatasync, not after it: the catch-up of the whole
    // burst starts in the check phase that starts its sync (Indexes.catchUpStaged).
    const indexed = this.indexes.catchUpStaged();
    // `replicated`: ship while the local group commit runs, not after it — from the check
    // phase after the one that writes the batch (an immediate queued by an immediate).
    if (this.replica !== null && this.options.durability === 'replicated') setImmediate(() => setImmediate(() => this.replica?.kick()));
    const first = await appended;
    const replicated = replicate(this.replica, this.options.durability, first + turns.length, cols.texts);
    const ids = Array.from({ length: turns.length }, (_, j) => first + j);
    for (let j = 0; j < turns.length; j++) {
      if (!(cols.flags[j]! & RecordFlag.anchor)) continue;
      this.state.anchors.push(first + j);
      if (facts[j] !== undefined) this.facts.remember(first + j, facts[j]!, cols.texts[j]!);
    }
    for (let j = 0; j < turns.length; j++) if (turns[j]!.key !== undefined) this.keys.remember(turns[j]!.key!, first + j);
    if (turns.length > 0) this.state.lastTurn = Math.max(this.state.lastTurn, cols.turnEnd[turns.length - 1]!);
    await indexed;
    // After the whole batch, so its ids stay contiguous.
    if (vetoed.length > 0) await this.recordEvent({ type: 'anchor-veto', spanIds: vetoed.slice(0, 4096).map((j) => first + j) });
    await replicated;
    return ids;
  }

  /** Where the object-store replica stands (docs/replication.md), or null without the `replica` option. */
  replicaStatus(): ReplicaStatus | null {
    this.assertOpen();
    return this.replica?.status() ?? null;
  }

  /** @internal The fact an anchor span pins (src/store/facts.ts FactCache). */
  anchorFactOf(id: number, text: string, role: number): string | null {
    return this.facts.of(id, text, role);
  }

  /**
   * @internal Appends a summary record (kind summary) and, in the same append, the event
   * record that names it (`event.text`, its JSON, made by the caller for `event.summaryId`,
   * the log's next id), so both are in the log or neither; then indexes the summary in the
   * summary namespace. Resolves with the event's record id; the caller applies the event
   * (`applyRecorded`).
   */
  async appendSummary(text: string, turnStart: number, turnEnd: number, tokens: number, event: { summaryId: number; text: string }): Promise<number> {
    this.assertWritable();
    const cols = summaryColumns(text, turnStart, turnEnd, tokens, { text: event.text, lastTurn: this.state.lastTurn });
    // Ids are taken when the append is staged: the summary gets the id the event names, or nothing is written.
    if (this.log.nextId() !== event.summaryId)
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `the summary's event names id ${event.summaryId}, but the log's next id is ${this.log.nextId()}`);
    const id = await this.track(this.log.append(cols));
    await this.indexes.catchUp();
    return id + 1;
  }

  /**
   * Catches the indexes up with the log now; rejects with the failure when one stays behind
   * (the spans stay stored either way). Appends and searches do this on their own.
   */
  async catchUp(): Promise<void> {
    this.assertOpen();
    await this.indexes.join();
    const lag = this.indexes.lagError();
    if (lag !== null) throw lag;
  }

  /** @internal Embeds query texts with whichever embedder the store uses. */
  embedQuery(texts: string[]): Promise<Float32Array> {
    return this.indexes.embedQuery(texts);
  }

  /** The span, verbatim, with its turn range; undefined for an unknown id. */
  get(id: number): Span | undefined {
    this.assertOpen();
    checkSpanId(id);
    const r = this.log.get(id);
    return r ? toSpan(r) : undefined;
  }

  /** Many spans in one crossing; `undefined` holes for unknown ids. */
  getMany(ids: readonly number[]): (Span | undefined)[] {
    this.assertOpen();
    checkSpanIds(ids);
    return this.log.getMany(Float64Array.from(ids)).map((r) => (r ? toSpan(r) : undefined));
  }

  /**
   * Hybrid search (src/search.ts): exact phrase, BM25 (stems, fields) and vector candidates
   * fused by reciprocal rank, reranked by their support for the query; `miss` ("not in
   * transcript") only when the query's specific content is stated nowhere (src/support.ts).
   */
  async search(query: string, options: SearchOptions = {}): Promise<SearchResult> {
    this.assertOpen();
    // The store's verdict, not the trail's alone: while an index lacks spans (catching up in
    // the background, or behind after a failure) an answer cannot vouch for what it lacks.
    return runSearch({ ...searchContextOf(this.engine, () => this.verdict().state), poolRead: (read) => this.indexes.read(read) }, query, options);
  }

  /**
   * Every raw span containing `phrase` verbatim (byte-exact, verified against the log). The
   * phrase is at most MAX_QUERY_CHARS characters, as a search's query is: the lookup runs on
   * the JS thread and its cost grows with the phrase, so the bound is what keeps a call short.
   */
  findExact(phrase: string, options: { limit?: number } = {}): Hit[] {
    this.assertOpen();
    if (typeof phrase !== 'string' || phrase.length === 0) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'phrase must be a non-empty string');
    if (phrase.length > MAX_QUERY_CHARS)
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `phrase is ${phrase.length} characters; the limit is ${MAX_QUERY_CHARS}`);
    const ids = this.lexical.phrase(this.log, phrase, RecordKind.raw, options.limit ?? 1_000_000);
    return exactHits(this.log.getMany(ids), this.verdict().state);
  }

  /**
   * One compaction pass. `evict`: ids leaving the live window; `rewrite`: entries this pass
   * replaces with its summary (summaries only: a raw id throws LosslessRetrievalBoundaryError);
   * `summary`: the new entry. Returns a receipt, or throws (CompactionRefusedError for
   * anchors that are not verifiably retrievable under the `refuse` policy).
   */
  async compact(request: CompactionRequest): Promise<CompactionReceipt> {
    this.assertWritable();
    // The guard checks evicted spans against the indexes: they must hold the whole log.
    if (this.indexes.background) await this.indexes.join();
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
    if (!s || s.kind !== RecordKind.raw) throw new SpanguardError(ErrorCode.UNKNOWN_SPAN, `cannot pin to span ${spanId}: no raw span has that id`, { spanId });
    // A pin is a promise that the span states the fact: one it does not state would fail
    // every audit from now on and degrade the store for good.
    if (!s.text.includes(fact))
      throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `cannot pin to span ${spanId}: its text does not contain the fact verbatim`, { spanId });
    await this.recordEvent({ type: 'pin', fact, spanId, auto: false });
  }

  /** Runs an audit now: pinned facts (host and anchors) and a sample of evicted spans. */
  async audit(options: { full?: boolean } = {}): Promise<AuditReport> {
    this.assertWritable();
    // An audit probes the indexes: a background catch-up must end first.
    if (this.indexes.background) await this.indexes.join();
    return this.auditor.run(options.full ?? false);
  }

  /**
   * The verdict with its reasons and evidence (computed from the event trail), and while an
   * index is behind the log, `unknown` at best: recall cannot yet reach the spans it lacks.
   */
  verdict(): Verdict {
    this.assertOpen();
    const v = this.monitor.verdict();
    const lag = this.indexes.lag;
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

  /** The recorded events, oldest first: the verdict's explanation (an event record that cannot be read is left out; the open that found it recorded a degrade). */
  events(): { id: number; event: GuardEvent }[] {
    this.assertOpen();
    return [...readTrail(this.log)].flatMap((r) => (r.event ? [{ id: r.id, event: r.event }] : []));
  }

  /**
   * Rebuilds every index from the log, then runs a full audit. Only a passing audit after
   * the rebuild clears a degraded verdict; the repair is recorded either way. Progress
   * (`onProgress`): `start`, an `index` event per catch-up job of the rebuild, `audit`, `end`.
   */
  async repair(): Promise<{ rebuilt: string[]; audit: AuditReport; verdict: Verdict }> {
    this.assertWritable();
    reportProgress(this.options, 'repair', 'start');
    try {
      // Between catch-up rounds and saves, never inside one.
      await this.indexes.idle();
      await this.indexes.repairAll();
      reportProgress(this.options, 'repair', 'audit');
      // The monitor's probes were measured against the old indexes: measure them afresh.
      this.guard.resetProbes();
      const report = await this.auditor.check(true);
      // Only an audit that checked something, and a fact from an evicted span when any was
      // evicted, can vouch for the rebuilt indexes — and only indexes that agree with the log.
      const agree = (await this.indexes.agreement()).length === 0;
      const vouches = agree && report.passed && (this.state.evicted.size === 0 || report.checkedEvicted > 0);
      await this.recordEvent({ type: 'repair', pass: this.state.passes, rebuilt: ['lexical', 'vector'], auditPassed: vouches });
      if (report.passed) await this.auditor.record(report);
      return { rebuilt: ['lexical', 'vector'], audit: report, verdict: this.monitor.verdict() };
    } finally {
      reportProgress(this.options, 'repair', 'end');
    }
  }

  /**
   * Checks, id by id, that the indexes hold exactly the log's raw and summary spans
   * (src/store/identity.ts `indexAgreement`). On a writable store a disagreement is recorded
   * and degrades the verdict; `repair()` rebuilds.
   */
  async verifyIndexes(): Promise<string[]> {
    this.assertOpen();
    const disagreements = await this.indexes.agreement();
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
      applyRecords(this, this.log, before, after);
      await this.indexes.catchUp();
    }
    return after - before;
  }

  /**
   * Persists both indexes crash-safely (after flushing the log, so no index is ahead of it).
   * Progress (`onProgress`): `start`, `flush`, `save`, `end`.
   */
  async checkpoint(): Promise<void> {
    this.assertWritable();
    reportProgress(this.options, 'checkpoint', 'start');
    try {
      await this.recordRetention();
      reportProgress(this.options, 'checkpoint', 'flush');
      await this.log.flush();
      reportProgress(this.options, 'checkpoint', 'save');
      await this.indexes.save(this.storeId);
      this.saveFacts();
    } finally {
      reportProgress(this.options, 'checkpoint', 'end');
    }
  }

  /** Keeps the anchor facts beside the indexes for the next open; a cache, so a failure to write it is no failure. */
  private saveFacts(): void {
    try {
      this.facts.save(path.join(this.dir, 'index'), this.storeId, this.log);
    } catch {
      // The next open finds the facts again from the spans' texts.
    }
  }

  stats(): StoreStats {
    this.assertOpen();
    return collectStats(this.dir, this.log, this.lexical, this.vector, this.options, this.state, this.indexes.lag);
  }

  /**
   * Waits for in-flight appends, checkpoints the indexes, flushes and closes the log. Idempotent.
   * Progress (`onProgress`), once: `start`, `flush` and `save` (a writer whose log has not
   * failed), `release`, `end`.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    reportProgress(this.options, 'close', 'start');
    try {
      await this.closeNow();
    } finally {
      reportProgress(this.options, 'close', 'end');
    }
  }

  private async closeNow(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    let declared: unknown = null;
    if (!this.options.readOnly && !this.replica?.fenced && (this.retentionPending !== null || this.storeId === null) && this.log.nextId() > this.log.firstId() && !this.log.stats().failed)
      await this.recordRetention().catch((e: unknown) => (declared = e));
    this.closed = true;
    // A running catch-up ends after its current job; the next open catches up the rest.
    await this.indexes.stop();
    try {
      if (declared !== null) throw declared;
      if (!this.options.readOnly && !this.log.stats().failed) {
        reportProgress(this.options, 'close', 'flush');
        await this.log.flush();
        this.saveFacts();
        reportProgress(this.options, 'close', 'save');
        try {
          await this.indexes.save(this.storeId);
        } catch {
          // The log is flushed: every span is kept. The indexes are derived from it, and the
          // next open catches up (or rebuilds) whatever an index file lacks, so a close on a
          // full disk still closes.
        }
      }
    } finally {
      // The vector index's memory is freed on the thread pool; the log closes either way.
      reportProgress(this.options, 'close', 'release');
      try {
        await this.indexes.releaseAsync();
      } finally {
        await this.log.close();
        await this.replica?.stop();
      }
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
