/**
 * The event loop while an existing store opens, repairs, rebuilds and closes: the open
 * section's stall rows (bench/open.bench.ts) taken on a store already on disk, so a large
 * one (10^6 spans, ingested once) is measured without ingesting it again.
 *
 *   node --expose-gc build/bench-dist/bench/open-store.js --store PATH [--ops open,repair,rebuild,checkpoint] [--json FILE]
 *   node --expose-gc build/bench-dist/bench/open-store.js --spans N [--cache DIR] [--ops ...]
 *
 * `--spans N`: the store is bench/hybrid-scale.ts's `repeat` corpus of N spans (the real turns
 * repeated with a distinct suffix word per copy), cached under DIR as
 * DIR/spanguard-hybrid-N-repeat: reopened when `node build/bench-dist/bench/hybrid-scale.js N
 * repeat DIR` (or an earlier run of this one) left it there, built here otherwise (an ingest
 * of 10^6 spans is minutes). Without `--cache` it is built in a temporary directory removed at
 * the end. `--store PATH` names any store on disk instead.
 *
 * The store is copied first (opening may rewrite index files and a repair rewrites all of them):
 * the copy is what is opened, and removed at the end. The operations, in this order: `open`
 * (and the close after it), `repair` (and its close), `rebuild` (an open that finds `index/`
 * removed, until its catch-up ends, and its close), `checkpoint` (1,000 turns appended and
 * indexed, then the checkpoint that saves both indexes, and the close). For each operation the longest
 * event-loop stall (perf_hooks.monitorEventLoopDelay, 1 ms resolution), the p99 and the wall
 * time are printed, and written as a run of their own to bench/results/bench-<N>-open-store.json
 * (N: the store's span count, rounded to a power of ten), which RESULTS.md renders with a check
 * per operation against the 50 ms bound; with `--json` the raw rows are written there as well.
 * A check that fails makes the exit code 1 (as bench/run.ts does), so `npm run bench:all`
 * reports the step as failed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { SpanStore } from '../src/index.js';
import { addon, packageRoot } from '../src/native.js';
import { check, cleanup, figure, machine, makeCtx, runRecord, withLoopDelay } from './lib.js';
import { repeatStore } from './hybrid-scale.js';
import { writeResults } from './results.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string' },
    spans: { type: 'string' },
    cache: { type: 'string' },
    ops: { type: 'string', default: 'open,repair,rebuild,checkpoint' },
    json: { type: 'string' },
    work: { type: 'string' },
    late: { type: 'string' },
  },
});
if ((values.store === undefined) === (values.spans === undefined)) throw new Error('--store PATH (a store on disk) or --spans N (the repeat corpus of N spans, built unless cached): one of the two');
if (values.cache !== undefined && values.spans === undefined) throw new Error('--cache DIR goes with --spans N');
const buildSpans = values.spans === undefined ? null : Number(values.spans);
if (buildSpans !== null && !(Number.isInteger(buildSpans) && buildSpans >= 2000 && buildSpans <= 1e7)) throw new Error(`--spans: ${values.spans} is not a span count between 2000 and 1e7`);
const ops = new Set(values.ops!.split(','));
// The machine and its load when the run starts: a loaded machine's stalls are not comparable.
const startedOn = machine();
const t0 = performance.now();
/** Ids the store holds (spans and records), read at the first open. */
let spans = 0;
const work = fs.mkdtempSync(path.join(values.work ?? os.tmpdir(), 'spanguard-open-store-'));
const dir = path.join(work, 'store');
/** Seconds spent building the store (--spans, not cached), or null. */
let buildSeconds: number | null = null;
if (buildSpans !== null) {
  const cacheRoot = values.cache !== undefined ? path.resolve(values.cache) : path.join(work, 'cache');
  fs.mkdirSync(cacheRoot, { recursive: true });
  const built = await repeatStore(buildSpans, cacheRoot, (m) => console.log(m));
  buildSeconds = built.buildSeconds;
  fs.cpSync(built.dir, dir, { recursive: true });
  // The build's spans are garbage now: collected here, not in the middle of a measured operation.
  (globalThis as { gc?: () => void }).gc?.();
  // Without --cache the built store is not kept: only the copy is opened from here on.
  if (values.cache === undefined) fs.rmSync(cacheRoot, { recursive: true, force: true });
} else fs.cpSync(values.store!, dir, { recursive: true });

interface Row {
  op: string;
  maxMs: number;
  p99Ms: number;
  wallMs: number;
}
const rows: Row[] = [];
// --late FILE: every turn of the loop that ran more than LATE_MS late, with the operation it
// fell in and its bounds on the monotonic clock in microseconds (the clock of a --cpu-prof
// profile's samples), so the calls it was spent in can be read from the profile.
const LATE_MS = 20;
const late: { op: string; fromUs: number; toUs: number; ms: number }[] = [];
let current = 'start';
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
let last = nowUs();
const ticker = setInterval(() => {
  const t = nowUs();
  if (t - last > (LATE_MS + 1) * 1000) late.push({ op: current, fromUs: last, toUs: t, ms: (t - last) / 1000 });
  last = t;
}, 1);

/** Runs one operation under the loop-delay monitor and prints its row. */
async function measure<T>(op: string, fn: () => Promise<T>): Promise<T> {
  current = op;
  const [r, d] = await withLoopDelay(fn);
  current = `between operations (after ${op})`;
  rows.push({ op, maxMs: d.maxMs, p99Ms: d.p99Ms, wallMs: d.wallMs });
  console.log(
    `${op.padEnd(44)} stall max ${d.maxMs.toFixed(1).padStart(8)} ms  p99 ${d.p99Ms.toFixed(1).padStart(7)} ms  wall ${d.wallMs.toFixed(0).padStart(8)} ms`,
  );
  return r;
}
const settle = () => new Promise((r) => setTimeout(r, 200));

try {
  if (ops.has('open')) {
    const s = await measure('SpanStore.open', () => SpanStore.open(dir, { durability: 'none' }));
    spans = s.stats().nextId;
    const lag = s.stats().indexLag;
    if (lag !== null) console.log(`  index lag after open: ${JSON.stringify(lag)}`);
    await measure('close() after open', () => s.close());
    await settle();
  }
  if (ops.has('repair')) {
    const s = await SpanStore.open(dir, { durability: 'none' });
    await s.catchUp();
    spans ||= s.stats().nextId;
    const rep = await measure('repair()', () => s.repair());
    console.log(`  rebuilt ${rep.rebuilt.join(', ')}; audit ${rep.audit.passed ? 'passed' : 'FAILED'} (${rep.audit.checked} facts)`);
    await measure('close() after repair', () => s.close());
    await settle();
  }
  if (ops.has('rebuild')) {
    fs.rmSync(path.join(dir, 'index'), { recursive: true, force: true });
    const s = await measure('open with index/ removed, until catchUp()', async () => {
      const store = await SpanStore.open(dir, { durability: 'none' });
      await store.catchUp();
      spans ||= store.stats().nextId;
      return store;
    });
    await measure('close() after the rebuilding open', () => s.close());
    await settle();
  }
  if (ops.has('checkpoint')) {
    // A checkpoint with something to save: 1,000 turns appended after the open and indexed,
    // then both indexes written (docs/api.md: temp file, fsync, rename, on the thread pool).
    const s = await SpanStore.open(dir, { durability: 'none' });
    await s.catchUp();
    spans ||= s.stats().nextId;
    // Turn numbers past any the store holds (a turn never goes backwards).
    const base = 2 ** 40;
    await s.appendMany(Array.from({ length: 1000 }, (_, i) => ({ turn: base + i, role: 'tool', text: `checkpoint probe ${i}: appended after the open, so that the checkpoint has both indexes to save`, tokens: 20 })));
    await s.catchUp();
    await measure('checkpoint() after 1,000 appends', () => s.checkpoint());
    await measure('close() after the checkpoint', () => s.close());
  }
} finally {
  clearInterval(ticker);
  fs.rmSync(work, { recursive: true, force: true });
}
if (values.late !== undefined) fs.writeFileSync(values.late, `${JSON.stringify(late, null, 1)}\n`);
if (values.json !== undefined)
  fs.writeFileSync(
    values.json,
    `${JSON.stringify({ command: `node --expose-gc build/bench-dist/bench/open-store.js ${process.argv.slice(2).join(' ')}`, store: values.store, machine: startedOn, loadavgAtEnd: os.loadavg(), rows }, null, 2)}\n`,
  );

// The run as RESULTS.md renders it: one figure and one check per operation.
const scale = 10 ** Math.round(Math.log10(Math.max(1, buildSpans ?? spans)));
const ctx = makeCtx(scale, false);
ctx.info.store =
  buildSpans === null
    ? { path: values.store, ids: spans }
    : { corpus: `bench/hybrid-scale.ts repeat, ${buildSpans} spans`, ids: spans, built: buildSeconds === null ? 'reopened from the cache' : `built in this run in ${buildSeconds.toFixed(1)} s (not part of the stall figures)` };
try {
  for (const r of rows) {
    figure(ctx, {
      group: 'open',
      key: `store.${r.op.replace(/[^a-z]+/gi, '-').toLowerCase()}`,
      label: `longest event-loop stall on a copy of an existing store of ${spans} ids: ${r.op}`,
      value: r.maxMs,
      unit: 'ms',
      better: 'lower',
      note: `the operation took ${r.wallMs.toFixed(1)} ms; loop delay p99 ${r.p99Ms.toFixed(1)} ms; target ≤ 50 ms at 10^6`,
    });
    check(ctx, `event-loop stall within 50 ms: ${r.op}`, r.maxMs <= 50, `longest stall ${r.maxMs.toFixed(1)} ms over ${r.wallMs.toFixed(0)} ms`);
  }
  const out = runRecord(ctx, {
    command: `node --expose-gc build/bench-dist/bench/open-store.js ${process.argv.slice(2).join(' ')}`,
    scale,
    sections: ['open-store'],
    start: startedOn,
    simd: addon().simdIsa(),
    t0,
  });
  const results = path.join(packageRoot, 'bench', 'results');
  fs.mkdirSync(results, { recursive: true });
  fs.writeFileSync(path.join(results, `bench-${scale.toExponential(0).replace('+', '')}-open-store.json`), JSON.stringify(out, null, 2));
  writeResults(results, path.join(packageRoot, 'bench', 'RESULTS.md'));
} finally {
  cleanup(ctx);
}
const failed = ctx.checks.filter((c) => !c.ok && !c.warnOnly);
if (failed.length > 0) {
  console.error(`\n${failed.length} check(s) FAILED: ${failed.map((c) => `${c.name} (${c.detail})`).join('; ')}`);
  process.exit(1);
}
