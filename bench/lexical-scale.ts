// The lexical calls one hybrid `store.search` makes, at 10^6 spans, without the store: the
// whole query as a phrase (limit = the search depth) and BM25 top-depth over the query's
// BM25 form (src/query.ts analyzeQuery), on the bench's own spans (bench/data.ts: real turns,
// then the generator). It isolates the lexical tier from embedding and fusion, and it reuses
// one built log + index between runs (the build is minutes on this machine).
//
//   npx tsc -p tsconfig.bench.json && node build/bench-dist/bench/lexical-scale.js [spans] [cacheDir] [auto|gen]
//
// Defaults: 10^6 spans, cache in $TMPDIR/spanguard-lexscale-<spans>[-gen], data `auto` (real
// turns, then the generator); `gen` takes every span from the generator, whose prose is
// made of ~70 common words: the quotes of common words only, at any scale. Query sets: the natural
// questions (../shared/data/natural-questions, 5–20 words), 400 quotes of 60–200 characters
// cut at word boundaries from the spans, and 400 three-word queries. Each set is run once to
// warm up, then timed per call; p50/p99/max and the slowest queries are printed. The first
// phrase query after an open is timed on its own (the affix arrays' cost, when not mapped).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { analyzeQuery } from '../src/query.js';
import { addon, packageRoot, type NativeLexicalIndex, type NativeSpanLog } from '../src/native.js';
import { loadData } from './data.js';
import { rng } from './lib.js';

const n = Number(process.argv[2] ?? 1e6);
const mode = process.argv[4] === 'gen' ? 'gen' : 'auto';
const cache = process.argv[3] || path.join(os.tmpdir(), `spanguard-lexscale-${n}${mode === 'gen' ? '-gen' : ''}`);
const logDir = path.join(cache, 'log');
const file = path.join(cache, 'lexical.idx');

function now(): number {
  return Number(process.hrtime.bigint()) / 1e3;
}

function pct(xs: number[]): { p50: number; p99: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: s[s.length - 1]! };
}

const fmt = (us: number) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(0)} µs`);

async function build(): Promise<string[]> {
  const data = loadData(n, mode);
  const texts = data.spans.map((s) => s.text);
  if (!fs.existsSync(file)) {
    fs.rmSync(cache, { recursive: true, force: true });
    fs.mkdirSync(cache, { recursive: true });
    const log = new (addon().SpanLog)(logDir, { readOnly: false, durability: 0, segmentBytes: 256 << 20, maxTextBytes: 1 << 24 }) as NativeSpanLog;
    const t0 = now();
    for (let i = 0; i < n; i += 10000) {
      const j = Math.min(n, i + 10000);
      const m = j - i;
      const turns = Float64Array.from(data.spans.slice(i, j), (s) => s.turn);
      await log.append({
        kinds: new Uint8Array(m).fill(1),
        flags: new Uint8Array(m),
        roles: new Uint8Array(m),
        turnStart: turns,
        turnEnd: turns,
        timestamps: new Float64Array(m),
        tokens: new Uint32Array(m),
        texts: texts.slice(i, j),
        metas: new Array(m).fill(null),
      });
    }
    const ix = new (addon().LexicalIndex)(file) as NativeLexicalIndex;
    ix.catchUp(log);
    ix.save();
    await log.close();
    console.log(`built ${n} spans in ${((now() - t0) / 1e6).toFixed(1)} s (${data.real} real, ${data.generated} generated)`);
  }
  return texts;
}

async function main(): Promise<void> {
  const texts = await build();
  const log = new (addon().SpanLog)(logDir, { readOnly: true, durability: 0, segmentBytes: 256 << 20, maxTextBytes: 1 << 24 }) as NativeSpanLog;
  // A cached index written before format version 3 is saved once more, so the open below
  // reads the phrase path's sorted arrays from the file.
  const old = new (addon().LexicalIndex)(file) as NativeLexicalIndex;
  if (old.stats().loadedFrom === 'file' && old.stats().affixSortedTerms === 0) old.save();
  let t0 = now();
  const ix = new (addon().LexicalIndex)(file) as NativeLexicalIndex;
  const openUs = now() - t0;
  if (ix.stats().loadedFrom !== 'file') throw new Error(`index not loaded: ${String(ix.stats().loadError)}`);

  const r = rng(7);
  const quotes: string[] = [];
  const short: string[] = [];
  while (quotes.length < 400) {
    const t = texts[Math.floor(r() * texts.length)]!;
    if (t.length < 220) continue;
    const len = 60 + Math.floor(r() * 141);
    let s = Math.floor(r() * (t.length - len));
    const ws = t.indexOf(' ', s);
    if (ws >= 0 && ws < s + 20) s = ws + 1;
    quotes.push(t.slice(s, s + len).trim());
    const w = t.split(/\s+/).filter(Boolean);
    const i = Math.floor(r() * Math.max(1, w.length - 3));
    short.push(w.slice(i, i + 3).join(' '));
  }
  const nq = path.resolve(packageRoot, '..', 'shared', 'data', 'natural-questions', 'questions.jsonl');
  const questions = fs.existsSync(nq)
    ? fs.readFileSync(nq, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { question: string }).question)
    : [];

  // The first phrase query after open, then the same again (affix arrays: built or mapped).
  t0 = now();
  ix.phrase(log, 'ing the confi', 1, 100);
  const firstPhraseUs = now() - t0;
  t0 = now();
  ix.phrase(log, 'ing the confi', 1, 100);
  const secondPhraseUs = now() - t0;
  console.log(`${n} spans: open ${fmt(openUs)}; first partial-word phrase after open ${fmt(firstPhraseUs)}, second ${fmt(secondPhraseUs)}`);

  for (const [name, set] of [
    ['natural questions', questions],
    ['quotes 60-200 chars', quotes],
    ['three words', short],
  ] as const) {
    if (set.length === 0) continue;
    const a = set.map((q) => {
      const an = analyzeQuery(q);
      return { q, bm25: an.bm25.length > 0 ? an.bm25 : q, depth: an.question ? 100 : 50 };
    });
    const run = () =>
      a.map(({ q, bm25, depth }) => {
        const t1 = now();
        ix.phrase(log, q.trim(), 1, depth);
        const t2 = now();
        ix.search(bm25, depth, 1, Number.NaN, Number.NaN);
        const t3 = now();
        return { q, phrase: t2 - t1, bm25: t3 - t2 };
      });
    run();
    const res = run();
    const ph = pct(res.map((x) => x.phrase));
    const bm = pct(res.map((x) => x.bm25));
    const both = pct(res.map((x) => x.phrase + x.bm25));
    console.log(
      `${name} (${set.length}): phrase p50 ${fmt(ph.p50)} p99 ${fmt(ph.p99)} max ${fmt(ph.max)} | bm25 p50 ${fmt(bm.p50)} p99 ${fmt(bm.p99)} max ${fmt(bm.max)} | both p50 ${fmt(both.p50)} p99 ${fmt(both.p99)}`,
    );
    for (const [by, key] of [
      ['phrase', (x: (typeof res)[number]) => x.phrase],
      ['bm25', (x: (typeof res)[number]) => x.bm25],
    ] as const) {
      for (const x of [...res].sort((p, q) => key(q) - key(p)).slice(0, 3)) {
        console.log(`   slowest ${by}: phrase ${fmt(x.phrase)} bm25 ${fmt(x.bm25)}  ${JSON.stringify(x.q.slice(0, 100))}`);
      }
    }
  }
  await log.close();
}

await main();
