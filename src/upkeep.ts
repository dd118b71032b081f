/**
 * Index identity: which store and which log history a derived index was built from.
 *
 * The indexes are derived from the log, and a derived file is only as good as the log it
 * came from. Next to them, `index/identity.json` records, for the store id (written once in
 * the log as a `store` event) and for each index, the id one past the last record it covers
 * and a digest of that last record. At open, an index whose file does not match — another
 * store's id, a high water the identity does not describe, a last record whose digest
 * differs (the same ids, another history) — is rebuilt from the log and the rebuild is
 * recorded. The identity is written after the indexes are saved (close, checkpoint), by
 * temporary file and rename: a crash between the two leaves an identity that no longer
 * matches, and the next open rebuilds, which is slow but never wrong.
 *
 * docs/FORMAT.md, "Index identity", describes the file.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { NativeSpan, NativeSpanLog } from './native.js';

export const IDENTITY_FILE = 'identity.json';
export const IDENTITY_VERSION = 1;

export interface IndexIdentity {
  /** One past the last log id the index covers. */
  highWater: number;
  /** Digest of the record at highWater − 1 (null when the index covers nothing). */
  lastDigest: string | null;
}

export interface IdentityFile {
  version: number;
  storeId: string;
  lexical: IndexIdentity;
  vector: IndexIdentity;
}

/**
 * A digest of one record: kind, flags, role, turns, timestamp, text and metadata. The log's
 * own CRC is not exposed above the engine; this covers the same bytes that matter.
 */
export function recordDigest(r: NativeSpan): string {
  const h = createHash('sha256');
  h.update(`${r.id}\u0000${r.kind}\u0000${r.flags}\u0000${r.role}\u0000${r.turnStart}\u0000${r.turnEnd}\u0000${r.timestamp}\u0000`);
  h.update(r.text);
  h.update('\u0000');
  h.update(r.meta ?? '');
  return h.digest('hex').slice(0, 32);
}

export function identityOf(log: NativeSpanLog, highWater: number): IndexIdentity {
  if (highWater <= log.firstId()) return { highWater, lastDigest: null };
  const r = log.get(highWater - 1);
  return { highWater, lastDigest: r ? recordDigest(r) : null };
}

export function readIdentity(indexDir: string): IdentityFile | null {
  try {
    const raw = JSON.parse(fs.readFileSync(path.join(indexDir, IDENTITY_FILE), 'utf8')) as Partial<IdentityFile>;
    if (raw.version !== IDENTITY_VERSION || typeof raw.storeId !== 'string' || !raw.lexical || !raw.vector) return null;
    return raw as IdentityFile;
  } catch {
    return null;
  }
}

export function writeIdentity(indexDir: string, id: IdentityFile): void {
  const file = path.join(indexDir, IDENTITY_FILE);
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, JSON.stringify(id));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/**
 * Why an index loaded from its file cannot be trusted as this log's, or null when it can.
 * `storeId`: the store's id from the log (null while not yet recorded).
 */
export function identityMismatch(
  name: 'lexical' | 'vector',
  indexHighWater: number,
  log: NativeSpanLog,
  storeId: string | null,
  id: IdentityFile | null,
): string | null {
  if (indexHighWater <= log.firstId()) return null; // covers nothing: nothing to trust
  if (id === null) return `${name} index has no identity record: its store and log history are unknown`;
  if (storeId !== null && id.storeId !== storeId) return `${name} index was built for store ${id.storeId}, not ${storeId}`;
  const mine = id[name];
  if (mine.highWater !== indexHighWater) return `${name} index covers ids up to ${indexHighWater - 1}, its identity says ${mine.highWater - 1}`;
  if (indexHighWater > log.nextId()) return `${name} index covers ids up to ${indexHighWater - 1} but the log ends at ${log.nextId() - 1}`;
  const now = identityOf(log, indexHighWater);
  if (now.lastDigest !== mine.lastDigest) return `${name} index was built from another log history (record ${indexHighWater - 1} differs)`;
  return null;
}
