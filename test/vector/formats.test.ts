// The compact vectors file (version 2: f16 unit vectors), the version-3 `.flat` snapshot that
// holds no rows, and the older formats still loading (docs/VECTOR_FORMAT.md).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { crc32c } from '../../src/replica/crc32c.js';
import { bruteTopK, clustered, nearQueries, openIndex, rng, row, seq, snapshotFile, tmpDir } from './helpers.js';

const RAW = 1;
const SUMMARY = 2;
const HEADER = 32;
const FIXTURE = path.resolve(import.meta.dirname, '..', 'fixtures', 'vector-v1');

/** Vectors of uneven norms (a host embedder need not normalize). */
function uneven(n: number, dims: number, seed: number): Float32Array {
  const m = clustered(n, dims, 8, seed);
  const r = rng(seed + 1);
  for (let i = 0; i < n; i++) {
    const scale = 0.2 + 5 * r();
    for (let d = 0; d < dims; d++) m[i * dims + d]! *= scale;
  }
  return m;
}

/** Rewrites a vectors.bin header field and its CRC, as a forger would. */
function forgeHeader(file: string, edit: (h: Buffer) => void): void {
  const b = fs.readFileSync(file);
  const h = b.subarray(0, HEADER);
  edit(h);
  h.writeUInt32LE(crc32c(h.subarray(0, 28)), 28);
  fs.writeFileSync(file, b);
}

describe('vectors.bin version 2: the unit vector, f16 (20 + 2·dims bytes a record) unless the index is f32', () => {
  it('a new file of an f16 or i8 index is version 2 with stored scalar f16, each record 20 + 2·dims bytes', () => {
    const dims = 24;
    const dir = tmpDir('fmt-v2');
    const ix = openIndex(dir, { dims, ann: 'binary', scalar: 'f16' });
    ix.add(seq(50), new Uint8Array(50).fill(RAW), uneven(50, dims, 3));
    const b = fs.readFileSync(path.join(dir, 'vectors.bin'));
    expect(b.readUInt32LE(8)).toBe(2);
    expect(b[16]).toBe(2);
    expect(b.length).toBe(HEADER + 50 * (20 + 2 * dims));
    expect(ix.stats()).toMatchObject({ vectorsVersion: 2, vectorsRecordBytes: 20 + 2 * dims, vectorsBytes: b.length });
    ix.close();
    // An i8 index keeps f16 too; opened later as f32 it rebuilds from the same f16 file.
    const dir8 = tmpDir('fmt-v2-i8');
    const i8 = openIndex(dir8, { dims, ann: 'binary', scalar: 'i8' });
    i8.add(seq(5), new Uint8Array(5).fill(RAW), uneven(5, dims, 4));
    expect(i8.stats()).toMatchObject({ vectorsRecordBytes: 20 + 2 * dims });
    i8.close();
  });

  it('a new file of an f32 index stores f32 unit vectors (stored scalar 1, 20 + 4·dims bytes a record)', () => {
    const dims = 24;
    const dir = tmpDir('fmt-v2-f32');
    const ix = openIndex(dir, { dims, ann: 'binary', scalar: 'f32' });
    ix.add(seq(30), new Uint8Array(30).fill(RAW), uneven(30, dims, 3));
    const b = fs.readFileSync(path.join(dir, 'vectors.bin'));
    expect([b.readUInt32LE(8), b[16]]).toEqual([2, 1]);
    expect(b.length).toBe(HEADER + 30 * (20 + 4 * dims));
    // Each record holds the unit vector.
    for (let i = 0; i < 30; i++) {
      let norm = 0;
      for (let d = 0; d < dims; d++) norm += b.readFloatLE(HEADER + i * (20 + 4 * dims) + 16 + 4 * d) ** 2;
      expect(Math.abs(Math.sqrt(norm) - 1)).toBeLessThan(1e-6);
    }
    ix.close();
  });

  it('f16 records: distances within f16 rounding of the f32 ones, the exact top-10 the f32 one', () => {
    const dims = 64;
    const dir = tmpDir('fmt-f16-error');
    const m = clustered(2000, dims, 20, 5);
    const ids = seq(2000);
    const ix = openIndex(dir, { dims, scalar: 'f16', ann: 'binary' });
    ix.add(ids, new Uint8Array(2000).fill(RAW), m);
    const queries = nearQueries(m, dims, 100, 0.3, 9);
    let hits = 0;
    for (let q = 0; q < 100; q++) {
      const qv = row(queries, q, dims);
      const got = ix.search(qv, 10, RAW, 'exact');
      const truth = new Set(bruteTopK(m, ids, qv, 10));
      for (let j = 0; j < got.ids.length; j++) {
        hits += truth.has(got.ids[j]!) ? 1 : 0;
        // 1 − dot over f32: the stored row is the unit vector to 2^-11 relative per coordinate.
        let dot = 0;
        for (let d = 0; d < dims; d++) dot += qv[d]! * m[got.ids[j]! * dims + d]!;
        expect(Math.abs(got.distances[j]! - (1 - dot))).toBeLessThan(2e-3);
      }
    }
    expect(hits / 1000).toBeGreaterThanOrEqual(0.99);
    ix.close();
  });
});

describe('the index built on add is the index rebuilt from vectors.bin', () => {
  it.each(['f32', 'f16', 'i8'] as const)('%s: same ids and the same distances after a rebuild from the file', (scalar) => {
    const dims = 32;
    const dir = tmpDir(`fmt-live-${scalar}`);
    const m = uneven(600, dims, 11);
    const kinds = Uint8Array.from({ length: 600 }, (_, i) => (i % 5 === 4 ? SUMMARY : RAW));
    const ix = openIndex(dir, { dims, scalar, ann: 'binary', exactBelow: 0, rerankMin: 64 });
    ix.add(seq(600), kinds, m);
    const queries = nearQueries(m, dims, 60, 0.2, 4);
    const ask = (x: typeof ix) =>
      Array.from({ length: 60 }, (_, q) => {
        const r = x.search(row(queries, q, dims), 10, q % 2 ? SUMMARY : RAW);
        return { ids: Array.from(r.ids), distances: Array.from(r.distances) };
      });
    const live = ask(ix);
    ix.close(); // never saved: the reopen rebuilds both namespaces from vectors.bin
    const again = openIndex(dir, { dims, scalar, ann: 'binary', exactBelow: 0, rerankMin: 64 });
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'rebuilt', loadedFromSummary: 'rebuilt' });
    expect(ask(again)).toEqual(live);
    again.close();
  });
});

describe('the version-3 .flat snapshot holds no rows: they are read back from vectors.bin', () => {
  it('the snapshot is ordinals + signatures (no rows), and reopening answers as before', () => {
    const dims = 64;
    const dir = tmpDir('fmt-v3');
    const m = clustered(800, dims, 10, 21);
    const ix = openIndex(dir, { dims, scalar: 'f16', ann: 'binary', rerankMin: 64 });
    ix.add(seq(800), new Uint8Array(800).fill(RAW), m);
    ix.save();
    const before = Array.from({ length: 40 }, (_, q) => Array.from(ix.search(row(m, q * 20, dims), 10, RAW).distances));
    ix.close();
    const snap = fs.readFileSync(snapshotFile(dir, 'binary'));
    expect(snap.readUInt32LE(8)).toBe(3);
    // Index part: 800 ordinals (u32), the 24-byte partition header, 100 signature blocks of 8 × 64 bytes.
    expect(Number(snap.readBigUInt64LE(48))).toBe(800 * 4 + 24 + 100 * 512);
    const again = openIndex(dir, { dims, scalar: 'f16', ann: 'binary', rerankMin: 64 });
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'file', countRaw: 800 });
    expect(Array.from({ length: 40 }, (_, q) => Array.from(again.search(row(m, q * 20, dims), 10, RAW).distances))).toEqual(before);
    again.close();
  });

  it('signatures are split on load and joined on save: a reopened index writes back the bytes it loaded', () => {
    const dims = 64; // 512-bit signatures: 8 words, so a block of 8 rows is 512 bytes
    const dir = tmpDir('fmt-v3-split');
    const n = 803; // the last block holds 3 rows and 5 zero lanes
    const m = clustered(n + 5, dims, 10, 5);
    const opts = { dims, scalar: 'f16' as const, ann: 'binary' as const, exactBelow: 0 };
    const ix = openIndex(dir, opts);
    ix.add(seq(n), new Uint8Array(n).fill(RAW), m.subarray(0, n * dims));
    ix.save();
    ix.close();
    const signatures = (b: Buffer, rows: number) => b.subarray(64 + rows * 4 + 24, 64 + rows * 4 + 24 + Math.ceil(rows / 8) * 512);
    const first = signatures(fs.readFileSync(snapshotFile(dir, 'binary')), n);
    expect(first.length).toBe(101 * 512);
    for (let w = 0; w < 8; w++) expect(first.subarray(100 * 512 + w * 64 + 3 * 8, 100 * 512 + w * 64 + 64).every((x) => x === 0)).toBe(true);
    const again = openIndex(dir, opts);
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'file' });
    again.add(seq(5, n), new Uint8Array(5).fill(RAW), m.subarray(n * dims));
    again.save();
    again.close();
    const second = signatures(fs.readFileSync(snapshotFile(dir, 'binary')), n + 5);
    expect(second.subarray(0, 100 * 512).equals(first.subarray(0, 100 * 512))).toBe(true);
    // The last block: the first three lanes of every word as before, the new rows after them.
    for (let w = 0; w < 8; w++) {
      const at = 100 * 512 + w * 64;
      expect(second.subarray(at, at + 24).equals(first.subarray(at, at + 24))).toBe(true);
      expect(second.subarray(at + 24, at + 64).some((x) => x !== 0)).toBe(true);
    }
  });

  it('a snapshot naming rows the vectors file does not hold is not trusted: rebuilt', () => {
    const dims = 16;
    const dir = tmpDir('fmt-v3-ordinals');
    const m = clustered(300, dims, 6, 2);
    const ix = openIndex(dir, { dims, ann: 'binary' });
    ix.add(seq(300), new Uint8Array(300).fill(RAW), m);
    ix.save();
    ix.close();
    // Forge the last ordinal past the vectors held, payload and header CRCs fixed up.
    const file = snapshotFile(dir, 'binary');
    const b = fs.readFileSync(file);
    b.writeUInt32LE(300, 64 + 299 * 4);
    b.writeUInt32LE(crc32c(b.subarray(64)), 20);
    b.writeUInt32LE(crc32c(b.subarray(0, 60)), 60);
    fs.writeFileSync(file, b);
    const again = openIndex(dir, { dims, ann: 'binary' });
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'rebuilt', countRaw: 300 });
    expect(String(again.stats().snapshotProblemRaw)).toMatch(/ordinals/);
    expect(again.search(row(m, 7, dims), 1, RAW).ids[0]).toBe(7);
    again.close();
  });
});

describe('an older directory (vectors.bin version 1, .flat version 2) still loads', () => {
  const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'answers.json'), 'utf8')) as {
    dims: number;
    seed: number;
    clusters: number;
    n: number;
    answers: { q: number; raw: number[]; summary: number[] }[];
  };
  const { dims } = fixture;
  const m = clustered(fixture.n, dims, fixture.clusters, fixture.seed);
  const copy = () => {
    const dir = tmpDir('fmt-old');
    for (const f of fs.readdirSync(FIXTURE)) fs.copyFileSync(path.join(FIXTURE, f), path.join(dir, f));
    return dir;
  };
  const opts = { dims, scalar: 'f32' as const, ann: 'binary' as const, exactBelow: 0 };

  it('loads from its snapshots and answers as the engine that wrote it did', () => {
    const dir = copy();
    const ix = openIndex(dir, opts);
    expect(ix.stats()).toMatchObject({
      loadedFromRaw: 'file',
      loadedFromSummary: 'file',
      vectorsVersion: 1,
      vectorsRecordBytes: 20 + 4 * dims,
      countRaw: 300,
      countSummary: 100,
    });
    for (const a of fixture.answers) {
      expect(Array.from(ix.search(row(m, a.q, dims), 10, RAW).ids)).toEqual(a.raw);
      expect(Array.from(ix.search(row(m, a.q, dims), 10, SUMMARY).ids)).toEqual(a.summary);
    }
    ix.close();
  });

  it('is appended to in the version-1 layout, and its next save writes version 3 that loads again', () => {
    const dir = copy();
    const file = path.join(dir, 'vectors.bin');
    const size0 = fs.statSync(file).size;
    const ix = openIndex(dir, opts);
    const more = clustered(20, dims, 3, 99);
    ix.add(seq(20, 1000), new Uint8Array(20).fill(RAW), more);
    expect(fs.statSync(file).size).toBe(size0 + 20 * (20 + 4 * dims));
    ix.save();
    ix.close();
    expect(fs.readFileSync(snapshotFile(dir, 'binary')).readUInt32LE(8)).toBe(3);
    const again = openIndex(dir, opts);
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'file', loadedFromSummary: 'file', vectorsVersion: 1, countRaw: 320 });
    for (const a of fixture.answers) expect(Array.from(again.search(row(m, a.q, dims), 10, SUMMARY).ids)).toEqual(a.summary);
    expect(again.search(row(more, 5, dims), 1, RAW).ids[0]).toBe(1005);
    again.close();
  });
});

describe('a vectors.bin header of an unknown version or stored scalar is CORRUPT', () => {
  const make = () => {
    const dir = tmpDir('fmt-forged');
    const ix = openIndex(dir, { dims: 8, ann: 'binary' });
    ix.add(seq(4), new Uint8Array(4).fill(RAW), clustered(4, 8, 2, 1));
    ix.close();
    return dir;
  };
  it.each([
    ['version 3', (h: Buffer) => h.writeUInt32LE(3, 8)],
    ['version 2 with stored scalar 3', (h: Buffer) => (h[16] = 3)],
    ['version 1 with a stored scalar', (h: Buffer) => (h.writeUInt32LE(1, 8), (h[16] = 2))],
  ])('%s (its CRC valid): CORRUPT, the file left as it was', (_name, edit) => {
    const dir = make();
    const file = path.join(dir, 'vectors.bin');
    forgeHeader(file, edit);
    const bytes = fs.readFileSync(file);
    expect(() => openIndex(dir, { dims: 8, ann: 'binary' })).toThrow(expect.objectContaining({ code: 'CORRUPT' }));
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
  });
});
