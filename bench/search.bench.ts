/**
 * Retrieval, side by side with the peers in the same process on the same spans:
 *
 *  - ingest through the public API (log + anchor detection + embed + BM25 postings + binary
 *    signatures: no graph) vs two peer stacks that say what they build: SQLite FTS5 insert +
 *    the same embedder + the vectors written flat (what an exact scan reads: no graph either),
 *    and FTS5 + embedder + usearch's HNSW graph (2 threads, as our parallel add); LanceDB
 *    (table + FTS index over the same texts and vectors) where it is a peer;
 *  - embed (built-in embedder), no peer: it is the default a host replaces with its model;
 *  - vector top-10: our VectorIndex and usearch's own JS binding hold the *same* vectors
 *    (f16). Ours in its shipped strategy (binary signatures + exact rerank, swept over the
 *    rerank pool) and as HNSW (connectivity 16, expansion_add 128, like usearch, swept over
 *    ef); compared at matched recall@10 against a brute-force f32 scan (the ground truth);
 *    the floor every vector figure is held against is usearch's exact SIMD scan
 *    (`exactSearch`, f32, threads 1), not a JS loop; builds at equal threads (2 each);
 *  - BM25 top-10 vs FTS5 `ORDER BY bm25()`; phrase vs FTS5 phrase + instr() and a
 *    brute-force `includes()` scan (the floor and the ground truth);
 *  - hybrid `store.search` on four query sets — 60–200-character quotes of the spans, natural
 *    questions and paraphrases (the natural-questions file, 5–20 words), and questions
 *    generated from the spans' content words in question templates (5–20 words, words
 *    reordered and surrounded by words the span does not hold) — each next to LanceDB's
 *    hybrid search (FTS + vector, RRF, same k, the query embedded by the same embedder inside
 *    the timed call) up to 2·10^5 spans; honest misses on never-stated values.
 *
 * usearch is given `threads: 1` for single queries (its default spawns threads per call) and
 * fresh arrays for `exactSearch` (it ignores a subarray's offset).
 */
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { ContextWindow, SpanStore, type TurnInput } from '../src/index.js';
import { addon, packageRoot, type NativeVectorIndex } from '../src/native.js';
import { perturb, detectAnchor } from '../src/anchors.js';
import { generatedQuestions, naturalQuestions, type BenchData, type BenchSpan } from './data.js';
import { check, dirBytes, figure, latency, latencyAsync, peakRss, rng, wall, withRssPeak, type Ctx, type Latency, type Resident } from './lib.js';

const require = createRequire(import.meta.url);
const DIMS = 256;
const RAW = 1;
/** Threads our vector index adds a large batch on (native/vector_index.cpp): the peers' builds get as many. */
const BUILD_THREADS = 2;
const EF_SWEEP = [16, 32, 64, 128, 256, 512];
/** Above 10^4 the graphs need more than ef 512 to approach the binary strategy's recall. */
const EF_SWEEP_LARGE = [...EF_SWEEP, 1024, 2048, 4096];
/** Rerank pool sizes swept for the binary strategy. */
const POOL_SWEEP = [256, 512, 1024, 2048, 4096, 8192, 16384];

type VecOpts = {
  dims: number;
  scalar: 'f16';
  exactBelow?: number;
  ann?: 'binary' | 'hnsw';
  rerankMin?: number;
  rerankShare?: number;
  expansionSearch?: number;
  connectivity?: number;
  expansionAdd?: number;
};
const newVec = (dir: string, o: VecOpts): NativeVectorIndex => new (addon().VectorIndex)(dir, o);
const vsearch = (ix: NativeVectorIndex, q: Float32Array, strategy?: 'exact' | 'binary' | 'hnsw'): Float64Array => ix.search(q, 10, RAW, strategy).ids;

interface UsearchModule {
  Index: new (cfg: Record<string, unknown>) => {
    add(keys: BigUint64Array, vectors: Float32Array, threads?: number): void;
    search(v: Float32Array, k: number, threads: number): { keys: BigUint64Array; distances: Float32Array };
    save(p: string): void;
    load(p: string): void;
    size(): number;
  };
  exactSearch(dataset: Float32Array, queries: Float32Array, dims: number, k: number, metric: unknown, threads: number): { keys: BigUint64Array; distances: Float32Array };
  MetricKind: { Cos: unknown };
}

interface Db {
  exec(s: string): void;
  prepare(s: string): { run(...a: unknown[]): void; all(...a: unknown[]): { rowid: number }[] };
  transaction<T extends (...a: never[]) => void>(fn: T): T;
  close(): void;
}

export interface SearchOut {
  storeDir: string;
  storeBytes: number;
  usearchFile?: string;
  ftsFile?: string;
}

/** The spans in batches of 5,000, the size every ingest here appends. */
export function* batchesOf(data: BenchData): Generator<BenchSpan[]> {
  for (let i = 0; i < data.spans.length; i += 5000) yield data.spans.slice(i, i + 5000);
}

/**
 * Every span through `store.appendMany` (log + anchor detection + embed + both indexes), in
 * batches of 5,000 turns made as they are appended (the bench's own data is then what the
 * caller holds: all of it for the retrieval section, one batch for a streamed ingest).
 */
export async function ingestStore(ctx: Ctx, batches: Iterable<BenchSpan[]>): Promise<{ store: SpanStore; storeDir: string; ingestMs: number; spans: number; rss0: number; rssIngest: number; rssDuring: { peak: number; before: number; atPeak: Resident } }> {
  const storeDir = ctx.tmp('store');
  // What the process held before is measured after a full collection (run under --expose-gc).
  (globalThis as { gc?: () => void }).gc?.();
  const rss0 = peakRss();
  const store = await SpanStore.open(storeDir, { durability: 'none' });
  let spans = 0;
  // The resident set sampled while the ingest runs: the store's own growth over what the
  // process held before it.
  const [[, ingestMs], rssDuring] = await withRssPeak(() =>
    wall(async () => {
      for (const batch of batches) {
        await store.appendMany(batch.map((s) => ({ turn: s.turn, role: s.role, text: s.text, tokens: 100 }) satisfies TurnInput));
        spans += batch.length;
      }
      await store.checkpoint();
    }),
  );
  const rssIngest = peakRss();
  ctx.info.rss = { beforeIngest: rss0, afterIngest: rssIngest, duringIngest: rssDuring };
  return { store, storeDir, ingestMs, spans, rss0, rssIngest, rssDuring };
}

function rssFigures(ctx: Ctx, rss: { peak: number; before: number; atPeak: Resident }, streamed: boolean): void {
  const r = rss.atPeak;
  const f = r.files;
  const native = r.anonMiB - (r.heapResidentMiB ?? r.heapMiB) - r.externalMiB;
  figure(ctx, {
    group: 'memory',
    key: 'rss.ingest',
    label: 'peak RSS while ingesting (sampled every 100 ms)',
    value: rss.peak / 2 ** 20,
    unit: 'MiB',
    better: 'lower',
    note:
      `${((rss.peak - rss.before) / 2 ** 20).toFixed(0)} MiB above the ${(rss.before / 2 ** 20).toFixed(0)} MiB the process held before (${streamed ? 'the bench streams its data: one batch of 5,000 spans held at a time' : 'the bench data, all of it held'}); ` +
      `at the peak ${r.anonMiB.toFixed(0)} MiB anonymous (JS heap ${r.heapMiB.toFixed(0)} used of ${(r.heapResidentMiB ?? NaN).toFixed(0)} committed, external ${r.externalMiB.toFixed(0)}, native ${native.toFixed(0)}) ` +
      `and ${r.fileMiB.toFixed(0)} MiB of mapped files${f ? ` (log segments ${f.logMiB.toFixed(0)}, vectors file ${f.vectorsMiB.toFixed(0)}, index files ${f.indexMiB.toFixed(0)}, node and libraries ${f.otherMiB.toFixed(0)})` : ''}; target ≤ 1.5 GiB at 10^6`,
  });
}

/**
 * The indexes' memory from stats(), by structure, per span (ctx.info.indexMemory): the lexical
 * index's document columns, dictionary and postings; the vector index's rows (0 when read in
 * place from vectors.bin's mapping), signatures and row tables.
 */
function indexMemory(ctx: Ctx, st: ReturnType<SpanStore['stats']>, n: number): { total: number; note: string } {
  const lex = st.lexical as Record<string, unknown>;
  const vec = st.vector as Record<string, unknown>;
  const num = (x: unknown) => Number(x ?? NaN);
  const parts = {
    lexicalDocuments: num(lex.memoryDocumentsBytes),
    lexicalDictionary: num(lex.memoryDictionaryBytes),
    lexicalPostings: num(lex.memoryPostingsBytes),
    vectorRowsOnHeap: num(vec.rowsHeapBytes),
    vectorOther: num(vec.memoryBytes) - num(vec.rowsHeapBytes),
  };
  const total = num(lex.memoryBytes) + num(vec.memoryBytes);
  ctx.info.indexMemory = {
    bytes: parts,
    perSpan: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, +(v / n).toFixed(1)])),
    terms: num(lex.rawTerms) + num(lex.summaryTerms),
    inlineStreams: num(lex.inlineStreams),
    rowsMapped: vec.rowsMapped,
    vectors: num(vec.vectorsRecords),
  };
  const b = (x: number) => (x / n).toFixed(0);
  return {
    total,
    note: `lexical: documents ${b(parts.lexicalDocuments)}, dictionary ${b(parts.lexicalDictionary)} (${(ctx.info.indexMemory as { terms: number }).terms} terms), postings ${b(parts.lexicalPostings)}; vector: rows ${vec.rowsMapped ? 'read in place from vectors.bin (mapped)' : b(parts.vectorRowsOnHeap)}, signatures and tables ${b(parts.vectorOther)} B a span`,
  };
}

/**
 * `--only ingest`: the ingest, memory and disk figures alone (the 10^6 scale in minutes).
 * `streamed`: the batches are made as they are read (bench/data.ts streamData), so the peak
 * RSS is the store's and not the bench's copy of the data.
 */
export async function runIngestOnly(ctx: Ctx, batches: Iterable<BenchSpan[]>, streamed: boolean): Promise<SearchOut> {
  const { store, storeDir, ingestMs, spans: N, rss0, rssIngest, rssDuring } = await ingestStore(ctx, batches);
  rssFigures(ctx, rssDuring, streamed);
  figure(ctx, { group: 'retrieval', key: 'ingest.perSpan', label: 'ingest via appendMany (log + embed + both indexes), per span', value: (ingestMs * 1000) / N, unit: 'µs', better: 'lower', growth: true, note: `${Math.round((N / ingestMs) * 1000)} spans/s; ${(ingestMs / 1000).toFixed(1)} s in all` });
  const st = store.stats();
  const indexMem = indexMemory(ctx, st, N);
  await store.close();
  const storeBytes = dirBytes(storeDir);
  figure(ctx, { group: 'memory', key: 'disk.perSpan', label: 'store bytes on disk per span (log + indexes + vectors)', value: storeBytes / N, unit: 'B', better: 'lower', growth: true });
  figure(ctx, { group: 'memory', key: 'index.mem.perSpan', label: 'index memory per span (lexical + vector, from stats())', value: indexMem.total / N, unit: 'B', better: 'lower', note: indexMem.note });
  figure(ctx, { group: 'memory', key: 'rss.peak', label: 'peak RSS after ingest (process, incl. bench data)', value: rssIngest / 2 ** 20, unit: 'MiB', better: 'lower', note: `before ingest ${(rss0 / 2 ** 20).toFixed(0)} MiB` });
  return { storeDir, storeBytes };
}

export async function runSearch(ctx: Ctx, data: BenchData): Promise<SearchOut> {
  const N = data.spans.length;
  const texts = data.spans.map((s) => s.text);
  const r = rng(42);
  const Q = ctx.queries;
  // Peers above 10^5 would dominate the run (usearch's single-threaded build is ~830
  // vectors/s at 10^6 here: 20 minutes); they run up to 2·10^5 unless --peers-all.
  const peers = N <= 200_000 || process.argv.includes('--peers-all');
  // --peer-fts5: SQLite FTS5 alone above 2·10^5 (minutes, not usearch's 20-minute build), so
  // the BM25 and phrase ratios at 10^6 come from the same run.
  const ftsPeer = peers || process.argv.includes('--peer-fts5');
  const efSweep = N > 10_000 ? EF_SWEEP_LARGE : EF_SWEEP;

  // ---- queries, all deterministic ---------------------------------------------------------
  const words = (s: string) => s.split(/\s+/).filter(Boolean);
  const quotes: { q: string; src: number }[] = []; // near-exact: 60–200 chars of a span
  const threeWord: string[] = [];
  const longQ: string[] = [];
  const phrases: string[] = [];
  // 400 quotes in every mode: the recall check must not depend on --quick (latencies use Q).
  const QQ = Math.max(Q, 400);
  for (let guard = 0; quotes.length < QQ && guard < QQ * 50; guard++) {
    const src = Math.floor(r() * N);
    const t = texts[src]!;
    if (t.length < 80) continue;
    const len = Math.min(t.length - 1, 60 + Math.floor(r() * 140));
    const at = Math.floor(r() * (t.length - len));
    quotes.push({ q: t.slice(at, at + len), src });
  }
  for (let guard = 0; threeWord.length < Q && guard < Q * 50; guard++) {
    const w = words(texts[Math.floor(r() * N)]!).filter((x) => /[\p{L}\p{N}]/u.test(x));
    if (w.length < 14) continue;
    const i = Math.floor(r() * (w.length - 13));
    threeWord.push(w.slice(i, i + 3).join(' '));
    longQ.push(w.slice(i, i + 12).join(' '));
    // Whole whitespace-separated words, 2–6 of them: a phrase a user would quote.
    phrases.push(w.slice(i + 1, i + 3 + Math.floor(r() * 5)).join(' '));
  }

  // Natural questions and paraphrases (the shared natural-questions file, 5–20 words) and
  // questions generated from the spans: a span's content words, reordered, in a question
  // template (words the span does not hold around them).
  const nq = naturalQuestions();
  const natural = nq.map((x) => x.question);
  const paraphrases = nq.filter((x) => x.category === 'paraphrase').map((x) => x.question);
  const generated = generatedQuestions(texts, Q, rng(1234));

  // ---- ingest through the public API ------------------------------------------------------
  const { store, storeDir, ingestMs, rss0, rssIngest, rssDuring } = await ingestStore(ctx, batchesOf(data));
  rssFigures(ctx, rssDuring, false);
  const ingestRate = (N / ingestMs) * 1000;

  // ---- get through the public API (validation + Span object), next to the raw figure ----
  {
    const first = store.log.firstId();
    const rid = Array.from({ length: 4096 }, () => first + Math.floor(r() * N));
    let i = 0;
    const g = await latency(ctx.quick ? 5000 : 50000, () => store.get(rid[i++ & 4095]!), 1000);
    figure(ctx, { group: 'log', key: 'store.get', label: 'store.get(id) (public API)', value: g.p50, p99: g.p99, unit: 'µs', better: 'lower' });
  }

  // ---- embed -------------------------------------------------------------------------------
  const embedder = new (addon().Embedder)(DIMS);
  const matrix = new Float32Array(N * DIMS);
  const [, embedMs] = await wall(() => {
    for (let i = 0; i < N; i += 1000) matrix.set(embedder.embed(texts.slice(i, i + 1000)), i * DIMS);
  });
  figure(ctx, { group: 'retrieval', key: 'embed.perSpan', label: 'embed (built-in, batches of 1000), per span', value: (embedMs * 1000) / N, unit: 'µs', better: 'lower', growth: true, note: `${Math.round((N / embedMs) * 1000)} spans/s` });
  const qv = (q: string) => embedder.embed([q]);
  const queryVecs = quotes.map((x) => qv(x.q));

  // ---- brute force: ground truth and the floor ---------------------------------------------
  const brute = (q: Float32Array, k = 10): { ids: number[]; kth: number } => {
    const best: { i: number; s: number }[] = [];
    let min = -Infinity;
    for (let i = 0; i < N; i++) {
      let s = 0;
      const o = i * DIMS;
      for (let d = 0; d < DIMS; d++) s += q[d]! * matrix[o + d]!;
      if (best.length < k || s > min) {
        best.push({ i, s });
        best.sort((a, b) => b.s - a.s);
        if (best.length > k) best.pop();
        min = best[best.length - 1]!.s;
      }
    }
    return { ids: best.map((b) => b.i), kth: min };
  };
  // JS brute force costs N·256 per query: fewer ground-truth queries at the large scales.
  const truthQ = N >= 1e6 ? 100 : N >= 1e5 ? 200 : quotes.length;
  ctx.log(`brute-force ground truth for ${truthQ} queries over ${N} vectors`);
  const truth = queryVecs.slice(0, truthQ).map((v) => brute(v));
  const dot = (q: Float32Array, i: number) => {
    let s = 0;
    for (let d = 0; d < DIMS; d++) s += q[d]! * matrix[i * DIMS + d]!;
    return s;
  };
  /** recall@10: a returned index counts when its true similarity reaches the 10th best's (ties count). */
  const recall = (idx0: (qi: number) => number[]): number => {
    let hit = 0;
    for (let qi = 0; qi < truthQ; qi++) {
      const got = idx0(qi);
      const kth = truth[qi]!.kth - 1e-5;
      hit += Math.min(10, got.filter((i) => dot(queryVecs[qi]!, i) >= kth).length);
    }
    return hit / (truthQ * 10);
  };

  // ---- our vector index: same vectors -------------------------------------------------------
  // The store's own vector options, read back from its stats: the strategy it ships (exact
  // below exactBelow, then `ann`: the binary-signature scan + exact rerank by default) and
  // the HNSW graph options, given to usearch too so the two graphs are comparable.
  const sv = store.stats().vector;
  const graph = { connectivity: Number(sv.connectivity ?? 16), expansionAdd: Number(sv.expansionAdd ?? 128) };
  const eb = Number(sv.exactBelow);
  const shippedAnn = String(sv.ann ?? 'hnsw') as 'binary' | 'hnsw';
  const shippedOpts = {
    ...(Number.isFinite(eb) ? { exactBelow: Math.min(eb, Number.MAX_SAFE_INTEGER) } : {}),
    ann: shippedAnn,
    rerankMin: Number(sv.rerankMin ?? 1024),
    rerankShare: Number(sv.rerankShare ?? 0),
    expansionSearch: Number(sv.expansionSearch ?? 64),
  };
  ctx.info.storeVectorOptions = { ...graph, ...shippedOpts, scalar: sv.scalar };
  const ids = Float64Array.from({ length: N }, (_, i) => i + 1); // key = index + 1 (0 is not a span id)
  const addAll = (ix: NativeVectorIndex) => {
    for (let i = 0; i < N; i += 5000) ix.add(ids.subarray(i, i + 5000), new Uint8Array(Math.min(5000, N - i)).fill(RAW), matrix.subarray(i * DIMS, Math.min(N, i + 5000) * DIMS));
  };
  type Point = { ef: number; recall: number; lat: Latency };
  const sweep = async (search: (q: Float32Array) => number[]): Promise<Omit<Point, 'ef'>> => {
    const rec = recall((qi) => search(queryVecs[qi]!));
    let i = 0;
    const lat = await latency(Q, () => search(queryVecs[i++ % Q]!));
    return { recall: rec, lat };
  };
  // Binary strategy (exactBelow 0: the signatures always choose), swept over the rerank pool;
  // `ef` holds the pool size for these points.
  const bdir = ctx.tmp('vec-binary');
  const bin = { dims: DIMS, scalar: 'f16' as const, exactBelow: 0, ann: 'binary' as const };
  let ours = newVec(bdir, { ...bin });
  const [, oursBuildMs] = await wall(() => addAll(ours));
  ours.save();
  ours.close(); // the vectors file has one writer: every reopening below closes the last
  const binPts: Point[] = [];
  for (const pool of ctx.quick ? [256, 1024, 4096] : POOL_SWEEP) {
    if (pool >= N) continue;
    const ix = newVec(bdir, { ...bin, rerankMin: pool, rerankShare: 0 });
    binPts.push({ ef: pool, ...(await sweep((q) => Array.from(vsearch(ix, q, 'binary'), (id) => id - 1))) });
    ix.close();
  }
  ours = newVec(bdir, { ...bin });
  const oursExact = await sweep((q) => Array.from(vsearch(ours, q, 'exact'), (id) => id - 1));
  ours.close();
  // Our HNSW (ann 'hnsw'), same graph options as usearch, swept over the search expansion:
  // kept for comparison up to 2·10^5 (its build is the ~300 µs/vector that made the 10^6
  // ingest take 6 minutes) unless --peers-all.
  const oursPts: Point[] = [];
  let hnswBuildMs = NaN;
  if (peers) {
    const hdir = ctx.tmp('vec-hnsw');
    const hnsw = { dims: DIMS, scalar: 'f16' as const, exactBelow: 0, ann: 'hnsw' as const, ...graph };
    const h = newVec(hdir, hnsw);
    [, hnswBuildMs] = await wall(() => addAll(h));
    h.save();
    h.close();
    for (const ef of ctx.quick ? [16, 64, 256] : efSweep) {
      // Reopened from its snapshot with a different search expansion (a constructor option).
      const ix = newVec(hdir, { ...hnsw, expansionSearch: ef });
      oursPts.push({ ef, ...(await sweep((q) => Array.from(vsearch(ix, q, 'hnsw'), (id) => id - 1))) });
      ix.close();
    }
  }
  // The configuration the store ships, from its stats(): an exact scan below the crossover,
  // its `ann` above. Reopened on the binary build when it ships binary (same vectors file).
  const shippedDir = shippedAnn === 'binary' ? bdir : ctx.tmp('vec-shipped');
  const shipped = newVec(shippedDir, { dims: DIMS, scalar: 'f16', ...graph, ...shippedOpts });
  if (shippedAnn !== 'binary') addAll(shipped);
  const shippedStats = shipped.stats();
  const pool = Math.max(Number(shippedStats.rerankMin), Math.ceil(N * Number(shippedStats.rerankShare)));
  const shippedHow =
    shippedStats.strategyRaw === 'binary'
      ? `binary, exactBelow ${String(shippedStats.exactBelow)}, rerank ${pool}`
      : `${String(shippedStats.strategyRaw)}, exactBelow ${String(shippedStats.exactBelow)}${shippedStats.strategyRaw === 'hnsw' ? `, ef ${String(shippedStats.expansionSearch)}` : ''}`;
  const shippedPt = await sweep((q) => Array.from(vsearch(shipped, q), (id) => id - 1));
  const need = N <= 1e4 ? 0.99 : 0.95;
  check(ctx, `vector recall@10 vs brute force, shipped config (≥ ${need})`, shippedPt.recall >= need, `recall@10 = ${shippedPt.recall.toFixed(4)} over ${truthQ} queries (${shippedHow})`);
  // Questions are not quotes: their vectors sit away from every span's, where signatures
  // separate neighbours less well. The same recall against brute force, on natural and
  // generated questions (fewer at the large scales: the JS ground truth is N·256 a query).
  {
    const qn = N >= 1e6 ? 50 : N >= 1e5 ? 100 : 200;
    const qs = [...natural.slice(0, qn / 2), ...generated.slice(0, qn / 2)];
    const vecs = qs.map(qv);
    const qTruth = vecs.map((v) => brute(v));
    let hit = 0;
    for (let i = 0; i < vecs.length; i++) {
      const kth = qTruth[i]!.kth - 1e-5;
      hit += Math.min(10, Array.from(vsearch(shipped, vecs[i]!), (id) => id - 1).filter((j) => dot(vecs[i]!, j) >= kth).length);
    }
    const rec = hit / (vecs.length * 10);
    let i = 0;
    const lat = await latency(vecs.length, () => vsearch(shipped, vecs[i++ % vecs.length]!));
    figure(ctx, { group: 'retrieval', key: 'vector.shipped.questions', label: `vector top-10, store's config, natural + generated questions (${vecs.length}; r=${rec.toFixed(3)})`, value: lat.p50, p99: lat.p99, unit: 'µs', better: 'lower' });
    check(ctx, `vector recall@10 vs brute force on questions, shipped config (≥ ${need})`, rec >= need, `recall@10 = ${rec.toFixed(4)} over ${vecs.length} natural and generated questions (${shippedHow})`, true);
  }
  shipped.close();

  // ---- usearch's JS binding, same vectors ------------------------------------------------
  const us: Point[] = [];
  let usExact: Omit<Point, 'ef'> | undefined;
  let usBuildMs = NaN;
  let usearchFile: string | undefined;
  if (peers) {
    const { Index } = require('usearch') as UsearchModule;
    const cfg = { metric: 'cos', dimensions: DIMS, quantization: 'f16', connectivity: graph.connectivity, expansion_add: graph.expansionAdd };
    const build = new Index({ ...cfg, expansion_search: 64 });
    const keys = BigUint64Array.from({ length: N }, (_, i) => BigInt(i + 1));
    // Built on 2 threads: our vector add (binary signatures and HNSW alike) runs on 2.
    ctx.log(`usearch build of ${N} vectors (threads: ${BUILD_THREADS})`);
    [, usBuildMs] = await wall(() => {
      for (let i = 0; i < N; i += 5000) build.add(keys.subarray(i, i + 5000).slice(), matrix.slice(i * DIMS, Math.min(N, i + 5000) * DIMS), BUILD_THREADS);
    });
    usearchFile = path.join(ctx.tmp('usearch'), 'index.usearch');
    build.save(usearchFile);
    for (const ef of ctx.quick ? [16, 64, 256] : efSweep) {
      const ix = new Index({ ...cfg, expansion_search: ef });
      ix.load(usearchFile);
      us.push({ ef, ...(await sweep((q) => Array.from(ix.search(q, 10, 1).keys, (k) => Number(k) - 1))) });
    }
  }
  {
    // The floor, at every scale: usearch's exact SIMD scan (no build needed). exactSearch
    // reads the dataset and query from offset 0 of their buffers: fresh copies.
    const { exactSearch, MetricKind } = require('usearch') as UsearchModule;
    const dataset = matrix.slice();
    const rec = recall((qi) => Array.from(exactSearch(dataset, queryVecs[qi]!.slice(), DIMS, 10, MetricKind.Cos, 1).keys, (k) => Number(k)));
    let i = 0;
    const lat = await latency(N >= 1e6 ? Math.min(Q, 40) : Q, () => exactSearch(dataset, queryVecs[i++ % Q]!.slice(), DIMS, 10, MetricKind.Cos, 1));
    usExact = { recall: rec, lat };
  }
  const pts = (p: Point[]) => p.map(({ ef, recall, lat }) => ({ ef, recall, p50: lat.p50, p99: lat.p99 }));
  ctx.info.vectorSweep = { binary: binPts.map(({ ef, recall, lat }) => ({ pool: ef, recall, p50: lat.p50, p99: lat.p99 })), ours: pts(oursPts), usearch: pts(us) };
  for (const p of binPts) ctx.log(`binary  pool=${p.ef}: recall ${p.recall.toFixed(4)} p50 ${p.lat.p50.toFixed(1)} µs`);
  for (const p of oursPts) ctx.log(`hnsw    ef=${p.ef}: recall ${p.recall.toFixed(4)} p50 ${p.lat.p50.toFixed(1)} µs`);
  for (const p of us) ctx.log(`usearch ef=${p.ef}: recall ${p.recall.toFixed(4)} p50 ${p.lat.p50.toFixed(1)} µs`);

  figure(ctx, { group: 'retrieval', key: 'vector.build', label: `vector index build (add: binary signatures, no graph; ${BUILD_THREADS} threads), per span`, value: (oursBuildMs * 1000) / N, unit: 'µs', better: 'lower', growth: true, ...(peers ? { peer: { label: `usearch JS add (HNSW graph), ${BUILD_THREADS} threads`, value: (usBuildMs * 1000) / N } } : {}), note: 'the two build different things: signatures to scan, a graph to walk' });
  if (peers) figure(ctx, { group: 'retrieval', key: 'vector.build.hnsw', label: `vector index build, our HNSW (ann hnsw, ${BUILD_THREADS} threads), per span`, value: (hnswBuildMs * 1000) / N, unit: 'µs', better: 'lower', peer: { label: `usearch JS add, ${BUILD_THREADS} threads`, value: (usBuildMs * 1000) / N }, note: 'same graph options (connectivity, expansion_add), same threads' });
  // Matched recall: for each target, the cheapest setting of each engine that reaches it.
  const cheapest = (p: Point[], target: number) => p.filter((x) => x.recall >= target).sort((a, b) => a.lat.p50 - b.lat.p50)[0];
  // Fixed ef 64: the growth figure of the graph.
  const o64 = oursPts.find((p) => p.ef === 64);
  const u64 = us.find((p) => p.ef === 64);
  if (o64)
    figure(ctx, { group: 'retrieval', key: 'vector.hnsw.ef64', label: `vector top-10 HNSW ef 64 (ours r=${o64.recall.toFixed(3)})`, value: o64.lat.p50, p99: o64.lat.p99, unit: 'µs', better: 'lower', growth: true, ...(u64 ? { peer: { label: `usearch JS ef 64, r=${u64.recall.toFixed(3)}`, value: u64.lat.p50, p99: u64.lat.p99 } } : {}) });
  for (const target of [0.8, 0.9, 0.95, 0.99]) {
    const u = cheapest(us, target);
    for (const [name, set, param] of [['binary', binPts, 'pool'], ['HNSW', oursPts, 'ef']] as const) {
      if (set === oursPts && !peers) continue;
      const o = cheapest(set, target);
      if (!o) {
        ctx.log(`ours (${name}) never reaches recall ${target} in the sweep`);
        continue;
      }
      figure(ctx, {
        group: 'retrieval',
        key: name === 'binary' ? `vector.binary.r${target}` : `vector.hnsw.r${target}`,
        label: `vector top-10 ${name} @ recall ≥ ${target} (ours ${param}=${o.ef}, r=${o.recall.toFixed(3)})`,
        value: o.lat.p50,
        p99: o.lat.p99,
        unit: 'µs',
        better: 'lower',
        ...(u ? { peer: { label: `usearch JS ef=${u.ef}, r=${u.recall.toFixed(3)}`, value: u.lat.p50, p99: u.lat.p99 } } : {}),
        ...(peers && !u ? { note: `usearch does not reach ${target} in the sweep (ef ≤ ${efSweep[efSweep.length - 1]})` } : {}),
      });
    }
  }
  figure(ctx, { group: 'retrieval', key: 'vector.shipped', label: `vector top-10, store's config (${shippedHow}; r=${shippedPt.recall.toFixed(3)})`, value: shippedPt.lat.p50, p99: shippedPt.lat.p99, unit: 'µs', better: 'lower', growth: true, ...(usExact ? { peer: { label: `usearch exactSearch f32, threads 1 (r=${usExact.recall.toFixed(3)})`, value: usExact.lat.p50, p99: usExact.lat.p99 } } : {}) });
  figure(ctx, { group: 'retrieval', key: 'vector.exact', label: `vector top-10 exact SIMD scan f16 (r=${oursExact.recall.toFixed(3)})`, value: oursExact.lat.p50, p99: oursExact.lat.p99, unit: 'µs', better: 'lower', growth: true, ...(usExact ? { peer: { label: `usearch exactSearch f32, threads 1 (r=${usExact.recall.toFixed(3)})`, value: usExact.lat.p50, p99: usExact.lat.p99 } } : {}) });

  // ---- FTS5 peer: same spans -----------------------------------------------------------------
  let db: Db | undefined;
  let ftsMs = NaN;
  let ftsFile: string | undefined;
  if (ftsPeer) {
    const Database = require('better-sqlite3') as new (f: string) => Db;
    ftsFile = path.join(ctx.tmp('fts'), 'fts.db');
    db = new Database(ftsFile);
    // No journal, no sync: the peer gets the cheapest durability, like our `none` ingest.
    db.exec('PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; CREATE VIRTUAL TABLE t USING fts5(text)');
    const ins = db.prepare('INSERT INTO t(rowid, text) VALUES (?, ?)');
    [, ftsMs] = await wall(() => db!.transaction(() => texts.forEach((t, i) => ins.run(i + 1, t)))());
  }
  // The graph-free peer's vectors: the f32 rows written flat to a file, which is what an exact
  // scan (usearch exactSearch) reads — no graph, like our binary signatures.
  const flatFile = path.join(ctx.tmp('flat'), 'vectors.f32');
  const [, flatMs] = await wall(() => fs.writeFileSync(flatFile, matrix));
  const oursBuilds = 'log + anchors + embed + BM25 + binary signatures, no graph';
  figure(ctx, {
    group: 'retrieval',
    key: 'ingest.perSpan',
    label: `ingest via appendMany (${oursBuilds}), per span`,
    value: (ingestMs * 1000) / N,
    unit: 'µs',
    better: 'lower',
    growth: true,
    note: `${Math.round(ingestRate)} spans/s; ${(ingestMs / 1000).toFixed(1)} s in all`,
    ...(ftsPeer ? { peer: { label: 'FTS5 insert + embed + f32 vectors written flat (no graph)', value: ((ftsMs + embedMs + flatMs) * 1000) / N } } : {}),
  });
  if (peers)
    figure(ctx, {
      group: 'retrieval',
      key: 'ingest.vsGraph',
      label: `ingest via appendMany (${oursBuilds}), per span`,
      value: (ingestMs * 1000) / N,
      unit: 'µs',
      better: 'lower',
      peer: { label: `FTS5 insert + embed + usearch HNSW graph (${BUILD_THREADS} threads)`, value: ((ftsMs + embedMs + usBuildMs) * 1000) / N },
      note: 'the peer builds a graph, ours does not: its search walks the graph, ours scans signatures',
    });
  fs.rmSync(flatFile);

  // ---- LanceDB: the same texts and vectors, FTS index + (flat) vector column -----------------
  const lance = peers ? await lanceBuild(ctx, texts, matrix) : undefined;
  if (lance)
    figure(ctx, {
      group: 'retrieval',
      key: 'ingest.vsLance',
      label: `ingest via appendMany (${oursBuilds}), per span`,
      value: (ingestMs * 1000) / N,
      unit: 'µs',
      better: 'lower',
      peer: { label: 'embed + LanceDB table add + optimize + FTS index (vector column unindexed)', value: ((embedMs + lance.buildMs) * 1000) / N },
    });

  // ---- BM25 -----------------------------------------------------------------------------------
  const lex = store.lexical;
  const ftsTerms = (q: string) => (q.match(/[\p{L}\p{N}_]+/gu) ?? []).map((w) => `"${w}"`);
  const rank = db?.prepare('SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10');
  const phraseStmt = db?.prepare('SELECT rowid FROM t WHERE t MATCH ? AND instr(text, ?) > 0');
  for (const [key, label, qs] of [
    ['bm25.3w', 'BM25 top-10, 3-word queries', threeWord],
    ['bm25.12w', 'BM25 top-10, 12-word queries', longQ],
  ] as const) {
    let i = 0;
    const o = await latency(qs.length, () => lex.search(qs[i++ % qs.length]!, 10, RAW, NaN, NaN));
    let peer: Latency | undefined;
    if (rank) {
      let j = 0;
      peer = await latency(qs.length, () => rank.all(ftsTerms(qs[j++ % qs.length]!).join(' OR ') || '"__none__"'));
    }
    figure(ctx, { group: 'retrieval', key, label, value: o.p50, p99: o.p99, unit: 'µs', better: 'lower', growth: key === 'bm25.3w', ...(peer ? { peer: { label: 'FTS5 bm25()', value: peer.p50, p99: peer.p99 } } : {}), note: 'target p50 ≤ 1/3, p99 ≤ 1/5 of FTS5' });
  }

  // ---- phrase: ours vs FTS5 vs brute force (the ground truth) -------------------------------
  {
    const store0 = store.log.firstId();
    const truthSets = phrases.map((p) => {
      const s: number[] = [];
      texts.forEach((t, i) => {
        if (t.includes(p)) s.push(i);
      });
      return s;
    });
    let wrong = 0;
    let ftsWrong = 0;
    const examples: string[] = [];
    phrases.forEach((p, qi) => {
      const got = Array.from(lex.phrase(store.log, p, RAW, 1e9), (id) => id - store0).sort((a, b) => a - b);
      const want = truthSets[qi]!;
      if (got.length !== want.length || got.some((x, k) => x !== want[k])) {
        wrong++;
        if (examples.length < 3) examples.push(`${JSON.stringify(p)}: got ${got.length}, want ${want.length}`);
      }
      if (phraseStmt) {
        const terms = ftsTerms(p).map((t) => t.slice(1, -1));
        const f = terms.length ? phraseStmt.all(`"${terms.join(' ')}"`, p).map((x) => x.rowid - 1) : [];
        if (f.length !== want.length) ftsWrong++;
      }
    });
    check(ctx, 'phrase hits equal the brute-force includes() scan', wrong === 0, `${phrases.length - wrong}/${phrases.length} phrase queries return exactly the spans containing the phrase${examples.length ? `; e.g. ${examples.join('; ')}` : ''}`);
    if (phraseStmt) ctx.info.fts5PhraseDisagreements = ftsWrong;
    if (phraseStmt) ctx.log(`FTS5 phrase+instr disagrees with brute force on ${ftsWrong}/${phrases.length} (tokenizer differences; informational)`);
    let i = 0;
    const o = await latency(phrases.length, () => lex.phrase(store.log, phrases[i++ % phrases.length]!, RAW, 1e9));
    let peer: Latency | undefined;
    if (phraseStmt) {
      let j = 0;
      peer = await latency(phrases.length, () => {
        const p = phrases[j++ % phrases.length]!;
        return phraseStmt.all(`"${ftsTerms(p).map((t) => t.slice(1, -1)).join(' ')}"`, p);
      });
    }
    let k = 0;
    const bf = await latency(Math.min(phrases.length, ctx.quick ? 20 : 60), () => {
      const p = phrases[k++ % phrases.length]!;
      let c = 0;
      for (const t of texts) if (t.includes(p)) c++;
      return c;
    }, 3);
    figure(ctx, { group: 'retrieval', key: 'phrase', label: 'phrase (all spans containing it, verified)', value: o.p50, p99: o.p99, unit: 'µs', better: 'lower', growth: true, ...(peer ? { peer: { label: 'FTS5 phrase + instr()', value: peer.p50, p99: peer.p99 } } : {}), note: 'target p50 ≤ 1/2 of FTS5' });
    figure(ctx, { group: 'retrieval', key: 'phrase.vsBrute', label: 'phrase vs the floor', value: o.p50, p99: o.p99, unit: 'µs', better: 'lower', peer: { label: 'brute force includes()', value: bf.p50, p99: bf.p99 } });
  }

  // ---- hybrid store.search, near-exact quotes, and honest misses ---------------------------
  {
    let i = 0;
    const o = await latencyAsync(Q, () => store.search(quotes[i++ % Q]!.q, { k: 10 }));
    // A peer stack assembled by hand: FTS5 bm25 + usearch HNSW at ef 64, one call each.
    const usMid = us.find((p) => p.ef === 64);
    let peerP50: number | undefined;
    if (rank && usMid) {
      let j = 0;
      const f = await latency(Q, () => rank.all(ftsTerms(quotes[j++ % Q]!.q).join(' OR ') || '"__none__"'));
      peerP50 = f.p50 + usMid.lat.p50;
    }
    figure(ctx, { group: 'retrieval', key: 'hybrid', label: 'hybrid store.search k=10 (phrase+BM25+vector+verify)', value: o.p50, p99: o.p99, unit: 'µs', better: 'lower', growth: true, ...(peerP50 !== undefined ? { peer: { label: 'FTS5 bm25 + usearch ef64 (p50 sum)', value: peerP50 } } : {}) });
    // Every query set, next to LanceDB's hybrid search on the same data and k.
    const sets: [string, string, string[]][] = [
      ['hybrid.quotes', 'quotes of 60–200 characters', quotes.map((x) => x.q)],
      ['hybrid.natural', 'natural questions (5–20 words)', natural],
      ['hybrid.paraphrase', 'paraphrases (5–20 words)', paraphrases],
      ['hybrid.generated', 'questions generated from span words (5–20 words)', generated],
    ];
    for (const [key, what, qs] of sets) {
      if (qs.length === 0) continue;
      let a = 0;
      const ourLat = await latencyAsync(Math.min(Q, qs.length), () => store.search(qs[a++ % qs.length]!, { k: 10 }));
      let peer: Latency | undefined;
      if (lance) {
        let b = 0;
        // LanceDB takes milliseconds a query: fewer iterations, the same questions first.
        peer = await latencyAsync(Math.min(ctx.quick ? 20 : 60, qs.length), () => lance.search(qs[b++ % qs.length]!, (q) => embedder.embed([q])), 3);
      }
      figure(ctx, { group: 'retrieval', key, label: `hybrid store.search k=10, ${what} (${qs.length})`, value: ourLat.p50, p99: ourLat.p99, unit: 'µs', better: 'lower', growth: true, ...(peer ? { peer: { label: 'LanceDB hybrid (FTS + flat vector, RRF, k=10, query embedded in the call)', value: peer.p50, p99: peer.p99 } } : {}), note: 'target at 10^5: p50 ≤ 1 ms and ≤ 0.2× LanceDB; at 10^6: p50 ≤ 5 ms, p99 ≤ 50 ms' });
    }
    // Found: a quote of a span must come back with a span that contains it.
    let found = 0;
    const nq = ctx.quick ? 100 : Math.min(Q, 200);
    for (const { q } of quotes.slice(0, nq)) {
      const res = await store.search(q, { k: 10 });
      if (!res.miss && res.hits.some((h) => h.kind === 'raw' && h.text.includes(q))) found++;
    }
    check(ctx, 'hybrid search returns a verbatim span for near-exact quotes (≥ 0.99)', found / nq >= 0.99, `${found}/${nq} quotes of 60–200 characters came back verbatim`);

    // Never-stated values: real anchor facts with a number or identifier perturbed, kept only
    // when the perturbed text occurs nowhere in the transcript (checked by brute force).
    // "Nowhere" is judged on word/number tokens, so `start_line=6` counts as stating
    // `start_line = 6`: a hit on it is a right answer, not a false one.
    const norm = (t: string) => ` ${(t.match(/[\p{L}\p{N}_]+/gu) ?? []).join(' ')} `;
    const normTexts = texts.map(norm);
    const facts: string[] = [];
    // The same 100 probes under --quick: a correctness check must not depend on the mode.
    const rf = rng(99); // its own PRNG: the probes must not shift with the query count
    for (let j = 0; j < N && facts.length < 100; j += 1 + Math.floor(rf() * 40)) {
      const m = detectAnchor(texts[j]!, data.spans[j]!.role);
      if (!m || m.fact.length < 12 || m.fact.length > 160) continue;
      const p = perturb(m.fact, j % 5);
      const np = norm(p);
      if (p !== m.fact && np.trim().length > 0 && !normTexts.some((t) => t.includes(np))) facts.push(p);
    }
    let missed = 0;
    // Every false hit is kept (the probe, the span it came back with and that span's words
    // around the probe's first word), so each one can be classified; the message names three.
    const falseHits: { probe: string; spanId: number | undefined; via: string | undefined; span: string }[] = [];
    for (const f of facts) {
      const res = await store.search(f, { k: 10 });
      if (res.miss) missed++;
      else {
        const h = res.hits[0];
        const first = f.trim().split(/\s+/)[0] ?? '';
        const at = Math.max(0, h ? h.text.indexOf(first) : 0);
        falseHits.push({ probe: f, spanId: h?.spanId, via: h?.via, span: h ? h.text.slice(Math.max(0, at - 20), at + f.length + 40) : '' });
      }
    }
    const rate = facts.length ? missed / facts.length : 1;
    ctx.info.honestMisses = { probes: facts.length, missed, rate, falseHits };
    const named = falseHits.slice(0, 3).map((x) => `${JSON.stringify(x.probe.slice(0, 80))} -> span ${x.spanId}`);
    check(ctx, 'honest misses on never-stated values (≥ 0.95)', facts.length > 0 && rate >= 0.95, `${missed}/${facts.length} perturbed never-stated facts came back "not in transcript"${named.length ? `; false hits e.g. ${named.join('; ')}` : ''}`);
  }

  // ---- ContextWindow.recall on natural questions, first call each ------------------------
  // The agent's own call (k 5, raw spans and summaries, expect raw) with questions shaped as
  // agents and people ask them: the natural-question set of shared/data (its words, not its
  // answers: relevance is measured by `npm run quality`). Each question is asked once, so no
  // query repeats warm anything.
  {
    const file = path.join(process.env.SPANGUARD_DATA ?? path.resolve(packageRoot, '..', 'shared', 'data'), 'natural-questions', 'questions.jsonl');
    const questions = fs.existsSync(file)
      ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { question: string }).question)
      : [];
    if (questions.length > 0) {
      const window = new ContextWindow(store, { budgetTokens: 1_000_000 });
      const times: number[] = [];
      for (const q of questions) {
        const t0 = performance.now();
        await window.recall(q);
        times.push((performance.now() - t0) * 1000);
      }
      times.sort((a, b) => a - b);
      const at = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!;
      figure(ctx, { group: 'retrieval', key: 'recall.natural', label: `ContextWindow.recall, natural questions, first call each (${questions.length})`, value: at(0.5), p99: at(0.99), unit: 'µs', better: 'lower', growth: true, note: 'target at 10^4: p50 ≤ 2 ms, p99 ≤ 20 ms' });
    }
  }

  db?.close();
  const st = store.stats();
  const indexMem = indexMemory(ctx, st, N);
  await store.close();
  const storeBytes = dirBytes(storeDir);
  figure(ctx, { group: 'memory', key: 'disk.perSpan', label: 'store bytes on disk per span (log + indexes + vectors)', value: storeBytes / N, unit: 'B', better: 'lower', growth: true, ...(ftsFile && usearchFile ? { peer: { label: 'FTS5 db + usearch file', value: (fs.statSync(ftsFile).size + fs.statSync(usearchFile!).size) / N } } : {}) });
  figure(ctx, { group: 'memory', key: 'index.mem.perSpan', label: 'index memory per span (lexical + vector, from stats())', value: indexMem.total / N, unit: 'B', better: 'lower', note: indexMem.note });
  figure(ctx, { group: 'memory', key: 'rss.peak', label: 'peak RSS after ingest (process, incl. bench data)', value: rssIngest / 2 ** 20, unit: 'MiB', better: 'lower', note: `before ingest ${(rss0 / 2 ** 20).toFixed(0)} MiB` });
  return { storeDir, storeBytes, ...(usearchFile ? { usearchFile } : {}), ...(ftsFile ? { ftsFile } : {}) };
}

interface LanceTable {
  add(rows: Record<string, unknown>[]): Promise<unknown>;
  optimize(): Promise<unknown>;
  createIndex(column: string, o: { config: unknown }): Promise<void>;
  query(): { fullTextSearch(q: string): { nearestTo(v: Float32Array): { distanceType(d: string): { rerank(r: unknown): { limit(k: number): { select(c: string[]): { toArray(): Promise<unknown[]> } } } } } } };
}

/**
 * LanceDB (@lancedb/lancedb) holding the same texts and the same vectors: a table of (id, text,
 * vector), added in batches of 5,000, compacted (`optimize`), with its full-text index on
 * text. The vector column has no ANN index (an exhaustive scan, exact): LanceDB's
 * documentation calls an index usually unnecessary overhead at around 10^5 rows or fewer,
 * and an IVF index would trade recall away. The peer runs up to 2·10^5 spans. Hybrid
 * search: FTS + nearest vectors, fused by its RRF reranker.
 */
async function lanceBuild(ctx: Ctx, texts: string[], matrix: Float32Array): Promise<{ buildMs: number; search(q: string, embed: (q: string) => Float32Array): Promise<unknown[]> } | undefined> {
  process.env.LANCEDB_LOG ??= 'error'; // its scanner warns on every hybrid query otherwise
  // Lance sizes its CPU pool from the core count; with one usable blocking thread (≤ 2 cores)
  // its full-text index build parks its only thread on a full channel and never returns
  // (lancedb/lancedb#3568). Two threads is the machine's width here, the same as ours.
  process.env.LANCE_CPU_THREADS ??= String(Math.max(2, os.availableParallelism()));
  let lancedb: { connect(d: string): Promise<{ createTable(n: string, rows: Record<string, unknown>[]): Promise<LanceTable> }>; Index: { fts(): unknown }; rerankers: { RRFReranker: { create(): Promise<unknown> } } };
  try {
    lancedb = require('@lancedb/lancedb');
  } catch (e) {
    ctx.log(`LanceDB peer skipped: ${(e as Error).message}`);
    return undefined;
  }
  const N = texts.length;
  const rows = (a: number, b: number) => Array.from({ length: b - a }, (_, j) => ({ id: a + j + 1, text: texts[a + j]!, vector: matrix.subarray((a + j) * DIMS, (a + j + 1) * DIMS) }));
  // A deadline on the peer: a build that stops making progress (every LanceDB thread
  // parked) would otherwise hold the whole run. Past it the peer is dropped and a WARN says so.
  const budgetMs = Math.max(120_000, N * 3);
  ctx.log(`LanceDB build of ${N} rows (deadline ${(budgetMs / 1000).toFixed(0)} s)`);
  const conn = await lancedb.connect(ctx.tmp('lancedb'));
  const build = wall(async () => {
    const t = await conn.createTable('spans', rows(0, Math.min(N, 5000)));
    for (let a = 5000; a < N; a += 5000) await t.add(rows(a, Math.min(N, a + 5000)));
    await t.optimize();
    await t.createIndex('text', { config: lancedb.Index.fts() });
    return t;
  });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'late'>((res) => {
    timer = setTimeout(() => res('late'), budgetMs);
    timer.unref();
  });
  const built = await Promise.race([build, deadline]).finally(() => clearTimeout(timer));
  check(ctx, 'LanceDB peer built within its deadline', built !== 'late', built === 'late' ? `table + FTS index over ${N} rows not built after ${(budgetMs / 1000).toFixed(0)} s: the LanceDB rows are left out of this run` : `built in ${(built[1] / 1000).toFixed(1)} s`, true);
  if (built === 'late') return undefined;
  const [table, buildMs] = built;
  const rrf = await lancedb.rerankers.RRFReranker.create();
  return {
    buildMs,
    search: (q, embed) => table.query().fullTextSearch(q).nearestTo(embed(q)).distanceType('cosine').rerank(rrf).limit(10).select(['id']).toArray(),
  };
}
