// What each durability mode promises, observed through the I/O seam's sync counter.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { columns, durabilities, openLog, rowsFor, segmentFiles, testing, tmpDir } from './helpers.js';

afterEach(() => testing.clearFaults());

const killChild = path.join(path.dirname(fileURLToPath(import.meta.url)), 'kill-child.mjs');

describe('sync: every append is fdatasynced before its promise settles', () => {
  it('one fdatasync per append, done by the time append returns', async () => {
    const log = openLog(tmpDir('dur-sync'), { durability: durabilities.sync });
    testing.setFaults({});
    for (let i = 0; i < 5; i++) {
      const p = log.append(columns(rowsFor(i, 1)));
      expect(testing.faultCounters().syncs).toBe(i + 1);
      await p;
    }
    await log.close();
  });
});

describe('group: concurrent appends share one fdatasync, each resolves once durable', () => {
  it('64 concurrent appends, at most 2 fdatasyncs, none resolved before a sync', async () => {
    const log = openLog(tmpDir('dur-group'), { durability: durabilities.group });
    testing.setFaults({});
    let resolvedBeforeSync = false;
    const all = Array.from({ length: 64 }, (_, i) =>
      log.append(columns(rowsFor(i, 1))).then((id) => {
        if (testing.faultCounters().syncs === 0) resolvedBeforeSync = true;
        return id;
      }),
    );
    expect(testing.faultCounters().syncs).toBe(0); // written, not yet durable
    expect(log.get(64)?.text).toBe(rowsFor(63, 1)[0]!.text); // but readable already
    const ids = await Promise.all(all);
    expect(ids).toEqual(Array.from({ length: 64 }, (_, i) => i + 1));
    expect(resolvedBeforeSync).toBe(false);
    expect(testing.faultCounters().syncs).toBeLessThanOrEqual(2);
    await log.close();
  });
});

describe('none: appends only reach the page cache; flush() and close() make them durable', () => {
  it('no fdatasync on append; flush syncs; close syncs and writes the checkpoint', async () => {
    const dir = tmpDir('dur-none');
    const log = openLog(dir, { durability: durabilities.none });
    testing.setFaults({});
    await log.append(columns(rowsFor(0, 100)));
    expect(testing.faultCounters().syncs).toBe(0);
    await log.flush();
    expect(testing.faultCounters().syncs).toBe(1);
    await log.flush(); // nothing new: no sync
    expect(testing.faultCounters().syncs).toBe(1);
    await log.append(columns(rowsFor(100, 1)));
    await log.close();
    expect(testing.faultCounters().syncs).toBeGreaterThanOrEqual(2);
    testing.clearFaults();
    // Files are private to the owner.
    for (const f of [...segmentFiles(dir), `${dir}/LOCK`]) expect(fs.statSync(f).mode & 0o777).toBe(0o600);
  });
});

describe('none: a roll does not wait for the old segment; flush() and close() sync it', () => {
  const unsyncedFrom = (file: string): number => Number(fs.readFileSync(file).readBigUInt64LE(32));

  it("a roll syncs only the new segment's header and the directory; its header names the first id not yet durable", async () => {
    const dir = tmpDir('dur-none-roll');
    const log = openLog(dir, { durability: durabilities.none, segmentBytes: 6 << 20 });
    testing.setFaults({});
    const big = 'w'.repeat(64 << 10);
    const n = 240; // ~15 MiB: two rolls
    for (let i = 0; i < n; i += 8) {
      await log.append(columns(Array.from({ length: 8 }, (_, k) => ({ turnStart: i + k, text: `${i + k}:${big}` }))));
      if (i === 120) {
        // Durable up to here: the next roll's header names the first id after it.
        await log.flush();
      }
    }
    const files = segmentFiles(dir);
    expect(files.length).toBe(3);
    const first = files.map((f) => Number(path.basename(f).slice(4, 24)));
    // Two rolls × (the new header's fdatasync + the directory's fsync), one flush of two files.
    expect(testing.faultCounters().syncs).toBe(2 * 2 + 2);
    expect(unsyncedFrom(files[0]!)).toBe(0);
    expect(unsyncedFrom(files[1]!)).toBe(1); // nothing was durable when segment 2 began
    expect(first[1]!).toBeLessThanOrEqual(129);
    expect(unsyncedFrom(files[2]!)).toBe(129); // the flush covered ids 1..128
    for (const id of [1, 80, 81, 160, 161, n]) expect(log.get(id)?.text).toBe(`${id - 1}:${big}`);
    const before = testing.faultCounters().syncs;
    await log.close();
    // Close: the sealed segment 2 (segment 1 was flushed), the last one, and its checkpoint.
    expect(testing.faultCounters().syncs - before).toBe(3);
    testing.clearFaults();
    const again = openLog(dir, { durability: durabilities.none, segmentBytes: 6 << 20 });
    expect(again.nextId()).toBe(n + 1);
    expect(again.stats().recoveries).toEqual([]);
    expect(again.verify().ok).toBe(true);
    await again.close();
  });
});

describe('none: blocks reserved ahead of the writes are given back at each roll and at close', () => {
  const allocated = (f: string): number => fs.statSync(f).blocks * 512;
  const pageUp = (n: number): number => Math.ceil(n / 4096) * 4096;

  it('sealed and closed segments hold the blocks of their bytes and no more', async () => {
    const dir = tmpDir('dur-none-prealloc');
    const log = openLog(dir, { durability: durabilities.none, segmentBytes: 3 << 20 });
    const text = 'p'.repeat(60 << 10);
    for (let i = 0; i < 80; i += 4) {
      await log.append(columns(Array.from({ length: 4 }, (_, k) => ({ turnStart: i + k, text }))));
    }
    const files = segmentFiles(dir);
    expect(files.length).toBe(2);
    // While open, the last segment holds blocks reserved past its end (fallocate, KEEP_SIZE).
    const last = files[1]!;
    expect(allocated(last)).toBeGreaterThan(pageUp(fs.statSync(last).size));
    // The sealed one gave them back at its roll.
    expect(allocated(files[0]!)).toBeLessThanOrEqual(pageUp(fs.statSync(files[0]!).size));
    await log.close();
    for (const f of files) expect(allocated(f)).toBeLessThanOrEqual(pageUp(fs.statSync(f).size));
    const again = openLog(dir, { durability: durabilities.none, segmentBytes: 3 << 20 });
    expect(again.nextId()).toBe(81);
    expect(again.stats().recoveries).toEqual([]);
    await again.close();
  });

  it("a killed writer's reserved blocks are given back by the next writer's close, even with nothing appended", async () => {
    const dir = tmpDir('dur-none-prealloc-kill');
    const child = spawn(process.execPath, [killChild, dir, 'none', '7', String(64 << 20)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => (out += d));
    const exited = new Promise((r) => child.on('exit', r));
    while (!out.includes('ack ')) await new Promise((r) => setTimeout(r, 2));
    child.kill('SIGKILL');
    await exited;
    const [file] = segmentFiles(dir);
    // The page cache survives the kill: every acknowledged record is there, and so are the
    // blocks reserved past the end.
    expect(allocated(file!)).toBeGreaterThan(pageUp(fs.statSync(file!).size));
    const again = openLog(dir, { durability: durabilities.none });
    expect(again.nextId()).toBeGreaterThan(1);
    await again.close();
    expect(allocated(file!)).toBeLessThanOrEqual(pageUp(fs.statSync(file!).size));
  });
});
