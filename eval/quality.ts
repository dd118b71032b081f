/**
 * Retrieval quality on the real transcripts in shared/data:
 *   - findExact on each question's answer: is the evidence turn returned?
 *   - search with the question text: recall@1, recall@10 and MRR of the evidence turn; and
 *     recall@10 of the same question in plain words (quotes and the leading "In <episode>,"
 *     framing removed), which goes through the lexical/vector path and the coverage rule;
 *   - honest misses: never-stated values (real anchor facts with their numbers or
 *     identifiers perturbed) must come back as misses, while the true values are found.
 *
 * Probes. Raw spans are sampled uniformly (seeded); the span's anchor fact (src/anchors.ts,
 * a verbatim line of at most 160 chars) is the true value, and `perturb(fact, v)` for the
 * first v that findExact finds nowhere is the never-stated one. `perturb` changes every
 * number in the fact; a fact without digits gets one letter of its longest identifier
 * changed. Made fairer on 2026-11-30 (see src/anchors.ts): the changed character is always a
 * letter, replaced by a different letter of the same case. Before, a `_` could become a
 * backtick or other punctuation (`DJANGO_SETTINGS` -> `DJANGO` + "`" + `SETTINGS`: the same
 * words to any tokenizer) and one variant in 26 only changed the letter's case
 * (`SETTiNGS`), which a case-insensitive search rightly finds: those probes were not
 * never-stated values. Numbers: every number is still perturbed, single digits included.
 * The headline set of `--misses` probes takes facts with a distinctive value (a multi-digit
 * number, a decimal, a number with a unit, an identifier with digits: `distinctiveValue`);
 * facts whose numbers are all single bare digits (`6. Update ...`, `table_id = 1`, `found 5
 * actions`) are near-true when perturbed (`found 6 actions` is stated elsewhere too), so
 * they are measured apart and printed as "weak probes", never silently dropped. And a
 * variant whose every changed number stands, with the same words around it, somewhere else
 * in the transcript (`isNearTrue`: "│    collected 14 items" when another run printed
 * "collected 14 items"; "⎿  Read 10 lines" stated with a no-break space) is skipped for
 * the next variant; facts with only such variants are measured and printed as "near-true
 * probes". Every other near-true probe in the headline set counts as a failure.
 *
 * Usage: npm run quality -- [--dataset miniswe|bookminder|all|<folder>] [--unit exchange|turn] [--dir D] [--min-coverage X]
 *                           [--limit N] [--misses N] [--json] [--natural-only] [--failures]
 * After the verbatim sets, the natural questions (eval/natural.ts) are measured on the same
 * datasets, one span per turn, with SQLite FTS5 and MiniSearch as peers in the same run;
 * `--natural-only` runs only those, `--failures` prints spanguard's failures on them.
 * `--unit exchange` (default) stores a tool call and its result as one raw span (a span may
 * cover a few consecutive turns); `--unit turn` stores one span per turn. The questions name
 * a command and ask for its output: with `--unit turn` the command and the output are two
 * spans, so the evidence turn itself does not contain the words of the question (the line
 * "evidence turn or the call turn before it" shows that search finds the call).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { SpanStore } from '../src/store.js';
import { DEFAULT_MATCH_POLICY, type MatchPolicy } from '../src/match.js';
import { detectAnchor, distinctiveValue, perturb } from '../src/anchors.js';
import { prng } from '../src/prng.js';
import { packageRoot } from '../src/native.js';
import { runNatural } from './natural.js';
import { DATASETS, ingest, loadDataset, type Dataset } from './dataset.js';

export { ingest, loadDataset, toSpans, type Dataset } from './dataset.js';


export interface QualityReport {
  dataset: string;
  unit: 'exchange' | 'turn';
  turns: number;
  spans: number;
  ingestSeconds: number;
  ingestSpansPerSecond: number;
  questions: number;
  exactRecall: number;
  recallAt1: number;
  recallAt10: number;
  mrr: number;
  /** recall@10 of the natural-language form of the questions (see naturalQuestion). */
  naturalRecallAt10: number;
  /** recall@10 of the evidence turn or the turn just before it (the call, for `--unit turn`). */
  callRecallAt10: number;
  searchP50Ms: number;
  searchP99Ms: number;
  honestMisses: { probes: number; missed: number; trueFound: number; rate: number; trueRate: number };
  /** Probes from facts whose numbers are all single bare digits (see distinctiveValue), reported apart. */
  weakMisses: { probes: number; missed: number; trueFound: number; rate: number; trueRate: number };
  /** Facts whose every perturbation was near-true (see isNearTrue), reported apart. */
  nearTrueMisses: { probes: number; missed: number; trueFound: number; rate: number; trueRate: number };
  failures: { question: string; rank: number | null }[];
  /**
   * Never-stated probes search did not call a miss, with its top hit; `spanId: null` when it
   * returned no hit without a miss (a verbatim scan cut short: `exactPartial`, which never
   * says miss).
   */
  falseHits: { query: string; spanId: number | null; text: string; exactPartial?: true }[];
  weakFalseHits: { query: string; spanId: number | null; text: string; exactPartial?: true }[];
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

/**
 * The question without its quotes and without its leading "In <where>," framing (an episode
 * or file name that the transcript text never prints): a natural-language query that must
 * go through the lexical/vector path and the coverage rule, not the phrase path. This is
 * the positive side of the minCoverage calibration.
 */
export const naturalQuestion = (q: string) => q.replace(/^In [^,]+, /, '').replace(/`/g, '');

export interface Probe {
  /** A verbatim anchor fact of a raw span (true: must be found). */
  fact: string;
  /** The same fact perturbed so that findExact finds it nowhere (never stated: must miss). */
  never: string;
  spanId: number;
}

/**
 * Never-stated probes: anchor facts (src/anchors.ts) of raw spans sampled uniformly across
 * the session, each perturbed with `perturb` until findExact finds it nowhere.
 */
export function neverStatedProbes(store: SpanStore, n: number, seed = 20261130): { probes: Probe[]; weak: Probe[]; nearTrue: Probe[] } {
  const rand = prng(seed);
  const next = store.stats().nextId;
  const probes: Probe[] = [];
  const weak: Probe[] = [];
  const nearTrue: Probe[] = [];
  for (let tries = 0; probes.length < n && tries < n * 50; tries++) {
    const id = 1 + Math.floor(rand() * (next - 1));
    const s = store.get(id);
    if (!s || s.kind !== 'raw') continue;
    const fact = detectAnchor(s.text, s.role)?.fact;
    if (!fact || fact.length < 12) continue;
    let never: string | null = null;
    let near: string | null = null;
    for (let v = 0; v < 8 && never === null; v++) {
      const p = perturb(fact, v + tries);
      if (p === fact || store.findExact(p, { limit: 1 }).length > 0) continue;
      if (isNearTrue(store, p)) near ??= p;
      else never = p;
    }
    if (never !== null) (distinctiveValue(fact) ? probes : weak).push({ fact, never, spanId: id });
    else if (near !== null) nearTrue.push({ fact, never: near, spanId: id });
  }
  return { probes, weak, nearTrue };
}

/**
 * A perturbation is near-true when every number it changed is stated elsewhere in the
 * transcript with the same words around it: `│    collected 14 items` (box and padding
 * never stated, "collected 14 items" stated in another run), `⎿  Read 10 lines` (stated
 * with a no-break space), `Normal article ID: 2` ("ID: 2" stated for the special article).
 * Such a variant is skipped for the next one; a fact whose variants are all near-true is
 * measured and reported apart, not dropped. A number without a word next to it cannot make
 * a variant near-true.
 */
export function isNearTrue(store: SpanStore, perturbed: string): boolean {
  const around = /(?:[\p{L}_][\p{L}\p{N}_]*[^\p{L}\p{N}\n]{1,3})?[+\-]?\d+(?:[.,]\d+)*%?(?:[^\p{L}\p{N}\n]{1,3}[\p{L}_][\p{L}\p{N}_]*)?/gu;
  const phrases = [...perturbed.matchAll(around)].map((m) => m[0]);
  if (phrases.length === 0 || phrases.some((p) => !/\p{L}/u.test(p))) return false;
  return phrases.every((p) => store.findExact(p, { limit: 1 }).length > 0);
}

/**
 * A fact whose numbers are all single bare digits (`6. Update the docstring`, `table_id = 1`,
 * `found 5 actions`, `Normal article ID: 2`) makes a weak probe: its perturbation (`7.`,
 * `= 2`, `found 6 actions`) is very often stated somewhere else in a 10^4-turn transcript in
 * the same words, a near-true statement rather than a never-stated value. The headline set
 * takes facts with at least one multi-digit number, decimal, number with a unit, or
 * identifier with digits; the weak ones are measured and reported apart, not dropped.
 */
export { distinctiveValue };

export type Measures = Omit<QualityReport, 'dataset' | 'unit' | 'turns' | 'spans' | 'ingestSeconds' | 'ingestSpansPerSecond'>;

export async function measure(store: SpanStore, ds: Dataset, misses: number): Promise<Measures> {
  const covers = (h: { turnStart: number; turnEnd: number }, evidence: number[]) => evidence.some((e) => h.turnStart <= e && e <= h.turnEnd);
  let exact = 0;
  let r1 = 0;
  let r10 = 0;
  let mrr = 0;
  let nat10 = 0;
  let call10 = 0;
  const times: number[] = [];
  const failures: QualityReport['failures'] = [];
  for (const q of ds.questions) {
    // Every verbatim question has an answer; a null one ("not in transcript") has no evidence to find.
    if (q.answer !== null && store.findExact(q.answer).some((h) => covers(h, q.evidenceTurns))) exact++;
    const s0 = performance.now();
    const r = await store.search(q.question, { k: 10 });
    times.push(performance.now() - s0);
    const rank = r.hits.findIndex((h) => h.kind === 'raw' && covers(h, q.evidenceTurns));
    if (rank === 0) r1++;
    if (rank >= 0) {
      r10++;
      mrr += 1 / (rank + 1);
    } else failures.push({ question: q.question, rank: null });
    // With one span per turn the command is in the turn before its output: does search find it?
    if (r.hits.some((h) => h.kind === 'raw' && covers(h, q.evidenceTurns.flatMap((e) => [e - 1, e])))) call10++;
    const nat = await store.search(naturalQuestion(q.question), { k: 10 });
    if (nat.hits.some((h) => h.kind === 'raw' && covers(h, q.evidenceTurns))) nat10++;
  }

  const { probes, weak, nearTrue } = neverStatedProbes(store, misses);
  const run = async (set: Probe[], falseHits: QualityReport['falseHits']) => {
    let missed = 0;
    let trueFound = 0;
    for (const p of set) {
      const neg = await store.search(p.never, { k: 10 });
      if (neg.miss) missed++;
      else if (falseHits.length < 50) {
        const top = neg.hits[0];
        falseHits.push({ query: p.never, spanId: top?.spanId ?? null, text: top?.text.slice(0, 300) ?? '', ...(neg.exactPartial ? { exactPartial: true as const } : {}) });
      }
      const pos = await store.search(p.fact, { k: 10 });
      if (!pos.miss && pos.hits.some((h) => h.text.includes(p.fact))) trueFound++;
    }
    const m = set.length;
    return { probes: m, missed, trueFound, rate: m ? missed / m : 0, trueRate: m ? trueFound / m : 0 };
  };
  const falseHits: QualityReport['falseHits'] = [];
  const weakFalseHits: QualityReport['falseHits'] = [];
  const honestMisses = await run(probes, falseHits);
  const weakMisses = await run(weak, weakFalseHits);
  const nearTrueMisses = await run(nearTrue, []);
  const n = ds.questions.length;
  return {
    questions: n,
    exactRecall: n ? exact / n : 0,
    recallAt1: n ? r1 / n : 0,
    recallAt10: n ? r10 / n : 0,
    mrr: n ? mrr / n : 0,
    naturalRecallAt10: n ? nat10 / n : 0,
    callRecallAt10: n ? call10 / n : 0,
    searchP50Ms: pct(times, 50),
    searchP99Ms: pct(times, 99),
    honestMisses,
    weakMisses,
    nearTrueMisses,
    failures: failures.slice(0, 30),
    falseHits,
    weakFalseHits,
  };
}

export async function evaluate(name: string, o: { unit: 'exchange' | 'turn'; limit?: number; misses: number; dir?: string; matchPolicy?: MatchPolicy }): Promise<QualityReport> {
  const ds = loadDataset(name, o.unit, o.limit);
  const dir = o.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), `spanguard-quality-${path.basename(ds.label)}-`));
  if (o.dir) fs.mkdirSync(o.dir, { recursive: true });
  const { store, ingestSeconds } = await ingest(ds, dir, o.matchPolicy);
  try {
    const m = await measure(store, ds, o.misses);
    return {
      dataset: ds.label,
      unit: o.unit,
      turns: ds.turns,
      spans: ds.spans.length,
      ingestSeconds,
      ingestSpansPerSecond: ds.spans.length / ingestSeconds,
      ...m,
    };
  } finally {
    await store.close();
    if (!o.dir) fs.rmSync(dir, { recursive: true, force: true });
  }
}

function format(r: QualityReport): string {
  const f = (x: number) => x.toFixed(3);
  return [
    `${r.dataset} (${r.unit} spans): ${r.turns} turns -> ${r.spans} spans, ingest ${r.ingestSeconds.toFixed(1)} s (${Math.round(r.ingestSpansPerSecond)} spans/s)`,
    `  findExact(answer) returns the evidence turn: ${f(r.exactRecall)} of ${r.questions}`,
    `  search(question): recall@1 ${f(r.recallAt1)}  recall@10 ${f(r.recallAt10)}  MRR ${f(r.mrr)}  (p50 ${r.searchP50Ms.toFixed(2)} ms, p99 ${r.searchP99Ms.toFixed(2)} ms)`,
    `  search(question without quotes and "In <where>," framing): recall@10 ${f(r.naturalRecallAt10)}`,
    ...(r.unit === 'turn' ? [`  search(question): recall@10 of the evidence turn or the call turn before it ${f(r.callRecallAt10)}`] : []),
    `  honest misses: ${r.honestMisses.missed}/${r.honestMisses.probes} never-stated values missed (${f(r.honestMisses.rate)}); true values found ${r.honestMisses.trueFound}/${r.honestMisses.probes} (${f(r.honestMisses.trueRate)})`,
    `  weak probes (single bare digits only, met on the way): ${r.weakMisses.missed}/${r.weakMisses.probes} missed (${f(r.weakMisses.rate)}); true found ${r.weakMisses.trueFound}/${r.weakMisses.probes} (${f(r.weakMisses.trueRate)})`,
    `  near-true probes (every variant stated elsewhere in the same words): ${r.nearTrueMisses.missed}/${r.nearTrueMisses.probes} missed (${f(r.nearTrueMisses.rate)})`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dataset: { type: 'string', default: 'all' },
      unit: { type: 'string', default: 'exchange' },
      limit: { type: 'string' },
      misses: { type: 'string', default: '1000' },
      json: { type: 'boolean' },
      dir: { type: 'string' },
      'min-coverage': { type: 'string' },
      'natural-only': { type: 'boolean' },
      failures: { type: 'boolean' },
      'no-host-model': { type: 'boolean' },
    },
  });
  const names = values.dataset === 'all' ? Object.keys(DATASETS) : [values.dataset!];
  const limit = values.limit ? Number(values.limit) : undefined;
  if (!values['natural-only']) {
    const unit = values.unit === 'turn' ? 'turn' : 'exchange';
    const reports: QualityReport[] = [];
    for (const name of names) {
      const r = await evaluate(name, {
        unit,
        misses: Number(values.misses),
        ...(limit ? { limit } : {}),
        // --dir keeps the ingested store there and reuses it on the next run (threshold sweeps).
        ...(values.dir ? { dir: names.length > 1 ? path.join(values.dir, name) : values.dir } : {}),
        ...(values['min-coverage'] ? { matchPolicy: { ...DEFAULT_MATCH_POLICY, minCoverage: Number(values['min-coverage']) } } : {}),
      });
      reports.push(r);
      if (!values.json) console.log(format(r));
    }
    const out = path.join(packageRoot, 'bench', 'results', `quality-${unit}.json`);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, JSON.stringify(reports, null, 2));
    if (values.json) console.log(JSON.stringify(reports, null, 2));
    else console.log(`written ${path.relative(process.cwd(), out)}`);
  }
  // The natural questions on the same datasets: one span per turn, in stores of their own
  // (with --dir D: D-natural/<dataset>, beside the verbatim stores, never inside one), with
  // the FTS5 and MiniSearch peers in the same run.
  await runNatural({
    datasets: names,
    ...(values.dir ? { dir: `${path.resolve(values.dir)}-natural` } : {}),
    ...(limit ? { limit } : {}),
    failures: values.failures === true,
    json: values.json === true,
    hostModel: values['no-host-model'] !== true,
  });
}

if (process.argv[1] && path.resolve(process.argv[1]).endsWith(path.join('eval', 'quality.js'))) {
  main().catch((e) => {
    console.error(e);
    process.exitCode = 1;
  });
}
