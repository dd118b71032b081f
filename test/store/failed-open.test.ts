// A failed SpanStore.open releases everything it took — the log's lock, maps, descriptors
// and helper thread, the vector index's lock on vectors.bin and its memory, a reader's
// private rebuild directory — so the next open of the same store in the same process works.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore, type Embedder } from '../../src/index.js';
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
const failing: Embedder = async () => {
  throw new Error('embedding service unavailable');
};

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

/** A closed store of 40 turns embedded by the host embedder, then its vector files removed: the next open must embed them all again. */
async function storeNeedingEmbeds(): Promise<string> {
  const dir = tmpDir();
  const s = await SpanStore.open(dir, { durability: 'none', embedder: embed, dims: DIMS });
  await s.appendMany(Array.from({ length: 40 }, (_, i) => ({ turn: i + 1, role: 'user', text: `turn ${i + 1}: the build took ${i * 7} seconds` })));
  await s.close();
  for (const f of fs.readdirSync(path.join(dir, 'index', 'vector'))) fs.rmSync(path.join(dir, 'index', 'vector', f));
  return dir;
}

/** What this process holds: open descriptors, mappings of files under `dir`, threads. */
function held(dir: string): { fds: number; maps: number; threads: number } {
  return {
    fds: fs.readdirSync('/proc/self/fd').length,
    maps: fs.readFileSync('/proc/self/maps', 'utf8').split('\n').filter((l) => l.includes(dir)).length,
    threads: fs.readdirSync('/proc/self/task').length,
  };
}

describe('a failed open releases the locks it took: the next open of the store in this process succeeds', () => {
  it('a host embedder failing during the open-time catch-up: EMBEDDER_FAILED, then a working open (not LOCKED)', async () => {
    const dir = await storeNeedingEmbeds();
    await expect(SpanStore.open(dir, { durability: 'none', embedder: failing, dims: DIMS })).rejects.toMatchObject({ code: 'EMBEDDER_FAILED' });
    const s = await SpanStore.open(dir, { durability: 'none', embedder: embed, dims: DIMS });
    open.push(s);
    expect(Number(s.stats().vector.spansRaw)).toBe(40);
    expect(s.findExact('the build took 70 seconds')).toHaveLength(1);
  });

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
  it('the same descriptors, mappings of the store and threads after a failed open, and after an open and close', async () => {
    const dir = await storeNeedingEmbeds();
    // Warm-up: the first open starts process-wide pools (libuv) that stay.
    await expect(SpanStore.open(dir, { durability: 'none', embedder: failing, dims: DIMS })).rejects.toMatchObject({ code: 'EMBEDDER_FAILED' });
    const before = held(dir);
    for (let i = 0; i < 3; i++)
      await expect(SpanStore.open(dir, { durability: 'none', embedder: failing, dims: DIMS })).rejects.toMatchObject({ code: 'EMBEDDER_FAILED' });
    expect(held(dir)).toEqual(before);
    const s = await SpanStore.open(dir, { durability: 'group', embedder: embed, dims: DIMS });
    expect(held(dir).maps).toBeGreaterThan(0);
    await s.close();
    expect(held(dir)).toEqual(before);
  });

  it("a reader's private rebuild directory is removed when its open fails", async () => {
    const dir = await storeNeedingEmbeds();
    // A vectors.bin whose header fails its check: a reader rebuilds the vector index from
    // the log in a private temporary directory, with the host embedder, which fails here.
    fs.writeFileSync(path.join(dir, 'index', 'vector', 'vectors.bin'), Buffer.alloc(64, 0x5a));
    const tmp = tmpDir('private-tmp-');
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      await expect(SpanStore.open(dir, { readOnly: true, embedder: failing, dims: DIMS })).rejects.toMatchObject({ code: 'EMBEDDER_FAILED' });
      expect(fs.readdirSync(tmp)).toEqual([]);
      const r = await SpanStore.open(dir, { readOnly: true, embedder: embed, dims: DIMS });
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
