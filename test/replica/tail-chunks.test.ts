// The open segment's tail chunks: a long open segment is named by a few chunks, not one per
// ship. TAIL_FANIN chunks of one level are merged into one of the next (their bytes read
// again from the local log and checked against the CRC32Cs the manifest holds), the merged
// objects are deleted once the manifest naming the new one is committed, and a restore
// gets the same bytes.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { restoreReplica } from '../../src/replica/index.js';
import { readManifest, openBytes } from '../../src/replica/manifest.js';
import { crc32c } from '../../src/replica/crc32c.js';
import { TAIL_FANIN } from '../../src/replica/shipper.js';
import type { S3ObjectStore } from '../../src/replica/index.js';
import { bucket, rgwMissing, storesClosedAfterEach, tmpDir, turn } from './helpers.js';

const openStore = storesClosedAfterEach();

describe.skipIf(rgwMissing)('tail chunks are merged by level', () => {
  it('a long open segment is named by fewer than TAIL_FANIN chunks per level; the merged objects are deleted; a restore gets the same bytes', async () => {
    const b = (await bucket()) as S3ObjectStore;
    const dir = tmpDir('merge');
    // Every commit carries more than inlineBytes: one chunk per commit.
    const s = await openStore(dir, b, 'sess/m', { durability: 'replicated', replicaOptions: { inlineBytes: 64 } });
    const n = TAIL_FANIN * TAIL_FANIN + 3 * TAIL_FANIN + 5;
    for (let i = 1; i <= n; i++) await s.append(turn(i));
    const { manifest: m } = (await readManifest(b, 'sess/m'))!;
    expect(m.segments).toEqual([]);
    const chunks = m.open!.chunks;
    const levels = chunks.map((c) => c.level ?? 0);
    // Levels never rise along the list, fewer than TAIL_FANIN of each, and a level-2 chunk exists.
    expect(levels).toEqual([...levels].sort((x, y) => y - x));
    for (const l of new Set(levels)) expect(levels.filter((x) => x === l).length).toBeLessThan(TAIL_FANIN);
    expect(Math.max(...levels)).toBe(2);
    expect(chunks.length).toBeLessThan(2 * TAIL_FANIN);
    // Each chunk object holds exactly the local log's bytes of its range.
    const seg = fs.readdirSync(path.join(dir, 'log')).find((f) => f.startsWith('seg-'))!;
    const local = fs.readFileSync(path.join(dir, 'log', seg));
    for (const c of chunks) {
      const body = (await b.get(c.key))!.body;
      expect(crc32c(body)).toBe(c.crc32c);
      expect(Buffer.from(body).equals(local.subarray(c.from, c.to))).toBe(true);
    }
    await s.close();
    // Once closed (its last deletes done), the bucket holds no tail object the manifest does not name.
    const named = new Set((await readManifest(b, 'sess/m'))!.manifest.open!.chunks.map((c) => c.key));
    const tails = (await b.list('sess/m/')).map((o) => o.key).filter((k) => /\/tail-/.test(k));
    expect(tails.filter((k) => !named.has(k))).toEqual([]);
    // A restore from the merged chunks gives back every turn.
    const to = tmpDir('merge-dst');
    const r = await restoreReplica(to, { objectStore: b, prefix: 'sess/m' });
    expect(r.manifest.nextId).toBeGreaterThan(n);
    const c = await openStore(to, b, 'sess/m', { durability: 'replicated' });
    for (const id of [1, TAIL_FANIN * 7, n]) expect(c.get(id)?.text).toBe(turn(id).text);
    expect(openBytes(r.manifest)).toBeGreaterThan(0);
  }, 120_000);

  it('a merge whose local bytes differ from the chunks the bucket holds fails the ship (REPLICA_MISMATCH) and uploads nothing', async () => {
    const b = (await bucket()) as S3ObjectStore;
    const dir = tmpDir('merge-bad');
    const s = await openStore(dir, b, 'sess/bad', { durability: 'replicated', replicaOptions: { inlineBytes: 64, replicatedTimeoutMs: 1500 } });
    for (let i = 1; i <= TAIL_FANIN - 1; i++) await s.append(turn(i));
    const before = (await readManifest(b, 'sess/bad'))!.manifest;
    expect(before.open!.chunks.length).toBe(TAIL_FANIN - 1);
    // Flip a byte inside the first shipped chunk of the local segment.
    const seg = fs.readdirSync(path.join(dir, 'log')).find((f) => f.startsWith('seg-'))!;
    const fd = fs.openSync(path.join(dir, 'log', seg), 'r+');
    const at = before.open!.chunks[0]!.from + 100;
    const one = Buffer.alloc(1);
    fs.readSync(fd, one, 0, 1, at);
    one[0]! ^= 0xff;
    fs.writeSync(fd, one, 0, 1, at);
    fs.closeSync(fd);
    const err = await s.append(turn(TAIL_FANIN)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'REPLICA_UNAVAILABLE' });
    expect(s.replicaStatus()!.lastError).toMatchObject({ code: 'REPLICA_MISMATCH' });
    expect(s.replicaStatus()!.lastError!.message).toMatch(/differ between this log and the bucket/);
    const after = (await readManifest(b, 'sess/bad'))!.manifest;
    expect(after.open!.chunks).toEqual(before.open!.chunks);
    expect((await b.list('sess/bad/')).filter((o) => /tail-\d{20}-\d{12}-\d{12}\.log$/.test(o.key))).toEqual([]);
  }, 60_000);
});
