// Every CRC32C implementation the CPU has (tables, SSE4.2 crc32 3-way, PCLMULQDQ folding,
// VPCLMULQDQ folding) gives the reference value, plain and over its copy, on random
// lengths 0..5000 at random source and destination alignments; SPANGUARD_CRC32C forces the
// process-wide choice.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { testing, type CrcImpl } from './helpers.js';

function xorshift(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
}

/** Bit-at-a-time CRC32C, independent of the native code. */
function reference(b: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of b) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

const all: CrcImpl[] = ['table', 'sse42', 'clmul', 'vpclmul'];

describe('CRC32C implementations', () => {
  const { supported, active } = testing.crc32cImpls();

  it('the table path is always there; the active one is the best supported', () => {
    expect(supported).toContain('table');
    expect(supported).toContain(active);
    if (!process.env.SPANGUARD_CRC32C) expect(active).toBe(all.filter((w) => supported.includes(w)).at(-1));
  });

  it('each agrees with a bit-at-a-time reference on the check value and random lengths 0..5000 and alignments', () => {
    const check = new TextEncoder().encode('123456789');
    for (const impl of supported) {
      expect(testing.crc32cImpl(check, impl)).toBe(0xe3069283);
      expect(testing.crc32cImpl(check, impl, true)).toBe(0xe3069283);
    }
    const rnd = xorshift(0x5eed);
    const big = new Uint8Array(5100);
    for (let i = 0; i < big.length; i++) big[i] = rnd() & 0xff;
    // Random lengths, plus every length around the fold steps (16, 64, 128, 256, 512 bytes).
    const lengths: number[] = [];
    for (let i = 0; i < 300; i++) lengths.push(rnd() % 5001);
    for (let n = 0; n <= 600; n++) lengths.push(n);
    for (const m of [1024, 2048, 4096, 5000]) for (let d = -17; d <= 0; d++) lengths.push(m + d);
    for (const n of lengths) {
      const off = rnd() % 64;
      const b = big.subarray(off, off + Math.min(n, big.length - off));
      const want = reference(b);
      for (const impl of supported) {
        expect(testing.crc32cImpl(b, impl), `${impl}, length ${b.length} at ${off}`).toBe(want);
        expect(testing.crc32cImpl(b, impl, true, rnd() % 64), `${impl} copy, length ${b.length} at ${off}`).toBe(want);
      }
    }
  });

  it('the copy reports non-ASCII wherever the one high byte is', () => {
    const ascii = Uint8Array.from({ length: 1200 }, (_, i) => 32 + (i % 90));
    for (const n of [1, 15, 16, 63, 64, 65, 127, 128, 129, 300, 511, 512, 513, 1200]) {
      for (const at of new Set([0, n >> 1, n - 1])) {
        const b = ascii.slice(0, n);
        for (const impl of supported) expect(testing.crc32cImpl(b, impl, true, at)).toBe(reference(b));
        b[at] = 0xc3;
        // crc32cImpl throws if the copy's ASCII bit is wrong.
        for (const impl of supported) expect(testing.crc32cImpl(b, impl, true, 3)).toBe(reference(b));
      }
    }
  });

  it('SPANGUARD_CRC32C forces each supported implementation process-wide (and an unsupported name is ignored)', () => {
    // A child loads the addon the way the kill -9 children do (dist/, honouring SPANGUARD_ADDON_PATH).
    const dist = pathToFileURL(path.join(__dirname, '../../dist/native.js')).href;
    const script = `import(${JSON.stringify(dist)}).then((m) => process.stdout.write(m.addon()._testing.crc32cImpls().active))`;
    const run = (value: string) =>
      execFileSync(process.execPath, ['-e', script], { env: { ...process.env, SPANGUARD_CRC32C: value } }).toString();
    for (const impl of supported) expect(run(impl)).toBe(impl);
    const got = run('nonsense');
    expect(got).toBe(all.filter((w) => supported.includes(w)).at(-1));
  });

  it('an unsupported implementation is refused by the test hook, not silently replaced', () => {
    for (const impl of all.filter((w) => !supported.includes(w))) expect(() => testing.crc32cImpl(new Uint8Array(1), impl)).toThrow();
    expect(() => testing.crc32cImpl(new Uint8Array(1), 'nope' as CrcImpl)).toThrow();
  });
});
