/**
 * The seed's scenario, end to end, as a module (test/scenario/scenario.test.ts) and a script:
 *
 *   npm run scenario            # prints what happened after every pass, then the verdict
 *
 * A 14,200-turn session of real turns (shared/data when present, else the bundled sample,
 * cycled); turn 4,237 states a rate limit of 40 req/s. Layer-1 passes summarize 100 raw
 * turns each; layer-2 passes re-summarize three layer-1 summaries (4,100–4,399 is one);
 * layer-3 passes re-summarize three layer-2 summaries (3,800–4,699 covers turn 4,237 a
 * second time). After every pass the rate-limit query must return raw turn 4,237 verbatim.
 * Then a pass tries to rewrite turn 4,237 itself and must halt the store as degraded.
 *
 * `reproduceSeedFailure()` builds the broken design on purpose — raw turns never indexed on
 * their own, summaries keyed by a content hash and upserted by the re-summarizer — and feeds
 * its answers to spanguard's hit-rate monitor.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { HitRateMonitor, SpanStore, VerdictMonitor, type Verdict } from '../src/index.js';
import { addon, packageRoot } from '../src/native.js';
import { extractiveSummary, type SummarizeInput } from '../src/window.js';
import { perturb } from '../src/anchors.js';
import { anchorFact } from '../src/anchors.js';
import { ROLE_CODES } from '../src/native.js';

export const TURNS = 14_200;
const TOTAL_TURNS = TURNS;
export const FACT_TURN = 4_237;
export const FACT =
  'Confirmed with the platform team: the upstream billing API allows a rate limit of 40 req/s per key; keep every batch job under it.';
export const QUERY = 'what rate limit in req/s does the upstream billing API allow per key?';
export const NEVER_STATED = [
  'the upstream billing API allows a rate limit of 45 req/s per key',
  'the deploy freeze starts at 17:30 UTC on Thursdays',
  'set BILLING_RETRY_BUDGET=13 for the nightly export',
];

export interface PassCheck {
  pass: number;
  spanId: number | undefined;
  turn: number | undefined;
  kind: string | undefined;
  verbatim: boolean;
}

export interface ScenarioResult {
  store: SpanStore;
  ids: number[];
  checks: PassCheck[];
  passes: number;
  resummarizations: number;
  boundaryError: unknown;
  verdictBeforeBreach: Verdict;
  seconds: number;
}

/** Real turns: the full shared transcript when present, else the bundled sample, cycled. */
export function fillerTurns(n: number): { turn: number; role: string; text: string }[] {
  const shared = path.resolve(packageRoot, '..', 'shared', 'data', 'miniswe-gemini3pro-verified', 'turns.jsonl.gz');
  const file = fs.existsSync(shared) ? shared : path.join(packageRoot, 'samples', 'miniswe-slice', 'turns.jsonl.gz');
  const rows = zlib
    .gunzipSync(fs.readFileSync(file))
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { role: string; text: string });
  return Array.from({ length: n }, (_, i) => ({ turn: i + 1, role: rows[i % rows.length]!.role, text: rows[i % rows.length]!.text }));
}

/**
 * What the re-summarizer writes. `faithful`: the project's extractive summarizer over the
 * summaries it folds (their lines, verbatim). `broad`: the seed's coarse re-summary that
 * answers more queries — it restates each folded fact beside a plausible neighbour the
 * transcript never stated ("rate limit 40 req/s" and "41 req/s"), the way a loose summary
 * of several turns blurs their values.
 */
export type Resummarizer = 'faithful' | 'broad';

const inputsOf = (store: SpanStore, ids: number[]): SummarizeInput[] =>
  store.getMany(ids).flatMap((sp) =>
    sp ? [{ spanId: sp.id, kind: sp.kind === 'summary' ? ('summary' as const) : ('raw' as const), role: sp.role, turnStart: sp.turnStart, turnEnd: sp.turnEnd, text: sp.text, anchor: sp.anchor }] : [],
  );

/** The broad re-summary: each line of the folded summaries, and for each line with a number, the same line with it shifted. */
function broadSummary(inputs: SummarizeInput[]): string {
  const out: string[] = [];
  for (const i of inputs)
    for (const line of i.text.split('\n')) {
      out.push(line);
      const fact = anchorFact(line, ROLE_CODES[i.role] ?? 0);
      if (fact && /\d/.test(fact)) out.push(perturb(fact.trim(), 0));
    }
  return out.join('\n');
}

/** Runs the schedule; the caller closes `result.store`. */
export async function runSeedScenario(dir: string, onPass?: (c: PassCheck) => void, options: { resummarizer?: Resummarizer; turns?: number } = {}): Promise<ScenarioResult> {
  const t0 = performance.now();
  const TURNS = options.turns ?? TOTAL_TURNS;
  const resummarizer = options.resummarizer ?? 'faithful';
  const store = await SpanStore.open(dir, { durability: 'none', auditEvery: 50, unknownAfter: 50 });
  const turns = fillerTurns(TURNS).map((t) => (t.turn === FACT_TURN ? { ...t, role: 'user', text: FACT } : t));
  const ids = await store.appendMany(turns);
  const idOfTurn = (turn: number) => ids[turn - 1]!;
  const checks: PassCheck[] = [];
  const check = async (pass: number) => {
    const r = await store.search(QUERY, { k: 5, kinds: ['raw', 'summary'], expect: 'raw' });
    const top = r.hits[0];
    const c = { pass, spanId: top?.spanId, turn: top?.turnStart, kind: top?.kind, verbatim: top?.kind === 'raw' && top.text === FACT };
    checks.push(c);
    onPass?.(c);
  };
  type Entry = { id: number; a: number; b: number };
  let resummarizations = 0;
  const resummarize = async (group: Entry[]): Promise<Entry> => {
    const a = group[0]!.a;
    const b = group[group.length - 1]!.b;
    const gone = group.map((g) => g.id);
    const folded = inputsOf(store, gone);
    const text = resummarizer === 'broad' ? broadSummary(folded) : await extractiveSummary(folded);
    const r = await store.compact({ evict: gone, rewrite: gone, summary: { text, turnStart: a, turnEnd: b } });
    resummarizations++;
    await check(r.pass);
    return { id: r.summaryId, a, b };
  };
  const pending1: Entry[] = [];
  const pending2: Entry[] = [];
  let groups2 = 0;
  for (let j = 0; 100 * j <= TURNS; j++) {
    const a = Math.max(1, 100 * j);
    const b = Math.min(TURNS, 100 * j + 99);
    const evict = Array.from({ length: b - a + 1 }, (_, i) => idOfTurn(a + i));
    // Each pass's summary is the project's extractive summary of the turns it replaces: the
    // monitor sees real summary text, not a fixed sentence it could never be fooled by.
    const r = await store.compact({ evict, summary: { text: await extractiveSummary(inputsOf(store, evict)), turnStart: a, turnEnd: b } });
    await check(r.pass);
    pending1.push({ id: r.summaryId, a, b });
    if (j % 3 === 1) {
      pending2.push(await resummarize(pending1.splice(0)));
      if (groups2++ % 3 === 0) await resummarize(pending2.splice(0));
    }
  }
  const verdictBeforeBreach = store.verdict();
  const boundaryError = await store
    .compact({ evict: [], rewrite: [idOfTurn(FACT_TURN)], summary: { text: 'rewrite the raw turn', turnStart: FACT_TURN, turnEnd: FACT_TURN } })
    .catch((e: unknown) => e);
  return {
    store,
    ids,
    checks,
    passes: verdictBeforeBreach.passes,
    resummarizations,
    boundaryError,
    verdictBeforeBreach,
    seconds: (performance.now() - t0) / 1000,
  };
}

/** The broken design the seed describes: summaries only, keyed by content hash, upserted. */
export class ContentHashStore {
  private entries = new Map<string, { text: string; turnStart: number; turnEnd: number; vector: Float32Array }>();
  constructor(
    private readonly embed: (t: string[]) => Float32Array,
    private readonly dims: number,
    private readonly threshold = 0.15,
  ) {}
  upsert(text: string, turnStart: number, turnEnd: number, replaces: string[] = []): string {
    for (const k of replaces) this.entries.delete(k); // the "soft delete": gone from search
    const key = createHash('sha256').update(text).digest('hex');
    this.entries.set(key, { text, turnStart, turnEnd, vector: this.embed([text]) });
    return key;
  }
  /** Nearest neighbour above a cosine threshold: it always "succeeds" when anything is close. */
  search(q: string): { text: string; turnStart: number; turnEnd: number; cosine: number } | null {
    const qv = this.embed([q]);
    let best: { text: string; turnStart: number; turnEnd: number; cosine: number } | null = null;
    for (const e of this.entries.values()) {
      let dot = 0;
      for (let i = 0; i < this.dims; i++) dot += qv[i]! * e.vector[i]!;
      if (!best || dot > best.cosine) best = { text: e.text, turnStart: e.turnStart, turnEnd: e.turnEnd, cosine: dot };
    }
    return best && best.cosine >= this.threshold ? best : null;
  }
}

export interface SeedFailure {
  answer: { text: string; turnStart: number; turnEnd: number; cosine: number } | null;
  hitRateBefore: number;
  hitRateAfter: number;
  verdict: Verdict;
}

export function reproduceSeedFailure(): SeedFailure {
  const embedder = new (addon().Embedder)(256);
  const broken = new ContentHashStore((t) => embedder.embed(t), 256);
  const probes = [
    'rate limit of 40 req/s for the upstream billing API',
    'billing API batch jobs limit per key',
    ...NEVER_STATED,
    'the billing API key rotation happens every 90 days',
  ];
  const monitor = new HitRateMonitor(0.15);
  const verdict = new VerdictMonitor({ unknownAfter: 50, auditEvery: 50, bestEffort: false });
  const measure = (pass: number) => {
    const hits = probes.filter((q) => broken.search(q) !== null).length;
    const obs = monitor.observe(pass, hits, probes.length);
    if (obs.rise) verdict.apply(pass, { type: 'degrade', pass, reason: 'hit-rate-rise', detail: obs.rise, spanIds: [] });
    return obs.hitRate;
  };
  // Pass 1: the fine summary of 4,100–4,400 keeps the constraint.
  const fine = broken.upsert('Turns 4100-4400: set up the billing API client; rate limit 40 req/s per key for batch jobs.', 4100, 4400);
  const hitRateBefore = measure(1);
  // Pass 2: the re-summarizer folds it into a coarser 3,800–4,600 summary; the upsert
  // replaces the old hash key, and the raw turns were never indexed on their own.
  broken.upsert(
    'Turns 3800-4600: the agent worked on the billing API client and its rate limits, deploy schedules and the deploy freeze, the retry budget of the nightly export, and API key rotation.',
    3800,
    4600,
    [fine],
  );
  const hitRateAfter = measure(2);
  return { answer: broken.search(QUERY), hitRateBefore, hitRateAfter, verdict: verdict.verdict() };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-scenario-'));
  const bad: PassCheck[] = [];
  const r = await runSeedScenario(dir, (c) => {
    if (!c.verbatim || c.turn !== FACT_TURN) bad.push(c);
  });
  const hr = r.store.hitRate.history;
  let maxStep = 0;
  for (let i = 2; i < hr.length; i++) maxStep = Math.max(maxStep, Math.abs(hr[i]!.hitRate - hr[i - 1]!.hitRate));
  console.log(`session: ${TURNS} turns, ${r.passes} passes (${r.resummarizations} re-summarizations), ${r.seconds.toFixed(1)} s`);
  console.log(`rate-limit query: raw turn ${FACT_TURN} verbatim as top hit after ${r.checks.length - bad.length} of ${r.checks.length} passes`);
  for (const c of bad.slice(0, 5)) console.log(`  pass ${c.pass}: top hit ${c.kind} span ${c.spanId} turn ${c.turn}`);
  console.log(
    `hit rate over the probe set: min ${Math.min(...hr.map((h) => h.hitRate)).toFixed(3)}, max ${Math.max(...hr.map((h) => h.hitRate)).toFixed(3)}, largest step between passes ${(maxStep * 100).toFixed(1)} points`,
  );
  for (const q of NEVER_STATED) {
    const s = await r.store.search(q, { kinds: ['raw', 'summary'] });
    console.log(`never stated: ${JSON.stringify(q)} -> ${s.miss ? 'not in transcript' : `HIT span ${s.hits[0]?.spanId}`}`);
  }
  console.log(`verdict before the breach: ${r.verdictBeforeBreach.state} (${r.verdictBeforeBreach.reasons[0]})`);
  const e = r.boundaryError as { name?: string; spanIds?: number[]; message?: string };
  console.log(`rewrite of raw turn ${FACT_TURN}: ${e?.name ?? 'no error'} spanIds ${JSON.stringify(e?.spanIds)}`);
  console.log(`verdict after: ${r.store.verdict().state} — ${r.store.verdict().reasons[0]}`);
  await r.store.close();
  const f = reproduceSeedFailure();
  console.log('\nthe broken design (content-hash keys, summaries only, upserted by the re-summarizer):');
  console.log(`  rate-limit query answered by turns ${f.answer?.turnStart}–${f.answer?.turnEnd} at cosine ${f.answer?.cosine.toFixed(2)}; contains "40 req/s": ${f.answer?.text.includes('40 req/s')}`);
  console.log(`  hit rate ${f.hitRateBefore.toFixed(3)} -> ${f.hitRateAfter.toFixed(3)}; spanguard's monitor says: ${f.verdict.state} (${f.verdict.reasons[0]})`);
  fs.rmSync(dir, { recursive: true, force: true });
}

if (process.argv[1] && path.resolve(process.argv[1]).endsWith(path.join('eval', 'scenario.js'))) {
  main().catch((e) => {
    console.error(e);
    process.exitCode = 1;
  });
}
