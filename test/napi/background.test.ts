// Work on the thread pool (native/napi/background.h): a log, a lexical index and a vector
// index opened by `prepare*` on the pool and adopted by their constructors; index saves with
// `saveAsync`; catch-ups cut to one slice by a limit. `_testing.background()` counts the jobs
// run and how many ran off the JS thread.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanguardError } from '../../src/errors.js';
import {
  addon,
  openLexicalIndex,
  openSpanLog,
  openVectorIndex,
  type NativeSpanLog,
  type NativeSpanLogOptions,
  type PreparedHandle,
} from '../../src/native.js';

interface BackgroundTesting {
  background(): { jobs: number; offThread: number };
}
const a = addon();
const testing = (a as unknown as { _testing: BackgroundTesting })._testing;
const LOG: NativeSpanLogOptions = { readOnly: false, durability: 0, segmentBytes: 1 << 20, maxTextBytes: 1 << 20 };
const VEC = { dims: 64, scalar: 'f32' as const };

const dirs: string[] = [];
const logs: NativeSpanLog[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-bg-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const l of logs.splice(0)) await l.close().catch(() => {});
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function filledLog(dir: string, n: number): Promise<NativeSpanLog> {
  const log = await openSpanLog(dir, LOG);
  logs.push(log);
  await log.append({
    kinds: new Uint8Array(n).fill(1),
    flags: new Uint8Array(n),
    roles: new Uint8Array(n).fill(2),
    turnStart: Float64Array.from({ length: n }, (_, i) => i),
    turnEnd: Float64Array.from({ length: n }, (_, i) => i),
    timestamps: new Float64Array(n),
    tokens: new Uint32Array(n),
    texts: Array.from({ length: n }, (_, i) => `turn ${i} mentions the word zebra${i % 7} and more`),
    metas: new Array<string | null>(n).fill(null),
  });
  return log;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => null,
    (e: unknown) => e,
  );
}

describe('opening on the thread pool: prepare* runs off the JS thread and the constructor adopts what it built', () => {
  it('a log, a lexical index and a vector index open through the pool and work', async () => {
    const dir = tmp();
    const before = testing.background();
    const log = await filledLog(path.join(dir, 'log'), 10);
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    const vec = await openVectorIndex(path.join(dir, 'vector'), VEC);
    const after = testing.background();
    expect(after.jobs - before.jobs).toBe(3);
    expect(after.offThread - before.offThread).toBe(3);
    expect(log.nextId() - log.firstId()).toBe(10);
    expect(lex.catchUp(log)).toBe(10);
    expect(vec.catchUp(log, new a.Embedder(64))).toBe(10);
    vec.close();
  });

  it('a handle is adopted once; another type of handle or a plain value is refused', async () => {
    const dir = tmp();
    fs.mkdirSync(path.join(dir, 'log'));
    const h = await a.prepareSpanLog(path.join(dir, 'log'), LOG);
    logs.push(new a.SpanLog(path.join(dir, 'log'), LOG, h));
    expect(() => new a.SpanLog(path.join(dir, 'log'), LOG, h)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/adopted already/) }));
    const lexHandle = await a.prepareLexicalIndex(path.join(dir, 'lexical.idx'));
    expect(() => new a.VectorIndex(path.join(dir, 'vector'), VEC, lexHandle)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => new a.LexicalIndex(path.join(dir, 'x.idx'), {} as PreparedHandle)).toThrow(SpanguardError);
    // The lexical handle is still whole: its own constructor takes it.
    expect(new a.LexicalIndex(path.join(dir, 'lexical.idx'), lexHandle).highWater()).toBe(0);
  });

  it('bad options reject before anything is queued; an engine failure rejects with its typed error', async () => {
    const before = testing.background().jobs;
    expect(await rejection(a.prepareSpanLog('', LOG))).toMatchObject({ code: 'INVALID_OPTIONS' });
    expect(await rejection(a.prepareVectorIndex(tmp(), { dims: 3, scalar: 'f32' }))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(testing.background().jobs).toBe(before);
    // A second writer of the same log: the lock is refused on the pool, as the constructor refuses it.
    const dir = tmp();
    await filledLog(dir, 1);
    expect(await rejection(openSpanLog(dir, LOG))).toMatchObject({ code: 'LOCKED' });
  });
});

describe('saveAsync: an index saves on the thread pool and cannot change until the save settles', () => {
  it('lexical: add and catchUp are refused while it saves; the saved file loads', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 50);
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    lex.catchUp(log);
    const before = testing.background().offThread;
    const saved = lex.saveAsync();
    expect(() => lex.catchUp(log)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/being saved/) }));
    expect(() => lex.add(Float64Array.of(51), Uint8Array.of(1), Float64Array.of(0), Float64Array.of(0), ['x'])).toThrow(/being saved/);
    expect(lex.search('zebra3', 5, 1, NaN, NaN).ids.length).toBeGreaterThan(0); // reads go on
    await saved;
    expect(testing.background().offThread - before).toBe(1);
    expect(lex.catchUp(log)).toBe(0);
    const again = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    expect(again.stats().loadedFrom).toBe('file');
    expect(again.highWater()).toBe(log.nextId());
  });

  it('vector: add, catchUp and close are refused while it saves; search goes on', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 50);
    const vec = await openVectorIndex(path.join(dir, 'vector'), VEC);
    const emb = new a.Embedder(64);
    vec.catchUp(log, emb);
    const saved = vec.saveAsync();
    expect(() => vec.catchUp(log, emb)).toThrow(/being saved/);
    expect(() => vec.close()).toThrow(/being saved/);
    expect(vec.search(emb.embed(['zebra3']), 3, 1).ids.length).toBe(3);
    await saved;
    vec.close();
    const again = await openVectorIndex(path.join(dir, 'vector'), VEC);
    expect(again.highWater()).toBe(log.nextId());
    again.close();
  });
});

describe('catchUp(log, limit, maxBytes) indexes one slice: at most `limit` ids past the high water, `maxBytes` of text', () => {
  it('lexical and vector advance by the limit, then to the end', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 100);
    const first = log.firstId();
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    expect(lex.catchUp(log, 30)).toBe(30);
    expect(lex.highWater()).toBe(first + 30);
    expect(lex.catchUp(log, 30)).toBe(30);
    expect(lex.catchUp(log, Infinity)).toBe(40);
    expect(lex.highWater()).toBe(log.nextId());
    const vec = await openVectorIndex(path.join(dir, 'vector'), VEC);
    const emb = new a.Embedder(64);
    expect(vec.catchUp(log, emb, 25)).toBe(25);
    expect(vec.highWater()).toBe(first + 25);
    expect(vec.catchUp(log, emb)).toBe(75);
    vec.close();
  });

  it('maxBytes stops a slice at the record that reaches that many bytes of text (at least one record)', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 100);
    const first = log.firstId();
    const len = Buffer.byteLength(log.get(first)!.text) + Buffer.byteLength(log.get(first + 1)!.text);
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    expect(lex.catchUp(log, Infinity, len)).toBe(2);
    expect(lex.catchUp(log, Infinity, 1)).toBe(1);
    expect(lex.catchUp(log, 5, 1 << 20)).toBe(5); // the id limit binds first
    const vec = await openVectorIndex(path.join(dir, 'vector'), VEC);
    expect(vec.catchUp(log, new a.Embedder(64), Infinity, len + 1)).toBe(3);
    vec.close();
  });

  it('a bad limit is INVALID_ARGUMENT and indexes nothing', async () => {
    const log = await filledLog(tmp(), 5);
    const lex = await openLexicalIndex(path.join(tmp(), 'lexical.idx'));
    for (const bad of [0, -1, 1.5, NaN, '3' as unknown as number]) {
      expect(() => lex.catchUp(log, bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
      expect(() => lex.catchUp(log, Infinity, bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    expect(lex.highWater()).toBe(0);
  });
});

/** Turns of the event loop (setImmediate hops) until `p` settles. */
async function turnsUntil(p: Promise<unknown>): Promise<number> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  let turns = 0;
  while (!done) {
    await new Promise((r) => setImmediate(r));
    turns++;
  }
  return turns;
}

describe('catchUpAsync: a slice copied out of the log on the JS thread, indexed on the thread pool', () => {
  const N = 20_000;

  it('lexical and vector index the slice off the JS thread; the event loop turns meanwhile', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), N);
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    const vec = await openVectorIndex(path.join(dir, 'vector'), VEC);
    const before = testing.background();
    const lexJob = lex.catchUpAsync(log, Infinity, 1 << 30);
    const vecJob = vec.catchUpAsync(log, new a.Embedder(64));
    // The indexing of 20,000 records runs while the loop keeps turning (a call that indexed
    // on this thread would settle before the first turn).
    expect(await turnsUntil(Promise.all([lexJob, vecJob]))).toBeGreaterThan(5);
    expect(await lexJob).toBe(N);
    expect(await vecJob).toBe(N);
    const after = testing.background();
    expect(after.offThread - before.offThread).toBe(2);
    expect(lex.highWater()).toBe(log.nextId());
    expect(vec.highWater()).toBe(log.nextId());
    // The same index as the synchronous catch-up builds.
    const sync = new a.LexicalIndex(path.join(dir, 'sync.idx'));
    sync.catchUp(log);
    for (const q of ['zebra3', 'turn 17 mentions', 'more'])
      expect(Array.from(lex.search(q, 20, 1, NaN, NaN).ids)).toEqual(Array.from(sync.search(q, 20, 1, NaN, NaN).ids));
    expect(Array.from(lex.phrase(log, 'mentions the word zebra5 and', 1, Infinity))).toEqual(Array.from(sync.phrase(log, 'mentions the word zebra5 and', 1, Infinity)));
    vec.close();
  }, 60_000);

  it('limit and maxBytes cut the slice as for catchUp', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 100);
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    expect(await lex.catchUpAsync(log, 30)).toBe(30);
    expect(lex.highWater()).toBe(log.firstId() + 30);
    const len = Buffer.byteLength(log.get(log.firstId() + 30)!.text);
    expect(await lex.catchUpAsync(log, Infinity, len)).toBe(1);
    expect(await rejection(lex.catchUpAsync(log, 0))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await lex.catchUpAsync(log)).toBe(69);
    expect(await lex.catchUpAsync(log)).toBe(0);
  });

  it('reads during the job wait at most one step: they see the high water rise through the slice, every id below it indexed', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), N);
    const first = log.firstId();
    // One job, read from this thread while it runs. On a loaded machine the JS thread may be
    // off its core for the whole job, seeing only its start and end: up to five jobs (each
    // on a fresh index) are watched; an index held whole for a job never shows a midpoint.
    const watch = async (attempt: number): Promise<number[]> => {
      const lex = await openLexicalIndex(path.join(dir, `lexical-${attempt}.idx`));
      const job = lex.catchUpAsync(log);
      let done = false;
      void job.then(() => (done = true));
      const seen: number[] = [];
      while (!done) {
        const hw = lex.highWater();
        const ids = lex.ids(1);
        const hits = lex.search('zebra3', 100_000, 1, NaN, NaN).ids;
        const hwAfter = lex.highWater();
        // What a read sees is the index between records: the ids below a high water, in order.
        expect(ids.length).toBeGreaterThanOrEqual(Math.max(hw, first) - first);
        expect(ids.length).toBeLessThanOrEqual(Math.max(hwAfter, first) - first);
        if (ids.length > 0) expect([ids[0], ids.at(-1)]).toEqual([first, first + ids.length - 1]);
        for (const id of hits) expect(id).toBeLessThan(hwAfter);
        seen.push(hw);
        await new Promise((r) => setImmediate(r));
      }
      await job;
      return seen;
    };
    const midway = (seen: number[]) => seen.some((hw) => hw > first && hw < log.nextId());
    let seen: number[] = [];
    for (let attempt = 0; attempt < 5 && !midway(seen); attempt++) seen = await watch(attempt);
    // A job that held the index whole would show only its start and its end.
    expect(midway(seen)).toBe(true);
  }, 60_000);

  it('appends and even a close of the log during the job do not reach it: it indexes the copy taken at the call', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), N);
    const end = log.nextId();
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    const vec = await openVectorIndex(path.join(dir, 'vector'), VEC);
    const jobs = Promise.all([lex.catchUpAsync(log), vec.catchUpAsync(log, new a.Embedder(64))]);
    await log.append({
      kinds: Uint8Array.of(1),
      flags: new Uint8Array(1),
      roles: Uint8Array.of(2),
      turnStart: Float64Array.of(N),
      turnEnd: Float64Array.of(N),
      timestamps: new Float64Array(1),
      tokens: new Uint32Array(1),
      texts: ['appended while the pool indexes'],
      metas: [null],
    });
    await log.close();
    expect(await jobs).toEqual([N, N]);
    expect(lex.highWater()).toBe(end);
    expect(vec.highWater()).toBe(end);
    vec.close();
  }, 60_000);

  it('until it settles the index cannot change, be saved or be closed; after it, it can', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 2000);
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    const vec = await openVectorIndex(path.join(dir, 'vector'), VEC);
    const emb = new a.Embedder(64);
    const lexJob = lex.catchUpAsync(log);
    const vecJob = vec.catchUpAsync(log, emb);
    const busy = expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/caught up on the thread pool/) });
    expect(() => lex.catchUp(log)).toThrow(busy);
    expect(() => lex.add(Float64Array.of(1e6), Uint8Array.of(1), Float64Array.of(0), Float64Array.of(0), ['x'])).toThrow(busy);
    expect(await rejection(lex.catchUpAsync(log))).toEqual(busy);
    expect(await rejection(lex.saveAsync())).toEqual(busy);
    expect(() => vec.catchUp(log, emb)).toThrow(busy);
    expect(() => vec.close()).toThrow(busy);
    expect(await rejection(vec.saveAsync())).toEqual(busy);
    await Promise.all([lexJob, vecJob]);
    await lex.saveAsync();
    await vec.saveAsync();
    vec.close();
  });

  it('a failure on the pool rejects with its typed error, and the index takes the next job', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 50);
    const vec = await openVectorIndex(path.join(dir, 'vector'), VEC);
    const before = testing.background().jobs;
    const err = await rejection(vec.catchUpAsync(log, new a.Embedder(128)));
    expect(err).toBeInstanceOf(SpanguardError);
    expect(err).toMatchObject({ code: 'DIMENSION_MISMATCH' });
    expect(testing.background().jobs - before).toBe(1);
    expect(await vec.catchUpAsync(log, new a.Embedder(64))).toBe(50);
    vec.close();
    // An index that covers ids the log does not hold: CORRUPT, from the pool too.
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    lex.add(Float64Array.of(500), Uint8Array.of(1), Float64Array.of(0), Float64Array.of(0), ['beyond the log']);
    expect(await rejection(lex.catchUpAsync(log))).toMatchObject({ code: 'CORRUPT' });
    expect(lex.highWater()).toBe(501);
  });
});

describe('closeAsync / releaseAsync: an index is released on the thread pool', () => {
  it('lexical: freed off the JS thread by the call that releases it; later calls throw CLOSED at once', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 500);
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    const job = lex.catchUpAsync(log);
    expect(await rejection(lex.releaseAsync())).toMatchObject({ code: 'INVALID_ARGUMENT' }); // a pool catch-up holds it
    await job;
    const before = testing.background().offThread;
    const released = lex.releaseAsync();
    const closed = expect.objectContaining({ code: 'CLOSED' });
    expect(() => lex.highWater()).toThrow(closed);
    expect(() => lex.search('zebra3', 5, 1, NaN, NaN)).toThrow(closed);
    expect(() => lex.catchUp(log)).toThrow(closed);
    expect(await released).toBe(true);
    expect(testing.background().offThread - before).toBe(1);
    expect(await lex.releaseAsync()).toBe(false);
    expect(lex.tokenize('still tokenizes')).toEqual(['still', 'tokenizes']);
  });

  it('vector: freed off the JS thread; later calls throw CLOSED at once; the lock is free once it settles', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 500);
    const vdir = path.join(dir, 'vector');
    const vec = await openVectorIndex(vdir, VEC);
    const emb = new a.Embedder(64);
    await vec.catchUpAsync(log, emb);
    const job = vec.catchUpAsync(log, emb);
    expect(await rejection(vec.closeAsync())).toMatchObject({ code: 'INVALID_ARGUMENT' }); // a pool catch-up holds it
    await job;
    const before = testing.background().offThread;
    const closed = vec.closeAsync();
    expect(() => vec.highWater()).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    // The engine was released on the pool, by this call.
    expect(await closed).toBe(true);
    expect(testing.background().offThread - before).toBe(1);
    expect(await vec.closeAsync()).toBe(false); // idempotent
    vec.close();
    // The vectors file's writer lock went with it: the directory opens again.
    const again = await openVectorIndex(vdir, VEC);
    again.close();
  });
});

describe('idsAsync: the ids the agreement check compares are read on the thread pool', () => {
  it('lexical and vector: the same ids as ids(), read off the JS thread; release and close wait for the read', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 500);
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    const vec = await openVectorIndex(path.join(dir, 'vector'), VEC);
    const emb = new a.Embedder(64);
    await lex.catchUpAsync(log);
    await vec.catchUpAsync(log, emb);
    const before = testing.background().offThread;
    const lexIds = lex.idsAsync(1);
    const vecIds = vec.idsAsync(1);
    // The engines are being read on the pool: they cannot be freed under the read.
    expect(await rejection(lex.releaseAsync())).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await rejection(vec.closeAsync())).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(() => vec.close()).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect([...(await lexIds)]).toEqual([...lex.ids(1)]);
    expect([...(await vecIds)]).toEqual([...vec.ids(1)]);
    expect((await lexIds).length).toBe(500);
    expect(testing.background().offThread - before).toBe(2);
    expect([...(await lex.idsAsync(2))]).toEqual([]);
    expect(await lex.releaseAsync()).toBe(true);
    expect(await vec.closeAsync()).toBe(true);
    // A released index's read is refused with its typed error.
    expect(await rejection(lex.idsAsync(1))).toMatchObject({ code: 'CLOSED' });
    expect(await rejection(vec.idsAsync(1))).toMatchObject({ code: 'CLOSED' });
  });

  it('a read while a catch-up job runs sees the index between two of its steps', async () => {
    const dir = tmp();
    const log = await filledLog(path.join(dir, 'log'), 3000);
    const lex = await openLexicalIndex(path.join(dir, 'lexical.idx'));
    const job = lex.catchUpAsync(log);
    const ids = await lex.idsAsync(1);
    await job;
    // Ascending, contiguous from the first id: whatever the job had indexed, and nothing torn.
    expect([...ids]).toEqual(Array.from({ length: ids.length }, (_, i) => log.firstId() + i));
    await lex.releaseAsync();
  });
});
