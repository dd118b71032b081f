// searchTake: the hits of a searchAsync still in flight, had on the JS thread when the read lane
// has finished the search, or run there when the lane has not started it and the namespace is
// small; the promise settles with the same hits either way. A busy lane is made with the
// addon's testing seam (poolSleep(ms, 'read'): jobs that hold every read-lane thread), so "not
// started" is a fact of the test, not a race it hopes to win.
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { addon } from '../../src/native.js';
import { realTurns, tmpDir as storeDir } from '../helpers/data.js';
import { filledBinary, nearQueries, plainHits, row } from './helpers.js';

const testing = (addon() as unknown as { _testing: { poolSleep(ms: number, lane?: 'read'): Promise<void>; background(): { jobs: number } } })._testing;
const RAW = 1;
const dims = 32;
/** Most threads the read lane makes (napi/background.h ThreadLane::kMaxThreads). */
const LANE = 4;

const filled = (tag: string, n = 3000) => filledBinary(tag, dims, n);
const plain = plainHits;

/** A filled index, one query near its rows, and what search answers for it. */
function oneQuery(tag: string) {
  const { ix, m } = filled(tag);
  const qv = row(nearQueries(m, dims, 1, 0.2, 3), 0, dims);
  return { ix, qv, want: plain(ix.search(qv, 10, RAW)) };
}

/**
 * Every read-lane thread held for `ms`, and as many sleepers queued behind them: a search queued
 * after this call is not started before 2 × `ms`.
 */
async function holdLane(ms: number): Promise<void> {
  await Promise.all(Array.from({ length: LANE * 2 }, () => testing.poolSleep(ms, 'read')));
}

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

describe('searchTake: a search the read lane has finished is had without waiting for its completion', () => {
  it('returns the hits search returns, and the promise settles with the same', async () => {
    const { ix, m } = filled('take-done');
    const qs = nearQueries(m, dims, 20, 0.2, 3);
    for (let q = 0; q < 20; q++) {
      const qv = row(qs, q, dims);
      const want = plain(ix.search(qv, 10, RAW));
      const p = ix.searchAsync(qv, 10, RAW);
      // stealRows 0: never run here; a second of spin: waits for the lane, which is idle.
      const got = ix.searchTake(p, 0, 1e6);
      expect(got).not.toBeNull();
      expect(plain(got!)).toEqual(want);
      expect(plain(await p)).toEqual(want);
    }
    ix.close();
  });
});

describe('searchTake: a search the read lane has not started runs on the JS thread when the namespace is small', () => {
  it('runs it here while every read-lane thread is held; the promise settles with the same hits', async () => {
    const { ix, qv, want } = oneQuery('take-steal');
    const pool = holdLane(300);
    const p = ix.searchAsync(qv, 10, RAW);
    // Every lane thread is held, so only this thread can have run it.
    const got = ix.searchTake(p, 3000, 0);
    expect(got).not.toBeNull();
    expect(plain(got!)).toEqual(want);
    expect(plain(await p)).toEqual(want);
    await pool;
    ix.close();
  });

  it('leaves it to the lane when the namespace holds more vectors than stealRows', async () => {
    const { ix, qv, want } = oneQuery('take-big');
    const pool = holdLane(200);
    const p = ix.searchAsync(qv, 10, RAW);
    expect(ix.searchTake(p, 2999, 0)).toBeNull();
    expect(plain(await p)).toEqual(want);
    await pool;
    ix.close();
  });
});

describe('searchTake: this thread never waits for the index’s lock to run a search itself', () => {
  it('leaves a search the lane has not started to the lane while a pool job holds the index', async () => {
    const { ix, qv, want } = oneQuery('take-locked');
    const before = testing.background().jobs;
    const hold = ix._holdAsync(300);
    // The hold is running (jobs are counted as they begin) and has had time to take the lock.
    while (testing.background().jobs === before) await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 20));
    // The lane is held past the hold's end: a take that waited for the lock would find the
    // search still not started and run it.
    const pool = holdLane(1000);
    const p = ix.searchAsync(qv, 10, RAW);
    expect(ix.searchTake(p, 1e9, 0)).toBeNull();
    expect(plain(await p)).toEqual(want);
    await Promise.all([hold, pool]);
    ix.close();
  });
});

describe('searchTake: anything but an unsettled searchAsync of this index gives null', () => {
  it('null for a settled search, a foreign promise, another index’s search; bad numbers are INVALID_ARGUMENT', async () => {
    const a = filled('take-a');
    const b = filled('take-b');
    const qv = row(nearQueries(a.m, dims, 1, 0.2, 3), 0, dims);
    const p = a.ix.searchAsync(qv, 10, RAW);
    expect(b.ix.searchTake(p, 1e9, 0)).toBeNull();
    await p;
    expect(a.ix.searchTake(p, 1e9, 1000)).toBeNull();
    expect(a.ix.searchTake(Promise.resolve({ ids: new Float64Array(0), distances: new Float32Array(0) }), 1e9)).toBeNull();
    expect(() => a.ix.searchTake(p, -1)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => a.ix.searchTake(p, 0, -5)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    a.ix.close();
    b.ix.close();
  });
});

describe('store.search takes its vector hits on the JS thread when the read lane has not started them', () => {
  it('answers while every read-lane thread is held, with what it answers on an idle lane', async () => {
    const store = await SpanStore.open(storeDir(), { durability: 'none' });
    open.push(store);
    const turns = realTurns(400);
    await store.appendMany(turns.map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
    await store.catchUp();
    const q = 'which file did the agent edit first?';
    const idle = await store.search(q, { k: 5 });
    let held = false;
    const pool = holdLane(1000).then(() => (held = true));
    const busy = await store.search(q, { k: 5 });
    // The search settled before the held lane let go: it never waited for a lane thread.
    expect(held).toBe(false);
    expect(busy.hits.map((h) => h.spanId)).toEqual(idle.hits.map((h) => h.spanId));
    await pool;
  });
});
