// kill -9 campaign: a child appends in `sync` or `group` mode and prints every acknowledged
// (durable) batch; the parent SIGKILLs it at a random moment, then checks the store.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { durabilities, openLog, tmpDir } from './helpers.js';
// @ts-expect-error plain .mjs shared with the child
import { columnsFor, diffRecord } from './content.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const childScript = path.join(here, 'kill-child.mjs');
const TRIALS_PER_MODE = Number(process.env.SPANGUARD_KILL_TRIALS ?? 100);
// Small, so kills also land around segment rolls (large batches: a roll every ~10 batches).
const SEGMENT_BYTES = 32 * 1024;
const LARGE_SEGMENT_BYTES = 4 << 20;
const MODES = [
  { mode: 'sync', trials: TRIALS_PER_MODE, segmentBytes: SEGMENT_BYTES },
  { mode: 'group', trials: TRIALS_PER_MODE, segmentBytes: SEGMENT_BYTES },
  { mode: 'sync-large', trials: Math.ceil(TRIALS_PER_MODE / 5), segmentBytes: LARGE_SEGMENT_BYTES },
] as const;
const TRIALS_PER_DIR = 10;

interface TrialResult {
  acked: number; // highest acknowledged id (0 if none)
  ackCount: number;
}

/** Kills at `killAfterSpawnMs` from spawn if given, else `killAfterAckMs` after the first acknowledgement. */
function runChild(
  dir: string,
  mode: string,
  segmentBytes: number,
  seed: number,
  killAfterSpawnMs: number | null,
  killAfterAckMs: number,
): Promise<TrialResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [childScript, dir, mode, String(seed), String(segmentBytes)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let acked = 0;
    let ackCount = 0;
    let timer: NodeJS.Timeout | undefined;
    const kill = () => child.kill('SIGKILL');
    if (killAfterSpawnMs !== null) timer = setTimeout(kill, killAfterSpawnMs);
    // Never hang the suite on a child that does not get to its first acknowledgement.
    const backstop = setTimeout(kill, 15_000);
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => (err += d));
    child.stdout.on('data', (d: string) => {
      out += d;
      let nl: number;
      while ((nl = out.indexOf('\n')) >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        const [tag, a, b] = line.split(' ');
        if (tag === 'ack') {
          // Timed from the first acknowledgement, not from "ready": on a loaded machine (or
          // under ASan) the first fdatasync alone can outlast a short delay.
          if (ackCount === 0 && killAfterSpawnMs === null) timer = setTimeout(kill, killAfterAckMs);
          acked = Math.max(acked, Number(a) + Number(b) - 1);
          ackCount++;
        } else if (tag !== 'ready') {
          reject(new Error(`child said: ${line} ${err}`));
        }
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(backstop);
      if (signal !== 'SIGKILL') reject(new Error(`child exited ${code} ${signal}: ${err}`));
      else resolve({ acked, ackCount });
    });
  });
}

async function checkAfterKill(dir: string, segmentBytes: number, highestAcked: number): Promise<void> {
  const log = openLog(dir, { durability: durabilities.sync, segmentBytes });
  const next = log.nextId();
  // Every acknowledged id is still there (and so will never be handed out again).
  expect(next).toBeGreaterThan(highestAcked);
  expect(log.firstId()).toBe(1);
  // Ids contiguous and every record byte for byte what was appended: no torn record.
  const all = log.scan(1, next);
  expect(all.length).toBe(next - 1);
  for (let id = 1; id < next; id++) {
    const d = diffRecord(all[id - 1], id, 0);
    if (d) throw new Error(d);
  }
  expect(log.verify().ok).toBe(true);
  await log.close();
  // Recovery is idempotent: a second open finds nothing to repair and the same records.
  const again = openLog(dir, { durability: durabilities.sync, segmentBytes });
  expect(again.nextId()).toBe(next);
  expect(again.stats().recoveries).toEqual([]);
  // Appends work afterwards, continuing the id sequence.
  expect(await again.append(columnsFor(next, 2, 0))).toBe(next);
  expect(diffRecord(again.get(next + 1), next + 1, 0)).toBeNull();
  await again.close();
}

describe('kill -9 at any moment keeps every acknowledged record and returns no torn one', () => {
  for (const { mode, trials, segmentBytes } of MODES) {
    it(`${trials} random kills of a ${mode}-mode appender`, async () => {
      let seed = mode === 'sync' ? 1000 : mode === 'group' ? 2000 : 3000;
      let dir = '';
      let highest = 0;
      let totalAcks = 0;
      let recovered = 0;
      let lateKills = 0;
      for (let trial = 0; trial < trials; trial++) {
        if (trial % TRIALS_PER_DIR === 0) {
          dir = tmpDir(`kill-${mode}`);
          highest = 0;
        }
        seed++;
        // One trial in five kills at a random moment from spawn (possibly during open and
        // recovery); the rest kill 0-25 ms after the child's first acknowledged append.
        const early = seed % 5 === 0;
        if (!early) lateKills++;
        const r = await runChild(dir, mode, segmentBytes, seed, early ? (seed * 7919) % 120 : null, (seed * 104729) % 26);
        totalAcks += r.ackCount;
        highest = Math.max(highest, r.acked);
        await checkAfterKill(dir, segmentBytes, highest);
        highest += 2; // the check appended two records
        const probe = openLog(dir, { readOnly: true });
        recovered += probe.nextId() - 1;
        await probe.close();
      }
      // The campaign must actually have exercised acknowledged appends.
      expect(totalAcks).toBeGreaterThanOrEqual(lateKills);
      expect(recovered).toBeGreaterThan(0);
    }, 300_000);
  }
});
