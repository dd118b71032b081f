// Group commit's waiters: the JS append wrapper makes each append's promise and keeps its
// resolvers in a per-log queue; one native call settles a burst (docs/FORMAT.md,
// "Durability points"). Every waiter must settle with its own outcome, in every mix of
// one-row, multi-row, byte-form appends and flush() calls.
import { afterEach, describe, expect, it } from 'vitest';
import { packTexts, type AppendByteColumns, type AppendColumns } from '../../src/native.js';
import { columns, durabilities, openLog, rowsFor, testing, tmpDir } from './helpers.js';

afterEach(() => testing.clearFaults());

function bytes(c: AppendColumns): AppendByteColumns {
  const { bytes: texts, offsets } = packTexts(c.texts);
  const { texts: _t, metas: _m, ...numeric } = c;
  return { ...numeric, texts, textOffsets: offsets, metas: null };
}

describe('group commit settles each waiter of a burst with its own outcome', () => {
  it('a burst of one-row, multi-row and byte appends with flushes between: each resolves with its own first id', async () => {
    const log = openLog(tmpDir('waiters-ids'), { durability: durabilities.group });
    testing.setFaults({});
    const sizes = [1, 3, 1, 1, 5, 1, 2, 1];
    const waits: Promise<unknown>[] = [];
    const want: unknown[] = [];
    let row = 0;
    for (let round = 0; round < 3; round++) {
      for (const [k, n] of sizes.entries()) {
        const c = columns(rowsFor(row, n));
        waits.push(log.append(k % 2 === 0 ? c : bytes(c)));
        want.push(row + 1);
        row += n;
        if (k === 3) {
          waits.push(log.flush());
          want.push(undefined);
        }
      }
    }
    const order: number[] = [];
    waits.forEach((p, i) => void p.then(() => order.push(i)));
    expect(await Promise.all(waits)).toEqual(want);
    // Settled in submission order, after one fdatasync for the whole burst.
    await Promise.resolve();
    expect(order).toEqual(waits.map((_, i) => i));
    expect(testing.faultCounters().syncs).toBe(1);
    for (let id = 1; id <= row; id++) expect(log.get(id)?.text).toBe(rowsFor(id - 1, 1)[0]!.text);
    // Consecutive bursts keep going through the same queue.
    for (let b = 0; b < 5; b++) {
      const ids = await Promise.all(Array.from({ length: 16 }, (_, i) => log.append(columns(rowsFor(row + i, 1)))));
      expect(ids).toEqual(Array.from({ length: 16 }, (_, i) => row + i + 1));
      row += 16;
    }
    await log.close();
  });

  // A small burst and a large one settle the same way.
  for (const [size, extra] of [
    ['small', 0],
    ['large', 20],
  ] as const) {
    it(`an injected fsync failure rejects every waiter of the burst (appends and flush) with FSYNC_FAILED, and every later write — a ${size} burst`, async () => {
      const log = openLog(tmpDir('waiters-fsync'), { durability: durabilities.group });
      expect(await log.append(columns(rowsFor(0, 1)))).toBe(1);
      testing.setFaults({ failSyncAt: 1 });
      const burst = [
        log.append(columns(rowsFor(1, 1))),
        log.append(bytes(columns(rowsFor(2, 4)))),
        log.flush(),
        log.append(columns(rowsFor(6, 1))),
        ...Array.from({ length: extra }, (_, i) => log.append(columns(rowsFor(7 + i, 1)))),
      ];
      const settled = await Promise.allSettled(burst);
      for (const r of settled) {
        expect(r.status).toBe('rejected');
        expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'FSYNC_FAILED' });
      }
      // Each waiter gets its own error object.
      expect(new Set(settled.map((r) => (r as PromiseRejectedResult).reason)).size).toBe(burst.length);
      expect(log.stats().failed).toBe(true);
      testing.clearFaults();
      await expect(log.append(columns(rowsFor(7 + extra, 1)))).rejects.toMatchObject({ code: 'FSYNC_FAILED' });
      await expect(log.flush()).rejects.toMatchObject({ code: 'FSYNC_FAILED' });
      await log.close();
    });
  }

  it('close() in the same tick as a burst of 20: the closed log reopens whole, with no recovery', async () => {
    // close() waits for the scheduled burst; settling it starts the close, and nothing of the
    // burst's sync may touch the log after that (a zero prefill written then used to outlive
    // the checkpoint: the next open cut 2 MiB of zeros in most runs).
    for (let round = 0; round < 20; round++) {
      const dir = tmpDir('waiters-close');
      const log = openLog(dir, { durability: durabilities.group });
      const waits = Array.from({ length: 20 }, (_, i) => log.append(columns(rowsFor(i, 1))));
      await log.close();
      expect(await Promise.all(waits)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      const again = openLog(dir, { durability: durabilities.group });
      expect(again.stats().recoveries).toEqual([]);
      expect(again.nextId()).toBe(21);
      await again.close();
    }
  });

  it('a burst of any size is flushed on the thread pool: the event loop runs while its fdatasync does', async () => {
    // An immediate queued right after the burst runs before any of its appends settles: the
    // check phase that starts the sync goes on to the next callback instead of waiting for
    // the disk (a sync on the loop's thread settles the burst inside that phase, first).
    const log = openLog(tmpDir('waiters-pool'), { durability: durabilities.group });
    let row = 0;
    for (const n of [1, 16, 64, 256]) {
      let looped = false;
      const seen: boolean[] = [];
      const waits = Array.from({ length: n }, (_, i) => log.append(columns(rowsFor(row + i, 1))).then((id) => (seen.push(looped), id)));
      setImmediate(() => (looped = true));
      expect(await Promise.all(waits)).toEqual(Array.from({ length: n }, (_, i) => row + i + 1));
      expect(seen.filter((x) => !x).length).toBe(0);
      row += n;
    }
    await log.close();
  });

  it('a large burst resolves only after its fdatasync, each with its own id, in order', async () => {
    const log = openLog(tmpDir('waiters-main'), { durability: durabilities.group });
    testing.setFaults({});
    for (let b = 0; b < 4; b++) {
      const order: number[] = [];
      const waits = Array.from({ length: 40 }, (_, i) => log.append(columns(rowsFor(b * 40 + i, 1))).then((id) => (order.push(i), id)));
      // Nothing is durable, or settled, before the burst's one fdatasync.
      expect(testing.faultCounters().syncs).toBe(b);
      expect(await Promise.all(waits)).toEqual(Array.from({ length: 40 }, (_, i) => b * 40 + i + 1));
      expect(order).toEqual(Array.from({ length: 40 }, (_, i) => i));
      expect(testing.faultCounters().syncs).toBe(b + 1);
    }
    await log.close();
  });

  it('a failed staged write rejects exactly the appends staged since the last write; earlier waiters resolve', async () => {
    const log = openLog(tmpDir('waiters-write'), { durability: durabilities.group });
    const first = [log.append(columns(rowsFor(0, 1))), log.append(columns(rowsFor(1, 2)))];
    // A read writes the staged records (that write succeeds) before any fdatasync; the next
    // write, the second burst's, fails.
    expect(log.get(3)?.text).toBe(rowsFor(2, 1)[0]!.text);
    testing.setFaults({ failWriteAt: 1 });
    const second = Promise.allSettled([log.append(columns(rowsFor(3, 1))), log.append(bytes(columns(rowsFor(4, 2))))]);
    const settledFirst = await Promise.all(first);
    expect(settledFirst).toEqual([1, 2]);
    const settledSecond = await second;
    expect(settledSecond.map((r) => r.status === 'rejected' && (r.reason as { code: string }).code)).toEqual(['IO_ERROR', 'IO_ERROR']);
    expect(log.stats().failed).toBe(false);
    expect(log.nextId()).toBe(4);
    testing.clearFaults();
    expect(await log.append(columns(rowsFor(3, 1)))).toBe(4);
    await log.close();
  });
});
