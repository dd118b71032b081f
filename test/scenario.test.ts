// The seed's scenario end to end: a 14,200-turn session, turn 4,237 states a rate limit of
// 40 req/s, summaries of 4,100–4,400 re-summarized into coarser ranges, hundreds of passes.
// And the failure the seed describes, reproduced on purpose with a content-hash-keyed store.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HitRateMonitor, LosslessRetrievalBoundaryError, SpanStore, VerdictMonitor } from '../src/index.js';
import { addon } from '../src/native.js';
import { realTurns, tmpDir } from './helpers/data.js';

const TURNS = 14_200;
const FACT_TURN = 4_237;
const FACT = 'Confirmed with the platform team: the upstream billing API allows a rate limit of 40 req/s per key; keep every batch job under it.';
const QUERY = 'what rate limit in req/s does the upstream billing API allow per key?';
const NEVER_STATED = [
  'the upstream billing API allows a rate limit of 45 req/s per key',
  'the deploy freeze starts at 17:30 UTC on Thursdays',
  'set BILLING_RETRY_BUDGET=13 for the nightly export',
];

let store: SpanStore;
let ids: number[];
const topAfterEachPass: { pass: number; spanId: number | undefined; verbatim: boolean; turn: number | undefined }[] = [];
let boundaryError: unknown;
let passes = 0;

beforeAll(async () => {
  store = await SpanStore.open(tmpDir(), { durability: 'none', auditEvery: 50, unknownAfter: 50 });
  const turns = realTurns(TURNS).map((t) => (t.turn === FACT_TURN ? { ...t, role: 'user', text: FACT } : t));
  ids = await store.appendMany(turns.map((t) => ({ turn: t.turn, role: t.role, text: t.text })));
  const idOfTurn = (turn: number) => ids[turn - 1]!;
  const check = async (pass: number) => {
    const r = await store.search(QUERY, { k: 5, kinds: ['raw', 'summary'], expect: 'raw' });
    const top = r.hits[0];
    topAfterEachPass.push({ pass, spanId: top?.spanId, verbatim: top?.kind === 'raw' && top.text === FACT, turn: top?.turnStart });
  };
  // Layer 1: one pass per 100 raw turns (chunk j covers 100j..100j+99). Layer 2: the
  // layer-1 summaries re-summarized in threes, aligned so that 4,100–4,399 is one of them.
  // Layer 3: layer-2 summaries re-summarized in threes again, so 3,800–4,699 covers turn
  // 4,237 a second time. Every re-summarization names the old summaries in `rewrite`.
  type Entry = { id: number; a: number; b: number };
  const resummarize = async (group: Entry[]): Promise<Entry> => {
    const a = group[0]!.a;
    const b = group[group.length - 1]!.b;
    const gone = group.map((g) => g.id);
    const r = await store.compact({ evict: gone, rewrite: gone, summary: { text: `Coarse summary of turns ${a}-${b}: the agent worked on repositories, API clients and tests.`, turnStart: a, turnEnd: b } });
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
    const r = await store.compact({ evict, summary: { text: `Summary of turns ${a}-${b}: the agent ran commands and read files.`, turnStart: a, turnEnd: b } });
    await check(r.pass);
    pending1.push({ id: r.summaryId, a, b });
    if (j % 3 === 1) {
      pending2.push(await resummarize(pending1.splice(0)));
      if (groups2++ % 3 === 0) await resummarize(pending2.splice(0));
    }
  }
  passes = store.verdict().passes;
  boundaryError = await store
    .compact({ evict: [], rewrite: [idOfTurn(FACT_TURN)], summary: { text: 'rewrite the raw turn', turnStart: FACT_TURN, turnEnd: FACT_TURN } })
    .catch((e) => e);
}, 300_000);

afterAll(async () => {
  await store?.close();
});

describe('seed scenario: a query for the rate limit returns raw turn 4,237 verbatim after every pass', () => {
  it('ran hundreds of passes, including re-summarizations of the range', () => {
    expect(passes).toBeGreaterThan(190);
    expect(topAfterEachPass.length).toBe(passes);
  });
  it('the top hit is the raw span of turn 4,237, verbatim, with provenance, after each pass', () => {
    const wrong = topAfterEachPass.filter((p) => !p.verbatim || p.turn !== FACT_TURN);
    expect(wrong, JSON.stringify(wrong.slice(0, 3))).toEqual([]);
  });
});

describe('seed scenario: the hit rate over the probe set stays within ±3% across passes', () => {
  it('never moves more than 3 percentage points between passes once the probe set is full', () => {
    const h = store.hitRate.history.slice(1);
    expect(h.length).toBeGreaterThan(190);
    let maxStep = 0;
    for (let i = 1; i < h.length; i++) maxStep = Math.max(maxStep, Math.abs(h[i]!.hitRate - h[i - 1]!.hitRate));
    expect(maxStep).toBeLessThanOrEqual(0.03);
  });
});

describe('seed scenario: facts that were never stated come back "not in transcript"', () => {
  it.each(NEVER_STATED)('%s', async (q) => {
    const r = await store.search(q, { kinds: ['raw', 'summary'] });
    expect(r.miss).toBe(true);
  });
});

describe('seed scenario: a pass that tries to rewrite an indexed raw span halts and degrades', () => {
  it('throws LosslessRetrievalBoundaryError naming turn 4,237 and the verdict turns degraded', async () => {
    expect(boundaryError).toBeInstanceOf(LosslessRetrievalBoundaryError);
    expect((boundaryError as LosslessRetrievalBoundaryError).spanIds).toEqual([ids[FACT_TURN - 1]]);
    expect(store.verdict().state).toBe('degraded');
    // The raw span is untouched and still found, now flagged as untrustworthy.
    const r = await store.search(QUERY, { k: 1 });
    expect(r.hits[0]).toMatchObject({ text: FACT, trustExactRecall: false, verdict: 'degraded' });
  });
});

// ---------------------------------------------------------------------------------------
// The broken design, written here on purpose: raw turns are never indexed on their own,
// only summaries, keyed by a content hash; re-summarization upserts a new key and drops the
// old entry. spanguard's hit-rate monitor, fed this store's answers, must declare it degraded.

class ContentHashStore {
  private entries = new Map<string, { text: string; turnStart: number; turnEnd: number; vector: Float32Array }>();
  constructor(private readonly embed: (t: string[]) => Float32Array, private readonly dims: number) {}
  upsert(text: string, turnStart: number, turnEnd: number, replaces: string[] = []): string {
    for (const k of replaces) this.entries.delete(k); // the "soft delete": gone from search
    const key = createHash('sha256').update(text).digest('hex');
    this.entries.set(key, { text, turnStart, turnEnd, vector: this.embed([text]) });
    return key;
  }
  /** Nearest neighbour above a cosine threshold: always "succeeds" when anything is close. */
  search(q: string): { text: string; turnStart: number; turnEnd: number; cosine: number } | null {
    const qv = this.embed([q]);
    let best: { text: string; turnStart: number; turnEnd: number; cosine: number } | null = null;
    for (const e of this.entries.values()) {
      let dot = 0;
      for (let i = 0; i < this.dims; i++) dot += qv[i]! * e.vector[i]!;
      if (!best || dot > best.cosine) best = { text: e.text, turnStart: e.turnStart, turnEnd: e.turnEnd, cosine: dot };
    }
    return best && best.cosine >= 0.15 ? best : null;
  }
}

describe('the seed failure reproduced: a content-hash-keyed store loses turn 4,237 and the monitor catches it', () => {
  it('returns the coarse summary as a plausible wrong neighbour, its hit rate rises, and it is declared degraded', () => {
    const embedder = new (addon().Embedder)(256);
    const broken = new ContentHashStore((t) => embedder.embed(t), 256);
    const probes = [
      { q: 'rate limit of 40 req/s for the upstream billing API', stated: true },
      { q: 'billing API batch jobs limit per key', stated: true },
      ...NEVER_STATED.map((q) => ({ q, stated: false })),
      { q: 'the billing API key rotation happens every 90 days', stated: false },
    ];
    const monitor = new HitRateMonitor(0.15);
    const verdict = new VerdictMonitor({ unknownAfter: 50, auditEvery: 50, bestEffort: false });
    const measure = (pass: number) => {
      const hits = probes.filter((p) => broken.search(p.q) !== null).length;
      const obs = monitor.observe(pass, hits, probes.length);
      if (obs.rise) verdict.apply(pass, { type: 'degrade', pass, reason: 'hit-rate-rise', detail: obs.rise, spanIds: [] });
      return obs.hitRate;
    };
    // Pass 1: the fine summary of 4,100–4,400 (it keeps the constraint).
    const fine = broken.upsert('Turns 4100-4400: set up the billing API client; rate limit 40 req/s per key for batch jobs.', 4100, 4400);
    const before = measure(1);
    // Pass 2: a re-summarizer rewrites it into the coarse 3,800–4,600 summary; the upsert
    // replaces the old hash key, and the raw turns were never indexed on their own.
    broken.upsert(
      'Turns 3800-4600: the agent worked on the billing API client and its rate limits, deploy schedules and the deploy freeze, the retry budget of the nightly export, and API key rotation.',
      3800,
      4600,
      [fine],
    );
    const after = measure(2);
    const answer = broken.search('what rate limit in req/s does the upstream billing API allow per key?');
    expect(answer).not.toBeNull();
    expect(answer!.turnStart).toBe(3800); // the plausible wrong neighbour
    expect(answer!.text).not.toContain('40 req/s'); // the value is gone
    expect(after).toBeGreaterThan(before * 1.15); // the tell: hit rate rose
    expect(verdict.verdict().state).toBe('degraded');
    expect(verdict.verdict().reasons[0]).toMatch(/hit-rate-rise/);
  });
});
