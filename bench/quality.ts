/**
 * Retrieval quality on the real transcripts in shared/data (issue 3):
 *   - findExact on each question's answer: is the evidence turn returned?
 *   - search with the question text: recall@1, recall@10 and MRR of the evidence turn;
 *   - honest misses: never-stated values (real anchor facts with their numbers or
 *     identifiers perturbed) must come back as misses, while the true values are found.
 *
 * Usage: npm run quality -- [--dataset miniswe|bookminder|all] [--unit exchange|turn]
 *                           [--limit N] [--misses N] [--json]
 * `--unit exchange` (default) stores a tool call and its result as one raw span (a span may
 * cover a few consecutive turns); `--unit turn` stores one span per turn.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { SpanStore, type TurnInput } from '../src/store.js';
import { detectAnchor, perturb } from '../src/anchors.js';
import { prng } from '../src/audit.js';
import { packageRoot } from '../src/native.js';
import { parseQuestions, parseTranscript, readText } from '../src/transcript.js';

const DATA = process.env.SPANGUARD_DATA ?? path.resolve(packageRoot, '..', 'shared', 'data');
const DATASETS: Record<string, string> = { miniswe: 'miniswe-gemini3pro-verified', bookminder: 'bookminder-console' };

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
  searchP50Ms: number;
  searchP99Ms: number;
  honestMisses: { probes: number; missed: number; trueFound: number; rate: number; trueRate: number };
  failures: { question: string; rank: number | null }[];
  falseHits: { query: string; spanId: number; text: string }[];
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

/** Groups turns into spans: tool output joins the call that produced it (unit `exchange`). */
export function toSpans(turns: ReturnType<typeof parseTranscript>, unit: 'exchange' | 'turn'): TurnInput[] {
  const out: TurnInput[] = [];
  for (const t of turns) {
    const last = out[out.length - 1];
    if (unit === 'exchange' && t.attachToPrevious && last) {
      last.text += `\n${t.text}`;
      last.turnEnd = t.turn;
      continue;
    }
    out.push({ turn: t.turn, turnEnd: t.turn, role: t.role, text: t.text });
  }
  return out;
}

export async function evaluate(name: string, o: { unit: 'exchange' | 'turn'; limit?: number; misses: number; dir?: string }): Promise<QualityReport> {
  const folder = path.join(DATA, DATASETS[name] ?? name);
  let turns = parseTranscript(readText(path.join(folder, 'turns.jsonl.gz')));
  if (o.limit) turns = turns.slice(0, o.limit);
  const lastTurn = turns[turns.length - 1]?.turn ?? 0;
  const questions = parseQuestions(readText(path.join(folder, 'questions.jsonl'))).filter((q) => q.evidenceTurns.every((t) => t <= lastTurn));
  const spans = toSpans(turns, o.unit);
  const dir = o.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), `spanguard-quality-${name}-`));
  const store = await SpanStore.open(dir, { durability: 'none' });
  try {
    const t0 = performance.now();
    for (let i = 0; i < spans.length; i += 4096) await store.appendMany(spans.slice(i, i + 4096));
    const ingestSeconds = (performance.now() - t0) / 1000;

    const covers = (h: { turnStart: number; turnEnd: number }, evidence: number[]) => evidence.some((e) => h.turnStart <= e && e <= h.turnEnd);
    let exact = 0;
    let r1 = 0;
    let r10 = 0;
    let mrr = 0;
    const times: number[] = [];
    const failures: QualityReport['failures'] = [];
    for (const q of questions) {
      if (store.findExact(q.answer).some((h) => covers(h, q.evidenceTurns))) exact++;
      const s0 = performance.now();
      const r = await store.search(q.question, { k: 10 });
      times.push(performance.now() - s0);
      const rank = r.hits.findIndex((h) => h.kind === 'raw' && covers(h, q.evidenceTurns));
      if (rank === 0) r1++;
      if (rank >= 0) {
        r10++;
        mrr += 1 / (rank + 1);
      } else failures.push({ question: q.question, rank: null });
    }

    // Honest misses: anchor facts from spans sampled across the session, perturbed until
    // the value occurs nowhere in the store (never stated).
    const rand = prng(20261130);
    const next = store.stats().nextId;
    let probes = 0;
    let missed = 0;
    let trueFound = 0;
    const falseHits: QualityReport['falseHits'] = [];
    for (let tries = 0; probes < o.misses && tries < o.misses * 50; tries++) {
      const id = 1 + Math.floor(rand() * (next - 1));
      const s = store.get(id);
      if (!s || s.kind !== 'raw') continue;
      const fact = detectAnchor(s.text, s.role)?.fact;
      if (!fact || fact.length < 12) continue;
      let never: string | null = null;
      for (let v = 0; v < 8 && never === null; v++) {
        const p = perturb(fact, v + tries);
        if (p !== fact && store.findExact(p, { limit: 1 }).length === 0) never = p;
      }
      if (never === null) continue;
      probes++;
      const neg = await store.search(never, { k: 10 });
      if (neg.miss) missed++;
      else if (falseHits.length < 20) falseHits.push({ query: never, spanId: neg.hits[0]!.spanId, text: neg.hits[0]!.text.slice(0, 300) });
      const pos = await store.search(fact, { k: 10 });
      if (!pos.miss && pos.hits.some((h) => h.text.includes(fact))) trueFound++;
    }
    return {
      dataset: name,
      unit: o.unit,
      turns: turns.length,
      spans: spans.length,
      ingestSeconds,
      ingestSpansPerSecond: spans.length / ingestSeconds,
      questions: questions.length,
      exactRecall: questions.length ? exact / questions.length : 0,
      recallAt1: questions.length ? r1 / questions.length : 0,
      recallAt10: questions.length ? r10 / questions.length : 0,
      mrr: questions.length ? mrr / questions.length : 0,
      searchP50Ms: pct(times, 50),
      searchP99Ms: pct(times, 99),
      honestMisses: { probes, missed, trueFound, rate: probes ? missed / probes : 0, trueRate: probes ? trueFound / probes : 0 },
      failures: failures.slice(0, 30),
      falseHits,
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
    `  honest misses: ${r.honestMisses.missed}/${r.honestMisses.probes} never-stated values missed (${f(r.honestMisses.rate)}); true values found ${r.honestMisses.trueFound}/${r.honestMisses.probes} (${f(r.honestMisses.trueRate)})`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { dataset: { type: 'string', default: 'all' }, unit: { type: 'string', default: 'exchange' }, limit: { type: 'string' }, misses: { type: 'string', default: '1000' }, json: { type: 'boolean' } },
  });
  const names = values.dataset === 'all' ? Object.keys(DATASETS) : [values.dataset!];
  const unit = values.unit === 'turn' ? 'turn' : 'exchange';
  const reports: QualityReport[] = [];
  for (const name of names) {
    const r = await evaluate(name, { unit, misses: Number(values.misses), ...(values.limit ? { limit: Number(values.limit) } : {}) });
    reports.push(r);
    if (!values.json) console.log(format(r));
  }
  const out = path.join(packageRoot, 'bench', 'results', `quality-${unit}.json`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(reports, null, 2));
  if (values.json) console.log(JSON.stringify(reports, null, 2));
  else console.log(`written ${path.relative(process.cwd(), out)}`);
}

if (process.argv[1] && path.resolve(process.argv[1]).endsWith(path.join('bench', 'quality.js'))) {
  main().catch((e) => {
    console.error(e);
    process.exitCode = 1;
  });
}
