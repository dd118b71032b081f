// The byte form of append (AppendByteColumns): texts (and metas) as one UTF-8 buffer per
// batch plus n + 1 offsets. It must store exactly what the string form stores, refuse bad
// UTF-8 and malformed offsets with typed errors, and stay all-or-nothing per batch.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { packTexts, type AppendByteColumns, type AppendColumns, type NativeSpanLog } from '../../src/native.js';
import { closedAfterEach, columns, durabilities, expectSpanMatches, rowsFor, segmentFiles, testing, tmpDir, type Row } from './helpers.js';

const logAt = closedAfterEach();

const enc = new TextEncoder();

/** Joins byte slices into the byte form's buffer + n + 1 offsets. */
function pack(parts: Uint8Array[]): { bytes: Uint8Array; offsets: Uint32Array } {
  const offsets = new Uint32Array(parts.length + 1);
  parts.forEach((p, i) => (offsets[i + 1] = offsets[i]! + p.length));
  const bytes = new Uint8Array(offsets[parts.length]!);
  parts.forEach((p, i) => bytes.set(p, offsets[i]!));
  return { bytes, offsets };
}

/** The byte form of rows: the same numeric columns as `columns(rows)`, texts/metas packed. */
function byteColumns(rows: Row[], textParts?: Uint8Array[]): AppendByteColumns {
  const { texts, metas, ...numeric } = columns(rows);
  const t = pack(textParts ?? texts.map((s) => enc.encode(s)));
  const m = pack(metas.map((s) => enc.encode(s ?? '')));
  return { ...numeric, texts: t.bytes, textOffsets: t.offsets, metas: m.bytes, metaOffsets: m.offsets };
}

const fileBytes = (dir: string): Buffer => Buffer.concat(segmentFiles(dir).map((f) => fs.readFileSync(f)));

describe('the byte form stores exactly what the string form stores', () => {
  it('same records, byte for byte on disk (after the segment header), same spans read back', async () => {
    const rows = [...rowsFor(0, 50), { turnStart: 50, text: '' }, { turnStart: 51, text: '\u{10FFFF} \ufffd \0 end' }];
    const a = tmpDir('bytes-a');
    const b = tmpDir('bytes-b');
    const la = logAt(a, { durability: durabilities.none });
    const lb = logAt(b, { durability: durabilities.none });
    expect(await la.append(columns(rows))).toBe(1);
    expect(await lb.append(byteColumns(rows))).toBe(1);
    rows.forEach((r, i) => expectSpanMatches(lb.get(i + 1), r, i + 1));
    await la.close();
    await lb.close();
    // Headers differ in their creation time only; every record is identical.
    expect(fileBytes(b).subarray(64).equals(fileBytes(a).subarray(64))).toBe(true);
  });

  it('metas may be null (no meta for any record); offsets may start past 0 and share bytes', async () => {
    const log = logAt(tmpDir('bytes-nometa'));
    const bytes = enc.encode('..hello world');
    const cols: AppendByteColumns = {
      ...columns([{ turnStart: 1, text: 'x' }, { turnStart: 2, text: 'x' }, { turnStart: 3, text: 'x' }]),
      texts: bytes,
      textOffsets: Uint32Array.of(2, 7, 7, 13),
      metas: null,
    };
    expect(await log.append(cols)).toBe(1);
    expect(log.get(1)).toMatchObject({ text: 'hello', meta: null });
    expect(log.get(2)).toMatchObject({ text: '', meta: null });
    expect(log.get(3)).toMatchObject({ text: ' world', meta: null });
    const { metas: _m, ...noMetas } = cols;
    expect(await log.append({ ...noMetas, turnStart: Float64Array.of(4, 4, 4), turnEnd: Float64Array.of(4, 4, 4) })).toBe(4);
    expect(log.get(6)?.text).toBe(' world');
  });

  it('packTexts packs strings and refuses a lone surrogate like the string form does', async () => {
    const log = logAt(tmpDir('bytes-pack'));
    const texts = ['a', '', 'é✓😀', 'rate limit 40 req/s'];
    const p = packTexts(texts);
    expect(Array.from(p.offsets)).toEqual([0, 1, 1, 10, 29]);
    const rows = texts.map((text, i) => ({ turnStart: i, text }));
    const { texts: _t, metas: _m, ...numeric } = columns(rows);
    expect(await log.append({ ...numeric, texts: p.bytes, textOffsets: p.offsets })).toBe(1);
    rows.forEach((r, i) => expect(log.get(i + 1)?.text).toBe(r.text));
    expect(() => packTexts(['ok', 'bad \ud800'])).toThrowError(expect.objectContaining({ code: 'INVALID_UTF8' }));
  });

  it('group mode: concurrent string and byte appends interleave with contiguous ids, each read back', async () => {
    const log = logAt(tmpDir('bytes-group'), { durability: durabilities.group });
    const batches = Array.from({ length: 24 }, (_, k) => rowsFor(k * 3, 3));
    const ids = await Promise.all(batches.map((rows, k) => log.append(k % 2 ? byteColumns(rows) : columns(rows))));
    expect(ids).toEqual(batches.map((_, k) => 1 + k * 3));
    batches.forEach((rows, k) => rows.forEach((r, j) => expectSpanMatches(log.get(1 + k * 3 + j), r, 1 + k * 3 + j)));
    expect(log.verify().ok).toBe(true);
  });
});

describe('bad bytes and malformed offsets get a typed error, and nothing is written', () => {
  async function expectRefused(log: NativeSpanLog, dir: string, cols: AppendColumns | AppendByteColumns, code: string): Promise<void> {
    const size = fileBytes(dir).length;
    const next = log.nextId();
    await expect(log.append(cols)).rejects.toMatchObject({ code });
    expect(log.nextId()).toBe(next);
    expect(fileBytes(dir).length).toBe(size);
    expect(log.verify().ok).toBe(true);
  }

  const bad: [string, number[]][] = [
    ['a lone continuation byte', [0x61, 0x80, 0x62]],
    ['overlong "/" (C0 AF)', [0xc0, 0xaf]],
    ['overlong 3-byte NUL (E0 80 80)', [0xe0, 0x80, 0x80]],
    ['overlong 4-byte (F0 8F BF BF)', [0xf0, 0x8f, 0xbf, 0xbf]],
    ['a UTF-16 surrogate (ED A0 80)', [0xed, 0xa0, 0x80]],
    ['above U+10FFFF (F4 90 80 80)', [0xf4, 0x90, 0x80, 0x80]],
    ['F5 lead byte', [0xf5, 0x80, 0x80, 0x80]],
    ['0xFF', [0x41, 0xff]],
    ['a sequence cut at the end of its slice', [0x61, 0xe2, 0x82]],
    ['a sequence cut by ASCII', [0xe2, 0x82, 0x41, 0x41]],
    ['bad byte after 40 ASCII bytes (past the fast path)', [...enc.encode('a'.repeat(40)), 0xc3]],
  ];
  for (const [name, bytes] of bad) {
    it(`INVALID_UTF8: ${name}, in the 3rd record of 4 — the whole batch is refused`, async () => {
      const dir = tmpDir('bytes-bad');
      const log = logAt(dir);
      await log.append(columns([{ turnStart: 1, text: 'first' }]));
      const rows = rowsFor(10, 4);
      const parts = rows.map((r) => enc.encode(r.text));
      parts[2] = Uint8Array.from(bytes);
      await expectRefused(log, dir, byteColumns(rows, parts), 'INVALID_UTF8');
      // The slice boundary matters: the same bytes are fine when the cut sequence is whole.
      expect(await log.append(byteColumns(rowsFor(10, 4)))).toBe(2);
    });
  }

  it('INVALID_UTF8 in a meta slice; in group mode too (earlier staged appends unaffected)', async () => {
    const dir = tmpDir('bytes-badmeta');
    const log = logAt(dir, { durability: durabilities.group });
    const good = byteColumns(rowsFor(0, 2));
    const badMeta = byteColumns(rowsFor(2, 2));
    badMeta.metas = Uint8Array.of(0x7b, 0xed, 0xb0, 0x80, 0x7d);
    badMeta.metaOffsets = Uint32Array.of(0, 0, 5);
    const [a, b, c] = await Promise.allSettled([log.append(good), log.append(badMeta), log.append(byteColumns(rowsFor(2, 2)))]);
    expect(a).toMatchObject({ status: 'fulfilled', value: 1 });
    expect(b).toMatchObject({ status: 'rejected', reason: { code: 'INVALID_UTF8' } });
    expect(c).toMatchObject({ status: 'fulfilled', value: 3 });
    expect(log.nextId()).toBe(5);
  });

  it('random bytes: accepted exactly when a fatal TextDecoder accepts them', async () => {
    const dir = tmpDir('bytes-rand');
    const log = logAt(dir, { durability: durabilities.none });
    const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    let x = 12345;
    const next = () => ((x = (x * 1103515245 + 12345) >>> 0) >>> 16) & 0xff;
    const pool = [0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xee, 0xef, 0xf0, 0xf4, 0xf5, 0xff];
    let accepted = 0;
    for (let k = 0; k < 600; k++) {
      const len = 1 + (next() % 12);
      const b = Uint8Array.from({ length: len }, () => (next() & 1 ? pool[next() % pool.length]! : next()));
      let ok = true;
      try {
        fatal.decode(b);
      } catch {
        ok = false;
      }
      const rows = [{ turnStart: k, text: 'x' }];
      const p = log.append(byteColumns(rows, [b]));
      if (ok) {
        const id = await p;
        expect(log.get(id)?.text).toBe(fatal.decode(b));
        accepted++;
      } else {
        await expect(p, Array.from(b, (v) => v.toString(16)).join(' ')).rejects.toMatchObject({ code: 'INVALID_UTF8' });
      }
    }
    expect(accepted).toBeGreaterThan(30);
    expect(log.verify().ok).toBe(true);
  });

  it('malformed offsets, wrong types and mixed forms → INVALID_ARGUMENT', async () => {
    const dir = tmpDir('bytes-offsets');
    const log = logAt(dir);
    await log.append(columns([{ turnStart: 1, text: 'first' }]));
    const base = byteColumns(rowsFor(10, 3));
    const cases: [string, Partial<Record<keyof AppendByteColumns, unknown>>][] = [
      ['n offsets instead of n + 1', { textOffsets: base.textOffsets.subarray(0, 3) }],
      ['n + 2 offsets', { textOffsets: Uint32Array.of(...base.textOffsets, base.textOffsets[3]!) }],
      ['decreasing offsets', { textOffsets: Uint32Array.of(0, 20, 10, base.textOffsets[3]!) }],
      ['last offset past the buffer', { textOffsets: Uint32Array.of(0, 1, 2, base.texts.length + 1) }],
      ['offsets missing', { textOffsets: undefined }],
      ['offsets as a plain array', { textOffsets: Array.from(base.textOffsets) }],
      ['offsets as an Int32Array', { textOffsets: Int32Array.from(base.textOffsets) }],
      ['texts as an Int8Array', { texts: new Int8Array(base.texts.buffer) }],
      ['texts as an ArrayBuffer', { texts: base.texts.buffer }],
      ['meta bytes without metaOffsets', { metaOffsets: undefined }],
      ['string metas with byte texts', { metas: [null, null, null] }],
      ['metas as a number', { metas: 7 }],
    ];
    for (const [name, patch] of cases) {
      const cols = { ...base, ...patch } as unknown as AppendByteColumns;
      await expectRefused(log, dir, cols, 'INVALID_ARGUMENT').catch((e: Error) => {
        throw new Error(`${name}: ${e.message}`);
      });
    }
    // Byte metas with string texts are refused too.
    const s = columns(rowsFor(10, 3));
    await expectRefused(log, dir, { ...s, metas: base.metas } as unknown as AppendColumns, 'INVALID_ARGUMENT');
    expect(await log.append(base)).toBe(2);
  });

  it('TEXT_TOO_LARGE counts the slice, not the buffer', async () => {
    const dir = tmpDir('bytes-large');
    const log = logAt(dir, { maxTextBytes: 100 });
    const rows = [{ turnStart: 1, text: 'a' }, { turnStart: 2, text: 'b' }];
    const ok = pack([enc.encode('a'.repeat(100)), enc.encode('b')]);
    const { texts: _t, metas: _m, ...numeric } = columns(rows);
    expect(await log.append({ ...numeric, texts: ok.bytes, textOffsets: ok.offsets })).toBe(1);
    const big = pack([enc.encode('a'), enc.encode('b'.repeat(101))]);
    await expectRefused(log, dir, { ...numeric, turnStart: Float64Array.of(3, 4), turnEnd: Float64Array.of(3, 4), texts: big.bytes, textOffsets: big.offsets }, 'TEXT_TOO_LARGE');
  });
});

describe('group commit: a failed write of the staged burst rejects exactly its appends', () => {
  it('ENOSPC on the burst: its waiters get IO_ERROR, ids are reused, the file is as before, the log goes on', async () => {
    const dir = tmpDir('group-write-fail');
    const log = logAt(dir, { durability: durabilities.group });
    expect(await log.append(columns(rowsFor(0, 2)))).toBe(1);
    const records = fileBytes(dir).slice(0, log.stats().bytes);
    testing.setFaults({ failWriteAt: 1 });
    const burst = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => log.append(byteColumns(rowsFor(2 + i, 1)))));
    expect(burst.every((r) => r.status === 'rejected' && (r.reason as { code: string }).code === 'IO_ERROR')).toBe(true);
    expect(log.stats().failed).toBe(false);
    expect(log.nextId()).toBe(3);
    // The records as they were, and nothing after them (the zero prefill goes with the cut).
    expect(fileBytes(dir)).toEqual(records);
    testing.clearFaults();
    expect(await log.append(columns(rowsFor(2, 3)))).toBe(3);
    rowsFor(2, 3).forEach((r, i) => expectSpanMatches(log.get(3 + i), r, 3 + i));
  });

  it('a read while appends are staged writes them first (read-your-writes), before any fdatasync', async () => {
    const log = logAt(tmpDir('group-read'), { durability: durabilities.group });
    testing.setFaults({});
    const p = log.append(byteColumns(rowsFor(0, 3)));
    expect(testing.faultCounters().writes).toBe(0); // staged, not written
    expect(log.nextId()).toBe(4);
    expect(log.get(3)?.text).toBe(rowsFor(0, 3)[2]!.text);
    // Written (the records, then the zeros a group writer keeps past them), not synced.
    expect(testing.faultCounters().writes).toBeGreaterThanOrEqual(1);
    expect(testing.faultCounters().syncs).toBe(0);
    expect(await p).toBe(1);
    expect(testing.faultCounters().syncs).toBe(1);
  });
});
