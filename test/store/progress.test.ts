// Every long store operation reports its progress through one callback (onProgress,
// StoreProgress): catch-up jobs, an index's rebuild from the log at open, repair, checkpoint
// and close, each from `start` to `end` (catch-up: its jobs), the jobs in onCatchUp's shape.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore, type SpanStoreOptions } from '../../src/index.js';
import type { CatchUpProgress } from '../../src/catchup.js';
import type { StoreProgress } from '../../src/store/types.js';
import { tmpDir } from '../helpers/data.js';

const SPANS = 600;
const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});
async function openStore(dir: string, options: SpanStoreOptions = {}): Promise<SpanStore> {
  const s = await SpanStore.open(dir, { durability: 'none', ...options });
  open.push(s);
  return s;
}
/** A store of SPANS turns in `dir`, closed. */
async function filled(dir = tmpDir()): Promise<string> {
  const s = await SpanStore.open(dir, { durability: 'none' });
  await s.appendMany(Array.from({ length: SPANS }, (_, i) => ({ turn: i, role: 'tool', text: `turn ${i}: the build step ${i * 7} took ${i % 90} ms on worker w${i % 13}` })));
  await s.close();
  return dir;
}
const phases = (events: StoreProgress[], operation: StoreProgress['operation']) => events.filter((e) => e.operation === operation && e.phase !== 'index').map((e) => e.phase);

describe('open', () => {
  it('start, log, load, replay, end; a rebuild it runs reports inside them', async () => {
    const dir = await filled();
    fs.rmSync(path.join(dir, 'index'), { recursive: true, force: true });
    const events: StoreProgress[] = [];
    await openStore(dir, { backgroundCatchUpAbove: Infinity, onProgress: (p) => events.push(p) });
    expect(phases(events, 'open')).toEqual(['start', 'log', 'load', 'replay', 'end']);
    const at = (op: StoreProgress['operation'], phase: StoreProgress['phase']) => events.findIndex((e) => e.operation === op && e.phase === phase);
    expect(at('rebuild', 'start')).toBeGreaterThan(at('open', 'replay'));
    expect(events.findLastIndex((e) => e.operation === 'rebuild')).toBeLessThan(at('open', 'end'));
  });

  it('an open that fails still reports its end', async () => {
    const dir = await filled();
    const holder = await openStore(dir);
    const events: StoreProgress[] = [];
    await expect(SpanStore.open(dir, { onProgress: (p) => events.push(p) })).rejects.toMatchObject({ code: 'LOCKED' });
    expect(phases(events, 'open')).toEqual(['start', 'end']);
    await holder.close();
  });
});

describe('catch-up jobs', () => {
  it('are reported as catch-up `index` events carrying what onCatchUp receives', async () => {
    const events: StoreProgress[] = [];
    const jobs: CatchUpProgress[] = [];
    const store = await openStore(tmpDir(), { onProgress: (p) => events.push(p), onCatchUp: (p) => jobs.push(p) });
    await store.appendMany([1, 2, 3].map((turn) => ({ turn, role: 'user', text: `turn ${turn} names the okapi` })));
    expect(jobs.length).toBeGreaterThan(0);
    expect(events.filter((e) => e.operation !== 'open')).toEqual(jobs.map((j) => ({ operation: 'catch-up', phase: 'index', ...j })));
  });
});

describe('an index rebuilt from the log at open', () => {
  it('reports rebuild start, its jobs and end, per index, the end once the index reaches the log', async () => {
    const dir = await filled();
    fs.rmSync(path.join(dir, 'index'), { recursive: true, force: true });
    const events: StoreProgress[] = [];
    const store = await openStore(dir, { backgroundCatchUpAbove: Infinity, onProgress: (p) => events.push(p) });
    const next = store.log.nextId();
    for (const index of ['lexical', 'vector'] as const) {
      const mine = events.filter((e) => e.operation === 'rebuild' && e.index === index);
      expect(mine[0]).toEqual({ operation: 'rebuild', phase: 'start', index });
      expect(mine.at(-1)).toEqual({ operation: 'rebuild', phase: 'end', index });
      const jobs = mine.slice(1, -1);
      expect(jobs.length).toBeGreaterThan(0);
      for (const j of jobs) expect(j).toMatchObject({ phase: 'index', highWater: expect.any(Number), nextId: expect.any(Number) });
      expect(jobs.at(-1)!.highWater).toBe(next);
    }
    // Every job of the open was the rebuild's.
    expect(events.filter((e) => e.operation === 'catch-up')).toEqual([]);
  });

  it('a rebuild left to the background ends after open resolves, when catchUp() has waited for it', async () => {
    const dir = await filled();
    fs.rmSync(path.join(dir, 'index'), { recursive: true, force: true });
    const events: StoreProgress[] = [];
    const store = await openStore(dir, { backgroundCatchUpAbove: 10, onProgress: (p) => events.push(p) });
    await store.catchUp();
    expect(phases(events, 'rebuild').sort()).toEqual(['end', 'end', 'start', 'start']);
    expect(phases(events, 'rebuild').slice(0, 2)).toEqual(['start', 'start']);
    expect(await store.verifyIndexes()).toEqual([]);
  });

  it('an index file found missing (recorded as index-rebuilt) is that index\'s rebuild alone', async () => {
    const dir = await filled();
    fs.rmSync(path.join(dir, 'index', 'lexical.idx'));
    const events: StoreProgress[] = [];
    const store = await openStore(dir, { backgroundCatchUpAbove: Infinity, onProgress: (p) => events.push(p) });
    expect(store.events().some((e) => e.event.type === 'index-rebuilt')).toBe(true);
    const rebuild = events.filter((e) => e.operation === 'rebuild');
    expect(rebuild[0]).toEqual({ operation: 'rebuild', phase: 'start', index: 'lexical' });
    expect(rebuild.at(-1)).toEqual({ operation: 'rebuild', phase: 'end', index: 'lexical' });
    const last = rebuild.at(-2)!;
    expect(last).toMatchObject({ phase: 'index', index: 'lexical' });
    expect(last.highWater).toBe(last.nextId);
    expect(rebuild.filter((e) => e.index !== 'lexical')).toEqual([]);
  });

  it('an open that rebuilds nothing reports no rebuild', async () => {
    const dir = await filled();
    const events: StoreProgress[] = [];
    await openStore(dir, { onProgress: (p) => events.push(p) });
    expect(events.filter((e) => e.operation === 'rebuild')).toEqual([]);
  });
});

describe('repair, checkpoint and close', () => {
  it('repair: start, its rebuild jobs (both indexes to the log end), audit, end', async () => {
    const events: StoreProgress[] = [];
    const store = await openStore(await filled(), { onProgress: (p) => events.push(p) });
    const next = store.log.nextId();
    await store.repair();
    const mine = events.filter((e) => e.operation === 'repair');
    expect(mine[0]).toEqual({ operation: 'repair', phase: 'start' });
    expect(mine.slice(-2)).toEqual([
      { operation: 'repair', phase: 'audit' },
      { operation: 'repair', phase: 'end' },
    ]);
    const jobs = mine.slice(1, -2);
    for (const j of jobs) expect(j.phase).toBe('index');
    for (const index of ['lexical', 'vector'] as const) expect(jobs.filter((j) => j.index === index).at(-1)!.highWater).toBe(next);
  });

  it('checkpoint: start, flush, save, end', async () => {
    const events: StoreProgress[] = [];
    const store = await openStore(await filled(), { onProgress: (p) => events.push(p) });
    await store.append({ turn: SPANS, role: 'user', text: 'one more turn to save' });
    events.length = 0;
    await store.checkpoint();
    expect(events).toEqual(['start', 'flush', 'save', 'end'].map((phase) => ({ operation: 'checkpoint', phase })));
  });

  it('close: start, flush, save, release, end, once; a reader: start, release, end', async () => {
    const dir = await filled();
    const events: StoreProgress[] = [];
    const store = await openStore(dir, { onProgress: (p) => events.push(p) });
    await store.close();
    await store.close();
    expect(events.filter((e) => e.operation === 'close')).toEqual(['start', 'flush', 'save', 'release', 'end'].map((phase) => ({ operation: 'close', phase })));
    events.length = 0;
    const reader = await openStore(dir, { readOnly: true, onProgress: (p) => events.push(p) });
    await reader.close();
    expect(events.filter((e) => e.operation === 'close')).toEqual(['start', 'release', 'end'].map((phase) => ({ operation: 'close', phase })));
  });

  it('a checkpoint that fails still reports its end', async () => {
    const events: StoreProgress[] = [];
    const store = await openStore(await filled(), { onProgress: (p) => events.push(p) });
    const failing = new Error('disk gone');
    (store as unknown as { indexes: { save(): Promise<void> } }).indexes.save = () => Promise.reject(failing);
    await expect(store.checkpoint()).rejects.toBe(failing);
    expect(phases(events, 'checkpoint')).toEqual(['start', 'flush', 'save', 'end']);
  });
});

describe('the listener', () => {
  it('one that throws stops no operation', async () => {
    const dir = await filled();
    fs.rmSync(path.join(dir, 'index'), { recursive: true, force: true });
    let calls = 0;
    const onProgress = () => {
      calls++;
      throw new Error('the host listener failed');
    };
    const store = await openStore(dir, { backgroundCatchUpAbove: Infinity, onProgress });
    const id = await store.append({ turn: SPANS, role: 'user', text: 'appended under a throwing listener: wombat' });
    await store.checkpoint();
    await store.repair();
    expect(store.findExact('wombat').map((h) => h.spanId)).toEqual([id]);
    expect(await store.verifyIndexes()).toEqual([]);
    await store.close();
    expect(calls).toBeGreaterThan(10);
    const again = await openStore(dir, { backgroundCatchUpAbove: Infinity });
    expect(again.stats().indexLag).toBeNull();
  });

  it('is a function or absent', async () => {
    await expect(SpanStore.open(tmpDir(), { onProgress: 5 as unknown as () => void })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: 'onProgress must be a function' });
  });
});
