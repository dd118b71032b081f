// Simulated power loss through the I/O seam (native/common/io_seam.h): at a chosen fdatasync,
// every write not yet synced is, sector by sector, kept, dropped or garbled and the file
// may lose its size extension, as SQLite's crash tests do. Recovery must keep every
// record acknowledged before the last successful sync and return no damaged record.
import { afterEach, describe, expect, it } from 'vitest';
import { durabilities, expectRecovered, openLog, testing, tmpDir } from './helpers.js';
// @ts-expect-error plain .mjs shared with the child processes
import { columnsFor } from './content.mjs';
import type { NativeSpanLog } from '../../src/native.js';

afterEach(() => testing.clearFaults());

const SEGMENT_BYTES = 16 * 1024;

async function appendUntilCrash(log: NativeSpanLog, mode: 'sync' | 'group', seed: number): Promise<number> {
  let highest = 0;
  let rnd = seed;
  const next = () => ((rnd = (rnd * 1103515245 + 12345) >>> 0) >>> 16);
  const one = async (): Promise<boolean> => {
    const n = 1 + (next() % 5);
    const first = log.nextId();
    try {
      const got = await log.append(columnsFor(first, n, 0));
      expect(got).toBe(first);
      highest = Math.max(highest, first + n - 1);
      return true;
    } catch (e) {
      expect((e as { code: string }).code).toMatch(/^(FSYNC_FAILED|IO_ERROR)$/);
      return false;
    }
  };
  for (let round = 0; round < 200; round++) {
    if (mode === 'sync') {
      if (!(await one())) break;
    } else {
      const lanes = await Promise.all(Array.from({ length: 1 + (next() % 8) }, one));
      if (lanes.some((ok) => !ok)) break;
    }
    if (testing.faultCounters().crashed) break;
  }
  return highest;
}

describe('power loss at any fdatasync keeps every acknowledged record and no damaged one', () => {
  for (const mode of ['sync', 'group'] as const) {
    it(`${mode}: 60 crashes with dropped, reordered and garbled unsynced sectors`, async () => {
      let crashes = 0;
      let tornTails = 0;
      for (let trial = 0; trial < 60; trial++) {
        const seed = trial * 31 + (mode === 'sync' ? 1 : 7);
        const dir = tmpDir(`power-${mode}`);
        // Some durable history first, through the real syscalls.
        const log = openLog(dir, { durability: durabilities[mode], segmentBytes: SEGMENT_BYTES });
        const before = 1 + (seed % 40);
        await log.append(columnsFor(1, before, 0));
        let highest = before;
        // Vary the mix: mostly drops, mostly garbage, or mostly kept (reordering).
        const mix = [
          { drop: 0.6, garble: 0.1 },
          { drop: 0.1, garble: 0.6 },
          { drop: 0.2, garble: 0.2 },
        ][trial % 3]!;
        testing.setFaults({ crashAtSync: 1 + ((seed * 7) % 40), seed, ...mix });
        highest = Math.max(highest, await appendUntilCrash(log, mode, seed));
        if (testing.faultCounters().crashed) crashes++;
        await log.close().catch(() => undefined);
        testing.clearFaults();

        const opts = { durability: durabilities[mode], segmentBytes: SEGMENT_BYTES };
        tornTails += (await expectRecovered(dir, opts, highest, `trial ${trial}`)).recoveries;
      }
      // The campaign must really crash and really leave damage to recover from.
      expect(crashes).toBeGreaterThan(50);
      expect(tornTails).toBeGreaterThan(10);
    }, 60_000);
  }
});
