// The vector files' writes go through the I/O fault seam (native/common/io_seam.h), as the
// log's and the lexical index's do: a fault injected there reaches the vectors file and the
// snapshots, and each failure leaves the files as they were.
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { testing } from '../log/helpers.js';
import { clustered, openIndex, snapshotFile, tmpDir } from './helpers.js';

const RAW = 1;
const dims = 8;

function batch(first: number, n: number): { ids: Float64Array; kinds: Uint8Array; vectors: Float32Array } {
  return {
    ids: Float64Array.from({ length: n }, (_, i) => first + i),
    kinds: new Uint8Array(n).fill(RAW),
    vectors: clustered(n, dims, 2, first + 1),
  };
}

afterEach(() => testing.clearFaults());

describe('an append to the vectors file is written through the seam', () => {
  it('a write that fails (ENOSPC) rejects the batch with IO_ERROR and the file keeps only the earlier vectors', () => {
    const dir = tmpDir('vfault-write');
    const ix = openIndex(dir, { dims, ann: 'binary' });
    const a = batch(0, 4);
    ix.add(a.ids, a.kinds, a.vectors);
    const before = fs.statSync(`${dir}/vectors.bin`).size;
    testing.setFaults({ failWriteAt: 1 });
    const b = batch(4, 4);
    expect(() => ix.add(b.ids, b.kinds, b.vectors)).toThrow(expect.objectContaining({ code: 'IO_ERROR' }));
    expect(testing.faultCounters().writes).toBe(1);
    testing.clearFaults();
    expect(fs.statSync(`${dir}/vectors.bin`).size).toBe(before);
    ix.close();
    const reopened = openIndex(dir, { dims, ann: 'binary' });
    expect([...reopened.ids(RAW)]).toEqual([0, 1, 2, 3]);
    reopened.close();
  });

  it('a short write cut by ENOSPC is cut back: nothing of the batch stays in the file', () => {
    const dir = tmpDir('vfault-short');
    const ix = openIndex(dir, { dims, ann: 'binary' });
    const a = batch(0, 2);
    ix.add(a.ids, a.kinds, a.vectors);
    const before = fs.statSync(`${dir}/vectors.bin`).size;
    testing.setFaults({ shortWriteAt: 1, failWriteAt: 2 });
    const b = batch(2, 3);
    expect(() => ix.add(b.ids, b.kinds, b.vectors)).toThrow(expect.objectContaining({ code: 'IO_ERROR' }));
    testing.clearFaults();
    expect(fs.statSync(`${dir}/vectors.bin`).size).toBe(before);
    ix.close();
  });
});

describe('save syncs the vectors file and writes snapshots through the seam', () => {
  it('a failed fsync fails save with FSYNC_FAILED and refuses later appends', () => {
    const dir = tmpDir('vfault-sync');
    const ix = openIndex(dir, { dims, ann: 'binary' });
    const a = batch(0, 4);
    ix.add(a.ids, a.kinds, a.vectors);
    testing.setFaults({ failSyncAt: 1 });
    expect(() => ix.save()).toThrow(expect.objectContaining({ code: 'FSYNC_FAILED' }));
    testing.clearFaults();
    const b = batch(4, 1);
    expect(() => ix.add(b.ids, b.kinds, b.vectors)).toThrow(expect.objectContaining({ code: 'FSYNC_FAILED' }));
    ix.close();
  });

  it('a snapshot write that fails leaves no snapshot and no temporary file; the next save writes it', () => {
    const dir = tmpDir('vfault-snap');
    const ix = openIndex(dir, { dims, ann: 'binary' });
    const a = batch(0, 4);
    ix.add(a.ids, a.kinds, a.vectors);
    // The vectors file is synced first (no write), then the snapshot's first write fails.
    testing.setFaults({ failWriteAt: 1 });
    expect(() => ix.save()).toThrow(expect.objectContaining({ code: 'IO_ERROR' }));
    testing.clearFaults();
    const snap = snapshotFile(dir, 'binary');
    expect(fs.existsSync(snap)).toBe(false);
    expect(fs.existsSync(`${snap}.tmp`)).toBe(false);
    ix.save();
    expect(fs.existsSync(snap)).toBe(true);
    ix.close();
  });
});
