/**
 * Retrieval on natural questions (shared/data/natural-questions): questions worded the way a
 * person or an agent asks later in a session (paraphrased, naming the day or the speaker,
 * spanning a command and its output), each either answered in particular turns or not stated
 * anywhere. spanguard is measured against three peers in the same run, over exactly the same
 * turns:
 *   - SQLite FTS5 (better-sqlite3), tokenize `porter unicode61` and tokenize `unicode61`;
 *     the query is the OR of the question's words (split on every character that is not a
 *     letter or a digit, each word double-quoted), `ORDER BY bm25(t) LIMIT 10`;
 *   - MiniSearch, combineWith 'OR', its default tokenizer and term processing (lower case),
 *     no fuzzy matching and no prefix matching, top 10.
 * Every system indexes one document per turn (unit 'turn'): the turn's text, and a second
 * column/field holding the role and every metadata value of the turn joined by spaces
 * (`source_file`, `episode`, `kind`, `command`, ...), which spanguard's lexical index also
 * sees, so a peer can match "on day 12" or an episode name as spanguard can.
 *
 * Metrics per transcript and per category, for every system: recall@1, recall@10 and MRR on
 * the answerable questions (a raw hit covers an evidence turn t when turnStart <= t <=
 * turnEnd; recall is measured on the ranking whether or not spanguard also said "miss").
 * spanguard alone gives a "not in transcript" signal: false misses (answerable questions with
 * `miss === true`) and honest misses on the unanswerable ones (`miss === true`, or the top
 * hit's speaker support says the speaker does not match: `hits[0].support.speaker.match ===
 * false`), reported with the two parts apart (a miss is counted as a miss, the speaker part
 * counts only results that were not a miss, so the parts add up). Peers print '—' there.
 *
 * `evaluateNatural(store, spans, questions)` measures a store that already holds `spans`
 * (ingest is separate: `ingest` in quality.ts), so a test can run it on a small slice.
 * `runNatural` is what `npm run quality` calls.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import MiniSearch from 'minisearch';
import { SpanStore, type TurnInput } from '../src/store.js';
import { fitStandInModel } from './standin-model.js';
import { packageRoot } from '../src/native.js';
import { readText } from '../src/transcript.js';
import { ingest, loadDataset } from './dataset.js';

const DATA = process.env.SPANGUARD_DATA ?? path.resolve(packageRoot, '..', 'shared', 'data');
export const NATURAL_QUESTIONS = path.join(DATA, 'natural-questions', 'questions.jsonl');
/** The question's `session` field for each dataset name of quality.ts. */
export const NATURAL_SESSIONS: Record<string, string> = { bookminder: 'bookminder-all', miniswe: 'miniswe-all' };
export const CATEGORIES = ['paraphrase', 'user-said', 'temporal', 'multi-turn', 'never-stated', 'perturbed', 'wrong-attribution'] as const;

export interface NaturalQuestion {
  session: string;
  id: string;
  question: string;
  /** null for an unanswerable question. */
  answer: string | null;
  evidenceTurns: number[];
  answerable: boolean;
  category: string;
}

export function parseNaturalQuestions(text: string): NaturalQuestion[] {
  const out: NaturalQuestion[] = [];
  text.split('\n').forEach((raw, i) => {
    if (!raw.trim()) return;
    const q = JSON.parse(raw) as Record<string, unknown>;
    if (typeof q.question !== 'string' || typeof q.session !== 'string' || typeof q.answerable !== 'boolean' || !Array.isArray(q.evidence_turns))
      throw new Error(`natural questions line ${i + 1}: needs "session", "question", "answerable" and "evidence_turns"`);
    out.push({
      session: q.session,
      id: typeof q.id === 'string' ? q.id : `line-${i + 1}`,
      question: q.question,
      answer: typeof q.answer === 'string' ? q.answer : null,
      evidenceTurns: q.evidence_turns as number[],
      answerable: q.answerable,
      category: typeof q.category === 'string' ? q.category : 'uncategorized',
    });
  });
  return out;
}

export const loadNaturalQuestions = (file = NATURAL_QUESTIONS) => parseNaturalQuestions(readText(file));

/** A ranked list of turn ranges; every peer returns raw turns only. */
export interface PeerHit {
  turnStart: number;
  turnEnd: number;
  text: string;
}

export interface Peer {
  name: string;
  /** Index build time over the transcript, seconds. */
  buildSeconds: number;
  search(question: string, k: number): PeerHit[];
  close(): void;
}

/** The second column every peer indexes: the role and every metadata value, space-joined. */
export const fieldsText = (s: TurnInput) => [s.role, ...Object.values(s.meta ?? {}).map((v) => String(v))].join(' ');

/** The question's words (split on every non-letter, non-digit character; empty words dropped). */
export const questionWords = (q: string) => q.split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 0);

/** FTS5 syntax: each word double-quoted (a word never contains a quote), ORed. */
export const fts5Query = (q: string) => questionWords(q).map((w) => `"${w}"`).join(' OR ');

/** better-sqlite3 (a devDependency without bundled types), the part used here. */
type Db = {
  exec(sql: string): void;
  prepare(sql: string): { run(...a: unknown[]): void; all(...a: unknown[]): unknown[] };
  transaction<T extends (...a: never[]) => void>(fn: T): T;
  close(): void;
};
const openDb = (file: string): Db => new (createRequire(import.meta.url)('better-sqlite3') as new (f: string) => Db)(file);

/** SQLite FTS5 in memory over the spans, one row per span; rowid = index in `spans` + 1. */
export function fts5Peer(spans: TurnInput[], tokenize: 'porter unicode61' | 'unicode61'): Peer {
  const t0 = performance.now();
  const db = openDb(':memory:');
  db.exec(`CREATE VIRTUAL TABLE t USING fts5(text, fields, tokenize = '${tokenize}')`);
  const ins = db.prepare('INSERT INTO t(rowid, text, fields) VALUES (?, ?, ?)');
  db.transaction(() => spans.forEach((s, i) => ins.run(i + 1, s.text, fieldsText(s))))();
  const sel = db.prepare('SELECT rowid AS id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?');
  const buildSeconds = (performance.now() - t0) / 1000;
  return {
    name: `fts5 ${tokenize}`,
    buildSeconds,
    search(question, k) {
      const q = fts5Query(question);
      if (!q) return [];
      return (sel.all(q, k) as { id: number }[]).map(({ id }) => {
        const s = spans[id - 1]!;
        return { turnStart: s.turn, turnEnd: s.turnEnd ?? s.turn, text: s.text };
      });
    },
    close: () => db.close(),
  };
}

/** MiniSearch over the spans: fields text and fields, combineWith 'OR', default tokenizer, no fuzzy, no prefix. */
export function miniSearchPeer(spans: TurnInput[]): Peer {
  const t0 = performance.now();
  const ms = new MiniSearch<{ id: number; text: string; fields: string }>({
    fields: ['text', 'fields'],
    storeFields: [],
    searchOptions: { combineWith: 'OR', fuzzy: false, prefix: false },
  });
  ms.addAll(spans.map((s, i) => ({ id: i, text: s.text, fields: fieldsText(s) })));
  const buildSeconds = (performance.now() - t0) / 1000;
  return {
    name: 'minisearch',
    buildSeconds,
    search(question, k) {
      return ms
        .search(question)
        .slice(0, k)
        .map((r) => {
          const s = spans[r.id as number]!;
          return { turnStart: s.turn, turnEnd: s.turnEnd ?? s.turn, text: s.text };
        });
    },
    close: () => ms.removeAll(),
  };
}

/** The three peers, each index built once over the transcript. */
export const buildPeers = (spans: TurnInput[]): Peer[] => [fts5Peer(spans, 'porter unicode61'), fts5Peer(spans, 'unicode61'), miniSearchPeer(spans)];

/** A hit as read here: `support` is optional (not every build of the store reports it). */
interface SgHit {
  kind: 'raw' | 'summary';
  turnStart: number;
  turnEnd: number;
  text: string;
  support?: { speaker?: { match?: boolean } };
}

export interface QuestionResult {
  id: string;
  category: string;
  answerable: boolean;
  question: string;
  evidenceTurns: number[];
  /** 1-based rank of the first raw hit covering an evidence turn, per system; null = not in the top k. */
  rank: Record<string, number | null>;
  /**
   * 1-based rank of the first hit whose text contains the answer (case-insensitive, whitespace
   * collapsed), per system, whichever turn it is: a hit on a turn that repeats the fact but is
   * not listed as evidence shows here and not in `rank`. Not a metric (a short answer such as
   * "88" or "False" occurs in hundreds of turns); it tells a ranking failure from a turn the
   * evidence list does not name.
   */
  answerRank: Record<string, number | null>;
  /** spanguard's miss flag. */
  miss: boolean;
  /** spanguard's top hit's speaker support (null when absent). */
  speakerMatch: boolean | null;
  top: { turnStart: number; turnEnd: number; kind: string; text: string } | null;
  searchMs: number;
}

export interface SystemMetrics {
  system: string;
  answerable: number;
  unanswerable: number;
  recallAt1: number | null;
  recallAt10: number | null;
  mrr: number | null;
  /** spanguard only: share of answerable questions with miss === true. */
  falseMiss: number | null;
  /** spanguard only: share of answerable questions found in the top 10 and not a miss. */
  answeredAt10: number | null;
  /** spanguard only: share of unanswerable questions that came back as a miss or a speaker mismatch. */
  honestMiss: number | null;
  /** The two parts of honestMiss: miss === true; not a miss but hits[0].support.speaker.match === false. */
  honestMissParts: { miss: number; speakerMismatch: number } | null;
  p50Ms: number;
  p99Ms: number;
}

export interface NaturalReport {
  system: string[];
  questions: number;
  overall: SystemMetrics[];
  byCategory: Record<string, SystemMetrics[]>;
  perQuestion: QuestionResult[];
  peerBuildSeconds: Record<string, number>;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};
const covers = (h: { turnStart: number; turnEnd: number }, evidence: number[]) => evidence.some((e) => h.turnStart <= e && e <= h.turnEnd);
const norm = (s: string) => s.replace(/\s+/g, ' ').trim().toLowerCase();

export const SPANGUARD = 'spanguard';

function metrics(system: string, rs: QuestionResult[], times: number[]): SystemMetrics {
  const ans = rs.filter((r) => r.answerable);
  const un = rs.filter((r) => !r.answerable);
  const share = (xs: QuestionResult[], f: (r: QuestionResult) => boolean) => (xs.length ? xs.filter(f).length / xs.length : null);
  const ranks = ans.map((r) => r.rank[system] ?? null);
  const sg = system === SPANGUARD;
  const missPart = sg ? share(un, (r) => r.miss) : null;
  const speakerPart = sg ? share(un, (r) => !r.miss && r.speakerMatch === false) : null;
  return {
    system,
    answerable: ans.length,
    unanswerable: un.length,
    recallAt1: ans.length ? ranks.filter((r) => r === 1).length / ans.length : null,
    recallAt10: ans.length ? ranks.filter((r) => r !== null && r <= 10).length / ans.length : null,
    mrr: ans.length ? ranks.reduce<number>((a, r) => a + (r === null ? 0 : 1 / r), 0) / ans.length : null,
    falseMiss: sg ? share(ans, (r) => r.miss) : null,
    answeredAt10: sg ? share(ans, (r) => !r.miss && r.rank[SPANGUARD] !== null) : null,
    honestMiss: sg ? share(un, (r) => r.miss || r.speakerMatch === false) : null,
    honestMissParts: sg && un.length ? { miss: missPart!, speakerMismatch: speakerPart! } : null,
    p50Ms: pct(times, 50),
    p99Ms: pct(times, 99),
  };
}

/**
 * Measures spanguard (`store`, already holding `spans`, one per turn) and the peers (built
 * here over `spans`, or passed in) on `questions`. Only the store's search calls are timed
 * for spanguard's latency; each peer's search is timed the same way.
 */
export async function evaluateNatural(store: SpanStore, spans: TurnInput[], questions: NaturalQuestion[], options: { peers?: Peer[]; k?: number } = {}): Promise<NaturalReport> {
  const k = options.k ?? 10;
  const own = !options.peers;
  const peers = options.peers ?? buildPeers(spans);
  try {
    const systems = [SPANGUARD, ...peers.map((p) => p.name)];
    const times: Record<string, number[]> = Object.fromEntries(systems.map((s) => [s, []]));
    const perQuestion: QuestionResult[] = [];
    for (const q of questions) {
      const t0 = performance.now();
      const r = await store.search(q.question, { k });
      const searchMs = performance.now() - t0;
      times[SPANGUARD]!.push(searchMs);
      const hits = r.hits as unknown as SgHit[];
      const rankOf = (hs: { turnStart: number; turnEnd: number; kind?: string }[]) => {
        const i = hs.findIndex((h) => (h.kind ?? 'raw') === 'raw' && covers(h, q.evidenceTurns));
        return i < 0 ? null : i + 1;
      };
      const answer = q.answer === null ? null : norm(q.answer);
      const answerRankOf = (hs: { text: string }[]) => {
        const i = answer ? hs.findIndex((h) => norm(h.text).includes(answer)) : -1;
        return i < 0 ? null : i + 1;
      };
      const rank: Record<string, number | null> = { [SPANGUARD]: q.answerable ? rankOf(hits) : null };
      const answerRank: Record<string, number | null> = { [SPANGUARD]: answerRankOf(hits) };
      for (const p of peers) {
        const p0 = performance.now();
        const ph = p.search(q.question, k);
        times[p.name]!.push(performance.now() - p0);
        rank[p.name] = q.answerable ? rankOf(ph) : null;
        answerRank[p.name] = answerRankOf(ph);
      }
      const top = hits[0];
      const speaker = top?.support?.speaker?.match;
      perQuestion.push({
        id: q.id,
        category: q.category,
        answerable: q.answerable,
        question: q.question,
        evidenceTurns: q.evidenceTurns,
        rank,
        answerRank,
        miss: r.miss === true,
        speakerMatch: typeof speaker === 'boolean' ? speaker : null,
        top: top ? { turnStart: top.turnStart, turnEnd: top.turnEnd, kind: top.kind, text: top.text.slice(0, 160) } : null,
        searchMs,
      });
    }
    const overall = systems.map((s) => metrics(s, perQuestion, times[s]!));
    const byCategory: Record<string, SystemMetrics[]> = {};
    const cats = [...CATEGORIES.filter((c) => questions.some((q) => q.category === c)), ...new Set(questions.map((q) => q.category).filter((c) => !(CATEGORIES as readonly string[]).includes(c)))];
    for (const c of cats) {
      const idx = perQuestion.flatMap((r, i) => (r.category === c ? [i] : []));
      byCategory[c] = systems.map((s) => metrics(s, idx.map((i) => perQuestion[i]!), idx.map((i) => times[s]![i]!)));
    }
    return { system: systems, questions: questions.length, overall, byCategory, perQuestion, peerBuildSeconds: Object.fromEntries(peers.map((p) => [p.name, p.buildSeconds])) };
  } finally {
    if (own) for (const p of peers) p.close();
  }
}

// ---------------------------------------------------------------- printing

const num = (x: number | null) => (x === null ? '—' : x.toFixed(3));
function table(header: string[], rows: string[][]): string {
  const w = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(header), ...rows.map(line)].map((l) => `  ${l}`).join('\n');
}
const honest = (m: SystemMetrics) => (m.honestMiss === null ? '—' : `${num(m.honestMiss)} (${num(m.honestMissParts?.miss ?? null)}+${num(m.honestMissParts?.speakerMismatch ?? null)})`);

export function formatNatural(t: NaturalTranscriptReport): string {
  const r = t.report;
  const a = r.overall[0]!;
  const out = [
    `natural questions, ${t.dataset} (${t.session}): ${t.turns} turns -> ${t.spans} spans (one per turn), ingest ${t.ingestSeconds.toFixed(1)} s; ` +
      `peer indexes ${Object.entries(r.peerBuildSeconds)
        .map(([n, s]) => `${n} ${s.toFixed(1)} s`)
        .join(', ')}`,
    `  ${r.questions} questions: ${a.answerable} answerable, ${a.unanswerable} unanswerable. honest-miss = miss + speaker mismatch (parts in parentheses)`,
    table(
      ['system', 'recall@1', 'recall@10', 'MRR', 'false-miss', 'honest-miss', 'p50 ms', 'p99 ms'],
      r.overall.map((m) => [m.system, num(m.recallAt1), num(m.recallAt10), num(m.mrr), num(m.falseMiss), honest(m), m.p50Ms.toFixed(2), m.p99Ms.toFixed(2)]),
    ),
    `  per category: recall@10 of each system (answerable) and spanguard's miss rates`,
    table(
      ['category', 'n', ...r.system, 'sg false-miss', 'sg honest-miss'],
      Object.entries(r.byCategory).map(([c, ms]) => {
        const sg = ms[0]!;
        return [c, String(sg.answerable + sg.unanswerable), ...ms.map((m) => num(m.recallAt10)), num(sg.falseMiss), honest(sg)];
      }),
    ),
  ];
  return out.join('\n');
}

/** Answerable questions spanguard failed (not in the top 10, or miss) and unanswerable ones it answered. */
export function formatFailures(t: NaturalTranscriptReport): string {
  const out: string[] = [`failures, ${t.dataset} (spanguard):`];
  const topLine = (q: QuestionResult) =>
    q.top ? `      top hit turns ${q.top.turnStart}-${q.top.turnEnd} (${q.top.kind}${q.speakerMatch === null ? '' : `, speaker match ${q.speakerMatch}`}): ${JSON.stringify(q.top.text)}` : '      no hits';
  for (const q of t.report.perQuestion) {
    const rank = q.rank[SPANGUARD] ?? null;
    if (q.answerable && (rank === null || q.miss)) {
      const ar = q.answerRank[SPANGUARD] ?? null;
      const elsewhere = rank === null && ar !== null ? `; the answer's words are in hit #${ar}, a turn not listed as evidence` : '';
      out.push(`  ${q.id} [${q.category}] ${rank === null ? 'not in top 10' : `rank ${rank}`}${q.miss ? ', miss' : ''}; evidence ${q.evidenceTurns.join(',')}${elsewhere}: ${q.question}`);
      out.push(topLine(q));
    } else if (!q.answerable && !q.miss && q.speakerMatch !== false) {
      out.push(`  ${q.id} [${q.category}] answered (should be "not in transcript"): ${q.question}`);
      out.push(topLine(q));
    }
  }
  return out.join('\n');
}

// ---------------------------------------------------------------- the run

export interface NaturalTranscriptReport {
  hostModel?: HostModelReport;
  dataset: string;
  session: string;
  turns: number;
  spans: number;
  ingestSeconds: number;
  report: NaturalReport;
}

export interface NaturalRun {
  machine: { cpu: string; cores: number; node: string; platform: string };
  command: string;
  date: string;
  questionsFile: string;
  /** MiniSearch options, as measured. */
  peers: string;
  transcripts: NaturalTranscriptReport[];
  seconds: number;
}

/**
 * Loads each dataset's transcript one span per turn, ingests it into a fresh store (or opens
 * the one in `dir`/<dataset>, reused from an earlier run), and measures the natural questions of its session. A dataset whose
 * session has no natural questions is skipped. With `limit`, only the first `limit` turns are
 * loaded and answerable questions whose evidence lies beyond them are dropped (an
 * unanswerable question stays unanswerable on a prefix).
 */
/** The same questions on a store whose vectors come from a host model (the stand-in of eval/standin-model.ts). */
export interface HostModelReport {
  model: string;
  dims: number;
  /** Embedder calls made while ingesting and asking, and texts embedded: a host model is called in batches. */
  batches: number;
  texts: number;
  fitSeconds: number;
  ingestSeconds: number;
  metrics: SystemMetrics;
}

async function withHostModel(spans: TurnInput[], questions: NaturalQuestion[]): Promise<HostModelReport> {
  const f0 = performance.now();
  const model = fitStandInModel(spans.map((s) => s.text));
  const fitSeconds = (performance.now() - f0) / 1000;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-natural-host-'));
  const store = await SpanStore.open(dir, { durability: 'none', embedder: (texts) => model.embed(texts), dims: model.dims });
  try {
    const i0 = performance.now();
    for (let i = 0; i < spans.length; i += 4096) await store.appendMany(spans.slice(i, i + 4096));
    const ingestSeconds = (performance.now() - i0) / 1000;
    const report = await evaluateNatural(store, spans, questions, { peers: [] });
    return {
      model: 'stand-in: random indexing fitted on the transcript (eval/standin-model.ts)',
      dims: model.dims,
      batches: model.calls.batches,
      texts: model.calls.texts,
      fitSeconds,
      ingestSeconds,
      metrics: report.overall.find((m) => m.system === SPANGUARD)!,
    };
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function formatHostModel(h: HostModelReport, base: NaturalReport): string {
  const f = (x: number | null) => (x === null ? '—' : x.toFixed(3));
  const b = base.overall.find((m) => m.system === SPANGUARD)!;
  const m = h.metrics;
  return [
    `  with a host embedding model (${h.model}, ${h.dims} dims; ${h.batches} embedder calls for ${h.texts} texts):`,
    `    recall@10 ${f(m.recallAt10)} (built-in embedder ${f(b.recallAt10)})  recall@1 ${f(m.recallAt1)} (${f(b.recallAt1)})  MRR ${f(m.mrr)} (${f(b.mrr)})  false-miss ${f(m.falseMiss)} (${f(b.falseMiss)})  honest-miss ${f(m.honestMiss)} (${f(b.honestMiss)})`,
  ].join('\n');
}

export async function runNatural(o: { datasets: string[]; dir?: string; limit?: number; failures?: boolean; json?: boolean; questionsFile?: string; hostModel?: boolean }): Promise<NaturalRun> {
  const t0 = performance.now();
  const file = o.questionsFile ?? NATURAL_QUESTIONS;
  const all = loadNaturalQuestions(file);
  const transcripts: NaturalTranscriptReport[] = [];
  for (const name of o.datasets) {
    const ds = loadDataset(name, 'turn', o.limit);
    const session = NATURAL_SESSIONS[name] ?? String(ds.spans[0]?.meta?.session ?? '');
    const lastTurn = ds.spans[ds.spans.length - 1]?.turn ?? 0;
    const questions = all.filter((q) => q.session === session && q.evidenceTurns.every((t) => t <= lastTurn));
    if (questions.length === 0) {
      if (!o.json) console.log(`natural questions: none for ${ds.label} (session ${session || 'unknown'}), skipped`);
      continue;
    }
    const dir = o.dir ? path.join(o.dir, path.basename(ds.label)) : fs.mkdtempSync(path.join(os.tmpdir(), `spanguard-natural-${path.basename(ds.label)}-`));
    if (o.dir) fs.mkdirSync(dir, { recursive: true });
    const { store, ingestSeconds } = await ingest(ds, dir);
    try {
      const report = await evaluateNatural(store, ds.spans, questions);
      const t: NaturalTranscriptReport = { dataset: ds.label, session, turns: ds.turns, spans: ds.spans.length, ingestSeconds, report };
      if (o.hostModel !== false) t.hostModel = await withHostModel(ds.spans, questions);
      transcripts.push(t);
      if (!o.json) {
        console.log(formatNatural(t));
        if (t.hostModel) console.log(formatHostModel(t.hostModel, t.report));
        if (o.failures) console.log(formatFailures(t));
      }
    } finally {
      await store.close();
      if (!o.dir) fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  const run: NaturalRun = {
    machine: { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, node: process.version, platform: `${os.platform()} ${os.release()}` },
    command: ['npm run quality --', ...process.argv.slice(2)].join(' '),
    date: new Date().toISOString(),
    questionsFile: path.relative(packageRoot, file),
    peers: "FTS5 (better-sqlite3): OR of the question's words, each double-quoted, ORDER BY bm25 LIMIT 10, tokenize 'porter unicode61' and 'unicode61'; MiniSearch: fields text+fields, combineWith OR, default tokenizer, no fuzzy, no prefix",
    transcripts,
    seconds: (performance.now() - t0) / 1000,
  };
  const out = path.join(packageRoot, 'bench', 'results', 'natural.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(run, null, 2));
  if (o.json) console.log(JSON.stringify(run, null, 2));
  else console.log(`natural questions: ${run.seconds.toFixed(1)} s; written ${path.relative(process.cwd(), out)}`);
  return run;
}
