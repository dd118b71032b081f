// Restore: another directory, the bucket alone. Every object is checked against the manifest,
// the log opens, the indexes rebuild from it and the event trail replays: spans, ids, events,
// the verdict and audits survive the move; a damaged object is refused, nothing written.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { FaultyObjectStore, restoreReplica } from '../../src/replica/index.js';
import { readManifest } from '../../src/replica/manifest.js';
import { bucket, rgwMissing, storesClosedAfterEach, tmpDir, turn } from './helpers.js';

const openStore = storesClosedAfterEach();

describe.skipIf(rgwMissing)('restore from the bucket alone', () => {
  it('a prefix nothing was ever shipped under: REPLICA_MISMATCH with details.empty, and nothing written', async () => {
    const b = await bucket();
    const dir = tmpDir('empty');
    await expect(restoreReplica(dir, { objectStore: b, prefix: 'sess/never' })).rejects.toMatchObject({ code: 'REPLICA_MISMATCH', details: { prefix: 'sess/never', empty: true } });
    expect(fs.existsSync(path.join(dir, 'log'))).toBe(false);
  });
  it('spans, ids, events, verdict and audits survive; the restored store continues the ids', async () => {
    const b = await bucket();
    const a = await openStore(tmpDir('src'), b, 'sess/r', { segmentBytes: 16384, durability: 'replicated' });
    const pad = ' with a long tool output attached'.repeat(8);
    const ids: number[] = [];
    for (let i = 1; i <= 200; i += 10) ids.push(...(await a.appendMany(Array.from({ length: 10 }, (_, j) => turn(i + j, pad)))));
    const receipt = await a.compact({ evict: ids.slice(0, 40).filter((id) => !a.get(id)!.anchor), summary: { text: 'turns 1 to 40: build steps', turnStart: 1, turnEnd: 40 } });
    await a.audit();
    await a.pin('B-7919', ids[0]!);
    const verdict = a.verdict();
    const events = a.events();
    await a.close();

    const dir = tmpDir('dst');
    const r = await restoreReplica(dir, { objectStore: b, prefix: 'sess/r' });
    expect(r.manifest.segments.length).toBeGreaterThan(2);
    const c = await openStore(dir, b, 'sess/r', { segmentBytes: 16384, durability: 'replicated' });
    for (const id of ids) expect(c.get(id)?.text).toBe(turn(ids.indexOf(id) + 1, pad).text);
    expect(c.events()).toEqual(events);
    expect(c.verdict()).toEqual(verdict);
    expect(c.stats()).toMatchObject({ passes: 1, evicted: receipt.evicted.length });
    expect((await c.search('B-7919')).hits.length).toBeGreaterThan(0);
    const next = await c.append(turn(201));
    expect(next).toBe(r.manifest.nextId);
    expect((await readManifest(b, 'sess/r'))!.manifest.nextId).toBe(next + 1);
  });

  it('an object whose bytes differ from the manifest is refused (CORRUPT), and no log is written', async () => {
    const b = await bucket();
    const a = await openStore(tmpDir('src2'), b, 'sess/x', { segmentBytes: 8192, durability: 'replicated' });
    for (let i = 1; i <= 60; i++) await a.append(turn(i, ' padding'.repeat(30)));
    await a.close();
    const { manifest: m } = (await readManifest(b, 'sess/x'))!;
    const victim = m.segments[1]!;
    const body = Buffer.from((await b.get(victim.key))!.body);
    body[200] ^= 1;
    await b.put(victim.key, body);
    const dir = tmpDir('dst2');
    await expect(restoreReplica(dir, { objectStore: b, prefix: 'sess/x' })).rejects.toMatchObject({ code: 'CORRUPT', details: { file: victim.key } });
    expect(fs.existsSync(path.join(dir, 'log'))).toBe(false);
    await expect(SpanStore.open(dir, { readOnly: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe.skipIf(rgwMissing)('a restore that may lack acknowledged turns says so', () => {
  it('group owner that did not close: the restored verdict is degraded with a replica-gap reason, kept across reopen', async () => {
    const inner = await bucket();
    const b = new FaultyObjectStore(inner);
    const a = await openStore(tmpDir('gap'), b, 'sess/gap', { durability: 'group', replicaOptions: { intervalMs: 10 } });
    await a.appendMany([turn(1), turn(2)]);
    for (let i = 0; i < 300 && a.replicaStatus()!.shippedThroughId < 2; i++) await new Promise((r) => setTimeout(r, 10));
    b.inject({ kind: '5xx', count: Number.POSITIVE_INFINITY });
    await a.append(turn(3)); // acknowledged locally, never shipped: the owner "dies" here
    const dir = tmpDir('gap-dst');
    await restoreReplica(dir, { objectStore: inner, prefix: 'sess/gap' });
    const c = await openStore(dir, inner, 'sess/gap', { durability: 'group' });
    expect(c.verdict().state).toBe('degraded');
    expect(c.verdict().reasons.join(' ')).toMatch(/ran group and did not close: turns it acknowledged after id 2 may be missing/);
    await c.close();
    const again = await openStore(dir, inner, 'sess/gap', { durability: 'group' });
    expect(again.verdict().state).toBe('degraded');
    expect(fs.existsSync(path.join(dir, 'replica-restore.json'))).toBe(false);
  });

  it('group owner that closed: nothing acknowledged is missing, the restored verdict stays lossless', async () => {
    const b = await bucket();
    const a = await openStore(tmpDir('closed'), b, 'sess/closed', { durability: 'group' });
    await a.appendMany([turn(1), turn(2), turn(3)]);
    await a.close();
    const dir = tmpDir('closed-dst');
    const r = await restoreReplica(dir, { objectStore: b, prefix: 'sess/closed' });
    expect(r.manifest.closed).toBe(true);
    const c = await openStore(dir, b, 'sess/closed', { durability: 'group' });
    expect(c.verdict().state).toBe('lossless');
    expect(c.get(3)?.text).toBe(turn(3).text);
  });
});
