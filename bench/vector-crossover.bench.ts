/**
 * Vector side benchmark: built-in embedder throughput, and for each scalar kind
 * (f32 / f16 / i8) the latency of the exact SIMD scan and of the index's `ann` strategy
 * (binary signatures + exact rerank by default, `VEC_BENCH_ANN=hnsw` for the graph) as a
 * namespace grows, the crossover between them (which sets the store's `exactBelow`), the
 * ann's recall@10 against the exact scan, build rate, memory, bytes on disk, save and open
 * time; then catchUp (log -> embed -> vectors file -> index) end to end.
 *
 * Data: the 41,326 real turns of miniswe-gemini3pro-verified cut at whitespace into pieces
 * of ~400 characters (~100 tokens, 107k spans). Queries: 300 quotes of 60-200 characters
 * from random spans, embedded with the built-in embedder (the near-exact query the guard
 * cares about). Vectors: 256 dims, the built-in embedder's output.
 *
 *   npx tsc -p tsconfig.json && \
 *   npx tsc bench/vector-crossover.bench.ts --outDir build/bench --module nodenext \
 *     --target es2022 --moduleResolution nodenext --skipLibCheck && \
 *   node build/bench/bench/vector-crossover.bench.js
 *
 * Env: VEC_BENCH_POINTS=1000,2000,... (checkpoints), VEC_BENCH_SCALARS=f32,f16,i8,
 * VEC_BENCH_ANN=binary|hnsw (binary: the store's rerank options, rerankMin 1024, share 1/128).
 * Writes bench/results/vector-crossover.json. Run from the package root.
 */
import { dirBytes } from '../src/store.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { pathToFileURL } from 'node:url';
import { Bench } from 'tinybench';

type NativeModule = typeof import('../src/native.js');
type Scalar = 'f32' | 'f16' | 'i8';
const root = process.cwd();
const { addon } = (await import(pathToFileURL(path.join(root, 'dist/native.js')).href)) as NativeModule;
const native = addon();

const DIMS = 256;
const RAW = 1;
const DATA = '/work/shared/data/miniswe-gemini3pro-verified/turns.jsonl.gz';
const POINTS = (process.env.VEC_BENCH_POINTS ?? '1000,2000,5000,10000,20000,50000,100000').split(',').map(Number);
const SCALARS = (process.env.VEC_BENCH_SCALARS ?? 'f32,f16,i8').split(',') as Scalar[];
const QUERIES = 300;
const ANN = (process.env.VEC_BENCH_ANN ?? 'binary') as 'binary' | 'hnsw';
const ANN_OPTS = { ann: ANN, rerankMin: 512, rerankShare: 1 / 512 };

const tmp = (tag: string) => fs.mkdtempSync(path.join(os.tmpdir(), `spanguard-vbench-${tag}-`));
const mb = (b: number) => (b / 1048576).toFixed(1);

// --- data -------------------------------------------------------------------------------
const turns = zlib
  .gunzipSync(fs.readFileSync(DATA))
  .toString('utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => (JSON.parse(l) as { text: string }).text);
const spans: string[] = [];
for (const t of turns) {
  let s = 0;
  while (s < t.length) {
    let e = Math.min(t.length, s + 400);
    if (e < t.length) {
      const ws = t.lastIndexOf(' ', e);
      if (ws > s + 300) e = ws;
    }
    spans.push(t.slice(s, e));
    s = e;
  }
}
let seed = 42;
const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
const maxPoint = Math.min(spans.length, Math.max(...POINTS));

// --- embedder throughput ------------------------------------------------------------------
const embedder = new native.Embedder(DIMS);
const matrix = new Float32Array(maxPoint * DIMS);
{
  const t0 = performance.now();
  for (let i = 0; i < maxPoint; i += 1000) matrix.set(embedder.embed(spans.slice(i, Math.min(maxPoint, i + 1000))), i * DIMS);
  const dt = (performance.now() - t0) / 1000;
  const chars = spans.slice(0, maxPoint).reduce((s, t) => s + t.length, 0);
  console.log(
    `embed (1 thread, JS batches of 1000): ${maxPoint} spans of ${(chars / maxPoint).toFixed(0)} chars avg in ${dt.toFixed(2)} s = ${(maxPoint / dt).toFixed(0)} spans/s, ${(chars / dt / 1e6).toFixed(1)} MB/s`,
  );
}
const embedRate = { spans: maxPoint };

function queriesUpTo(n: number): Float32Array {
  const q = new Float32Array(QUERIES * DIMS);
  for (let i = 0; i < QUERIES; i++) {
    const t = spans[Math.floor(rand() * n)]!;
    const len = 60 + Math.floor(rand() * 140);
    const s = Math.floor(rand() * Math.max(1, t.length - len));
    q.set(embedder.embed([t.slice(s, s + len)]), i * DIMS);
  }
  return q;
}

async function latency(fn: (q: Float32Array) => void, queries: Float32Array): Promise<{ p50: number; p99: number }> {
  const rows = Array.from({ length: QUERIES }, (_, i) => queries.slice(i * DIMS, (i + 1) * DIMS));
  let i = 0;
  const bench = new Bench({ time: 0, iterations: QUERIES * 2, warmupIterations: 30 });
  bench.add('q', () => fn(rows[i++ % QUERIES]!));
  await bench.run();
  const r = bench.tasks[0]!.result as unknown as { latency: { p50: number; p99: number } };
  return { p50: r.latency.p50 * 1000, p99: r.latency.p99 * 1000 }; // microseconds
}

interface Row {
  scalar: Scalar;
  n: number;
  exactP50: number;
  exactP99: number;
  ann: 'binary' | 'hnsw';
  annP50: number;
  annP99: number;
  recall10: number;
  buildPerSec: number;
  memoryBytes: number;
  rssBytes: number;
  diskBytes: number;
  saveMs: number;
  openMs: number;
}
const rows: Row[] = [];

for (const scalar of SCALARS) {
  const dir = tmp(scalar);
  const rss0 = process.memoryUsage().rss;
  let ix = new native.VectorIndex(dir, { dims: DIMS, scalar, exactBelow: 0, ...ANN_OPTS });
  let have = 0;
  for (const n of POINTS) {
    if (n > spans.length) break;
    const t0 = performance.now();
    const step = 5000;
    for (let i = have; i < n; i += step) {
      const e = Math.min(n, i + step);
      ix.add(Float64Array.from({ length: e - i }, (_, j) => i + j), new Uint8Array(e - i).fill(RAW), matrix.subarray(i * DIMS, e * DIMS));
    }
    const buildPerSec = (n - have) / ((performance.now() - t0) / 1000);
    have = n;
    const queries = queriesUpTo(n);
    const exact = await latency((q) => ix.search(q, 10, RAW, 'exact'), queries);
    const approx = await latency((q) => ix.search(q, 10, RAW, ANN), queries);
    // Recall@10 of the ann against the exact scan; ties (identical distances) count as hits.
    let hits = 0;
    for (let i = 0; i < QUERIES; i++) {
      const q = queries.slice(i * DIMS, (i + 1) * DIMS);
      const ex = ix.search(q, 10, RAW, 'exact');
      const hn = ix.search(q, 10, RAW, ANN);
      const worst = ex.distances[ex.distances.length - 1]! + 1e-6;
      const exIds = new Set(ex.ids);
      for (let j = 0; j < hn.ids.length; j++) hits += exIds.has(hn.ids[j]!) || hn.distances[j]! <= worst ? 1 : 0;
    }
    const memoryBytes = ix.stats().memoryBytes as number;
    const rssBytes = process.memoryUsage().rss - rss0;
    const s0 = performance.now();
    ix.save();
    const saveMs = performance.now() - s0;
    ix.close();
    // The run goes on with the index loaded from its snapshot: the open path is exercised too.
    const o0 = performance.now();
    ix = new native.VectorIndex(dir, { dims: DIMS, scalar, exactBelow: 0, ...ANN_OPTS });
    const openMs = performance.now() - o0;
    if (ix.stats().loadedFrom !== 'file') throw new Error('reopen did not load the snapshot');
    const row: Row = {
      scalar,
      n,
      exactP50: exact.p50,
      exactP99: exact.p99,
      ann: ANN,
      annP50: approx.p50,
      annP99: approx.p99,
      recall10: hits / (QUERIES * 10),
      buildPerSec,
      memoryBytes,
      rssBytes,
      diskBytes: dirBytes(dir),
      saveMs,
      openMs,
    };
    rows.push(row);
    console.log(
      `${scalar} n=${String(n).padStart(6)}  exact p50/p99 ${row.exactP50.toFixed(0).padStart(5)}/${row.exactP99.toFixed(0).padStart(5)} us` +
        `  ${ANN} p50/p99 ${row.annP50.toFixed(0).padStart(4)}/${row.annP99.toFixed(0).padStart(4)} us  recall@10 ${row.recall10.toFixed(3)}` +
        `  build ${row.buildPerSec.toFixed(0)}/s  rss +${mb(row.rssBytes)} MB  disk ${mb(row.diskBytes)} MB (${(row.diskBytes / n).toFixed(0)} B/span)` +
        `  save ${row.saveMs.toFixed(0)} ms  open ${row.openMs.toFixed(0)} ms`,
    );
  }
  ix.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

// Crossover: the first size at which the ann's p50 beats the exact scan's.
const crossover: Record<string, { below: number; above: number } | null> = {};
for (const scalar of SCALARS) {
  const rs = rows.filter((r) => r.scalar === scalar);
  const k = rs.findIndex((r) => r.annP50 < r.exactP50);
  crossover[scalar] = k < 0 ? null : { below: k > 0 ? rs[k - 1]!.n : 0, above: rs[k]!.n };
  console.log(`crossover ${scalar} (exact vs ${ANN}): ${k < 0 ? 'none in range' : `between ${crossover[scalar]!.below} and ${crossover[scalar]!.above} vectors`}`);
}

// --- catchUp end to end -------------------------------------------------------------------
let catchUp = { spans: 0, vectors: 0, seconds: 0 };
{
  const n = Math.min(10_000, turns.length);
  const dir = tmp('catchup');
  const log = new native.SpanLog(dir, { readOnly: false, durability: 0, segmentBytes: 64 << 20, maxTextBytes: 16 << 20 });
  const texts = turns.slice(0, n);
  await log.append({
    kinds: new Uint8Array(n).fill(RAW),
    flags: new Uint8Array(n),
    roles: new Uint8Array(n),
    turnStart: Float64Array.from({ length: n }, (_, i) => i),
    turnEnd: Float64Array.from({ length: n }, (_, i) => i),
    timestamps: new Float64Array(n),
    tokens: new Uint32Array(n),
    texts,
    metas: new Array(n).fill(null),
  });
  const ix = new native.VectorIndex(path.join(dir, 'vec'), { dims: DIMS, scalar: 'f16', exactBelow: 20000 });
  const t0 = performance.now();
  const vectors = ix.catchUp(log, embedder);
  const seconds = (performance.now() - t0) / 1000;
  catchUp = { spans: n, vectors, seconds };
  console.log(
    `catchUp (f16, whole real turns, windows of 512): ${n} spans -> ${vectors} vectors in ${seconds.toFixed(2)} s = ${(n / seconds).toFixed(0)} spans/s, ${(vectors / seconds).toFixed(0)} vectors/s`,
  );
  ix.close();
  await log.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

console.log(`simdIsa: ${native.simdIsa()}`);
fs.mkdirSync(path.join(root, 'bench/results'), { recursive: true });
fs.writeFileSync(
  path.join(root, `bench/results/vector-crossover${ANN === 'hnsw' ? '-hnsw' : ''}.json`),
  JSON.stringify({ date: new Date().toISOString(), simdIsa: native.simdIsa(), dims: DIMS, embedRate, rows, crossover, catchUp }, null, 2),
);
