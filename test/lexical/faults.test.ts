// save() under injected I/O faults (the addon's syscall seam, io_seam.h): a failed fsync is
// FSYNC_FAILED and never retried, a failed write is IO_ERROR, and whatever happens the file
// on disk is either the previous complete index or the new one — never a half-written one
// that is trusted.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { addon } from '../../src/native.js';
import { addDocs, asDocs, openIndex, tempDir, type LexIndex } from './helpers.js';

interface Testing {
  setFaults(plan: { failSyncAt?: number; crashAtSync?: number; failWriteAt?: number; drop?: number; garble?: number; seed?: number }): void;
  clearFaults(): void;
  faultCounters(): { syncs: number; writes: number; crashed: boolean };
}
const testing = (addon() as unknown as { _testing: Testing })._testing;

const tmp = tempDir();
afterAll(() => tmp.cleanup());
afterEach(() => testing.clearFaults());
let n = 0;

const OLD = asDocs(['the old index holds alpha', 'and beta']);
const NEW = [{ id: 2, text: 'the new span holds gamma' }];

// A saved index holding OLD, plus the same index with NEW added (not yet saved).
function prepared(): { file: string; ix: LexIndex } {
  const file = path.join(tmp.dir, `fault-${n++}.idx`);
  const ix = openIndex(file);
  addDocs(ix, OLD);
  ix.save();
  addDocs(ix, NEW);
  return { file, ix };
}

function state(file: string): 'old' | 'new' | 'rebuilt' {
  const ix = openIndex(file);
  if (ix.stats().loadedFrom === 'rebuilt') return 'rebuilt';
  const gamma = ix.search('gamma', 1, 1, NaN, NaN).ids.length;
  expect(ix.search('alpha', 1, 1, NaN, NaN).ids.length).toBe(1);
  return gamma === 1 && ix.highWater() === 3 ? 'new' : 'old';
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
}

describe('save under I/O faults', () => {
  it('a failed fsync of the temp file is FSYNC_FAILED, not retried, and the old file stays', () => {
    const { file, ix } = prepared();
    testing.setFaults({ failSyncAt: 1 });
    expect(codeOf(() => ix.save())).toBe('FSYNC_FAILED');
    expect(testing.faultCounters().syncs).toBe(1); // one attempt, no retry
    testing.clearFaults();
    expect(existsSync(file + '.tmp')).toBe(false);
    expect(state(file)).toBe('old');
    ix.save(); // a later save with a healthy disk goes through
    expect(state(file)).toBe('new');
  });
  it('a failed fsync of the directory is FSYNC_FAILED (the rename already happened)', () => {
    const { file, ix } = prepared();
    testing.setFaults({ failSyncAt: 2 });
    expect(codeOf(() => ix.save())).toBe('FSYNC_FAILED');
    expect(testing.faultCounters().syncs).toBe(2);
    testing.clearFaults();
    expect(state(file)).toBe('new');
  });
  it('a failed write is IO_ERROR naming the temp file, and the old file stays', () => {
    const { file, ix } = prepared();
    for (const at of [1, 2, 3]) {
      testing.setFaults({ failWriteAt: at });
      const err = (() => {
        try {
          ix.save();
        } catch (e) {
          return e as { code: string; details: { file?: string } };
        }
        return undefined;
      })();
      testing.clearFaults();
      if (err === undefined) continue; // fewer writes than `at`: nothing was injected
      expect(err.code).toBe('IO_ERROR');
      expect(err.details.file).toBe(file + '.tmp');
      expect(existsSync(file + '.tmp')).toBe(false);
      expect(state(file)).toBe('old');
    }
  });
  it('power loss at either fsync leaves the old or the new index intact, never a torn one', () => {
    for (const crashAtSync of [1, 2]) {
      for (let seed = 1; seed <= 5; seed++) {
        const { file, ix } = prepared();
        testing.setFaults({ crashAtSync, seed, drop: 0.5, garble: 0.3 });
        expect(['FSYNC_FAILED', 'IO_ERROR']).toContain(codeOf(() => ix.save()));
        testing.clearFaults();
        expect(['old', 'new']).toContain(state(file));
      }
    }
  });
});
