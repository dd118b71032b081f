// An f16 binary index reads its rows in place from vectors.bin's mapping (the records hold
// the same f16 unit vectors) instead of holding a copy in anonymous memory: no row bytes on
// the heap, and the same ids and distances as the copy gives, live, after a reopen from the
// snapshot, and from a rebuild without one.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { realTurns } from '../helpers/data.js';
import { clustered, native, nearQueries, row, seq, snapshotFile, tmpDir } from './helpers.js';

const RAW = 1;
const SUMMARY = 2;
const dims = 64;
const n = 3000;
const m = clustered(n, dims, 30, 77);
// Summaries interleaved with raw spans, so a namespace's row number and its record number
// in the file differ; every 10th raw vector repeats an earlier one (a duplicate, no row).
const kinds = Uint8Array.from({ length: n }, (_, i) => (i % 7 === 3 ? SUMMARY : RAW));
for (let i = 10; i < n; i += 10) m.copyWithin(i * dims, (i - 5) * dims, (i - 4) * dims);
const queries = nearQueries(m, dims, 80, 0.1, 9);

function open(dir: string, mapRows: boolean, exactBelow = 0) {
  return new native.VectorIndex(dir, { dims, scalar: 'f16', ann: 'binary', exactBelow, rerankMin: 256, mapRows });
}
type Ix = ReturnType<typeof open>;
function answers(ix: Ix) {
  const out: number[][] = [];
  for (let q = 0; q < 80; q++) {
    const qv = row(queries, q, dims);
    for (const kind of [RAW, SUMMARY]) {
      for (const strategy of [undefined, 'exact'] as const) {
        const r = ix.search(qv, 10, kind, strategy);
        out.push(Array.from(r.ids), Array.from(r.distances));
      }
    }
  }
  return out;
}

describe('f16 rows read through the vectors file mapping', () => {
  it('hold no row bytes on the heap and answer exactly as a copy of the rows does', () => {
    const mapped = open(tmpDir('rows-map'), true);
    const copied = open(tmpDir('rows-copy'), false);
    // Batches of uneven size, so the file grows past its first mapping's records in steps.
    for (let i = 0; i < n; i += 700) {
      const e = Math.min(n, i + 700);
      for (const ix of [mapped, copied]) ix.add(seq(e - i, i + 1), kinds.subarray(i, e), m.subarray(i * dims, e * dims));
    }
    expect(mapped.stats()).toMatchObject({ rowsMapped: true, rowsHeapBytes: 0 });
    expect(copied.stats()).toMatchObject({ rowsMapped: false });
    expect(copied.stats().rowsHeapBytes).toBeGreaterThan(0);
    expect(answers(mapped)).toEqual(answers(copied));
  });

  it('the same after a reopen from the snapshot and after a rebuild from the file', () => {
    const dir = tmpDir('rows-reopen');
    const first = open(dir, true);
    first.add(seq(n, 1), kinds, m);
    const live = answers(first);
    first.save();
    first.close();
    const reopened = open(dir, true);
    expect(reopened.stats()).toMatchObject({ loadedFromRaw: 'file', rowsMapped: true, rowsHeapBytes: 0 });
    expect(answers(reopened)).toEqual(live);
    reopened.close();
    fs.rmSync(snapshotFile(dir, 'binary', 'raw'));
    fs.rmSync(snapshotFile(dir, 'binary', 'summary'));
    const rebuilt = open(dir, true);
    expect(rebuilt.stats()).toMatchObject({ loadedFromRaw: 'rebuilt', rowsMapped: true });
    expect(answers(rebuilt)).toEqual(live);
  });

  it('built-in embedder on 4,000 real turns (256 dims): the same ids and distances for quotes and questions', () => {
    const turns = realTurns(4000);
    const emb = new native.Embedder(256);
    const vecs = emb.embed(turns.map((t) => t.text));
    const k = turns.length;
    const ixs = [true, false].map((mapRows) => new native.VectorIndex(tmpDir(`rows-real-${mapRows}`), { dims: 256, scalar: 'f16', ann: 'binary', exactBelow: 0, rerankMin: 256, mapRows }));
    for (const ix of ixs) ix.add(seq(k, 1), new Uint8Array(k).fill(RAW), vecs);
    const texts = turns.filter((_, i) => i % 37 === 0).flatMap((t) => [t.text.slice(10, 130), `what did we find out about ${t.text.split(/\s+/).slice(3, 6).join(' ')}?`]);
    const qs = emb.embed(texts);
    for (let q = 0; q < texts.length; q++) {
      const qv = qs.subarray(q * 256, (q + 1) * 256);
      const [a, b] = ixs.map((ix) => ix.search(qv, 10, RAW));
      expect(Array.from(a!.ids)).toEqual(Array.from(b!.ids));
      expect(Array.from(a!.distances)).toEqual(Array.from(b!.distances));
    }
  });

  it('f32 and i8 rows keep their copy (an f32 row normalized again is not the file bytes)', () => {
    for (const scalar of ['f32', 'i8'] as const) {
      const ix = new native.VectorIndex(tmpDir(`rows-${scalar}`), { dims, scalar, ann: 'binary', exactBelow: 0 });
      ix.add(seq(100, 1), new Uint8Array(100).fill(RAW), m.subarray(0, 100 * dims));
      expect(ix.stats()).toMatchObject({ rowsMapped: false });
    }
  });
});
