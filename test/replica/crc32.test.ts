// The snapshot files' checksum: CRC-32 (IEEE), from zlib where Node has it, from a table in
// JS otherwise — the same value either way, so a snapshot shipped by one Node restores on another.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { crc32, crc32InJs } from '../../src/replica/crc32.js';

describe('CRC-32 of snapshot files', () => {
  it('is the IEEE CRC-32 (check value of "123456789"), on both paths', () => {
    const check = Buffer.from('123456789', 'latin1');
    expect(crc32(check)).toBe(0xcbf43926);
    expect(crc32InJs(check)).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
  });

  it('the JS path agrees with the one in use on arbitrary bytes', () => {
    for (const n of [1, 7, 64, 4099]) {
      const b = randomBytes(n);
      expect(crc32InJs(b)).toBe(crc32(b));
    }
  });
});
