// Reads take span ids as non-negative integers: anything else is INVALID_ARGUMENT, never a raw
// TypeError (a BigInt) nor a silent empty answer (a number in place of the array).
import { describe, expect, it } from 'vitest';
import { storesClosedAfterEach } from './helpers.js';

const openStore = storesClosedAfterEach();

describe('get and getMany take non-negative integer ids', () => {
  it('getMany: a BigInt, a string, a fraction, a negative id or a non-array is INVALID_ARGUMENT', async () => {
    const s = await openStore();
    for (const ids of [[1n], ['1'], [1.5], [-1], [Number.NaN], 5, null, '1', new Set([1])])
      expect(() => s.getMany(ids as number[]), String(ids)).toThrowError(expect.objectContaining({ name: 'SpanguardError', code: 'INVALID_ARGUMENT' }));
  });
  it('getMany: unknown ids are holes, known ids their spans', async () => {
    const s = await openStore();
    expect(s.getMany([1, 999, 0]).map((x) => x?.text)).toEqual(['the first turn', undefined, undefined]);
  });
  it('get: a BigInt or a string is INVALID_ARGUMENT', async () => {
    const s = await openStore();
    for (const id of [1n, '1', -1, 0.5]) expect(() => s.get(id as number)).toThrowError(expect.objectContaining({ name: 'SpanguardError', code: 'INVALID_ARGUMENT' }));
  });
});
