/**
 * Hybrid `store.search` at 10^6 spans, end to end as an agent calls it: the exact-phrase path,
 * BM25, the vector tier, fusion and the judging of the candidates, one public call per query
 * (the query embedded inside it by the store's built-in embedder).
 *
 *   npx tsc -p tsconfig.bench.json && node build/bench-dist/bench/hybrid-scale.js [spans] [corpora] [cacheDir] [--stages]
 *
 * Defaults: 10^6 spans, both corpora, stores cached in $TMPDIR/spanguard-hybrid-<spans>-<corpus>
 * (an ingest is minutes here; a cached store is reopened; a store whose ingest did not finish
 * is built again). bench/open-store.ts `--spans N` builds or reopens the same `repeat` store
 * through `repeatStore` for its stall rows. Corpora:
 *
 *  - `repeat`: the real turns of bench/data.ts (≈1.6·10^5 pieces of ~400 characters) repeated
 *    until N, each copy with a distinct suffix word (` copy<k>`): a realistic vocabulary, and
 *    every quote held verbatim by several spans;
 *  - `auto`: bench/data.ts as the main bench takes it: the real turns, then its generator,
 *    whose prose is made of ~70 common words (the quotes no rare word narrows).
 *
 * Query sets per corpus: the natural questions (../shared/data/natural-questions, 5–20 words),
 * that file's paraphrase questions again as a set of their own, and 400 quotes of 60–200 characters cut at word boundaries from the spans (seeded). Each set
 * is timed call by call after 20 warm-up calls, as wall time and as the process's CPU time
 * over the call (a shared machine's wall time includes waiting for a core); p50/p99 of both
 * go to bench/results/bench-<N>-hybrid.json,
 * which bench/results.ts renders into RESULTS.md with the machine and the date. A check counts
 * the quotes that come back with a span holding them verbatim, and those that said their
 * verbatim matches were looked for in the newest spans only (`exactPartial`: nothing indexable).
 *
 * Long queries, per corpus: 8 queries each of 4,096, 8,192 and 16,384 characters (the documented
 * maximum, src/search.ts MAX_QUERY_CHARS), the natural questions run together: the CPU time of
 * one call at each length, the longest event-loop stall over the calls, and the ratio of the
 * longest's CPU time to the shortest's (a cost linear in the length is at most 4×; a WARN above).
 *
 * `--stages`: after the timed calls, one more pass over each query set with the store's native
 * calls wrapped (embed, exact phrase (phrase and phraseWithin), BM25 (on this thread, or a pool
 * job until it settles), the frame checks' one-hit lexical lookups, the vector search's pool job
 * — its scan overlaps the query analysis and the lexical lookups, so this is the queueing and
 * the wait left over, or the time to take its hits on this thread (searchTake) —, the
 * candidate fetch from the log, the time lookups), and the JS stages replayed outside the call
 * on what the call read: query analysis, and support judging of the fetched candidates
 * (toSpan + supportOf). What is left of the call's wall time (fusion, sorting, the
 * miss decision, yields to the event loop) is `rest`. Printed per set (mean and p50 per stage)
 * and kept in the JSON's `info.stages`; the timed figures are taken without the wrappers. The
 * pass asks each query again: a cost paid on a query's first sight of its words (a pattern
 * compiled per term) is in the timed figures, not in the stages.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SpanStore, type TurnInput } from '../src/index.js';
import { addon, packageRoot } from '../src/native.js';
import { analyzeQuery, isQuestion } from '../src/query.js';
import { analyzedPart, MAX_QUERY_CHARS } from '../src/search.js';
import { toSpan } from '../src/store/spans.js';
import { supportOf } from '../src/support.js';
import type { NativeSpan } from '../src/native.js';
import { loadData, naturalQuestions, wordQuotes, type BenchSpan } from './data.js';
import { check, figure, fmtValue, machine, makeCtx, cleanup, pct, runRecord, status, table, withLoopDelay, type Ctx } from './lib.js';
import { writeResults } from './results.js';

const QUOTES = 400;

/** The spans of one corpus at `n` spans (see the header). */
function spansOf(corpus: 'repeat' | 'auto', n: number): { spans: BenchSpan[]; detail: string } {
  if (corpus === 'auto') {
    const d = loadData(n);
    return { spans: d.spans, detail: `${d.real} real + ${d.generated} generated spans (${d.sources.join(', ')})` };
  }
  const d = loadData(n);
  const base = d.spans.slice(0, d.real);
  if (base.length === 0) throw new Error('no real turns under ../shared/data: the repeat corpus needs them');
  const spans: BenchSpan[] = [];
  for (let i = 0; i < n; i++) {
    const copy = Math.floor(i / base.length);
    const s = base[i % base.length]!;
    spans.push({ turn: i + 1, role: s.role, text: copy === 0 ? s.text : `${s.text} copy${copy}` });
  }
  return { spans, detail: `${base.length} real pieces repeated to ${n}, each copy with a distinct suffix word (${d.sources.filter((x) => x !== 'generator').join(', ')})` };
}

/** Where the store of `n` spans of `corpus` is cached under `cacheRoot`. */
export function cachedStoreDir(cacheRoot: string, n: number, corpus: 'repeat' | 'auto'): string {
  return path.join(cacheRoot, `spanguard-hybrid-${n}-${corpus}`);
}

/** Opens the cached store of this corpus, or ingests it through the public API. */
async function storeOf(ctx: Pick<Ctx, 'log'>, corpus: 'repeat' | 'auto', spans: BenchSpan[], cacheRoot: string): Promise<SpanStore> {
  const dir = cachedStoreDir(cacheRoot, spans.length, corpus);
  const done = path.join(dir, 'ingested');
  if (fs.existsSync(done)) {
    const t0 = performance.now();
    const store = await SpanStore.open(dir, { durability: 'none' });
    ctx.log(`${corpus}: reopened the cached store in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return store;
  }
  fs.rmSync(dir, { recursive: true, force: true });
  const store = await SpanStore.open(dir, { durability: 'none' });
  const turns: TurnInput[] = spans.map((s) => ({ turn: s.turn, role: s.role, text: s.text, tokens: 100 }));
  const t0 = performance.now();
  for (let i = 0; i < turns.length; i += 5000) await store.appendMany(turns.slice(i, i + 5000));
  await store.checkpoint();
  fs.writeFileSync(done, '');
  ctx.log(`${corpus}: ingested ${spans.length} spans in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return store;
}

/** Lengths of the long-query sets: a quarter, a half and all of the documented maximum (src/search.ts MAX_QUERY_CHARS). */
export const LONG_SIZES = [MAX_QUERY_CHARS / 4, MAX_QUERY_CHARS / 2, MAX_QUERY_CHARS] as const;
const LONG_QUERIES = 8;

/**
 * `count` queries of at most `size` characters: the questions run together, each query from
 * its own starting question (no two alike while `count` ≤ the questions), cut at the last space that keeps it within
 * `size` and ended with a question mark (a question, as a host would paste one). A query is
 * never longer than `size`, and shorter only by the cut word.
 */
export function longQueries(questions: readonly string[], size: number, count: number): string[] {
  if (questions.length === 0) throw new Error('longQueries: no questions');
  const out: string[] = [];
  for (let q = 0; q < count; q++) {
    let text = '';
    for (let i = q; text.length < size; i++) text += `${questions[i % questions.length]!.trim()} `;
    const cut = text.lastIndexOf(' ', size - 1);
    out.push(`${text.slice(0, cut > 0 ? cut : size - 1).trimEnd()}?`);
  }
  return out;
}

const STAGE_NAMES = ['analysis', 'embed', 'phrase', 'bm25', 'vector', 'fetch', 'judging', 'frame', 'time', 'rest'] as const;
type Stage = (typeof STAGE_NAMES)[number];

/**
 * One untimed-figure pass over `qs` with the store's native calls wrapped (see the header):
 * per query, the wall time of each stage in µs. The wrappers are removed before it returns.
 */
async function stagesOf(store: SpanStore, qs: readonly string[]): Promise<Record<Stage, number>[]> {
  // The bench reaches into the store's internals here: the indexes and the embedder the
  // search context reads (a rebuild would replace them; none happens in this bench).
  const internals = store as unknown as { engine: { lexical: object; vector: object }; indexes: { embedder: object }; log: object; options: { matchPolicy: never } };
  let cur: Record<Stage, number> = Object.fromEntries(STAGE_NAMES.map((s) => [s, 0])) as Record<Stage, number>;
  let fetched: (NativeSpan | undefined)[] = [];
  let exactIds = new Set<number>();
  const restore: (() => void)[] = [];
  // When the last wrapped call on this thread returned: a pool job's result that arrives
  // later is waited for from then on (see `pool`).
  let lastReturn = 0;
  const taken = new WeakSet<Promise<unknown>>();
  const wrap = (obj: object, method: string, stage: (args: unknown[]) => Stage, seen?: (args: unknown[], out: unknown) => void, pool?: 'wait' | 'whole') => {
    const o = obj as Record<string, (...a: unknown[]) => unknown>;
    const orig = o[method]!;
    // An own property over the prototype's (a native class's methods are read-only there).
    Object.defineProperty(o, method, {
      configurable: true,
      value(...a: unknown[]) {
        const t0 = performance.now();
        const out = orig.apply(obj, a);
        lastReturn = performance.now();
        cur[stage(a)] += (lastReturn - t0) * 1000;
        seen?.(a, out);
        // A pool job (its promise): `whole` adds the time until it settles (a lookup awaited
        // as soon as it is queued), `wait` only what is left after the last call this thread
        // made in the meantime (a lookup that overlaps the thread's other work).
        if (pool !== undefined && out instanceof Promise) {
          const row = cur;
          const st = stage(a);
          const settled = () => {
            if (taken.has(out)) return; // its hits were had on this thread (searchTake): timed there
            const end = performance.now();
            row[st] += Math.max(0, end - (pool === 'whole' ? lastReturn : Math.max(lastReturn, t0))) * 1000;
            lastReturn = end;
          };
          out.then(settled, settled);
        }
        return out;
      },
    });
    restore.push(() => delete o[method]);
  };
  const { lexical, vector } = internals.engine;
  wrap(internals.indexes.embedder, 'embed', () => 'embed');
  let query = '';
  wrap(lexical, 'phrase', () => 'phrase', (a, out) => {
    if (a[1] === query.trim()) for (const id of Array.from(out as ArrayLike<number>)) exactIds.add(id);
  });
  // Search asks for the query's verbatim matches within a byte budget (phraseWithin).
  wrap(lexical, 'phraseWithin', () => 'phrase', (a, out) => {
    if (a[1] === query.trim()) for (const id of Array.from((out as { ids: ArrayLike<number> }).ids)) exactIds.add(id);
  });
  // Frame checks (rules 1b and 6 of src/support.ts) ask for one hit over a turn range.
  wrap(lexical, 'search', (a) => (a[1] === 1 ? 'frame' : 'bm25'));
  // BM25 runs on this thread when its postings are few (searchWithin), else on the pool
  // (searchAsync, awaited as soon as it is queued: the whole wait is its stage).
  wrap(lexical, 'searchWithin', () => 'bm25');
  wrap(lexical, 'searchAsync', () => 'bm25', undefined, 'whole');
  // The vector search is queued on the pool before the query's analysis and collected after
  // the lexical lookups: its stage is the queueing and the wait left over once this thread's
  // other calls are done (the scan itself when the pool had not run it meanwhile).
  wrap(vector, 'searchAsync', () => 'vector', undefined, 'wait');
  // Hits taken on this thread (finished by the pool, or run here: searchTake) end the wait there.
  wrap(vector, 'searchTake', () => 'vector', (a, out) => {
    if (out !== null) taken.add(a[0] as Promise<unknown>);
  });
  wrap(internals.log, 'getMany', () => 'fetch', (_a, out) => (fetched = out as (NativeSpan | undefined)[]));
  wrap(internals.log, 'get', () => 'time');
  wrap(internals.log, 'scanIds', () => 'time');
  const rows: Record<Stage, number>[] = [];
  try {
    for (const q of qs) {
      query = q;
      cur = Object.fromEntries(STAGE_NAMES.map((s) => [s, 0])) as Record<Stage, number>;
      fetched = [];
      exactIds = new Set();
      const t0 = performance.now();
      await store.search(q, { k: 10 });
      const total = (performance.now() - t0) * 1000;
      // Replayed outside the call on what it read: the same analysis, the same candidates.
      const t1 = performance.now();
      const part = analyzedPart(q);
      const a = analyzeQuery(part !== q && isQuestion(q) && !isQuestion(part) ? `${part}?` : part);
      const t2 = performance.now();
      for (const r of fetched) if (r) supportOf(a, toSpan(r), exactIds.has(r.id), internals.options.matchPolicy);
      const t3 = performance.now();
      cur.analysis = (t2 - t1) * 1000;
      cur.judging = (t3 - t2) * 1000;
      cur.rest = Math.max(0, total - STAGE_NAMES.reduce((s, k) => (k === 'rest' ? s : s + cur[k]), 0));
      rows.push(cur);
    }
  } finally {
    for (const r of restore) r();
  }
  return rows;
}

/**
 * The `repeat` store of `n` spans under `cacheRoot`, built (ingested and checkpointed) unless
 * a finished one is there, and closed: its directory, for a caller that opens it itself, and
 * the seconds the build took (null: it was cached).
 */
export async function repeatStore(n: number, cacheRoot: string, log: (msg: string) => void): Promise<{ dir: string; buildSeconds: number | null }> {
  const dir = cachedStoreDir(cacheRoot, n, 'repeat');
  // A cached store is not opened here, and its spans are not made: the caller's measurements
  // start without their garbage (~700 MiB of strings at 10^6).
  if (fs.existsSync(path.join(dir, 'ingested'))) {
    log(`repeat: the cached store ${dir}`);
    return { dir, buildSeconds: null };
  }
  const t0 = performance.now();
  const { spans } = spansOf('repeat', n);
  const store = await storeOf({ log }, 'repeat', spans, cacheRoot);
  await store.close();
  return { dir, buildSeconds: (performance.now() - t0) / 1000 };
}

async function main(): Promise<void> {
  const flags = new Set(process.argv.slice(2).filter((a) => a.startsWith('--')));
  const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const n = Number(args[0] ?? 1e6);
  const corpora = (args[1] ?? 'repeat,auto').split(',').filter(Boolean) as ('repeat' | 'auto')[];
  const cacheRoot = args[2] ?? os.tmpdir();
  const STAGES = flags.has('--stages');
  const ctx = makeCtx(n, false);
  const start = machine();
  const t0 = performance.now();
  const natural = naturalQuestions();
  const questions = natural.map((q) => q.question);
  // The file's paraphrase questions (a fact from one turn in other words) also form a set of
  // their own (they are in the natural set too).
  const paraphrases = natural.filter((q) => q.category === 'paraphrase').map((q) => q.question);
  ctx.info.corpora = {};
  try {
    for (const corpus of corpora) {
      const { spans, detail } = spansOf(corpus, n);
      const corpusLabel = corpus === 'repeat' ? 'real turns repeated with distinct suffixes' : 'real turns then the generator';
      (ctx.info.corpora as Record<string, string>)[corpus] = detail;
      ctx.log(`${corpus}: ${detail}`);
      const store = await storeOf(ctx, corpus, spans, cacheRoot);
      const quotes = wordQuotes(spans.map((x) => x.text), QUOTES);
      for (const [key, what, qs] of [
        ['natural', 'natural questions (5–20 words)', questions],
        ['paraphrase', 'paraphrase questions (the natural-questions file, 5–20 words)', paraphrases],
        ['quotes', 'quotes of 60–200 characters', quotes],
      ] as const) {
        if (qs.length === 0) continue;
        // Wall time as the caller sees it, and the process's CPU time over the same call: on a
        // shared machine the wall time includes waiting for a core, the CPU time does not.
        for (const q of qs.slice(0, 20)) await store.search(q, { k: 10 });
        const walls: number[] = [];
        const cpus: number[] = [];
        for (let i = 0; i < Math.max(QUOTES, qs.length); i++) {
          const c0 = process.cpuUsage();
          const t0 = performance.now();
          await store.search(qs[i % qs.length]!, { k: 10 });
          walls.push((performance.now() - t0) * 1000);
          const c = process.cpuUsage(c0);
          cpus.push(c.user + c.system);
        }
        const lat = { p50: pct(walls, 0.5), p99: pct(walls, 0.99), n: walls.length };
        const cpu = { p50: pct(cpus, 0.5), p99: pct(cpus, 0.99) };
        figure(ctx, {
          group: 'retrieval',
          key: `hybrid.${corpus}.${key}.cpu`,
          label: `hybrid store.search k=10 at ${n.toExponential(0)}, ${corpusLabel}: ${what}, CPU time per call`,
          value: cpu.p50,
          p99: cpu.p99,
          unit: 'µs',
          better: 'lower',
          note: 'user + system time over the call (all threads): what the call costs without waiting for a core',
        });
        figure(ctx, {
          group: 'retrieval',
          key: `hybrid.${corpus}.${key}`,
          label: `hybrid store.search k=10 at ${n.toExponential(0)}, ${corpusLabel}: ${what} (${qs.length})`,
          value: lat.p50,
          p99: lat.p99,
          unit: 'µs',
          better: 'lower',
          note: `${lat.n} calls after 20 warm-up calls, wall time; load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cpus at the end; target at 10^6: p50 ≤ 5 ms, p99 ≤ 50 ms`,
        });
        ctx.log(`${corpus} ${key}: wall p50 ${fmtValue(lat.p50, 'µs')} p99 ${fmtValue(lat.p99, 'µs')}; CPU p50 ${fmtValue(cpu.p50, 'µs')} p99 ${fmtValue(cpu.p99, 'µs')}`);
        if (STAGES) {
          const rows = await stagesOf(store, qs.slice(0, Math.max(QUOTES, qs.length)));
          const total = rows.map((r) => STAGE_NAMES.reduce((s, k) => s + r[k], 0));
          const out: Record<string, { mean: number; p50: number; p99: number }> = {};
          for (const st of STAGE_NAMES) {
            const xs = rows.map((r) => r[st]);
            out[st] = { mean: xs.reduce((s, x) => s + x, 0) / xs.length, p50: pct(xs, 0.5), p99: pct(xs, 0.99) };
          }
          out.total = { mean: total.reduce((s, x) => s + x, 0) / total.length, p50: pct(total, 0.5), p99: pct(total, 0.99) };
          ((ctx.info.stages ??= {}) as Record<string, unknown>)[`${corpus}.${key}`] = out;
          ctx.log(
            `${corpus} ${key} stages (µs, mean / p50 / p99 over ${rows.length} calls): ` +
              [...STAGE_NAMES, 'total'].map((st) => `${st} ${out[st]!.mean.toFixed(0)}/${out[st]!.p50.toFixed(0)}/${out[st]!.p99.toFixed(0)}`).join(', '),
          );
        }
      }
      // Long queries up to the documented maximum: the CPU time of one call at each length (its
      // cost should grow no faster than the length) and the longest event-loop stall meanwhile.
      const cpuAt: number[] = [];
      for (const size of LONG_SIZES) {
        const qs = longQueries(questions.length > 0 ? questions : quotes, size, LONG_QUERIES);
        await store.search(qs[0]!, { k: 10 });
        const walls: number[] = [];
        const cpus: number[] = [];
        const [, delay] = await withLoopDelay(async () => {
          for (const q of qs) {
            const c0 = process.cpuUsage();
            const t0 = performance.now();
            await store.search(q, { k: 10 });
            walls.push((performance.now() - t0) * 1000);
            const c = process.cpuUsage(c0);
            cpus.push(c.user + c.system);
          }
        });
        cpuAt.push(pct(cpus, 0.5));
        figure(ctx, {
          group: 'retrieval',
          key: `hybrid.${corpus}.long.${size}`,
          label: `hybrid store.search k=10 at ${n.toExponential(0)}, ${corpusLabel}: queries of ${size} characters (natural questions run together; the documented maximum is ${MAX_QUERY_CHARS}), CPU time per call`,
          value: pct(cpus, 0.5),
          p99: Math.max(...cpus),
          unit: 'µs',
          better: 'lower',
          note: `${qs.length} calls after one warm-up, p50 and max; wall p50 ${fmtValue(pct(walls, 0.5), 'µs')}, max ${fmtValue(Math.max(...walls), 'µs')}; longest event-loop stall over the calls ${delay.maxMs.toFixed(1)} ms`,
        });
        ctx.log(`${corpus} long ${size}: CPU p50 ${fmtValue(pct(cpus, 0.5), 'µs')}, wall p50 ${fmtValue(pct(walls, 0.5), 'µs')}; loop stall max ${delay.maxMs.toFixed(1)} ms`);
      }
      const growth = cpuAt[cpuAt.length - 1]! / cpuAt[0]!;
      const lengths = MAX_QUERY_CHARS / LONG_SIZES[0];
      figure(ctx, {
        group: 'retrieval',
        key: `hybrid.${corpus}.long.growth`,
        label: `hybrid store.search at ${n.toExponential(0)}, ${corpusLabel}: CPU time of a ${MAX_QUERY_CHARS}-character query over a ${LONG_SIZES[0]}-character one`,
        value: growth,
        unit: '×',
        better: 'lower',
        note: `the query ${lengths}× longer; a cost linear in the length is at most ${lengths}× (part of a call does not grow with the query)`,
      });
      check(ctx, `${corpus}: a query's cost grows no faster than its length, up to the maximum size`, growth <= lengths, `${growth.toFixed(2)}× the CPU time for ${lengths}× the characters (p50 over ${LONG_QUERIES} queries each)`, true);
      let found = 0;
      let partial = 0;
      const nq = 200;
      for (const q of quotes.slice(0, nq)) {
        const res = await store.search(q, { k: 10 });
        if (!res.miss && res.hits.some((h) => h.kind === 'raw' && h.text.includes(q))) found++;
        if (res.exactPartial) partial++;
      }
      check(
        ctx,
        `${corpus}: hybrid search returns a verbatim span for near-exact quotes (≥ 0.99)`,
        found / nq >= 0.99,
        `${found}/${nq} quotes of 60–200 characters came back verbatim; ${partial} held nothing indexable and said their verbatim matches were looked for in the newest spans only (exactPartial)`,
      );
      await store.close();
    }
  } finally {
    cleanup(ctx);
  }
  const out = runRecord(ctx, {
    command: `node build/bench-dist/bench/hybrid-scale.js ${process.argv.slice(2).join(' ')}`.trim(),
    scale: n,
    sections: ['hybrid'],
    start,
    simd: addon().simdIsa(),
    t0,
  });
  const end = out.machineEnd;
  const results = path.join(packageRoot, 'bench', 'results');
  fs.mkdirSync(results, { recursive: true });
  fs.writeFileSync(path.join(results, `bench-${n.toExponential(0).replace('+', '')}-hybrid.json`), JSON.stringify(out, null, 2));
  writeResults(results, path.join(packageRoot, 'bench', 'RESULTS.md'));
  console.log(`\n${table(ctx.figures)}\n`);
  for (const c of ctx.checks) console.log(`${status(c)}  ${c.name} — ${c.detail}`);
  console.log(`wall ${out.wallSeconds} s; peak RSS ${fmtValue(out.peakRssMiB, 'MiB')}; load average ${(start.loadavg as number[]).join(' ')} → ${(end.loadavg as number[]).join(' ')}`);
}

// Run as a script, not when bench/open-store.ts imports `repeatStore`.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
