// `none` rolls without waiting for the old segment's fdatasync (docs/FORMAT.md, "Across
// segments"). The new segment's header names the first id not yet durable; after a power
// loss, recovery may lose that id and everything after it — whole segments included — as a
// torn tail, and reports anything else in a sealed segment as corruption.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { durabilities, expectContentUpTo, expectRecovered, openLog, segmentFiles, testing, tmpDir } from './helpers.js';
// @ts-expect-error plain .mjs shared with the child processes
import { columnsFor } from './content.mjs';

afterEach(() => testing.clearFaults());

const SEGMENT_BYTES = 16 * 1024;
const none = { durability: durabilities.none, segmentBytes: SEGMENT_BYTES };

const firstIdOf = (file: string): number => Number(path.basename(file).slice(4, 24));
const unsyncedFrom = (file: string): number => Number(fs.readFileSync(file).readBigUInt64LE(32));

/** Rewrites a segment header's unsynced-from field (and its CRC). */
function setUnsyncedFrom(file: string, id: number): void {
  const b = fs.readFileSync(file);
  b.writeBigUInt64LE(BigInt(id), 32);
  b.writeUInt32LE(testing.crc32c(b.subarray(0, 60)) >>> 0, 60);
  fs.writeFileSync(file, b);
}

/**
 * A `none` log of `batches` batches of 5 spans over several 16 KiB segments, copied as the
 * page cache holds it (as a killed writer leaves it: no close, no checkpoint). `flushAfter`
 * flushes once after that many batches. Returns the copy's directory and its segments.
 */
async function killedNoneLog(tag: string, batches: number, flushAfter = -1): Promise<{ dir: string; files: string[]; next: number }> {
  const live = tmpDir(`unsynced-${tag}-live`);
  const log = openLog(live, none);
  let next = 1;
  for (let b = 0; b < batches; b++) {
    await log.append(columnsFor(next, 5, 0));
    next += 5;
    if (b === flushAfter) await log.flush();
  }
  const dir = tmpDir(`unsynced-${tag}`);
  for (const f of segmentFiles(live)) fs.copyFileSync(f, path.join(dir, path.basename(f)));
  fs.copyFileSync(path.join(live, 'EXTENT'), path.join(dir, 'EXTENT'));
  await log.close();
  return { dir, files: segmentFiles(dir), next };
}

/** Offset of the batch-start record with id `id` in a segment's bytes (batches of 5 from id 1). */
function offsetOfId(file: string, id: number): number {
  const b = fs.readFileSync(file);
  let off = 64;
  for (let at = firstIdOf(file); at < id; at++) off += (64 + b.readUInt32LE(off + 4) + 7) & ~7;
  return off;
}

describe('a none roll stamps the new header with the first id not yet durable', () => {
  it('without a flush every later header names id 1; a writer open syncs them and appends on', async () => {
    const { dir, files, next } = await killedNoneLog('headers', 40);
    expect(files.length).toBeGreaterThanOrEqual(4);
    expect(unsyncedFrom(files[0]!)).toBe(0);
    for (const f of files.slice(1)) expect(unsyncedFrom(f)).toBe(1);
    const log = openLog(dir, none);
    expectContentUpTo(log, next);
    expect(log.stats().recoveries).toEqual([]);
    expect(await log.append(columnsFor(next, 5, 0))).toBe(next);
    expect(log.verify().ok).toBe(true);
    await log.close();
  });
});

describe('records lost in a sealed segment after a none roll are a torn tail: later segments go', () => {
  it('a sealed segment cut mid-record: the cut batch and every later segment are dropped and reported', async () => {
    const { dir, files } = await killedNoneLog('cut', 40);
    const second = files[1]!;
    // Cut segment 2 inside the batch that starts at its 2nd batch boundary.
    const batchStart = Math.ceil(firstIdOf(second) / 5) * 5 + 1 + 5;
    const cutAt = offsetOfId(second, batchStart + 2) + 30;
    fs.truncateSync(second, cutAt);

    const reader = openLog(dir, { ...none, readOnly: true });
    expectContentUpTo(reader, batchStart);
    await reader.close();
    expect(segmentFiles(dir)).toEqual(files); // a reader deletes nothing

    const log = openLog(dir, none);
    expectContentUpTo(log, batchStart);
    const rec = log.stats().recoveries;
    expect(rec[0]).toMatchObject({ file: files[1], offset: offsetOfId(second, batchStart) });
    expect(rec.slice(1).map((r) => r.file)).toEqual(files.slice(2));
    expect(rec.slice(1).every((r) => r.offset === 0 && r.droppedBytes > 0)).toBe(true);
    expect(segmentFiles(dir)).toEqual(files.slice(0, 2));
    // The ids of what was lost are handed out again, and the log goes on.
    expect(await log.append(columnsFor(batchStart, 5, 0))).toBe(batchStart);
    await log.close();
    const again = openLog(dir, none);
    expect(again.stats().recoveries).toEqual([]);
    expectContentUpTo(again, batchStart + 5);
    expect(again.verify().ok).toBe(true);
    await again.close();
  });

  it('the same cut is corruption when a later header says the segment was durable (unsynced from 0)', async () => {
    const { dir, files } = await killedNoneLog('cut-synced', 40);
    for (const f of files.slice(2)) setUnsyncedFrom(f, 0);
    fs.truncateSync(files[1]!, offsetOfId(files[1]!, firstIdOf(files[2]!) - 3) + 30);
    for (const readOnly of [false, true]) {
      expect(() => openLog(dir, { ...none, readOnly })).toThrowError(
        expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ file: files[1] }) }),
      );
    }
    expect(segmentFiles(dir)).toEqual(files);
  });

  it('the same cut is corruption when a later header names an id after the lost ones', async () => {
    const { dir, files } = await killedNoneLog('cut-later', 40);
    const lost = firstIdOf(files[2]!) - 3;
    // Segment 3 claims that everything before its own first id was durable at its creation.
    setUnsyncedFrom(files[2]!, firstIdOf(files[2]!));
    fs.truncateSync(files[1]!, offsetOfId(files[1]!, lost) + 30);
    expect(() => openLog(dir, none)).toThrowError(expect.objectContaining({ code: 'CORRUPT' }));
  });

  it('the same cut is corruption when a later segment holds a record written after a flush', async () => {
    // The flush made segment 2 durable; segment 3's records written after it stamp its synced end.
    const { dir, files } = await killedNoneLog('cut-flushed', 40, 30);
    const flushedIn = files.findIndex((f, i) => i + 1 === files.length || firstIdOf(files[i + 1]!) > 155);
    expect(flushedIn).toBeLessThan(files.length - 1);
    const victim = files[flushedIn - 1]!;
    fs.truncateSync(victim, offsetOfId(victim, firstIdOf(files[flushedIn]!) - 3) + 30);
    expect(() => openLog(dir, none)).toThrowError(expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ file: victim }) }));
  });
});

describe('a sealed segment whole but for zeros past its records keeps every segment after it', () => {
  it('a none roll\'s cut that never reached the disk: the zeros are cut, nothing is lost', async () => {
    const { dir, files, next } = await killedNoneLog('zeros', 40);
    fs.appendFileSync(files[1]!, Buffer.alloc(8192));
    const log = openLog(dir, none);
    expectContentUpTo(log, next);
    expect(log.stats().recoveries).toEqual([expect.objectContaining({ file: files[1], droppedBytes: 8192, zerosOnly: true })]);
    expect(segmentFiles(dir)).toEqual(files);
    await log.close();
  });

  it('after a synced roll (unsynced from 0) the same zeros are corruption', async () => {
    const { dir, files } = await killedNoneLog('zeros-synced', 40);
    setUnsyncedFrom(files[2]!, 0);
    fs.appendFileSync(files[1]!, Buffer.alloc(8192));
    expect(() => openLog(dir, none)).toThrowError(expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ file: files[1] }) }));
  });

  it("non-zero bytes no record vouches for (a failed write's cut that never reached the disk) are cut too", async () => {
    const { dir, files, next } = await killedNoneLog('junk', 40);
    fs.appendFileSync(files[1]!, Buffer.alloc(100, 7));
    const log = openLog(dir, none);
    expectContentUpTo(log, next);
    expect(log.stats().recoveries).toEqual([expect.objectContaining({ file: files[1], droppedBytes: 100, zerosOnly: false })]);
    await log.close();
  });

  it('after a later checkpoint (a flush that synced the cut) the same bytes are corruption', async () => {
    const { dir, files } = await killedNoneLog('junk-flushed', 40, 39);
    fs.appendFileSync(files[1]!, Buffer.alloc(100, 7));
    expect(() => openLog(dir, none)).toThrowError(expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ file: files[1] }) }));
  });

  it('after a synced roll the same bytes are corruption', async () => {
    const { dir, files } = await killedNoneLog('junk-synced', 40);
    setUnsyncedFrom(files[2]!, 0);
    fs.appendFileSync(files[1]!, Buffer.alloc(100, 7));
    expect(() => openLog(dir, none)).toThrowError(expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ file: files[1] }) }));
  });
});

describe('once every sealed segment is durable, a checkpoint makes damage in them corruption again', () => {
  const flipInSealed = (files: string[]): string => {
    const victim = files[1]!;
    const b = fs.readFileSync(victim);
    b[offsetOfId(victim, firstIdOf(victim) + 2) + 70]! ^= 0x10;
    fs.writeFileSync(victim, b);
    return victim;
  };

  it('flush() after a roll writes one, even with nothing appended after it', async () => {
    const { dir, files } = await killedNoneLog('mark-flush', 40, 39);
    const victim = flipInSealed(files);
    expect(() => openLog(dir, none)).toThrowError(expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ file: victim }) }));
  });

  it("a writer's open of a killed none log writes one, even if that session appends nothing", async () => {
    const { dir, files } = await killedNoneLog('mark-open', 40);
    await openLog(dir, none).close();
    const victim = flipInSealed(files);
    expect(() => openLog(dir, none)).toThrowError(expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ file: victim }) }));
  });

  it("a writer's open on a full disk goes on without it; its close writes it", async () => {
    const { dir, files, next } = await killedNoneLog('mark-enospc', 40);
    testing.setFaults({ failWriteAt: 1 });
    const log = openLog(dir, none);
    expect(log.nextId()).toBe(next);
    testing.clearFaults();
    await log.close();
    const victim = flipInSealed(files);
    expect(() => openLog(dir, none)).toThrowError(expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ file: victim }) }));
  });

  it('without one (a killed writer, nothing flushed) the same flip is a torn tail', async () => {
    const { dir, files } = await killedNoneLog('mark-none', 40);
    const victim = flipInSealed(files);
    const log = openLog(dir, none);
    expect(log.nextId()).toBeLessThan(firstIdOf(files[2]!));
    expect(log.stats().recoveries[0]).toMatchObject({ file: victim });
    await log.close();
  });
});

describe('a roll right after a flush has nothing unsynced but its cut: it syncs the old segment and stamps 0', () => {
  it('one more fdatasync at that roll; the new header says every record before it was durable', async () => {
    const dir = tmpDir('unsynced-flushed-roll');
    const log = openLog(dir, none);
    testing.setFaults({});
    let rolls = 0;
    for (let id = 1; rolls < 3; id++) {
      await log.flush();
      const before = { syncs: testing.faultCounters().syncs, segments: segmentFiles(dir).length };
      await log.append(columnsFor(id, 1, 0));
      if (segmentFiles(dir).length === before.segments) continue;
      rolls++;
      // The old segment (its cut of reserved blocks), the new header, the directory.
      expect(testing.faultCounters().syncs - before.syncs).toBe(3);
    }
    for (const f of segmentFiles(dir)) expect(unsyncedFrom(f)).toBe(0);
    await log.close();
  });
});

describe('readers stop before a torn tail of segments no writer has recovered yet', () => {
  it('a read-only open and its refresh() see the log up to the lost records; then a writer recovers', async () => {
    const { dir, files } = await killedNoneLog('reader', 40);
    const lost = firstIdOf(files[2]!) - 3;
    fs.truncateSync(files[1]!, offsetOfId(files[1]!, lost) + 30);
    const reader = openLog(dir, { ...none, readOnly: true });
    const seen = reader.nextId();
    expect(seen).toBeLessThanOrEqual(lost);
    expect(reader.refresh()).toBe(seen);
    expect(reader.verify().ok).toBe(true);
    const writer = openLog(dir, none);
    expect(writer.nextId()).toBe(seen);
    expect(await writer.append(columnsFor(seen, 5, 0))).toBe(seen);
    expect(reader.refresh()).toBe(seen + 5);
    expectContentUpTo(reader, seen + 5);
    await writer.close();
    await reader.close();
  });
});

describe('a header whose unsynced-from id is past its own first id is corruption', () => {
  it('refused at open, naming the segment at offset 0', async () => {
    const { dir, files } = await killedNoneLog('bad-header', 20);
    setUnsyncedFrom(files[1]!, firstIdOf(files[1]!) + 1);
    expect(() => openLog(dir, none)).toThrowError(
      expect.objectContaining({ code: 'CORRUPT', details: expect.objectContaining({ file: files[1], offset: 0 }) }),
    );
  });
});

describe('power loss at any sync of a none log keeps every flushed record and no damaged one', () => {
  it('60 crashes over rolls and flushes: dropped, reordered and garbled unsynced sectors in every file', async () => {
    let crashes = 0;
    let segmentsDropped = 0;
    for (let trial = 0; trial < 60; trial++) {
      const seed = trial * 37 + 3;
      let rnd = seed;
      const rand = (n: number) => ((rnd = (rnd * 1103515245 + 12345) >>> 0) >>> 16) % n;
      const dir = tmpDir('unsynced-power');
      const log = openLog(dir, none);
      const mix = [
        { drop: 0.6, garble: 0.1 },
        { drop: 0.1, garble: 0.6 },
        { drop: 0.2, garble: 0.2 },
      ][trial % 3]!;
      // Syncs here: two per roll (header, directory), one per file at each flush.
      testing.setFaults({ crashAtSync: 2 + rand(30), seed, ...mix });
      let flushed = 0;
      let next = 1;
      try {
        for (let b = 0; b < 120 && !testing.faultCounters().crashed; b++) {
          const n = 1 + rand(6);
          expect(await log.append(columnsFor(next, n, 0))).toBe(next);
          next += n;
          if (rand(8) === 0) {
            await log.flush();
            flushed = next - 1;
          }
        }
      } catch (e) {
        expect((e as { code: string }).code).toMatch(/^(FSYNC_FAILED|IO_ERROR)$/);
      }
      if (testing.faultCounters().crashed) crashes++;
      await log.close().catch(() => undefined);
      testing.clearFaults();

      const before = segmentFiles(dir).length;
      await expectRecovered(dir, none, flushed, `trial ${trial}`);
      segmentsDropped += before - segmentFiles(dir).length;
    }
    // The campaign must really crash and really lose whole segments to recover from.
    expect(crashes).toBeGreaterThan(50);
    expect(segmentsDropped).toBeGreaterThan(10);
  }, 60_000);
});
