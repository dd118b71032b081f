/**
 * Restore: a store's log rebuilt in an empty directory from the bucket alone. The manifest is
 * claimed first (owner epoch + 1), so the previous owner is fenced before a byte is read and
 * cannot commit anything the restored copy would lack; then every object the manifest names
 * is downloaded and checked (size and CRC32C), and the log takes its place only once all of
 * it is there.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ErrorCode, SpanguardError } from '../errors.js';
import { crc32 } from './crc32.js';
import { crc32c } from './crc32c.js';
import { extentBytes, readHeader, segmentName } from './log-files.js';
import type { Manifest } from './manifest.js';
import { ObjectStoreError, type ObjectStore } from './object-store.js';
import { claimManifest } from './claim.js';

export interface RestoreResult {
  manifest: Manifest;
  /** Log bytes written. */
  bytes: number;
  objects: number;
  ms: number;
  /**
   * The index snapshot: `written` (its files are in `index/`: the open loads them and
   * catches up the ids from `nextId`), `none` (the manifest names none), or `partial` with
   * what failed its size or CRC32C and was not written (the open rebuilds those indexes
   * from the log and records why).
   */
  snapshot: { state: 'written' | 'none' | 'partial'; nextId: number | null; bytes: number; problems: string[] };
}

function corrupt(key: string, why: string): SpanguardError {
  return new SpanguardError(ErrorCode.CORRUPT, `replica object ${key}: ${why}`, { file: key, offset: 0 });
}


function writeDurable(file: string, bytes: Uint8Array): void {
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    fs.writeSync(fd, bytes);
    fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Objects larger than this are fetched as ranges of this size, in parallel (restoreReplica's `rangeBytes`). */
export const RANGE_BYTES = 8 * 1024 * 1024;
/** GETs in flight at once (restoreReplica's `concurrency`). */
export const DEFAULT_CONCURRENCY = 8;
/** A GET that fails transiently (timeout, 5xx, throttling) is tried again, this many times in all, backing off. */
export const GET_ATTEMPTS = 6;
const RETRY_BASE_MS = 100;
const RETRY_MAX_MS = 3000;

/** Runs `op`, again after a backoff while it fails transiently (an ObjectStoreError of kind `transient`), up to GET_ATTEMPTS. */
async function withRetries<T>(op: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await op();
    } catch (e) {
      if (!(e instanceof ObjectStoreError && e.kind === 'transient') || attempt >= GET_ATTEMPTS) throw e;
      const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (attempt - 1));
      await new Promise((r) => setTimeout(r, delay * (0.5 + Math.random() / 2)));
    }
  }
}

interface Wanted {
  key: string;
  bytes: number;
  crc: number;
  check: (b: Uint8Array) => number;
}

/** One object being downloaded: its bytes, filled by its ranges as they land. */
interface Landing extends Wanted {
  ranged: boolean;
  body: Buffer;
  left: number;
  done: Promise<Uint8Array>;
  resolve: (b: Uint8Array) => void;
  reject: (e: unknown) => void;
}

function unavailableObject(key: string, e: unknown): SpanguardError {
  if (e instanceof SpanguardError) return e;
  return new SpanguardError(ErrorCode.REPLICA_UNAVAILABLE, `replica object ${key}: ${(e as Error).message}`, {
    key,
    kind: e instanceof ObjectStoreError ? e.kind : 'transient',
  });
}

/**
 * Downloads objects through one pool of `width` GETs: an object past `rangeBytes` as ranges
 * (each its own request, so one large object does not download on one stream), the largest
 * objects' ranges first. Each object's promise resolves once all its bytes are in and its
 * size and CRC match the manifest (CORRUPT otherwise; REPLICA_UNAVAILABLE when a GET still
 * fails after GET_ATTEMPTS tries, or fails other than transiently).
 * A store without `getRange` gives whole objects.
 */
function download(store: ObjectStore, wanted: Wanted[], width: number, rangeBytes: number): { fetched: Promise<Uint8Array>[]; cancel: () => void } {
  const objects: Landing[] = wanted.map((w) => {
    let resolve!: Landing['resolve'];
    let reject!: Landing['reject'];
    const done = new Promise<Uint8Array>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    done.catch(() => undefined);
    const ranged = store.getRange !== undefined && w.bytes > rangeBytes;
    return { ...w, ranged, body: ranged ? Buffer.allocUnsafe(w.bytes) : Buffer.alloc(0), left: 0, done, resolve, reject };
  });
  const parts: { o: Landing; from: number; to: number }[] = [];
  for (const o of [...objects].sort((a, b) => b.bytes - a.bytes)) {
    const step = o.ranged ? rangeBytes : Math.max(1, o.bytes);
    for (let from = 0; from < Math.max(1, o.bytes); from += step) {
      parts.push({ o, from, to: Math.min(o.bytes, from + step) });
      o.left++;
    }
  }
  const land = (o: Landing) => {
    if (o.body.length !== o.bytes) o.reject(corrupt(o.key, `${o.body.length} bytes, the manifest says ${o.bytes}`));
    else if (o.check(o.body) !== o.crc) o.reject(corrupt(o.key, `${o.check === crc32c ? 'CRC32C' : 'CRC-32'} differs from the manifest`));
    else o.resolve(o.body);
  };
  const failed = new Set<Landing>();
  let cancelled = false;
  const run = async ({ o, from, to }: (typeof parts)[number]): Promise<void> => {
    if (failed.has(o)) return;
    if (cancelled) {
      failed.add(o);
      o.reject(new SpanguardError(ErrorCode.REPLICA_UNAVAILABLE, `replica object ${o.key}: not fetched, the restore failed`, { key: o.key, kind: 'fatal' }));
      return;
    }
    try {
      if (o.ranged) {
        const got = await withRetries(() => store.getRange!(o.key, from, to));
        if (got === null) throw corrupt(o.key, 'missing from the bucket');
        if (got.length !== to - from) throw corrupt(o.key, `bytes ${from}..${to}: ${got.length} bytes came back`);
        o.body.set(got, from);
      } else {
        const got = await withRetries(() => store.get(o.key));
        if (got === null) throw corrupt(o.key, 'missing from the bucket');
        o.body = Buffer.from(got.body.buffer, got.body.byteOffset, got.body.byteLength);
      }
      if (--o.left === 0) land(o);
    } catch (e) {
      failed.add(o);
      o.reject(unavailableObject(o.key, e));
    }
  };
  let next = 0;
  void Promise.all(
    Array.from({ length: Math.min(Math.max(1, width), parts.length) }, async () => {
      while (next < parts.length) await run(parts[next++]!);
    }),
  );
  return {
    fetched: objects.map((o) => o.done),
    cancel: () => {
      cancelled = true;
    },
  };
}

async function writeDurableAsync(file: string, bytes: Uint8Array): Promise<void> {
  const fh = await fsp.open(file, 'wx', 0o600);
  try {
    await fh.writeFile(bytes);
    await fh.datasync();
  } finally {
    await fh.close();
  }
}

function fsyncDir(d: string): void {
  const fd = fs.openSync(d, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function checkHeader(m: Manifest, bytes: Uint8Array, name: string): void {
  const h = readHeader(bytes, name);
  if (h.logTag !== m.logTag || h.logStart !== m.logStart || segmentName(h.firstId) !== name)
    throw corrupt(name, `its header names log ${h.logTag} (start ${h.logStart}, first id ${h.firstId}), not the manifest's`);
}

/**
 * Restores the store under `prefix` into `dir` (which must not hold a log). Claims the
 * manifest, downloads and checks every object, writes the segments and an `EXTENT` whose
 * durable next is the manifest's `nextId`, then the index snapshot. Open the directory with
 * `SpanStore.open` next.
 *
 * Every object the manifest names — segments, the open segment's chunks, the snapshot's files
 * (four times the log's bytes at 10⁵ spans) — downloads through one pool of GETs, largest
 * first, large ones in ranges. Each is written to a staging directory inside `dir` as soon as
 * it is in and checked, while the others download. The log takes its place (one rename) only
 * once all of it is there, then the snapshot's files; a restore that fails leaves no log.
 */
export async function restoreFromBucket(store: ObjectStore, prefix: string, dir: string, options: { concurrency?: number; rangeBytes?: number } = {}): Promise<RestoreResult> {
  const t0 = performance.now();
  const logDir = path.join(dir, 'log');
  if (fs.existsSync(logDir) && fs.readdirSync(logDir).length > 0)
    throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `restore: ${logDir} already holds a log`, { dir });
  let claimed;
  try {
    const owner = `restore-${randomUUID()}`;
    claimed = await withRetries(() => claimManifest(store, prefix, owner, null));
  } catch (e) {
    if (e instanceof SpanguardError) throw e;
    throw new SpanguardError(ErrorCode.REPLICA_UNAVAILABLE, `restore ${prefix}: ${(e as Error).message}`, { prefix });
  }
  const m = claimed.manifest;
  const snap = m.snapshot !== undefined && m.snapshot !== null && m.snapshot.nextId <= m.nextId ? m.snapshot : null;
  const logObjects: Wanted[] = [
    ...m.segments.map((s) => ({ key: s.key, bytes: s.bytes, crc: s.crc32c, check: crc32c })),
    ...(m.open?.chunks ?? []).map((c) => ({ key: c.key, bytes: c.to - c.from, crc: c.crc32c, check: crc32c })),
  ];
  const snapFiles = snap?.files ?? [];
  const { fetched, cancel } = download(store, [...logObjects, ...snapFiles.map((f) => ({ key: f.key, bytes: f.bytes, crc: f.crc32, check: crc32 }))], options.concurrency ?? DEFAULT_CONCURRENCY, options.rangeBytes ?? RANGE_BYTES);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const staging = fs.mkdtempSync(path.join(dir, '.restore-'));
  fs.mkdirSync(path.join(staging, 'log'), { mode: 0o700 });
  fs.mkdirSync(path.join(staging, 'index', 'vector'), { recursive: true, mode: 0o700 });
  try {
    let objects = 0;
    let bytes = 0;
    const segWrites = m.segments.map(async (s, i) => {
      const body = await fetched[i]!;
      objects++;
      checkHeader(m, body, segmentName(s.firstId));
      await writeDurableAsync(path.join(staging, 'log', segmentName(s.firstId)), body);
      bytes += body.length;
    });
    const openWrite = (async () => {
      if (m.open === null) return;
      const parts = await Promise.all(m.open.chunks.map((_, i) => fetched[m.segments.length + i]!));
      objects += parts.length;
      if (m.open.inline) {
        const data = Buffer.from(m.open.inline.data, 'base64');
        if (data.length !== m.open.inline.to - m.open.inline.from || crc32c(data) !== m.open.inline.crc32c)
          throw corrupt(`${prefix}/manifest.json`, 'inline bytes differ from their CRC32C');
        parts.push(data);
      }
      if (parts.length === 0) return;
      const body = Buffer.concat(parts);
      checkHeader(m, body, segmentName(m.open.firstId));
      await writeDurableAsync(path.join(staging, 'log', segmentName(m.open.firstId)), body);
      bytes += body.length;
    })();
    // The snapshot's files: each one that came in whole and matching is staged; what did not
    // is said (the log is the source of truth: the open rebuilds that index from it).
    const problems: string[] = [];
    const staged: string[] = [];
    let snapBytes = 0;
    const snapWrites = snapFiles.map(async (f, i) => {
      let body: Uint8Array;
      try {
        body = await fetched[logObjects.length + i]!;
      } catch (e) {
        problems.push(`${f.name}: ${(e as Error).message}`);
        return;
      }
      await writeDurableAsync(path.join(staging, 'index', f.name), body);
      staged.push(f.name);
      snapBytes += body.length;
    });
    try {
      await Promise.all([...segWrites, openWrite]);
    } catch (e) {
      cancel();
      throw e;
    } finally {
      // Nothing may still be writing into the staging directory when it is removed.
      await Promise.allSettled([...segWrites, openWrite, ...snapWrites]);
    }
    writeDurable(path.join(staging, 'log', 'EXTENT'), extentBytes(m.logTag, m.logStart, m.nextId));
    fsyncDir(path.join(staging, 'log'));
    if (fs.existsSync(logDir)) fs.rmdirSync(logDir);
    fs.renameSync(path.join(staging, 'log'), logDir);
    fsyncDir(dir);
    let snapshot: RestoreResult['snapshot'] = { state: 'none', nextId: null, bytes: 0, problems: [] };
    if (snap !== null) {
      const identityOk = crc32c(Buffer.from(snap.identity, 'utf8')) === snap.identityCrc32c;
      if (!identityOk) problems.push('identity.json: CRC32C differs from the manifest');
      const indexDir = path.join(dir, 'index');
      fs.mkdirSync(path.join(indexDir, 'vector'), { recursive: true, mode: 0o700 });
      for (const name of staged) fs.renameSync(path.join(staging, 'index', name), path.join(indexDir, name));
      if (identityOk) fs.writeFileSync(path.join(indexDir, 'identity.json'), snap.identity, { mode: 0o600 });
      objects += staged.length;
      snapshot = { state: problems.length > 0 ? 'partial' : 'written', nextId: snap.nextId, bytes: snapBytes, problems };
    }
    if (m.closed !== true && m.durability !== 'replicated') {
      const detail = `restored from ${prefix} (epoch ${m.epoch - 1}), whose owner ran ${m.durability ?? 'an unknown durability'} and did not close: turns it acknowledged after id ${m.nextId - 1} may be missing`;
      fs.writeFileSync(path.join(dir, 'replica-restore.json'), `${JSON.stringify({ detail, nextId: m.nextId, epoch: m.epoch })}\n`, { mode: 0o600 });
    }
    return { manifest: m, bytes, objects, ms: performance.now() - t0, snapshot };
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}
