// A turn's timestamp is an integer number of milliseconds since the epoch, >= 0; anything
// else is INVALID_ARGUMENT and the batch writes nothing (the log would truncate 1.5 to 1).
import { describe, expect, it } from 'vitest';
import { expectRefused, storesClosedAfterEach } from './helpers.js';

const openStore = storesClosedAfterEach();

describe('timestamps must be integers >= 0 (ms since the epoch)', () => {
  for (const timestamp of [1.5, -1, -0.5, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY, '1700000000000', 1n, null, {}]) {
    it(`${typeof timestamp === 'bigint' ? `${timestamp}n` : typeof timestamp === 'number' ? String(timestamp) : JSON.stringify(timestamp)} → INVALID_ARGUMENT`, async () =>
      expectRefused(await openStore(), { timestamp: timestamp as number }, 'INVALID_ARGUMENT', /timestamp must be an integer/));
  }
  it('0, an ordinary time and 2^53 - 1 are stored as given; absent is now', async () => {
    const s = await openStore();
    const before = Date.now();
    const ids = await s.appendMany([0, 1_700_000_000_123, 2 ** 53 - 1, undefined].map((timestamp, i) => ({ turn: 2 + i, role: 'user', text: 'x', ...(timestamp === undefined ? {} : { timestamp }) })));
    const got = s.getMany(ids).map((x) => x!.timestamp);
    expect(got.slice(0, 3)).toEqual([0, 1_700_000_000_123, 2 ** 53 - 1]);
    expect(got[3]).toBeGreaterThanOrEqual(before);
  });
});
