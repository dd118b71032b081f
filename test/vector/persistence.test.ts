import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { clustered, openIndex as openIndexBase, row, seq, snapshotFile, tmpDir, type Ann, type Scalar } from './helpers.js';

const RAW = 1;
const SUMMARY = 2;
const dims = 32;
const HEADER = 32; // vectors.bin header
const RECORD = 20 + 2 * dims; // vectors.bin of an f16 index: f16 unit vectors

// Every case runs for both strategies above exactBelow: their snapshots differ (a usearch
// graph, or rows + signatures), the trust rules and the recovery do not.
describe.each<Ann>(['hnsw', 'binary'])('ann %s', (ann) => {
const openIndex = (dir: string, o: Parameters<typeof openIndexBase>[1]) => openIndexBase(dir, { ann, ...o });
const snap = (dir: string, kind: 'raw' | 'summary' = 'raw') => snapshotFile(dir, ann, kind);

/** A saved store: 300 raw + 100 summary vectors, the ANN path (exactBelow 0). */
function build(scalar: Scalar = 'f16') {
  const dir = tmpDir('persist');
  const m = clustered(400, dims, 12, 31);
  const kinds = Uint8Array.from({ length: 400 }, (_, i) => (i % 4 === 3 ? SUMMARY : RAW));
  const ix = openIndex(dir, { dims, scalar, exactBelow: 0 });
  ix.add(seq(400), kinds, m);
  ix.save();
  // Answers before any damage, taken now: the index is closed before every reopen.
  const answers = Array.from({ length: 400 }, (_, q) => ({
    raw: Array.from(ix.search(row(m, q, dims), 10, RAW).ids),
    summary: Array.from(ix.search(row(m, q, dims), 10, SUMMARY).ids),
    exact: Array.from(ix.search(row(m, q, dims), 10, RAW, 'exact').ids),
  }));
  const expected = (q: number, kind = RAW) => (kind === RAW ? answers[q]!.raw : answers[q]!.summary);
  const exactOf = (q: number) => answers[q]!.exact;
  return { dir, m, kinds, ix, expected, exactOf, scalar };
}

function flipByte(file: string, offset: number) {
  const fd = fs.openSync(file, 'r+');
  const b = Buffer.alloc(1);
  fs.readSync(fd, b, 0, 1, offset);
  b[0] = b[0]! ^ 0x10;
  fs.writeSync(fd, b, 0, 1, offset);
  fs.closeSync(fd);
}

describe('persistence: save and reopen round-trips', () => {
  it.each<Scalar>(['f32', 'f16', 'i8'])('%s: loaded from the snapshot, same answers, same high-water', (scalar) => {
    const { dir, m, ix, expected } = build(scalar);
    ix.close();
    const again = openIndex(dir, { dims, scalar, exactBelow: 0 });
    const s = again.stats();
    expect(s).toMatchObject({ loadedFrom: 'file', loadedFromRaw: 'file', loadedFromSummary: 'file', countRaw: 300, countSummary: 100 });
    expect(again.highWater()).toBe(400);
    for (let q = 0; q < 400; q += 13) {
      expect(Array.from(again.search(row(m, q, dims), 10, RAW).ids)).toEqual(expected(q));
      expect(Array.from(again.search(row(m, q, dims), 10, SUMMARY).ids)).toEqual(expected(q, SUMMARY));
    }
    // No temp files left behind.
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('vectors added after the last save are caught up from the vectors file on open', () => {
    const { dir, ix } = build();
    const more = clustered(50, dims, 3, 77);
    ix.add(seq(50, 1000), new Uint8Array(50).fill(RAW), more);
    ix.close(); // no save: the snapshot is stale, the vectors file is not
    const again = openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 });
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'file', countRaw: 350 });
    expect(again.highWater()).toBe(1050);
    expect(again.search(row(more, 17, dims), 1, RAW).ids[0]).toBe(1017);
  });

  it('a different scalar kind rebuilds from the vectors file, no embedder needed', () => {
    const { dir, m, ix } = build('f16');
    ix.close();
    const again = openIndex(dir, { dims, scalar: 'f32', exactBelow: 0 });
    expect(again.stats()).toMatchObject({ loadedFrom: 'rebuilt', countRaw: 300, scalar: 'f32' });
    expect(again.search(row(m, 8, dims), 1, RAW).ids[0]).toBe(8);
  });
});

describe('persistence: a missing, stale or corrupt snapshot is rebuilt, never trusted', () => {
  const cases: [string, (dir: string) => void][] = [
    ['missing', (dir) => fs.rmSync(snap(dir))],
    ['truncated', (dir) => fs.truncateSync(snap(dir), fs.statSync(snap(dir)).size - 100)],
    ['header bit flip', (dir) => flipByte(snap(dir), 30)],
    ['payload bit flip', (dir) => flipByte(snap(dir), 64 + 1000)],
    ['last byte flipped', (dir) => flipByte(snap(dir), fs.statSync(snap(dir)).size - 1)],
    ['empty file', (dir) => fs.writeFileSync(snap(dir), '')],
    ['garbage', (dir) => fs.writeFileSync(snap(dir), Buffer.alloc(5000, 0xab))],
    ['swapped namespaces', (dir) => fs.copyFileSync(snap(dir, 'summary'), snap(dir))],
  ];
  it.each(cases)('%s', (_name, damage) => {
    const { dir, m, ix, exactOf } = build();
    ix.close();
    damage(dir);
    const again = openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 });
    const s = again.stats();
    expect(s.loadedFromRaw).toBe('rebuilt');
    expect(s.loadedFromSummary).toBe('file');
    expect(s.snapshotProblemRaw).not.toBe('');
    expect(s.countRaw).toBe(300);
    // Exact answers do not depend on graph construction order.
    for (let q = 0; q < 400; q += 9) {
      expect(Array.from(again.search(row(m, q, dims), 10, RAW, 'exact').ids)).toEqual(exactOf(q));
      if (q % 4 !== 3) expect(again.search(row(m, q, dims), 1, RAW).ids[0]).toBe(q);
    }
    // Saving again makes the next open trust the file.
    again.save();
    again.close();
    expect(openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 }).stats().loadedFromRaw).toBe('file');
  });

  it('a snapshot covering vectors the vectors file no longer holds is rebuilt', () => {
    const { dir, m, ix } = build();
    ix.close();
    // Cut the last 10 records (ids 390..399): the snapshots now claim more than the file holds.
    fs.truncateSync(path.join(dir, 'vectors.bin'), HEADER + 390 * RECORD);
    const again = openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 });
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'rebuilt', loadedFromSummary: 'rebuilt', vectorsRecovery: 'clean' });
    expect(again.highWater()).toBe(390);
    expect(Number(again.stats().countRaw) + Number(again.stats().countSummary)).toBe(390);
    expect(Array.from(again.search(row(m, 395, dims), 10, RAW).ids)).not.toContain(395);
  });
});

describe('persistence: the vectors file recovers from a torn tail and reports corruption', () => {
  it('a partial last record is truncated silently (torn-tail) and the rest is intact', () => {
    const { dir, m, ix } = build();
    ix.close();
    const file = path.join(dir, 'vectors.bin');
    fs.truncateSync(file, HEADER + 399 * RECORD + 37);
    const again = openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 });
    const s = again.stats();
    expect(s).toMatchObject({ vectorsRecovery: 'torn-tail', vectorsRecoveryOffset: HEADER + 399 * RECORD, vectorsDroppedBytes: 37 });
    expect(fs.statSync(file).size).toBe(HEADER + 399 * RECORD);
    expect(again.highWater()).toBe(399); // id 399 can be added (or re-embedded) again
    expect(again.search(row(m, 398, dims), 1, RAW).ids[0]).toBe(398);
    again.add(seq(1, 399), new Uint8Array([SUMMARY]), row(m, 399, dims));
    expect(again.search(row(m, 399, dims), 1, SUMMARY).ids[0]).toBe(399);
  });

  it('a bad CRC on the last whole record is a torn tail', () => {
    const { dir, ix } = build();
    ix.close();
    flipByte(path.join(dir, 'vectors.bin'), HEADER + 399 * RECORD + 20);
    const s = openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 }).stats();
    expect(s).toMatchObject({ vectorsRecovery: 'torn-tail', vectorsRecoveryOffset: HEADER + 399 * RECORD });
  });

  it('a flipped bit mid-file is reported as corrupt with its offset; the valid prefix survives', () => {
    const { dir, m, ix } = build();
    ix.close();
    const file = path.join(dir, 'vectors.bin');
    flipByte(file, HEADER + 200 * RECORD + 50);
    const again = openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 });
    const s = again.stats();
    expect(s).toMatchObject({ vectorsRecovery: 'corrupt', vectorsRecoveryOffset: HEADER + 200 * RECORD, vectorsDroppedBytes: 200 * RECORD });
    expect(again.highWater()).toBe(200);
    // Both snapshots covered the dropped ids: neither is trusted.
    expect(s).toMatchObject({ loadedFromRaw: 'rebuilt', loadedFromSummary: 'rebuilt' });
    expect(again.search(row(m, 100, dims), 1, RAW).ids[0]).toBe(100);
    expect(Array.from(again.search(row(m, 300, dims), 10, RAW).ids).every((id) => id < 200)).toBe(true);
  });

  it('a corrupt header is a CORRUPT error naming the file and offset', () => {
    const { dir, ix } = build();
    ix.close();
    flipByte(path.join(dir, 'vectors.bin'), 3);
    expect(() => openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 })).toThrow(
      expect.objectContaining({ code: 'CORRUPT', message: expect.stringMatching(/\[file=.*vectors\.bin offset=0\]$/) }),
    );
  });
});

describe('persistence: a crash during save leaves the previous snapshot in force', () => {
  it('a leftover .tmp is ignored on open and replaced by the next save', () => {
    const { dir, m, ix, expected } = build();
    ix.close();
    const tmpFile = snap(dir) + '.tmp';
    fs.writeFileSync(tmpFile, Buffer.alloc(4096, 0x5a)); // a save that died before its rename
    const again = openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 });
    expect(again.stats().loadedFromRaw).toBe('file');
    expect(Array.from(again.search(row(m, 5, dims), 10, RAW).ids)).toEqual(expected(5));
    again.add(seq(1, 5000), new Uint8Array([RAW]), row(m, 5, dims));
    again.save();
    expect(fs.existsSync(tmpFile)).toBe(false);
    again.close();
    expect(openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 }).stats()).toMatchObject({ loadedFromRaw: 'file', countRaw: 301 });
  });
});

describe('persistence: one writer per vectors file', () => {
  it('a second open is LOCKED until the first is closed; a closed index throws CLOSED', () => {
    const { dir, ix } = build();
    expect(() => openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 })).toThrow(expect.objectContaining({ code: 'LOCKED' }));
    ix.close();
    ix.close(); // idempotent
    expect(() => ix.search(new Float32Array(dims), 1, RAW)).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    expect(() => ix.stats()).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    const again = openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 });
    expect(again.stats().countRaw).toBe(300);
    again.close();
  });
});

describe('read-only: a reader beside a live writer takes no lock and writes nothing', () => {
  it('opens while the writer holds the vectors file, searches what was saved, refuses writes', async () => {
    const { addon } = await import('../../src/native.js');
    const a = addon();
    const dir = tmpDir();
    const writer = new a.VectorIndex(dir, { dims: 8, scalar: 'f32', ann });
    const v = new Float32Array(16);
    v[0] = 1;
    v[9] = 1;
    writer.add(Float64Array.of(1, 2), Uint8Array.of(1, 1), v);
    writer.save();
    const before = fs.statSync(path.join(dir, 'vectors.bin')).size;
    const reader = new a.VectorIndex(dir, { dims: 8, scalar: 'f32', readOnly: true, ann });
    expect(Array.from(reader.search(v.subarray(8, 16).slice(), 1, 1).ids)).toEqual([2]);
    expect(() => reader.add(Float64Array.of(3), Uint8Array.of(1), v.subarray(0, 8).slice())).toThrow(expect.objectContaining({ code: 'READ_ONLY' }));
    expect(() => reader.save()).toThrow(expect.objectContaining({ code: 'READ_ONLY' }));
    expect(fs.statSync(path.join(dir, 'vectors.bin')).size).toBe(before);
    expect(fs.statSync(path.join(dir, 'vectors.bin')).mode & 0o777).toBe(0o600);
    reader.close();
    writer.close();
  });
});

describe('persistence: switching strategy', () => {
  it('a snapshot of the other strategy is not used: the index is rebuilt from the vectors file', () => {
    const { dir, m, ix, exactOf } = build();
    ix.close();
    const other: Ann = ann === 'hnsw' ? 'binary' : 'hnsw';
    const again = openIndexBase(dir, { dims, scalar: 'f16', exactBelow: 0, ann: other });
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'rebuilt', loadedFromSummary: 'rebuilt', ann: other, countRaw: 300, strategyRaw: other });
    for (let q = 0; q < 400; q += 9) expect(Array.from(again.search(row(m, q, dims), 10, RAW, 'exact').ids)).toEqual(exactOf(q));
    again.save();
    again.close();
    // Both snapshots now exist; each strategy trusts its own.
    expect(openIndexBase(dir, { dims, scalar: 'f16', exactBelow: 0, ann }).stats().loadedFromRaw).toBe('file');
  });

  it('a snapshot of format version 1 is rebuilt', () => {
    const { dir, ix } = build();
    ix.close();
    // Rewrite the version field and the header CRC as version 1 would have them.
    const file = snap(dir);
    const b = fs.readFileSync(file);
    b.writeUInt32LE(1, 8);
    b.writeUInt32LE(crc32c(b.subarray(0, 60)), 60);
    fs.writeFileSync(file, b);
    const s = openIndex(dir, { dims, scalar: 'f16', exactBelow: 0 }).stats();
    expect(s.loadedFromRaw).toBe('rebuilt');
    expect(s.snapshotProblemRaw).toMatch(/version 1/);
  });
});
});

/** CRC32C (Castagnoli, reflected 0x82F63B78), as docs/VECTOR_FORMAT.md specifies. */
function crc32c(buf: Uint8Array): number {
  let c = ~0 >>> 0;
  for (const x of buf) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return ~c >>> 0;
}
