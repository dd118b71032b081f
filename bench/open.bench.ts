/**
 * Open and recovery: reopening the N-span log (clean), reopening it after a
 * torn tail (the last record cut short, as a crash mid-write leaves it), and opening the
 * whole store (log + lexical and vector snapshots + the event-trail replay).
 *
 * Each open is a one-shot operation on a cold object (the lock is taken, files mapped and
 * scanned), so it is timed as wall time over a few repetitions and the median is reported.
 * Peer for the store: loading the same vectors into usearch's JS binding plus opening the
 * FTS5 database and running its first query — the work a store built from those two would
 * do at open.
 *
 * The event loop: a host runs spanguard in its own process, so every millisecond of open,
 * rebuild or close spent on the main thread is a millisecond its timers and sockets wait.
 * For each of open, `repair()` (both indexes rebuilt from the log, then a full audit), the
 * `close()` after it (writing the rebuilt snapshots), and an open that finds the index
 * directory gone (rebuilt from the log, timed until `catchUp()` resolves: a long rebuild goes on
 * after the open resolves), the longest event-loop stall is reported next to the operation's
 * wall time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { SpanStore } from '../src/index.js';
import { addon } from '../src/native.js';
import { openLog } from './append.bench.js';
import type { AppendOut } from './append.bench.js';
import type { SearchOut } from './search.bench.js';
import { check, figure, pct, wall, withLoopDelay, type Ctx, type LoopDelay } from './lib.js';

const require = createRequire(import.meta.url);

async function median(reps: number, fn: () => Promise<number>): Promise<{ p50: number; max: number }> {
  const xs: number[] = [];
  for (let i = 0; i < reps; i++) xs.push(await fn());
  return { p50: pct(xs, 0.5), max: Math.max(...xs) };
}

export async function runOpen(ctx: Ctx, n: number, log: AppendOut | undefined, s?: SearchOut): Promise<void> {
  const reps = ctx.quick ? 3 : 7;
  if (log !== undefined) await runOpenLog(ctx, n, log, reps);
  if (s !== undefined) await runOpenStore(ctx, s, reps);
}

/** The raw log: a clean open and an open after a torn tail. */
async function runOpenLog(ctx: Ctx, n: number, log: AppendOut, reps: number): Promise<void> {
  const clean = await median(reps, async () => {
    const [l, ms] = await wall(() => openLog(log.logDir, 0));
    await l.close();
    return ms;
  });
  figure(ctx, { group: 'open', key: 'open.log', label: `open + recovery scan, clean log of ${n} spans`, value: clean.p50, unit: 'ms', better: 'lower', growth: true, note: 'target < 250 ms at 10^6' });

  // Torn tail: cut the last record short in a copy; open must drop exactly that record.
  const torn = ctx.tmp('torn');
  fs.cpSync(log.logDir, torn, { recursive: true });
  const segs = fs.readdirSync(torn).filter((f) => f.startsWith('seg-')).sort();
  const last = path.join(torn, segs[segs.length - 1]!);
  // A clean close ends the segment with a 64-byte checkpoint record (docs/FORMAT.md); cut
  // past it and the last record's alignment padding (≤ 7 bytes) into its text: a real tear.
  const lastText = Buffer.byteLength(log.lastText);
  fs.truncateSync(last, fs.statSync(last).size - 64 - 8 - Math.min(16, lastText));
  // The log's extent as a writer killed mid-batch leaves it: durable below the torn batch.
  claimDurableBelow(torn, tornBatchStart(log, n));
  const [tl, tornMs] = await wall(() => openLog(torn, 0));
  const st = tl.stats();
  // Recovery keeps whole append batches only, so the whole last batch goes; ids are never
  // reused, so nextId does not move back: check what is readable instead.
  const first = tl.firstId();
  const lastId = first + n - 1;
  const batchStart = first + n - log.batch;
  const tornGone = tl.get(lastId) === undefined && tl.get(batchStart) === undefined;
  const prevKept = tl.get(batchStart - 1)?.text === log.beforeLastBatchText;
  await tl.close();
  check(
    ctx,
    'torn tail: the torn batch is dropped, everything before it kept, and reported',
    tornGone && prevKept && st.recoveries.length === 1,
    `last batch ${tornGone ? 'dropped' : 'STILL RETURNED'}, the record before it ${prevKept ? 'intact' : 'NOT intact'}, ${st.recoveries.length} recovery reported (${st.recoveries.map((x) => `${x.droppedBytes} bytes at ${x.offset}`).join(', ')})`,
  );
  figure(ctx, { group: 'open', key: 'open.torn', label: 'open after a torn tail (truncate + log it)', value: tornMs, unit: 'ms', better: 'lower' });
}

/** The whole store: open, and the event loop while opening, repairing, rebuilding and closing. */
async function runOpenStore(ctx: Ctx, s: SearchOut, reps: number): Promise<void> {
  const store = await median(reps, async () => {
    const [st2, ms] = await wall(() => SpanStore.open(s.storeDir, { durability: 'none' }));
    await st2.close();
    return ms;
  });
  let peer: number | undefined;
  if (s.usearchFile && s.ftsFile) {
    const { Index } = require('usearch') as { Index: new (c: Record<string, unknown>) => { load(p: string): void } };
    const Database = require('better-sqlite3') as new (f: string) => { prepare(q: string): { all(...a: unknown[]): unknown[] }; close(): void };
    peer = (
      await median(reps, async () => {
        const [, ms] = await wall(() => {
          const ix = new Index({ metric: 'cos', dimensions: 256, quantization: 'f16', connectivity: 16 });
          ix.load(s.usearchFile!);
          const db = new Database(s.ftsFile!);
          db.prepare("SELECT rowid FROM t WHERE t MATCH 'error' LIMIT 1").all();
          db.close();
        });
        return ms;
      })
    ).p50;
  }
  figure(ctx, { group: 'open', key: 'open.store', label: 'SpanStore.open (log + both index snapshots + replay)', value: store.p50, unit: 'ms', better: 'lower', growth: true, ...(peer !== undefined ? { peer: { label: 'usearch load + FTS5 open & first query', value: peer } } : {}) });

  // ---- the event loop while opening, rebuilding and closing ------------------------------
  const stall = (key: string, what: string, d: LoopDelay) =>
    figure(ctx, { group: 'open', key, label: `longest event-loop stall: ${what}`, value: d.maxMs, unit: 'ms', better: 'lower', growth: true, note: `the operation took ${d.wallMs.toFixed(1)} ms; target ≤ 50 ms at 10^6` });
  const [opened, openD] = await withLoopDelay(() => SpanStore.open(s.storeDir, { durability: 'none' }));
  stall('eld.open', 'SpanStore.open', openD);
  const [rep, repairD] = await withLoopDelay(() => opened.repair());
  stall('eld.repair', 'repair() (both indexes rebuilt from the log + full audit)', repairD);
  check(ctx, 'repair() rebuilds both indexes and its audit passes', rep.rebuilt.length === 2 && rep.audit.passed, `rebuilt ${rep.rebuilt.join(', ')}; audit ${rep.audit.passed ? 'passed' : 'FAILED'} (${rep.audit.checked} facts)`);
  const [, closeD] = await withLoopDelay(() => opened.close());
  stall('eld.close', 'close() after repair (snapshots written)', closeD);
  // What the indexes built by ingest (and rebuilt by repair) say against the log, read by a
  // reader, which records nothing: a writer's verifyIndexes() would degrade the verdict the
  // guard section then works under.
  const before = await verifyReadOnly(s.storeDir);
  check(ctx, "the store's indexes agree with the log after ingest and repair (verifyIndexes)", before.length === 0, before.length === 0 ? 'no disagreement' : before.slice(0, 3).join('; '), true);
  // The index directory gone: open rebuilds both indexes from the log (a long rebuild goes on
  // after open resolves: backgroundCatchUpAbove); timed until catchUp() says it is done.
  fs.rmSync(path.join(s.storeDir, 'index'), { recursive: true, force: true });
  const [rebuilt, rebuildD] = await withLoopDelay(async () => {
    const store = await SpanStore.open(s.storeDir, { durability: 'none' });
    await store.catchUp();
    return store;
  });
  stall('eld.openRebuild', 'SpanStore.open with the index directory removed (rebuilt from the log)', rebuildD);
  const lag = rebuilt.stats().indexLag;
  const [, close2D] = await withLoopDelay(() => rebuilt.close());
  const after = await verifyReadOnly(s.storeDir);
  check(
    ctx,
    'an open without index files rebuilds indexes that agree with the log as the ones ingest built did',
    lag === null && after.join('\n') === before.join('\n'),
    `${after.length === 0 ? 'no disagreement' : `the same disagreements as before: ${after.slice(0, 3).join('; ')}`}${lag === null ? '' : `; index lag ${JSON.stringify(lag)}`}${after.join('\n') === before.join('\n') ? '' : `; DIFFERENT from before the rebuild: ${after.slice(0, 3).join('; ')}`}`,
  );
  stall('eld.closeRebuilt', 'close() after the rebuilding open', close2D);
}

/** verifyIndexes() through a reader: the disagreements, with nothing recorded in the store. */
async function verifyReadOnly(dir: string): Promise<string[]> {
  const r = await SpanStore.open(dir, { readOnly: true });
  try {
    return await r.verifyIndexes();
  } finally {
    await r.close();
  }
}

/** The first id of the last append batch of the bench log (ids from 1). */
function tornBatchStart(log: AppendOut, n: number): number {
  return 1 + n - log.batch;
}

/**
 * Rewrites the current slot of `dir`'s EXTENT (docs/FORMAT.md, "Extent") to say that ids from
 * `next` on were never durable, as after a crash during their write.
 */
function claimDurableBelow(dir: string, next: number): void {
  const file = path.join(dir, 'EXTENT');
  const b = fs.readFileSync(file);
  const crc = (addon() as unknown as { _testing: { crc32c(bytes: Uint8Array): number } })._testing.crc32c;
  let at = -1;
  for (const slot of [0, 4096]) {
    if (b.length < slot + 64 || (crc(b.subarray(slot, slot + 60)) >>> 0) !== b.readUInt32LE(slot + 60)) continue;
    if (at < 0 || b.readBigUInt64LE(slot + 32) > b.readBigUInt64LE(at + 32)) at = slot;
  }
  if (at < 0) throw new Error(`no valid slot in ${file}`);
  b.writeBigUInt64LE(BigInt(next), at + 40);
  b.writeUInt32LE(crc(b.subarray(at, at + 60)) >>> 0, at + 60);
  fs.writeFileSync(file, b);
}
