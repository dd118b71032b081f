// A batch of 256 KiB or more (encoded) is encoded on two threads and written chunk by chunk
// as its chunks are encoded (SpanLog::WriteBatchParallel). It must store exactly what a
// record-by-record append stores, and stay all-or-nothing: a bad record or a failed write
// anywhere in it leaves the file as it was.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AppendByteColumns, NativeSpanLog } from '../../src/native.js';
import { closedAfterEach, columns, durabilities, recordOffsets, rowsFor, segmentFiles, testing, tmpDir, type Row } from './helpers.js';

const logAt = closedAfterEach();

const enc = new TextEncoder();
const FLAG_BATCH_CONTINUES = 0x80;

/** ~1 MiB encoded: ~16 chunks of 64 KiB, well past the 256 KiB threshold. */
const LARGE = 4000;

function byteColumns(rows: Row[], parts = rows.map((r) => enc.encode(r.text))): AppendByteColumns {
  const { texts: _t, metas, ...numeric } = columns(rows);
  const offsets = new Uint32Array(parts.length + 1);
  parts.forEach((p, i) => (offsets[i + 1] = offsets[i]! + p.length));
  const bytes = new Uint8Array(offsets[parts.length]!);
  parts.forEach((p, i) => bytes.set(p, offsets[i]!));
  const m = metas.map((s) => enc.encode(s ?? ''));
  const moff = new Uint32Array(m.length + 1);
  m.forEach((p, i) => (moff[i + 1] = moff[i]! + p.length));
  const mbytes = new Uint8Array(moff[m.length]!);
  m.forEach((p, i) => mbytes.set(p, moff[i]!));
  return { ...numeric, texts: bytes, textOffsets: offsets, metas: mbytes, metaOffsets: moff };
}

const fileBytes = (dir: string): Buffer => Buffer.concat(segmentFiles(dir).map((f) => fs.readFileSync(f)));

/** Threads of this process named as the log names its second thread (AppendHelper). */
const helperThreads = (): number =>
  fs.readdirSync('/proc/self/task').filter((t) => {
    try {
      return fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() === 'spanguard-help';
    } catch {
      return false; // the thread ended while we looked
    }
  }).length;

describe('a large batch is stored exactly as the same records appended one at a time', () => {
  it('every record in place, byte for byte, with the batch flag on all but the last', async () => {
    const rows = rowsFor(0, LARGE, 7);
    const a = tmpDir('large-one');
    const b = tmpDir('large-each');
    const threads = helperThreads();
    // A writer starts its second thread when it opens; a reader has none.
    const la = logAt(a, { durability: durabilities.none });
    expect(helperThreads()).toBe(threads + 1);
    const lb = logAt(b, { durability: durabilities.none });
    expect(helperThreads()).toBe(threads + 2);
    const reader = logAt(a, { readOnly: true });
    expect(helperThreads()).toBe(threads + 2);
    await reader.close();
    expect(await la.append(byteColumns(rows))).toBe(1);
    // It was started away from this thread's CPU (a placement hint, AppendHelper::Start),
    // and once running may run anywhere this process may.
    const allowed = (status: string) => /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)?.[1];
    const mine = allowed(fs.readFileSync('/proc/self/status', 'utf8'));
    const helperMask = () =>
      fs.readdirSync('/proc/self/task').flatMap((t) => {
        try {
          const task = `/proc/self/task/${t}`;
          return fs.readFileSync(`${task}/comm`, 'utf8').trim() === 'spanguard-help' ? [allowed(fs.readFileSync(`${task}/status`, 'utf8'))] : [];
        } catch {
          return [];
        }
      });
    for (let i = 0; i < 200 && helperMask().some((m) => m !== mine); i++) await new Promise((r) => setTimeout(r, 5));
    expect(helperMask()).toEqual(Array.from({ length: threads + 2 }, () => mine));
    for (let i = 0; i < rows.length; i += 1) await lb.append(columns(rows.slice(i, i + 1)));
    expect(la.stats().bytes).toBeGreaterThan(900_000);
    expect(la.verify()).toMatchObject({ ok: true, records: LARGE });
    await la.close();
    await lb.close();
    // close() joined it (the kernel drops a joined thread's /proc entry a moment after).
    for (let i = 0; i < 100 && helperThreads() > threads; i++) await new Promise((r) => setTimeout(r, 2));
    expect(helperThreads()).toBe(threads);
    const one = fileBytes(a).subarray(0, -64); // each ends with its close checkpoint
    const each = fileBytes(b).subarray(0, -64);
    expect(one.length).toBe(each.length);
    const offs = recordOffsets(one);
    expect(offs.length).toBe(LARGE);
    expect(recordOffsets(each)).toEqual(offs);
    // Headers differ in creation time (segment) and in the flag byte and CRC (records):
    // take those out of both and the rest must match to the byte.
    offs.forEach((off, i) => {
      expect(one[off + 17]! & FLAG_BATCH_CONTINUES).toBe(i + 1 < LARGE ? FLAG_BATCH_CONTINUES : 0);
      for (const f of [one, each]) {
        f[off + 17] = f[off + 17]! & ~FLAG_BATCH_CONTINUES;
        f.fill(0, off, off + 4);
      }
    });
    expect(one.subarray(64).equals(each.subarray(64))).toBe(true);
    // Reopened: clean, every span back.
    const again = logAt(a, { durability: durabilities.none });
    expect(again.stats().recoveries).toEqual([]);
    expect(again.nextId()).toBe(LARGE + 1);
    expect(again.get(LARGE)?.text).toBe(rows[LARGE - 1]!.text);
  });

  const hasTaskset = (() => {
    try {
      execFileSync('taskset', ['-c', '0', 'true']);
      return true;
    } catch {
      return false;
    }
  })();
  it.skipIf(!hasTaskset)('a process allowed one CPU stores a large batch without a second thread', () => {
    // A child pinned to CPU 0 (taskset): two threads would only take turns there.
    const dist = pathToFileURL(path.join(__dirname, '../../dist/native.js')).href;
    const dir = tmpDir('large-one-cpu');
    const script = `
      import(${JSON.stringify(dist)}).then(async (m) => {
        const fs = await import('node:fs');
        const n = 4000, text = new TextEncoder().encode('x'.repeat(250));
        const texts = new Uint8Array(n * text.length), offsets = new Uint32Array(n + 1);
        for (let i = 0; i < n; i++) { texts.set(text, i * text.length); offsets[i + 1] = (i + 1) * text.length; }
        const log = new (m.addon().SpanLog)(${JSON.stringify(dir)}, { readOnly: false, durability: 0, segmentBytes: 64 << 20, maxTextBytes: 1 << 20 });
        const first = await log.append({ kinds: new Uint8Array(n).fill(1), flags: new Uint8Array(n), roles: new Uint8Array(n),
          turnStart: new Float64Array(n), turnEnd: new Float64Array(n), timestamps: new Float64Array(n), tokens: new Uint32Array(n),
          texts, textOffsets: offsets, metas: null });
        const helpers = fs.readdirSync('/proc/self/task').filter((t) => fs.readFileSync('/proc/self/task/' + t + '/comm', 'utf8').trim() === 'spanguard-help').length;
        const v = log.verify();
        await log.close();
        process.stdout.write(JSON.stringify({ first, helpers, ok: v.ok, records: v.records }));
      });`;
    const out = JSON.parse(execFileSync('taskset', ['-c', '0', process.execPath, '-e', script]).toString()) as Record<string, unknown>;
    expect(out).toEqual({ first: 1, helpers: 0, ok: true, records: 4000 });
  });

  it('sync mode: a large batch over the zero prefill, then small ones, reopen clean', async () => {
    const dir = tmpDir('large-sync');
    const log = logAt(dir, { durability: durabilities.sync });
    expect(await log.append(columns(rowsFor(0, 3)))).toBe(1);
    expect(await log.append(byteColumns(rowsFor(3, LARGE)))).toBe(4);
    expect(await log.append(columns(rowsFor(3 + LARGE, 3)))).toBe(4 + LARGE);
    expect(log.verify()).toMatchObject({ ok: true, records: LARGE + 6 });
    await log.close();
    const again = logAt(dir);
    expect(again.stats().recoveries).toEqual([]);
    expect(again.scan(1, again.nextId()).map((s) => s.turnStart)).toEqual(Array.from({ length: LARGE + 6 }, (_, i) => i));
  });
});

describe('a bad record or a failed write anywhere in a large batch leaves nothing of it', () => {
  async function expectNothingWritten(log: NativeSpanLog, dir: string, attempt: () => Promise<unknown>, code: string): Promise<void> {
    const before = fileBytes(dir);
    const next = log.nextId();
    await expect(attempt()).rejects.toMatchObject({ code });
    expect(log.nextId()).toBe(next);
    expect(fileBytes(dir).equals(before)).toBe(true);
    expect(log.verify().ok).toBe(true);
  }
  /** After refused attempts, the same batch appended again (2 records before it) is stored
   * with the ids the refused ones would have had, and reads find it there: nothing of the
   * refused attempts is indexed. */
  async function expectRetryStored(log: NativeSpanLog, rows: Row[], spots: number[]): Promise<void> {
    expect(await log.append(byteColumns(rows))).toBe(3);
    expect(log.verify()).toMatchObject({ ok: true, records: LARGE + 2 });
    for (const k of spots) expect(log.get(3 + k)?.text).toBe(rows[k]!.text);
    expect(log.get(3 + LARGE)).toBeUndefined();
  }

  for (const [where, at] of [
    ['first', 0],
    ['middle', LARGE >> 1],
    ['last', LARGE - 1],
  ] as const) {
    it(`INVALID_UTF8 in the ${where} record: refused, the file as it was, the next batch gets the same ids`, async () => {
      const dir = tmpDir('large-bad');
      const log = logAt(dir, { durability: durabilities.none });
      await log.append(columns(rowsFor(0, 2)));
      const rows = rowsFor(2, LARGE);
      const parts = rows.map((r) => enc.encode(r.text));
      parts[at] = Uint8Array.of(0x61, 0xed, 0xa0, 0x80); // a UTF-16 surrogate
      const err = await log.append(byteColumns(rows, parts)).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'INVALID_UTF8' });
      expect((err as Error).message).toContain(`record ${at}: text`);
      await expectNothingWritten(log, dir, () => log.append(byteColumns(rows, parts)), 'INVALID_UTF8');
      await expectRetryStored(log, rows, [0, at, LARGE - 1]);
    });
  }

  it('a write that fails in any later chunk, whichever thread writes it: IO_ERROR, cut back, usable', async () => {
    const dir = tmpDir('large-eio-later');
    const log = logAt(dir, { durability: durabilities.none });
    await log.append(columns(rowsFor(0, 2)));
    const rows = rowsFor(2, LARGE);
    // ~16 chunks, each written by the thread that encoded it: the n-th write is whichever
    // thread's turn it was.
    for (const n of [2, 3, 5, 8, 13]) {
      testing.setFaults({ failWriteAt: n });
      await expectNothingWritten(log, dir, () => log.append(byteColumns(rows)), 'IO_ERROR');
      expect(testing.faultCounters().writes).toBe(n);
      testing.clearFaults();
    }
    await expectRetryStored(log, rows, [0, LARGE >> 1, LARGE - 1]);
  });

  it('a write that fails after part of the batch landed: IO_ERROR, cut back, the log still usable', async () => {
    const dir = tmpDir('large-eio');
    const log = logAt(dir, { durability: durabilities.none });
    await log.append(columns(rowsFor(0, 2)));
    const rows = rowsFor(2, LARGE);
    // The batch's first write lands half its bytes (a short write, as a disk filling up
    // gives), the retry of the rest fails with ENOSPC — however the chunks were grouped.
    testing.setFaults({ shortWriteAt: 1, failWriteAt: 2 });
    await expectNothingWritten(log, dir, () => log.append(byteColumns(rows)), 'IO_ERROR');
    expect(testing.faultCounters().writes).toBe(2);
    testing.clearFaults();
    expect(await log.append(byteColumns(rows))).toBe(3);
    await log.close();
    const again = logAt(dir, { durability: durabilities.none });
    expect(again.stats().recoveries).toEqual([]);
    expect(again.nextId()).toBe(LARGE + 3);
  });
});

// A large batch in byte form is converted and checked chunk by chunk, on both threads, as it
// is encoded (SpanLog::AppendColumns): the first problem found sends it back through the
// whole-batch checks. The error must be the one a record-by-record check gives — every
// row's numbers, then every text slice, then every record check, then UTF-8, each in row
// order — whichever chunk or thread met its problem first, and nothing may be written.
describe('a large byte-form batch is refused with the error a whole-batch check gives', () => {
  type Fault = 'turn' | 'timestamp' | 'large' | 'kind' | 'flag' | 'span' | 'order' | 'utf8';
  const FAULTS: Fault[] = ['turn', 'timestamp', 'large', 'kind', 'flag', 'span', 'order', 'utf8'];
  // The stage of the whole-batch check that finds each fault, and the error it throws.
  const STAGE: Record<Fault, number> = { turn: 0, timestamp: 0, large: 1, kind: 2, flag: 2, span: 2, order: 2, utf8: 3 };
  const CODE: Record<Fault, string> = {
    turn: 'INVALID_TURN',
    timestamp: 'INVALID_ARGUMENT',
    large: 'TEXT_TOO_LARGE',
    kind: 'UNKNOWN_KIND',
    flag: 'INVALID_ARGUMENT',
    span: 'INVALID_TURN',
    order: 'TURN_ORDER',
    utf8: 'INVALID_UTF8',
  };
  const MAX_TEXT = 2000; // every generated text is shorter; 'large' makes one longer

  /** rows with each fault put in at its row; the byte form (with its text parts). */
  function faulty(rows: Row[], faults: [number, Fault][]): { bytes: AppendByteColumns; strings: Row[] } {
    const out = rows.map((r) => ({ ...r }));
    const parts = out.map((r) => enc.encode(r.text));
    for (const [at, f] of faults) {
      const r = out[at]!;
      if (f === 'turn') r.turnStart = r.turnEnd = r.turnStart + 0.5;
      else if (f === 'timestamp') r.timestamp = Number.NaN;
      else if (f === 'large') parts[at] = enc.encode((r.text = 'y'.repeat(MAX_TEXT + 1)));
      else if (f === 'kind') r.kind = 9;
      else if (f === 'flag') r.flags = 0x80;
      else if (f === 'span') r.turnEnd = r.turnStart - 1;
      else if (f === 'order') r.turnStart = r.turnEnd = Math.max(0, r.turnStart - 10);
      else parts[at] = Uint8Array.of(0x61, 0xed, 0xa0, 0x80); // a UTF-16 surrogate
    }
    return { bytes: byteColumns(out, parts), strings: out };
  }

  async function refused(log: NativeSpanLog, dir: string, cols: AppendByteColumns): Promise<{ code: string; message: string }> {
    const before = fileBytes(dir);
    const next = log.nextId();
    const files = segmentFiles(dir).length;
    const err = (await log.append(cols).then(
      () => new Error('appended'),
      (e: unknown) => e,
    )) as { code: string; message: string };
    expect(log.nextId()).toBe(next);
    expect(segmentFiles(dir).length).toBe(files);
    expect(fileBytes(dir).equals(before)).toBe(true);
    return { code: err.code, message: err.message };
  }

  it('random faults, one to three per batch, anywhere: the first by stage, then by row', async () => {
    const dir = tmpDir('large-faults');
    const ref = tmpDir('large-faults-ref');
    const log = logAt(dir, { durability: durabilities.none, maxTextBytes: MAX_TEXT });
    // The string form converts and checks every row before it writes: the reference for
    // every fault that has a string form.
    const refLog = logAt(ref, { durability: durabilities.none, maxTextBytes: MAX_TEXT });
    await log.append(columns(rowsFor(0, 2)));
    await refLog.append(columns(rowsFor(0, 2)));
    const rows = rowsFor(2, LARGE);
    let seed = 12345; // mulberry32
    const rand = (n: number) => {
      let t = (seed = (seed + 0x6d2b79f5) | 0);
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) % n;
    };
    const seen = new Set<string>();
    for (let trial = 0; trial < 40; trial++) {
      const faults: [number, Fault][] = [];
      const k = 1 + rand(3);
      while (faults.length < k) {
        const at = rand(LARGE);
        if (!faults.some(([a]) => a === at)) faults.push([at, FAULTS[rand(FAULTS.length)]!]);
      }
      const { bytes, strings } = faulty(rows, faults);
      const [at, f] = [...faults].sort((a, b) => STAGE[a[1]] - STAGE[b[1]] || a[0] - b[0])[0]!;
      const got = await refused(log, dir, bytes);
      expect(got.code, JSON.stringify(faults)).toBe(CODE[f]);
      expect(got.message, JSON.stringify(faults)).toMatch(new RegExp(`^record ${at}: `));
      if (!faults.some(([, g]) => g === 'utf8')) {
        const want = await refLog.append(columns(strings)).catch((e: { code: string; message: string }) => e);
        expect(got, JSON.stringify(faults)).toEqual({ code: (want as { code: string }).code, message: (want as Error).message });
      }
      seen.add(f);
    }
    // The draw above reached every kind of fault as the one reported.
    expect([...seen].sort()).toEqual([...FAULTS].sort());
    expect(await log.append(byteColumns(rows))).toBe(3);
    expect(log.verify()).toMatchObject({ ok: true, records: LARGE + 2 });
  });

  it('turns going backwards at the first row of each chunk (the check across threads): TURN_ORDER there', async () => {
    const dir = tmpDir('large-order');
    const log = logAt(dir, { durability: durabilities.none });
    await log.append(columns(rowsFor(0, 2)));
    const rows = rowsFor(2, LARGE);
    // Where chunks begin: at the first record starting at or past each 64 KiB multiple of
    // the file (native/log/log_internal.h, kParallelChunk), after the segment header and the two rows.
    const sizes = rows.map((r) => (64 + enc.encode(r.text).length + enc.encode(r.meta ?? '').length + 7) & ~7);
    let start = fs.statSync(segmentFiles(dir)[0]!).size;
    const firsts: number[] = [];
    sizes.forEach((s, i) => {
      if (i > 0 && Math.floor(start / 65536) > Math.floor((start - sizes[i - 1]!) / 65536)) firsts.push(i);
      start += s;
    });
    expect(firsts.length).toBeGreaterThan(10);
    for (const at of firsts) {
      const got = await refused(log, dir, faulty(rows, [[at, 'order']]).bytes);
      expect(got.code).toBe('TURN_ORDER');
      expect(got.message).toBe(`record ${at}: turn ${rows[at]!.turnStart - 10} goes backwards (the previous raw span starts at turn ${rows[at - 1]!.turnStart})`);
    }
    // Spans of other kinds are outside the raw turn order, on either side of a chunk's edge.
    const mixed = rows.map((r, i) => (firsts.includes(i) || firsts.includes(i + 1) ? { ...r, kind: 2, turnStart: 0, turnEnd: 0 } : r));
    expect(await log.append(byteColumns(mixed))).toBe(3);
    expect(log.get(3 + firsts[0]!)).toMatchObject({ kind: 2, turnStart: 0 });
  });

  it('a batch that would roll the segment is checked whole first: refused, no new segment', async () => {
    const dir = tmpDir('large-roll');
    const log = logAt(dir, { durability: durabilities.none, segmentBytes: 1 << 20 });
    await log.append(columns(rowsFor(0, 2)));
    await log.append(byteColumns(rowsFor(2, LARGE >> 1)));
    const rows = rowsFor(2 + (LARGE >> 1), LARGE >> 1);
    const got = await refused(log, dir, faulty(rows, [[LARGE >> 2, 'kind']]).bytes);
    expect(got).toEqual({ code: 'UNKNOWN_KIND', message: `record ${LARGE >> 2}: unknown kind 9` });
    expect(await log.append(byteColumns(rows))).toBe(3 + (LARGE >> 1));
    expect(segmentFiles(dir).length).toBe(2);
  });
});

describe('a large byte-form batch whose offsets change under it (SharedArrayBuffer) never corrupts the log', () => {
  it('a Worker moving the last text boundary while appends run: every batch stored whole, verify and reopen clean', async () => {
    const { Worker } = await import('node:worker_threads');
    // Before the offsets were copied once, they were read at the plan and again per chunk:
    // a change in between made a chunk encode past its end of the staging buffer (a heap
    // overflow under ASan, and logs that failed verify).
    const n = 3000;
    const per = 1100;
    const off = new Uint32Array(new SharedArrayBuffer(4 * (n + 1)));
    for (let i = 0; i <= n; i++) off[i] = i * per;
    const texts = new Uint8Array(new SharedArrayBuffer(n * per)).fill(97);
    const worker = new Worker(
      `const { workerData: { sab, k, lo, hi } } = require('node:worker_threads'); const o = new Uint32Array(sab);
       for (;;) { o[k] = hi; for (let i = 0; i < 200; i++); o[k] = lo; for (let i = 0; i < 200; i++); }`,
      { eval: true, workerData: { sab: off.buffer, k: n, lo: n * per - 1000, hi: n * per } },
    );
    try {
      await new Promise((r) => setTimeout(r, 50));
      const numeric = columns(rowsFor(0, n));
      const dir = tmpDir('large-sab');
      const log = logAt(dir, { durability: durabilities.none });
      for (let round = 0; round < 10; round++) {
        expect(await log.append({ ...numeric, kinds: new Uint8Array(n).fill(1), turnStart: new Float64Array(n).fill(round), turnEnd: new Float64Array(n).fill(round), texts, textOffsets: off, metas: null })).toBe(1 + round * n);
        const last = log.get((round + 1) * n)!.text.length;
        expect([per - 1000, per]).toContain(last);
      }
      expect(log.verify()).toMatchObject({ ok: true, records: 10 * n });
      await log.close();
      const again = logAt(dir, { durability: durabilities.none });
      expect(again.stats().recoveries).toEqual([]);
      expect(again.verify()).toMatchObject({ ok: true, records: 10 * n });
    } finally {
      await worker.terminate();
    }
  });
});
