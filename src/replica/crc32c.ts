/**
 * CRC32C (Castagnoli), the log's own checksum (docs/FORMAT.md), in JS: slicing-by-8 tables.
 * The replica checks shipped objects with it and writes a restored log's EXTENT slot with it.
 */
const TABLES: Uint32Array[] = (() => {
  const t: Uint32Array[] = [];
  const t0 = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t0[i] = c >>> 0;
  }
  t.push(t0);
  for (let s = 1; s < 8; s++) {
    const prev = t[s - 1]!;
    const cur = new Uint32Array(256);
    for (let i = 0; i < 256; i++) cur[i] = ((prev[i]! >>> 8) ^ t0[prev[i]! & 0xff]!) >>> 0;
    t.push(cur);
  }
  return t;
})();

/** CRC32C of `bytes`, continuing from `crc` (the CRC of the bytes before them; 0 to start). */
export function crc32c(bytes: Uint8Array, crc = 0): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES as [Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array];
  let c = ~crc >>> 0;
  let i = 0;
  const n = bytes.length;
  for (; i + 8 <= n; i += 8) {
    const a = (c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24))) >>> 0;
    c =
      t7[a & 0xff]! ^
      t6[(a >>> 8) & 0xff]! ^
      t5[(a >>> 16) & 0xff]! ^
      t4[a >>> 24]! ^
      t3[bytes[i + 4]!]! ^
      t2[bytes[i + 5]!]! ^
      t1[bytes[i + 6]!]! ^
      t0[bytes[i + 7]!]!;
  }
  for (; i < n; i++) c = t0[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
