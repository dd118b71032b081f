// Restore: another directory, the bucket alone. Every object is checked against the manifest,
// the log opens, the indexes rebuild from it and the event trail replays: spans, ids, events,
// the verdict and audits survive the move; a damaged object is refused, nothing written.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { restoreReplica } from '../../src/replica/index.js';
import { readManifest } from '../../src/replica/manifest.js';
import { bucket, rgwMissing, storesClosedAfterEach, tmpDir, turn } from './helpers.js';

const openStore = storesClosedAfterEach();

describe.skipIf(rgwMissing)('restore from the bucket alone', () => {
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
