// What an append promises: a batch of any size is one batch (validated whole, written whole
// or not at all, contiguous ids); a resolved append is stored and an index that cannot keep
// up never un-stores it (the lag is reported, and caught up later); a retry with the same
// keys stores nothing twice.
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});
async function store(dir = tmpDir(), options: Parameters<typeof SpanStore.open>[1] = {}): Promise<SpanStore> {
  const s = await SpanStore.open(dir, { durability: 'none', ...options });
  open.push(s);
  return s;
}
const turns = (from: number, n: number, text = (t: number) => `turn ${t} says value ${t * 7}`): TurnInput[] =>
  Array.from({ length: n }, (_, i) => ({ turn: from + i, role: i % 2 ? 'assistant' : 'user', text: text(from + i) }));

describe('appendMany of any size is one batch', () => {
  it('a bad row after row 9,000 of 10,000: nothing written, before or after a reopen', async () => {
    const dir = tmpDir();
    const s = await store(dir);
    await s.append({ turn: 0, role: 'user', text: 'before' });
    const next = s.stats().nextId;
    const batch = turns(1, 10_000);
    (batch[9_000] as { text: unknown }).text = 42;
    await expect(s.appendMany(batch)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(s.stats().nextId).toBe(next);
    expect(s.get(next)).toBeUndefined();
    await s.close();
    const again = await store(dir);
    expect(again.stats().spans.raw).toBe(1);
  });

  it('10,000 turns get contiguous ids; a single append made meanwhile takes an id outside them', async () => {
    const s = await store();
    const [batch, single] = await Promise.all([s.appendMany(turns(1, 10_000)), s.append({ turn: 20_000, role: 'user', text: 'meanwhile' })]);
    expect(batch.length).toBe(10_000);
    for (let i = 1; i < batch.length; i++) expect(batch[i]).toBe(batch[0]! + i);
    expect(single < batch[0]! || single > batch.at(-1)!).toBe(true);
    expect(s.get(single)?.text).toBe('meanwhile');
    expect(s.get(batch[9_999]!)?.text).toBe(turns(10_000, 1)[0]!.text);
  });
});

describe('a resolved append is stored; an index that fails to catch up never un-stores it', () => {
  it('a host embedder that throws: the append resolves, the lag is reported and caught up later, nothing stored twice', async () => {
    const dir = tmpDir();
    let failing = false;
    const embedder = async (texts: string[]) => {
      if (failing) throw new Error('model server unavailable');
      return texts.map((t) => Float32Array.from({ length: 8 }, (_, i) => ((t.charCodeAt(i % t.length) * (i + 1)) % 17) / 17 + 0.01));
    };
    const s = await store(dir, { embedder, dims: 8 });
    await s.appendMany(turns(1, 5));
    failing = true;
    const id = await s.append({ turn: 6, role: 'user', text: 'The staging cluster runs on port 8443.' });
    expect(s.get(id)?.text).toBe('The staging cluster runs on port 8443.');
    expect(s.stats().indexLag).toMatchObject({ index: 'vector', fromId: id, code: 'EMBEDDER_FAILED' });
    const v = s.verdict();
    expect(v.state).toBe('unknown');
    expect(v.trustExactRecall).toBe(false);
    expect(v.reasons.join(' ')).toMatch(/vector index lacks spans from id \d+ on/);
    // Recall still reaches it through the exact and lexical paths.
    expect((await s.search("port 8443")).hits.map((h) => h.spanId)).toContain(id);
    await expect(s.catchUp()).rejects.toMatchObject({ code: 'EMBEDDER_FAILED' });
    failing = false;
    await s.catchUp();
    expect(s.stats().indexLag).toBeNull();
    expect(s.verdict().state).toBe('lossless');
    await s.close();
    const again = await store(dir, { embedder, dims: 8 });
    expect(again.stats().spans.raw).toBe(6);
    expect(again.get(id)?.text).toBe('The staging cluster runs on port 8443.');
  });

  it('an open whose catch-up fails still opens, with the lag reported', async () => {
    const dir = tmpDir();
    let failing = false;
    const embedder = async (texts: string[]) => {
      if (failing) throw new Error('no model');
      return texts.map(() => Float32Array.from({ length: 8 }, (_, i) => i + 1));
    };
    const s = await store(dir, { embedder, dims: 8 });
    await s.appendMany(turns(1, 10));
    failing = true;
    await s.appendMany(turns(11, 10));
    await s.close();
    const again = await store(dir, { embedder, dims: 8 });
    expect(again.stats().indexLag).toMatchObject({ index: 'vector', fromId: 11, code: 'EMBEDDER_FAILED' });
    expect(again.verdict().state).not.toBe('lossless');
    expect(again.get(3)?.text).toBe(turns(3, 1)[0]!.text);
  });
});

describe('a retry with the same keys stores nothing twice', () => {
  it('the same keyed turn again returns its id; after a reopen too', async () => {
    const dir = tmpDir();
    const s = await store(dir);
    const t = { turn: 1, role: 'user', text: 'deploy at 9', key: 'host-turn-1' };
    const id = await s.append(t);
    const next = s.stats().nextId;
    expect(await s.append(t)).toBe(id);
    expect(s.stats().nextId).toBe(next);
    expect(s.get(id)?.meta).toMatchObject({ key: 'host-turn-1' });
    await s.close();
    const again = await store(dir);
    expect(await again.append(t)).toBe(id);
    expect(await again.appendMany([t, { turn: 2, role: 'user', text: 'x', key: 'host-turn-2' }]).catch((e) => e.code)).toBe('INVALID_ARGUMENT');
    expect(await again.append({ turn: 2, role: 'user', text: 'x', key: 'host-turn-2' })).toBe(again.stats().nextId - 1);
  });

  it('a whole keyed batch retried returns the same ids', async () => {
    const s = await store();
    const batch = turns(1, 50).map((t, i) => ({ ...t, key: `k${i}` }));
    const ids = await s.appendMany(batch);
    expect(await s.appendMany(batch)).toEqual(ids);
    expect(s.stats().spans.raw).toBe(50);
  });

  it('a key reused for another turn, a key twice in a batch, or a bad key: INVALID_ARGUMENT, nothing written', async () => {
    const s = await store();
    await s.append({ turn: 1, role: 'user', text: 'one', key: 'a' });
    const next = s.stats().nextId;
    for (const bad of [
      [{ turn: 2, role: 'user', text: 'two', key: 'a' }],
      [{ turn: 2, role: 'user', text: 'two', key: 'b' }, { turn: 3, role: 'user', text: 'three', key: 'b' }],
      [{ turn: 2, role: 'user', text: 'two', key: '' }],
      [{ turn: 2, role: 'user', text: 'two', key: 'x'.repeat(257) }],
      [{ turn: 2, role: 'user', text: 'two', key: 7 as unknown as string }],
    ]) {
      await expect(s.appendMany(bad)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(s.stats().nextId).toBe(next);
    }
  });
});
