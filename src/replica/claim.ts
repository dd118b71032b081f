/**
 * Taking a store's manifest for a new owner (owner epoch + 1 by conditional PUT), checking
 * that the local log holds what the bucket holds, and the replica's typed errors.
 */
import fs from 'node:fs';
import { ErrorCode, SpanguardError } from '../errors.js';
import { crc32c } from './crc32c.js';
import { HEADER_BYTES, listSegments, readHeader, type LocalSegment } from './log-files.js';
import { commitManifest, openBytes, readManifest, type Committed, type Manifest, MANIFEST_FORMAT, MANIFEST_VERSION } from './manifest.js';
import { ObjectStoreError, type ObjectStore } from './object-store.js';
import { readRange } from './reads.js';

export function fencedError(prefix: string, mine: { epoch: number; owner: string }, theirs: Manifest): SpanguardError {
  return new SpanguardError(
    ErrorCode.REPLICA_FENCED,
    `replica ${prefix}: another writer owns the store (epoch ${theirs.epoch}, owner ${theirs.owner}; this writer held epoch ${mine.epoch}); the store is read-only`,
    { prefix, epoch: mine.epoch, currentEpoch: theirs.epoch },
  );
}

/** REPLICA_MISMATCH; `empty`: the bucket holds no manifest under `prefix` (nothing was ever shipped there). */
export function mismatch(prefix: string, why: string, empty = false): SpanguardError {
  return new SpanguardError(ErrorCode.REPLICA_MISMATCH, `replica ${prefix}: ${why}`, { prefix, ...(empty ? { empty: true } : {}) });
}

export function unavailable(e: unknown): SpanguardError {
  if (e instanceof SpanguardError) return e;
  return new SpanguardError(ErrorCode.REPLICA_UNAVAILABLE, `object store: ${(e as Error).message}`, {
    kind: e instanceof ObjectStoreError ? e.kind : 'transient',
  });
}

/** The local log's tag and start (from its first segment's header), or null for a log without segments. */
export function localIdentity(logDir: string, segs: LocalSegment[]): { logTag: string; logStart: number } | null {
  if (segs.length === 0) return null;
  const fd = fs.openSync(segs[0]!.file, 'r');
  try {
    const b = Buffer.alloc(HEADER_BYTES);
    fs.readSync(fd, b, 0, HEADER_BYTES, 0);
    const h = readHeader(b, segs[0]!.file);
    return { logTag: h.logTag, logStart: h.logStart };
  } finally {
    fs.closeSync(fd);
  }
  void logDir;
}

/** Checks that everything `m` names is in the local log, byte for byte where it is cheap (the open segment's shipped prefix). */
export async function checkLocalHolds(prefix: string, m: Manifest, segs: LocalSegment[]): Promise<void> {
  const byFirst = new Map(segs.map((s) => [s.firstId, s]));
  for (const s of m.segments) {
    const local = byFirst.get(s.firstId);
    if (!local || local.size !== s.bytes)
      throw mismatch(prefix, `the bucket holds segment ${s.firstId} (${s.bytes} bytes) that this log ${local ? `holds with ${local.size} bytes` : 'lacks'}; restore from the bucket instead`);
  }
  if (m.open === null) return;
  const shipped = openBytes(m);
  if (shipped === 0) return;
  const local = byFirst.get(m.open.firstId);
  if (!local || local.size < shipped)
    throw mismatch(prefix, `the bucket holds ids up to ${m.nextId - 1}, past this log's end; restore from the bucket instead`);
  const bytes = await readRange(local.file, 0, shipped);
  const parts = [...m.open.chunks.map((c) => ({ from: c.from, to: c.to, crc: c.crc32c })), ...(m.open.inline ? [{ from: m.open.inline.from, to: m.open.inline.to, crc: m.open.inline.crc32c }] : [])];
  for (const p of parts)
    if (crc32c(bytes.subarray(p.from, p.to)) !== p.crc)
      throw mismatch(prefix, `segment ${m.open.firstId} bytes ${p.from}..${p.to} differ between this log and the bucket`);
}

/**
 * Claims the manifest under `prefix` for a new owner: epoch + 1 by conditional PUT (the
 * first manifest with If-None-Match). With `logDir`, the local log must hold everything the
 * bucket holds (and be the same log); without, the caller is about to restore from it.
 */
export async function claimManifest(store: ObjectStore, prefix: string, owner: string, logDir: string | null, durability?: string): Promise<Committed> {
  for (let attempt = 0; ; attempt++) {
    const cur = await readManifest(store, prefix);
    let next: Manifest;
    if (cur === null) {
      if (logDir === null) throw mismatch(prefix, 'no manifest in the bucket: nothing to restore', true);
      const segs = listSegments(logDir);
      const id = localIdentity(logDir, segs);
      if (id === null) throw mismatch(prefix, 'the local log has no segment yet');
      next = { format: MANIFEST_FORMAT, version: MANIFEST_VERSION, ...id, epoch: 1, owner, committedAt: Date.now(), nextId: id.logStart, segments: [], open: null, closed: false, ...(durability ? { durability } : {}) };
    } else {
      if (logDir !== null) {
        const segs = listSegments(logDir);
        const id = localIdentity(logDir, segs);
        if (id === null || id.logTag !== cur.manifest.logTag || id.logStart !== cur.manifest.logStart)
          throw mismatch(prefix, `the bucket holds log ${cur.manifest.logTag} (start ${cur.manifest.logStart}), not this one (${id ? `${id.logTag}, start ${id.logStart}` : 'no segment'})`);
        await checkLocalHolds(prefix, cur.manifest, segs);
      }
      next = { ...cur.manifest, epoch: cur.manifest.epoch + 1, owner, committedAt: Date.now() };
      if (logDir !== null) next = { ...next, closed: false, ...(durability ? { durability } : {}) };
    }
    const etag = await commitManifest(store, prefix, cur?.etag ?? null, next);
    if (etag !== null) return { manifest: next, etag };
    if (attempt > 100) throw unavailable(new ObjectStoreError('transient', 'the manifest kept changing under the claim'));
  }
}
