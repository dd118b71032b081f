/**
 * The vector tier at 10^6 and 10^7 vectors, the store's options (binary signatures, f16 rows):
 * top-10 latency of the unpartitioned signature scan and of the partitioned one (the inverted
 * file), each with its recall@10 against the exact scan over the same rows; the exact scan
 * itself; the add rate; the partitioning; the open from the snapshot; memory and bytes on disk
 * per vector; how far apart the exact neighbours lie (the ties).
 *
 *   npx tsc -p tsconfig.bench.json && node --expose-gc build/bench-dist/bench/vector-scale.bench.js --scale 1e6
 *   (--scale 1e7: about half an hour on 2 cores; --queries N, default 300; --sweep: the lists'
 *   share of the true top-10 when probing 1/256 … 1/4 of the rows, one reopen each, or the
 *   shares --shares 64,16 names;
 *   --cache DIR: keep the built, unpartitioned index and the exact answers under
 *   DIR/vector-<scale>[-repeat] and reopen them on the next run instead of embedding again;
 *   --corpus repeat: the real turns repeated with a distinct suffix word per copy instead of
 *   the generator; --corpus topics: every span generated about one of 2,000 topics, below;
 *   --margins 0.2:8,inf:16:16384,…: the partitioned search again with probeMargin (inf: none),
 *   the cap's share of the rows (1/8 here) and the pool, one reopen each)
 *
 * Vectors: the built-in embedder (256 dims) over the bench's spans, embedded on two worker
 * threads and added in chunks, so the texts of 10^7 spans are never held at once. Corpus
 * `gen` (default): spans [0, 10^6) are loadData's (real turns, then bench/data.ts's generator),
 * the rest come from the generator seeded per chunk of 10^5 — sentences of random words from a
 * small vocabulary, spread evenly, unlike real embeddings, which gather by topic. Corpus
 * `repeat`: the real turns' pieces (≈1.6·10^5) repeated, each copy with the suffix ` copy<k>`,
 * so every text has near-duplicates (bench/hybrid-scale.ts's `repeat`). Corpus `topics`: all N
 * spans from bench/data.ts's topicGenerator, chunk k of 10^5 seeded on its own — each span
 * about one of 2,000 topics (its own made-up vocabulary, Zipf within it, a subtopic's share
 * of it, 30% common function words, some words of a second topic). Real sessions are
 * topical: their embeddings gather by subject, which is what a partition (or a graph) uses;
 * `gen`'s uniform words spread every span evenly, the adversarial case. Both are kept, and
 * both are reported.
 *
 * Queries: quotes of 60-200 characters cut from spans drawn uniformly over all N (the
 * near-exact query the guard asks), and the natural questions of ../shared/data/natural-questions
 * (far from every span: the hard case for signatures); with `topics`, instead of the latter,
 * generated topical questions (bench/data.ts topicQuestions: 2–5 words of one topic in a
 * question template, not substrings of any span).
 *
 * Truth and recall: the exact scan of the same index (`search(..., 'exact')`, top-100 kept),
 * so recall measures the strategy, not f16. Two recalls are printed for every figure:
 *   r   strict: the share of the exact top-10's ids returned;
 *   ra  the ann-benchmarks definition: a returned row counts when its distance is at most the
 *       exact 10th neighbour's distance + 1e-3.
 * The strict one counts an equally near row (a tie within f16's rounding, or a near-duplicate)
 * returned in place of one of the exact top-10 as a miss; the gap figures say how often that
 * happens (the 11th…100th exact neighbours' distance above the 10th's).
 *
 * Writes bench/results/bench-vector-<scale>[-<corpus>][-margins].json (the runner's shape) and regenerates
 * bench/RESULTS.md from every JSON there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { addon, packageRoot, type NativeVectorIndex } from '../src/native.js';
import { dirBytes } from '../src/store.js';
import { generator, loadData, TOPIC_COUNT, topicGenerator, topicQuestions } from './data.js';
import { check, figure, machine, makeCtx, cleanup, peakRss, status, type Ctx } from './lib.js';
import { writeResults } from './results.js';

const DIMS = 256;
const RAW = 1;
const CHUNK = 100_000; // generator chunk (own seed), and the add batch
const BASE = 1_000_000; // spans taken from loadData; the rest from generator chunks
/** ann-benchmarks' tolerance: a returned row counts when within this of the 10th true distance. */
const EPS = 1e-3;
/** Exact neighbours kept per query (the truth, and the gap figures). */
const DEEP = 100;
/** The store's vector options (src/store/options.ts vectorOptions), with partitioning opted in from 131,072 rows, and the partitioned search's defaults. */
const STORE_OPTS = {
  dims: DIMS,
  scalar: 'f16' as const,
  exactBelow: 2_500,
  ann: 'binary' as const,
  rerankMin: 512,
  rerankShare: 1 / 512,
  partitionAbove: 131_072,
  probeMin: 16_384,
  probeShare: 1 / 5,
  probeRerank: 4096,
};
/** The same, never partitioned: the cached base index and the unpartitioned scan. */
const FLAT_OPTS = { ...STORE_OPTS, partitionAbove: Number.POSITIVE_INFINITY };

/** Text of generated span `i` (i ≥ BASE): chunk k = floor((i − BASE) / CHUNK) has its own seed. */
function chunkTexts(k: number): string[] {
  const gen = generator(0x7ec7 + k);
  return Array.from({ length: CHUNK }, () => gen().text);
}

/** Texts of topical spans [k·CHUNK, (k+1)·CHUNK): chunk k has its own seed (bench/data.ts topicGenerator). */
function topicChunkTexts(k: number, upTo = CHUNK): string[] {
  const gen = topicGenerator(0x70c5 + k);
  return Array.from({ length: upTo }, () => gen().text);
}

type Corpus = 'gen' | 'repeat' | 'topics';

// ---- worker: embeds ranges of spans and posts the vectors back -----------------------------
if (!isMainThread) {
  const embedder = new (addon().Embedder)(DIMS);
  parentPort!.on('message', (job: { from: number; to: number; texts?: string[]; topics?: boolean }) => {
    const texts =
      job.texts ??
      (job.topics
        ? topicChunkTexts(Math.floor(job.from / CHUNK)).slice(job.from % CHUNK, (job.from % CHUNK) + (job.to - job.from))
        : chunkTexts(Math.floor((job.from - BASE) / CHUNK)).slice((job.from - BASE) % CHUNK, ((job.from - BASE) % CHUNK) + (job.to - job.from)));
    const out = new Float32Array((job.to - job.from) * DIMS);
    for (let i = 0; i < texts.length; i += 2000) out.set(embedder.embed(texts.slice(i, i + 2000)), i * DIMS);
    parentPort!.postMessage({ from: job.from, vectors: out }, [out.buffer]);
  });
} else {
  await main();
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scale: { type: 'string', default: '1e6' },
      queries: { type: 'string', default: '300' },
      sweep: { type: 'boolean', default: false },
      shares: { type: 'string', default: '256,128,64,32,16,8,4' },
      cache: { type: 'string' },
      corpus: { type: 'string', default: 'gen' },
      margins: { type: 'string' },
    },
    strict: true,
  });
  const N = Math.round(Number(values.scale));
  const Q = Math.round(Number(values.queries));
  if (!(N >= 1e4 && N <= 1e7)) throw new Error(`--scale: ${values.scale} is not between 1e4 and 1e7`);
  const corpus = values.corpus;
  if (corpus !== 'gen' && corpus !== 'repeat' && corpus !== 'topics') throw new Error(`--corpus: ${corpus} is not gen, repeat or topics`);
  const ctx = makeCtx(N, false);
  const start = machine();
  const t0 = performance.now();
  const native = addon();
  const rssBefore = process.memoryUsage().rss;
  // A margin sweep is a run of its own: it does not overwrite the corpus's plain run.
  const tag = `${N.toExponential(0).replace('+', '')}${corpus === 'gen' ? '' : `-${corpus}`}${values.margins ? '-margins' : ''}`;
  const dir = path.join(packageRoot, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `bench-vector-${tag}.json`);
  /** Writes the run's JSON as it stands: after every phase (`partial`: a 10^7 run stopped midway keeps what it measured), and at the end. */
  const record = (partial: boolean) => {
    const out = {
      command: `node build/bench-dist/bench/vector-scale.bench.js --scale ${values.scale}${values.queries !== '300' ? ` --queries ${values.queries}` : ''}${values.sweep ? ` --sweep${values.shares !== '256,128,64,32,16,8,4' ? ` --shares ${values.shares}` : ''}` : ''}${values.margins ? ` --margins ${values.margins}` : ''}${corpus !== 'gen' ? ` --corpus ${corpus}` : ''}${values.cache ? ` --cache ${values.cache}` : ''}`,
      scale: N,
      quick: false,
      ...(partial ? { partial: true } : {}),
      sections: ['vector-scale'],
      machineStart: start,
      machineEnd: machine(),
      simd: native.simdIsa(),
      wallSeconds: +((performance.now() - t0) / 1000).toFixed(1),
      peakRssMiB: +(peakRss() / 2 ** 20).toFixed(0),
      recallDefinitions: {
        r: 'strict recall@10: the share of the exact scan’s top-10 ids returned',
        ra: `ann-benchmarks recall@10: a returned row counts when its distance ≤ the exact 10th distance + ${EPS}`,
      },
      figures: ctx.figures,
      checks: ctx.checks,
      info: { ...ctx.info, rssBeforeMiB: +(rssBefore / 2 ** 20).toFixed(0) },
    };
    fs.writeFileSync(file, JSON.stringify(out, null, 2));
    return out;
  };
  try {
    const shares = values.sweep ? values.shares.split(',').map((x) => 1 / Number(x)) : [];
    const margins = (values.margins ?? '')
      .split(',')
      .filter(Boolean)
      .map((x) => {
        const [m, cap, pool] = x.split(':');
        const margin = m === 'inf' ? Number.POSITIVE_INFINITY : Number(m);
        const share = cap === undefined ? STORE_OPTS.probeShare : 1 / Number(cap);
        const rerank = pool === undefined ? STORE_OPTS.probeRerank : Number(pool);
        if (!(margin >= 0) || !(share > 0 && share <= 1) || !(rerank >= 1)) throw new Error(`--margins: ${x} is not margin|inf[:cap denominator[:pool]]`);
        return { margin, share, rerank };
      });
    await run(ctx, {
      N,
      Q,
      native,
      shares,
      margins,
      cache: values.cache ? path.resolve(values.cache, `vector-${tag}`) : null,
      corpus: corpus as Corpus,
      progress: () => record(true),
    });
  } catch (e) {
    ctx.checks.push({ name: 'bench ran to completion', ok: false, detail: String((e as Error).stack ?? e) });
    console.error(e);
  } finally {
    cleanup(ctx);
  }
  const out = record(false);
  writeResults(dir, path.join(packageRoot, 'bench', 'RESULTS.md'));
  for (const f of ctx.figures)
    console.log(`${f.label}: ${f.value.toFixed(f.value < 10 ? 3 : 0)} ${f.unit}${f.p99 !== undefined ? ` (p99 ${f.p99.toFixed(0)})` : ''}`);
  for (const c of ctx.checks) console.log(`${status(c)}  ${c.name} — ${c.detail}`);
  console.log(`wall ${out.wallSeconds} s, peak RSS ${out.peakRssMiB} MiB; ${path.relative(packageRoot, file)}`);
  process.exit(ctx.checks.some((c) => !c.ok && !c.warnOnly) ? 1 : 0);
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
}

/** One query's exact answer: the top-DEEP ids and distances, ascending. */
interface Truth {
  ids: number[];
  d: number[];
}

interface Measured {
  p50: number;
  p99: number;
  /** strict recall@10 */
  recall: number;
  /** ann-benchmarks recall@10 (distance ≤ exact 10th + EPS) */
  recallAnn: number;
  answers: { ids: Float64Array; distances: Float32Array }[];
}

/** p50/p99 (µs) and both recalls@10 against `truth` of one strategy over the query set. */
function measure(ix: NativeVectorIndex, qs: Float32Array[], truth: Truth[] | null, strategy?: 'exact' | 'binary', k = 10): Measured {
  for (let i = 0; i < Math.min(20, qs.length); i++) ix.search(qs[i]!, k, RAW, strategy); // warm-up
  const times: number[] = [];
  const answers: Measured['answers'] = [];
  for (const q of qs) {
    const t = process.hrtime.bigint();
    const r = ix.search(q, k, RAW, strategy);
    times.push(Number(process.hrtime.bigint() - t) / 1e3);
    answers.push(r);
  }
  let hits = 0;
  let near = 0;
  if (truth) {
    for (let i = 0; i < qs.length; i++) {
      const want = new Set(truth[i]!.ids.slice(0, 10));
      const bound = truth[i]!.d[Math.min(9, truth[i]!.d.length - 1)]! + EPS;
      const a = answers[i]!;
      for (let j = 0; j < Math.min(10, a.ids.length); j++) {
        hits += want.has(a.ids[j]!) ? 1 : 0;
        near += a.distances[j]! <= bound ? 1 : 0;
      }
    }
  }
  const denom = 10 * qs.length;
  return { p50: pct(times, 0.5), p99: pct(times, 0.99), recall: truth ? hits / denom : 1, recallAnn: truth ? near / denom : 1, answers };
}

/** The partitioned searches' probe counters now (stats(): cumulative since the open). */
function probedSoFar(ix: NativeVectorIndex): number[] {
  const s = ix.stats();
  return [Number(s.probedQueries), Number(s.probedLists), Number(s.probedRows)];
}

/** Mean lists and rows probed per partitioned search since `before` (warm-up queries included). */
function probedSince(ix: NativeVectorIndex, before: number[]): string {
  const [q, l, r] = probedSoFar(ix).map((x, i) => x - before[i]!);
  return q! > 0 ? `${(l! / q!).toFixed(1)} lists, ${Math.round(r! / q!)} rows (mean)` : 'none';
}

function rTag(m: Measured): string {
  return `r=${m.recall.toFixed(3)}, ra=${m.recallAnn.toFixed(3)}`;
}

/** FNV-1a over the query vectors' bytes: names the query set a cached truth belongs to. */
function setHash(qs: Float32Array[]): string {
  let h = 0x811c9dc5;
  for (const q of qs) {
    const b = new Uint8Array(q.buffer, q.byteOffset, q.byteLength);
    for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** Every file of `from` (not the bench's own records) hard-linked into `to` (copied across devices). */
function linkIndex(from: string, to: string): void {
  for (const name of fs.readdirSync(from)) {
    if (name.endsWith('.json')) continue;
    try {
      fs.linkSync(path.join(from, name), path.join(to, name));
    } catch {
      fs.copyFileSync(path.join(from, name), path.join(to, name));
    }
  }
}

interface RunOpts {
  N: number;
  Q: number;
  native: ReturnType<typeof addon>;
  /** --sweep: the shares of the rows the lists are taken to, every probed row reranked (one reopen each). */
  shares: number[];
  /** --margins: probeMargin and the cap's share of the rows, each measured on one reopen. */
  margins: { margin: number; share: number; rerank: number }[];
  /** Directory of the cached unpartitioned index and truths, or null: build in the run's tmp. */
  cache: string | null;
  corpus: Corpus;
  /** Called after each phase: writes the figures so far. */
  progress: () => void;
}

interface Built {
  n: number;
  corpus: string;
  addUs: number;
  distinct: number;
  date: string;
}

async function run(ctx: Ctx, { N, Q, native, shares: sweepShares, margins, cache, corpus, progress }: RunOpts): Promise<void> {
  const data = corpus === 'topics' ? { spans: [] as { text: string }[], real: 0, sources: [] as string[] } : loadData(Math.min(N, BASE));
  const baseTexts = data.spans.map((s) => s.text);
  const realTexts = baseTexts.slice(0, data.real);
  if (corpus === 'repeat' && realTexts.length === 0) throw new Error('--corpus repeat needs the real turns under ../shared/data');
  /** Text of span i in the repeat corpus. */
  const repeatText = (i: number) => {
    const copy = Math.floor(i / realTexts.length);
    const t = realTexts[i % realTexts.length]!;
    return copy === 0 ? t : `${t} copy${copy}`;
  };
  ctx.info.data =
    corpus === 'topics'
      ? {
          spans: N,
          corpus,
          topics: TOPIC_COUNT,
          detail: 'every span generated about one of the topics (bench/data.ts topicGenerator); questions generated from one topic each (topicQuestions)',
        }
      : corpus === 'repeat'
        ? {
            spans: N,
            corpus,
            real: realTexts.length,
            detail: `${realTexts.length} real pieces repeated to ${N}, each copy with a distinct suffix word`,
            sources: data.sources.filter((x) => x !== 'generator'),
          }
        : { spans: N, corpus, real: data.real, generated: N - data.real, sources: [...data.sources, ...(N > BASE ? ['generator chunks'] : [])] };
  ctx.log(
    `vectors: ${N} (${corpus === 'topics' ? `topical spans over ${TOPIC_COUNT} topics` : corpus === 'repeat' ? 'real turns repeated with distinct suffixes' : `${data.real} real turns' pieces, the rest generated`}), ${DIMS} dims`,
  );

  // ---- the unpartitioned base index: built (embed on two workers, add in chunks) or reopened ---
  const base = cache ?? ctx.tmp('vec-base');
  const builtFile = path.join(base, 'built.json');
  let built: Built | null = fs.existsSync(builtFile) ? (JSON.parse(fs.readFileSync(builtFile, 'utf8')) as Built) : null;
  if (built && (built.n !== N || built.corpus !== corpus)) built = null;
  let ix: NativeVectorIndex;
  if (built) {
    const o0 = performance.now();
    ix = new native.VectorIndex(base, { ...FLAT_OPTS, readOnly: true });
    ctx.log(`reopened the cached index ${base} (built ${built.date}) in ${((performance.now() - o0) / 1000).toFixed(1)} s`);
    if (Number(ix.stats().countRaw) !== N) throw new Error(`cached index ${base} holds ${ix.stats().countRaw} vectors, not ${N}`);
  } else {
    fs.rmSync(base, { recursive: true, force: true });
    fs.mkdirSync(base, { recursive: true });
    ix = new native.VectorIndex(base, FLAT_OPTS);
    const addUs = await build(ctx, ix, N, corpus, baseTexts, repeatText);
    ix.save(); // unpartitioned snapshot: what a later run reopens
    built = { n: N, corpus, addUs, distinct: Number(ix.stats().graphRaw), date: new Date().toISOString() };
    fs.writeFileSync(builtFile, JSON.stringify(built));
  }
  const distinct = built.distinct;
  figure(ctx, {
    group: 'vector',
    key: 'vector.scale.add',
    label: `add (normalize, f16 row, 512-bit signature, vectors.bin append; unpartitioned), per vector`,
    value: built.addUs,
    unit: 'µs',
    better: 'lower',
    note: `${N} vectors, ${distinct} distinct, batches of ${CHUNK}${cache ? `; measured when the cached index was built, ${built.date}` : ''}`,
  });
  progress();

  // ---- queries ------------------------------------------------------------------------------
  let seed = 0x51ab;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
  const picks = Array.from({ length: Q }, () => Math.floor(rand() * N)).sort((a, b) => a - b);
  const quoteTexts: string[] = [];
  let chunk = -1;
  let texts: string[] = [];
  for (const i of picks) {
    let t: string;
    if (corpus === 'repeat') t = repeatText(i);
    else if (corpus === 'topics') {
      const k = Math.floor(i / CHUNK);
      // Only as far into the chunk as its last pick: generating a whole chunk takes seconds.
      if (k !== chunk) (texts = topicChunkTexts(k, 1 + Math.max(...picks.filter((x) => Math.floor(x / CHUNK) === k).map((x) => x % CHUNK)))), (chunk = k);
      t = texts[i % CHUNK]!;
    } else if (i < BASE) t = baseTexts[i]!;
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
  const questionTexts =
    corpus === 'topics'
      ? topicQuestions(Q, 0x9e57)
      : fs.existsSync(nq)
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
  const sets: { name: string; key: string; qs: Float32Array[] }[] = [{ name: 'quotes of 60–200 characters', key: 'quotes', qs: toRows(quoteTexts) }];
  if (questionTexts.length > 0)
    sets.push({ name: corpus === 'topics' ? 'topical questions' : 'natural questions', key: 'questions', qs: toRows(questionTexts) });

  // ---- the exact scan: its latency, and the truth (top-100, cached beside the index) --------
  const timed = sets[0]!.qs.slice(0, 50);
  ctx.log(`exact scan over ${N}: ${timed.length} quotes timed`);
  const ex = measure(ix, timed, null, 'exact');
  figure(ctx, {
    group: 'vector',
    key: 'vector.scale.exact',
    label: `top-10 exact scan (f16 rows, NumKong), ${sets[0]!.name} (${timed.length})`,
    value: ex.p50,
    p99: ex.p99,
    unit: 'µs',
    better: 'lower',
  });
  const truths = new Map<string, Truth[]>();
  for (const set of sets) {
    const file = path.join(base, `truth-${set.key}-${setHash(set.qs)}.json`);
    if (cache && fs.existsSync(file)) {
      truths.set(set.key, JSON.parse(fs.readFileSync(file, 'utf8')) as Truth[]);
      continue;
    }
    ctx.log(`exact top-${DEEP} over ${N} for ${set.qs.length} ${set.name}`);
    const t = measure(ix, set.qs, null, 'exact', DEEP).answers.map((a) => ({ ids: [...a.ids], d: [...a.distances] }));
    truths.set(set.key, t);
    if (cache) fs.writeFileSync(file, JSON.stringify(t));
  }

  // ---- the gap: how far the exact 11th…100th neighbours lie above the 10th -------------------
  for (const set of sets) {
    const t = truths.get(set.key)!.filter((x) => x.d.length >= DEEP);
    if (t.length === 0) continue;
    const gap11 = t.map((x) => x.d[10]! - x.d[9]!);
    const gap100 = t.map((x) => x.d[DEEP - 1]! - x.d[9]!);
    const within = t.map((x) => x.d.slice(10).filter((d) => d <= x.d[9]! + EPS).length);
    const tied = within.filter((w) => w > 0).length / t.length;
    figure(ctx, {
      group: 'vector',
      key: `vector.scale.gap.${set.key}`,
      label: `exact neighbours, ${set.name}: distance of the 100th above the 10th, median (11th above 10th: median ${pct(gap11, 0.5).toExponential(2)}; ${(100 * tied).toFixed(0)}% of queries have an 11th–100th within ${EPS} of the 10th, median ${pct(within, 0.5)} of those 90 rows)`,
      value: pct(gap100, 0.5),
      unit: 'cosine distance',
      better: 'higher',
      note: `10th neighbour's distance: median ${pct(
        t.map((x) => x.d[9]!),
        0.5,
      ).toFixed(4)}; 90th percentile of rows within ${EPS}: ${pct(within, 0.9)}`,
    });
    ctx.info[`gap.${set.key}`] = {
      gap11Median: pct(gap11, 0.5),
      gap100Median: pct(gap100, 0.5),
      tiedShare: tied,
      withinMedian: pct(within, 0.5),
      withinP90: pct(within, 0.9),
    };
  }

  progress();

  // ---- the unpartitioned scan ---------------------------------------------------------------
  ctx.log('unpartitioned signature scan');
  for (const set of sets) {
    const flat = measure(ix, set.qs, truths.get(set.key)!, 'binary');
    figure(ctx, {
      group: 'vector',
      key: `vector.scale.flat.${set.key}`,
      label: `top-10 unpartitioned signature scan (every row; pool max(512, N/512)), ${set.name} (${rTag(flat)})`,
      value: flat.p50,
      p99: flat.p99,
      unit: 'µs',
      better: 'lower',
    });
  }
  ix.close();
  progress();

  // ---- partitioned: the open of the unpartitioned snapshot partitions it ---------------------
  const dir = ctx.tmp('vec');
  linkIndex(base, dir);
  const p0 = performance.now();
  ix = new native.VectorIndex(dir, STORE_OPTS);
  const partitionMs = performance.now() - p0;
  const s0 = performance.now();
  ix.save();
  const saveMs = performance.now() - s0;
  const st = ix.stats();
  figure(ctx, {
    group: 'vector',
    key: 'vector.scale.partition',
    label: `open + partition (${st.listsRaw} lists, k-means over ${Math.min(N, 64 * Number(st.listsRaw))} sampled rows, every row assigned)`,
    value: partitionMs,
    unit: 'ms',
    better: 'lower',
  });
  figure(ctx, {
    group: 'vector',
    key: 'vector.scale.save',
    label: 'checkpoint of the partitioned index (snapshot write + fsync)',
    value: saveMs,
    unit: 'ms',
    better: 'lower',
  });
  for (const set of sets) {
    const before = probedSoFar(ix);
    const ivf = measure(ix, set.qs, truths.get(set.key)!);
    const probed = probedSince(ix, before);
    figure(ctx, {
      group: 'vector',
      key: `vector.scale.ivf.${set.key}`,
      label: `top-10 partitioned (the index's defaults: ${st.probeShare !== undefined ? `nearest lists to max(${st.probeMin}, N × ${Number(st.probeShare).toPrecision(3)}) rows` : ''}${st.probeRerank !== undefined ? `, pool ${st.probeRerank}` : ''}, ${Number(st.searchThreads ?? 1)} threads), ${set.name} (${rTag(ivf)})`,
      value: ivf.p50,
      p99: ivf.p99,
      unit: 'µs',
      better: 'lower',
      note: `target at 10^7: p50 ≤ 10 ms at recall@10 ≥ 0.95; probed per query: ${probed}`,
    });
    check(
      ctx,
      `partitioned strict recall@10 vs the exact scan, ${set.name} (≥ 0.95)`,
      ivf.recall >= 0.95,
      `r = ${ivf.recall.toFixed(4)}, ra = ${ivf.recallAnn.toFixed(4)} over ${set.qs.length} queries`,
      set.key === 'questions',
    );
    check(
      ctx,
      `partitioned ann-benchmarks recall@10, ${set.name} (≥ 0.95)`,
      ivf.recallAnn >= 0.95,
      `ra = ${ivf.recallAnn.toFixed(4)} over ${set.qs.length} queries`,
      set.key === 'questions',
    );
    if (N >= 1e7) check(ctx, `partitioned p50 at 10^7 ≤ 10 ms, ${set.name}`, ivf.p50 <= 10_000, `p50 ${(ivf.p50 / 1000).toFixed(2)} ms`);
  }
  const memory = Number(ix.stats().memoryBytes);
  ix.close();
  // The same search on the calling thread alone: what one core gives (the peers' rows above
  // run on one thread too).
  ix = new native.VectorIndex(dir, { ...STORE_OPTS, searchThreads: 1, readOnly: true });
  for (const set of sets) {
    const one = measure(ix, set.qs, truths.get(set.key)!);
    figure(ctx, {
      group: 'vector',
      key: `vector.scale.ivf1.${set.key}`,
      label: `top-10 partitioned, the same on 1 thread, ${set.name} (${rTag(one)})`,
      value: one.p50,
      p99: one.p99,
      unit: 'µs',
      better: 'lower',
    });
  }
  ix.close();
  progress();

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
    label: 'index memory per vector (stats().memoryBytes: f16 rows, signatures in lists, keys, ordinals, search scratch)',
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
  ctx.info.vectorScale = {
    lists: st.listsRaw,
    distinct,
    partitionMs,
    saveMs,
    openMs,
    vectorsBin,
    snapshot: snap,
    memoryBytes: memory,
    options: STORE_OPTS,
    cache,
  };
  progress();

  // ---- --margins: the partitioned search with other probeMargin and caps (one reopen each) ----
  for (const { margin, share, rerank } of margins) {
    ix = new native.VectorIndex(dir, { ...STORE_OPTS, probeMargin: margin, probeShare: share, probeRerank: rerank, readOnly: true });
    for (const set of sets) {
      const before = probedSoFar(ix);
      const m = measure(ix, set.qs, truths.get(set.key)!);
      figure(ctx, {
        group: 'vector',
        key: `vector.scale.ivf-margin.${set.key}.${margin}.1/${Math.round(1 / share)}.${rerank}`,
        label: `top-10 partitioned, ${Number.isFinite(margin) ? `lists within ${margin} of the nearest` : 'nearest lists'} up to max(${STORE_OPTS.probeMin}, N/${Math.round(1 / share)}) rows, pool ${rerank}, ${set.name} (${rTag(m)})`,
        value: m.p50,
        p99: m.p99,
        unit: 'µs',
        better: 'lower',
        note: `probed per query: ${probedSince(ix, before)}`,
      });
    }
    ix.close();
    progress();
  }

  // ---- where the partitioned search loses recall: the lists, or the pool -------------------
  // The same snapshot with every probed row reranked exactly: its recall is the share of the
  // true top-10 that lie in the lists probed (what the partition can find at all); the
  // unpartitioned scan's recall above is what the pool loses by itself. --sweep: the same
  // with the nearest lists taken to 1/256 … 1/4 of the rows (one open each).
  // At 10^7 each open reads 5 GB of rows back: without --sweep the lists' share is left out there.
  const shares: (number | null)[] = [...(N < 1e7 || sweepShares.length > 0 ? [null] : []), ...sweepShares];
  for (const share of shares) {
    ix = new native.VectorIndex(dir, { ...STORE_OPTS, rerankMin: 1e7, probeRerank: 1e7, ...(share ? { probeMin: 1, probeShare: share } : {}), readOnly: true });
    for (const set of sets) {
      const all = measure(ix, set.qs, truths.get(set.key)!);
      const what = share ? `lists to 1/${Math.round(1 / share)} of the rows` : 'the defaults’ lists';
      figure(ctx, {
        group: 'vector',
        key: `vector.scale.ivf-lists.${set.key}${share ? `.1/${Math.round(1 / share)}` : ''}`,
        label: `top-10 partitioned, ${what}, every probed row reranked exactly (recall = the probed lists' share of the true top-10), ${set.name} (${rTag(all)})`,
        value: all.p50,
        p99: all.p99,
        unit: 'µs',
        better: 'lower',
      });
    }
    ix.close();
    progress();
  }
}

/** Embeds spans [0, N) on two workers and adds them in order in chunks; returns µs per vector added. */
async function build(ctx: Ctx, ix: NativeVectorIndex, N: number, corpus: Corpus, baseTexts: string[], repeatText: (i: number) => string): Promise<number> {
  const workers = [0, 1].map(() => new Worker(fileURLToPath(import.meta.url)));
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
    const texts =
      corpus === 'topics'
        ? undefined
        : corpus === 'repeat'
          ? Array.from({ length: to - from }, (_, j) => repeatText(from + j))
          : from < BASE
            ? baseTexts.slice(from, to)
            : undefined;
    workers[sent % 2]!.postMessage({ from, to, ...(texts ? { texts } : {}), ...(corpus === 'topics' ? { topics: true } : {}) });
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
  return (addMs * 1000) / N;
}
