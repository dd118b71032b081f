// Round trip of the SpanLog surface: append in every mode, get/getMany/scan, ids, close.
import { afterEach, describe, expect, it } from 'vitest';
import { columns, durabilities, expectSpanMatches, openLog, rowsFor, tmpDir, type Row } from './helpers.js';
import type { NativeSpanLog } from '../../src/native.js';

const open: NativeSpanLog[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) await l.close();
});

describe('every appended span reads back verbatim under its assigned id', () => {
  for (const [name, durability] of Object.entries(durabilities)) {
    it(`mode ${name}: contiguous ids from 1, get/getMany/scan agree, survives reopen`, async () => {
      const dir = tmpDir(`api-${name}`);
      const log = openLog(dir, { durability, segmentBytes: 8192 });
      open.push(log);
      const rows: Row[] = [];
      let expectFirst = 1;
      for (let b = 0; b < 20; b++) {
        const batch = rowsFor(rows.length, 1 + (b % 7), b);
        const first = await log.append(columns(batch));
        expect(first).toBe(expectFirst);
        expectFirst += batch.length;
        rows.push(...batch);
      }
      expect(log.firstId()).toBe(1);
      expect(log.nextId()).toBe(rows.length + 1);
      rows.forEach((r, i) => expectSpanMatches(log.get(i + 1), r, i + 1));
      expect(log.get(0)).toBeUndefined();
      expect(log.get(rows.length + 1)).toBeUndefined();
      const many = log.getMany(new Float64Array([3, 999, 1]));
      expect(many.length).toBe(3);
      expectSpanMatches(many[0], rows[2]!, 3);
      expect(many[1]).toBeUndefined();
      expectSpanMatches(many[2], rows[0]!, 1);
      const scanned = log.scan(5, 10);
      expect(scanned.map((s) => s.id)).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
      expect(log.scan(rows.length - 1, 100).map((s) => s.id)).toEqual([rows.length - 1, rows.length]);
      expect(log.stats().segments).toBeGreaterThan(1); // 8 KiB segments rolled
      expect(log.verify()).toMatchObject({ ok: true, records: rows.length, problems: [] });
      await log.close();
      open.pop();
      const again = openLog(dir, { durability });
      open.push(again);
      expect(again.nextId()).toBe(rows.length + 1);
      expect(again.stats().recoveries).toEqual([]);
      rows.forEach((r, i) => expectSpanMatches(again.get(i + 1), r, i + 1));
      const next = await again.append(columns(rowsFor(rows.length, 2, 99)));
      expect(next).toBe(rows.length + 1);
    });
  }

  it('an empty batch assigns nothing and resolves with nextId', async () => {
    const log = openLog(tmpDir('api-empty'));
    open.push(log);
    expect(await log.append(columns([]))).toBe(1);
    expect(log.nextId()).toBe(1);
  });

  it('empty text and summaries over old turn ranges are valid', async () => {
    const log = openLog(tmpDir('api-kinds'));
    open.push(log);
    await log.append(columns([{ turnStart: 10, text: '' }]));
    await log.append(columns([{ kind: 2, turnStart: 0, turnEnd: 9, text: 'summary of 0..9' }]));
    await log.append(columns([{ kind: 3, turnStart: 0, text: 'event' }]));
    await log.append(columns([{ turnStart: 10, text: 'same turn again' }]));
    expect(log.get(1)?.text).toBe('');
    expect(log.get(2)).toMatchObject({ kind: 2, turnStart: 0, turnEnd: 9 });
    expect(log.nextId()).toBe(5);
  });
});

describe('close waits for durability, is idempotent, and every later call is CLOSED', () => {
  it('group appends in flight resolve before close resolves; methods then throw CLOSED', async () => {
    const log = openLog(tmpDir('api-close'), { durability: durabilities.group });
    const pending = Array.from({ length: 16 }, (_, i) => log.append(columns(rowsFor(i, 1))));
    const closing = log.close();
    const ids = await Promise.all(pending);
    expect(ids).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    await closing;
    await log.close();
    expect(() => log.get(1)).toThrowError(expect.objectContaining({ code: 'CLOSED' }));
    expect(() => log.nextId()).toThrowError(expect.objectContaining({ code: 'CLOSED' }));
    expect(() => log.stats()).toThrowError(expect.objectContaining({ code: 'CLOSED' }));
    await expect(log.append(columns(rowsFor(20, 1)))).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(log.flush()).rejects.toMatchObject({ code: 'CLOSED' });
  });
});
