/**
 * Reading the log's files for a ship: byte ranges, and the open segment's new whole batches
 * (never the reserved zeros after the last record).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { HEADER_BYTES, readHeader, walkRecords, type LocalSegment } from './log-files.js';

/** The most a ship reads at once; past it, it ships what it read and goes again. */
export const MAX_READ = 16 * 1024 * 1024;

/** Bytes [from, to) of `file` (fewer at its end), on the calling thread. */
export function readRangeSync(file: string, from: number, to: number): Buffer {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(to - from);
    let got = 0;
    while (got < buf.length) {
      const n = fs.readSync(fd, buf, got, buf.length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads up to 1 MiB on the calling thread (three thread-pool hops cost more on a busy machine than the read), more on the pool. */
export async function readRange(file: string, from: number, to: number): Promise<Buffer> {
  if (to - from <= 1 << 20) return readRangeSync(file, from, to);
  const fh = await fsp.open(file, 'r');
  try {
    const buf = Buffer.alloc(to - from);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await fh.read(buf, got, buf.length - got, from + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return buf.subarray(0, got);
  } finally {
    await fh.close();
  }
}

/** First read of a ship: the new records of a turn or a burst fit (a segment's file runs on past them in zeroed reserved blocks). */
export const FIRST_READ = 64 * 1024;

/**
 * The whole batches of `seg` from offset `from` (a batch boundary; 0: the header first),
 * with ids from `nextId` and below `bound`. Reads a little and more only while the walk
 * runs out of bytes mid-record: the file is written in reserved blocks whose zeros end the
 * walk, so reading to the file's size would read megabytes of them at every ship. Stops at
 * MAX_READ (`more`: a ship again at once).
 */
export function readWholeBatches(seg: LocalSegment, from: number, nextId: number, bound: number): { bytes: Buffer; end: number; nextId: number; more: boolean } {
  let end = from;
  let next = nextId;
  let bytes: Buffer = Buffer.alloc(0);
  for (let want = FIRST_READ; ; want *= 4) {
    const to = Math.min(seg.size, from + Math.min(want, MAX_READ));
    if (to <= from) return { bytes, end, nextId: next, more: false };
    bytes = readRangeSync(seg.file, from, to);
    let skip = 0;
    let short = bytes.length < HEADER_BYTES;
    if (from === 0 && bytes.length >= HEADER_BYTES) {
      readHeader(bytes, seg.file);
      skip = HEADER_BYTES;
      end = HEADER_BYTES;
    }
    if (from !== 0 || bytes.length >= HEADER_BYTES) {
      const w = walkRecords(bytes.subarray(skip), from + skip, nextId, bound);
      end = Math.max(end, w.end);
      next = w.nextId;
      short = w.short;
    }
    // The walk ended on zeros, a record still landing, or the bound: that is all there is now.
    if (!short || to === seg.size) return { bytes, end, nextId: next, more: false };
    if (to - from >= MAX_READ) return { bytes, end, nextId: next, more: true };
  }
}
