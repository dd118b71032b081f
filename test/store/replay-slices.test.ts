// The passes over every record of the log that open, verify and repair make (the anchors'
// scan, the event trail, the log/index agreement check) go in slices that let the event loop
// run (src/catchup.ts ScanSlicer): at 10^6 spans one such pass is seconds of page faults and
// header reads in a single call. The log here is made slow on purpose (a proxy whose scans
// cost time per id read), and the tests count the loop's turns between the scan calls: a
// count, not a timing, so a loaded machine does not change the answer.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { catchUpInSlices, SEPARATE_COPIES_ABOVE, ScanSlicer, SliceSizer } from '../../src/catchup.js';
import { addon, openVectorIndex, type NativeSpanLog } from '../../src/native.js';
import { newGuardState, readTrailInSlices, restoreSpans } from '../../src/store/trail.js';
import { DIFF_SLICE, diffIds, indexAgreement } from '../../src/store/identity.js';
import { agentFinds } from '../../src/audit.js';
import type { EngineContext } from '../../src/store/context.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const testing = (addon() as unknown as { _testing: { background(): { jobs: number; offThread: number } } })._testing;
const SPANS = 6000;
/** What the proxy makes one id read cost, in milliseconds of busy wait: a full pass ≈ 300 ms. */
const MS_PER_ID = 0.05;
/** The first slice the tests' slicers read (the log here is smaller than the default first slice). */
const FIRST_SLICE = 256;

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

/** A store of SPANS real turns (every 50th an anchor-looking decision) with a few events recorded. */
async function filledStore(): Promise<SpanStore> {
  const s = await SpanStore.open(tmpDir(), { durability: 'none' });
  open.push(s);
  const turns = realTurns(SPANS).map((t, i) => ({ turn: t.turn, role: t.role, text: i % 50 === 0 ? `Decision: we keep the okapi ledger ${i}` : t.text }));
  for (let i = 0; i < turns.length; i += 2000) await s.appendMany(turns.slice(i, i + 2000));
  await s.checkpoint();
  return s;
}

/** The loop's turns, counted by a self-renewing immediate, while `work` runs. */
function loopTurns(): { count: () => number; stop: () => void } {
  let n = 0;
  let on = true;
  const tick = () => {
    n++;
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  return { count: () => n, stop: () => (on = false) };
}

/**
 * `log` with scan and scanIds slowed to MS_PER_ID per id asked for, and the loop-turn count
 * at each of those calls recorded in `seen`.
 */
function slowLog(log: NativeSpanLog, seen: number[], turns: () => number): NativeSpanLog {
  const slow = (count: number) => {
    const until = performance.now() + count * MS_PER_ID;
    while (performance.now() < until);
  };
  return new Proxy(log, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop !== 'scan' && prop !== 'scanIds') return typeof v === 'function' ? v.bind(target) : v;
      return (from: number, count: number, ...rest: number[]) => {
        seen.push(turns());
        slow(Math.min(count, Math.max(0, target.nextId() - from)));
        return (v as (...a: number[]) => unknown).call(target, from, count, ...rest);
      };
    },
  });
}

/** How many times the loop ran between the first and the last scan call. */
function turnsBetween(seen: number[]): number {
  return seen.length === 0 ? 0 : seen[seen.length - 1]! - seen[0]!;
}

describe("the open's replay reads the log in slices that let the event loop run", () => {
  it('restoreSpans: the anchors come back complete, and the loop ran many times during the scan', async () => {
    const store = await filledStore();
    const seen: number[] = [];
    const loop = loopTurns();
    const state = newGuardState();
    try {
      await restoreSpans(state, slowLog(store.log, seen, loop.count), new ScanSlicer(FIRST_SLICE));
    } finally {
      loop.stop();
    }
    expect(state.anchors).toEqual(store.state.anchors);
    expect(state.anchors.length).toBeGreaterThanOrEqual(SPANS / 50);
    expect(state.lastTurn).toBe(store.state.lastTurn);
    // ~300 ms of scanning in ~8 ms slices: dozens of turns; one call would leave none.
    expect(turnsBetween(seen)).toBeGreaterThanOrEqual(5);
  }, 120_000);

  it('readTrailInSlices: every event record, in order, with the loop run between slices', async () => {
    const store = await filledStore();
    const first = store.get(1)!;
    await store.pin(first.text.slice(0, 20), first.id);
    const seen: number[] = [];
    const loop = loopTurns();
    let trail: Awaited<ReturnType<typeof readTrailInSlices>> | undefined;
    try {
      trail = await readTrailInSlices(slowLog(store.log, seen, loop.count), new ScanSlicer(FIRST_SLICE));
    } finally {
      loop.stop();
    }
    expect(trail.map((r) => r.event)).toEqual(store.events().map((e) => e.event));
    expect(trail.some((r) => r.event?.type === 'pin')).toBe(true);
    expect(turnsBetween(seen)).toBeGreaterThanOrEqual(5);
  }, 120_000);
});

describe('the log/index agreement check (verifyIndexes, repair) reads the log in slices', () => {
  it('finds agreement on a caught-up store, with the loop run between slices', async () => {
    const store = await filledStore();
    const seen: number[] = [];
    const loop = loopTurns();
    let found: string[];
    try {
      found = await indexAgreement(slowLog(store.log, seen, loop.count), store.lexical, store.vector, store.embedderNative, new ScanSlicer(FIRST_SLICE));
    } finally {
      loop.stop();
    }
    expect(found).toEqual([]);
    expect(turnsBetween(seen)).toBeGreaterThanOrEqual(5);
  }, 120_000);

  it('spans appended while the check runs are not reported as index ids the log lacks', async () => {
    const store = await filledStore();
    const seen: number[] = [];
    const loop = loopTurns();
    let appended = false;
    const log = slowLog(store.log, seen, loop.count);
    // Appends land between the check's slices, each indexed at once.
    const appender = (async () => {
      for (let i = 0; i < 20; i++) {
        await store.append({ turn: SPANS + 10 + i, role: 'user', text: `appended during the check: wombat ${i}` });
        appended = true;
      }
    })();
    let found: string[];
    try {
      found = await indexAgreement(log, store.lexical, store.vector, store.embedderNative, new ScanSlicer(FIRST_SLICE));
    } finally {
      loop.stop();
    }
    await appender;
    expect(appended).toBe(true);
    expect(found).toEqual([]);
  }, 120_000);
});

describe("the agreement check's reads of the indexes and its comparison leave the event loop free", () => {
  it("reads the indexes' ids on the thread pool: ids() is never called on the JS thread", async () => {
    const store = await filledStore();
    const noSync = <T extends object>(ix: T): T =>
      new Proxy(ix, {
        get(target, prop) {
          if (prop === 'ids') return () => { throw new Error('ids() called on the JS thread'); };
          const v = Reflect.get(target, prop, target);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
    const before = testing.background().offThread;
    expect(await indexAgreement(store.log, noSync(store.lexical), noSync(store.vector), store.embedderNative)).toEqual([]);
    // Raw and summary ids of both indexes: four reads on the pool.
    expect(testing.background().offThread - before).toBeGreaterThanOrEqual(4);
  }, 120_000);

  it('compares the ids with a pause offered every DIFF_SLICE ids, and finds what is missing and extra', async () => {
    const n = DIFF_SLICE * 3 + 100;
    const want = Float64Array.from({ length: n }, (_, i) => i + 1);
    const have = Float64Array.from([...want.filter((id) => id !== 7 && id !== n - 3), n + 5]);
    let pauses = 0;
    const slicer = new (class extends ScanSlicer {
      override async pause(): Promise<void> {
        pauses++;
      }
    })();
    const found = await diffIds(want, have, () => false, slicer);
    expect(found).toEqual({ missing: [7, n - 3], extra: [n + 5] });
    expect(pauses).toBeGreaterThanOrEqual(3);
  });

  it('the indexes are released only once an agreement check in flight has read them', async () => {
    const store = await filledStore();
    const verified = store.verifyIndexes();
    // What close() does last, here while the check still reads the log: it waits for the
    // check's reads of the indexes before it frees them.
    const indexes = (store as unknown as { indexes: { releaseAsync(): Promise<void> } }).indexes;
    await indexes.releaseAsync();
    expect(await verified).toEqual([]);
    expect(() => store.lexical.highWater()).toThrow(expect.objectContaining({ code: 'CLOSED' }));
  }, 120_000);
});

describe("an audit's fact checks let the event loop run", () => {
  it("agentFinds asks the phrase memberships in slices with the loop run between them, and finds every fact", async () => {
    const store = await filledStore();
    // Every 50th span states "we keep the okapi ledger <i>": one fact each.
    const facts = Array.from({ length: SPANS / 50 }, (_, j) => ({ fact: `we keep the okapi ledger ${j * 50}`, spanId: j * 50 + 1 }));
    const loop = loopTurns();
    const seen: number[] = [];
    // phraseHas made slow (0.2 ms a phrase: a slice of the first 64 outlasts SLICE_MS), the
    // loop's turn count recorded at each call.
    const slowLexical = new Proxy(store.lexical, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target);
        if (prop !== 'phraseHas') return typeof v === 'function' ? v.bind(target) : v;
        return (source: NativeSpanLog, phrases: string[], ids: Float64Array, kind: number) => {
          seen.push(loop.count());
          const until = performance.now() + phrases.length * 0.2;
          while (performance.now() < until);
          return target.phraseHas(source, phrases, ids, kind);
        };
      },
    });
    const ctx = new Proxy(store, {
      get(target, prop) {
        if (prop === 'lexical') return slowLexical;
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as unknown as EngineContext;
    let found: Awaited<ReturnType<typeof agentFinds>>;
    try {
      found = await agentFinds(ctx, facts);
    } finally {
      loop.stop();
    }
    expect(found.every((f) => f.found)).toBe(true);
    expect(seen.length).toBeGreaterThan(1);
    expect(turnsBetween(seen)).toBeGreaterThan(0);
  }, 120_000);
});

describe("a catch-up round's copies out of the log run in separate turns of the event loop", () => {
  it('the lexical and the vector job of a round are started in different turns; both indexes reach the log', async () => {
    const store = await filledStore();
    const dir = tmpDir();
    const lexical = new (addon().LexicalIndex)(path.join(dir, 'lexical.idx'));
    const vector = await openVectorIndex(path.join(dir, 'vector'), { dims: store.vector.dims, scalar: 'f32' });
    const loop = loopTurns();
    const starts: { index: string; turn: number; behind: number }[] = [];
    const counted = <T extends object>(ix: T, index: string): T =>
      new Proxy(ix, {
        get(target, prop) {
          const v = Reflect.get(target, prop, target);
          if (typeof v !== 'function') return v;
          if (prop !== 'catchUpAsync') return v.bind(target);
          return (...args: unknown[]) => {
            starts.push({ index, turn: loop.count(), behind: store.log.nextId() - lexical.highWater() });
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
    const sizers = { lexical: new SliceSizer(), vector: new SliceSizer() };
    try {
      await catchUpInSlices(() => ({ log: store.log, lexical: counted(lexical, 'lexical'), vector: counted(vector, 'vector'), embedder: store.embedderNative }), sizers, undefined);
    } finally {
      loop.stop();
    }
    expect(lexical.highWater()).toBe(store.log.nextId());
    expect(vector.highWater()).toBe(store.log.nextId());
    expect(starts.filter((s) => s.index === 'vector').length).toBeGreaterThan(0);
    // No turn of the loop started two jobs (copied two slices) while the lexical backlog was
    // long; a short tail's round may start both in one turn.
    const long = starts.filter((s) => s.index === 'lexical' && s.behind > SEPARATE_COPIES_ABOVE);
    expect(long.length).toBeGreaterThan(1);
    for (const s of long) expect(starts.filter((o) => o.turn === s.turn)).toHaveLength(1);
    await lexical.releaseAsync();
    await vector.closeAsync();
  }, 120_000);
});
