// One owner at a time: a takeover bumps the owner epoch by conditional PUT; the old owner's
// next ship fails with REPLICA_FENCED and its store turns read-only — every later append is
// refused with the typed error, and nothing it appends after the takeover reaches a manifest.
import { describe, expect, it } from 'vitest';
import { restoreReplica } from '../../src/replica/index.js';
import { readManifest } from '../../src/replica/manifest.js';
import { bucket, rgwMissing, storesClosedAfterEach, tmpDir, turn } from './helpers.js';

const openStore = storesClosedAfterEach();

describe.skipIf(rgwMissing)('takeover fences the old owner', () => {
  it('replicated: the old owner append after the takeover rejects REPLICA_FENCED, later ones too; the new owner continues the ids', async () => {
    const b = await bucket();
    const old = await openStore(tmpDir('old'), b, 'sess/f', { durability: 'replicated' });
    const ids = await old.appendMany([turn(1), turn(2), turn(3)]);
    const epochBefore = old.replicaStatus()!.epoch;
    const dir = tmpDir('new');
    const r = await restoreReplica(dir, { objectStore: b, prefix: 'sess/f' });
    expect(r.manifest.epoch).toBe(epochBefore + 1);
    await expect(old.append(turn(4))).rejects.toMatchObject({ code: 'REPLICA_FENCED' });
    expect(old.replicaStatus()).toMatchObject({ fenced: true });
    await expect(old.append(turn(5))).rejects.toMatchObject({ code: 'REPLICA_FENCED' });
    expect(old.verdict().state).not.toBe('lossless');
    const fresh = await openStore(dir, b, 'sess/f', { durability: 'replicated' });
    const next = await fresh.append(turn(4));
    // Ids continue past everything the bucket held (the reopen may record its own events first).
    expect(next).toBeGreaterThanOrEqual(r.manifest.nextId);
    expect(r.manifest.nextId).toBe(ids[2]! + 1);
    const { manifest: m } = (await readManifest(b, 'sess/f'))!;
    expect(m.epoch).toBe(epochBefore + 2);
    expect(m.owner).toBe(fresh.replicaStatus()!.owner);
    expect(m.nextId).toBe(next + 1);
    // The old owner's close neither throws nor ships.
    await old.close();
    expect((await readManifest(b, 'sess/f'))!.manifest).toEqual(m);
  });

  it('group: the fenced owner learns it at its next ship and turns read-only', async () => {
    const b = await bucket();
    const old = await openStore(tmpDir('old-g'), b, 'sess/g', { durability: 'group', replicaOptions: { intervalMs: 10 } });
    await old.appendMany([turn(1), turn(2)]);
    await restoreReplica(tmpDir('new-g'), { objectStore: b, prefix: 'sess/g' });
    await old.append(turn(3));
    for (let i = 0; i < 300 && !old.replicaStatus()!.fenced; i++) await new Promise((r) => setTimeout(r, 10));
    expect(old.replicaStatus()).toMatchObject({ fenced: true, lastError: { code: 'REPLICA_FENCED' } });
    await expect(old.append(turn(4))).rejects.toMatchObject({ code: 'REPLICA_FENCED' });
    expect((await readManifest(b, 'sess/g'))!.manifest.nextId).toBeLessThan(old.stats().nextId);
  });

  it('opening a store whose bucket holds ids its log lacks is refused with REPLICA_MISMATCH', async () => {
    const b = await bucket();
    const dirA = tmpDir('a');
    const a = await openStore(dirA, b, 'sess/m', { durability: 'replicated' });
    await a.append(turn(1));
    await a.close();
    const other = await openStore(tmpDir('b'), b, 'sess/m', { durability: 'replicated' }).catch((e: unknown) => e);
    expect(other).toMatchObject({ code: 'REPLICA_MISMATCH' });
  });
});
