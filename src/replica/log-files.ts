/**
 * Read-only views of a store's log files, as docs/FORMAT.md lays them out: the segment list,
 * a segment header's log tag and start, `EXTENT`'s durable next, and a walk over the records
 * of a segment's bytes that stops at the end of the last whole batch. The replica never goes
 * through the native log for these: it ships the files' bytes as they are.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCode, SpanguardError } from '../errors.js';
import { crc32c } from './crc32c.js';

export const HEADER_BYTES = 64;
const SEGMENT_MAGIC = 'SPGLOG\0\0';
const EXTENT_MAGIC = 'SPGEXT\0\0';
const RECORD_MARKER = 0x53504731;
const BATCH_CONTINUES = 0x80;
const EXTENT_SLOT = 4096;

export interface LocalSegment {
  firstId: number;
  file: string;
  size: number;
}

export function segmentName(firstId: number): string {
  return `seg-${String(firstId).padStart(20, '0')}.log`;
}

/** The log's segments, oldest first (final names only; `*.tmp` are a writer's, not the log's). */
export function listSegments(logDir: string): LocalSegment[] {
  const out: LocalSegment[] = [];
  for (const name of fs.readdirSync(logDir)) {
    const m = /^seg-(\d{20})\.log$/.exec(name);
    if (!m) continue;
    const file = path.join(logDir, name);
    const st = fs.statSync(file, { throwIfNoEntry: false });
    if (st) out.push({ firstId: Number(m[1]), file, size: st.size });
  }
  return out.sort((a, b) => a.firstId - b.firstId);
}

export interface SegmentHeader {
  firstId: number;
  logStart: number;
  /** 16 hex digits. */
  logTag: string;
}

/** Decodes a segment header (version 2: the tag and log start are set); CORRUPT if it is not one. */
export function readHeader(bytes: Uint8Array, where: string): SegmentHeader {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < HEADER_BYTES || Buffer.from(bytes.subarray(0, 8)).toString('latin1') !== SEGMENT_MAGIC)
    throw new SpanguardError(ErrorCode.CORRUPT, `${where}: not a segment header`, { file: where, offset: 0 });
  if (crc32c(bytes.subarray(0, 60)) !== dv.getUint32(60, true))
    throw new SpanguardError(ErrorCode.CORRUPT, `${where}: segment header CRC mismatch`, { file: where, offset: 0 });
  return {
    firstId: Number(dv.getBigUint64(16, true)),
    logStart: Number(dv.getBigUint64(40, true)),
    logTag: dv.getBigUint64(48, true).toString(16).padStart(16, '0'),
  };
}

/** `EXTENT`'s durable next (the valid slot with the larger sequence), or null without a valid slot. */
export function readDurableNext(logDir: string): number | null {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(path.join(logDir, 'EXTENT'));
  } catch {
    return null;
  }
  let best: { seq: bigint; next: number } | null = null;
  for (const at of [0, EXTENT_SLOT]) {
    if (bytes.length < at + 64) continue;
    const slot = bytes.subarray(at, at + 64);
    if (slot.subarray(0, 8).toString('latin1') !== EXTENT_MAGIC) continue;
    if (crc32c(slot.subarray(0, 60)) !== slot.readUInt32LE(60)) continue;
    const seq = slot.readBigUInt64LE(32);
    if (best === null || seq > best.seq) best = { seq, next: Number(slot.readBigUInt64LE(40)) };
  }
  return best?.next ?? null;
}

/** An `EXTENT` file whose slot 0 vouches for every id below `durableNext` (slot 1 empty). */
export function extentBytes(logTag: string, logStart: number, durableNext: number): Buffer {
  const b = Buffer.alloc(2 * EXTENT_SLOT);
  b.write(EXTENT_MAGIC, 0, 'latin1');
  b.writeUInt32LE(1, 8);
  b.writeBigUInt64LE(BigInt(`0x${logTag}`), 16);
  b.writeBigUInt64LE(BigInt(logStart), 24);
  b.writeBigUInt64LE(1n, 32);
  b.writeBigUInt64LE(BigInt(durableNext), 40);
  b.writeUInt32LE(crc32c(b.subarray(0, 60)), 60);
  return b;
}

export interface WalkResult {
  /** Offset (within the segment) just past the last whole batch found. */
  end: number;
  /** One past the last id in [start, end). */
  nextId: number;
  /** The walk ran out of bytes (a record, or its header, goes on past them): more may follow. */
  short: boolean;
}

/**
 * Walks the records in `bytes` (the segment's bytes from offset `base`, a record boundary)
 * whose ids are below `bound`, checking each record's marker, lengths and CRC, and returns the
 * end of the last whole batch (a record without *batch continues*). It stops at the first
 * bytes that are not a whole valid record: zeros a writer prefilled, a record still landing.
 */
export function walkRecords(bytes: Uint8Array, base: number, nextId: number, bound: number): WalkResult {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let off = 0;
  let id = nextId;
  let result = { end: base, nextId };
  let short = true;
  while (off + HEADER_BYTES <= bytes.length) {
    short = false;
    if (dv.getUint32(off + 52, true) !== RECORD_MARKER) break;
    const payload = dv.getUint32(off + 4, true);
    const size = (HEADER_BYTES + payload + 7) & ~7;
    if (off + size > bytes.length) {
      short = true;
      break;
    }
    const kind = bytes[off + 16]!;
    if (kind > 3) break;
    if (kind !== 0) {
      if (Number(dv.getBigUint64(off + 8, true)) !== id) break;
      if (id >= bound) break;
    }
    if (crc32c(bytes.subarray(off + 4, off + size)) !== dv.getUint32(off, true)) break;
    if (kind !== 0) id++;
    off += size;
    if (!(bytes[off - size + 17]! & BATCH_CONTINUES)) result = { end: base + off, nextId: id };
    short = true;
  }
  return { ...result, short };
}
