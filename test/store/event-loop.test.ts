// The store never holds the host's event loop for long: an open's catch-up and a rebuild from
// the log go by jobs on the thread pool (src/catchup.ts), a long one continues after open resolves and says so
// (indexLag CATCHING_UP, verdict not lossless), and index saves run on the thread pool while
// appends go on. The bounds are generous: these are not timed benches (bench/open.bench.ts
// measures the stalls), they tell a sliced catch-up from one long call.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore, type SpanStoreOptions } from '../../src/index.js';
import type { CatchUpProgress } from '../../src/catchup.js';
import { addon } from '../../src/native.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const testing = (addon() as unknown as { _testing: { background(): { jobs: number; offThread: number } } })._testing;
const SPANS = 12_000;

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});
async function openStore(dir: string, options: SpanStoreOptions = {}): Promise<SpanStore> {
  const s = await SpanStore.open(dir, { durability: 'none', ...options });
  open.push(s);
  return s;
}

/** A closed store of SPANS real turns whose index directory is then removed: its next open rebuilds both indexes from the log. */
async function storeToRebuild(): Promise<string> {
  const dir = tmpDir();
  const s = await SpanStore.open(dir, { durability: 'none' });
  const turns = realTurns(SPANS);
  for (let i = 0; i < turns.length; i += 2000) await s.appendMany(turns.slice(i, i + 2000).map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
  await s.append({ turn: SPANS + 1, role: 'user', text: 'the very last turn names the okapi ledger' });
  await s.close();
  fs.rmSync(path.join(dir, 'index'), { recursive: true, force: true });
  return dir;
}

/** The longest gap between ticks of a 1 ms interval while `work` runs. */
async function longestStall(work: () => Promise<void>): Promise<{ stall: number; wall: number }> {
  let last = performance.now();
  let stall = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 1);
  const t0 = performance.now();
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  stall = Math.max(stall, performance.now() - last);
  return { stall, wall: performance.now() - t0 };
}

describe('a rebuild from the log runs in slices: a timer keeps ticking through the open and the catch-up', () => {
  it(`rebuilding both indexes of ${SPANS} spans never stalls the loop for long`, async () => {
    const dir = await storeToRebuild();
    let store: SpanStore | undefined;
    const { stall, wall } = await longestStall(async () => {
      store = await openStore(dir, { backgroundCatchUpAbove: Infinity });
    });
    expect(store!.stats().indexLag).toBeNull();
    expect(store!.findExact('okapi ledger').length).toBe(1);
    // The rebuild as one call takes far longer than the bound (wall is the whole open).
    expect(wall).toBeGreaterThan(400);
    // Idle, the longest stall is a few ms; the bound leaves room for a machine whose cores
    // the pool's jobs and other processes share (one call would stall ~1 s).
    expect(stall).toBeLessThan(400);
  }, 120_000);

  it('repair() rebuilds off the event loop too', async () => {
    const dir = await storeToRebuild();
    const store = await openStore(dir, { backgroundCatchUpAbove: Infinity });
    const { stall, wall } = await longestStall(async () => {
      await store.repair();
    });
    expect(wall).toBeGreaterThan(400);
    // The old vector files' removal, the empty index's creation and the old index's release
    // run on the thread pool (test/store/repair-replace.test.ts), the rebuild by pool jobs;
    // the full audit after it goes in slices. The rebuild as one call stalls ~1 s.
    expect(stall).toBeLessThan(400);
    expect(await store.verifyIndexes()).toEqual([]);
  }, 120_000);
});

describe('an open with a long backlog resolves before the catch-up ends, answers with what is indexed and says so', () => {
  it('indexLag is CATCHING_UP and the verdict not lossless until catchUp() has waited for the background run', async () => {
    const dir = await storeToRebuild();
    const progress: CatchUpProgress[] = [];
    const store = await openStore(dir, { backgroundCatchUpAbove: 1000, onCatchUp: (p) => progress.push(p) });
    const lag = store.stats().indexLag;
    expect(lag).toMatchObject({ index: 'lexical', code: 'CATCHING_UP' });
    expect(store.verdict().state).not.toBe('lossless');
    expect(store.verdict().reasons.join(' ')).toMatch(/catching up/);
    // It answers now, from what is indexed so far.
    await store.search('okapi ledger', { k: 3 });
    // An append meanwhile does not wait for the background run, and is caught up by it.
    const id = await store.append({ turn: SPANS + 2, role: 'user', text: 'a turn appended while the indexes catch up: wombat' });
    await store.catchUp();
    expect(store.stats().indexLag).toBeNull();
    expect(store.findExact('wombat').map((h) => h.spanId)).toEqual([id]);
    expect(store.findExact('okapi ledger').length).toBe(1);
    expect(await store.verifyIndexes()).toEqual([]);
    // Progress came in slices, each index's high water rising to the log's end.
    const lex = progress.filter((p) => p.index === 'lexical').map((p) => p.highWater);
    expect(lex.length).toBeGreaterThan(3);
    expect(lex).toEqual([...lex].sort((x, y) => x - y));
    expect(progress.filter((p) => p.index === 'vector').at(-1)!.highWater).toBe(store.log.nextId());
  }, 120_000);

  it('a close during the background catch-up stops it; the next open catches up the rest', async () => {
    const dir = await storeToRebuild();
    const store = await openStore(dir, { backgroundCatchUpAbove: 1000 });
    expect(store.stats().indexLag?.code).toBe('CATCHING_UP');
    await store.close();
    const again = await openStore(dir, { backgroundCatchUpAbove: Infinity });
    expect(again.stats().indexLag).toBeNull();
    expect(await again.verifyIndexes()).toEqual([]);
  }, 120_000);
});

describe('catch-up jobs run on the thread pool: searches, checkpoints and repairs meet them cleanly', () => {
  it('while the background catch-up runs the loop turns, and a search answers from what is indexed and says it cannot vouch', async () => {
    const dir = await storeToRebuild();
    const store = await openStore(dir, { backgroundCatchUpAbove: 1000 });
    expect(store.stats().indexLag?.code).toBe('CATCHING_UP');
    const done = store.catchUp();
    let settled = false;
    void done.finally(() => (settled = true));
    let turns = 0;
    let searched = 0;
    while (!settled) {
      const r = await store.search('okapi ledger', { k: 5 });
      if (store.stats().indexLag?.code === 'CATCHING_UP') {
        // Not lossless while an index lacks spans: the answer is what is indexed, and says so.
        expect(r.verdict).not.toBe('lossless');
        expect(r.trustExactRecall).toBe(false);
        const exact = store.findExact(' the ', { limit: 3 });
        if (store.stats().indexLag?.code === 'CATCHING_UP') for (const h of exact) expect(h.verdict).not.toBe('lossless');
        searched++;
      }
      // Hits come from what either index holds (they catch up side by side).
      for (const h of r.hits) expect(h.spanId).toBeLessThan(Math.max(store.lexical.highWater(), store.vector.highWater()));
      await new Promise((res) => setImmediate(res));
      turns++;
    }
    await done;
    expect(searched).toBeGreaterThan(0);
    // Indexing 12,000 spans as one call would give the loop no turn at all.
    expect(turns).toBeGreaterThan(10);
    expect((await store.search('okapi ledger', { k: 5 })).verdict).toBe('lossless');
  }, 120_000);

  it('a checkpoint during a catch-up job waits for it, and the catch-up goes on after the save', async () => {
    const dir = await storeToRebuild();
    const store = await openStore(dir, { backgroundCatchUpAbove: 1000 });
    expect(store.stats().indexLag?.code).toBe('CATCHING_UP');
    await store.checkpoint();
    await store.catchUp();
    expect(store.stats().indexLag).toBeNull();
    expect(await store.verifyIndexes()).toEqual([]);
  }, 120_000);

  it('a repair while appends are indexed on the pool replaces the indexes once their jobs settle', async () => {
    const store = await openStore(tmpDir());
    const turns = realTurns(4000);
    await store.appendMany(turns.slice(0, 1000).map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
    const repaired = store.repair();
    const appended = store.appendMany(turns.slice(1000).map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
    const [r, ids] = await Promise.all([repaired, appended]);
    expect(r.rebuilt).toEqual(['lexical', 'vector']);
    expect(ids.length).toBe(3000);
    await store.catchUp();
    expect(await store.verifyIndexes()).toEqual([]);
  }, 120_000);
});

describe('index saves run on the thread pool; appends made while one runs are indexed after it', () => {
  it('checkpoint() saves both indexes off the JS thread; appends during it are indexed, never left behind', async () => {
    const store = await openStore(tmpDir());
    const turns = realTurns(2000);
    await store.appendMany(turns.map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
    const before = testing.background().offThread;
    const cp = store.checkpoint();
    const ids: number[] = [];
    let settled = false;
    void cp.finally(() => (settled = true));
    const lags: unknown[] = [];
    for (let i = 0; i < 500 && !settled; i++) {
      ids.push(await store.append({ turn: 3000 + i, role: 'user', text: `during the save: marker${i}x` }));
      lags.push(store.stats().indexLag);
    }
    await cp;
    expect(testing.background().offThread - before).toBeGreaterThanOrEqual(2);
    // Each append's catch-up waited for the save instead of failing against it.
    expect(lags.filter((l) => l !== null)).toEqual([]);
    expect(store.findExact(`marker${ids.length - 1}x`).map((h) => h.spanId)).toEqual([ids.at(-1)]);
    expect(await store.verifyIndexes()).toEqual([]);
  }, 60_000);
});
