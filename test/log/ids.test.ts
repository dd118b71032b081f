// Ids are assigned by the log, contiguous, and never handed out again once acknowledged:
// a torn tail only ever drops records that were never acknowledged.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { durabilities, openLog, recordOffsets, segmentFiles, testing, tmpDir } from './helpers.js';
// @ts-expect-error plain .mjs shared with the child processes
import { columnsFor, diffRecord } from './content.mjs';

describe('ids are never reused after a torn-tail recovery', () => {
  it('a torn last record gives its (unacknowledged) id back, never an acknowledged one', async () => {
    const live = tmpDir('ids-torn-live');
    const log = openLog(live, { durability: durabilities.none });
    for (let id = 1; id <= 11; id++) expect(await log.append(columnsFor(id, 1, 0))).toBe(id);
    await log.flush();
    expect(await log.append(columnsFor(12, 1, 0))).toBe(12);
    // The files as a writer killed half-way through writing record 12 leaves them: record 12
    // was never durable, so never acknowledged as such.
    const dir = tmpDir('ids-torn');
    for (const f of [...segmentFiles(live), `${live}/EXTENT`]) fs.copyFileSync(f, `${dir}/${f.split('/').pop()}`);
    await log.close();
    const file = segmentFiles(dir)[0]!;
    const offs = recordOffsets(fs.readFileSync(file));
    fs.truncateSync(file, offs[11]! + 40);
    const after = openLog(dir, { durability: durabilities.sync });
    expect(after.stats().recoveries.length).toBe(1);
    expect(after.nextId()).toBe(12);
    for (let id = 1; id <= 11; id++) expect(diffRecord(after.get(id), id, 0)).toBeNull();
    expect(await after.append(columnsFor(12, 1, 0))).toBe(12);
    await after.close();
  });

  it('repeated crash cycles: every id a caller ever got back stays bound to its record', async () => {
    const dir = tmpDir('ids-cycles');
    const acknowledged = new Set<number>();
    try {
      for (let cycle = 0; cycle < 15; cycle++) {
        const log = openLog(dir, { durability: durabilities.group, segmentBytes: 8192 });
        const start = log.nextId();
        for (const id of acknowledged) expect(id).toBeLessThan(start);
        testing.setFaults({ crashAtSync: 2 + (cycle % 5), seed: cycle + 1, drop: 0.4, garble: 0.3 });
        for (let round = 0; round < 50 && !testing.faultCounters().crashed; round++) {
          await Promise.all(
            Array.from({ length: 4 }, async () => {
              const first = log.nextId();
              try {
                expect(await log.append(columnsFor(first, 2, 0))).toBe(first);
                acknowledged.add(first).add(first + 1);
              } catch {
                /* the simulated power loss */
              }
            }),
          );
        }
        await log.close().catch(() => undefined);
        testing.clearFaults();
        const check = openLog(dir, { readOnly: true });
        for (const id of acknowledged) {
          const d = diffRecord(check.get(id), id, 0);
          if (d) throw new Error(`cycle ${cycle}: ${d}`);
        }
        await check.close();
      }
      expect(acknowledged.size).toBeGreaterThan(30);
    } finally {
      testing.clearFaults();
    }
  });
});

describe('ids stop at 2^53 - 1 so they cross to JavaScript exactly', () => {
  it('the log refuses to assign an id above Number.MAX_SAFE_INTEGER', async () => {
    const dir = tmpDir('ids-max');
    const first = 2 ** 53 - 2;
    const header = new Uint8Array(64);
    const dv = new DataView(header.buffer);
    header.set(new TextEncoder().encode('SPGLOG'), 0);
    dv.setUint32(8, 1, true);
    dv.setUint32(12, 64, true);
    dv.setBigUint64(16, BigInt(first), true);
    dv.setUint32(60, testing.crc32c(header.subarray(0, 60)), true);
    fs.writeFileSync(`${dir}/seg-${String(first).padStart(20, '0')}.log`, header, { mode: 0o600 });
    const log = openLog(dir);
    expect(log.nextId()).toBe(first);
    await expect(log.append(columnsFor(1, 3, 0))).rejects.toMatchObject({ code: 'IO_ERROR' });
    expect(log.nextId()).toBe(first);
    expect(await log.append(columnsFor(1, 2, 0))).toBe(first);
    expect(log.nextId()).toBe(2 ** 53);
    expect(log.get(2 ** 53 - 1)?.id).toBe(Number.MAX_SAFE_INTEGER);
    await expect(log.append(columnsFor(3, 1, 0))).rejects.toMatchObject({ code: 'IO_ERROR' });
    await log.close();
  });
});
