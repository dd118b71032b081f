// The log knows its extent (docs/FORMAT.md, "Extent"): where it starts, which log its
// segments belong to, and how far it was durable. A lost first, middle or last segment, a
// last segment cut at a record boundary, a foreign segment or a lost EXTENT is CORRUPT at
// open — never a clean open that hands acknowledged ids out again.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { closedAfterEach, durabilities, native, openLog, readExtent, recordOffsets, segmentFiles, testing, tmpDir } from './helpers.js';
// @ts-expect-error plain .mjs shared with the child processes
import { columnsFor, diffRecord } from './content.mjs';

const open = closedAfterEach();
const SEGMENT_BYTES = 8192;

/** A closed log of `n` single-span batches over several 8 KiB segments. */
async function logOf(tag: string, n: number, durability: number = durabilities.sync): Promise<{ dir: string; files: string[] }> {
  const dir = tmpDir(`extent-${tag}`);
  const log = openLog(dir, { durability, segmentBytes: SEGMENT_BYTES });
  for (let id = 1; id <= n; id++) await log.append(columnsFor(id, 1, 0));
  await log.close();
  return { dir, files: segmentFiles(dir) };
}

const corruptAt = (file: string, offset?: number) =>
  expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ file, ...(offset === undefined ? {} : { offset }) }) });

describe('a log records where it starts, its tag and how far it was durable', () => {
  it('a new log: EXTENT with log start 1, raised at each durable point; every header carries start and tag', async () => {
    const dir = tmpDir('extent-new');
    const log = open(dir, { durability: durabilities.sync, segmentBytes: SEGMENT_BYTES });
    expect(readExtent(dir)).toMatchObject({ logStart: 1, durableNext: 1 });
    for (let id = 1; id <= 40; id++) await log.append(columnsFor(id, 1, 0));
    expect(readExtent(dir)!.durableNext).toBe(41);
    const { tag } = readExtent(dir)!;
    expect(tag).not.toBe(0n);
    const files = segmentFiles(dir);
    expect(files.length).toBeGreaterThan(2);
    for (const f of files) {
      const h = fs.readFileSync(f).subarray(0, 64);
      expect(h.readUInt32LE(8)).toBe(2);
      expect(h.readBigUInt64LE(40)).toBe(1n);
      expect(h.readBigUInt64LE(48)).toBe(tag);
    }
  });

  it('none: acknowledged is not durable; a flush and the close raise it', async () => {
    const dir = tmpDir('extent-none');
    const log = open(dir, { durability: durabilities.none, segmentBytes: SEGMENT_BYTES });
    for (let id = 1; id <= 5; id++) await log.append(columnsFor(id, 1, 0));
    expect(readExtent(dir)!.durableNext).toBe(1);
    await log.flush();
    expect(readExtent(dir)!.durableNext).toBe(6);
    await log.append(columnsFor(6, 1, 0));
    await log.close();
    expect(readExtent(dir)!.durableNext).toBe(7);
  });

  it('group: each commit raises it', async () => {
    const dir = tmpDir('extent-group');
    const log = open(dir, { durability: durabilities.group, segmentBytes: SEGMENT_BYTES });
    await Promise.all([1, 3, 5].map((id) => log.append(columnsFor(id, 2, 0))));
    expect(readExtent(dir)!.durableNext).toBe(7);
  });
});

describe('a lost segment is corruption at open, for writers and readers', () => {
  it('the first segment deleted: CORRUPT at the new first segment, offset 16', async () => {
    const { dir, files } = await logOf('first', 40);
    fs.rmSync(files[0]!);
    for (const readOnly of [false, true]) expect(() => openLog(dir, { readOnly })).toThrowError(corruptAt(files[1]!, 16));
  });

  it('a middle segment deleted: CORRUPT (ids not contiguous)', async () => {
    const { dir, files } = await logOf('middle', 40);
    fs.rmSync(files[1]!);
    expect(() => openLog(dir)).toThrowError(corruptAt(files[2]!, 16));
  });

  it('the last segment deleted: CORRUPT at the end of the one before, and no id is handed out again', async () => {
    const { dir, files } = await logOf('last', 40);
    const before = files.at(-2)!;
    fs.rmSync(files.at(-1)!);
    for (const readOnly of [false, true]) expect(() => openLog(dir, { readOnly })).toThrowError(corruptAt(before, fs.statSync(before).size));
  });

  it('every segment deleted: CORRUPT naming EXTENT', async () => {
    const { dir, files } = await logOf('all', 40);
    for (const f of files) fs.rmSync(f);
    expect(() => openLog(dir)).toThrowError(corruptAt(path.join(dir, 'EXTENT'), 0));
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('seg-'))).toEqual([]);
  });

  it('the last segment cut at a record boundary below the durable end: CORRUPT at the cut', async () => {
    const { dir, files } = await logOf('cut', 40);
    const last = files.at(-1)!;
    const offs = recordOffsets(fs.readFileSync(last));
    expect(offs.length).toBeGreaterThan(2);
    fs.truncateSync(last, offs[1]!);
    expect(() => openLog(dir)).toThrowError(corruptAt(last, offs[1]!));
  });

  it('a cut of records that were never durable (none, killed before a flush) is still a torn tail', async () => {
    const live = tmpDir('extent-torn-live');
    const log = openLog(live, { durability: durabilities.none, segmentBytes: 1 << 20 });
    for (let id = 1; id <= 10; id++) await log.append(columnsFor(id, 1, 0));
    await log.flush();
    for (let id = 11; id <= 14; id++) await log.append(columnsFor(id, 1, 0));
    const dir = tmpDir('extent-torn');
    for (const f of [...segmentFiles(live), path.join(live, 'EXTENT')]) fs.copyFileSync(f, path.join(dir, path.basename(f)));
    await log.close();
    const seg = segmentFiles(dir)[0]!;
    fs.truncateSync(seg, recordOffsets(fs.readFileSync(seg))[12]!);
    const after = open(dir);
    expect(after.nextId()).toBe(13);
    for (let id = 1; id <= 12; id++) expect(diffRecord(after.get(id), id, 0)).toBeNull();
  });
});

describe('EXTENT itself: lost, damaged, or another log', () => {
  it('EXTENT deleted under version 2 segments: CORRUPT', async () => {
    const { dir, files } = await logOf('no-extent', 10);
    fs.rmSync(path.join(dir, 'EXTENT'));
    expect(() => openLog(dir)).toThrowError(corruptAt(files[0]!, 48));
  });

  it('one damaged slot: the other is read; both damaged: CORRUPT at EXTENT offset 0', async () => {
    const { dir } = await logOf('slots', 10);
    const p = path.join(dir, 'EXTENT');
    const x = readExtent(dir)!;
    const b = fs.readFileSync(p);
    const current = ((x.seq - 1) % 2) * 4096;
    b[current + 41]! ^= 0x01;
    fs.writeFileSync(p, b);
    const log = openLog(dir);
    expect(log.nextId()).toBe(11);
    await log.close();
    const c = fs.readFileSync(p);
    c[5]! ^= 0x01;
    c[4096 + 5]! ^= 0x01;
    fs.writeFileSync(p, c);
    expect(() => openLog(dir)).toThrowError(corruptAt(p, 0));
  });

  it("another log's segment in its place: CORRUPT at offset 40", async () => {
    const a = await logOf('mine', 10);
    const b = await logOf('other', 10);
    fs.copyFileSync(b.files[0]!, a.files[0]!);
    expect(() => openLog(a.dir)).toThrowError(corruptAt(a.files[0]!, 40));
  });

  it('a log written before EXTENT (version 1 headers) opens, gets one, and is checked from then on', async () => {
    const { dir, files } = await logOf('legacy', 30);
    fs.rmSync(path.join(dir, 'EXTENT'));
    for (const f of files) {
      const h = fs.readFileSync(f);
      h.writeUInt32LE(1, 8);
      h.fill(0, 40, 60);
      h.writeUInt32LE(testing.crc32c(h.subarray(0, 60)) >>> 0, 60);
      fs.writeFileSync(f, h);
    }
    expect(native.recoverSegment(new Uint8Array(fs.readFileSync(files[0]!))).outcome).toBe('clean');
    const log = openLog(dir, { segmentBytes: SEGMENT_BYTES });
    expect(log.nextId()).toBe(31);
    for (let id = 1; id <= 30; id++) expect(diffRecord(log.get(id), id, 0)).toBeNull();
    expect(readExtent(dir)).toMatchObject({ logStart: 1, durableNext: 31 });
    for (let id = 31; id <= 45; id++) await log.append(columnsFor(id, 1, 0));
    await log.close();
    const now = segmentFiles(dir);
    fs.rmSync(now.at(-1)!);
    expect(() => openLog(dir)).toThrowError(expect.objectContaining({ code: 'CORRUPT' }));
  });
});

describe('verify() reports what only EXTENT can tell', () => {
  it("a reader that has not refreshed since the writer rolled: the writer's newer durable records are not missing ones", async () => {
    const dir = tmpDir('extent-reader-behind');
    const w = open(dir, { durability: durabilities.sync, segmentBytes: SEGMENT_BYTES });
    for (let id = 1; id <= 5; id++) await w.append(columnsFor(id, 1, 0));
    const reader = open(dir, { readOnly: true });
    for (let id = 6; id <= 60; id++) await w.append(columnsFor(id, 1, 0));
    expect(segmentFiles(dir).length).toBeGreaterThan(2);
    expect(readExtent(dir)!.durableNext).toBe(61);
    expect(reader.verify()).toMatchObject({ ok: true, problems: [] });
  });

  it('a reader opened before the last segment was deleted: verify names the missing durable records', async () => {
    const { dir, files } = await logOf('verify', 40);
    const reader = open(dir, { readOnly: true });
    expect(reader.verify().ok).toBe(true);
    // The reader holds every segment open; what it re-reads is EXTENT, which claims more
    // than a freshly recovered log would hold once a writer's durable records are gone.
    const p = path.join(dir, 'EXTENT');
    const x = readExtent(dir)!;
    const b = fs.readFileSync(p);
    const at = (x.seq % 2) * 4096;
    b.copy(b, at, ((x.seq - 1) % 2) * 4096, ((x.seq - 1) % 2) * 4096 + 64);
    b.writeBigUInt64LE(BigInt(x.seq + 1), at + 32);
    b.writeBigUInt64LE(BigInt(x.durableNext + 5), at + 40);
    b.writeUInt32LE(testing.crc32c(b.subarray(at, at + 60)) >>> 0, at + 60);
    fs.writeFileSync(p, b);
    const v = reader.verify();
    expect(v.ok).toBe(false);
    expect(v.problems).toEqual([expect.objectContaining({ file: files.at(-1), outcome: 'corrupt', message: expect.stringContaining('were durable') })]);
  });
});
