// Recovery over bytes and over real files: truncation at every byte of the last records
// and a flipped bit in every header field and in payloads are detected, never returned,
// and classified right (torn tail vs corruption).
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { columns, durabilities, native, openLog, recordOffsets, rowsFor, segmentFiles, tmpDir, writeExtent, type Row } from './helpers.js';
import type { RecoveryReport } from '../../src/native.js';

const recover = (b: Uint8Array): RecoveryReport => native.recoverSegment(b);

/**
 * A sync-mode log: single-record batches, then one 3-record batch, then (checkpoint) the
 * close checkpoint. Without it, `bytes` are the records as a killed writer leaves them and
 * `live` the whole file, which also holds the zeros a sync writer keeps past its last record.
 */
async function buildLog(opts: { checkpoint: boolean }): Promise<{ dir: string; file: string; bytes: Uint8Array; live: Uint8Array; rows: Row[] }> {
  const dir = tmpDir('recovery');
  const log = openLog(dir, { durability: durabilities.sync });
  const rows = rowsFor(0, 8);
  for (const r of rows.slice(0, 5)) await log.append(columns([r]));
  await log.append(columns(rows.slice(5)));
  const file = segmentFiles(dir)[0]!;
  let bytes: Uint8Array;
  let live: Uint8Array;
  if (opts.checkpoint) {
    await log.close();
    bytes = live = new Uint8Array(fs.readFileSync(file));
  } else {
    live = new Uint8Array(fs.readFileSync(file)); // as a killed writer would leave it
    bytes = live.slice(0, log.stats().bytes);
    await log.close();
  }
  return { dir, file, bytes, live, rows };
}

/**
 * A log directory holding `bytes` as its one segment. Its EXTENT vouches for no record: these
 * tests ask what a segment's own bytes tell (what EXTENT adds is test/log/extent.test.ts's).
 */
function copyDirWith(file: string, bytes: Uint8Array): string {
  const dir = tmpDir('recovery-copy');
  fs.writeFileSync(path.join(dir, path.basename(file)), bytes);
  writeExtent(dir);
  return dir;
}

let clean: Awaited<ReturnType<typeof buildLog>>;
let noCheckpoint: Awaited<ReturnType<typeof buildLog>>;
beforeAll(async () => {
  clean = await buildLog({ checkpoint: true });
  noCheckpoint = await buildLog({ checkpoint: false });
});

describe('a whole segment recovers clean and recovery is idempotent', () => {
  it('clean bytes: every record, validEnd = size, twice the same', () => {
    const a = recover(clean.bytes);
    expect(a).toMatchObject({ outcome: 'clean', records: 8, firstId: 1, validEnd: clean.bytes.length, errorOffset: -1 });
    expect(recover(clean.bytes.slice(0, a.validEnd))).toEqual(a);
    expect(recover(noCheckpoint.bytes)).toMatchObject({ outcome: 'clean', records: 8, validEnd: noCheckpoint.bytes.length });
  });

  it('CRC32C: hardware and portable paths agree with the standard check value', async () => {
    const { testing } = await import('./helpers.js');
    const check = new TextEncoder().encode('123456789');
    expect(testing.crc32c(check)).toBe(0xe3069283);
    expect(testing.crc32c(check, true)).toBe(0xe3069283);
    for (let n = 0; n < 300; n += 7) {
      const b = clean.bytes.subarray(3, 3 + n);
      expect(testing.crc32c(b)).toBe(testing.crc32c(b, true));
    }
  });

  it('CRC32C: the interleaved hardware path agrees with the portable one at every block boundary', async () => {
    const { testing } = await import('./helpers.js');
    // Deterministic pseudo-random bytes, read at odd offsets (unaligned loads).
    const big = new Uint8Array(8200);
    let x = 0x9e3779b9;
    for (let i = 0; i < big.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      big[i] = x & 0xff;
    }
    // The 3-way path runs 3 × 128-byte and 3 × 1024-byte blocks: cover lengths around each
    // multiple, plus a sweep.
    const lengths = new Set<number>();
    for (const block of [128, 1024]) for (let m = 1; m <= 7; m++) for (let d = -9; d <= 9; d++) lengths.add(3 * block * m + d);
    for (let n = 300; n < 8000; n += 97) lengths.add(n);
    for (let n = 0; n < 64; n++) lengths.add(n);
    // ASCII-only input (the copy must report no high byte) and one high byte at the end.
    const ascii = Uint8Array.from({ length: 1500 }, (_, i) => 32 + (i % 90));
    for (const n of [0, 1, 7, 8, 9, 383, 384, 385, 1200]) {
      expect(testing.crc32c(ascii.subarray(0, n), 'copy')).toBe(testing.crc32c(ascii.subarray(0, n), true));
      const hi = ascii.slice(0, n + 1);
      hi[n] = 0xc3;
      expect(testing.crc32c(hi, 'copy')).toBe(testing.crc32c(hi, true));
    }
    for (const n of lengths) {
      for (const off of [0, 1, 5]) {
        const b = big.subarray(off, off + n);
        const want = testing.crc32c(b, true);
        expect(testing.crc32c(b), `length ${n} at offset ${off}`).toBe(want);
        expect(testing.crc32c(b, 'copy'), `copy, length ${n} at offset ${off}`).toBe(want);
      }
    }
  });
});

describe('truncation at every byte offset of the last records is a torn tail, never corruption', () => {
  it('every length from the 4th record on (buffers), batch-atomic', () => {
    const offs = recordOffsets(noCheckpoint.bytes);
    expect(offs.length).toBe(8);
    // Batch boundaries: records 1..5 are single batches, 6..8 one batch.
    const commits = [64, offs[1]!, offs[2]!, offs[3]!, offs[4]!, offs[5]!, noCheckpoint.bytes.length];
    const commitRecords = [0, 1, 2, 3, 4, 5, 8];
    for (let len = offs[3]!; len <= noCheckpoint.bytes.length; len++) {
      const r = recover(noCheckpoint.bytes.subarray(0, len));
      let k = commits.length - 1;
      while (commits[k]! > len) k--;
      const exact = commits[k] === len;
      expect(r.outcome, `len ${len}`).toBe(exact ? 'clean' : 'torn-tail');
      expect(r.validEnd, `len ${len}`).toBe(commits[k]);
      expect(r.records, `len ${len}`).toBe(commitRecords[k]);
    }
  });

  it('zero-fill after the last record is a torn tail with every record kept', () => {
    const padded = new Uint8Array(noCheckpoint.bytes.length + 4096);
    padded.set(noCheckpoint.bytes);
    expect(recover(padded)).toMatchObject({ outcome: 'torn-tail', records: 8, validEnd: noCheckpoint.bytes.length });
  });

  it("a sync writer's zero prefill: zeros past the last record, a torn tail with every record kept", async () => {
    const prefill = noCheckpoint.live.subarray(noCheckpoint.bytes.length);
    expect(prefill.length).toBeGreaterThan(0);
    expect(prefill.every((b) => b === 0)).toBe(true);
    expect(recover(noCheckpoint.live)).toMatchObject({ outcome: 'torn-tail', records: 8, validEnd: noCheckpoint.bytes.length });
    // What the next writer does with it: cut it, say so, keep every record; then clean.
    const dir = copyDirWith(noCheckpoint.file, noCheckpoint.live);
    const log = openLog(dir);
    expect(log.stats().recoveries).toEqual([{ file: expect.stringContaining('seg-'), offset: noCheckpoint.bytes.length, droppedBytes: prefill.length, zerosOnly: true }]);
    for (let id = 1; id <= 8; id++) expect(log.get(id)?.text).toBe(noCheckpoint.rows[id - 1]!.text);
    await log.close();
    expect(fs.statSync(segmentFiles(dir)[0]!).size).toBe(noCheckpoint.bytes.length);
    // And the clean close of a writer that did write cuts its own prefill before the checkpoint.
    expect(fs.statSync(clean.file).size).toBe(clean.bytes.length);
    expect(recover(clean.bytes)).toMatchObject({ outcome: 'clean', records: 8 });
  });

  it('real files: open truncates, reports, returns only whole batches, and a second open is clean', async () => {
    const offs = recordOffsets(noCheckpoint.bytes);
    const size = noCheckpoint.bytes.length;
    const lengths = new Set<number>();
    for (let len = offs[3]!; len < size; len += 13) lengths.add(len);
    for (const o of offs.slice(3)) lengths.add(o).add(o + 1).add(o + 63).add(o + 64);
    lengths.add(size - 1);
    for (const len of lengths) {
      const dir = copyDirWith(noCheckpoint.file, noCheckpoint.bytes.subarray(0, len));
      const expected = recover(noCheckpoint.bytes.subarray(0, len));
      const log = openLog(dir);
      expect(log.nextId(), `len ${len}`).toBe(expected.records + 1);
      const rec = log.stats().recoveries;
      if (expected.outcome === 'torn-tail') {
        const zerosOnly = noCheckpoint.bytes.subarray(expected.validEnd, len).every((b) => b === 0);
        expect(rec).toEqual([{ file: expect.stringContaining('seg-'), offset: expected.validEnd, droppedBytes: len - expected.validEnd, zerosOnly }]);
      } else {
        expect(rec).toEqual([]);
      }
      for (let id = 1; id < log.nextId(); id++) expect(log.get(id)?.text).toBe(noCheckpoint.rows[id - 1]!.text);
      expect(log.get(expected.records + 1)).toBeUndefined();
      await log.close();
      expect(fs.statSync(segmentFiles(dir)[0]!).size).toBe(expected.validEnd);
      const again = openLog(dir);
      expect(again.stats().recoveries).toEqual([]);
      expect(again.nextId()).toBe(expected.records + 1);
      await again.close();
    }
  });
});

// Header fields of a record (docs/FORMAT.md), each flipped in every one of its bytes.
const FIELDS: [string, number, number][] = [
  ['crc', 0, 4], ['payload length', 4, 4], ['id', 8, 8], ['kind', 16, 1], ['flags', 17, 1], ['role', 18, 1],
  ['reserved', 19, 1], ['text length', 20, 4], ['turn start', 24, 8], ['turn end', 32, 8], ['timestamp', 40, 8],
  ['tokens', 48, 4], ['marker', 52, 4], ['synced end', 56, 8],
];

function flipped(bytes: Uint8Array, at: number, bit: number): Uint8Array {
  const b = bytes.slice();
  b[at]! ^= 1 << bit;
  return b;
}

describe('a flipped bit anywhere is detected: corruption mid-file, torn tail only at the very end', () => {
  it('segment header: every byte, every bit → corrupt at offset 0', () => {
    for (let at = 0; at < 64; at++) {
      for (let bit = 0; bit < 8; bit++) {
        const r = recover(flipped(clean.bytes, at, bit));
        expect(r.outcome, `header byte ${at} bit ${bit}`).toBe('corrupt');
        expect(r.errorOffset).toBe(0);
      }
    }
  });

  it('every header field, payload and padding byte of records 1, 4 and 6 (mid-file) → corrupt at that record', () => {
    const offs = recordOffsets(clean.bytes);
    for (const k of [0, 3, 5]) {
      const off = offs[k]!;
      const end = k + 1 < offs.length ? offs[k + 1]! : clean.bytes.length;
      const positions: [string, number][] = [];
      for (const [name, fo, fl] of FIELDS) for (let i = 0; i < fl; i++) positions.push([name, off + fo + i]);
      for (let p = off + 64; p < end; p += 3) positions.push(['payload/padding', p]);
      positions.push(['last byte', end - 1]);
      for (const [name, at] of positions) {
        const bit = at % 8;
        const r = recover(flipped(clean.bytes, at, bit));
        expect(r.outcome, `record ${k + 1} ${name} byte ${at}`).toBe('corrupt');
        expect(r.errorOffset, `record ${k + 1} ${name}`).toBe(off);
        // Nothing from the damaged record on is counted valid.
        expect(r.records).toBeLessThanOrEqual(k);
      }
    }
  });

  it('the last record with nothing after it → torn tail, the record dropped (the documented limit)', () => {
    const offs = recordOffsets(noCheckpoint.bytes);
    const last = offs[7]!;
    for (const [name, fo, fl] of FIELDS) {
      for (let i = 0; i < fl; i++) {
        const r = recover(flipped(noCheckpoint.bytes, last + fo + i, (fo + i) % 8));
        expect(r.outcome, name).toBe('torn-tail');
        // Records 6..8 are one batch: dropping 8 drops the batch.
        expect(r.records, name).toBe(5);
      }
    }
  });

  it('after a clean close the checkpoint turns a flip in the last record into corruption', () => {
    const offs = recordOffsets(clean.bytes);
    // offs[8] is the checkpoint; offs[7] the last data record.
    expect(offs.length).toBe(9);
    const r = recover(flipped(clean.bytes, offs[7]! + 70, 2));
    expect(r).toMatchObject({ outcome: 'corrupt', errorOffset: offs[7] });
    // A flip in the checkpoint itself loses no span.
    expect(recover(flipped(clean.bytes, offs[8]! + 9, 0))).toMatchObject({ outcome: 'torn-tail', records: 8 });
  });

  it('real files: open fails with CORRUPT naming the file and offset; nothing is read', () => {
    const offs = recordOffsets(clean.bytes);
    for (const [k, delta] of [[0, 4], [2, 17], [4, 80], [6, 55]] as const) {
      const dir = copyDirWith(clean.file, flipped(clean.bytes, offs[k]! + delta, 1));
      let err: unknown;
      try {
        openLog(dir);
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({
        name: 'CorruptionError',
        code: 'CORRUPT',
        details: { file: path.join(dir, path.basename(clean.file)), offset: offs[k] },
      });
      // Read-only opens refuse it as well.
      expect(() => openLog(dir, { readOnly: true })).toThrowError(expect.objectContaining({ code: 'CORRUPT' }));
    }
  });

  it('a bit flipped under an open log is caught by the CRC on read and by verify()', async () => {
    const dir = copyDirWith(clean.file, clean.bytes);
    const log = openLog(dir);
    const offs = recordOffsets(clean.bytes);
    const fd = fs.openSync(segmentFiles(dir)[0]!, 'r+');
    const at = offs[2]! + 100;
    const b = Buffer.alloc(1);
    fs.readSync(fd, b, 0, 1, at);
    b[0]! ^= 0x10;
    fs.writeSync(fd, b, 0, 1, at);
    fs.closeSync(fd);
    expect(() => log.get(3)).toThrowError(expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ offset: offs[2] }) }));
    expect(() => log.scan(1, 10)).toThrowError(expect.objectContaining({ code: 'CORRUPT' }));
    expect(log.get(2)?.text).toBe(clean.rows[1]!.text);
    const v = log.verify();
    expect(v.ok).toBe(false);
    expect(v.problems).toEqual([expect.objectContaining({ offset: offs[2], outcome: 'corrupt' })]);
    await log.close();
  });
});

describe('recovery is total over arbitrary bytes', () => {
  it('random and mutated inputs never throw and always give a known outcome', () => {
    let s = 12345;
    const rnd = () => ((s = (s * 1103515245 + 12345) >>> 0) >>> 8);
    for (let t = 0; t < 3000; t++) {
      let b: Uint8Array;
      if (t % 3 === 0) {
        b = new Uint8Array(rnd() % 600).map(() => rnd() & 0xff);
      } else {
        b = clean.bytes.slice(0, rnd() % (clean.bytes.length + 1));
        for (let k = 0; k < 1 + (rnd() % 4); k++) if (b.length) b[rnd() % b.length] = rnd() & 0xff;
      }
      const r = recover(b);
      expect(['clean', 'torn-tail', 'corrupt']).toContain(r.outcome);
      expect(r.validEnd).toBeLessThanOrEqual(b.length);
    }
  });
});

describe('a damaged last batch in a real file is dropped as a torn tail, never returned', () => {
  it('flip in the last record of a killed writer: open truncates back to the batch start and reports it', async () => {
    const offs = recordOffsets(noCheckpoint.bytes);
    const dir = copyDirWith(noCheckpoint.file, flipped(noCheckpoint.bytes, offs[7]! + 200, 3));
    const log = openLog(dir);
    expect(log.nextId()).toBe(6); // records 6..8 were one batch
    expect(log.stats().recoveries).toEqual([expect.objectContaining({ offset: offs[5], droppedBytes: noCheckpoint.bytes.length - offs[5]! })]);
    expect(log.get(8)).toBeUndefined();
    expect(log.get(5)?.text).toBe(noCheckpoint.rows[4]!.text);
    expect(await log.append(columns(rowsFor(5, 1, 9)))).toBe(6);
    await log.close();
  });
});
