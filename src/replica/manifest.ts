/**
 * The manifest (docs/replication.md): the one object that says what the bucket holds, and
 * the commit point. It is only ever replaced by a conditional PUT on the ETag last read or
 * written, so a writer that lost its ownership cannot overwrite a newer manifest.
 */
import { ErrorCode, SpanguardError } from '../errors.js';
import { ObjectStoreError, type ObjectStore } from './object-store.js';
import { isSnapshotFileName, type SnapshotEntry } from './snapshot.js';

export const MANIFEST_FORMAT = 'spanguard-replica';
export const MANIFEST_VERSION = 1;

export interface SegmentEntry {
  key: string;
  firstId: number;
  nextId: number;
  bytes: number;
  crc32c: number;
}

export interface ChunkEntry {
  key: string;
  from: number;
  to: number;
  crc32c: number;
  /** 0: uploaded by one ship; n + 1: TAIL_FANIN chunks of level n merged (src/replica/shipper.ts). Absent: 0. */
  level?: number;
}

export interface InlineEntry {
  from: number;
  to: number;
  crc32c: number;
  /** base64 */
  data: string;
}

export interface OpenEntry {
  firstId: number;
  nextId: number;
  chunks: ChunkEntry[];
  inline: InlineEntry | null;
}

export interface Manifest {
  format: typeof MANIFEST_FORMAT;
  version: number;
  logTag: string;
  logStart: number;
  epoch: number;
  owner: string;
  committedAt: number;
  nextId: number;
  segments: SegmentEntry[];
  open: OpenEntry | null;
  /** The owner's durability mode: below `replicated`, acknowledged turns may be missing after a crash. */
  durability?: string;
  /** The owner closed the store after shipping everything: nothing acknowledged is missing. */
  closed?: boolean;
  /** The newest index snapshot (src/replica/snapshot.ts), covering ids below its `nextId` (≤ the manifest's). */
  snapshot?: SnapshotEntry | null;
}

export function manifestKey(prefix: string): string {
  return `${prefix}/manifest.json`;
}

/** Bytes of the open segment the manifest holds (chunks, then inline). */
export function openBytes(m: Manifest): number {
  const o = m.open;
  if (o === null) return 0;
  return o.inline?.to ?? o.chunks[o.chunks.length - 1]?.to ?? 0;
}

function bad(key: string, why: string): never {
  throw new SpanguardError(ErrorCode.CORRUPT, `replica manifest ${key}: ${why}`, { file: key, offset: 0 });
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isCrc = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff;

/** Parses and checks a manifest: its fields, and that its segments and chunks are contiguous. */
export function parseManifest(key: string, body: Uint8Array): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(Buffer.from(body).toString('utf8')) as Manifest;
  } catch (e) {
    bad(key, `not JSON (${(e as Error).message})`);
  }
  if (m === null || typeof m !== 'object' || m.format !== MANIFEST_FORMAT) bad(key, 'not a spanguard replica manifest');
  if (m.version !== MANIFEST_VERSION) bad(key, `version ${String(m.version)} is not ${MANIFEST_VERSION}`);
  if (typeof m.logTag !== 'string' || !/^[0-9a-f]{16}$/.test(m.logTag)) bad(key, 'logTag');
  if (!isCount(m.logStart) || m.logStart < 1 || !isCount(m.epoch) || m.epoch < 1 || typeof m.owner !== 'string') bad(key, 'logStart/epoch/owner');
  if (!isCount(m.nextId) || !Array.isArray(m.segments)) bad(key, 'nextId/segments');
  let next = m.logStart;
  for (const s of m.segments) {
    if (typeof s?.key !== 'string' || s.firstId !== next || !isCount(s.nextId) || s.nextId < s.firstId || !isCount(s.bytes) || !isCrc(s.crc32c))
      bad(key, `segment ${String(s?.firstId)} does not continue the log at ${next}`);
    next = s.nextId;
  }
  if (m.open !== null) {
    const o = m.open;
    if (typeof o !== 'object' || o.firstId !== next || !isCount(o.nextId) || o.nextId < o.firstId || !Array.isArray(o.chunks)) bad(key, 'open segment');
    let at = 0;
    for (const c of o.chunks) {
      if (typeof c?.key !== 'string' || c.from !== at || !isCount(c.to) || c.to <= c.from || !isCrc(c.crc32c) || (c.level !== undefined && !isCount(c.level))) bad(key, `chunk at ${at}`);
      at = c.to;
    }
    if (o.inline !== null) {
      const i = o.inline;
      if (typeof i !== 'object' || i.from !== at || !isCount(i.to) || i.to <= i.from || !isCrc(i.crc32c) || typeof i.data !== 'string') bad(key, `inline bytes at ${at}`);
    }
    next = o.nextId;
  }
  if (m.nextId !== next) bad(key, `nextId ${m.nextId} is not where its segments end (${next})`);
  if (m.snapshot !== undefined && m.snapshot !== null) {
    const s = m.snapshot;
    if (typeof s !== 'object' || !isCount(s.nextId) || s.nextId > m.nextId || typeof s.identity !== 'string' || !isCrc(s.identityCrc32c) || !Array.isArray(s.files))
      bad(key, 'snapshot');
    for (const f of s.files)
      if (typeof f?.name !== 'string' || !isSnapshotFileName(f.name) || typeof f.key !== 'string' || !isCount(f.bytes) || !isCrc(f.crc32)) bad(key, `snapshot file ${String(f?.name)}`);
  }
  return m;
}

export function encodeManifest(m: Manifest): Uint8Array {
  return Buffer.from(JSON.stringify(m), 'utf8');
}

export interface Committed {
  manifest: Manifest;
  etag: string;
}

/** Reads the manifest under `prefix`, or null when there is none. */
export async function readManifest(store: ObjectStore, prefix: string): Promise<Committed | null> {
  const key = manifestKey(prefix);
  const got = await store.get(key);
  if (got === null) return null;
  return { manifest: parseManifest(key, got.body), etag: got.etag };
}

/**
 * Writes `next` over the manifest whose ETag is `etag` (null: there must be none). Returns
 * the new ETag, or `null` when the precondition failed because another writer committed
 * (the caller re-reads). A commit whose response was lost but which the server applied is
 * recognised on the re-read and returned as done.
 */
export async function commitManifest(store: ObjectStore, prefix: string, etag: string | null, next: Manifest): Promise<string | null> {
  const key = manifestKey(prefix);
  const body = encodeManifest(next);
  try {
    const out = await store.put(key, body, etag === null ? { ifNoneMatch: '*' } : { ifMatch: etag });
    return out.etag;
  } catch (e) {
    const failed = e instanceof ObjectStoreError ? e : null;
    if (failed === null) throw e;
    // After a precondition failure or a lost response, the manifest says whether this very
    // body is the one committed.
    let current: { body: Uint8Array; etag: string } | null;
    try {
      current = await store.get(key);
    } catch {
      throw failed;
    }
    if (current !== null && Buffer.from(current.body).equals(Buffer.from(body))) return current.etag;
    if (failed.kind === 'precondition') return null;
    throw failed;
  }
}
