// Shared helpers for the span log tests: build column batches, temp dirs, raw file access.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect } from 'vitest';
import { addon, type AppendColumns, type NativeSpan, type NativeSpanLog, type NativeSpanLogOptions } from '../../src/native.js';
// @ts-expect-error plain .mjs shared with the child processes
import { columnsFor, diffRecord } from './content.mjs';

export const native = addon();
// The test-only fault seam (native/common/io_seam.h); not part of the typed surface on purpose.
export const testing = (native as unknown as { _testing: Testing })._testing;

export interface Testing {
  setFaults(plan: {
    failSyncAt?: number;
    crashAtSync?: number;
    failWriteAt?: number;
    /** The n-th pwrite writes half its bytes (a short write); pair with failWriteAt: n + 1. */
    shortWriteAt?: number;
    drop?: number;
    garble?: number;
    seed?: number;
  }): void;
  clearFaults(): void;
  faultCounters(): { syncs: number; writes: number; crashed: boolean; sectorsKept: number; sectorsDropped: number; sectorsGarbled: number; truncatedFiles: number };
  /** portable: the table path; 'copy': the encoder's copy, then the CRC of the copy (also checks the copy). */
  crc32c(bytes: Uint8Array, portable?: boolean | 'copy'): number;
  /** One implementation by name; with copy, its copy into a destination dstOffset bytes in (checked), then the CRC of that. */
  crc32cImpl(bytes: Uint8Array, impl: CrcImpl, copy?: boolean, dstOffset?: number): number;
  crc32cImpls(): { supported: CrcImpl[]; active: CrcImpl };
  readViaSource(log: unknown, id: number): { id: number; kind: number; flags: number; text: string; firstId: number; nextId: number } | undefined;
}

export type CrcImpl = 'table' | 'sse42' | 'clmul' | 'vpclmul';

export const durabilities = { none: 0, group: 1, sync: 2 } as const;

export function tmpDir(tag: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `spanguard-${tag}-`));
}

/**
 * For a test file: returns an openLog whose logs are closed, and the fault seam cleared,
 * after each test (call at the file's top level: it registers the afterEach).
 */
export function closedAfterEach(): (dir: string, opts?: Partial<NativeSpanLogOptions>) => NativeSpanLog {
  const open: NativeSpanLog[] = [];
  afterEach(async () => {
    testing.clearFaults();
    for (const l of open.splice(0)) await l.close().catch(() => undefined);
  });
  return (dir, opts = {}) => {
    const l = openLog(dir, opts);
    open.push(l);
    return l;
  };
}

export function openLog(dir: string, opts: Partial<NativeSpanLogOptions> = {}): NativeSpanLog {
  return new native.SpanLog(dir, {
    readOnly: false,
    durability: durabilities.sync,
    segmentBytes: 64 << 20,
    maxTextBytes: 16 << 20,
    ...opts,
  });
}

export interface Row {
  kind?: number;
  flags?: number;
  role?: number;
  turnStart: number;
  turnEnd?: number;
  timestamp?: number;
  tokens?: number;
  text: string;
  meta?: string | null;
}

export function columns(rows: Row[]): AppendColumns {
  const n = rows.length;
  const c: AppendColumns = {
    kinds: new Uint8Array(n),
    flags: new Uint8Array(n),
    roles: new Uint8Array(n),
    turnStart: new Float64Array(n),
    turnEnd: new Float64Array(n),
    timestamps: new Float64Array(n),
    tokens: new Uint32Array(n),
    texts: [],
    metas: [],
  };
  rows.forEach((r, i) => {
    c.kinds[i] = r.kind ?? 1;
    c.flags[i] = r.flags ?? 0;
    c.roles[i] = r.role ?? 2;
    c.turnStart[i] = r.turnStart;
    c.turnEnd[i] = r.turnEnd ?? r.turnStart;
    c.timestamps[i] = r.timestamp ?? 1_700_000_000_000 + r.turnStart;
    c.tokens[i] = r.tokens ?? r.text.length;
    c.texts.push(r.text);
    c.metas.push(r.meta ?? null);
  });
  return c;
}

/** Deterministic text for turn t, of varied length, with non-ASCII characters. */
export function textFor(t: number, salt = 0): string {
  const len = (t * 37 + salt * 11) % 300;
  return `turn ${t}/${salt}: rate limit ${t % 97} req/s é✓😀 ` + 'x'.repeat(len);
}

export function rowsFor(fromTurn: number, n: number, salt = 0): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    turnStart: fromTurn + i,
    text: textFor(fromTurn + i, salt),
    meta: i % 3 === 0 ? JSON.stringify({ t: fromTurn + i }) : null,
    flags: i % 5 === 0 ? 1 : 0,
  }));
}

export function expectSpanMatches(span: NativeSpan | undefined, row: Row, id: number): void {
  if (!span) throw new Error(`span ${id} missing`);
  const want = {
    id,
    kind: row.kind ?? 1,
    flags: row.flags ?? 0,
    role: row.role ?? 2,
    turnStart: row.turnStart,
    turnEnd: row.turnEnd ?? row.turnStart,
    timestamp: row.timestamp ?? 1_700_000_000_000 + row.turnStart,
    tokens: row.tokens ?? row.text.length,
    text: row.text,
    meta: row.meta ?? null,
  };
  if (JSON.stringify(span) !== JSON.stringify(want)) {
    throw new Error(`span ${id} differs:\n got  ${JSON.stringify(span)}\n want ${JSON.stringify(want)}`);
  }
}

export function segmentFiles(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^seg-\d{20}\.log$/.test(f))
    .sort()
    .map((f) => path.join(dir, f));
}

/** Offsets of every record in a segment's bytes (walks the length fields; the bytes must be clean). */
export function recordOffsets(bytes: Uint8Array): number[] {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: number[] = [];
  let off = 64;
  while (off + 64 <= bytes.length) {
    const payload = dv.getUint32(off + 4, true);
    out.push(off);
    off += (64 + payload + 7) & ~7;
  }
  return out;
}

/** Every id below `next` reads back as content.mjs's recordFor(id, 0), byte for byte. */
export function expectContentUpTo(log: NativeSpanLog, next: number, label = ''): void {
  expect(log.nextId(), label).toBe(next);
  for (let id = 1; id < next; id++) {
    const d = diffRecord(log.get(id), id, 0);
    if (d) throw new Error(`${label} ${d}`);
  }
}

/**
 * The recovery contract after a simulated crash of a log written with content.mjs's
 * records: the reopened log keeps every record up to `mustExceed`, returns nothing damaged,
 * verifies, and a second open has nothing left to recover and appends on.
 */
export async function expectRecovered(
  dir: string,
  opts: Partial<NativeSpanLogOptions>,
  mustExceed: number,
  label: string,
): Promise<{ next: number; recoveries: number }> {
  const log = openLog(dir, opts);
  const next = log.nextId();
  expect(next, label).toBeGreaterThan(mustExceed);
  expectContentUpTo(log, next, label);
  expect(log.verify().ok, label).toBe(true);
  const recoveries = log.stats().recoveries.length;
  await log.close();
  const again = openLog(dir, opts);
  expect(again.nextId(), label).toBe(next);
  expect(again.stats().recoveries, label).toEqual([]);
  expect(await again.append(columnsFor(next, 3, 0)), label).toBe(next);
  await again.close();
  return { next, recoveries };
}

/** What a log's EXTENT says (docs/FORMAT.md, "Extent"): the valid slot with the larger sequence. */
export function readExtent(dir: string): { tag: bigint; logStart: number; seq: number; durableNext: number } | null {
  const p = path.join(dir, 'EXTENT');
  if (!fs.existsSync(p)) return null;
  const b = fs.readFileSync(p);
  let best: { tag: bigint; logStart: number; seq: number; durableNext: number } | null = null;
  for (const at of [0, 4096]) {
    if (b.length < at + 64 || b.subarray(at, at + 6).toString('latin1') !== 'SPGEXT') continue;
    if ((testing.crc32c(b.subarray(at, at + 60)) >>> 0) !== b.readUInt32LE(at + 60)) continue;
    const slot = { tag: b.readBigUInt64LE(at + 16), logStart: Number(b.readBigUInt64LE(at + 24)), seq: Number(b.readBigUInt64LE(at + 32)), durableNext: Number(b.readBigUInt64LE(at + 40)) };
    if (!best || slot.seq > best.seq) best = slot;
  }
  return best;
}

/**
 * Writes an EXTENT for the segments in `dir` (their tag and log start are read from the first
 * one's header) that vouches for ids below `durableNext` — by default none at all, for tests
 * that ask what the segments' own bytes tell.
 */
export function writeExtent(dir: string, durableNext?: number): void {
  const first = fs.readFileSync(segmentFiles(dir)[0]!);
  const logStart = Number(first.readBigUInt64LE(40));
  const slot = Buffer.alloc(8192);
  slot.write('SPGEXT', 0, 'latin1');
  slot.writeUInt32LE(1, 8);
  slot.writeBigUInt64LE(first.readBigUInt64LE(48), 16);
  slot.writeBigUInt64LE(BigInt(logStart), 24);
  slot.writeBigUInt64LE(1n, 32);
  slot.writeBigUInt64LE(BigInt(durableNext ?? logStart), 40);
  slot.writeUInt32LE(testing.crc32c(slot.subarray(0, 60)) >>> 0, 60);
  fs.writeFileSync(path.join(dir, 'EXTENT'), slot, { mode: 0o600 });
}
