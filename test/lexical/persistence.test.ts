// Persistence: round trip, and every kind of bad file is rebuilt from scratch, never trusted.
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync, readdirSync, truncateSync, appendFileSync } from 'node:fs';
import path from 'node:path';
import { addDocs, asDocs, memorySource, openIndex, realTurns, tempDir, type Doc, type LexIndex } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
const newFile = () => path.join(tmp.dir, `persist-${n++}.idx`);

// CRC32C, to forge a header whose checksum is right but whose content is wrong.
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();
function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const docs: Doc[] = [
  ...asDocs(realTurns(400).map((t) => t.text)),
  { id: 400, kind: 2, turnStart: 1, turnEnd: 300, text: 'summary of the first episode: rate limit 40 req/s' },
  { id: 401, kind: 3, text: 'an event' },
];
function build(file: string): LexIndex {
  const ix = openIndex(file);
  addDocs(ix, docs);
  return ix;
}
function snapshot(ix: LexIndex) {
  const src = memorySource(docs);
  return {
    highWater: ix.highWater(),
    search: ['pytest astropy', 'rate limit', 'ModuleNotFoundError separability_matrix'].map((q) => [
      Array.from(ix.search(q, 10, 1, NaN, NaN).ids),
      Array.from(ix.search(q, 10, 1, NaN, NaN).scores),
      Array.from(ix.search(q, 10, 2, NaN, NaN).ids),
    ]),
    phrase: ['separability_matrix(cm)', 'rate limit 40', 'cd /testbed'].map((p) => [
      Array.from(ix.phrase(src as never, p, 1, Infinity)),
      Array.from(ix.phrase(src as never, p, 2, Infinity)),
    ]),
    stats: (({ rawDocs, summaryDocs, rawTerms, summaryTerms, rawTokens, summaryTokens, postingsBytes }) => ({
      rawDocs, summaryDocs, rawTerms, summaryTerms, rawTokens, summaryTokens, postingsBytes,
    }))(ix.stats()),
  };
}

function expectRebuilt(file: string, reason: RegExp) {
  const ix = openIndex(file);
  const s = ix.stats();
  expect(s.loadedFrom).toBe('rebuilt');
  expect(s.loadError).toMatch(reason);
  expect(ix.highWater()).toBe(0);
  expect(s.rawDocs).toBe(0);
  expect(s.summaryDocs).toBe(0);
  expect(Array.from(ix.search('rate limit', 10, 1, NaN, NaN).ids)).toEqual([]);
}

describe('persistence round trip', () => {
  it('a saved index reopens from the file with identical answers', () => {
    const file = newFile();
    const ix = build(file);
    const before = snapshot(ix);
    ix.save();
    expect(existsSync(file)).toBe(true);
    expect(readdirSync(tmp.dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const again = openIndex(file);
    expect(again.stats().loadedFrom).toBe('file');
    expect(again.stats().loadError).toBe('');
    expect(snapshot(again)).toEqual(before);
    expect(again.highWater()).toBe(402);
  });
  it('a reopened index keeps growing correctly (appends after load, then saves again)', () => {
    const file = newFile();
    const ix = openIndex(file);
    addDocs(ix, docs.slice(0, 200));
    ix.save();
    const reopened = openIndex(file);
    addDocs(reopened, docs.slice(200));
    const full = build(newFile());
    expect(snapshot(reopened)).toEqual(snapshot(full));
    reopened.save();
    expect(snapshot(openIndex(file))).toEqual(snapshot(full));
  });
  it('an empty index round-trips', () => {
    const file = newFile();
    openIndex(file).save();
    const ix = openIndex(file);
    expect(ix.stats().loadedFrom).toBe('file');
    expect(ix.highWater()).toBe(0);
  });
  it('save over an existing file replaces it atomically and ignores a stale .tmp', () => {
    const file = newFile();
    writeFileSync(file + '.tmp', 'garbage from a crashed save');
    const ix = build(file);
    ix.save();
    addDocs(ix, [{ id: 500, text: 'later span about zebras' }]);
    ix.save();
    const again = openIndex(file);
    expect(again.highWater()).toBe(501);
    expect(Array.from(again.search('zebras', 1, 1, NaN, NaN).ids)).toEqual([500]);
    expect(existsSync(file + '.tmp')).toBe(false);
  });
  it('save into a missing directory is a typed IO_ERROR naming the file', () => {
    const ix = openIndex(path.join(tmp.dir, 'no-such-dir', 'x.idx'));
    expect(() => ix.save()).toThrow(expect.objectContaining({ code: 'IO_ERROR', details: expect.objectContaining({ file: expect.stringContaining('x.idx.tmp') }) }));
  });
});

describe('corrupt, truncated or missing file → rebuilt, never trusted', () => {
  const good = newFile();
  build(good).save();
  const bytes = readFileSync(good);

  it('missing file', () => {
    expectRebuilt(path.join(tmp.dir, 'never-written.idx'), /missing/);
  });
  it('empty file', () => {
    const f = newFile();
    writeFileSync(f, '');
    expectRebuilt(f, /empty/);
  });
  it('truncated at many offsets (inside the header, the body, one byte short)', () => {
    const offsets = [1, 8, 32, 63, 64, 65, 100, 1000, Math.floor(bytes.length / 2), bytes.length - 8, bytes.length - 1];
    for (const off of offsets) {
      const f = newFile();
      writeFileSync(f, bytes);
      truncateSync(f, off);
      expectRebuilt(f, /truncated|offset=/);
    }
  });
  it('extended by trailing bytes', () => {
    const f = newFile();
    writeFileSync(f, bytes);
    appendFileSync(f, Buffer.from([0]));
    expectRebuilt(f, /truncated or extended/);
  });
  it('a flipped bit anywhere (header and body) is caught by a checksum', () => {
    const step = Math.max(1, Math.floor(bytes.length / 40));
    const offsets = [0, 9, 17, 25, 33, 61, 64, 70, bytes.length - 1];
    for (let o = 64; o < bytes.length; o += step) offsets.push(o);
    for (const off of offsets) {
      const f = newFile();
      const copy = Buffer.from(bytes);
      copy[off]! ^= 1 << off % 8;
      writeFileSync(f, copy);
      expectRebuilt(f, /checksum|magic|version|size|offset=/);
    }
  });
  it('wrong version with a valid header checksum', () => {
    const f = newFile();
    const copy = Buffer.from(bytes);
    copy.writeUInt32LE(99, 8);
    copy.writeUInt32LE(crc32c(copy.subarray(0, 60)), 60);
    writeFileSync(f, copy);
    expectRebuilt(f, /version 99/);
  });
  it('other tokenizer version with a valid header checksum', () => {
    const f = newFile();
    const copy = Buffer.from(bytes);
    copy.writeUInt32LE(7, 36);
    copy.writeUInt32LE(crc32c(copy.subarray(0, 60)), 60);
    writeFileSync(f, copy);
    expectRebuilt(f, /tokenizer version 7/);
  });
  it('a body that passes its (forged) checksum but is inconsistent is still rejected', () => {
    const f = newFile();
    const copy = Buffer.from(bytes);
    // Raw doc count (body offset 4) made larger than the body can hold.
    copy.writeUInt32LE(0x0fffffff, 64 + 4);
    copy.writeUInt32LE(crc32c(copy.subarray(64)), 32);
    copy.writeUInt32LE(crc32c(copy.subarray(0, 60)), 60);
    writeFileSync(f, copy);
    expectRebuilt(f, /truncated body|offset=/);
  });
  it('a rebuilt index can be filled again and saved over the bad file', () => {
    const f = newFile();
    writeFileSync(f, bytes.subarray(0, 100));
    const ix = openIndex(f);
    expect(ix.stats().loadedFrom).toBe('rebuilt');
    addDocs(ix, docs);
    ix.save();
    expect(openIndex(f).stats().loadedFrom).toBe('file');
  });
});

describe('phrase affix arrays saved with the index (format version 3)', () => {
  // Raw spans only: the summary namespace is then the file's last 28 bytes (kind, 0 docs,
  // 0 tokens, 0 long docs, 0 terms, 0 affix entries), and the raw namespace's affix arrays
  // (count, then 2 × terms × u32) sit right before it.
  const rawDocs = asDocs(realTurns(300).map((t) => t.text));
  const partial = ['parability_matri', 'ate lim', 'estbed && pyt', 'ings = sett'];
  const answers = (ix: LexIndex) => partial.map((p) => Array.from(ix.phrase(memorySource(rawDocs) as never, p, 1, Infinity)));
  const saved = () => {
    const f = newFile();
    const ix = openIndex(f);
    addDocs(ix, rawDocs);
    const want = answers(ix);
    ix.save();
    return { f, want, terms: ix.stats().rawTerms as number };
  };
  const reseal = (copy: Buffer) => {
    copy.writeBigUInt64LE(BigInt(copy.length - 64), 24);
    copy.writeUInt32LE(crc32c(copy.subarray(64)), 32);
    copy.writeUInt32LE(crc32c(copy.subarray(0, 60)), 60);
    return copy;
  };

  it('save writes arrays over every term and an open reads them back: the first phrase query sorts nothing', () => {
    const f = newFile();
    const ix = openIndex(f);
    addDocs(ix, rawDocs);
    expect(ix.stats().affixSortedTerms).toBe(0);
    ix.save();
    expect(ix.stats().affixSortedTerms).toBe(ix.stats().rawTerms);
    const bytes = readFileSync(f);
    expect(bytes.readUInt32LE(8)).toBe(3);
    const reopened = openIndex(f);
    expect(reopened.stats().loadedFrom).toBe('file');
    expect(reopened.stats().affixSortedTerms).toBe(reopened.stats().rawTerms);
    expect(answers(reopened)).toEqual(saved().want);
    expect(answers(reopened).some((a) => a.length > 0)).toBe(true);
  });

  it('a version 2 file (no arrays) still loads, and builds them on the first phrase query', () => {
    const { f, want, terms } = saved();
    const bytes = readFileSync(f);
    const end = bytes.length - 28;
    const affixBytes = 4 + 8 * terms;
    const v2 = Buffer.concat([bytes.subarray(0, end - affixBytes), bytes.subarray(end, bytes.length - 4)]);
    v2.writeUInt32LE(2, 8);
    const f2 = newFile();
    writeFileSync(f2, reseal(v2));
    const ix = openIndex(f2);
    expect(ix.stats().loadedFrom).toBe('file');
    expect(ix.stats().affixSortedTerms).toBe(0);
    expect(answers(ix)).toEqual(want);
    expect(ix.stats().affixSortedTerms).toBe(terms);
  });

  it('an affix entry out of range or repeated, under a forged checksum, rejects the file', () => {
    const { f, terms } = saved();
    const bytes = readFileSync(f);
    const first = bytes.length - 28 - 8 * terms; // by_prefix[0]
    const outOfRange = Buffer.from(bytes);
    outOfRange.writeUInt32LE(terms, first);
    const f1 = newFile();
    writeFileSync(f1, reseal(outOfRange));
    expectRebuilt(f1, /permutation/);
    const repeated = Buffer.from(bytes);
    repeated.writeUInt32LE(bytes.readUInt32LE(first + 4), first);
    const f2 = newFile();
    writeFileSync(f2, reseal(repeated));
    expectRebuilt(f2, /permutation/);
  });
});
