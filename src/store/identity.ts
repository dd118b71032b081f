/**
 * Index identity: which store and which log history a derived index was built from, and
 * which files hold it.
 *
 * The indexes are derived from the log, and a derived file is only as good as the log it
 * came from. Next to them, `index/identity.json` records, for the store id (written once in
 * the log as a `store` event) and for each index, the id one past the last record it covers,
 * a digest of that last record, and a fingerprint of the index's files (the content CRCs
 * their headers hold). At open, an index whose files do not match — damaged (a check of the
 * file failed), missing while the identity says they covered records, another store's id, a
 * high water the identity does not describe, a last record whose digest differs (the same
 * ids, another history), files of the same shape with other content — is rebuilt from the
 * log and the rebuild is recorded. The identity is written after the indexes are saved
 * (close, checkpoint), by temporary file and rename: a crash between the two leaves an
 * identity that no longer matches, and the next open rebuilds, which is slow but never wrong.
 *
 * docs/FORMAT.md, "Index identity", describes the file.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ScanSlicer } from '../catchup.js';
import { RecordKind, type NativeEmbedder, type NativeLexicalIndex, type NativeSpan, type NativeSpanLog, type NativeVectorIndex } from '../native.js';

export const IDENTITY_FILE = 'identity.json';
export const IDENTITY_VERSION = 2;

export interface IndexIdentity {
  /** One past the last log id the index covers. */
  highWater: number;
  /** Digest of the record at highWater − 1 (null when the index covers nothing). */
  lastDigest: string | null;
}

/** The lexical index's file: the CRC its header ends with (0: no file written). */
export interface LexicalFiles {
  file: number;
}

/** The vector index's files: records and chained record CRCs of vectors.bin, header CRC of each snapshot (0: none written). */
export interface VectorFiles {
  records: number;
  digest: number;
  raw: number;
  summary: number;
}

export interface IdentityFile {
  version: number;
  storeId: string;
  lexical: IndexIdentity & { files: LexicalFiles };
  vector: IndexIdentity & { files: VectorFiles };
}

/** The fingerprint of the lexical index's file, from its stats. */
export function lexicalFiles(lexical: NativeLexicalIndex): LexicalFiles {
  return { file: Number(lexical.stats().fileCrc ?? 0) };
}

/** The fingerprint of the vector index's files, from its stats. */
export function vectorFiles(vector: NativeVectorIndex): VectorFiles {
  const s = vector.stats();
  return {
    records: Number(s.vectorsRecords ?? 0),
    digest: Number(s.vectorsDigest ?? 0),
    raw: Number(s.snapshotCrcRaw ?? 0),
    summary: Number(s.snapshotCrcSummary ?? 0),
  };
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
    if (raw.version !== IDENTITY_VERSION || typeof raw.storeId !== 'string' || !raw.lexical?.files || !raw.vector?.files) return null;
    return raw as IdentityFile;
  } catch {
    return null;
  }
}

/**
 * Writes the identity crash-safely (a temporary file, fsynced, renamed over the old one). The
 * file operations run on the thread pool (fs.promises): an fsync on a busy disk is tens of ms.
 */
export async function writeIdentity(indexDir: string, id: IdentityFile): Promise<void> {
  const file = path.join(indexDir, IDENTITY_FILE);
  const tmp = `${file}.tmp`;
  const fh = await fs.promises.open(tmp, 'w', 0o600);
  try {
    await fh.writeFile(JSON.stringify(id));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fs.promises.rename(tmp, file);
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
 * The vector index's high water for the identity checks. The index reopens at one past its
 * last vector's id: the records after it that it had already passed (events, texts with
 * nothing to embed) are not in vectors.bin. When vectors.bin is the very file the identity
 * names (same records, same digest) and the identity is this store's, the identity's high
 * water is what the index had reached.
 */
export function vectorHighWater(vector: NativeVectorIndex, storeId: string | null, id: IdentityFile | null): number {
  const hw = vector.highWater();
  if (id === null || (storeId !== null && id.storeId !== storeId) || id.vector.highWater <= hw) return hw;
  const files = vectorFiles(vector);
  return files.records === id.vector.files.records && files.digest === id.vector.files.digest ? id.vector.highWater : hw;
}

/** Whether the identity names this index at this high water, for this store (its files are checked apart). */
export function identityVouches(name: 'lexical' | 'vector', indexHighWater: number, storeId: string | null, id: IdentityFile): boolean {
  return (storeId === null || id.storeId === storeId) && id[name].highWater === indexHighWater;
}

const hex = (n: number) => n.toString(16).padStart(8, '0');

/** One reason an index cannot be trusted as loaded; `rebuild`: the index must be rebuilt from the log. */
export interface DerivedProblem {
  reason: string;
  rebuild: boolean;
}

/**
 * What the open found wrong with the lexical index's file: rejected by its own checks
 * (header, body CRC, structure: the index then starts empty), missing while the identity
 * says it covered records, or a file whose content is not the one the identity names.
 * Identity mismatches (identityMismatch) are checked beside this.
 */
export function lexicalFileProblems(lexical: NativeLexicalIndex, log: NativeSpanLog, storeId: string | null, id: IdentityFile | null): DerivedProblem[] {
  const s = lexical.stats();
  const out: DerivedProblem[] = [];
  const loadError = String(s.loadError ?? '');
  const expected = id !== null && (storeId === null || id.storeId === storeId) && id.lexical.highWater > log.firstId();
  if (s.loadedFrom !== 'file' && loadError !== '' && loadError !== 'missing') out.push({ reason: `lexical.idx rejected: ${loadError}`, rebuild: true });
  else if (loadError === 'missing' && expected)
    out.push({ reason: `lexical.idx is missing; its identity says the index covered ids up to ${id.lexical.highWater - 1}`, rebuild: true });
  else if (s.loadedFrom === 'file' && expected && lexicalFiles(lexical).file !== id.lexical.files.file)
    out.push({ reason: `lexical.idx is not the file its identity names (content CRC ${hex(lexicalFiles(lexical).file)}, identity says ${hex(id.lexical.files.file)})`, rebuild: true });
  return out;
}

/**
 * What the open found wrong with the vector index's files. `openError`: vectors.bin was
 * rejected outright (its header failed its check) and the index started empty. A damaged
 * record in vectors.bin (the file was cut there) or a vectors.bin whose content is not the
 * one the identity names means a rebuild from the log. A snapshot (index.<kind>.flat)
 * rejected by its own checks was rebuilt from vectors.bin by the engine: recorded, no
 * re-embedding; a snapshot that passed its checks but is not the one the identity names (a
 * file of the same shape from elsewhere) means a rebuild.
 */
export function vectorFileProblems(vector: NativeVectorIndex, storeId: string | null, id: IdentityFile | null, openError: string | null): DerivedProblem[] {
  const out: DerivedProblem[] = [];
  if (openError !== null) out.push({ reason: `vectors.bin rejected: ${openError}`, rebuild: true });
  const s = vector.stats();
  if (s.vectorsRecovery !== 'clean')
    out.push({ reason: `vectors.bin: ${String(s.vectorsRecovery)} record at offset ${String(s.vectorsRecoveryOffset)}, ${String(s.vectorsDroppedBytes)} byte(s) dropped`, rebuild: true });
  const mine = id !== null && (storeId === null || id.storeId === storeId) ? id.vector.files : null;
  const files = vectorFiles(vector);
  if (mine !== null && openError === null && s.vectorsRecovery === 'clean' && (files.records !== mine.records || files.digest !== mine.digest))
    out.push({
      reason:
        files.records === 0
          ? `vectors.bin is missing or empty; its identity says it held ${mine.records} record(s)`
          : `vectors.bin is not the file its identity names (${files.records} records, digest ${hex(files.digest)}; identity says ${mine.records}, ${hex(mine.digest)})`,
      rebuild: true,
    });
  for (const [ns, key] of [['Raw', 'raw'], ['Summary', 'summary']] as const) {
    const file = `index.${key}.flat`;
    const problem = String(s[`snapshotProblem${ns}`] ?? '');
    const expectedCrc = mine?.[key] ?? 0;
    if (s[`loadedFrom${ns}`] === 'file') {
      if (mine !== null && files[key] !== expectedCrc)
        out.push({ reason: `${file} is not the file its identity names (content CRC ${hex(files[key])}, identity says ${hex(expectedCrc)})`, rebuild: true });
    } else if (problem !== '' && (problem !== 'missing' || expectedCrc !== 0)) {
      out.push({ reason: `${file} rejected: ${problem}; rebuilt from vectors.bin`, rebuild: false });
    }
  }
  return out;
}

/**
 * The one agreement check between the log and the indexes, id by id (not counts): every raw
 * and summary id of the log is in the lexical index and nothing else is; every one of them
 * with features has a vector and nothing else does. A text without features (empty, or only
 * punctuation: "........") embeds to zero under the built-in embedder and has no direction to
 * find it by, so the vector index leaves it out; `embedder` is that embedder (null for a host
 * model, whose vectors the check cannot recompute: then any text counts). Returns the
 * disagreements, empty when they agree. `verify` and `repair` both call it.
 */
export async function indexAgreement(
  log: NativeSpanLog,
  lexical: NativeLexicalIndex,
  vector: NativeVectorIndex,
  embedder: NativeEmbedder | null,
  slicer = new ScanSlicer(),
): Promise<string[]> {
  const out: string[] = [];
  // The log's raw and summary ids, read in slices that let the event loop run (every record
  // of the log is read: seconds at 10^6 spans in one call), kept as typed chunks.
  const chunks: Record<number, Float64Array[]> = { [RecordKind.raw]: [], [RecordKind.summary]: [] };
  const end = log.nextId();
  await slicer.run(log.firstId(), end, (at, count) => {
    for (const kind of [RecordKind.raw, RecordKind.summary]) {
      const ids = log.scanIds(at, count, 1 << kind, 0);
      if (ids.length > 0) chunks[kind]!.push(ids);
    }
  });
  for (const [name, kind] of [['raw', RecordKind.raw], ['summary', RecordKind.summary]] as const) {
    // The indexes' ids are read on the thread pool (at 10^6 spans the vector index's walk
    // over duplicates and its sort take tens of ms).
    const [lexIds, vecIds] = await Promise.all([lexical.idsAsync(kind), vector.idsAsync(kind)]);
    // Ids appended while the slices ran ([end, the log's next id now)) are not compared; an
    // index id past the log's end still is (the log lost what the index saw).
    const now = log.nextId();
    const skip = (id: number) => id >= end && id < now;
    // Each index is compared over the ids it says it covers (below its high water): a
    // reader's vector index stays where the writer last saved it.
    const inLog = await concat(chunks[kind]!, slicer);
    const below = (hw: number) => inLog.subarray(0, upperBound(inLog, hw));
    const lex = await diffIds(below(lexical.highWater()), lexIds, skip, slicer);
    if (lex.missing.length > 0) out.push(`lexical index lacks ${lex.missing.length} ${name} span(s) of the log (first ${lex.missing.slice(0, 5).join(', ')})`);
    if (lex.extra.length > 0) out.push(`lexical index holds ${lex.extra.length} ${name} id(s) the log does not (first ${lex.extra.slice(0, 5).join(', ')})`);
    const vec = await diffIds(below(vector.highWater()), vecIds, skip, slicer);
    const missing = vec.missing.length > 0 ? withFeatures(embedder, log.getMany(Float64Array.from(vec.missing))) : [];
    if (missing.length > 0) out.push(`vector index lacks ${missing.length} ${name} span(s) of the log with text (first ${missing.slice(0, 5).map((r) => r?.id).join(', ')})`);
    if (vec.extra.length > 0) out.push(`vector index holds ${vec.extra.length} ${name} id(s) the log does not (first ${vec.extra.slice(0, 5).join(', ')})`);
  }
  return out;
}

/**
 * The chunks end to end, in one array. A pause is offered to `slicer` between chunks: at
 * 10^6 spans the array is 8 MB of fresh pages, faulted in and zeroed as the copy reaches
 * them, which on a busy machine is tens of ms when taken in one stretch.
 */
async function concat(chunks: readonly Float64Array[], slicer: ScanSlicer): Promise<Float64Array> {
  const out = new Float64Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
    await slicer.pause();
  }
  return out;
}

/**
 * The spans the vector index should hold: unreadable ones (reported as missing) and those
 * whose text embeds to a non-zero vector, all embedded in one call (every text counts when
 * the model is the host's, which the check cannot recompute).
 */
function withFeatures(embedder: NativeEmbedder | null, spans: (NativeSpan | undefined)[]): (NativeSpan | undefined)[] {
  const texted = spans.filter((r) => !r || r.text.length > 0);
  if (embedder === null) return texted;
  const readable = texted.filter((r): r is NativeSpan => r !== undefined);
  const v = readable.length > 0 ? embedder.embed(readable.map((r) => r.text)) : new Float32Array(0);
  const zero = new Set<NativeSpan>();
  readable.forEach((r, i) => {
    if (v.subarray(i * embedder.dims, (i + 1) * embedder.dims).every((x) => x === 0)) zero.add(r);
  });
  return texted.filter((r) => !r || !zero.has(r));
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

/**
 * Ids the agreement check compares between two offers of a pause (the slicer lets the loop
 * run only once SLICE_MS of work has gone by, so an offer is cheap). Small: the comparison
 * runs in V8's lower tiers when the check is rare (a repair, a verify), where 2^16 steps
 * were over 10 ms on a busy machine.
 */
export const DIFF_SLICE = 1 << 12;

/**
 * @internal Ids of `want` not in `have`, and of `have` not in `want`; both ascending; ids of `have`
 * that `skip` says were appended meanwhile are left out. A pause is offered to `slicer`
 * every DIFF_SLICE steps (10^6 ids are tens of ms of comparisons).
 */
export async function diffIds(want: ArrayLike<number>, have: ArrayLike<number>, skip: (id: number) => boolean, slicer: ScanSlicer): Promise<{ missing: number[]; extra: number[] }> {
  const missing: number[] = [];
  const extra: number[] = [];
  let i = 0;
  let j = 0;
  let steps = 0;
  while (i < want.length || j < have.length) {
    if (++steps === DIFF_SLICE) {
      steps = 0;
      await slicer.pause();
    }
    if (j < have.length && skip(have[j]!)) j++;
    else if (j >= have.length || (i < want.length && want[i]! < have[j]!)) missing.push(want[i++]!);
    else if (i >= want.length || have[j]! < want[i]!) extra.push(have[j++]!);
    else (i++, j++);
  }
  return { missing, extra };
}
