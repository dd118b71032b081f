// The binary strategy's coarse partition (an inverted file over the signatures): built at a
// checkpoint once a namespace reaches partitionAbove, probed nearest lists first, kept up on
// add, rebuilt when grown or out of balance, persisted, and checked on load
// (docs/VECTOR_FORMAT.md, "Partitions").
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { NativeVectorIndex } from '../../src/native.js';
import { crc32c } from '../../src/replica/crc32c.js';
import { clustered, native, nearQueries, rng, gaussian, row, seq, snapshotFile, tmpDir } from './helpers.js';

const RAW = 1;
const dims = 32;
const N = 6000;
/** 6,000 rows: 64 lists. */
const base = { dims, scalar: 'f16' as const, exactBelow: 0, ann: 'binary' as const, partitionAbove: 4096, rerankMin: 128 };
type Opts = Partial<typeof base> & { probeMin?: number; probeShare?: number; probeMargin?: number; probeRerank?: number; rerankShare?: number; readOnly?: boolean };

const open = (dir: string, o: Opts = {}): NativeVectorIndex => new native.VectorIndex(dir, { ...base, probeMin: 256, probeShare: 0.08, ...o });

function built(o: Opts = {}) {
  const dir = tmpDir('part');
  const m = clustered(N, dims, 40, 17);
  const ix = open(dir, o);
  ix.add(seq(N), new Uint8Array(N).fill(RAW), m);
  return { dir, m, ix };
}

/** recall@10 of the index's default search against its exact scan, over `count` queries. */
function recallVsExact(ix: NativeVectorIndex, queries: Float32Array, count: number): number {
  let hits = 0;
  for (let q = 0; q < count; q++) {
    const qv = row(queries, q, dims);
    const exact = new Set(ix.search(qv, 10, RAW, 'exact').ids);
    for (const id of ix.search(qv, 10, RAW).ids) hits += exact.has(id) ? 1 : 0;
  }
  return hits / (10 * count);
}

/** `n` vectors each a small perturbation of a row of `m` (ids from `first`). */
function near(m: Float32Array, n: number, seed: number, noise = 0.05): Float32Array {
  return nearQueries(m, dims, n, noise, seed);
}

describe('partitions: built at the checkpoint once a namespace has partitionAbove rows', () => {
  it('not below the threshold; at it, not before the save; after the save, lists over every row', () => {
    const dir = tmpDir('part-threshold');
    const m = clustered(N, dims, 40, 17);
    const ix = open(dir);
    ix.add(seq(4000), new Uint8Array(4000).fill(RAW), m.subarray(0, 4000 * dims));
    ix.save();
    expect(ix.stats()).toMatchObject({ listsRaw: 0, partitionedRowsRaw: 0 });
    ix.add(seq(N - 4000, 4000), new Uint8Array(N - 4000).fill(RAW), m.subarray(4000 * dims));
    expect(ix.stats().listsRaw).toBe(0);
    ix.save();
    expect(ix.stats()).toMatchObject({ listsRaw: 64, partitionedRowsRaw: N, countRaw: N });
    ix.close();
  });

  it('partitionAbove Infinity never partitions', () => {
    const { ix } = built({ partitionAbove: Number.POSITIVE_INFINITY });
    ix.save();
    expect(ix.stats()).toMatchObject({ listsRaw: 0, partitionAbove: Number.POSITIVE_INFINITY });
    ix.close();
  });

  it('partitionAbove below 64, probeMin 0, probeShare above 1 and probeRerank 0 are INVALID_ARGUMENT', () => {
    const dir = tmpDir('part-args');
    for (const bad of [{ partitionAbove: 10 }, { probeMin: 0 }, { probeShare: 1.5 }, { partitionAbove: 100.5 }, { probeRerank: 0 }]) {
      expect(() => open(dir, bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });
});

describe('partitions: a query scans only the nearest lists, and keeps recall@10 against the exact scan', () => {
  it('probing ~8% of the rows: recall@10 vs the exact scan ≥ 0.95', () => {
    const { m, ix } = built();
    ix.save();
    expect(ix.stats().listsRaw).toBe(64);
    expect(recallVsExact(ix, nearQueries(m, dims, 200, 0.1, 5), 200)).toBeGreaterThanOrEqual(0.95);
    ix.close();
  });

  it('probing one list: the answers come from that list only (recall falls), its own rows are still found', () => {
    const { dir, m, ix } = built();
    ix.save();
    ix.close();
    // Every probed row reranked (pool ≥ probed): what is missed was not scanned.
    const one = open(dir, { probeMin: 1, probeShare: 0, probeRerank: 1e7 });
    expect(one.stats()).toMatchObject({ loadedFromRaw: 'file', listsRaw: 64 });
    expect(recallVsExact(one, nearQueries(m, dims, 200, 0.1, 5), 200)).toBeLessThan(0.9);
    let self = 0;
    for (let i = 0; i < N; i += 30) self += one.search(row(m, i, dims), 1, RAW).ids[0] === i ? 1 : 0;
    expect(self / (N / 30)).toBeGreaterThanOrEqual(0.95);
    one.close();
    // All lists probed, every row reranked: the exact answer.
    const all = open(dir, { probeMin: 1, probeShare: 1, probeRerank: 1e7 });
    expect(recallVsExact(all, nearQueries(m, dims, 50, 0.1, 6), 50)).toBe(1);
    all.close();
  });
});

/** Mean lists and rows a partitioned index probed per query over `count` queries of `queries`. */
function probedPerQuery(ix: NativeVectorIndex, queries: Float32Array, count: number): { lists: number; rows: number } {
  const before = ix.stats();
  for (let q = 0; q < count; q++) ix.search(row(queries, q, dims), 10, RAW);
  const after = ix.stats();
  const n = Number(after.probedQueries) - Number(before.probedQueries);
  expect(n).toBe(count);
  return { lists: (Number(after.probedLists) - Number(before.probedLists)) / n, rows: (Number(after.probedRows) - Number(before.probedRows)) / n };
}

/** `count` unit vectors in directions drawn uniformly: near no cluster in particular. */
function spreadQueries(count: number, seed: number): Float32Array {
  const g = gaussian(rng(seed));
  const out = new Float32Array(count * dims);
  for (let q = 0; q < count; q++) {
    let norm = 0;
    for (let d = 0; d < dims; d++) norm += (out[q * dims + d] = g()) ** 2;
    for (let d = 0; d < dims; d++) out[q * dims + d]! /= Math.sqrt(norm);
  }
  return out;
}

describe('partitions: lists past the nearest are probed only within probeMargin of it, up to the cap', () => {
  it('probeMargin 0 with a cap of every row: one list a query, the answers of probing one list', () => {
    const { dir, m, ix } = built();
    ix.save();
    ix.close();
    const qs = nearQueries(m, dims, 100, 0.1, 7);
    const margin0 = open(dir, { probeMin: 1, probeShare: 1, probeMargin: 0, probeRerank: 1e7, readOnly: true });
    const one = open(dir, { probeMin: 1, probeShare: 0, probeRerank: 1e7, readOnly: true });
    expect(margin0.stats()).toMatchObject({ listsRaw: 64, probeMargin: 0 });
    expect(probedPerQuery(margin0, qs, 100).lists).toBe(1);
    expect(differing(margin0, one, qs, 100)).toBe(0);
    margin0.close();
    one.close();
  });

  it('a query inside a cluster probes few lists, one between clusters more, both under the cap', () => {
    const { dir, m, ix } = built();
    ix.save();
    ix.close();
    const ranged = open(dir, { probeMin: 1, probeShare: 1, probeMargin: 0.15, readOnly: true });
    const inside = probedPerQuery(ranged, nearQueries(m, dims, 100, 0.1, 8), 100);
    const spread = probedPerQuery(ranged, spreadQueries(100, 9), 100);
    expect(inside.lists).toBeLessThan(16); // of 64
    expect(spread.lists).toBeGreaterThan(1.5 * inside.lists);
    // Within the margin are the lists that hold a clustered query's neighbours.
    expect(recallVsExact(ranged, nearQueries(m, dims, 200, 0.1, 5), 200)).toBeGreaterThanOrEqual(0.95);
    ranged.close();
    // The cap still bounds what a wide margin takes.
    const capped = open(dir, { probeMin: 1, probeShare: 0.05, probeMargin: 0.15, readOnly: true });
    expect(probedPerQuery(capped, spreadQueries(100, 9), 100).rows).toBeLessThan(0.05 * N + N / 16);
    capped.close();
  });

  it('without probeMargin the cap alone decides (every row when it is every row); a negative margin is INVALID_ARGUMENT', () => {
    const { dir, ix } = built();
    ix.save();
    ix.close();
    const all = open(dir, { probeMin: 1, probeShare: 1, readOnly: true });
    expect(all.stats().probeMargin).toBe(Number.POSITIVE_INFINITY);
    const every = probedPerQuery(all, spreadQueries(20, 10), 20);
    expect(every.rows).toBe(N); // every list that holds a row
    expect(every.lists).toBeGreaterThan(48);
    all.close();
    for (const bad of [{ probeMargin: -0.1 }, { probeMargin: Number.NaN }]) {
      expect(() => open(tmpDir('part-margin-args'), bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });
});

/** How many of the first `n` queries two indexes answer with different top-10 ids. */
function differing(a: NativeVectorIndex, b: NativeVectorIndex, queries: Float32Array, n: number): number {
  let differ = 0;
  for (let q = 0; q < n; q++) {
    const x = a.search(row(queries, q, dims), 10, RAW);
    const y = b.search(row(queries, q, dims), 10, RAW);
    differ += Array.from(x.ids).join() === Array.from(y.ids).join() ? 0 : 1;
  }
  return differ;
}

describe('partitions: the rerank pool is probeRerank rows, not a share of the namespace', () => {
  it('probeRerank covering the probed rows gives the answers of reranking every probed row, whatever rerankShare says', () => {
    const { dir, m, ix } = built();
    ix.save();
    ix.close();
    // ~8% probed (~500 rows of 6,000, whole lists). A pool of 1,000 takes them all; a share of
    // the namespace (6,000 × 0.0001, at least rerankMin 16) would be 16 of them.
    const pooled = open(dir, { rerankMin: 16, rerankShare: 0.0001, probeRerank: 1000, readOnly: true });
    const every = open(dir, { probeRerank: 1e7, rerankMin: 1e7, readOnly: true }); // every probed row, by either rule
    expect(pooled.stats()).toMatchObject({ loadedFromRaw: 'file', listsRaw: 64, probeRerank: 1000 });
    const queries = nearQueries(m, dims, 200, 0.3, 9);
    const differ = differing(pooled, every, queries, 200);
    expect(differ).toBe(0);
    pooled.close();
    every.close();
  });

  it('a small probeRerank cuts the pool even when size × rerankShare would take every probed row', () => {
    const { dir, m, ix } = built();
    ix.save();
    ix.close();
    // The unpartitioned pool rule would rerank max(16, 6,000 × 1) rows: every probed row.
    const pooled = open(dir, { rerankMin: 16, rerankShare: 1, probeRerank: 16, readOnly: true });
    const every = open(dir, { probeRerank: 1e7, rerankMin: 1e7, readOnly: true }); // every probed row, by either rule
    const queries = nearQueries(m, dims, 200, 0.3, 9);
    const differ = differing(pooled, every, queries, 200);
    expect(differ).toBeGreaterThan(0);
    pooled.close();
    every.close();
  });
});

describe('partitions: a vector added to a partitioned namespace goes to its nearest list at once', () => {
  it('new vectors are found probing one list, before any checkpoint, and after a reopen catches them up', () => {
    const { dir, m, ix } = built();
    ix.save();
    const more = near(m, 300, 77);
    ix.add(seq(300, 10_000), new Uint8Array(300).fill(RAW), more);
    expect(ix.stats()).toMatchObject({ listsRaw: 64, partitionedRowsRaw: N, countRaw: N + 300 });
    ix.close(); // not saved: the reopen adds the 300 from vectors.bin into the loaded lists
    const one = open(dir, { probeMin: 1, probeShare: 0, probeRerank: 1e7 });
    expect(one.stats()).toMatchObject({ loadedFromRaw: 'file', listsRaw: 64, partitionedRowsRaw: N, countRaw: N + 300 });
    let found = 0;
    for (let i = 0; i < 300; i++) found += one.search(row(more, i, dims), 1, RAW).ids[0] === 10_000 + i ? 1 : 0;
    expect(found / 300).toBeGreaterThanOrEqual(0.95);
    one.close();
  });
});

describe('partitions: rebuilt at the checkpoint when the namespace has doubled or a list has outgrown the rest', () => {
  it('a few more rows spread over the lists: the partition is kept', () => {
    const { m, ix } = built();
    ix.save();
    ix.add(seq(500, 10_000), new Uint8Array(500).fill(RAW), near(m, 500, 3, 0.3));
    ix.save();
    expect(ix.stats()).toMatchObject({ partitionedRowsRaw: N });
    ix.close();
  });

  it('doubled: partitioned anew over every row', () => {
    const { ix } = built();
    ix.save();
    const more = clustered(N, dims, 40, 18);
    ix.add(seq(N, 10_000), new Uint8Array(N).fill(RAW), more);
    ix.save();
    expect(ix.stats()).toMatchObject({ partitionedRowsRaw: 2 * N, listsRaw: 128 });
    ix.close();
  });

  it('one list grown past 4 × the mean (rows crowding one spot): partitioned anew', () => {
    const { m, ix } = built();
    ix.save();
    // 1,500 distinct vectors around one row: one list takes them all (mean ~ 100).
    const g = gaussian(rng(5));
    const crowd = new Float32Array(1500 * dims);
    for (let i = 0; i < 1500; i++) for (let d = 0; d < dims; d++) crowd[i * dims + d] = m[d]! + g() * 0.01;
    ix.add(seq(1500, 10_000), new Uint8Array(1500).fill(RAW), crowd);
    expect(ix.stats().partitionedRowsRaw).toBe(N);
    ix.save();
    expect(ix.stats().partitionedRowsRaw).toBe(N + 1500);
    ix.close();
  });
});

describe('partitions: persisted with the snapshot; a rebuild partitions anew', () => {
  it('reopened from the snapshot: the same lists, the same answers', () => {
    const { dir, m, ix } = built();
    ix.save();
    const queries = nearQueries(m, dims, 100, 0.1, 8);
    const ask = (x: NativeVectorIndex) => Array.from({ length: 100 }, (_, q) => Array.from(x.search(row(queries, q, dims), 10, RAW).ids));
    const before = ask(ix);
    ix.close();
    const again = open(dir);
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'file', listsRaw: 64, partitionedRowsRaw: N });
    expect(ask(again)).toEqual(before);
    again.close();
  });

  it('without a snapshot: rebuilt from vectors.bin and partitioned by the open', () => {
    const { dir, m, ix } = built();
    ix.close();
    const again = open(dir);
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'rebuilt', listsRaw: 64, partitionedRowsRaw: N });
    expect(recallVsExact(again, nearQueries(m, dims, 100, 0.1, 5), 100)).toBeGreaterThanOrEqual(0.95);
    again.close();
  });
});

describe('partitions: a forged or damaged partition section is not trusted; the namespace is rebuilt', () => {
  /** Offsets in a version-3 snapshot of N rows and 64 lists. */
  const layout = (b: Buffer) => {
    const partHeader = 64 + N * 4;
    const lists = b.readUInt32LE(partHeader);
    const centroids = partHeader + 24;
    const firstList = centroids + lists * dims * 4;
    return { lists, centroids, firstList };
  };
  const forge = (file: string, edit: (b: Buffer) => void) => {
    const b = fs.readFileSync(file);
    edit(b);
    b.writeUInt32LE(crc32c(b.subarray(64)), 20);
    b.writeUInt32LE(crc32c(b.subarray(0, 60)), 60);
    fs.writeFileSync(file, b);
  };
  it.each([
    [
      'a row in two lists',
      (b: Buffer) => {
        const { firstList } = layout(b);
        const count = Number(b.readBigUInt64LE(firstList));
        expect(count).toBeGreaterThanOrEqual(2);
        b.writeUInt32LE(b.readUInt32LE(firstList + 8), firstList + 12);
      },
      /every row once/,
    ],
    ['a row number past the rows', (b: Buffer) => b.writeUInt32LE(N + 5, layout(b).firstList + 8), /every row once/],
    ['a centroid that is not finite', (b: Buffer) => b.writeFloatLE(Number.NaN, layout(b).centroids + 8), /not finite/],
    ['a list count past the rows', (b: Buffer) => b.writeBigUInt64LE(BigInt(N + 1), layout(b).firstList), /truncated/],
    ['more lists than rows', (b: Buffer) => b.writeUInt32LE(N + 1, 64 + N * 4), /partition header/],
  ])('%s (CRCs fixed up): rebuilt, the reason recorded, the answers right', (_name, edit, why) => {
    const { dir, m, ix } = built();
    ix.save();
    ix.close();
    forge(snapshotFile(dir, 'binary'), edit);
    const again = open(dir);
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'rebuilt', listsRaw: 64, countRaw: N });
    expect(String(again.stats().snapshotProblemRaw)).toMatch(why);
    expect(again.search(row(m, 123, dims), 1, RAW).ids[0]).toBe(123);
    again.close();
  });

  it('a bit flipped in the lists (CRC not fixed): rebuilt, payload CRC mismatch', () => {
    const { dir, ix } = built();
    ix.save();
    ix.close();
    const file = snapshotFile(dir, 'binary');
    const b = fs.readFileSync(file);
    b[b.length - 100]! ^= 0x04;
    fs.writeFileSync(file, b);
    const again = open(dir);
    expect(again.stats()).toMatchObject({ loadedFromRaw: 'rebuilt', listsRaw: 64 });
    expect(String(again.stats().snapshotProblemRaw)).toMatch(/payload CRC/);
    again.close();
  });
});

describe('partitions: a search while saveAsync partitions on the thread pool answers from whole lists', () => {
  it('searches keep answering during the save and after the swap', async () => {
    const { m, ix } = built();
    let settled = false;
    const saving = ix.saveAsync().then(() => (settled = true));
    let asked = 0;
    let right = 0;
    while (!settled) {
      const i = (asked * 37) % N;
      right += ix.search(row(m, i, dims), 1, RAW).ids[0] === i ? 1 : 0;
      asked++;
      if (asked % 20 === 0) await new Promise((r) => setImmediate(r));
    }
    await saving;
    expect(ix.stats().listsRaw).toBe(64);
    expect(right).toBeGreaterThanOrEqual(asked * 0.95);
    for (let i = 0; i < N; i += 97) expect(ix.search(row(m, i, dims), 1, RAW).ids[0]).toBe(i);
    ix.close();
  });
});
