// The vector files name their content for the store's index identity: vectorsDigest (CRC32C
// chained over the records' CRCs, in file order) and vectorsRecords for vectors.bin, the
// header CRC of each snapshot last loaded or saved. Equal content, equal names; any other
// content, another name; a dropped tail or incomplete span leaves the name of what is kept.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AppendColumns, NativeSpanLog, NativeVectorIndex } from '../../src/native.js';
import { native, tmpDir } from './helpers.js';

const DIMS = 16;
const RAW = 1;
const SUMMARY = 2;
const RECORD = 20 + 4 * DIMS; // vectors.bin of an f32 index: f32 unit vectors

const opened: NativeVectorIndex[] = [];
const logs: NativeSpanLog[] = [];
afterEach(async () => {
  for (const ix of opened.splice(0)) ix.close();
  while (logs.length) await logs.pop()!.close();
});

const openIndex = (dir: string) => {
  const ix = new native.VectorIndex(dir, { dims: DIMS, scalar: 'f32', ann: 'binary' });
  opened.push(ix);
  return ix;
};
/** Vectors whose content depends on `seed`. */
const vectors = (n: number, seed: number) => Float32Array.from({ length: n * DIMS }, (_, i) => Math.sin(i * 0.37 + seed) + 0.01);
const add = (ix: NativeVectorIndex, ids: number[], seed: number, kind = RAW) =>
  ix.add(Float64Array.from(ids), new Uint8Array(ids.length).fill(kind), vectors(ids.length, seed));
const fingerprint = (ix: NativeVectorIndex) => {
  const s = ix.stats();
  return { records: s.vectorsRecords, digest: s.vectorsDigest, raw: s.snapshotCrcRaw, summary: s.snapshotCrcSummary };
};

describe('vectorsDigest and vectorsRecords name the content of vectors.bin', () => {
  it('the same after reopen as after the appends; other vectors under the same ids give another digest', () => {
    const a = tmpDir('fp-a');
    const ix = openIndex(a);
    expect(fingerprint(ix)).toMatchObject({ records: 0, digest: 0 });
    add(ix, [1, 2, 3], 1);
    const three = fingerprint(ix).digest;
    add(ix, [4, 5], 1, SUMMARY);
    const live = fingerprint(ix);
    expect(live.records).toBe(5);
    expect(live.digest).not.toBe(three);
    ix.close();
    expect(fingerprint(openIndex(a))).toMatchObject({ records: 5, digest: live.digest });

    const b = tmpDir('fp-b');
    const other = openIndex(b);
    add(other, [1, 2, 3], 2);
    add(other, [4, 5], 1, SUMMARY);
    expect(fingerprint(other).records).toBe(5);
    expect(fingerprint(other).digest).not.toBe(live.digest);
  });

  it('a torn tail cut at open leaves the digest of the records kept', () => {
    const dir = tmpDir('fp-torn');
    const ix = openIndex(dir);
    add(ix, [1, 2], 3);
    const before = fingerprint(ix);
    add(ix, [3], 3);
    ix.close();
    const file = path.join(dir, 'vectors.bin');
    fs.truncateSync(file, fs.statSync(file).size - 7);
    const again = openIndex(dir);
    expect(again.stats().vectorsRecovery).toBe('torn-tail');
    expect(fingerprint(again)).toMatchObject({ records: 2, digest: before.digest });
  });

  it('a span cut inside its windows is dropped whole, and the digest is that of the spans before it', async () => {
    const dir = tmpDir('fp-span');
    const log = new native.SpanLog(path.join(dir, 'log'), { readOnly: false, durability: 0, segmentBytes: 64 << 20, maxTextBytes: 16 << 20 });
    logs.push(log);
    const long = Array.from({ length: 200 }, (_, i) => `step ${i}: compiled module_${i}.rs in ${i * 13} ms`).join('\n');
    const texts = ['first short span about deploys', 'second short span about tests'];
    const cols = (t: string[], turn0 = 0): AppendColumns => ({
      kinds: new Uint8Array(t.length).fill(RAW), flags: new Uint8Array(t.length), roles: new Uint8Array(t.length).fill(2),
      turnStart: Float64Array.from(t, (_, i) => turn0 + i), turnEnd: Float64Array.from(t, (_, i) => turn0 + i), timestamps: new Float64Array(t.length),
      tokens: new Uint32Array(t.length), texts: t, metas: new Array(t.length).fill(null),
    });
    await log.append(cols(texts));
    const vdir = path.join(dir, 'vectors');
    const embedder = new native.Embedder(DIMS);
    const short = openIndex(vdir);
    short.catchUp(log, embedder);
    const twoSpans = fingerprint(short);
    short.close();
    await log.append(cols([long], 2));
    const ix = openIndex(vdir);
    ix.catchUp(log, embedder);
    expect(fingerprint(ix).records).toBeGreaterThan(4);
    ix.close();
    // Keep the two short spans and two windows of the long one: the long span is incomplete.
    fs.truncateSync(path.join(vdir, 'vectors.bin'), 32 + 4 * RECORD);
    const cut = openIndex(vdir);
    expect(cut.stats().vectorsRecovery).toBe('torn-tail');
    expect(fingerprint(cut)).toMatchObject({ records: 2, digest: twoSpans.digest });
  });
});

describe('snapshotCrcRaw / snapshotCrcSummary name the snapshot last loaded or saved', () => {
  it('0 before any save; the header CRC after save and after loading the same file; another snapshot, another CRC', () => {
    const dir = tmpDir('fp-snap');
    const ix = openIndex(dir);
    add(ix, [1, 2, 3], 4);
    expect(fingerprint(ix)).toMatchObject({ raw: 0, summary: 0 });
    ix.save();
    const saved = fingerprint(ix);
    const header = (kind: string) => fs.readFileSync(path.join(dir, `index.${kind}.flat`)).readUInt32LE(60);
    expect(saved.raw).toBe(header('raw'));
    expect(saved.summary).toBe(header('summary'));
    ix.close();
    const loaded = openIndex(dir);
    expect(loaded.stats().loadedFromRaw).toBe('file');
    expect(fingerprint(loaded)).toEqual(saved);
    add(loaded, [4], 5);
    loaded.save();
    expect(fingerprint(loaded).raw).toBe(header('raw'));
    expect(fingerprint(loaded).raw).not.toBe(saved.raw);
    expect(fingerprint(loaded).summary).toBe(saved.summary); // unchanged, not rewritten
  });

  it('a snapshot rejected at open leaves 0: the namespace was rebuilt from vectors.bin, no file names it', () => {
    const dir = tmpDir('fp-reject');
    const ix = openIndex(dir);
    add(ix, [1, 2, 3], 6);
    ix.save();
    ix.close();
    const file = path.join(dir, 'index.raw.flat');
    const b = fs.readFileSync(file);
    b[b.length - 3]! ^= 0x08;
    fs.writeFileSync(file, b);
    const again = openIndex(dir);
    expect(again.stats().loadedFromRaw).toBe('rebuilt');
    expect(again.stats().snapshotProblemRaw).toMatch(/payload CRC mismatch/);
    expect(fingerprint(again).raw).toBe(0);
  });
});
