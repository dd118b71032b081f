/**
 * Index snapshots in the bucket (docs/replication.md, *Index snapshots*): the derived files
 * under `index/` — `lexical.idx`, `vector/vectors.bin`, the vector snapshots and
 * `identity.json` — captured as one consistent set right after the store saved them
 * (checkpoint, close), shipped beside the log and named in the manifest with their sizes,
 * CRC32C and the log position they cover. A restore writes them next to the log; the open's
 * own identity check (src/upkeep.ts) then loads them and only catches up the records past
 * that position. The log stays the source of truth: a snapshot file that fails its CRC is not
 * written, and one the identity does not vouch for (damaged, another store's, another
 * history) is rebuilt from the log by the open, which records the rebuild.
 */
import fs from 'node:fs';
import path from 'node:path';
import { crc32 } from './crc32.js';

/** One file of a snapshot, as the manifest names it. `name`: its path under `index/`. */
export interface SnapshotFile {
  name: string;
  key: string;
  bytes: number;
  /** CRC-32 (IEEE, src/replica/crc32.ts): these files are large, and zlib computes it natively. */
  crc32: number;
}

/** The manifest's `snapshot`: index files covering every log id below `nextId`. */
export interface SnapshotEntry {
  /** One past the last log id the indexes cover (the larger of the two high waters). */
  nextId: number;
  /** `identity.json`'s text, inline (a few hundred bytes), and its CRC32C. */
  identity: string;
  identityCrc32c: number;
  files: SnapshotFile[];
}

/** A snapshot read from the index directory, not yet uploaded. */
export interface CapturedSnapshot {
  nextId: number;
  identity: string;
  files: { name: string; body: Buffer; crc32: number }[];
}

const VECTOR_HEADER = 32;
const FILE_NAME = /^(lexical\.idx|vector\/vectors\.bin|vector\/index\.(raw|summary)\.(flat|usearch))$/;

/** Whether `name` is a file a snapshot may hold (a manifest naming anything else is not followed). */
export function isSnapshotFileName(name: string): boolean {
  return FILE_NAME.test(name);
}

interface Identity {
  version: number;
  storeId: string;
  lexical: { highWater: number; files: { file: number } };
  vector: { highWater: number; files: { records: number; raw: number; summary: number } };
}

function parseIdentity(text: string): Identity | null {
  try {
    const id = JSON.parse(text) as Identity;
    if (typeof id?.storeId !== 'string' || typeof id.lexical?.highWater !== 'number' || typeof id.vector?.highWater !== 'number') return null;
    if (typeof id.lexical.files?.file !== 'number' || typeof id.vector.files?.records !== 'number') return null;
    return id;
  } catch {
    return null;
  }
}

function readOrNull(file: string): Buffer | null {
  try {
    return fs.readFileSync(file);
  } catch {
    return null;
  }
}

/** A stamp of `identity.json` that changes whenever the store writes it (temporary file and rename). */
export function identityStamp(indexDir: string): string | null {
  const st = fs.statSync(path.join(indexDir, 'identity.json'), { throwIfNoEntry: false });
  return st ? `${st.ino}:${st.size}:${st.mtimeMs}` : null;
}

/**
 * Reads the index files the identity names, as one set, or null when they do not agree with
 * it right now (a save in between, a file missing): the header CRC at offset 60 of
 * `lexical.idx` and of each vector snapshot must be the one the identity holds, and
 * `vectors.bin` is taken up to the records the identity counts (it is append-only: records
 * added after the save are left for the next snapshot). Synchronous, so no save of this
 * process interleaves.
 */
export function captureSnapshot(indexDir: string): CapturedSnapshot | null {
  const idText = readOrNull(path.join(indexDir, 'identity.json'))?.toString('utf8') ?? null;
  if (idText === null) return null;
  const id = parseIdentity(idText);
  if (id === null) return null;
  const files: CapturedSnapshot['files'] = [];
  const headerCrcIs = (b: Buffer, want: number) => b.length >= 64 && b.readUInt32LE(60) === want;
  if (id.lexical.files.file !== 0) {
    const b = readOrNull(path.join(indexDir, 'lexical.idx'));
    if (b === null || !headerCrcIs(b, id.lexical.files.file)) return null;
    files.push({ name: 'lexical.idx', body: b, crc32: 0 });
  }
  if (id.vector.files.records > 0) {
    const b = readOrNull(path.join(indexDir, 'vector', 'vectors.bin'));
    if (b === null || b.length < VECTOR_HEADER) return null;
    // Record size from the header (docs/VECTOR_FORMAT.md): 4 bytes a coordinate in version 1
    // and in version 2 with stored scalar 1 (f32), 2 bytes with stored scalar 2 (f16).
    const dims = b.readUInt32LE(12);
    const f32 = b.readUInt32LE(8) === 1 || b[16] === 1;
    const want = VECTOR_HEADER + id.vector.files.records * (20 + (f32 ? 4 : 2) * dims);
    // A span embedded as windows has several records; the identity counts records, so the
    // prefix ends exactly where the saved index ended.
    if (b.length < want) return null;
    files.push({ name: 'vector/vectors.bin', body: b.subarray(0, want), crc32: 0 });
  }
  for (const ns of ['raw', 'summary'] as const) {
    const want = id.vector.files[ns];
    if (want === 0) continue;
    let found = false;
    for (const ext of ['flat', 'usearch']) {
      const b = readOrNull(path.join(indexDir, 'vector', `index.${ns}.${ext}`));
      if (b === null) continue;
      if (ext === 'flat' && !headerCrcIs(b, want)) return null;
      files.push({ name: `vector/index.${ns}.${ext}`, body: b, crc32: 0 });
      found = true;
    }
    if (!found) return null;
  }
  // The identity again: a save that ran between the reads above would have replaced it.
  if (readOrNull(path.join(indexDir, 'identity.json'))?.toString('utf8') !== idText) return null;
  for (const f of files) f.crc32 = crc32(f.body);
  return { nextId: Math.max(id.lexical.highWater, id.vector.highWater), identity: idText, files };
}
