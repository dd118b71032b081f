/**
 * The shipper: claims a store's manifest for this writer (owner epoch + 1), then ships what
 * the log has made durable — sealed segments whole, the open segment's new whole batches as
 * inline bytes or tail chunks — and commits each step with a conditional manifest PUT. Runs
 * in the writer's process, reads the log files only (docs/replication.md).
 */
import fsp from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { ErrorCode, SpanguardError } from '../errors.js';
import { crc32c } from './crc32c.js';
import { HEADER_BYTES, listSegments, readDurableNext, readHeader, segmentName, walkRecords, type LocalSegment } from './log-files.js';
import { commitManifest, openBytes, readManifest, type Committed, type Manifest, type OpenEntry } from './manifest.js';
import { ObjectStoreError, type ObjectStore } from './object-store.js';
import { claimManifest, fencedError, mismatch, unavailable } from './claim.js';
import { readRange, readWholeBatches } from './reads.js';
import { captureSnapshot, identityStamp, type SnapshotEntry } from './snapshot.js';
import path from 'node:path';

export interface ShipperOptions {
  /** Ship at least this often while records are pending (default 1000 ms). */
  intervalMs?: number;
  /** Ship at once when this many bytes are pending (default 1 MiB). */
  maxPendingBytes?: number;
  /** Newest bytes of the open segment kept inside the manifest, up to this size (default 16 KiB). */
  inlineBytes?: number;
  /** First retry delay after a failed ship (default 50 ms), doubled per failure ... */
  retryBaseMs?: number;
  /** ... up to this (default 5000 ms). */
  retryMaxMs?: number;
  /** A `replicated` append rejects with REPLICA_UNAVAILABLE after this long (default 30 s). */
  replicatedTimeoutMs?: number;
}

export interface ReplicaStatus {
  prefix: string;
  epoch: number;
  owner: string;
  /** The last id the bucket holds (0: none yet). */
  shippedThroughId: number;
  /** Log bytes on disk not yet in the bucket. */
  pendingBytes: number;
  /** When the last commit succeeded (ms since the epoch), or null. */
  lastShippedAt: number | null;
  /** The last ship's failure, cleared by the next success. */
  lastError: { code: string; message: string; at: number } | null;
  /** Consecutive failed ships. */
  failures: number;
  fenced: boolean;
  /**
   * Since the open: ship steps run, those that found nothing new (no commit), manifest
   * commits, append hints dropped because the last ship found nothing (see `kick`), and the
   * longest ship step that committed, from its first read to the manifest PUT's answer (ms):
   * with `intervalMs` it bounds how old a turn a crash below `replicated` can lose.
   */
  ships: { ships: number; emptyShips: number; commits: number; hintsDropped: number; longestMs: number };
}

function resolve(o: ShipperOptions) {
  const pos = (name: string, v: number | undefined, dflt: number): number => {
    if (v === undefined) return dflt;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new SpanguardError(ErrorCode.INVALID_OPTIONS, `replica.${name} must be a positive number, got ${String(v)}`);
    return v;
  };
  return {
    intervalMs: pos('intervalMs', o.intervalMs, 1000),
    maxPendingBytes: pos('maxPendingBytes', o.maxPendingBytes, 1 << 20),
    inlineBytes: pos('inlineBytes', o.inlineBytes, 16 * 1024),
    retryBaseMs: pos('retryBaseMs', o.retryBaseMs, 50),
    retryMaxMs: pos('retryMaxMs', o.retryMaxMs, 5000),
    replicatedTimeoutMs: pos('replicatedTimeoutMs', o.replicatedTimeoutMs, 30_000),
  };
}

/** Tries of the claim at start when it fails transiently. */
export const CLAIM_ATTEMPTS = 6;

/** How many tail chunks of one level are merged into one of the next (see Shipper.mergeTail). */
export const TAIL_FANIN = 16;

interface Waiter {
  nextId: number;
  resolve: () => void;
  reject: (e: unknown) => void;
  timer: NodeJS.Timeout;
}

export class Shipper {
  readonly owner: string;
  private committed: Committed;
  private readonly o: ReturnType<typeof resolve>;
  private waiters: Waiter[] = [];
  private lastError: ReplicaStatus['lastError'] = null;
  private failures = 0;
  private lastShippedAt: number | null = null;
  private fencedBy: SpanguardError | null = null;
  private stopped = false;
  private wake: (() => void) | null = null;
  private kicked = false;
  private loopDone: Promise<void> | null = null;
  private pendingHint = 0;
  /** The last ship committed something. */
  private lastShipChanged = false;
  /** `identity.json`'s stamp when the last snapshot was shipped (or found not to need one). */
  private snapshotStamp: string | null = null;
  /** The last ship found nothing new, and no commit or waiter came since (see kick). */
  private hintsMuted = false;
  private readonly counters = { ships: 0, emptyShips: 0, commits: 0, hintsDropped: 0, longestMs: 0 };
  /** Deletes of garbage objects, chained (see collect). */
  private garbageDone: Promise<void> = Promise.resolve();

  private constructor(
    private readonly store: ObjectStore,
    readonly prefix: string,
    private readonly logDir: string,
    /** Ship only ids EXTENT vouches for (sync, group); `none` ships whole batches as written. */
    private readonly boundByExtent: boolean,
    owner: string,
    committed: Committed,
    options: ShipperOptions,
  ) {
    this.owner = owner;
    this.committed = committed;
    this.o = resolve(options);
  }

  static async start(store: ObjectStore, prefix: string, logDir: string, durability: string, options: ShipperOptions = {}): Promise<Shipper> {
    const owner = randomUUID();
    // `sync`, `group`: only what the local log made durable. `replicated`: whole batches as
    // soon as they are written — the bucket is the durable copy, and shipping alongside the
    // local fdatasync costs an append the longer of the two, not their sum. `none`: as written.
    const boundByExtent = durability === 'sync' || durability === 'group';
    let committed: Committed;
    const o = resolve(options);
    // A claim that fails transiently (timeout, 5xx, throttling) is tried again with the
    // shipper's backoff, for up to CLAIM_ATTEMPTS tries: an open under load is not refused
    // for one slow answer.
    for (let attempt = 1; ; attempt++) {
      try {
        committed = await claimManifest(store, prefix, owner, logDir, durability);
        break;
      } catch (e) {
        if (!(e instanceof ObjectStoreError && e.kind === 'transient') || attempt >= CLAIM_ATTEMPTS) throw unavailable(e);
        const delay = Math.min(o.retryMaxMs, o.retryBaseMs * 2 ** (attempt - 1));
        await new Promise((r) => setTimeout(r, delay * (0.5 + Math.random() / 2)));
      }
    }
    const s = new Shipper(store, prefix, logDir, boundByExtent, owner, committed, options);
    s.loopDone = s.loop();
    return s;
  }

  get fenced(): SpanguardError | null {
    return this.fencedBy;
  }

  /** The verdict's input: records pending while shipping fails, or fenced. */
  behind(): string | null {
    if (this.fencedBy) return this.fencedBy.message;
    if (this.lastError !== null && this.pendingBytes() > 0)
      return `the replica in the object store is behind the local log (shipped through id ${this.committed.manifest.nextId - 1}; ${this.lastError.code}: ${this.lastError.message})`;
    return null;
  }

  /** Ship soon: an append's bytes, or a waiter. */
  noteAppend(bytes: number): void {
    this.pendingHint += bytes;
    if (this.pendingHint >= this.o.maxPendingBytes) this.shipSoon();
  }

  /**
   * An append's records were just written (the store calls it while the local group commit
   * runs, so the PUT can overlap the fdatasync): ship now. A hint is dropped when the last
   * ship found nothing new and neither a commit nor a waiter came since — the records are not
   * in the file yet, and the waiter the append registers once they are durable locally ships
   * them. Without it, every append of a busy store made a ship that found nothing.
   */
  kick(): void {
    if (this.hintsMuted) {
      this.counters.hintsDropped++;
      return;
    }
    this.shipSoon();
  }

  private shipSoon(): void {
    this.kicked = true;
    this.wake?.();
  }

  /** Resolves once the bucket holds every id below `nextId`. */
  waitFor(nextId: number): Promise<void> {
    if (this.fencedBy) return Promise.reject(this.fencedBy);
    if (this.committed.manifest.nextId >= nextId) return Promise.resolve();
    return new Promise<void>((res, rej) => {
      const w: Waiter = {
        nextId,
        resolve: res,
        reject: rej,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((x) => x !== w);
          rej(
            new SpanguardError(
              ErrorCode.REPLICA_UNAVAILABLE,
              `replica ${this.prefix}: ids below ${nextId} were not in the object store after ${this.o.replicatedTimeoutMs} ms (they are stored locally and will be shipped)${this.lastError ? `: ${this.lastError.message}` : ''}`,
              { prefix: this.prefix, shippedThroughId: this.committed.manifest.nextId - 1, nextId },
            ),
          );
        }, this.o.replicatedTimeoutMs),
      };
      this.waiters.push(w);
      this.hintsMuted = false;
      this.shipSoon();
    });
  }

  /** Log bytes written locally and not in the bucket: sealed segments, and the open one's whole batches past what is shipped (not its zeroed reserved blocks). */
  pendingBytes(): number {
    let segs: LocalSegment[];
    try {
      segs = listSegments(this.logDir);
    } catch {
      return 0;
    }
    const m = this.committed.manifest;
    const shipped = new Set(m.segments.map((s) => s.firstId));
    let n = 0;
    for (const s of segs) {
      if (shipped.has(s.firstId)) continue;
      const from = m.open !== null && s.firstId === m.open.firstId ? openBytes(m) : 0;
      if (s !== segs[segs.length - 1]) {
        n += s.size - from;
        continue;
      }
      try {
        const w = readWholeBatches(s, from, from > 0 ? m.open!.nextId : s.firstId, Number.POSITIVE_INFINITY);
        n += w.end <= HEADER_BYTES ? 0 : w.end - from;
      } catch {
        n += s.size - from;
      }
    }
    return n;
  }

  status(): ReplicaStatus {
    const m = this.committed.manifest;
    return {
      prefix: this.prefix,
      epoch: m.epoch,
      owner: this.owner,
      shippedThroughId: m.nextId - 1,
      pendingBytes: this.pendingBytes(),
      lastShippedAt: this.lastShippedAt,
      lastError: this.lastError,
      failures: this.failures,
      fenced: this.fencedBy !== null,
      ships: { ...this.counters },
    };
  }

  /** A waiter's ids are not all in the bucket yet. */
  private waitersPending(): boolean {
    const next = this.committed.manifest.nextId;
    return this.waiters.some((w) => w.nextId > next);
  }

  private settle(): void {
    const next = this.committed.manifest.nextId;
    const keep: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.nextId <= next) {
        clearTimeout(w.timer);
        w.resolve();
      } else keep.push(w);
    }
    this.waiters = keep;
  }

  private failAll(e: unknown): void {
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(e);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((res) => {
      if (this.kicked || this.stopped) {
        res();
        return;
      }
      const t = setTimeout(() => {
        this.wake = null;
        res();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        this.wake = null;
        res();
      };
    });
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      if (this.failures > 0) {
        const delay = Math.min(this.o.retryMaxMs, this.o.retryBaseMs * 2 ** Math.min(this.failures - 1, 20));
        await this.sleepPlain(delay * (0.5 + Math.random() / 2));
      } else await this.sleep(this.o.intervalMs);
      if (this.stopped) break;
      this.kicked = false;
      await this.shipUntilDone();
      if (this.fencedBy) break;
    }
  }

  private sleepPlain(ms: number): Promise<void> {
    return new Promise((res) => {
      const t = setTimeout(() => {
        this.wake = null;
        res();
      }, ms);
      this.wake = () => {
        // A kick does not cut a backoff short; a stop does.
        if (!this.stopped) return;
        clearTimeout(t);
        this.wake = null;
        res();
      };
    });
  }

  /** Ships until nothing new is found; records a failure and returns on the first error. */
  private async shipUntilDone(final = false): Promise<boolean> {
    try {
      for (let idle = 0; ; ) {
        const more = await this.shipOnce(final);
        // A ship that succeeded clears the failure before any waiter hears of it.
        this.failures = 0;
        this.lastError = null;
        this.settle();
        // Again at once only when this ship left bytes unread (its read cap), or a waiter's
        // records were still landing in the file when it read; other appends made meanwhile
        // wait for the interval or the byte threshold.
        if (!more && !this.waitersPending()) return true;
        // A ship that found nothing new while a waiter waits: its records are still landing
        // in the file; look again a moment later rather than spin.
        // (Bounded: records that never land leave it to the next kick or the interval.)
        if (this.lastShipChanged || more) {
          idle = 0;
          await new Promise((r) => setImmediate(r));
        } else if (++idle > 50) return true;
        else await new Promise((r) => setTimeout(r, 1));
      }
    } catch (e) {
      const err = unavailable(e);
      if (err.code === ErrorCode.REPLICA_FENCED) {
        this.fencedBy = err;
        this.failAll(err);
      }
      this.failures++;
      this.lastError = { code: err.code, message: err.message, at: Date.now() };
      return false;
    }
  }

  /** Ship only ids EXTENT vouches for (sync, group); other modes: whole batches as written. */
  private bound(): number {
    return this.boundByExtent ? (readDurableNext(this.logDir) ?? 0) : Number.POSITIVE_INFINITY;
  }

  private get indexDir(): string {
    return path.join(path.dirname(this.logDir), 'index');
  }

  /** One step: seals, then the open segment's new batches, then one commit. True when it left bytes it did not read (its read cap). */
  private async shipOnce(final = false): Promise<boolean> {
    if (this.fencedBy) throw this.fencedBy;
    this.counters.ships++;
    const t0 = performance.now();
    const segs = listSegments(this.logDir);
    const cur = this.committed.manifest;
    // Nothing new (no sealed segment, no new whole batch, no index save, no close to record):
    // no copy of the manifest, no commit. Most kicks of a busy `replicated` store land here —
    // an append's records not written yet, or already carried by the commit in flight — so
    // this path is one directory read, one small file read and one stat.
    let peeked: ReturnType<typeof readWholeBatches> | null = null;
    const last = segs[segs.length - 1];
    if (!final && cur.open !== null && last !== undefined && last.firstId === cur.open.firstId) {
      const from = openBytes(cur);
      peeked = readWholeBatches(last, from, cur.open.nextId, this.bound());
      if (peeked.end <= from && identityStamp(this.indexDir) === this.snapshotStamp) {
        this.lastShipChanged = false;
        this.counters.emptyShips++;
        if (!this.waitersPending()) this.hintsMuted = true;
        return peeked.more;
      }
    }
    // Every entry is replaced, never changed in place: copying the lists is enough.
    const m: Manifest = { ...cur, segments: [...cur.segments], open: cur.open === null ? null : { ...cur.open, chunks: [...cur.open.chunks] } };
    const epochDir = `${this.prefix}/e${m.epoch}`;
    const garbage: string[] = [];
    if (m.open === null) {
      if (!segs.some((s) => s.firstId === m.nextId)) return false;
      m.open = { firstId: m.nextId, nextId: m.nextId, chunks: [], inline: null };
    }
    let i = segs.findIndex((s) => s.firstId === m.open!.firstId);
    if (i < 0) throw mismatch(this.prefix, `the local log has no segment ${m.open.firstId}, which the bucket's open segment names`);
    // Seal: every segment with a successor is immutable; upload it whole.
    while (i < segs.length - 1) {
      const seg = segs[i]!;
      const bytes = await fsp.readFile(seg.file);
      readHeader(bytes, seg.file);
      const w = walkRecords(bytes.subarray(HEADER_BYTES), HEADER_BYTES, seg.firstId, Number.POSITIVE_INFINITY);
      if (w.end !== bytes.length || w.nextId !== segs[i + 1]!.firstId)
        throw mismatch(this.prefix, `sealed segment ${seg.file} does not end at its last record (${w.end} of ${bytes.length} bytes)`);
      const shipped = openBytes(m);
      const key = `${epochDir}/${segmentName(seg.firstId)}`;
      await this.store.put(key, bytes);
      m.segments.push({ key, firstId: seg.firstId, nextId: w.nextId, bytes: bytes.length, crc32c: crc32c(bytes) });
      if (shipped > 0) garbage.push(...m.open!.chunks.map((c) => c.key));
      m.open = { firstId: w.nextId, nextId: w.nextId, chunks: [], inline: null };
      i++;
      peeked = null;
    }
    // The open segment: its new whole batches (at least its header once).
    const seg = segs[i]!;
    const from = openBytes(m);
    const { bytes, end, nextId, more } = peeked ?? readWholeBatches(seg, from, m.open!.nextId, this.bound());
    if (end > from) {
      const fresh = bytes.subarray(0, end - from);
      const o = m.open!;
      const old = o.inline ? Buffer.from(o.inline.data, 'base64') : Buffer.alloc(0);
      const joined = Buffer.concat([old, fresh]);
      const start = o.inline?.from ?? from;
      const crc = crc32c(fresh, o.inline?.crc32c ?? 0);
      if (joined.length <= this.o.inlineBytes) {
        o.inline = { from: start, to: end, crc32c: crc, data: joined.toString('base64') };
      } else {
        const key = `${epochDir}/tail-${String(o.firstId).padStart(20, '0')}-${String(start).padStart(12, '0')}.log`;
        await this.store.put(key, joined);
        o.chunks.push({ key, from: start, to: end, crc32c: crc, level: 0 });
        o.inline = null;
        await this.mergeTail(o, seg, epochDir, garbage);
      }
      o.nextId = nextId;
    }
    m.nextId = m.open!.nextId;
    // A close that left nothing behind says so: a restore then knows no acknowledged turn is missing.
    if (final && end === seg.size && i === segs.length - 1) m.closed = true;
    const snap = await this.shipSnapshot(m, epochDir, garbage);
    const changed =
      m.segments.length !== cur.segments.length || openBytes(m) !== openBytes(cur) || (cur.open === null) !== (m.open === null) || m.closed !== cur.closed || snap !== null;
    this.lastShipChanged = changed;
    if (!changed) {
      this.counters.emptyShips++;
      if (!this.waitersPending()) this.hintsMuted = true;
      return more;
    }
    m.committedAt = Date.now();
    const etag = await commitManifest(this.store, this.prefix, this.committed.etag, m);
    if (etag === null) {
      const now = await readManifest(this.store, this.prefix);
      if (now === null || now.manifest.epoch !== cur.epoch || now.manifest.owner !== cur.owner) throw fencedError(this.prefix, cur, now?.manifest ?? cur);
      throw unavailable(new ObjectStoreError('transient', 'the manifest changed under its owner'));
    }
    this.committed = { manifest: m, etag };
    this.counters.commits++;
    this.counters.longestMs = Math.max(this.counters.longestMs, Math.round(performance.now() - t0));
    this.hintsMuted = false;
    if (snap !== null) this.snapshotStamp = snap;
    this.pendingHint = 0;
    this.lastShippedAt = m.committedAt;
    this.collect(garbage);
    return more;
  }

  /**
   * Keeps the open segment's chunk list short (docs/replication.md, *Tail chunks*): a chunk
   * is uploaded at level 0, and whenever the last TAIL_FANIN chunks share a level they are
   * replaced by one chunk of the next level holding the same bytes, read again from the local
   * segment and checked against their CRC32Cs first. Levels never rise along the list and
   * fewer than TAIL_FANIN chunks of each level remain, so a segment of S bytes is named by
   * fewer than TAIL_FANIN × (1 + log_TAIL_FANIN(S / inlineBytes)) chunks, and each of its bytes
   * is uploaded at most that logarithm + 1 times before the sealed segment replaces them all.
   * The merged chunks become garbage once the manifest naming the new one is committed.
   */
  private async mergeTail(o: OpenEntry, seg: LocalSegment, epochDir: string, garbage: string[]): Promise<void> {
    for (;;) {
      const n = o.chunks.length;
      if (n < TAIL_FANIN) return;
      const run = o.chunks.slice(n - TAIL_FANIN);
      const level = run[run.length - 1]!.level ?? 0;
      if (run.some((c) => (c.level ?? 0) !== level)) return;
      const from = run[0]!.from;
      const to = run[run.length - 1]!.to;
      const bytes = await readRange(seg.file, from, to);
      for (const c of run)
        if (bytes.length < c.to - from || crc32c(bytes.subarray(c.from - from, c.to - from)) !== c.crc32c)
          throw mismatch(this.prefix, `segment ${o.firstId} bytes ${c.from}..${c.to} differ between this log and the bucket`);
      const key = `${epochDir}/tail-${String(o.firstId).padStart(20, '0')}-${String(from).padStart(12, '0')}-${String(to).padStart(12, '0')}.log`;
      await this.store.put(key, bytes);
      o.chunks.splice(n - TAIL_FANIN, TAIL_FANIN, { key, from, to, crc32c: crc32c(bytes), level: level + 1 });
      garbage.push(...run.map((c) => c.key));
    }
  }

  /**
   * Deletes objects no committed manifest names any more (superseded tail chunks, an old
   * snapshot's files), off the ship path: one at a time after the ones before, failures
   * ignored (what is left is garbage, docs/replication.md, *Limits*).
   */
  private collect(keys: string[]): void {
    if (keys.length === 0) return;
    this.garbageDone = this.garbageDone.then(async () => {
      for (const k of keys) await this.store.delete(k).catch(() => undefined);
    });
  }

  /**
   * The index snapshot step of a ship: when the store saved its indexes since the last
   * snapshot (checkpoint, close: `identity.json` was rewritten) and the saved set covers no
   * id past what this ship's manifest holds, uploads the files that changed (a file with the
   * same size and CRC keeps its object) and sets `m.snapshot`. Returns the identity stamp to
   * remember once the manifest is committed, or null when there is nothing to ship now.
   */
  private async shipSnapshot(m: Manifest, epochDir: string, garbage: string[]): Promise<string | null> {
    const indexDir = this.indexDir;
    const stamp = identityStamp(indexDir);
    if (stamp === null || stamp === this.snapshotStamp) return null;
    const got = captureSnapshot(indexDir);
    // Not consistent right now (a save in between) or ahead of the shipped log: a later ship.
    if (got === null || got.nextId > m.nextId) return null;
    const old = m.snapshot ?? null;
    if (old !== null && old.identity === got.identity) {
      this.snapshotStamp = stamp;
      return null;
    }
    const reuse = new Map((old?.files ?? []).map((f) => [`${f.name}\0${f.bytes}\0${f.crc32}`, f]));
    const files: SnapshotEntry['files'] = [];
    for (const f of got.files) {
      const same = reuse.get(`${f.name}\0${f.body.length}\0${f.crc32}`);
      if (same) {
        files.push(same);
        continue;
      }
      const key = `${epochDir}/index-${String(got.nextId).padStart(20, '0')}/${f.name.replace('/', '-')}`;
      await this.store.put(key, f.body);
      files.push({ name: f.name, key, bytes: f.body.length, crc32: f.crc32 });
    }
    const kept = new Set(files.map((f) => f.key));
    for (const f of old?.files ?? []) if (!kept.has(f.key)) garbage.push(f.key);
    m.snapshot = { nextId: got.nextId, identity: got.identity, identityCrc32c: crc32c(Buffer.from(got.identity, 'utf8')), files };
    return stamp;
  }

  /** Ships what is left (bounded by `timeoutMs`), then stops the loop. Rejects nothing. */
  async stop(timeoutMs = 5000): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.wake?.();
    await this.loopDone;
    if (!this.fencedBy) {
      const until = Date.now() + timeoutMs;
      let delay = this.o.retryBaseMs;
      while (!(await this.shipUntilDone(true)) && !this.fencedBy && Date.now() + delay < until) {
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(this.o.retryMaxMs, delay * 2);
      }
      // The deletes the last commits left, within what is left of the bound.
      const left = until - Date.now();
      if (left > 0) await Promise.race([this.garbageDone, new Promise((r) => setTimeout(r, left).unref())]);
    }
    this.failAll(this.fencedBy ?? new SpanguardError(ErrorCode.CLOSED, 'the store is closed'));
  }
}
