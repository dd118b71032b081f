// The log's read mappings and the process's resident set: every record a catch-up indexes is
// read through the segments' mappings, which would leave the whole log resident (hundreds of
// MB at 10^6 spans). `releaseResident()` drops the sealed segments' resident pages; the store
// calls it as its indexes catch up (src/store/upkeep.ts RELEASE_EVERY). Measured from
// /proc/self/smaps (the resident bytes of each mapping of a segment file): Linux only.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { openSpanLog, type NativeSpanLog } from '../../src/native.js';
import { RELEASE_EVERY } from '../../src/store/upkeep.js';

const linux = fs.existsSync('/proc/self/smaps');
const dirs: string[] = [];
const logs: NativeSpanLog[] = [];
const stores: SpanStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => {});
  for (const l of logs.splice(0)) await l.close().catch(() => {});
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-resident-'));
  dirs.push(d);
  return d;
}

/** Resident bytes of this process's mappings of files under `dir`, per file. */
function residentUnder(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  let file: string | null = null;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s+(.*)$/.exec(line);
    if (head) {
      file = head[1]!.startsWith(dir) ? head[1]! : null;
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && file !== null) out.set(file, (out.get(file) ?? 0) + Number(rss[1]) * 1024);
  }
  return out;
}
const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

const TEXT = 'the quick brown fox jumps over the lazy dog; '.repeat(20);

describe('releaseResident drops the sealed segments from the resident set; reads still answer', () => {
  it.runIf(linux)('after a full scan the sealed segments are resident; after releaseResident they are not, and every record reads back', async () => {
    const dir = tmp();
    const log = await openSpanLog(dir, { readOnly: false, durability: 0, segmentBytes: 1 << 20, maxTextBytes: 1 << 20 });
    logs.push(log);
    const n = 8000; // ~7 MiB of text: several 1 MiB segments
    for (let i = 0; i < n; i += 1000) {
      const k = Math.min(1000, n - i);
      await log.append({
        kinds: new Uint8Array(k).fill(1),
        flags: new Uint8Array(k),
        roles: new Uint8Array(k).fill(2),
        turnStart: Float64Array.from({ length: k }, (_, j) => i + j),
        turnEnd: Float64Array.from({ length: k }, (_, j) => i + j),
        timestamps: new Float64Array(k),
        tokens: new Uint32Array(k),
        texts: Array.from({ length: k }, (_, j) => `${i + j}: ${TEXT}`),
        metas: new Array<string | null>(k).fill(null),
      });
    }
    await log.flush();
    for (let at = log.firstId(); at < log.nextId(); at += 1000) log.scan(at, 1000);
    const before = residentUnder(dir);
    expect(before.size).toBeGreaterThan(2);
    expect(total(before)).toBeGreaterThan(4 << 20);
    const advised = log.releaseResident();
    expect(advised).toBeGreaterThan(4 << 20);
    const after = residentUnder(dir);
    // Only the last (open) segment may stay resident.
    expect(total(after)).toBeLessThanOrEqual(Math.max(...before.values()));
    expect(total(after)).toBeLessThan(total(before) / 2);
    // Reads fault the pages back in and answer as before.
    const first = log.firstId();
    expect(log.get(first)!.text).toBe(`0: ${TEXT}`);
    expect(log.get(first + n - 1)!.text).toBe(`${n - 1}: ${TEXT}`);
    expect(log.scan(first + 3000, 5).map((r) => r.text)).toEqual([3000, 3001, 3002, 3003, 3004].map((j) => `${j}: ${TEXT}`));
  }, 60_000);
});

describe("a store's catch-up does not leave the log it read resident", () => {
  it.runIf(linux)(`after more than ${RELEASE_EVERY} ids indexed, the sealed segments are not resident`, async () => {
    const dir = tmp();
    const store = await SpanStore.open(dir, { durability: 'none', segmentBytes: 1 << 20 });
    stores.push(store);
    const n = RELEASE_EVERY + 5000;
    for (let i = 0; i < n; i += 5000)
      await store.appendMany(Array.from({ length: Math.min(5000, n - i) }, (_, j) => ({ turn: i + j, role: 'user', text: `turn ${i + j} says ${TEXT.slice(0, 100 + ((i + j) % 100))}` })));
    const logDir = path.join(dir, 'log');
    const resident = total(residentUnder(logDir));
    const bytes = fs.readdirSync(logDir).filter((f) => f.startsWith('seg-')).reduce((a, f) => a + fs.statSync(path.join(logDir, f)).size, 0);
    expect(bytes).toBeGreaterThan(8 << 20);
    // Everything the catch-up read was resident before the release: now at most the open
    // segment and what was read after the last release (under RELEASE_EVERY ids).
    expect(resident).toBeLessThan(bytes / 2);
    expect(store.findExact('turn 7 says').length).toBeGreaterThan(0);
  }, 180_000);
});
