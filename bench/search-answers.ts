/**
 * What `store.search` answers, query by query, and how long it takes, on a store built by
 * bench/hybrid-scale.ts (real turns at 10^5: `node build/bench-dist/bench/hybrid-scale.js
 * 100000 repeat DIR` leaves it in DIR/spanguard-hybrid-100000-repeat).
 *
 *   npx tsc -p tsconfig.bench.json && node build/bench-dist/bench/search-answers.js STORE_DIR [--answers FILE] [--rounds N]
 *
 * Query sets: the natural questions (../shared/data/natural-questions, 5–20 words), 400 quotes of
 * 60–200 characters cut at word boundaries from the store's own spans (seeded), and 400
 * questions generated from span words (bench/data.ts generatedQuestions, seeded).
 *
 * `--answers FILE`: every query's answer, one JSON line each — the hits (span id, kind, score,
 * via, turns, support: everything but the text), miss, missReason, missDetail, exactPartial.
 * Two builds of the library run over the same store write files that are byte-identical
 * exactly when they answer every query alike: the check that a change to the search path's
 * speed changed no answer.
 *
 * Then `--rounds` rounds (default 3) of every set, call by call, after one warm-up pass:
 * prints each set's wall-time p50 and p99 (µs) over all rounds, one line per set.
 */
import fs from 'node:fs';
import { SpanStore } from '../src/index.js';
import type { SearchResult } from '../src/store/types.js';
import { generatedQuestions, naturalQuestions, wordQuotes } from './data.js';
import { pct, rng } from './lib.js';

const args = process.argv.slice(2);
const dir = args[0];
if (!dir) throw new Error('usage: search-answers.js STORE_DIR [--answers FILE] [--rounds N]');
const opt = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const answersFile = opt('--answers');
const rounds = Number(opt('--rounds') ?? 3);

/** An answer without the hits' texts (the spans are the store's): what two builds must agree on. */
function answerOf(res: SearchResult): unknown {
  return {
    hits: res.hits.map(({ text: _text, ...h }) => h),
    miss: res.miss,
    missReason: res.missReason,
    missDetail: res.missDetail,
    exactPartial: res.exactPartial,
  };
}

const store = await SpanStore.open(dir, { durability: 'none', readOnly: true });
try {
  const texts: string[] = [];
  const end = store.stats().nextId;
  for (let from = 0; from < end; from += 4096) {
    const ids = Array.from({ length: Math.min(4096, end - from) }, (_, i) => from + i);
    for (const s of store.getMany(ids)) if (s && s.kind === 'raw') texts.push(s.text);
  }
  const sets: [string, string[]][] = [
    ['natural', naturalQuestions().map((q) => q.question)],
    ['quotes', wordQuotes(texts, 400)],
    ['generated', generatedQuestions(texts, 400, rng(1234))],
  ];
  if (answersFile) {
    const lines: string[] = [];
    for (const [name, qs] of sets) for (const q of qs) lines.push(JSON.stringify({ set: name, q, answer: answerOf(await store.search(q, { k: 10 })) }));
    fs.writeFileSync(answersFile, `${lines.join('\n')}\n`);
  }
  for (const [, qs] of sets) for (const q of qs) await store.search(q, { k: 10 });
  const walls = new Map<string, number[]>(sets.map(([name]) => [name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const [name, qs] of sets) {
      for (const q of qs) {
        const t0 = performance.now();
        await store.search(q, { k: 10 });
        walls.get(name)!.push((performance.now() - t0) * 1000);
      }
    }
  }
  for (const [name, xs] of walls) console.log(`${name} p50 ${pct(xs, 0.5).toFixed(0)} p99 ${pct(xs, 0.99).toFixed(0)} n ${xs.length}`);
} finally {
  await store.close();
}
