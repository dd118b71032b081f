// How a restore downloads: every object through one bounded pool of GETs, objects larger
// than `rangeBytes` as ranges of that size in parallel; the log takes its place only once all
// of it is in and checked, and a failed restore leaves nothing behind in the directory.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { FaultyObjectStore, restoreReplica, type ObjectStore } from '../../src/replica/index.js';
import { GET_ATTEMPTS } from '../../src/replica/restore.js';
import { readManifest } from '../../src/replica/manifest.js';
import { bucket, rgwMissing, tmpDir, turn } from './helpers.js';

/** Counts GETs and ranged GETs, and the most in flight at once. */
function counting(inner: ObjectStore) {
  const seen = { gets: 0, ranges: [] as number[], inFlight: 0, maxInFlight: 0 };
  const track = async <T>(p: () => Promise<T>): Promise<T> => {
    seen.maxInFlight = Math.max(seen.maxInFlight, ++seen.inFlight);
    try {
      // Long enough that the pool's other GETs start meanwhile.
      await new Promise((r) => setTimeout(r, 5));
      return await p();
    } finally {
      seen.inFlight--;
    }
  };
  const store: ObjectStore = {
    get: (k) => {
      if (!k.endsWith('/manifest.json')) seen.gets++;
      return k.endsWith('/manifest.json') ? inner.get(k) : track(() => inner.get(k));
    },
    getRange: (k, from, to) => {
      seen.ranges.push(to - from);
      return track(() => inner.getRange!(k, from, to));
    },
    put: (k, b, c) => inner.put(k, b, c),
    delete: (k) => inner.delete(k),
    list: (p) => inner.list(p),
  };
  return { store, seen };
}

describe.skipIf(rgwMissing)('restore downloads through a bounded pool, large objects in ranges', () => {
  it('objects past rangeBytes come as ranges of at most that size, at most `concurrency` GETs at once; the store restores whole', async () => {
    const b = await bucket();
    const src = tmpDir('dl-src');
    const a = await SpanStore.open(src, { durability: 'group', replica: { objectStore: b, prefix: 'sess/dl' } });
    const ids = await a.appendMany(Array.from({ length: 400 }, (_, i) => turn(i + 1, ' with some tool output'.repeat(6))));
    await a.close();
    const { manifest: m } = (await readManifest(b, 'sess/dl'))!;
    const sizes = [...m.segments.map((s) => s.bytes), ...(m.open?.chunks ?? []).map((c) => c.to - c.from), ...(m.snapshot?.files ?? []).map((f) => f.bytes)];
    const rangeBytes = 64 * 1024;
    const large = sizes.filter((n) => n > rangeBytes);
    expect(large.length).toBeGreaterThan(1);

    const { store, seen } = counting(b);
    const dst = tmpDir('dl-dst');
    const r = await restoreReplica(dst, { objectStore: store, prefix: 'sess/dl', concurrency: 3, rangeBytes });
    expect(r.snapshot.state).toBe('written');
    // Every large object as ranges, each at most rangeBytes; the small ones whole.
    expect(seen.ranges.length).toBe(large.reduce((n, size) => n + Math.ceil(size / rangeBytes), 0));
    expect(Math.max(...seen.ranges)).toBeLessThanOrEqual(rangeBytes);
    expect(seen.gets).toBe(sizes.length - large.length);
    expect(seen.maxInFlight).toBe(3);
    // Nothing staged is left behind; the restored store has every turn.
    expect(fs.readdirSync(dst).filter((f) => f.startsWith('.restore-'))).toEqual([]);
    const c = await SpanStore.open(dst, { durability: 'group' });
    try {
      for (const j of [0, 200, 399]) expect(c.get(ids[j]!)?.text).toBe(turn(j + 1, ' with some tool output'.repeat(6)).text);
      expect(c.events().some((e) => e.event.type === 'index-rebuilt')).toBe(false);
    } finally {
      await c.close();
    }
  }, 120_000);

  it('a range that comes back damaged fails the restore (CORRUPT) and leaves neither a log nor a staging directory', async () => {
    const b = await bucket();
    const src = tmpDir('dl-bad-src');
    const a = await SpanStore.open(src, { durability: 'group', segmentBytes: 1 << 20, replica: { objectStore: b, prefix: 'sess/dlbad' } });
    await a.appendMany(Array.from({ length: 300 }, (_, i) => turn(i + 1, ' padding'.repeat(40))));
    await a.close();
    const { manifest: m } = (await readManifest(b, 'sess/dlbad'))!;
    const victim = m.segments[0] ?? null;
    const target = victim?.key ?? m.open!.chunks[0]!.key;
    const flipping: ObjectStore = {
      get: (k) => b.get(k),
      getRange: async (k, from, to) => {
        const got = await b.getRange!(k, from, to);
        if (got !== null && k === target && from === 0) {
          const copy = Buffer.from(got);
          copy[copy.length - 1]! ^= 1;
          return copy;
        }
        return got;
      },
      put: (k, body, c) => b.put(k, body, c),
      delete: (k) => b.delete(k),
      list: (p) => b.list(p),
    };
    const dst = tmpDir('dl-bad-dst');
    await expect(restoreReplica(dst, { objectStore: flipping, prefix: 'sess/dlbad', rangeBytes: 4096 })).rejects.toMatchObject({ code: 'CORRUPT', details: { file: target } });
    expect(fs.existsSync(path.join(dst, 'log'))).toBe(false);
    expect(fs.readdirSync(dst)).toEqual([]);
  }, 120_000);
});

describe.skipIf(rgwMissing)('restore retries GETs that fail transiently', () => {
  it('timeouts and 5xx on GETs (the manifest too) are tried again with backoff; one that keeps failing ends the restore REPLICA_UNAVAILABLE, nothing written', async () => {
    const inner = await bucket();
    const a = await SpanStore.open(tmpDir('rt-src'), { durability: 'group', replica: { objectStore: inner, prefix: 'sess/rt' } });
    await a.appendMany(Array.from({ length: 200 }, (_, i) => turn(i + 1, ' padding'.repeat(20))));
    await a.close();
    const b = new FaultyObjectStore(inner);
    b.inject({ kind: '5xx', op: 'get', keyIncludes: 'manifest', count: 2 });
    b.inject({ kind: 'timeout', op: 'get', keyIncludes: '/e1/', count: 3, delayMs: 5 });
    const dst = tmpDir('rt-dst');
    const r = await restoreReplica(dst, { objectStore: b, prefix: 'sess/rt', rangeBytes: 16 * 1024 });
    expect(b.counts.injected).toBe(5);
    expect(r.snapshot.state).toBe('written');
    const c = await SpanStore.open(dst, { durability: 'group' });
    expect(c.get(200)?.text).toBe(turn(200, ' padding'.repeat(20)).text);
    await c.close();

    const b2 = new FaultyObjectStore(inner);
    const { manifest: m } = (await readManifest(inner, 'sess/rt'))!;
    const key = m.open!.chunks[0]?.key ?? m.segments[0]!.key;
    b2.inject({ kind: 'throttle', op: 'get', keyIncludes: key, count: Number.POSITIVE_INFINITY });
    const dst2 = tmpDir('rt-dst2');
    await expect(restoreReplica(dst2, { objectStore: b2, prefix: 'sess/rt' })).rejects.toMatchObject({ code: 'REPLICA_UNAVAILABLE', details: { key } });
    expect(b2.counts.injected).toBe(GET_ATTEMPTS);
    expect(fs.readdirSync(dst2)).toEqual([]);
  }, 120_000);
});
