/**
 * The vector tier at 10^6 and 10^7 vectors, the store's options (binary signatures, f16 rows):
 * top-10 latency of the unpartitioned signature scan and of the partitioned one (the inverted
 * file a checkpoint builds), each with its recall@10 against the exact scan over the same
 * rows; the exact scan itself; the add rate; the checkpoint that partitions; the open from the
 * snapshot; memory and bytes on disk per vector.
 *
 *   npx tsc -p tsconfig.bench.json && node --expose-gc build/bench-dist/bench/vector-scale.bench.js --scale 1e6
 *   (--scale 1e7: about half an hour on 2 cores; --queries N, default 300; --sweep: the lists'
 *   share of the true top-10 when probing 1/64 … 1/2 of the rows, one reopen each)
 *
 * Vectors: the built-in embedder (256 dims) over the bench's spans (bench/data.ts: real turns,
 * then the transcript generator), embedded on two worker threads and added in chunks, so the
 * texts of 10^7 spans are never held at once: spans [0, 10^6) are loadData's, the rest come
 * from the generator seeded per chunk of 10^5. Queries: quotes of 60-200 characters cut from
 * spans drawn uniformly over all N (the near-exact query the guard asks), and the natural
 * questions of ../shared/data/natural-questions (far from every span: the hard case for
 * signatures). Truth: the exact scan of the same index (`search(..., 'exact')`), so recall
 * measures the strategy, not f16.
 *
 * Writes bench/results/bench-vector-<scale>.json (the runner's shape) and regenerates
 * bench/RESULTS.md from every JSON there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { addon, packageRoot, type NativeVectorIndex } from '../src/native.js';
import { dirBytes } from '../src/store.js';
import { generator, loadData } from './data.js';
import { check, figure, machine, makeCtx, cleanup, peakRss, type Ctx } from './lib.js';
import { writeResults } from './results.js';

const DIMS = 256;
const RAW = 1;
const CHUNK = 100_000; // generator chunk (own seed), and the add batch
const BASE = 1_000_000; // spans taken from loadData; the rest from generator chunks
/** The store's vector options (src/store/options.ts vectorOptions), with partitioning opted in from 131,072 rows. */
const STORE_OPTS = {
  dims: DIMS,
  scalar: 'f16' as const,
  exactBelow: 2_500,
  ann: 'binary' as const,
  rerankMin: 1024,
  rerankShare: 1 / 128,
  partitionAbove: 131_072,
};

/** Text of generated span `i` (i ≥ BASE): chunk k = floor((i − BASE) / CHUNK) has its own seed. */
function chunkTexts(k: number): string[] {
  const gen = generator(0x7ec7 + k);
  return Array.from({ length: CHUNK }, () => gen().text);
}

// ---- worker: embeds ranges of spans and posts the vectors back -----------------------------
if (!isMainThread) {
  const { texts: base } = workerData as { texts: string[] | null };
  const embedder = new (addon().Embedder)(DIMS);
  parentPort!.on('message', (job: { from: number; to: number; texts?: string[] }) => {
    const texts =
      job.texts ?? chunkTexts(Math.floor((job.from - BASE) / CHUNK)).slice((job.from - BASE) % CHUNK, ((job.from - BASE) % CHUNK) + (job.to - job.from));
    const out = new Float32Array((job.to - job.from) * DIMS);
    for (let i = 0; i < texts.length; i += 2000) out.set(embedder.embed(texts.slice(i, i + 2000)), i * DIMS);
    parentPort!.postMessage({ from: job.from, vectors: out }, [out.buffer]);
  });
  void base;
} else {
  await main();
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { scale: { type: 'string', default: '1e6' }, queries: { type: 'string', default: '300' }, sweep: { type: 'boolean', default: false } },
    strict: true,
  });
  const N = Math.round(Number(values.scale));
  const Q = Math.round(Number(values.queries));
  if (!(N >= 1e4 && N <= 1e7)) throw new Error(`--scale: ${values.scale} is not between 1e4 and 1e7`);
  const ctx = makeCtx(N, false);
  const start = machine();
  const t0 = performance.now();
  const native = addon();
  const rssBefore = process.memoryUsage().rss;
  try {
    await run(ctx, N, Q, native, values.sweep === true);
  } catch (e) {
    ctx.checks.push({ name: 'bench ran to completion', ok: false, detail: String((e as Error).stack ?? e) });
    console.error(e);
  } finally {
    cleanup(ctx);
  }
  const out = {
    command: `node build/bench-dist/bench/vector-scale.bench.js --scale ${values.scale}${values.queries !== '300' ? ` --queries ${values.queries}` : ''}${values.sweep ? ' --sweep' : ''}`,
    scale: N,
    quick: false,
    sections: ['vector-scale'],
    machineStart: start,
    machineEnd: machine(),
    simd: native.simdIsa(),
    wallSeconds: +((performance.now() - t0) / 1000).toFixed(1),
    peakRssMiB: +(peakRss() / 2 ** 20).toFixed(0),
    figures: ctx.figures,
    checks: ctx.checks,
    info: { ...ctx.info, rssBeforeMiB: +(rssBefore / 2 ** 20).toFixed(0) },
  };
  const dir = path.join(packageRoot, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `bench-vector-${N.toExponential(0).replace('+', '')}.json`);
  fs.writeFileSync(file, JSON.stringify(out, null, 2));
  writeResults(dir, path.join(packageRoot, 'bench', 'RESULTS.md'));
  for (const f of ctx.figures)
    console.log(`${f.label}: ${f.value.toFixed(f.value < 10 ? 3 : 0)} ${f.unit}${f.p99 !== undefined ? ` (p99 ${f.p99.toFixed(0)})` : ''}`);
  for (const c of ctx.checks) console.log(`${c.ok ? 'PASS' : 'FAIL'}  ${c.name} — ${c.detail}`);
  console.log(`wall ${out.wallSeconds} s, peak RSS ${out.peakRssMiB} MiB; ${path.relative(packageRoot, file)}`);
  process.exit(ctx.checks.some((c) => !c.ok && !c.warnOnly) ? 1 : 0);
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
}

/** p50/p99 (µs) and recall@10 against `truth` of one strategy over the query set. */
function measure(
  ix: NativeVectorIndex,
  qs: Float32Array[],
  truth: Float64Array[] | null,
  strategy?: 'exact' | 'binary',
): { p50: number; p99: number; recall: number; answers: Float64Array[] } {
  for (let i = 0; i < Math.min(20, qs.length); i++) ix.search(qs[i]!, 10, RAW, strategy); // warm-up
  const times: number[] = [];
  const answers: Float64Array[] = [];
  for (const q of qs) {
    const t = process.hrtime.bigint();
    const r = ix.search(q, 10, RAW, strategy);
    times.push(Number(process.hrtime.bigint() - t) / 1e3);
    answers.push(r.ids);
  }
  let hits = 0;
  if (truth) {
    for (let i = 0; i < qs.length; i++) {
      const want = new Set(truth[i]);
      for (const id of answers[i]!) hits += want.has(id) ? 1 : 0;
    }
  }
  return { p50: pct(times, 0.5), p99: pct(times, 0.99), recall: truth ? hits / (10 * qs.length) : 1, answers };
}

async function run(ctx: Ctx, N: number, Q: number, native: ReturnType<typeof addon>, sweep: boolean): Promise<void> {
  const data = loadData(Math.min(N, BASE));
  const baseTexts = data.spans.map((s) => s.text);
  ctx.info.data = { spans: N, real: data.real, generated: N - data.real, sources: [...data.sources, ...(N > BASE ? ['generator chunks'] : [])] };
  ctx.log(`vectors: ${N} (${data.real} real turns' pieces, the rest generated), ${DIMS} dims, built-in embedder on 2 worker threads`);

  // ---- build: embed on two workers, add in order in chunks ---------------------------------
  const dir = ctx.tmp('vec');
  let ix = new native.VectorIndex(dir, STORE_OPTS);
  const workers = [0, 1].map(() => new Worker(fileURLToPath(import.meta.url), { workerData: { texts: null } }));
  const pending = new Map<number, Float32Array>();
  let waiting: (() => void) | null = null;
  for (const w of workers) {
    w.on('message', (m: { from: number; vectors: Float32Array }) => {
      pending.set(m.from, m.vectors);
      waiting?.();
    });
  }
  const ranges: [number, number][] = [];
  for (let i = 0; i < N; i += CHUNK) ranges.push([i, Math.min(N, i + CHUNK)]);
  let sent = 0;
  const send = () => {
    if (sent >= ranges.length) return;
    const [from, to] = ranges[sent]!;
    workers[sent % 2]!.postMessage({ from, to, ...(from < BASE ? { texts: baseTexts.slice(from, to) } : {}) });
    sent++;
  };
  send();
  send();
  send();
  let addMs = 0;
  let embedWait = 0;
  for (const [from, to] of ranges) {
    const w0 = performance.now();
    while (!pending.has(from)) await new Promise<void>((r) => (waiting = r));
    embedWait += performance.now() - w0;
    const vectors = pending.get(from)!;
    pending.delete(from);
    send();
    const a0 = performance.now();
    ix.add(
      Float64Array.from({ length: to - from }, (_, j) => from + j),
      new Uint8Array(to - from).fill(RAW),
      vectors,
    );
    addMs += performance.now() - a0;
    if ((to / CHUNK) % 10 === 0)
      ctx.log(
        `added ${to} (add ${(addMs / 1000).toFixed(1)} s, waited for embedding ${(embedWait / 1000).toFixed(1)} s, rss ${(process.memoryUsage().rss / 2 ** 30).toFixed(2)} GiB)`,
      );
  }
  for (const w of workers) await w.terminate();
  const distinct = Number(ix.stats().graphRaw);
  figure(ctx, {
    group: 'vector',
    key: 'vector.scale.add',
    label: `add (normalize, f16 row, 512-bit signature, vectors.bin append; unpartitioned), per vector`,
    value: (addMs * 1000) / N,
    unit: 'µs',
    better: 'lower',
    note: `${N} vectors, ${distinct} distinct, batches of ${CHUNK}`,
  });

  // ---- queries ------------------------------------------------------------------------------
  let seed = 0x51ab;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
  const picks = Array.from({ length: Q }, () => Math.floor(rand() * N)).sort((a, b) => a - b);
  const quoteTexts: string[] = [];
  let chunk = -1;
  let texts: string[] = [];
  for (const i of picks) {
    let t: string;
    if (i < BASE) t = baseTexts[i]!;
    else {
      const k = Math.floor((i - BASE) / CHUNK);
      if (k !== chunk) (texts = chunkTexts(k)), (chunk = k);
      t = texts[(i - BASE) % CHUNK]!;
    }
    const len = 60 + Math.floor(rand() * 141);
    const s = Math.floor(rand() * Math.max(1, t.length - len));
    quoteTexts.push(t.slice(s, s + len));
  }
  const nq = path.resolve(packageRoot, '..', 'shared', 'data', 'natural-questions', 'questions.jsonl');
  const questionTexts = fs.existsSync(nq)
    ? fs
        .readFileSync(nq, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { question: string }).question)
    : [];
  const embedder = new native.Embedder(DIMS);
  const toRows = (ts: string[]) => {
    const m = embedder.embed(ts);
    return ts.map((_, i) => m.slice(i * DIMS, (i + 1) * DIMS));
  };
  const sets: [string, Float32Array[]][] = [['quotes of 60–200 characters', toRows(quoteTexts)]];
  if (questionTexts.length > 0) sets.push([`natural questions`, toRows(questionTexts)]);

  // ---- exact truth, and the unpartitioned scan (nothing saved yet) -------------------------
  const truths = new Map<string, Float64Array[]>();
  for (const [name, qs] of sets) {
    ctx.log(`exact scan over ${N} for ${qs.length} ${name}`);
    const ex = measure(ix, qs, null, 'exact');
    truths.set(name, ex.answers);
    if (name === sets[0]![0])
      figure(ctx, {
        group: 'vector',
        key: 'vector.scale.exact',
        label: `top-10 exact scan (f16 rows, NumKong), ${name}`,
        value: ex.p50,
        p99: ex.p99,
        unit: 'µs',
        better: 'lower',
      });
  }
  ctx.log('unpartitioned signature scan');
  for (const [name, qs] of sets) {
    const flat = measure(ix, qs, truths.get(name)!, 'binary');
    figure(ctx, {
      group: 'vector',
      key: `vector.scale.flat.${name === sets[0]![0] ? 'quotes' : 'questions'}`,
      label: `top-10 unpartitioned signature scan (every row; pool max(1024, N/128)), ${name} (r=${flat.recall.toFixed(3)})`,
      value: flat.p50,
      p99: flat.p99,
      unit: 'µs',
      better: 'lower',
    });
  }

  // ---- the checkpoint partitions; the partitioned search -----------------------------------
  const s0 = performance.now();
  ix.save();
  const saveMs = performance.now() - s0;
  const st = ix.stats();
  figure(ctx, {
    group: 'vector',
    key: 'vector.scale.save',
    label: `checkpoint: partition (${st.listsRaw} lists, k-means over ${Math.min(N, 64 * Number(st.listsRaw))} sampled rows) + snapshot write + fsync`,
    value: saveMs,
    unit: 'ms',
    better: 'lower',
  });
  for (const [name, qs] of sets) {
    const ivf = measure(ix, qs, truths.get(name)!);
    const key = name === sets[0]![0] ? 'quotes' : 'questions';
    figure(ctx, {
      group: 'vector',
      key: `vector.scale.ivf.${key}`,
      label: `top-10 partitioned (nearest lists to max(65,536, N/4) rows; pool max(1024, N/128)), ${name} (r=${ivf.recall.toFixed(3)})`,
      value: ivf.p50,
      p99: ivf.p99,
      unit: 'µs',
      better: 'lower',
      note: 'target at 10^7: p50 ≤ 10 ms at recall@10 ≥ 0.95',
    });
    check(
      ctx,
      `partitioned recall@10 vs the exact scan, ${name} (≥ 0.95)`,
      ivf.recall >= 0.95,
      `recall@10 = ${ivf.recall.toFixed(4)} over ${qs.length} queries`,
      key === 'questions',
    );
    if (N >= 1e7 && key === 'quotes') check(ctx, 'partitioned p50 at 10^7 ≤ 10 ms', ivf.p50 <= 10_000, `p50 ${(ivf.p50 / 1000).toFixed(2)} ms`);
  }
  const memory = Number(ix.stats().memoryBytes);
  ix.close();

  // ---- disk and open ------------------------------------------------------------------------
  const vectorsBin = fs.statSync(path.join(dir, 'vectors.bin')).size;
  const snap = fs.statSync(path.join(dir, 'index.raw.flat')).size;
  figure(ctx, {
    group: 'vector',
    key: 'vector.scale.disk',
    label: 'bytes on disk per vector (vectors.bin f16 records + snapshot: ordinals, lists, signatures)',
    value: dirBytes(dir) / N,
    unit: 'B',
    better: 'lower',
    note: `vectors.bin ${(vectorsBin / N).toFixed(0)} B, snapshot ${(snap / N).toFixed(0)} B per vector`,
  });
  figure(ctx, {
    group: 'vector',
    key: 'vector.scale.memory',
    label: 'index memory per vector (stats().memoryBytes: f16 rows, signatures in lists, keys, ordinals)',
    value: memory / N,
    unit: 'B',
    better: 'lower',
  });
  const o0 = performance.now();
  ix = new native.VectorIndex(dir, STORE_OPTS);
  const openMs = performance.now() - o0;
  const loaded = ix.stats();
  check(
    ctx,
    'reopened from the snapshot, partition included',
    loaded.loadedFromRaw === 'file' && loaded.listsRaw === st.listsRaw,
    `loadedFrom ${loaded.loadedFromRaw}, lists ${loaded.listsRaw}`,
  );
  figure(ctx, {
    group: 'vector',
    key: 'vector.scale.open',
    label: 'open from the snapshot (rows read back from vectors.bin, CRC-checked)',
    value: openMs,
    unit: 'ms',
    better: 'lower',
  });
  ix.close();

  // ---- where the partitioned search loses recall: the lists, or the pool -------------------
  // The same snapshot with every probed row reranked exactly: its recall is the share of the
  // true top-10 that lie in the lists probed (what the partition can find at all); the
  // unpartitioned scan's recall above is what the pool loses by itself.
  ix = new native.VectorIndex(dir, { ...STORE_OPTS, rerankMin: 1e7, readOnly: true });
  for (const [name, qs] of sets) {
    const all = measure(ix, qs, truths.get(name)!);
    figure(ctx, {
      group: 'vector',
      key: `vector.scale.ivf-lists.${name === sets[0]![0] ? 'quotes' : 'questions'}`,
      label: `top-10 partitioned, every probed row reranked exactly (recall = the probed lists' share of the true top-10), ${name} (r=${all.recall.toFixed(3)})`,
      value: all.p50,
      p99: all.p99,
      unit: 'µs',
      better: 'lower',
    });
  }
  ix.close();
  // --sweep: the same with the nearest lists taken to 1/64 … 1/2 of the rows (one open each).
  if (sweep) {
    for (const share of [1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 2]) {
      ix = new native.VectorIndex(dir, { ...STORE_OPTS, rerankMin: 1e7, probeMin: 1, probeShare: share, readOnly: true });
      for (const [name, qs] of sets) {
        const all = measure(ix, qs, truths.get(name)!);
        const key = name === sets[0]![0] ? 'quotes' : 'questions';
        figure(ctx, {
          group: 'vector',
          key: `vector.scale.ivf-lists.${key}.1/${Math.round(1 / share)}`,
          label: `top-10 partitioned, lists to 1/${Math.round(1 / share)} of the rows, every probed row reranked exactly, ${name} (r=${all.recall.toFixed(3)})`,
          value: all.p50,
          p99: all.p99,
          unit: 'µs',
          better: 'lower',
        });
      }
      ix.close();
    }
  }
  ctx.info.vectorScale = { lists: st.listsRaw, distinct, saveMs, openMs, vectorsBin, snapshot: snap, memoryBytes: memory, options: STORE_OPTS };
}
