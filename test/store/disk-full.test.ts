// A full disk: appends fail typed and leave nothing half-written; a store on a full disk
// opens read-write, reads, searches and closes; the verdict says what the indexes lack.
// Runs on a small tmpfs, which needs root and mount(8): skipped with a message otherwise.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanguardError, SpanStore } from '../../src/index.js';

let mnt: string | null = null;
let why = '';
beforeAll(() => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', dir], { stdio: 'pipe' });
    mnt = dir;
  } catch (e) {
    why = `cannot mount a small tmpfs here (${(e as Error).message.split('\n')[0]}): disk-full tests skipped`;
    console.warn(why);
  }
});
afterAll(() => {
  if (mnt !== null) execFileSync('umount', ['-l', mnt]);
});

/** Fills the file system but for `leave` bytes with a filler file (`name`); returns a way to free it. */
function fill(dir: string, leave = 0, name = 'filler'): () => void {
  const filler = path.join(dir, name);
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) {
      const free = fs.statfsSync(dir).bavail * fs.statfsSync(dir).bsize;
      if (free <= leave) break;
      fs.writeSync(fd, chunk, 0, Math.min(chunk.length, Math.max(4096, free - leave)));
    }
  } catch {
    /* ENOSPC: full */
  } finally {
    fs.closeSync(fd);
  }
  return () => fs.rmSync(filler, { force: true });
}

const text = (i: number) => `turn ${i}: the build cache for shard ${i} lives at /var/cache/build-${i}. ` + 'x'.repeat(6000);

describe('a full disk: appends fail typed, nothing half-written, the store still opens, reads and closes', () => {
  it('fills up, fails typed, keeps every acknowledged turn and no rejected one', async (ctx) => {
    if (mnt === null) return ctx.skip();
    const dir = path.join(mnt, 'store');
    // Room to give back at the end: the store fills the rest.
    const reserve = path.join(mnt, 'reserve');
    fs.writeFileSync(reserve, Buffer.alloc(1024 * 1024, 1));
    const s = await SpanStore.open(dir, { durability: 'sync', segmentBytes: 256 * 1024 });
    const acknowledged: number[] = [];
    let rejected: unknown = null;
    let rejectedTurn = -1;
    for (let i = 1; i < 2000 && rejected === null; i++) {
      try {
        acknowledged.push(await s.append({ turn: i, role: 'user', text: text(i) }));
      } catch (e) {
        rejected = e;
        rejectedTurn = i;
      }
    }
    expect(rejected, 'the disk never filled').not.toBeNull();
    expect(rejected).toBeInstanceOf(SpanguardError);
    expect(['IO_ERROR', 'FSYNC_FAILED']).toContain((rejected as SpanguardError).code);
    // Reads and searches still answer on the full disk.
    expect(s.get(acknowledged[3]!)?.text).toBe(text(4));
    expect((await s.search('/var/cache/build-4')).hits.map((h) => h.spanId)).toContain(acknowledged[3]);
    await s.close();

    // Opened read-write on a disk that is still full: reads, searches and closes.
    const free = fill(mnt);
    const again = await SpanStore.open(dir, { durability: 'sync', segmentBytes: 256 * 1024 });
    for (const [k, id] of acknowledged.entries()) expect(again.get(id)?.text, `span ${id}`).toBe(text(k + 1));
    expect((await again.search('/var/cache/build-7')).hits.map((h) => h.spanId)).toContain(acknowledged[6]);
    // The close on the full disk could not write the index identity, so this open rebuilt
    // the vector index from the log, removing its files (and the log may have taken some of
    // that room as its zero prefill): fill what is left, and append more than a segment,
    // which no prefill holds.
    const freeAgain = fill(mnt, 0, 'filler-2');
    await expect(again.append({ turn: rejectedTurn, role: 'user', text: text(rejectedTurn) + 'y'.repeat(300 * 1024) })).rejects.toBeInstanceOf(SpanguardError);
    await again.close();

    // Space again: the rejected turn was never stored, and appends go on.
    free();
    freeAgain();
    fs.rmSync(reserve);
    const later = await SpanStore.open(dir, { durability: 'sync', segmentBytes: 256 * 1024 });
    const raw = later.stats().spans.raw;
    expect(raw).toBe(acknowledged.length);
    expect((await later.search(`/var/cache/build-${rejectedTurn}`)).hits.filter((h) => later.get(h.spanId)?.text === text(rejectedTurn))).toEqual([]);
    const id = await later.append({ turn: rejectedTurn, role: 'user', text: text(rejectedTurn) });
    expect(later.get(id)?.text).toBe(text(rejectedTurn));
    expect(later.stats().indexLag).toBeNull();
    await later.close();
  });
});
