/**
 * CRC-32 (IEEE 802.3, zlib's) of the index snapshot files. Those are ~1.6 KiB per span (at
 * 10⁵ spans ~170 MiB, four times the log): checked at every snapshot and every restore, they
 * are the restore's largest cost after the download. Node's zlib computes this CRC natively
 * (`zlib.crc32`, Node ≥ 20.15; ~1 GB/s here against ~190 MB/s for the JS CRC32C); older
 * Nodes get the same value from a table in JS.
 */
import zlib from 'node:zlib';

const native = (zlib as unknown as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

let table: Uint32Array | null = null;
function jsCrc32(bytes: Uint8Array): number {
  if (table === null) {
    table = new Uint32Array(256);
    for (let i = 0; i < 256; i++) {
      let c = i;
      for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
      table[i] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = table[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** CRC-32 of `bytes` (the value of `"123456789"` is `0xCBF43926`). */
export function crc32(bytes: Uint8Array): number {
  return native ? native(bytes) >>> 0 : jsCrc32(bytes);
}

/** @internal The JS path, whatever the Node version (tests compare it with zlib's). */
export const crc32InJs = jsCrc32;
