// An append's hint ("records were just written: ship now") costs a ship step only when the
// last ship found something: after a ship that found nothing new, hints wait for a commit or
// a waiter. Appends still resolve only once their commit succeeded.
import { describe, expect, it } from 'vitest';
import { readManifest } from '../../src/replica/manifest.js';
import { bucket, rgwMissing, storesClosedAfterEach, tmpDir, turn } from './helpers.js';

const openStore = storesClosedAfterEach();

describe.skipIf(rgwMissing)('append hints after a ship that found nothing', () => {
  it('16 appenders in replicated mode: about one empty ship per commit, not one per append', async () => {
    const b = await bucket();
    const s = await openStore(tmpDir('hints'), b, 'sess/h', { durability: 'replicated', replicaOptions: { intervalMs: 1000 } });
    const T = 200;
    let next = 1;
    const acked: number[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next <= T) {
          const t = next++;
          acked.push(await s.append(turn(t)));
        }
      }),
    );
    const st = s.replicaStatus()!;
    expect(st.ships.commits).toBeGreaterThan(0);
    expect(st.ships.emptyShips).toBeLessThanOrEqual(2 * st.ships.commits + 4);
    expect(st.ships.hintsDropped).toBeGreaterThan(0);
    // Every acknowledged id is in the bucket.
    expect((await readManifest(b, 'sess/h'))!.manifest.nextId).toBeGreaterThan(Math.max(...acked));
  }, 120_000);
});
