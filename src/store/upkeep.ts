/**
 * Index upkeep: the two derived indexes (lexical BM25 + phrase, and vectors) kept caught up
 * with the log, their files checked against their identity at open (src/store/identity.ts),
 * rebuilt from the log when they cannot be trusted, saved with their identity, and the one
 * log/index agreement check that `verify` and `repair` both call.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ErrorCode, SpanguardError } from '../errors.js';
import {
  addon,
  openLexicalIndex,
  openVectorIndex,
  RecordKind,
  type NativeEmbedder,
  type NativeLexicalIndex,
  type NativeSpanLog,
  type NativeVectorIndex,
} from '../native.js';
import { catchUpInSlices, SliceSizer, type CatchUpProgress } from '../catchup.js';
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
} from './identity.js';
import { vectorOptions, type Resolved } from './options.js';
import { reportProgress } from './progress.js';
import type { IndexLag } from './types.js';

export type IndexName = 'lexical' | 'vector';

/** Ids indexed between two releases of the log's resident pages (Indexes.releaseRead). */
export const RELEASE_EVERY = 65_536;

/** `indexLag.code` while an open's catch-up runs in the background. */
export const CATCHING_UP = 'CATCHING_UP';

/** What the open-time check of the derived files found. */
export interface DerivedCheck {
  /** The log and an index disagree (recorded as a degrade). */
  disagreements: string[];
  /** Indexes found damaged, foreign or stale (recorded as `index-rebuilt`). */
  rebuilt: { name: IndexName; reason: string }[];
}

export class Indexes {
  /** Why an index is behind the log (its catch-up failed, or it is catching up in the background), or null. */
  lag: IndexLag | null = null;
  /** True while an open's long catch-up runs in the background: appends do not wait for it. */
  background = false;
  /** The catch-up running now (appends, searches and callers of catchUp() join it), or null. */
  private catching: Promise<void> | null = null;
  /** The catch-up that starts in the next check phase for the appends staged in this turn (catchUpStaged), or null. */
  private staged: Promise<void> | null = null;
  /** Set by stop(): a running catch-up ends after its current job (on the addon's write lane). */
  private stopped = false;
  /** The index saves running on the write lane, or null: catch-up rounds wait for them. */
  private saving: Promise<void> | null = null;
  /**
   * The round of catch-up jobs running on the addon's write lane, or null: an index being caught
   * up there can be neither saved nor closed until its job settles (saves and replace wait).
   */
  private round: Promise<unknown> | null = null;
  /**
   * Agreement checks in flight: they read the indexes' ids on the thread pool (idsAsync), so
   * an index is neither replaced nor released until they settle.
   */
  private readonly reading = new Set<Promise<unknown>>();
  /** The log's next id when its sealed segments' pages were last released (releaseRead). */
  private releasedAt = 0;
  /**
   * Indexes the open found it must rebuild from the log, until their catch-up reaches the
   * log's end: their jobs are reported as `rebuild` progress (onProgress), then its `end`.
   */
  private readonly rebuilding = new Set<IndexName>();
  /** Set while repairAll() rebuilds both indexes: catch-up jobs meanwhile are reported as `repair` progress. */
  private repairing = false;
  /** Slice sizes learnt per index (src/catchup.ts). */
  private readonly sizers = { lexical: new SliceSizer(), vector: new SliceSizer() };
  /**
   * What the open found wrong with the derived files, per index, and whether the index was
   * rebuilt: what a writer records as `index-rebuilt` events, and what `verify` reports (a
   * reader records nothing).
   */
  readonly derivedProblems: { index: IndexName; reason: string }[] = [];
  /** A reader's vector index rebuilt from the log lives here (it may not write the store's files); removed at release. */
  private privateVectorDir: string | null = null;
  /** Why vectors.bin was rejected when the index was opened (the index then started empty). */
  private vectorOpenError: string | null = null;
  private readonly indexDir: string;

  private constructor(
    dir: string,
    private readonly options: Resolved,
    private readonly log: NativeSpanLog,
    readonly embedder: NativeEmbedder,
    public lexical: NativeLexicalIndex,
    public vector: NativeVectorIndex,
  ) {
    this.indexDir = path.join(dir, 'index');
  }

  /**
   * Opens both indexes of the store in `dir`, their files loaded on the thread pool (the event
   * loop runs meanwhile). vectors.bin is derived data too: one whose header fails its check
   * is set aside and the index rebuilt from the log (checkDerived).
   */
  static async open(dir: string, o: Resolved, log: NativeSpanLog): Promise<Indexes> {
    const a = addon();
    const indexDir = path.join(dir, 'index');
    const embedder = new a.Embedder(o.embedder ? 64 : o.dims);
    const lexical = await openLexicalIndex(path.join(indexDir, 'lexical.idx'));
    let vectorOpenError: string | null = null;
    let vector: NativeVectorIndex;
    let privateDir: string | null = null;
    try {
      vector = await openVectorIndex(path.join(indexDir, 'vector'), vectorOptions(o));
    } catch (e) {
      if (!(e instanceof SpanguardError) || e.code !== ErrorCode.CORRUPT) throw e;
      vectorOpenError = e.message;
      ({ index: vector, privateDir } = freshVector(indexDir, o));
    }
    const indexes = new Indexes(dir, o, log, embedder, lexical, vector);
    indexes.vectorOpenError = vectorOpenError;
    indexes.privateVectorDir = privateDir;
    return indexes;
  }

  /**
   * Damaged derived files (src/store/identity.ts): a file that fails its own checks, is
   * missing while the identity says it covered records, or is not the file the identity
   * names means the index is rebuilt from the log; an index built for another store or
   * another log history too. Returns the findings for the store to record.
   */
  checkDerived(storeId: string | null): DerivedCheck {
    const log = this.log;
    const next = log.nextId();
    const identity = readIdentity(this.indexDir);
    const found = {
      lexical: lexicalFileProblems(this.lexical, log, storeId, identity),
      vector: vectorFileProblems(this.vector, storeId, identity, this.vectorOpenError),
    };
    const out: DerivedCheck = { disagreements: [], rebuilt: [] };
    for (const name of ['lexical', 'vector'] as const) {
      const problems = found[name];
      const hw = name === 'lexical' ? this.lexical.highWater() : vectorHighWater(this.vector, storeId, identity);
      // An index this store's identity vouches for (or that has none to go by) covering ids
      // the log does not hold: the log lost what the index saw. A disagreement, recorded
      // as a degrade; the index is rebuilt. A damaged or foreign file's high water says
      // nothing about the log: that is a rebuild like any other.
      if (hw > next && !problems.some((p) => p.rebuild) && (identity === null || identityVouches(name, hw, storeId, identity))) {
        const d = `${name} index covers ids up to ${hw - 1} but the log ends at ${next - 1}`;
        out.disagreements.push(d);
        this.derivedProblems.push({ index: name, reason: d });
        this.rebuild(name);
        continue;
      }
      const why = identityMismatch(name, hw, log, storeId, identity);
      if (why !== null) problems.push({ reason: why, rebuild: true });
      if (problems.length === 0) continue;
      if (problems.some((p) => p.rebuild)) this.rebuild(name);
      const reason = problems.map((p) => p.reason).join('; ');
      out.rebuilt.push({ name, reason });
      this.derivedProblems.push({ index: name, reason });
    }
    // Every index the open fills from the log's first id is reported as a rebuild (onProgress):
    // one rebuilt above (it starts empty), and one with nothing saved (a store never
    // checkpointed, or whose index files were removed), a rebuild in all but its record.
    const first = log.firstId();
    if (next > first)
      for (const name of ['lexical', 'vector'] as const) {
        const index = name === 'lexical' ? this.lexical : this.vectorTarget();
        if (index === null || index.highWater() > first) continue;
        this.rebuilding.add(name);
        reportProgress(this.options, 'rebuild', 'start', name);
      }
    return out;
  }

  /** The `end` of each rebuild whose index now reaches the log's end. */
  private endRebuilds(): void {
    if (this.rebuilding.size === 0) return;
    const next = this.log.nextId();
    const first = this.log.firstId();
    for (const name of [...this.rebuilding]) {
      const index = name === 'lexical' ? this.lexical : this.vectorTarget();
      if (index !== null && Math.max(index.highWater(), first) < next) continue;
      this.rebuilding.delete(name);
      reportProgress(this.options, 'rebuild', 'end', name);
    }
  }

  /** A catch-up job's progress, to onCatchUp and to onProgress (as the rebuild or the repair it serves, or as catch-up). */
  private reportJob(p: CatchUpProgress): void {
    const o = this.options;
    o.onCatchUp?.(p);
    if (o.onProgress === undefined) return;
    const operation = this.repairing ? 'repair' : this.rebuilding.has(p.index) ? 'rebuild' : 'catch-up';
    reportProgress(o, operation, 'index', p.index, p.highWater, p.nextId);
  }

  /**
   * Replaces one index with an empty one that the next catch-up fills from the log. A writer
   * removes the old files first (every file of the vector index, vectors.bin included: a
   * rebuild never reloads what it replaces); a reader builds in memory (lexical) or in a
   * private temporary directory (vector).
   */
  rebuild(name: IndexName): void {
    if (name === 'lexical') {
      const file = path.join(this.indexDir, 'lexical.idx');
      if (!this.options.readOnly) fs.rmSync(file, { force: true });
      this.lexical = new (addon().LexicalIndex)(this.options.readOnly ? path.join(this.indexDir, 'lexical.rebuild-in-memory') : file);
    } else {
      this.release();
      ({ index: this.vector, privateDir: this.privateVectorDir } = freshVector(this.indexDir, this.options));
    }
  }

  /**
   * A repair's rebuild: both indexes replaced by empty ones, then caught up from the log's
   * first id (write-lane jobs, reported as `repair` progress). Call it between catch-up rounds
   * and saves (idle()).
   */
  async repairAll(): Promise<void> {
    this.repairing = true;
    try {
      await this.replace('lexical');
      await this.replace('vector');
      await this.join();
    } finally {
      this.repairing = false;
    }
  }

  /**
   * rebuild() for a repair of an open store: the old files are removed and the empty vector
   * index is created on the thread pool (fs.promises, openVectorIndex), so the event loop
   * runs while the vector directory's files (hundreds of MB at 10^6 spans) are unlinked, and
   * the old indexes are released there too (their memory freed: NativeLexicalIndex
   * `releaseAsync`, NativeVectorIndex `closeAsync`). A reader replaces in memory as
   * rebuild() does.
   */
  async replace(name: IndexName): Promise<void> {
    if (this.options.readOnly) return this.rebuild(name);
    if (name === 'lexical') {
      const file = path.join(this.indexDir, 'lexical.idx');
      await fs.promises.rm(file, { force: true });
      // A catch-up job an append started, or a save, holds the old index until it settles;
      // then it is freed on the pool.
      await this.settled();
      const old = this.lexical;
      this.lexical = new (addon().LexicalIndex)(file);
      await old.releaseAsync();
      return;
    }
    // The old index answers searches until the new one takes its place: its files are
    // unlinked under it (its lock and mapping stay on the old inode), the empty one is
    // created beside it, and only then is the old one closed.
    const vdir = path.join(this.indexDir, 'vector');
    for (const f of await fs.promises.readdir(vdir)) await fs.promises.rm(path.join(vdir, f), { force: true, recursive: true });
    const fresh = await openVectorIndex(vdir, vectorOptions(this.options));
    // A save started meanwhile (a checkpoint), or a catch-up job an append started, holds
    // the old index until it settles.
    await this.settled();
    const old = this.vector;
    this.vector = fresh;
    await old.closeAsync();
  }

  /** Waits until no save, no catch-up job and no agreement check's read runs off the JS thread. */
  private async settled(): Promise<void> {
    while (this.saving !== null || this.round !== null || this.reading.size > 0) {
      if (this.saving !== null) await this.saving.catch(() => {});
      if (this.round !== null) await this.round;
      if (this.reading.size > 0) await Promise.allSettled([...this.reading]);
    }
  }

  /**
   * release() with both indexes' memory freed on the thread pool (a close: at 10^6 spans
   * hundreds of MB each). The vector index's lock is released when this resolves. Idempotent.
   */
  async releaseAsync(): Promise<void> {
    while (this.reading.size > 0) await Promise.allSettled([...this.reading]);
    const freed = await Promise.allSettled([this.vector.closeAsync(), this.lexical.releaseAsync()]);
    for (const r of freed) if (r.status === 'rejected') throw r.reason;
    if (this.privateVectorDir !== null) {
      await fs.promises.rm(this.privateVectorDir, { recursive: true, force: true });
      this.privateVectorDir = null;
    }
  }

  /** Closes the vector index and removes a reader's private one; the lexical index holds no descriptor or lock. Idempotent. */
  release(): void {
    this.vector.close();
    if (this.privateVectorDir !== null) {
      fs.rmSync(this.privateVectorDir, { recursive: true, force: true });
      this.privateVectorDir = null;
    }
  }

  /**
   * Brings both indexes up to the end of the log (the only way anything gets indexed), by
   * jobs on the addon's write lane (src/catchup.ts): the event loop runs meanwhile. Never throws: the spans are in the
   * log already, so a failure (a full disk, a host embedder that throws) leaves the index
   * behind, recorded in `lag` — the verdict and `stats().indexLag` say so — and the next
   * append, search or `catchUp()` tries again. While an open's catch-up runs in the
   * background this returns at once: the background run reaches every id appended meanwhile.
   */
  catchUp(): Promise<void> {
    if (this.background) return Promise.resolve();
    return this.join();
  }

  /**
   * The catch-up of the appends staged in this turn: one join, started in the next check
   * phase, when every append of the burst is staged (`nextId()` counts a staged record at
   * once) — the same check phase in which group commit starts the burst's fdatasync, so the
   * indexing jobs run on the write lane beside the flush instead of after it, and one round covers
   * the whole burst. Every caller in the turn shares it. Returns at once while an open's
   * catch-up runs in the background (as `catchUp`).
   */
  catchUpStaged(): Promise<void> {
    if (this.background) return Promise.resolve();
    if (this.staged === null) {
      this.staged = new Promise<void>((resolve) =>
        setImmediate(() => {
          this.staged = null;
          // A close that began after the burst was staged (its appends failed, or settled
          // before this phase) has stopped the catch-up and may have released the indexes: the
          // next open catches up whatever was staged.
          if (this.stopped) resolve();
          else void this.join().then(resolve);
        }),
      );
    }
    return this.staged;
  }

  /** Waits for the running catch-up (background or not), then catches up what it left; or starts one. */
  join(): Promise<void> {
    if (this.catching !== null) return this.catching.then(() => (this.behind() && !this.stopped ? this.join() : undefined));
    const run = this.run().finally(() => {
      if (this.catching === run) this.catching = null;
    });
    this.catching = run;
    return run;
  }

  /**
   * Starts the catch-up in the background (an open that found a long backlog): until it ends
   * `lag` says the indexes are catching up (code CATCHING_UP, updated after every job), so
   * the verdict is not lossless and a search answers with what is indexed.
   */
  startBackground(): void {
    this.background = true;
    const first = this.log.firstId();
    const lexBehind = Math.max(this.lexical.highWater(), first) < this.log.nextId();
    this.lag = this.catchingUp(lexBehind ? 'lexical' : 'vector', lexBehind ? this.lexical.highWater() : this.vector.highWater());
    const run = this.run().finally(() => {
      this.background = false;
      if (this.lag?.code === CATCHING_UP) this.lag = null;
      if (this.catching === run) this.catching = null;
    });
    this.catching = run;
  }

  /** How far behind the log the furthest-behind index is, in ids. */
  backlog(): number {
    const first = this.log.firstId();
    const vector = this.vectorTarget();
    return this.log.nextId() - Math.max(first, Math.min(this.lexical.highWater(), vector === null ? Infinity : vector.highWater()));
  }

  /** Ends a running catch-up after its current job and waits for it (close; the next open catches up the rest). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.catching !== null) await this.catching;
  }

  /** Waits until no catch-up and no save runs (before an index is replaced). */
  async idle(): Promise<void> {
    while (this.catching !== null || this.saving !== null) {
      if (this.catching !== null) await this.catching;
      if (this.saving !== null) await this.saving.catch(() => {});
    }
  }

  /** Whether an index this store catches up lacks ids the log holds. */
  private behind(): boolean {
    return this.backlog() > 0;
  }

  /** The vector index this store catches up, or null (a reader's, which stays as the writer saved it). */
  private vectorTarget(): NativeVectorIndex | null {
    return this.options.readOnly && this.privateVectorDir === null ? null : this.vector;
  }

  private catchingUp(index: IndexName, highWater: number): IndexLag {
    const fromId = Math.max(highWater, this.log.firstId());
    return { index, fromId, code: CATCHING_UP, message: `catching up from the log: ids ${fromId} to ${this.log.nextId() - 1} are not indexed yet` };
  }

  private async run(): Promise<void> {
    try {
      await this.catchUpOrThrow();
      if (!this.stopped) this.endRebuilds();
      this.releaseRead();
      if (!this.stopped || this.lag?.code === CATCHING_UP) this.lag = null;
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
   * Every record a catch-up indexes is read through the log's mappings, which leaves the
   * whole log resident in this process (at 10^6 spans, hundreds of MB of RSS) though nothing
   * reads it again but the odd search: once the indexes have read RELEASE_EVERY more ids,
   * the sealed segments' pages are dropped from the resident set (they stay in the page
   * cache; NativeSpanLog.releaseResident).
   */
  private releaseRead(): void {
    const next = this.log.nextId();
    if (next - this.releasedAt < RELEASE_EVERY) return;
    this.releasedAt = next;
    this.log.releaseResident();
  }

  /** The lag as the error `catchUp()` rejects with, or null. */
  lagError(): SpanguardError | null {
    const lag = this.lag;
    return lag === null ? null : new SpanguardError(lag.code as ErrorCode, `the ${lag.index} index lacks spans from ${lag.fromId} on: ${lag.message}`, { ...lag });
  }

  /**
   * A reader catches the lexical index up in memory; its vector index stays at what the
   * writer persisted (the exact and BM25 paths still cover the newest spans). The lexical
   * index and the built-in embedder's path go by write-lane jobs; a host embedder is awaited per batch.
   */
  private async catchUpOrThrow(): Promise<void> {
    const o = this.options;
    const progress = (p: CatchUpProgress): void => {
      if (this.background && p.highWater < p.nextId) this.lag = this.catchingUp(p.index, p.highWater);
      this.reportJob(p);
    };
    await catchUpInSlices(
      // Read each round: a repair may replace an index between rounds.
      () => ({ log: this.log, lexical: this.lexical, vector: o.embedder ? null : this.vectorTarget(), embedder: this.embedder }),
      this.sizers,
      progress,
      {
        stop: () => this.stopped,
        gate: () => this.saving,
        round: (jobs) => {
          this.round = jobs;
          const done = () => {
            if (this.round === jobs) this.round = null;
          };
          jobs.then(done, done);
        },
      },
    );
    if (this.stopped || !o.embedder || this.vectorTarget() === null) return;
    const log = this.log;
    const next = log.nextId();
    // Ids start at the log's first id (1 in a new store), not at 0: a batch is scanned from
    // there, and the next one starts after its last record.
    for (let from = Math.max(this.vector.highWater(), log.firstId()); from < next; ) {
      const records = log.scan(from, Math.min(256, next - from));
      from = records.length > 0 ? records[records.length - 1]!.id + 1 : next;
      const batch = records.filter((r) => r.kind === RecordKind.raw || r.kind === RecordKind.summary);
      if (batch.length === 0) continue;
      let vectors: Float32Array[];
      try {
        vectors = await o.embedder(batch.map((r) => r.text));
      } catch (e) {
        throw new SpanguardError(ErrorCode.EMBEDDER_FAILED, `host embedder failed: ${(e as Error).message}`);
      }
      if (!Array.isArray(vectors) || vectors.length !== batch.length)
        throw new SpanguardError(
          ErrorCode.DIMENSION_MISMATCH,
          `host embedder returned ${Array.isArray(vectors) ? vectors.length : typeof vectors} vectors for ${batch.length} texts`,
        );
      const flat = new Float32Array(batch.length * o.dims);
      vectors.forEach((v, i) => {
        if (!(v instanceof Float32Array) || v.length !== o.dims)
          throw new SpanguardError(
            ErrorCode.DIMENSION_MISMATCH,
            `host embedder returned a vector of length ${(v as Float32Array)?.length} for span ${batch[i]!.id}; declared dims ${o.dims}`,
          );
        flat.set(v, i * o.dims);
      });
      while (this.saving !== null) await this.saving.catch(() => {});
      this.vector.add(Float64Array.from(batch, (r) => r.id), Uint8Array.from(batch, (r) => r.kind), flat);
      this.reportJob({ index: 'vector', highWater: this.vector.highWater(), nextId: log.nextId() });
    }
  }

  /** Embeds query texts with whichever embedder the store uses. */
  async embedQuery(texts: string[]): Promise<Float32Array> {
    const o = this.options;
    if (!o.embedder) return this.embedder.embed(texts);
    const vs = await o.embedder(texts);
    const flat = new Float32Array(texts.length * o.dims);
    vs.forEach((v, i) => {
      if (!(v instanceof Float32Array) || v.length !== o.dims)
        throw new SpanguardError(ErrorCode.DIMENSION_MISMATCH, `host embedder returned a vector of the wrong length for a query`);
      for (const x of v) if (!Number.isFinite(x)) throw new SpanguardError(ErrorCode.NON_FINITE_VECTOR, 'host embedder returned a non-finite value');
      flat.set(v, i * o.dims);
    });
    return flat;
  }

  /** The one agreement check between the log and the indexes (src/store/identity.ts `indexAgreement`). */
  agreement(): Promise<string[]> {
    return this.read(indexAgreement(this.log, this.lexical, this.vector, this.options.embedder ? null : this.embedder));
  }

  /**
   * Holds the indexes for a read running on the thread pool (a search's BM25 or vector
   * lookup, an agreement check) until it settles: a release, a repair's swap and a close wait
   * for it (an index read on the pool cannot be released).
   */
  read<T>(run: Promise<T>): Promise<T> {
    this.reading.add(run);
    const done = () => this.reading.delete(run);
    run.then(done, done);
    return run;
  }

  /**
   * Saves both indexes on the write lane (NativeLexicalIndex/NativeVectorIndex `saveAsync`:
   * searches go on meanwhile; it waits for a catch-up job in flight, and the next waits for it), then their identity next to them
   * (no identity before the store has an id; written on the thread pool too). Rejects with the first failure once both settled.
   */
  async save(storeId: string | null): Promise<void> {
    while (this.saving !== null) await this.saving.catch(() => {});
    const run = (async () => {
      // A round of catch-up jobs in flight holds the indexes until it settles; no new round
      // starts while this save runs (the catch-up's gate).
      while (this.round !== null) await this.round;
      // Appends are indexed while their fdatasync runs (catchUpStaged): what the indexes
      // hold is made durable before they are saved, so no saved index is ahead of the log.
      if (!this.options.readOnly) await this.log.flush();
      const r = await Promise.allSettled([this.lexical.saveAsync(), this.vector.saveAsync()]);
      for (const x of r) if (x.status === 'rejected') throw x.reason;
      if (storeId === null) return;
      // Inside the save: no catch-up round moves the indexes past what was saved, and no
      // other save writes the identity meanwhile.
      await writeIdentity(this.indexDir, {
        version: IDENTITY_VERSION,
        storeId,
        lexical: { ...identityOf(this.log, this.lexical.highWater()), files: lexicalFiles(this.lexical) },
        vector: { ...identityOf(this.log, this.vector.highWater()), files: vectorFiles(this.vector) },
      });
    })();
    this.saving = run;
    try {
      await run;
    } finally {
      this.saving = null;
    }
  }
}

/**
 * An empty vector index over the store's vector directory, its old files removed (a
 * writer), or over a private temporary directory (a reader, which may not touch the
 * store's files; removed at release).
 */
function freshVector(indexDir: string, o: Resolved): { index: NativeVectorIndex; privateDir: string | null } {
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
