import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { AppendColumns, NativeSpanLog } from '../../src/native.js';
import { native, tmpDir } from './helpers.js';

const RAW = 1;
const SUMMARY = 2;
const EVENT = 3;
const DIMS = 256;

const open: NativeSpanLog[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

function openLog(dir: string): NativeSpanLog {
  const log = new native.SpanLog(dir, { readOnly: false, durability: 0, segmentBytes: 64 << 20, maxTextBytes: 16 << 20 });
  open.push(log);
  return log;
}

function cols(texts: string[], kinds?: number[], turn0 = 0): AppendColumns {
  const n = texts.length;
  return {
    kinds: Uint8Array.from({ length: n }, (_, i) => kinds?.[i] ?? RAW),
    flags: new Uint8Array(n),
    roles: new Uint8Array(n).fill(2),
    turnStart: Float64Array.from({ length: n }, (_, i) => turn0 + i),
    turnEnd: Float64Array.from({ length: n }, (_, i) => turn0 + i),
    timestamps: new Float64Array(n),
    tokens: new Uint32Array(n),
    texts,
    metas: new Array(n).fill(null),
  };
}

function setup(tag: string, opts: { exactBelow?: number; scalar?: 'f32' | 'f16' | 'i8' } = {}) {
  const dir = tmpDir(tag);
  const log = openLog(dir);
  const vdir = path.join(dir, 'vectors');
  const index = () => new native.VectorIndex(vdir, { dims: DIMS, scalar: opts.scalar ?? 'f16', exactBelow: opts.exactBelow ?? 20000 });
  return { dir, vdir, log, index, embedder: new native.Embedder(DIMS) };
}

const sentence = (i: number) => `turn ${i}: the deploy of service_${i} failed with exit code ${i % 7} after ${i * 3} ms`;

describe('catchUp: indexes raw and summary records from the log, skips events', () => {
  it('embeds in C++, one vector per short span, high-water = log.nextId()', async () => {
    const { log, index, embedder } = setup('kinds');
    const texts = Array.from({ length: 30 }, (_, i) => sentence(i));
    const kinds = texts.map((_, i) => (i % 3 === 0 ? RAW : i % 3 === 1 ? SUMMARY : EVENT));
    const first = await log.append(cols(texts, kinds));
    const ix = index();
    expect(ix.catchUp(log, embedder)).toBe(20);
    expect(ix.highWater()).toBe(log.nextId());
    expect(ix.stats()).toMatchObject({ countRaw: 10, countSummary: 10 });
    // Each span answers its own text, in its own namespace; events are nowhere.
    for (let i = 0; i < 30; i++) {
      const q = embedder.embed([texts[i]!]);
      const raw = Array.from(ix.search(q, 30, RAW).ids);
      const sum = Array.from(ix.search(q, 30, SUMMARY).ids);
      if (kinds[i] === EVENT) {
        expect(raw).not.toContain(first + i);
        expect(sum).not.toContain(first + i);
      } else {
        expect((kinds[i] === RAW ? raw : sum)[0]).toBe(first + i);
      }
    }
  });

  it('skips empty texts (no features, nothing to find them by) but moves past them', async () => {
    const { log, index, embedder } = setup('empty');
    await log.append(cols(['', 'a real sentence about caching', '   ', '']));
    const ix = index();
    expect(ix.catchUp(log, embedder)).toBe(1);
    expect(ix.highWater()).toBe(log.nextId());
    expect(ix.catchUp(log, embedder)).toBe(0);
  });
});

describe('catchUp: incremental and idempotent', () => {
  it('adds only what the log gained; a second call adds nothing and writes nothing', async () => {
    const { vdir, log, index, embedder } = setup('incr');
    await log.append(cols(Array.from({ length: 100 }, (_, i) => sentence(i))));
    const ix = index();
    expect(ix.catchUp(log, embedder)).toBe(100);
    const size = fs.statSync(path.join(vdir, 'vectors.bin')).size;
    expect(ix.catchUp(log, embedder)).toBe(0);
    expect(fs.statSync(path.join(vdir, 'vectors.bin')).size).toBe(size);

    const first = await log.append(cols(Array.from({ length: 40 }, (_, i) => sentence(1000 + i)), undefined, 1000));
    expect(ix.catchUp(log, embedder)).toBe(40);
    expect(ix.highWater()).toBe(log.nextId());
    expect(ix.stats().countRaw).toBe(140);
    expect(ix.search(embedder.embed([sentence(1017)]), 1, RAW).ids[0]).toBe(first + 17);
    expect(ix.catchUp(log, embedder)).toBe(0);
  });

  it('after a reopen (saved or not) nothing is embedded twice', async () => {
    const { log, index, embedder } = setup('reopen');
    await log.append(cols(Array.from({ length: 60 }, (_, i) => sentence(i)), Array.from({ length: 60 }, (_, i) => (i === 59 ? EVENT : RAW))));
    const a = index();
    expect(a.catchUp(log, embedder)).toBe(59);
    a.close();
    // Not saved: the snapshot is missing, the vectors file has everything.
    const b = index();
    expect(b.stats()).toMatchObject({ loadedFrom: 'rebuilt', countRaw: 59 });
    expect(b.catchUp(log, embedder)).toBe(0); // only the trailing event is re-read, and skipped
    b.save();
    b.close();
    const c = index();
    expect(c.stats()).toMatchObject({ loadedFrom: 'file', countRaw: 59 });
    expect(c.catchUp(log, embedder)).toBe(0);
    expect(c.highWater()).toBe(log.nextId());
  });

  it('with the vector files gone, catchUp re-embeds the whole log to the same answers', async () => {
    const { vdir, log, index, embedder } = setup('gone', { exactBelow: 0 });
    const texts = Array.from({ length: 200 }, (_, i) => sentence(i));
    await log.append(cols(texts));
    const a = index();
    a.catchUp(log, embedder);
    a.save();
    const q = embedder.embed([sentence(123)]);
    const before = Array.from(a.search(q, 10, RAW, 'exact').ids);
    a.close();
    fs.rmSync(vdir, { recursive: true });
    const b = index();
    expect(b.highWater()).toBe(0);
    expect(b.catchUp(log, embedder)).toBe(200);
    expect(Array.from(b.search(q, 10, RAW, 'exact').ids)).toEqual(before);
  });

  it('rejects a non-log source, a non-embedder, and an embedder of other dims', async () => {
    const { log, index, embedder } = setup('badargs');
    const ix = index();
    expect(() => ix.catchUp({} as never, embedder)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => ix.catchUp(log, {} as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => ix.catchUp(log, new native.Embedder(128))).toThrow(expect.objectContaining({ code: 'DIMENSION_MISMATCH' }));
  });
});

describe('catchUp: long spans are indexed as windows keyed by the span id', () => {
  it('a sentence from the middle of a 40 KB tool output finds that span, once', async () => {
    const { log, index, embedder } = setup('windows');
    // A long test log: a few line templates, as real tool output has.
    const templates = ['PASSED tests/test_io.py::test_read_{n}', 'collected {n} items', 'DEBUG cache hit for key user:{n}', 'INFO worker {n} idle'];
    const filler = (seed: number) =>
      Array.from({ length: 800 }, (_, i) => templates[(i + seed) % 4]!.replace('{n}', String((i * 31 + seed) % 97))).join('\n');
    const needle = 'ERROR: connection pool exhausted after 32 retries on replica db-west-3';
    const long = filler(1).slice(0, 20000) + '\n' + needle + '\n' + filler(2).slice(0, 20000);
    const others = Array.from({ length: 50 }, (_, i) => sentence(i));
    const first = await log.append(cols([...others, long]));
    const ix = index();
    const added = ix.catchUp(log, embedder);
    expect(added).toBeGreaterThan(60); // 50 short spans + ~80 windows of the long one
    expect(ix.stats()).toMatchObject({ countRaw: added, spansRaw: 51 });
    expect(ix.stats().graphRaw).toBeLessThanOrEqual(added); // repeated windows are aliases
    const r = ix.search(embedder.embed([needle]), 10, RAW);
    expect(Array.from(r.ids)).toContain(first + 50);
    expect(new Set(r.ids).size).toBe(r.ids.length); // a span counts once
    // More hits asked for than there are spans: the short spans come first, then the long
    // one's windows, past the first 32 hits (whose ids are compared one by one, the rest by a
    // table). The long span still counts once: every span, each once.
    const wide = ix.search(embedder.embed([sentence(25)]), 60, RAW);
    expect(wide.ids.length).toBe(51);
    expect(new Set(wide.ids).size).toBe(51);
  });
});

describe('catchUp: a crash inside a span\'s windows drops the whole span, and catchUp redoes it', () => {
  it('truncating vectors.bin mid-span leaves no partial span behind', async () => {
    const { vdir, log, index, embedder } = setup('midspan');
    const long = Array.from({ length: 300 }, (_, i) => `step ${i}: compiled module_${i}.rs in ${i * 13} ms`).join('\n');
    const first = await log.append(cols([sentence(1), sentence(2), long]));
    const a = index();
    const added = a.catchUp(log, embedder);
    expect(added).toBeGreaterThan(5);
    a.close();
    const record = 20 + 2 * DIMS; // an f16 index: f16 records
    const file = path.join(vdir, 'vectors.bin');
    // Keep the two short spans and the first 3 windows of the long one.
    fs.truncateSync(file, 32 + (2 + 3) * record);
    const b = index();
    expect(b.stats()).toMatchObject({ vectorsRecovery: 'torn-tail', countRaw: 2, spansRaw: 2 });
    expect(fs.statSync(file).size).toBe(32 + 2 * record);
    expect(b.highWater()).toBe(first + 2);
    expect(b.catchUp(log, embedder)).toBe(added - 2);
    expect(b.search(embedder.embed(['step 150: compiled module_150.rs in 1950 ms']), 1, RAW).ids[0]).toBe(first + 2);
  });
});

describe('catchUp: near-exact queries land the turn in the top 10 (real transcript slice)', () => {
  it('copied and lightly edited sentences from 2,000 real turns', async () => {
    const file = path.resolve(__dirname, '../../../shared/data/miniswe-gemini3pro-verified/turns.jsonl.gz');
    const fallback = '/work/shared/data/miniswe-gemini3pro-verified/turns.jsonl.gz';
    const src = fs.existsSync(file) ? file : fallback;
    if (!fs.existsSync(src)) return; // data not shipped with the package
    const lines = zlib.gunzipSync(fs.readFileSync(src)).toString('utf8').split('\n', 2000);
    const texts = lines.filter(Boolean).map((l) => (JSON.parse(l) as { text: string }).text);
    const { log, index, embedder } = setup('real', { exactBelow: 0 });
    const first = await log.append(cols(texts));
    const ix = index();
    ix.catchUp(log, embedder);
    let seed = 12345;
    const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
    let copied = 0;
    let edited = 0;
    let asked = 0;
    while (asked < 200) {
      const i = Math.floor(rand() * texts.length);
      const t = texts[i]!;
      if (t.length < 80) continue;
      const len = 60 + Math.floor(rand() * 140);
      const start = Math.floor(rand() * (t.length - Math.min(len, t.length)));
      const quote = t.slice(start, start + len);
      // A quote that 10+ turns contain verbatim does not identify one turn.
      if (texts.filter((x) => x.includes(quote)).length > 10) continue;
      const edit = quote
        .split(/\s+/)
        .filter(() => rand() > 0.15)
        .join(' ')
        .toUpperCase();
      const found = (q: string) =>
        Array.from(ix.search(embedder.embed([q]), 10, RAW).ids).some((id) => id === first + i || texts[id - first] === t);
      copied += found(quote) ? 1 : 0;
      edited += found(edit) ? 1 : 0;
      asked++;
    }
    expect(copied / asked).toBeGreaterThanOrEqual(0.93);
    expect(edited / asked).toBeGreaterThanOrEqual(0.88);
  });
});
