// Faults on the way to the bucket: timeouts, 5xx, throttling, a full bucket, a response lost
// after the server applied the PUT. The shipper retries with backoff, reports nothing as
// shipped before the manifest PUT naming it succeeded, and recovers without fencing itself.
import { describe, expect, it } from 'vitest';
import { FaultyObjectStore } from '../../src/replica/index.js';
import { readManifest } from '../../src/replica/manifest.js';
import { CLAIM_ATTEMPTS } from '../../src/replica/shipper.js';
import { bucket, rgwMissing, storesClosedAfterEach, tmpDir, turn } from './helpers.js';

const openStore = storesClosedAfterEach();

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
}

describe.skipIf(rgwMissing)('nothing is reported shipped before its PUT succeeded', () => {
  it('while data-object PUTs time out, the manifest and replicaStatus stay where they were', async () => {
    const inner = await bucket();
    const b = new FaultyObjectStore(inner);
    const s = await openStore(tmpDir('to'), b, 'sess/t', { segmentBytes: 8192, durability: 'group', replicaOptions: { inlineBytes: 1024, intervalMs: 10 } });
    await s.append(turn(1));
    await until(() => s.replicaStatus()!.shippedThroughId >= 1);
    const before = s.replicaStatus()!.shippedThroughId;
    b.inject({ kind: 'timeout', keyIncludes: '/e', count: 4, delayMs: 30 });
    const ids = await s.appendMany(Array.from({ length: 30 }, (_, i) => turn(i + 2, ' long output'.repeat(20))));
    await until(() => b.counts.injected >= 2);
    expect(s.replicaStatus()!.shippedThroughId).toBe(before);
    expect((await readManifest(inner, 'sess/t'))!.manifest.nextId).toBe(before + 1);
    expect(s.replicaStatus()!.lastError?.message).toMatch(/timed out/);
    await until(() => s.replicaStatus()!.shippedThroughId >= ids[ids.length - 1]!);
    expect(s.replicaStatus()).toMatchObject({ lastError: null, fenced: false });
    expect((await readManifest(inner, 'sess/t'))!.manifest.nextId).toBeGreaterThan(ids[ids.length - 1]!);
  });

  it('a manifest PUT applied whose response was lost is recognised as this owner’s commit, not a takeover', async () => {
    const inner = await bucket();
    const b = new FaultyObjectStore(inner);
    const s = await openStore(tmpDir('lost'), b, 'sess/l', { durability: 'replicated' });
    await s.append(turn(1));
    b.inject({ kind: 'lost-response', keyIncludes: 'manifest', count: 2 });
    const id = await s.append(turn(2));
    const id2 = await s.append(turn(3));
    expect(s.replicaStatus()).toMatchObject({ fenced: false, shippedThroughId: id2 });
    expect((await readManifest(inner, 'sess/l'))!.manifest.nextId).toBe(id2 + 1);
    expect(id2).toBe(id + 1);
  });
});

describe.skipIf(rgwMissing)('retries back off', () => {
  it('consecutive failures wait longer each time (base doubling, jittered by at most half) and a success resets them', async () => {
    const inner = await bucket();
    const b = new FaultyObjectStore(inner);
    const s = await openStore(tmpDir('bo'), b, 'sess/bo', { durability: 'replicated', replicaOptions: { retryBaseMs: 40, retryMaxMs: 1000 } });
    await s.append(turn(1));
    b.inject({ kind: 'throttle', keyIncludes: 'manifest', count: 4 });
    const t0 = performance.now();
    await s.append(turn(2));
    const took = performance.now() - t0;
    // Waits after failures 1..4: 40, 80, 160, 320 ms, each at least half: >= 300 ms in all.
    expect(took).toBeGreaterThanOrEqual(300);
    expect(s.replicaStatus()).toMatchObject({ failures: 0, lastError: null });
  });
});

describe.skipIf(rgwMissing)('the claim at open is tried again when it fails transiently', () => {
  it('5xx and a timeout on the manifest during the open: the store opens, claims, and ships', async () => {
    const inner = await bucket();
    const b = new FaultyObjectStore(inner);
    b.inject({ kind: '5xx', op: 'get', keyIncludes: 'manifest', count: 2 });
    b.inject({ kind: 'timeout', op: 'put', keyIncludes: 'manifest', count: 1, delayMs: 5 });
    const s = await openStore(tmpDir('claim'), b, 'sess/claim', { durability: 'replicated' });
    expect(b.counts.injected).toBe(3);
    const id = await s.append(turn(1));
    expect((await readManifest(inner, 'sess/claim'))!.manifest).toMatchObject({ epoch: 1, nextId: id + 1 });
  });

  it('a claim that keeps failing ends the open with REPLICA_UNAVAILABLE', async () => {
    const inner = await bucket();
    const b = new FaultyObjectStore(inner);
    b.inject({ kind: 'throttle', op: 'get', keyIncludes: 'manifest', count: Number.POSITIVE_INFINITY });
    await expect(openStore(tmpDir('claim-fail'), b, 'sess/claim-fail', { durability: 'replicated' })).rejects.toMatchObject({ code: 'REPLICA_UNAVAILABLE' });
    expect(b.counts.injected).toBe(CLAIM_ATTEMPTS);
  });
});
