/**
 * Replication of a store's log to S3-compatible object storage (docs/replication.md): the
 * options a store takes, restore, and the remote check `spanguard verify --remote` runs.
 */
import path from 'node:path';
import { ErrorCode, SpanguardError } from '../errors.js';
import { crc32c } from './crc32c.js';
import { listSegments, readHeader } from './log-files.js';
import { readManifest } from './manifest.js';
import { S3ObjectStore, type ObjectStore, type S3Options } from './object-store.js';
import { restoreFromBucket, type RestoreResult } from './restore.js';
import { Shipper, type ShipperOptions } from './shipper.js';
import fs from 'node:fs';

export { S3ObjectStore, ObjectStoreError } from './object-store.js';
export type { ObjectStore, S3Options, PutCondition, ObjectStoreErrorKind } from './object-store.js';
export { FaultyObjectStore } from './faults.js';
export type { FaultPlan } from './faults.js';
export type { ReplicaStatus, ShipperOptions } from './shipper.js';
export type { Manifest } from './manifest.js';
export type { RestoreResult } from './restore.js';
export { Shipper } from './shipper.js';

export interface ReplicaOptions extends ShipperOptions {
  /** An S3-compatible bucket ... */
  s3?: S3Options;
  /** ... or any {@link ObjectStore} (a test double, a fault-injecting wrapper). */
  objectStore?: ObjectStore;
  /** Key prefix of this store's objects, e.g. `sessions/<id>` (no leading or trailing `/`). */
  prefix: string;
}

export function objectStoreOf(o: ReplicaOptions): ObjectStore {
  if (o === null || typeof o !== 'object') throw new SpanguardError(ErrorCode.INVALID_OPTIONS, 'replica must be an object');
  if (typeof o.prefix !== 'string' || o.prefix.length === 0 || o.prefix.startsWith('/') || o.prefix.endsWith('/'))
    throw new SpanguardError(ErrorCode.INVALID_OPTIONS, `replica.prefix must be a non-empty key prefix without a leading or trailing "/", got ${String(o.prefix)}`);
  if ((o.s3 === undefined) === (o.objectStore === undefined)) throw new SpanguardError(ErrorCode.INVALID_OPTIONS, 'replica needs exactly one of s3 and objectStore');
  return o.objectStore ?? new S3ObjectStore(o.s3!);
}

/** Starts shipping the log in `dir` (after claiming the bucket's manifest). */
export async function startReplica(dir: string, durability: string, o: ReplicaOptions): Promise<Shipper> {
  const store = objectStoreOf(o);
  const { s3: _s3, objectStore: _os, prefix, ...shipper } = o;
  return Shipper.start(store, prefix, path.join(dir, 'log'), durability, shipper);
}

/** Written by a restore whose manifest's owner may have acknowledged turns the bucket lacks; read once by the next open. */
export const RESTORE_NOTE = 'replica-restore.json';

/**
 * What the open after a restore records in the event trail (a `degrade` event), or null: the
 * previous owner ran below `replicated` and did not close, so turns it acknowledged after the
 * bucket's last id may be missing. Removes the note.
 */
export function takeRestoreNote(dir: string): string | null {
  const file = path.join(dir, RESTORE_NOTE);
  let note: { detail?: string };
  try {
    note = JSON.parse(fs.readFileSync(file, 'utf8')) as { detail?: string };
  } catch {
    return null;
  }
  return typeof note.detail === 'string' ? note.detail : null;
}

export function clearRestoreNote(dir: string): void {
  fs.rmSync(path.join(dir, RESTORE_NOTE), { force: true });
}

/**
 * Restores the store under `options.prefix` into `dir` from the bucket alone (claiming it:
 * the previous owner is fenced). `concurrency`: GETs in flight (default 8); `rangeBytes`:
 * objects larger than this download as ranges of this size (default 8 MiB). Then `SpanStore.open(dir, { replica: options, ... })`
 * rebuilds the indexes, replays the event trail and goes on shipping.
 */
export async function restoreReplica(dir: string, options: ReplicaOptions & { concurrency?: number; rangeBytes?: number }): Promise<RestoreResult> {
  for (const k of ['concurrency', 'rangeBytes'] as const) {
    const v = options?.[k];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 1)) throw new SpanguardError(ErrorCode.INVALID_OPTIONS, `restore: ${k} must be a positive integer, got ${String(v)}`);
  }
  return restoreFromBucket(objectStoreOf(options), options.prefix, dir, options);
}

export interface RemoteCheck {
  ok: boolean;
  /** The bucket's last id. */
  shippedThroughId: number;
  objects: number;
  problems: string[];
}

/**
 * Compares the local log in `dir`, the bucket's manifest and its objects: every object the
 * manifest names is there with its size and CRC32C, the local log is the same log and holds
 * every byte the manifest does (its shipped bytes equal, byte for byte).
 */
export async function verifyRemote(dir: string, options: ReplicaOptions): Promise<RemoteCheck> {
  const store = objectStoreOf(options);
  const problems: string[] = [];
  const got = await readManifest(store, options.prefix);
  if (got === null) return { ok: false, shippedThroughId: 0, objects: 0, problems: [`no manifest under ${options.prefix}`] };
  const m = got.manifest;
  const segs = listSegments(path.join(dir, 'log'));
  const local = new Map(segs.map((s) => [s.firstId, s]));
  if (segs.length > 0) {
    const h = readHeader(fs.readFileSync(segs[0]!.file).subarray(0, 64), segs[0]!.file);
    if (h.logTag !== m.logTag || h.logStart !== m.logStart) problems.push(`the bucket holds log ${m.logTag}, the local log is ${h.logTag}`);
  } else problems.push('the local log has no segment');
  let objects = 0;
  const check = async (key: string, bytes: number, crc: number, localFile: string | undefined, from: number) => {
    objects++;
    let body: Uint8Array | null = null;
    try {
      body = (await store.get(key))?.body ?? null;
    } catch (e) {
      problems.push(`${key}: ${(e as Error).message}`);
      return;
    }
    if (body === null) problems.push(`${key}: missing from the bucket`);
    else if (body.length !== bytes || crc32c(body) !== crc) problems.push(`${key}: size or CRC32C differs from the manifest`);
    if (localFile === undefined) {
      problems.push(`${key}: the local log lacks its segment`);
      return;
    }
    const fd = fs.openSync(localFile, 'r');
    try {
      const buf = Buffer.alloc(bytes);
      const n = fs.readSync(fd, buf, 0, bytes, from);
      if (n !== bytes || crc32c(buf) !== crc) problems.push(`${key}: the local log's bytes ${from}..${from + bytes} differ from the bucket's`);
    } finally {
      fs.closeSync(fd);
    }
  };
  for (const s of m.segments) {
    const l = local.get(s.firstId);
    await check(s.key, s.bytes, s.crc32c, l?.file, 0);
    if (l && l.size !== s.bytes) problems.push(`segment ${s.firstId}: ${l.size} bytes locally, ${s.bytes} in the bucket`);
  }
  if (m.open !== null) {
    const l = local.get(m.open.firstId);
    for (const c of m.open.chunks) await check(c.key, c.to - c.from, c.crc32c, l?.file, c.from);
    const i = m.open.inline;
    if (i) {
      const data = Buffer.from(i.data, 'base64');
      if (crc32c(data) !== i.crc32c) problems.push('manifest inline bytes: CRC32C differs');
      if (!l || l.size < i.to) problems.push(`the local log lacks bytes ${i.from}..${i.to} of segment ${m.open.firstId}`);
      else {
        const fd = fs.openSync(l.file, 'r');
        const buf = Buffer.alloc(i.to - i.from);
        fs.readSync(fd, buf, 0, buf.length, i.from);
        fs.closeSync(fd);
        if (!buf.equals(data)) problems.push(`segment ${m.open.firstId} bytes ${i.from}..${i.to} differ between the local log and the manifest`);
      }
    }
  }
  return { ok: problems.length === 0, shippedThroughId: m.nextId - 1, objects, problems };
}
