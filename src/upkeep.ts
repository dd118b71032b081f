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
import { RecordKind, type NativeLexicalIndex, type NativeSpan, type NativeSpanLog, type NativeVectorIndex } from './native.js';

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

/**
 * The one agreement check between the log and the indexes, id by id (not counts): every raw
 * and summary id of the log is in the lexical index and nothing else is; every one of them
 * with text has a vector (an empty text embeds to nothing) and nothing else does. Returns
 * the disagreements, empty when they agree. `verify` and `repair` both call it.
 */
export function indexAgreement(log: NativeSpanLog, lexical: NativeLexicalIndex, vector: NativeVectorIndex): string[] {
  const out: string[] = [];
  const first = log.firstId();
  const n = log.nextId() - first;
  for (const [name, kind] of [['raw', RecordKind.raw], ['summary', RecordKind.summary]] as const) {
    // Each index is compared over the ids it says it covers (below its high water): a
    // reader's vector index stays where the writer last saved it.
    const inLog = log.scanIds(first, n, 1 << kind, 0);
    const below = (hw: number) => inLog.subarray(0, upperBound(inLog, hw));
    const lex = diff(below(lexical.highWater()), lexical.ids(kind));
    if (lex.missing.length > 0) out.push(`lexical index lacks ${lex.missing.length} ${name} span(s) of the log (first ${lex.missing.slice(0, 5).join(', ')})`);
    if (lex.extra.length > 0) out.push(`lexical index holds ${lex.extra.length} ${name} id(s) the log does not (first ${lex.extra.slice(0, 5).join(', ')})`);
    const vec = diff(below(vector.highWater()), vector.ids(kind));
    const missing = vec.missing.length > 0 ? log.getMany(Float64Array.from(vec.missing)).filter((r) => !r || r.text.length > 0) : [];
    if (missing.length > 0) out.push(`vector index lacks ${missing.length} ${name} span(s) of the log with text (first ${missing.slice(0, 5).map((r) => r?.id).join(', ')})`);
    if (vec.extra.length > 0) out.push(`vector index holds ${vec.extra.length} ${name} id(s) the log does not (first ${vec.extra.slice(0, 5).join(', ')})`);
  }
  return out;
}

/** The number of ids below `hw` in an ascending array. */
function upperBound(ids: Float64Array, hw: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid]! < hw) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Ids of `want` not in `have`, and of `have` not in `want`; both ascending. */
function diff(want: ArrayLike<number>, have: ArrayLike<number>): { missing: number[]; extra: number[] } {
  const missing: number[] = [];
  const extra: number[] = [];
  let i = 0;
  let j = 0;
  while (i < want.length || j < have.length) {
    if (j >= have.length || (i < want.length && want[i]! < have[j]!)) missing.push(want[i++]!);
    else if (i >= want.length || have[j]! < want[i]!) extra.push(have[j++]!);
    else (i++, j++);
  }
  return { missing, extra };
}
