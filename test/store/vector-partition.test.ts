// vectorPartitionAbove: a store whose vectors of a kind reach it partitions its vector index at
// the next checkpoint (docs/VECTOR_FORMAT.md, "Partitions"), and searches it as before; without
// the option the index is never partitioned; a malformed value is refused before anything is
// created.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';

/** `n` turns of distinct made-up sentences: a quote of turn i finds turn i. */
function turns(n: number): { turn: number; role: 'user' | 'assistant'; text: string }[] {
  let seed = 7;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
  const words = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}${'xyz'[i % 3]}`);
  return Array.from({ length: n }, (_, i) => ({
    turn: i + 1,
    role: i % 2 ? 'assistant' : 'user',
    text: `turn ${i}: ${Array.from({ length: 14 }, () => words[Math.floor(rand() * words.length)]).join(' ')}`,
  }));
}

async function filled(dir: string, options: Record<string, unknown>) {
  const store = await SpanStore.open(dir, options);
  const ts = turns(3000);
  await store.appendMany(ts);
  await store.checkpoint();
  return { store, ts };
}

describe('vectorPartitionAbove: the vector index is partitioned from that many vectors on', () => {
  it('partitions at the checkpoint, and a quote still finds its span', async () => {
    const dir = tmpDir();
    const { store, ts } = await filled(dir, { vectorPartitionAbove: 2048 });
    expect(Number(store.stats().vector.listsRaw)).toBeGreaterThan(0);
    expect(Number(store.stats().vector.partitionAbove)).toBe(2048);
    const quote = ts[1234]!.text.slice(10, 80);
    const hits = await store.search(quote, { k: 5 });
    expect(hits.hits[0]?.text).toBe(ts[1234]!.text);
    await store.close();
    // Reopened without the option: still partitioned, from its snapshot.
    const again = await SpanStore.open(dir);
    expect(Number(again.stats().vector.listsRaw)).toBeGreaterThan(0);
    await again.close();
  });

  it('without it the index is never partitioned', async () => {
    const { store } = await filled(tmpDir(), {});
    expect(Number(store.stats().vector.listsRaw)).toBe(0);
    await store.close();
  });

  it('a value below 64, not an integer, or not a number is INVALID_OPTIONS, and nothing is created', async () => {
    for (const v of [63, 100.5, '4096', -Infinity, Number.NaN]) {
      const dir = path.join(tmpDir(), 'never');
      await expect(SpanStore.open(dir, { vectorPartitionAbove: v as never })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
      expect(fs.existsSync(dir)).toBe(false);
    }
  });
});
