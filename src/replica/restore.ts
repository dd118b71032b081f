/**
 * Restore: a store's log rebuilt in an empty directory from the bucket alone. The manifest is
 * claimed first (owner epoch + 1), so the previous owner is fenced before a byte is read and
 * cannot commit anything the restored copy would lack; then every object the manifest names
 * is downloaded and checked (size and CRC32C) before any file is written.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ErrorCode, SpanguardError } from '../errors.js';
import { crc32 } from './crc32.js';
import { crc32c } from './crc32c.js';
import { extentBytes, readHeader, segmentName } from './log-files.js';
import type { Manifest } from './manifest.js';
import type { SnapshotEntry } from './snapshot.js';
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

async function fetchChecked(store: ObjectStore, key: string, bytes: number, crc: number, check: (b: Uint8Array) => number = crc32c): Promise<Uint8Array> {
  let got: { body: Uint8Array } | null;
  try {
    got = await store.get(key);
  } catch (e) {
    throw new SpanguardError(ErrorCode.REPLICA_UNAVAILABLE, `replica object ${key}: ${(e as Error).message}`, {
      key,
      kind: e instanceof ObjectStoreError ? e.kind : 'transient',
    });
  }
  if (got === null) throw corrupt(key, 'missing from the bucket');
  if (got.body.length !== bytes) throw corrupt(key, `${got.body.length} bytes, the manifest says ${bytes}`);
  if (check(got.body) !== crc) throw corrupt(key, `${check === crc32c ? 'CRC32C' : 'CRC-32'} differs from the manifest`);
  return got.body;
}

async function pool<T>(items: T[], width: number, run: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await run(items[next++]!);
    }),
  );
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

/**
 * Restores the store under `prefix` into `dir` (which must not hold a log). Claims the
 * manifest, downloads and checks every object, writes the segments and an `EXTENT` whose
 * durable next is the manifest's `nextId`. Open the directory with `SpanStore.open` next.
 */
export async function restoreFromBucket(store: ObjectStore, prefix: string, dir: string, options: { concurrency?: number } = {}): Promise<RestoreResult> {
  const t0 = performance.now();
  const logDir = path.join(dir, 'log');
  if (fs.existsSync(logDir) && fs.readdirSync(logDir).length > 0)
    throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, `restore: ${logDir} already holds a log`, { dir });
  let claimed;
  try {
    claimed = await claimManifest(store, prefix, `restore-${randomUUID()}`, null);
  } catch (e) {
    if (e instanceof SpanguardError) throw e;
    throw new SpanguardError(ErrorCode.REPLICA_UNAVAILABLE, `restore ${prefix}: ${(e as Error).message}`, { prefix });
  }
  const m = claimed.manifest;
  // The index snapshot (four times the log's bytes at 10⁵ spans) downloads alongside the
  // log, its largest files first; it is written only after the log is.
  const snapshotFetch = fetchSnapshot(store, m, options.concurrency ?? 4);
  const files = new Map<string, Uint8Array>();
  let objects = 0;
  const fetchLog = async () => {
    await pool(m.segments, options.concurrency ?? 4, async (s) => {
      files.set(segmentName(s.firstId), await fetchChecked(store, s.key, s.bytes, s.crc32c));
      objects++;
    });
    if (m.open !== null) {
      const parts: Uint8Array[] = new Array(m.open.chunks.length);
      await pool([...m.open.chunks.keys()], options.concurrency ?? 4, async (i) => {
        const c = m.open!.chunks[i]!;
        parts[i] = await fetchChecked(store, c.key, c.to - c.from, c.crc32c);
        objects++;
      });
      if (m.open.inline) {
        const data = Buffer.from(m.open.inline.data, 'base64');
        if (data.length !== m.open.inline.to - m.open.inline.from || crc32c(data) !== m.open.inline.crc32c)
          throw corrupt(`${prefix}/manifest.json`, 'inline bytes differ from their CRC32C');
        parts.push(data);
      }
      if (parts.length > 0) files.set(segmentName(m.open.firstId), Buffer.concat(parts));
    }
  };
  try {
    await fetchLog();
  } catch (e) {
    await snapshotFetch;
    throw e;
  }
  for (const [name, bytes] of files) {
    const h = readHeader(bytes, name);
    if (h.logTag !== m.logTag || h.logStart !== m.logStart || segmentName(h.firstId) !== name)
      throw corrupt(name, `its header names log ${h.logTag} (start ${h.logStart}, first id ${h.firstId}), not the manifest's`);
  }
  fs.mkdirSync(logDir, { recursive: true, mode: 0o700 });
  let bytes = 0;
  for (const [name, data] of files) {
    writeDurable(path.join(logDir, name), data);
    bytes += data.length;
  }
  const tmp = path.join(logDir, 'EXTENT.tmp');
  writeDurable(tmp, extentBytes(m.logTag, m.logStart, m.nextId));
  fs.renameSync(tmp, path.join(logDir, 'EXTENT'));
  const snapshot = writeSnapshot(dir, await snapshotFetch);
  objects += snapshot.objects;
  if (m.closed !== true && m.durability !== 'replicated') {
    const detail = `restored from ${prefix} (epoch ${m.epoch - 1}), whose owner ran ${m.durability ?? 'an unknown durability'} and did not close: turns it acknowledged after id ${m.nextId - 1} may be missing`;
    fs.writeFileSync(path.join(dir, 'replica-restore.json'), `${JSON.stringify({ detail, nextId: m.nextId, epoch: m.epoch })}\n`, { mode: 0o600 });
  }
  const dfd = fs.openSync(logDir, 'r');
  try {
    fs.fsyncSync(dfd);
  } finally {
    fs.closeSync(dfd);
  }
  return { manifest: m, bytes, objects, ms: performance.now() - t0, snapshot: snapshot.result };
}

interface FetchedSnapshot {
  entry: SnapshotEntry | null;
  identityOk: boolean;
  got: Map<string, Uint8Array>;
  problems: string[];
}

/** Downloads the manifest's index snapshot, each file checked against its size and CRC-32; what fails is left out and said. Never rejects. */
async function fetchSnapshot(store: ObjectStore, m: Manifest, concurrency: number): Promise<FetchedSnapshot> {
  const s = m.snapshot ?? null;
  const got = new Map<string, Uint8Array>();
  const problems: string[] = [];
  if (s === null || s.nextId > m.nextId) return { entry: null, identityOk: false, got, problems };
  const identityOk = crc32c(Buffer.from(s.identity, 'utf8')) === s.identityCrc32c;
  if (!identityOk) problems.push('identity.json: CRC32C differs from the manifest');
  const biggestFirst = [...s.files].sort((a, b) => b.bytes - a.bytes);
  await pool(biggestFirst, Math.max(1, Math.ceil(concurrency / 2)), async (f) => {
    try {
      got.set(f.name, await fetchChecked(store, f.key, f.bytes, f.crc32, crc32));
    } catch (e) {
      // The log is the source of truth: a snapshot file that cannot be had is rebuilt.
      problems.push(`${f.name}: ${(e as Error).message}`);
    }
  });
  return { entry: s, identityOk, got, problems };
}

/**
 * Writes the fetched index snapshot into `dir/index` (after the log): every file whose size
 * and CRC-32 matched the manifest, then `identity.json` when its CRC32C did. What does not
 * match is left out and reported, and the open's identity check sees it — a file the
 * identity names is missing, or files without an identity — so it rebuilds that index from
 * the log and records an `index-rebuilt` event saying why. A snapshot of another store or
 * another history is written as it is: the open's identity check refuses it the same way.
 */
function writeSnapshot(dir: string, f: FetchedSnapshot): { objects: number; result: RestoreResult['snapshot'] } {
  if (f.entry === null) return { objects: 0, result: { state: 'none', nextId: null, bytes: 0, problems: [] } };
  const indexDir = path.join(dir, 'index');
  fs.mkdirSync(path.join(indexDir, 'vector'), { recursive: true, mode: 0o700 });
  let bytes = 0;
  for (const [name, body] of f.got) {
    fs.writeFileSync(path.join(indexDir, name), body, { mode: 0o600 });
    bytes += body.length;
  }
  if (f.identityOk) fs.writeFileSync(path.join(indexDir, 'identity.json'), f.entry.identity, { mode: 0o600 });
  return { objects: f.got.size, result: { state: f.problems.length > 0 ? 'partial' : 'written', nextId: f.entry.nextId, bytes, problems: f.problems } };
}
