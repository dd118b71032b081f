// BM25 top-k: ordering sanity, k, namespaces, turn filters, and an exhaustive oracle on real
// transcript turns (MaxScore must return exactly what scoring every document would).
import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { addon } from '../../src/native.js';
import { addDocs, asDocs, openIndex, realTurns, rng, tempDir, type Doc, type LexIndex } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
const fresh = (): LexIndex => openIndex(path.join(tmp.dir, `bm25-${n++}.idx`));
const ids = (ix: LexIndex, q: string, k = 10, kind = 1, lo = NaN, hi = NaN) => Array.from(ix.search(q, k, kind, lo, hi).ids);

describe('rare term ranks first', () => {
  it('the only doc with the rare query term is the top hit', () => {
    const ix = fresh();
    const docs: string[] = [];
    for (let i = 0; i < 200; i++) docs.push(`the server answered request ${i % 7} with status ok`);
    docs[137] = 'the server answered with rate limit 40 req/s exceeded';
    addDocs(ix, asDocs(docs));
    const hits = ix.search('server rate limit answered', 5, 1, NaN, NaN);
    expect(hits.ids[0]).toBe(137);
    expect(hits.scores[0]).toBeGreaterThan(hits.scores[1]!);
    for (let i = 1; i < hits.scores.length; i++) expect(hits.scores[i - 1]).toBeGreaterThanOrEqual(hits.scores[i]!);
  });
  it('a query term no document holds contributes nothing, and no term at all is an empty answer', () => {
    const ix = fresh();
    addDocs(ix, asDocs(['alpha beta', 'gamma']));
    expect(ids(ix, 'alpha zzzunknown')).toEqual([0]);
    expect(ids(ix, 'zzzunknown')).toEqual([]);
    expect(ids(ix, '')).toEqual([]);
    expect(ids(ix, '=== ;;; ```')).toEqual([]);
  });
});

describe('k respected', () => {
  it('returns at most k hits, the best ones, ties by ascending span id', () => {
    const ix = fresh();
    addDocs(ix, asDocs(Array.from({ length: 50 }, () => 'same words everywhere')));
    expect(ids(ix, 'words', 3)).toEqual([0, 1, 2]);
    expect(ids(ix, 'words', 1)).toEqual([0]);
    expect(ids(ix, 'words', 100)).toHaveLength(50);
  });
});

describe('query tokens deduplicated', () => {
  it('repeating a query word does not change scores', () => {
    const ix = fresh();
    addDocs(ix, asDocs(['foo bar', 'foo foo baz', 'bar baz']));
    const once = ix.search('foo baz', 10, 1, NaN, NaN);
    const thrice = ix.search('foo foo foo baz FOO', 10, 1, NaN, NaN);
    expect(Array.from(thrice.ids)).toEqual(Array.from(once.ids));
    expect(Array.from(thrice.scores)).toEqual(Array.from(once.scores));
  });
});

describe('namespace separation raw vs summary', () => {
  it('raw and summary are searched separately, with their own statistics', () => {
    const ix = fresh();
    addDocs(ix, [
      { id: 0, kind: 1, text: 'rate limit 40 req/s on the gateway' },
      { id: 1, kind: 2, text: 'summary: the gateway was rate limited' },
      { id: 2, kind: 3, text: 'event: compaction pass rate' },
      { id: 3, kind: 1, text: 'unrelated raw text' },
    ]);
    expect(ids(ix, 'rate gateway', 10, 1)).toEqual([0]);
    expect(ids(ix, 'rate gateway', 10, 2)).toEqual([1]);
    expect(ids(ix, 'compaction', 10, 1)).toEqual([]);
    expect(ids(ix, 'compaction', 10, 2)).toEqual([]);
    const s = ix.stats();
    expect(s.rawDocs).toBe(3 - 1);
    expect(s.summaryDocs).toBe(1);
    expect(ix.highWater()).toBe(4);
  });
});

describe('turn filters', () => {
  const docs: Doc[] = [
    { id: 0, turnStart: 1, turnEnd: 1, text: 'needle one' },
    { id: 1, turnStart: 5, turnEnd: 9, text: 'needle two' },
    { id: 2, turnStart: 10, turnEnd: 10, text: 'needle three' },
    { id: 3, kind: 2, turnStart: 1, turnEnd: 10, text: 'needle summary' },
  ];
  it('keeps spans whose [turnStart, turnEnd] overlaps [turnMin, turnMax]; NaN is open', () => {
    const ix = fresh();
    addDocs(ix, docs);
    const sorted = (a: number[]) => a.sort((x, y) => x - y);
    expect(sorted(ids(ix, 'needle', 10, 1, 2, 6))).toEqual([1]);
    expect(sorted(ids(ix, 'needle', 10, 1, 9, 9))).toEqual([1]);
    expect(sorted(ids(ix, 'needle', 10, 1, NaN, 5))).toEqual([0, 1]);
    expect(sorted(ids(ix, 'needle', 10, 1, 6, NaN))).toEqual([1, 2]);
    expect(sorted(ids(ix, 'needle', 10, 1, 11, 20))).toEqual([]);
    expect(sorted(ids(ix, 'needle', 10, 2, 4, 4))).toEqual([3]);
  });
  it('filters before taking the top k (k hits inside the range even if better ones are outside)', () => {
    const ix = fresh();
    const many: Doc[] = [];
    for (let i = 0; i < 100; i++) many.push({ id: i, turnStart: i, turnEnd: i, text: i < 90 ? 'needle needle needle' : 'needle and other words' });
    addDocs(ix, many);
    expect(ids(ix, 'needle', 5, 1, 90, 99).sort((a, b) => a - b)).toEqual([90, 91, 92, 93, 94]);
  });
});

// Scores every document the slow way from the tokenizer's own output, as the index models
// it since tokenizer version 4: a document holds its tokens plus each token's differing
// normal form (its length stays the token count), a query is its tokens' normal forms.
const forms = new Map<string, string>();
function normal(t: string): string {
  let f = forms.get(t);
  if (f === undefined) forms.set(t, (f = addon().normalizeTerm(t)));
  return f;
}
interface Corpus {
  docTokens: string[][];
  tfs: Map<string, number>[];
  df: Map<string, number>;
  avgdl: number;
}
function corpus(ix: LexIndex, texts: string[]): Corpus {
  const docTokens = texts.map((t) => ix.tokenize(t));
  const total = docTokens.reduce((s, t) => s + t.length, 0);
  const tfs = docTokens.map((toks) => {
    const tf = new Map<string, number>();
    for (const t of toks) {
      tf.set(t, (tf.get(t) ?? 0) + 1);
      const f = normal(t);
      if (f !== t) tf.set(f, (tf.get(f) ?? 0) + 1);
    }
    return tf;
  });
  const df = new Map<string, number>();
  for (const tf of tfs) for (const t of tf.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  return { docTokens, tfs, df, avgdl: total / texts.length };
}
// Query-term selection (docs/LEXICAL_FORMAT.md): a query of 6+ distinct terms over 65,536+
// documents leaves out the terms held by more than 1/16 of the documents when a rarer term
// remains.
function selectTerms(q: string[], df: Map<string, number>, N: number): string[] {
  if (q.length < 6 || N < 65536) return q;
  const rare = q.filter((t) => df.get(t)! * 16 <= N);
  return rare.length >= 1 ? rare : q;
}
function oracle(
  ix: LexIndex,
  { docTokens, tfs, df, avgdl }: Corpus,
  query: string,
  k: number,
  keep: (id: number) => boolean = () => true,
): { id: number; score: number }[] {
  const N = docTokens.length;
  const q = selectTerms([...new Set(ix.tokenize(query).map(normal))].filter((t) => df.has(t)), df, N);
  const scored: { id: number; score: number }[] = [];
  docTokens.forEach((toks, id) => {
    if (!keep(id)) return;
    const tf = tfs[id]!;
    let s = 0;
    let any = false;
    for (const term of q) {
      const f = tf.get(term);
      if (!f) continue;
      any = true;
      const d = df.get(term)!;
      const idf = Math.log(1 + (N - d + 0.5) / (d + 0.5));
      s += (idf * f * 2.2) / (f + 1.2 * (0.25 + (0.75 * toks.length) / avgdl));
    }
    if (any) scored.push({ id, score: s });
  });
  scored.sort((a, b) => b.score - a.score || a.id - b.id);
  return scored.slice(0, k);
}

describe('BM25 oracle on real turns', () => {
  it('MaxScore/block-max top-k equals exhaustive scoring (ids and scores) for 60 real queries, k 1–50, with and without turn windows', () => {
    const turns = realTurns(1500);
    const texts = turns.map((t) => t.text);
    const ix = fresh();
    addDocs(ix, asDocs(texts));
    const rand = rng(7);
    const queries: string[] = ['rate limit 40 req/s', 'pytest astropy/timeseries/tests/test_sampled.py', 'ModuleNotFoundError', 'the'];
    while (queries.length < 60) {
      const words = texts[Math.floor(rand() * texts.length)]!.split(/\s+/).filter(Boolean);
      const start = Math.floor(rand() * Math.max(1, words.length - 12));
      queries.push(words.slice(start, start + 2 + Math.floor(rand() * 12)).join(' '));
    }
    const c = corpus(ix, texts);
    const ks = [1, 3, 10, 50];
    queries.forEach((q, qi) => {
      // Vary k and, for every third query, a turn window (turn = id in this corpus).
      const k = ks[qi % ks.length]!;
      const lo = qi % 3 === 2 ? Math.floor(rand() * 1000) : NaN;
      const hi = Number.isNaN(lo) ? NaN : lo + 200 + Math.floor(rand() * 300);
      const want = oracle(ix, c, q, k, (id) => Number.isNaN(lo) || (id >= lo && id <= hi));
      const got = ix.search(q, k, 1, lo, hi);
      expect(got.ids.length, q).toBe(want.length);
      for (let i = 0; i < want.length; i++) {
        expect(got.scores[i], q).toBeCloseTo(want[i]!.score, 3);
        // Where scores are distinguishable, ids must agree exactly.
        const tieNext = i + 1 < want.length && Math.abs(want[i]!.score - want[i + 1]!.score) < 1e-4;
        const tiePrev = i > 0 && Math.abs(want[i]!.score - want[i - 1]!.score) < 1e-4;
        if (!tieNext && !tiePrev) expect(got.ids[i], q).toBe(want[i]!.id);
      }
    });
  });
});

describe('BM25 oracle on a Zipf corpus (long posting lists, skips and block-max)', () => {
  it('top-k equals exhaustive scoring on 20,000 docs with a skewed vocabulary', () => {
    const rand = rng(11);
    const vocab = Array.from({ length: 4000 }, (_, i) => `w${i.toString(36)}x`);
    // Zipf-ish: index = floor(V * u^3) makes low indexes (common words) dominate.
    const word = () => vocab[Math.floor(vocab.length * rand() ** 3)]!;
    const texts = Array.from({ length: 20000 }, () => Array.from({ length: 5 + Math.floor(rand() * 40) }, word).join(' '));
    const ix = fresh();
    addDocs(ix, asDocs(texts));
    const c = corpus(ix, texts);
    const ks = [1, 5, 10, 100];
    for (let qi = 0; qi < 40; qi++) {
      const q = Array.from({ length: 2 + (qi % 7) }, word).join(' ');
      const k = ks[qi % ks.length]!;
      const want = oracle(ix, c, q, k);
      const got = ix.search(q, k, 1, NaN, NaN);
      expect(got.ids.length, q).toBe(want.length);
      for (let i = 0; i < want.length; i++) {
        expect(got.scores[i], q).toBeCloseTo(want[i]!.score, 3);
        const tie = (j: number) => j >= 0 && j < want.length && Math.abs(want[i]!.score - want[j]!.score) < 1e-4;
        if (!tie(i - 1) && !tie(i + 1)) expect(got.ids[i], q).toBe(want[i]!.id);
      }
    }
  });
});

describe('query-term selection for sentence-long queries', () => {
  // 66,000 docs: 8 words every doc may hold (common), a rare word per 40 docs.
  const rand = rng(23);
  const common = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
  const texts = Array.from({ length: 66000 }, (_, i) => {
    const words = Array.from({ length: 6 + Math.floor(rand() * 10) }, () => common[Math.floor(rand() * common.length)]!);
    words.push(`rare${i % 1650}`);
    return words.join(' ');
  });
  const ix = fresh();
  addDocs(ix, asDocs(texts));
  const c = corpus(ix, texts);
  const score = (q: string, k: number) => {
    const got = ix.search(q, k, 1, NaN, NaN);
    return { ids: [...got.ids], scores: [...got.scores] };
  };

  it('a long query drops the common terms when a rarer one remains: same hits and scores as the rare terms alone', () => {
    const long = 'alpha bravo charlie delta echo rare7 rare9';
    expect(score(long, 20)).toEqual(score('rare7 rare9', 20));
    expect(score('alpha bravo charlie delta echo foxtrot rare7', 20)).toEqual(score('rare7', 20));
    // The oracle scores every document with the selected terms.
    const want = oracle(ix, c, long, 20);
    expect(score(long, 20).ids).toEqual(want.map((w) => w.id));
  });

  it('keeps every term for short queries, for queries of common terms only, and in small namespaces', () => {
    // Five terms: not sentence-long, the common terms count.
    expect(score('alpha bravo charlie rare7 rare9', 20)).not.toEqual(score('rare7 rare9', 20));
    expect(score('alpha bravo charlie rare7 rare9', 20).ids).toEqual(oracle(ix, c, 'alpha bravo charlie rare7 rare9', 20).map((w) => w.id));
    // No rare term: nothing is left out (a two-term query of the same words ranks otherwise).
    const none = 'alpha bravo charlie delta echo foxtrot';
    expect(score(none, 20)).not.toEqual(score('alpha bravo', 20));
    expect(score(none, 20).ids).toEqual(oracle(ix, c, none, 20).map((w) => w.id));
    // Under 65,536 documents every term is scored.
    const small = fresh();
    addDocs(small, asDocs(texts.slice(0, 60000)));
    const long = 'alpha bravo charlie delta echo rare7 rare9';
    expect([...small.search(long, 20, 1, NaN, NaN).ids]).not.toEqual([...small.search('rare7 rare9', 20, 1, NaN, NaN).ids]);
  });
});

describe('term at a time when pruning cannot help', () => {
  // 8,000 docs of 30 words every doc may hold (each in ~3/4 of the docs), and a rare word per
  // 20 docs: a query of common words only leaves every term essential, so the index adds the
  // terms' postings into per-document sums instead of walking the documents one by one.
  const rand = rng(31);
  const common = Array.from({ length: 30 }, (_, i) => `qx${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}z`);
  const texts = Array.from({ length: 8000 }, (_, i) => {
    const words = Array.from({ length: 10 + Math.floor(rand() * 50) }, () => common[Math.floor(rand() * common.length)]!);
    words.splice(Math.floor(rand() * words.length), 0, `rare${String.fromCharCode(97 + (i % 20))}${String.fromCharCode(97 + Math.floor((i % 400) / 20))}`);
    return words.join(' ');
  });
  const ix = fresh();
  addDocs(ix, asDocs(texts));
  const c = corpus(ix, texts);
  const accumulated = () => ix.stats().bm25Accumulated as number;
  const expectOracle = (q: string, k: number, lo = NaN, hi = NaN) => {
    const want = oracle(ix, c, q, k, (id) => Number.isNaN(lo) || (id >= lo && id <= hi));
    const got = ix.search(q, k, 1, lo, hi);
    expect(got.ids.length, q).toBe(want.length);
    for (let i = 0; i < want.length; i++) {
      expect(got.scores[i], q).toBeCloseTo(want[i]!.score, 3);
      const tie = (j: number) => j >= 0 && j < want.length && Math.abs(want[i]!.score - want[j]!.score) < 1e-4;
      if (!tie(i - 1) && !tie(i + 1)) expect(got.ids[i], q).toBe(want[i]!.id);
    }
  };

  it('a query of 4 or more common words only is answered term at a time, with the exhaustive top k (any k, with and without turn windows)', () => {
    const ks = [1, 10, 50, 200];
    for (let qi = 0; qi < 24; qi++) {
      const words = new Set<string>();
      while (words.size < 4 + (qi % 10)) words.add(common[Math.floor(rand() * common.length)]!);
      const q = [...words].join(' ');
      const lo = qi % 3 === 2 ? Math.floor(rand() * 6000) : NaN;
      const hi = Number.isNaN(lo) ? NaN : lo + 100 + Math.floor(rand() * 1500);
      const before = accumulated();
      expectOracle(q, ks[qi % ks.length]!, lo, hi);
      expect(accumulated(), q).toBe(before + 1);
    }
  });

  it('the per-document sums start from zero for every query (the same query twice, then another, give the same answers)', () => {
    const q = `${common[1]} ${common[2]} ${common[3]} ${common[6]}`;
    const first = ix.search(q, 25, 1, NaN, NaN);
    const again = ix.search(q, 25, 1, NaN, NaN);
    expect([...again.ids]).toEqual([...first.ids]);
    expect([...again.scores]).toEqual([...first.scores]);
    expectOracle(`${common[4]} ${common[5]} ${common[7]} ${common[8]} ${common[9]}`, 25);
  });

  it('a query of 4 or more words whose postings are few is answered term at a time when the seed leaves them essential', () => {
    // Rare words, each in 20 of the 8,000 documents and no two in one: every document of their
    // lists holds one of them, so a document-at-a-time walk would score each it reaches. Seven
    // of them hold 140 postings, far from a quarter of the documents but over 1/64 of them:
    // the sums are read from the documents the terms touched, not from the range between the
    // first and the last.
    const rare = (i: number) => `rare${String.fromCharCode(97 + (i % 20))}${String.fromCharCode(97 + Math.floor((i % 400) / 20))}`;
    const seven = (from: number) => Array.from({ length: 7 }, (_, j) => rare(from + 21 * j)).join(' ');
    for (const [q, k] of [
      [seven(0), 10],
      [seven(5), 200],
    ] as const) {
      const before = accumulated();
      expectOracle(q, k);
      expect(accumulated(), q).toBe(before + 1);
    }
    // With a turn window: only the touched documents inside it.
    const before = accumulated();
    expectOracle(seven(1), 10, 2000, 6000);
    expect(accumulated()).toBe(before + 1);
    // Four of them (80 postings, under 1/64 of the documents) keep the walk: the sums take 8
    // bytes for every document of the namespace.
    const four = `${rare(0)} ${rare(21)} ${rare(42)} ${rare(399)}`;
    const walked = accumulated();
    expectOracle(four, 10);
    expect(accumulated()).toBe(walked);
  });

  it('a query of fewer than 4 terms stays document at a time (MaxScore soon leaves one out of the walk)', () => {
    const before = accumulated();
    expectOracle(`${common[4]} ${common[5]} ${common[7]}`, 10);
    expectOracle(`${common[10]} ${common[11]}`, 50);
    expect(accumulated()).toBe(before);
  });

  it('a query with a rare word stays document at a time (pruning pays there)', () => {
    const before = accumulated();
    expectOracle(`rarehb ${common[0]} ${common[1]}`, 10);
    expectOracle('rarekm', 10);
    expect(accumulated()).toBe(before);
  });
});
