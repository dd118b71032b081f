/**
 * The benchmark suite: `npm run bench -- [--scale 1e4|1e5|1e6|1e4,1e5,...] [--quick]
 * [--only log,retrieval,ingest,guard,open,load] [--data auto|gen] [--peers-all] [--peer-fts5]
 * [--duration seconds] [--stalls] [--load-without searcher,compactor] [--load-prefill N] [--load-rate R]`. `ingest` is the retrieval section's ingest, memory and disk figures
 * alone (for 10^6); `load` is the load test (bench/load.bench.ts), `--duration` long (300 s,
 * 20 s under --quick). `--stalls`: the load test also says which calls its late event-loop
 * turns were spent in (bench/stalls.ts); `--load-without` leaves the searcher or the compactor
 * out of it; `--load-prefill N --load-rate R` is its steady-state variant (a store of N spans
 * before the clock starts, at most R appends a second; bench/load.bench.ts `LoadShape`).
 *
 * One scale runs in this process; several scales run one child process each, so that peak
 * RSS is per scale and one scale's garbage never weighs on the next. Each scale prints its
 * table and writes bench/results/bench-<scale>[-quick].json; afterwards the growth fit over
 * every full-run result on disk is refreshed (bench/results/growth.json, bench/growth.svg),
 * and bench/RESULTS.md is rewritten from every JSON in bench/results/.
 *
 * Timings never fail the run. Correctness checks inside the benchmarks (recall@10 against
 * brute force, phrase hits against an includes() scan, honest misses, torn-tail recovery,
 * audits) do: the exit code is 1 when any fails.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { addon, packageRoot } from '../src/native.js';
import { defaultCountTokens } from '../src/window.js';
import { loadData, streamData, type BenchData } from './data.js';
import { cleanup, fmtValue, status, sweepTable, machine, makeCtx, runRecord, table, wall } from './lib.js';
import { runAppend } from './append.bench.js';
import { batchesOf, runIngestOnly, runSearch } from './search.bench.js';
import { runGuard } from './guard.bench.js';
import { runOpen } from './open.bench.js';
import { runLoad, type LoadPart, type LoadShape } from './load.bench.js';
import { writeGrowth } from './growth.js';
import { writeResults } from './results.js';

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: '1e4' },
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    data: { type: 'string', default: 'auto' },
    'peers-all': { type: 'boolean', default: false },
    'peer-fts5': { type: 'boolean', default: false },
    'no-growth': { type: 'boolean', default: false },
    duration: { type: 'string' },
    stalls: { type: 'boolean', default: false },
    'load-without': { type: 'string' },
    'load-prefill': { type: 'string' },
    'load-rate': { type: 'string' },
  },
  strict: true,
});

const RESULTS = path.join(packageRoot, 'bench', 'results');
const RESULTS_MD = path.join(packageRoot, 'bench', 'RESULTS.md');
const duration = values.duration !== undefined ? Number(values.duration) : values.quick ? 20 : 300;
if (!(duration >= 5 && duration <= 3600)) throw new Error(`--duration: ${values.duration} is not a number of seconds between 5 and 3600`);
const loadWithout = (values['load-without'] ?? '').split(',').filter((x) => x !== '');
for (const p of loadWithout) if (p !== 'searcher' && p !== 'compactor') throw new Error(`--load-without: ${p} is not searcher or compactor`);
const loadShape: LoadShape = {};
if (values['load-prefill'] !== undefined) {
  loadShape.prefill = Number(values['load-prefill']);
  if (!Number.isInteger(loadShape.prefill) || loadShape.prefill < 1 || loadShape.prefill > 1e7) throw new Error(`--load-prefill: ${values['load-prefill']} is not a span count between 1 and 1e7`);
}
if (values['load-rate'] !== undefined) {
  loadShape.rate = Number(values['load-rate']);
  if (!(loadShape.rate >= 1 && loadShape.rate <= 1e6)) throw new Error(`--load-rate: ${values['load-rate']} is not a rate between 1 and 1e6 appends/s`);
}
const scales = values.scale!.split(',').map((s) => Math.round(Number(s)));
for (const s of scales) if (!(s >= 2000 && s <= 1e7)) throw new Error(`--scale: ${s} is not a span count between 2e3 and 1e7`);
// --quick is the CI smoke run: the design scale only.
if (values.quick && (scales.length !== 1 || scales[0] !== 1e4)) console.error('note: --quick runs at the design scale (1e4) as asked; other scales are slow by nature');

const command = process.env.SPANGUARD_BENCH_COMMAND ?? `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim();

if (scales.length > 1) {
  let failed = false;
  const self = fileURLToPath(import.meta.url);
  for (const s of scales) {
    const args = process.argv.slice(2).filter((a, i, all) => a !== '--scale' && all[i - 1] !== '--scale' && !a.startsWith('--scale='));
    // Each child records the command that was typed, not its own argument list.
    const env = { ...process.env, SPANGUARD_BENCH_COMMAND: command };
    const r = spawnSync(process.execPath, ['--expose-gc', self, '--scale', String(s), '--no-growth', ...args], { stdio: 'inherit', env });
    if (r.status !== 0) failed = true;
  }
  if (!values['no-growth']) writeGrowth(RESULTS, path.join(packageRoot, 'bench', 'growth.svg'));
  writeResults(RESULTS, RESULTS_MD);
  process.exit(failed ? 1 : 0);
}

const scale = scales[0]!;
const ctx = makeCtx(scale, values.quick!);
const SECTIONS = ['log', 'retrieval', 'ingest', 'guard', 'open', 'load'];
// The load test does not depend on N (its store starts empty): by default it runs with the
// design scale only, so `--scale 1e4,1e5` runs it once.
const only = new Set((values.only ?? `log,retrieval,guard,open${scale === 1e4 ? ',load' : ''}`).split(','));
for (const s of only) if (!SECTIONS.includes(s)) throw new Error(`--only: ${s} is not one of ${SECTIONS.join(', ')}`);
if (values['peers-all']) process.argv.push('--peers-all');
if (values['peer-fts5']) process.argv.push('--peer-fts5');
const start = machine();
console.log(`spanguard bench — scale ${scale.toExponential(0)} spans${ctx.quick ? ' (quick)' : ''}; node ${start.node}; ${start.cpus} cpus (${start.cpuModel}); load average ${(start.loadavg as number[]).join(' ')}; SIMD ${addon().simdIsa()}`);

// `--only ingest[,open]` appends the spans as they are made (bench/data.ts streamData) and
// never holds them all: the ingest's peak RSS is then the store's, not the bench's copy of
// the data (~700 MiB of JS strings at 10^6). Every other section reads the spans themselves.
const streamed = [...only].every((s) => s === 'ingest' || s === 'open') && only.has('ingest');
const dataMode = values.data === 'gen' ? 'gen' : 'auto';
const [data, dataMs] = await wall(() => (streamed ? null : loadData(scale, dataMode)));
/**
 * What the data is, in ctx.info.data. Tokens (the project's counter, gpt-tokenizer cl100k):
 * all spans up to 10^5, a uniform sample of 10^5 above, scaled up. Streamed, a pass of its
 * own over the spans after the sections ran, so neither its time nor its garbage weighs on
 * the ingest.
 */
function describeData(): void {
  const step = Math.max(1, Math.floor(scale / 1e5));
  let tokens = 0;
  let summary: Omit<BenchData, 'spans'>;
  if (data !== null) {
    for (let i = 0; i < data.spans.length; i += step) tokens += defaultCountTokens(data.spans[i]!.text);
    summary = data;
  } else {
    const stream = streamData(scale, dataMode);
    let i = 0;
    for (const batch of stream.batches()) for (const s of batch) if (i++ % step === 0) tokens += defaultCountTokens(s.text);
    summary = stream.summary();
  }
  ctx.info.data = { spans: scale, real: summary.real, generated: summary.generated, sources: summary.sources, avgChars: +(summary.chars / scale).toFixed(0), loadMs: Math.round(dataMs), streamed, tokens: Math.round(tokens * step), tokensCounted: step === 1 ? 'all' : `1 in ${step}, scaled` };
  ctx.log(`data: ${summary.real} real + ${summary.generated} generated spans, ${(summary.chars / scale).toFixed(0)} chars avg, ${Math.round(tokens * step)} tokens (${summary.sources.join(', ')})${streamed ? '; streamed into the ingest, 5,000 spans at a time' : ''}`);
}
if (!streamed) describeData();

const t0 = performance.now();
try {
  let logOut: Awaited<ReturnType<typeof runAppend>> | undefined;
  let searchOut: Awaited<ReturnType<typeof runSearch>> | undefined;
  // `open` reopens the log section's log when that section runs; with `ingest` alone (the
  // 10^6 store without the log section's minutes of append rounds) it opens the store only.
  if (only.has('log') || (only.has('open') && !only.has('ingest') && !only.has('retrieval'))) {
    ctx.log('log: append / get / scan');
    logOut = await runAppend(ctx, data!);
  }
  if (only.has('retrieval')) {
    ctx.log('retrieval: ingest / embed / vector / BM25 / phrase / hybrid');
    searchOut = await runSearch(ctx, data!);
  } else if (only.has('ingest')) {
    ctx.log('ingest only: appendMany, memory, disk');
    searchOut = await runIngestOnly(ctx, data !== null ? batchesOf(data) : streamData(scale, dataMode).batches(), data === null);
  }
  // Open before guard: the store is then opened as ingest left it; guard reuses it after.
  if (only.has('open') && (logOut || searchOut)) {
    ctx.log('open: log / torn tail / store');
    await runOpen(ctx, scale, logOut, searchOut);
  }
  if (only.has('guard')) {
    ctx.log('guard: passes / audit / verdict');
    await runGuard(ctx, data!, searchOut?.storeDir);
  }
  if (only.has('load')) {
    ctx.log(`load: ${duration} s of concurrent appends, searches and compactions`);
    await runLoad(ctx, data!, duration, values.stalls!, loadWithout as LoadPart[], loadShape);
  }
} catch (e) {
  ctx.checks.push({ name: 'bench ran to completion', ok: false, detail: String((e as Error).stack ?? e) });
  console.error(e);
} finally {
  cleanup(ctx);
}
if (streamed) describeData();
const info = ctx.info.data as { real: number; generated: number };

const failed = ctx.checks.filter((c) => !c.ok && !c.warnOnly);
const out = runRecord(ctx, { command, scale, sections: [...only], start, simd: addon().simdIsa(), t0 });
const end = out.machineEnd;
fs.mkdirSync(RESULTS, { recursive: true });
// A run of chosen sections (--only) writes a file of its own: it never replaces the full run's figures.
const part = (values.only !== undefined ? `-${[...only].join('-')}` : '') + (loadWithout.length > 0 ? `-without-${loadWithout.join('-')}` : '') +
  (loadShape.prefill !== undefined ? `-prefill-${loadShape.prefill}` : '') +
  (loadShape.rate !== undefined ? `-rate-${loadShape.rate}` : '');
const file = path.join(RESULTS, `bench-${scale.toExponential(0).replace('+', '')}${ctx.quick ? '-quick' : ''}${part}.json`);
fs.writeFileSync(file, JSON.stringify(out, null, 2));

console.log(`\n${table(ctx.figures)}\n`);
if (ctx.info.vectorSweep) console.log(`vector top-10, HNSW swept over ef (same vectors, recall@10 against brute force):\n${sweepTable(ctx.info.vectorSweep as Parameters<typeof sweepTable>[0])}\n`);
for (const c of ctx.checks) console.log(`${status(c)}  ${c.name} — ${c.detail}`);
console.log(
  `\nscale ${scale} spans (${info.real} real, ${info.generated} generated); wall ${out.wallSeconds} s; peak RSS ${fmtValue(out.peakRssMiB, 'MiB')}; load average at start ${(start.loadavg as number[]).join(' ')}, at end ${(end.loadavg as number[]).join(' ')} on ${start.cpus} cpus`,
);
console.log(`ratio = ours / peer in the figure's unit (✓: ours is at least as good). JSON: ${path.relative(packageRoot, file)}`);
if (scales.length === 1 && !values['no-growth'] && !ctx.quick && values.only === undefined) writeGrowth(RESULTS, path.join(packageRoot, 'bench', 'growth.svg'));
writeResults(RESULTS, RESULTS_MD);
console.log(`results: ${path.relative(packageRoot, RESULTS_MD)}`);
if (failed.length > 0) {
  console.error(`\n${failed.length} correctness check(s) FAILED`);
  process.exit(1);
}
process.exit(0);
