// The binary-signature strategy (the default above exactBelow): 512-bit SimHash signatures
// scanned by popcount with the query's 4-bit coordinates, the nearest
// `max(rerankMin, size * rerankShare)` reranked exactly.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { realTurns } from '../helpers/data.js';
import { bruteTopK, clustered, recallAt10, native, nearQueries, openIndex, row, seq, snapshotFile, tmpDir } from './helpers.js';

const RAW = 1;
const SUMMARY = 2;

const open = (dir: string, o: { dims: number; rerankMin?: number; rerankShare?: number; scalar?: 'f32' | 'f16' | 'i8' }) =>
  openIndex(dir, { exactBelow: 0, ann: 'binary', ...o });

describe('binary strategy: equals the exact scan when the pool covers the namespace', () => {
  it.each(['f32', 'f16', 'i8'] as const)('%s: same ids, same distances', (scalar) => {
    const dims = 48;
    const n = 600;
    const m = clustered(n, dims, 12, 41);
    const ix = open(tmpDir('bin-eq'), { dims, scalar, rerankMin: n });
    ix.add(seq(n, 10), new Uint8Array(n).fill(RAW), m);
    expect(ix.stats()).toMatchObject({ strategyRaw: 'binary', ann: 'binary', graphRaw: n });
    const queries = nearQueries(m, dims, 60, 0.1, 5);
    for (let q = 0; q < 60; q++) {
      const qv = row(queries, q, dims);
      const a = ix.search(qv, 10, RAW);
      const e = ix.search(qv, 10, RAW, 'exact');
      expect(Array.from(a.ids)).toEqual(Array.from(e.ids));
      expect(Array.from(a.distances)).toEqual(Array.from(e.distances));
      if (scalar === 'f32') expect(Array.from(e.ids)).toEqual(bruteTopK(m, seq(n, 10), qv, 10));
    }
  });

  it('a pool of all but one row still finds the exact top-10 (the signature drops the farthest)', () => {
    const dims = 64;
    const n = 1000;
    const m = clustered(n, dims, 20, 42);
    const ix = open(tmpDir('bin-eq2'), { dims, rerankMin: n - 1, rerankShare: 0 });
    ix.add(seq(n), new Uint8Array(n).fill(RAW), m);
    const queries = nearQueries(m, dims, 50, 0.05, 6);
    for (let q = 0; q < 50; q++) {
      const qv = row(queries, q, dims);
      expect(Array.from(ix.search(qv, 10, RAW).ids)).toEqual(Array.from(ix.search(qv, 10, RAW, 'exact').ids));
    }
  });
});

describe('binary strategy: recall@10 against brute force on mid-size sets', () => {
  it('clustered 64-dim vectors, 20,000 of them, a pool of 1/64 (313): recall >= 0.97', () => {
    const dims = 64;
    const n = 20_000;
    const m = clustered(n, dims, 50, 11);
    const ids = seq(n);
    const ix = open(tmpDir('bin-recall'), { dims, rerankMin: 1, rerankShare: 1 / 64 });
    ix.add(ids, new Uint8Array(n).fill(RAW), m);
    const queries = nearQueries(m, dims, 200, 0.05, 99);
    expect(recallAt10(ix, m, ids, queries, 200, dims, RAW)).toBeGreaterThanOrEqual(0.97);
  });

  it('built-in embedder on 6,000 real turns, quotes as queries, a pool of 256 of the 6,000: recall >= 0.95', () => {
    expect(realTurnRecall(256)).toBeGreaterThanOrEqual(0.95);
  });
});

describe('binary strategy: the scan estimates with the query itself, not its signature', () => {
  // The query's coordinates, at 4 bits, against each row's signs: the order of the pool is
  // near the exact one, so a tiny pool holds the top-10. Comparing two signatures (the
  // Hamming distance) loses the query's magnitudes and needs a pool several times larger:
  // with it, this pool of 32 (1/188 of the rows) gave 0.817, and 0.95 needed a pool of 128.
  it('built-in embedder on 6,000 real turns, quotes as queries, a pool of 32: recall >= 0.9', () => {
    expect(realTurnRecall(32)).toBeGreaterThanOrEqual(0.9);
  });
});

/** recall@10 (tie-aware) of the binary strategy with a rerank pool of `pool`, on 6,000 real turns. */
function realTurnRecall(pool: number): number {
  const turns = realTurns(6000);
  const emb = new native.Embedder(256);
  const m = emb.embed(turns.map((t) => t.text));
  const n = turns.length;
  const ids = seq(n);
  const ix = open(tmpDir('bin-real'), { dims: 256, scalar: 'f16', rerankMin: pool, rerankShare: 0 });
  ix.add(ids, new Uint8Array(n).fill(RAW), m);
  let hits = 0;
  let asked = 0;
  for (let i = 0; asked < 150 && i < n; i += 23) {
    const t = turns[i]!.text;
    if (t.length < 120) continue;
    const qv = emb.embed([t.slice(20, 20 + Math.min(160, t.length - 40))]);
    // Tie-aware, as the bench counts: a hit whose similarity reaches the 10th best's counts.
    const truth = bruteTopK(m, ids, qv, 10);
    const sim = (id: number) => {
      let s = 0;
      for (let d = 0; d < 256; d++) s += qv[d]! * m[id * 256 + d]!;
      return s;
    };
    const kth = sim(truth[9]!) - 1e-5;
    hits += Math.min(10, Array.from(ix.search(qv, 10, RAW).ids).filter((id) => sim(id) >= kth).length);
    asked++;
  }
  expect(asked).toBe(150);
  return hits / (asked * 10);
}

describe('binary strategy: deterministic, persisted, rebuilt to the same answers', () => {
  it('a snapshot reload and a rebuild from vectors.bin give identical results', () => {
    const dims = 32;
    const n = 3000;
    const m = clustered(n, dims, 30, 8);
    const kinds = Uint8Array.from({ length: n }, (_, i) => (i % 5 === 4 ? SUMMARY : RAW));
    const dir = tmpDir('bin-persist');
    const opts = { dims, scalar: 'f16' as const, rerankMin: 100, rerankShare: 0 };
    const ix = open(dir, opts);
    ix.add(seq(n), kinds, m);
    ix.save();
    const queries = nearQueries(m, dims, 40, 0.1, 12);
    const answer = (x: typeof ix) =>
      Array.from({ length: 40 }, (_, q) => [RAW, SUMMARY].map((k) => {
        const r = x.search(row(queries, q, dims), 10, k);
        return [Array.from(r.ids), Array.from(r.distances)];
      }));
    const before = answer(ix);
    ix.close();
    const loaded = open(dir, opts);
    expect(loaded.stats()).toMatchObject({ loadedFromRaw: 'file', loadedFromSummary: 'file', codeBits: 512 });
    expect(answer(loaded)).toEqual(before);
    loaded.close();
    fs.rmSync(snapshotFile(dir, 'binary'));
    fs.rmSync(snapshotFile(dir, 'binary', 'summary'));
    const rebuilt = open(dir, opts);
    expect(rebuilt.stats()).toMatchObject({ loadedFromRaw: 'rebuilt', loadedFromSummary: 'rebuilt' });
    expect(answer(rebuilt)).toEqual(before);
    rebuilt.close();
  });

  it('a snapshot with a flipped signature bit is rebuilt (CRC), not trusted', () => {
    const dims = 16;
    const m = clustered(200, dims, 4, 3);
    const dir = tmpDir('bin-flip');
    const ix = open(dir, { dims });
    ix.add(seq(200), new Uint8Array(200).fill(RAW), m);
    ix.save();
    ix.close();
    const file = snapshotFile(dir, 'binary');
    const b = fs.readFileSync(file);
    // The signatures end the index part, just before the duplicate table.
    const partEnd = 64 + Number(b.readBigUInt64LE(48));
    b[partEnd - 3]! ^= 0x01;
    fs.writeFileSync(file, b);
    const again = open(dir, { dims });
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'rebuilt', snapshotProblemRaw: expect.stringMatching(/CRC/) });
    expect(again.search(row(m, 17, dims), 1, RAW).ids[0]).toBe(17);
  });
});

describe('binary strategy: shapes and errors', () => {
  it.each([8, 48, 300, 1000])('dims %i: every vector finds itself; signature bits per vector', (dims) => {
    const n = 400;
    const m = clustered(n, dims, 10, dims);
    const ix = open(tmpDir('bin-dims'), { dims, rerankMin: 40, rerankShare: 0 });
    ix.add(seq(n), new Uint8Array(n).fill(RAW), m);
    // At least 512 bits: rotations of the next power of two (>= 64) repeat until they give 512.
    expect(ix.stats().codeBits).toBe(Math.max(512, 2 ** Math.ceil(Math.log2(Math.max(64, dims)))));
    for (let i = 0; i < n; i += 11) expect(ix.search(row(m, i, dims), 1, RAW).ids[0]).toBe(i);
  });

  it("forcing the other strategy is INVALID_ARGUMENT; 'binary' and 'exact' are accepted", () => {
    const dims = 16;
    const bin = open(tmpDir('bin-force'), { dims });
    const hnsw = openIndex(tmpDir('hnsw-force'), { dims, ann: 'hnsw' });
    const v = clustered(20, dims, 2, 1);
    for (const ix of [bin, hnsw]) ix.add(seq(20), new Uint8Array(20).fill(RAW), v);
    const q = row(v, 3, dims);
    expect(() => bin.search(q, 5, RAW, 'hnsw')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => hnsw.search(q, 5, RAW, 'binary')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => bin.search(q, 5, RAW, 'ivf' as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(bin.search(q, 5, RAW, 'binary').ids[0]).toBe(3);
    expect(bin.search(q, 5, RAW, 'exact').ids[0]).toBe(3);
    expect(hnsw.stats()).toMatchObject({ ann: 'hnsw', codeBits: 512 });
  });

  it('k larger than the pool still returns k spans, ordered by distance', () => {
    const dims = 32;
    const n = 2000;
    const m = clustered(n, dims, 10, 77);
    const ix = open(tmpDir('bin-bigk'), { dims, rerankMin: 16, rerankShare: 0 });
    ix.add(seq(n), new Uint8Array(n).fill(RAW), m);
    const r = ix.search(row(m, 5, dims), 300, RAW);
    expect(r.ids.length).toBe(300);
    expect(new Set(r.ids).size).toBe(300);
    for (let j = 1; j < 300; j++) expect(r.distances[j]!).toBeGreaterThanOrEqual(r.distances[j - 1]!);
  });
});
