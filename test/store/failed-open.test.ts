// A failed SpanStore.open releases everything it took — the log's lock, maps, descriptors
// and helper thread, the vector index's lock on vectors.bin and its memory — so the next open
// of the same store in the same process works; a reader's private rebuild directory goes at close.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore, type Embedder, type SpanStoreOptions } from '../../src/index.js';
import { addon } from '../../src/native.js';
import { tmpDir } from '../helpers/data.js';

const DIMS = 8;
/** A deterministic host embedder: letter counts folded into DIMS buckets. */
const embed: Embedder = async (texts) =>
  texts.map((t) => {
    const v = new Float32Array(DIMS);
    for (let i = 0; i < t.length; i++) v[t.charCodeAt(i) % DIMS]! += 1;
    v[0]! += 1;
    return v;
  });

interface Testing {
  setFaults(plan: { failSyncAt?: number }): void;
  clearFaults(): void;
  faultCounters(): { syncs: number };
  background(): { laneThreads: number };
}
/** The addon's I/O seam (io_seam.h): the log's fdatasync calls go through it; and its background threads. */
const testing = (addon() as unknown as { _testing: Testing })._testing;

const open: SpanStore[] = [];
afterEach(async () => {
  testing.clearFaults();
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

const OPTIONS = { durability: 'sync' } as const;

/**
 * A closed store of 40 turns whose lexical index file is then deleted: its next open opens
 * the log and both indexes, rebuilds the lexical one and records an `index-rebuilt` event —
 * an fdatasync of the log after everything was taken. Returns the store and the number of
 * that last sync of its open (measured on a copy).
 */
async function storeWhoseOpenEndsWithASync(turns = 40, options: SpanStoreOptions = OPTIONS, remove = 'lexical.idx'): Promise<{ dir: string; lastSync: number }> {
  const dir = tmpDir();
  const s = await SpanStore.open(dir, OPTIONS);
  await s.appendMany(Array.from({ length: turns }, (_, i) => ({ turn: i + 1, role: 'user', text: `turn ${i + 1}: the build took ${i * 7} seconds` })));
  await s.close();
  fs.rmSync(path.join(dir, 'index', remove), { recursive: true });
  const probe = tmpDir();
  fs.cpSync(dir, probe, { recursive: true });
  testing.setFaults({});
  const p = await SpanStore.open(probe, options);
  const lastSync = testing.faultCounters().syncs;
  testing.clearFaults();
  expect(p.events().some((e) => e.event.type === 'index-rebuilt')).toBe(true);
  await p.close();
  return { dir, lastSync };
}

/** Opens `dir` with its `lastSync`-th fdatasync failing: FSYNC_FAILED after the log and both indexes were opened. */
async function failedOpen(dir: string, lastSync: number, options: SpanStoreOptions = OPTIONS): Promise<void> {
  testing.setFaults({ failSyncAt: lastSync });
  try {
    await expect(SpanStore.open(dir, options)).rejects.toMatchObject({ code: 'FSYNC_FAILED' });
  } finally {
    testing.clearFaults();
  }
}

/**
 * What this process holds: open descriptors, mappings of files under `dir`, threads — but
 * the write lane's (native/napi/background.h): the lane is the environment's, not a store's,
 * and makes a thread when jobs overlap (up to four), keeping it for the environment's life.
 */
function held(dir: string): { fds: number; maps: number; threads: number } {
  return {
    fds: fs.readdirSync('/proc/self/fd').length,
    maps: fs.readFileSync('/proc/self/maps', 'utf8').split('\n').filter((l) => l.includes(dir)).length,
    threads: fs.readdirSync('/proc/self/task').length - testing.background().laneThreads,
  };
}

describe('a failed open releases the locks it took: the next open of the store in this process succeeds', () => {
  it('an fdatasync failing while the open records what it rebuilt: FSYNC_FAILED, then a working open (not LOCKED)', async () => {
    const { dir, lastSync } = await storeWhoseOpenEndsWithASync();
    expect(lastSync).toBeGreaterThan(0);
    await failedOpen(dir, lastSync);
    const s = await SpanStore.open(dir, OPTIONS);
    open.push(s);
    expect(s.findExact('the build took 70 seconds')).toHaveLength(1);
    expect(Number(s.stats().vector.spansRaw)).toBe(40);
  });

  it('a failure after the open started a background catch-up: its jobs on the pool settle first, then everything is released', async () => {
    // Both indexes rebuilt from the log in the background: their catch-up jobs are on the
    // thread pool when the open's last fdatasync fails, and an index being caught up there
    // cannot be closed until its job settles.
    const options = { ...OPTIONS, backgroundCatchUpAbove: 0 };
    const { dir, lastSync } = await storeWhoseOpenEndsWithASync(3000, options, 'vector');
    await failedOpen(dir, lastSync, options);
    const s = await SpanStore.open(dir, OPTIONS);
    open.push(s);
    expect(s.findExact('the build took 70 seconds')).toHaveLength(1);
    expect(Number(s.stats().vector.spansRaw)).toBe(3000);
  }, 60_000);

  it('vectors of another dimension (DIMENSION_MISMATCH at the vector index): the next open with the right dims succeeds', async () => {
    const dir = tmpDir();
    const s = await SpanStore.open(dir, { durability: 'none', embedder: embed, dims: DIMS });
    await s.append({ turn: 1, role: 'user', text: 'one' });
    await s.close();
    await expect(SpanStore.open(dir, { durability: 'none', embedder: embed, dims: DIMS * 2 })).rejects.toMatchObject({ code: 'DIMENSION_MISMATCH' });
    const again = await SpanStore.open(dir, { durability: 'none', embedder: embed, dims: DIMS });
    open.push(again);
    expect(again.get(1)?.text).toBe('one');
  });
});

describe('a failed open leaves no descriptor, mapping or thread behind, nor does an open and close', () => {
  it('the same descriptors, mappings of the store and threads after failed opens, and after an open and close', async () => {
    const { dir, lastSync } = await storeWhoseOpenEndsWithASync();
    // Warm-up: the first open starts process-wide pools (libuv) that stay.
    await failedOpen(dir, lastSync);
    const before = held(dir);
    for (let i = 0; i < 3; i++) await failedOpen(dir, lastSync);
    expect(held(dir)).toEqual(before);
    const s = await SpanStore.open(dir, { durability: 'group' });
    expect(held(dir).maps).toBeGreaterThan(0);
    await s.close();
    expect(held(dir)).toEqual(before);
  });

  it("a reader's private rebuild directory lives while it is open and is removed at close", async () => {
    const { dir } = await storeWhoseOpenEndsWithASync();
    // A vectors.bin whose header fails its check: a reader rebuilds the vector index from
    // the log in a private temporary directory (it may not touch the store's files).
    fs.writeFileSync(path.join(dir, 'index', 'vector', 'vectors.bin'), Buffer.alloc(64, 0x5a));
    const tmp = tmpDir('private-tmp-');
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      const r = await SpanStore.open(dir, { readOnly: true });
      expect(fs.readdirSync(tmp)).toHaveLength(1);
      expect(Number(r.stats().vector.spansRaw)).toBe(40);
      await r.close();
      expect(fs.readdirSync(tmp)).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });
});
