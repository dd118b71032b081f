// The commit point rests on the object store's conditional PUT: checked against the real RGW
// (If-None-Match: * creates once, If-Match replaces only the version read), and the manifest
// commit built on it (a stale ETag loses; a lost response whose write was applied is known).
import { describe, expect, it } from 'vitest';
import { commitManifest, encodeManifest, manifestKey, readManifest, type Manifest } from '../../src/replica/manifest.js';
import { FaultyObjectStore, ObjectStoreError } from '../../src/replica/index.js';
import { bucket, rgwMissing } from './helpers.js';

if (rgwMissing) console.warn(`skipping test/replica: ${rgwMissing}`);

function manifest(epoch: number, owner: string): Manifest {
  return { format: 'spanguard-replica', version: 1, logTag: '0123456789abcdef', logStart: 1, epoch, owner, committedAt: Date.now(), nextId: 1, segments: [], open: null };
}

describe.skipIf(rgwMissing)('RGW conditional PUT', () => {
  it('If-None-Match: * lets exactly one of 16 concurrent creators win', async () => {
    const b = await bucket();
    const res = await Promise.allSettled(Array.from({ length: 16 }, (_, i) => b.put('k', Buffer.from(`v${i}`), { ifNoneMatch: '*' })));
    expect(res.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of res) if (r.status === 'rejected') expect((r.reason as ObjectStoreError).kind).toBe('precondition');
  });

  it('If-Match replaces only the version whose ETag it names, once among 8 concurrent writers', async () => {
    const b = await bucket();
    const { etag } = await b.put('k', Buffer.from('a'));
    await expect(b.put('k', Buffer.from('x'), { ifMatch: '"00000000000000000000000000000000"' })).rejects.toMatchObject({ kind: 'precondition' });
    const res = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => b.put('k', Buffer.from(`w${i}`), { ifMatch: etag })));
    expect(res.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const winner = res.findIndex((r) => r.status === 'fulfilled');
    expect(Buffer.from((await b.get('k'))!.body).toString()).toBe(`w${winner}`);
  });
});

describe.skipIf(rgwMissing)('manifest commit', () => {
  it('a writer holding a stale ETag cannot overwrite a newer manifest', async () => {
    const b = await bucket();
    const first = await commitManifest(b, 'p', null, manifest(1, 'a'));
    expect(first).not.toBeNull();
    expect(await commitManifest(b, 'p', null, manifest(1, 'z'))).toBeNull();
    const second = await commitManifest(b, 'p', first, manifest(2, 'b'));
    expect(second).not.toBeNull();
    expect(await commitManifest(b, 'p', first, manifest(2, 'a'))).toBeNull();
    expect((await readManifest(b, 'p'))!.manifest).toMatchObject({ epoch: 2, owner: 'b' });
  });

  it('a commit the server applied but whose response was lost counts as committed; one it did not apply is an error', async () => {
    const inner = await bucket();
    const b = new FaultyObjectStore(inner);
    const etag = await commitManifest(b, 'p', null, manifest(1, 'a'));
    b.inject({ kind: 'lost-response', keyIncludes: 'manifest' });
    const next = manifest(2, 'a');
    const applied = await commitManifest(b, 'p', etag, next);
    expect(applied).not.toBeNull();
    expect(Buffer.from((await inner.get(manifestKey('p')))!.body).equals(Buffer.from(encodeManifest(next)))).toBe(true);
    b.inject({ kind: '5xx', keyIncludes: 'manifest' });
    await expect(commitManifest(b, 'p', applied, manifest(3, 'a'))).rejects.toMatchObject({ kind: 'transient' });
    expect((await readManifest(inner, 'p'))!.manifest.epoch).toBe(2);
  });
});
