// Shipping: sealed segments go up whole under their own keys with their CRC32C, the open
// segment's new whole batches follow (inline in the manifest, then as tail chunks), and
// replicaStatus() says how far the bucket reaches. Nothing is reported shipped before the
// manifest PUT naming it succeeded.
import { describe, expect, it } from 'vitest';
import { crc32c } from '../../src/replica/crc32c.js';
import { readManifest, openBytes } from '../../src/replica/manifest.js';
import { FaultyObjectStore } from '../../src/replica/index.js';
import { bucket, rgwMissing, storesClosedAfterEach, tmpDir, turn } from './helpers.js';

const openStore = storesClosedAfterEach();

describe.skipIf(rgwMissing)('sealed segments and the open tail', () => {
  it('every sealed segment is one object with the manifest CRC32C; the open segment ships as chunks and inline bytes', async () => {
    const b = await bucket();
    const s = await openStore(tmpDir('seal'), b, 'sess/a', { segmentBytes: 8192, durability: 'replicated', replicaOptions: { inlineBytes: 2048 } });
    const pad = ' and more detail'.repeat(20);
    for (let i = 1; i <= 120; i += 4) await s.appendMany([turn(i, pad), turn(i + 1, pad), turn(i + 2, pad), turn(i + 3, pad)]);
    const { manifest: m } = (await readManifest(b, 'sess/a'))!;
    expect(m.segments.length).toBeGreaterThan(3);
    for (const seg of m.segments) {
      const obj = (await b.get(seg.key))!;
      expect(obj.body.length).toBe(seg.bytes);
      expect(crc32c(obj.body)).toBe(seg.crc32c);
      expect(seg.key).toMatch(/^sess\/a\/e\d+\/seg-\d{20}\.log$/);
    }
    expect(openBytes(m)).toBeGreaterThan(64);
    expect(m.nextId).toBeGreaterThanOrEqual(121);
    expect(s.replicaStatus()).toMatchObject({ shippedThroughId: m.nextId - 1, lastError: null, fenced: false });
  });

  it('background shipping (group) reaches the bucket within the interval and reports nothing pending after', async () => {
    const b = await bucket();
    const s = await openStore(tmpDir('bg'), b, 'sess/b', { durability: 'group', replicaOptions: { intervalMs: 30 } });
    const ids = await s.appendMany(Array.from({ length: 50 }, (_, i) => turn(i + 1)));
    const last = ids[ids.length - 1]!;
    for (let i = 0; i < 200 && s.replicaStatus()!.shippedThroughId < last; i++) await new Promise((r) => setTimeout(r, 10));
    expect(s.replicaStatus()!.shippedThroughId).toBeGreaterThanOrEqual(last);
    expect((await readManifest(b, 'sess/b'))!.manifest.nextId).toBeGreaterThan(last);
  });
});

describe.skipIf(rgwMissing)('replicated durability', () => {
  it('append resolves only once a manifest PUT covering its ids succeeded; failed PUTs are retried', async () => {
    const inner = await bucket();
    const b = new FaultyObjectStore(inner);
    const s = await openStore(tmpDir('repl'), b, 'sess/c', { durability: 'replicated' });
    await s.append(turn(1));
    b.inject({ kind: '5xx', keyIncludes: 'manifest', count: 3 });
    b.inject({ kind: 'throttle', keyIncludes: 'manifest', count: 2 });
    let done = false;
    const p = s.append(turn(2)).then((id) => {
      done = true;
      return id;
    });
    // While the commits fail, the append has not resolved and the bucket does not hold it.
    for (let i = 0; i < 200 && b.counts.injected < 3; i++) await new Promise((r) => setTimeout(r, 5));
    expect(done).toBe(false);
    expect(s.replicaStatus()!.lastError?.message).toMatch(/injected/);
    const id = await p;
    const { manifest: m } = (await readManifest(inner, 'sess/c'))!;
    expect(m.nextId).toBeGreaterThan(id);
    expect(b.counts.injected).toBe(5);
    expect(s.replicaStatus()).toMatchObject({ lastError: null, shippedThroughId: m.nextId - 1 });
  });

  it('an append the bucket does not take in time rejects REPLICA_UNAVAILABLE naming the last shipped id; its spans stay stored', async () => {
    const inner = await bucket();
    const b = new FaultyObjectStore(inner);
    const s = await openStore(tmpDir('unavail'), b, 'sess/d', { durability: 'replicated', replicaOptions: { replicatedTimeoutMs: 200 } });
    const first = await s.append(turn(1));
    b.inject({ kind: 'full', keyIncludes: 'manifest', count: Number.POSITIVE_INFINITY });
    const err = await s.append(turn(2)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'REPLICA_UNAVAILABLE', details: { shippedThroughId: first } });
    expect(s.get(first + 1)?.text).toBe(turn(2).text);
    // The verdict says the remote copy is behind.
    expect(s.verdict().state).not.toBe('lossless');
    expect(s.verdict().reasons.join(' ')).toMatch(/behind/);
    b.clear();
    // A retry with the same key is recognised; the shipper catches up.
    expect(await s.append(turn(2))).toBe(first + 1);
    for (let i = 0; i < 200 && s.replicaStatus()!.lastError !== null; i++) await new Promise((r) => setTimeout(r, 10));
    expect(s.verdict().state).toBe('lossless');
  });
});

describe.skipIf(rgwMissing)('pending bytes are whole batches not yet shipped, not the reserved zeros after them', () => {
  it('a replicated store whose every append resolved has nothing pending, though its segment file runs on in reserved blocks', async () => {
    const dir = tmpDir('pending');
    const b = await bucket();
    const s = await openStore(dir, b, 'sess/pending', { durability: 'replicated' });
    for (let i = 1; i <= 5; i++) await s.append(turn(i));
    const fs = await import('node:fs');
    const seg = fs.readdirSync(`${dir}/log`).find((f) => f.startsWith('seg-'))!;
    const { manifest: m } = (await readManifest(b, 'sess/pending'))!;
    expect(fs.statSync(`${dir}/log/${seg}`).size).toBeGreaterThan(openBytes(m));
    expect(s.replicaStatus()).toMatchObject({ shippedThroughId: 5, pendingBytes: 0 });
    await s.append(turn(6)); // written: pending until a ship; then nothing again
    expect(s.replicaStatus()!.pendingBytes).toBe(0);
  });
});
