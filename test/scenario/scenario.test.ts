// The seed's scenario end to end (eval/scenario.ts runs it; `npm run scenario` prints it):
// a 14,200-turn session, turn 4,237 states a rate limit of 40 req/s, summaries of
// 4,100–4,400 re-summarized into coarser ranges, hundreds of passes. And the failure the
// seed describes, reproduced on purpose with a content-hash-keyed store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LosslessRetrievalBoundaryError } from '../../src/index.js';
import { FACT, FACT_TURN, NEVER_STATED, QUERY, reproduceSeedFailure, runSeedScenario, type ScenarioResult } from '../../eval/scenario.js';
import { tmpDir } from '../helpers/data.js';

let r: ScenarioResult;

beforeAll(async () => {
  r = await runSeedScenario(tmpDir());
}, 300_000);

afterAll(async () => {
  await r?.store.close();
});

describe('seed scenario: a query for the rate limit returns raw turn 4,237 verbatim after every pass', () => {
  it('ran hundreds of passes, including re-summarizations of the range', () => {
    expect(r.passes).toBeGreaterThan(190);
    expect(r.resummarizations).toBeGreaterThan(50);
    expect(r.checks.length).toBe(r.passes);
  });
  it('the top hit is the raw span of turn 4,237, verbatim, with provenance, after each pass', () => {
    const wrong = r.checks.filter((p) => !p.verbatim || p.turn !== FACT_TURN || p.kind !== 'raw');
    expect(wrong, JSON.stringify(wrong.slice(0, 3))).toEqual([]);
  });
  it('the verdict stayed lossless through the schedule', () => {
    expect(r.verdictBeforeBreach.state).toBe('lossless');
  });
});

describe('seed scenario: the hit rate over the probe set stays within ±3% across passes', () => {
  it('no pass moves it by more than 3 percentage points, over the session set or over its own turns', () => {
    // Summaries are the project's extractive summaries of the replaced turns: the monitor
    // reads real text (a blind monitor, or fixed summaries, would pass this vacuously; the
    // broad re-summarizer below shows the same measure moving).
    const passes = r.store.events().flatMap((e) => (e.event.type === 'pass' ? [e.event] : []));
    expect(passes.length).toBeGreaterThan(190);
    const measured = passes.filter((p) => p.hitRateBefore !== null && p.hitRateAfter !== null);
    expect(measured.length).toBeGreaterThan(190);
    expect(passes.filter((p) => (p.localHitRateBefore ?? null) !== null).length).toBeGreaterThan(100);
    for (const p of measured) expect(Math.abs(p.hitRateAfter! - p.hitRateBefore!)).toBeLessThanOrEqual(0.03);
    for (const p of passes) if (p.localHitRateBefore != null && p.localHitRateAfter != null) expect(Math.abs(p.localHitRateAfter - p.localHitRateBefore)).toBeLessThanOrEqual(0.03);
  });
});

describe('seed scenario: facts that were never stated come back "not in transcript"', () => {
  it.each(NEVER_STATED)('%s', async (q) => {
    const s = await r.store.search(q, { kinds: ['raw', 'summary'] });
    expect(s.miss).toBe(true);
  });
});

describe('seed scenario: a pass that tries to rewrite an indexed raw span halts and degrades', () => {
  it('throws LosslessRetrievalBoundaryError naming turn 4,237 and the verdict turns degraded', async () => {
    expect(r.boundaryError).toBeInstanceOf(LosslessRetrievalBoundaryError);
    expect((r.boundaryError as LosslessRetrievalBoundaryError).spanIds).toEqual([r.ids[FACT_TURN - 1]]);
    expect(r.store.verdict().state).toBe('degraded');
    // The raw span is untouched and still found, now flagged as untrustworthy.
    const s = await r.store.search(QUERY, { k: 1 });
    expect(s.hits[0]).toMatchObject({ text: FACT, trustExactRecall: false, verdict: 'degraded' });
  });
});

describe("the seed's failure through spanguard's own API: a coarse re-summary that answers more queries is caught", () => {
  it('a broad re-summarizer raises the hit rate over one pass by more than 15% and the verdict degrades before any breach', async () => {
    const broad = await runSeedScenario(tmpDir(), undefined, { resummarizer: 'broad', turns: 3000 });
    try {
      expect(broad.verdictBeforeBreach.state).toBe('degraded');
      expect(broad.verdictBeforeBreach.reasons.join(' ')).toMatch(/hit-rate-rise/);
      // The raw turn still answers the query verbatim: the fallback held, the monitor spoke.
      expect(broad.checks.every((c) => c.verbatim || c.turn !== FACT_TURN)).toBe(true);
    } finally {
      await broad.store.close();
    }
  }, 300_000);
});

describe('the seed failure reproduced: a content-hash-keyed store loses turn 4,237 and the monitor catches it', () => {
  it('returns the coarse summary as a plausible wrong neighbour, its hit rate rises, and it is declared degraded', () => {
    const f = reproduceSeedFailure();
    expect(f.answer).not.toBeNull();
    expect(f.answer!.turnStart).toBe(3800); // the plausible wrong neighbour
    expect(f.answer!.text).not.toContain('40 req/s'); // the value is gone
    expect(f.hitRateAfter).toBeGreaterThan(f.hitRateBefore * 1.15); // the tell: hit rate rose
    expect(f.verdict.state).toBe('degraded');
    expect(f.verdict.reasons[0]).toMatch(/hit-rate-rise/);
  });
});
