// A failed fdatasync is never retried: the log turns read-only (stats().failed) and every
// later write gets FSYNC_FAILED. A failed write takes its partial batch back.
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { columns, durabilities, openLog, rowsFor, segmentFiles, testing, tmpDir } from './helpers.js';

afterEach(() => testing.clearFaults());

describe('a failed fsync makes the log refuse every later write', () => {
  it('sync mode: the append rejects FSYNC_FAILED, then every write does; reads still work', async () => {
    const dir = tmpDir('fsync-sync');
    const log = openLog(dir, { durability: durabilities.sync });
    await log.append(columns(rowsFor(0, 3)));
    testing.setFaults({ failSyncAt: 1 });
    await expect(log.append(columns(rowsFor(3, 2)))).rejects.toMatchObject({ code: 'FSYNC_FAILED' });
    expect(log.stats().failed).toBe(true);
    testing.clearFaults(); // the disk "recovers", the log must not
    await expect(log.append(columns(rowsFor(5, 1)))).rejects.toMatchObject({ code: 'FSYNC_FAILED' });
    await expect(log.flush()).rejects.toMatchObject({ code: 'FSYNC_FAILED' });
    expect(log.get(1)?.text).toBe(rowsFor(0, 1)[0]!.text);
    await log.close();
    // A fresh open (a new process, in real life) starts over from what is on disk.
    const again = openLog(dir);
    expect(again.stats().failed).toBe(false);
    expect(again.nextId()).toBeGreaterThanOrEqual(4);
    await again.close();
  });

  it('group mode: every append waiting on the failed sync rejects, later ones too', async () => {
    const log = openLog(tmpDir('fsync-group'), { durability: durabilities.group });
    await log.append(columns(rowsFor(0, 1)));
    testing.setFaults({ failSyncAt: 1 });
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => log.append(columns(rowsFor(1 + i, 1)))));
    expect(results.every((r) => r.status === 'rejected' && (r.reason as { code: string }).code === 'FSYNC_FAILED')).toBe(true);
    expect(log.stats().failed).toBe(true);
    testing.clearFaults();
    await expect(log.append(columns(rowsFor(20, 1)))).rejects.toMatchObject({ code: 'FSYNC_FAILED' });
    await log.close();
  });

  it('none mode: the failure surfaces on flush(), and close still releases the log', async () => {
    const log = openLog(tmpDir('fsync-none'), { durability: durabilities.none });
    await log.append(columns(rowsFor(0, 4)));
    testing.setFaults({ failSyncAt: 1 });
    await expect(log.flush()).rejects.toMatchObject({ code: 'FSYNC_FAILED' });
    await expect(log.append(columns(rowsFor(4, 1)))).rejects.toMatchObject({ code: 'FSYNC_FAILED' });
    await log.close();
  });

  it('a failed write (ENOSPC) leaves the file as it was and the log usable', async () => {
    const dir = tmpDir('write-fail');
    const log = openLog(dir);
    await log.append(columns(rowsFor(0, 2)));
    const records = new Uint8Array(fs.readFileSync(segmentFiles(dir)[0]!)).slice(0, log.stats().bytes);
    testing.setFaults({ failWriteAt: 1 });
    await expect(log.append(columns(rowsFor(2, 3)))).rejects.toMatchObject({ code: 'IO_ERROR' });
    // The records as they were and nothing after them (the zero prefill goes with the cut).
    expect(new Uint8Array(fs.readFileSync(segmentFiles(dir)[0]!))).toEqual(records);
    expect(log.nextId()).toBe(3);
    testing.clearFaults();
    expect(await log.append(columns(rowsFor(2, 3)))).toBe(3);
    await log.close();
  });
});
