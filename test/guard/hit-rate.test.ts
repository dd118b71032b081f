// The hit-rate monitor watches the agent's path: a summarizer that writes plausible wrong
// values, or broad statements that cover values never stated, raises the rate by more than
// 15% over one pass and degrades the verdict; a faithful summarizer keeps it within ±3%.
// Driven through spanguard's own API (ContextWindow over a SpanStore, real turns).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/store.js';
import { ContextWindow, extractiveSummary, type Summarizer } from '../../src/window.js';
import { anchorFact } from '../../src/anchors.js';
import { perturb } from '../../src/anchors.js';
import { ROLE_CODES } from '../../src/native.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

async function replay(summarize: Summarizer, n = 1500) {
  const store = await SpanStore.open(tmpDir(), { durability: 'none' });
  open.push(store);
  const window = new ContextWindow(store, { budgetTokens: 6000, keepRecentTurns: 4, summarize, policy: 'spill' });
  for (const t of realTurns(n)) await window.push({ turn: t.turn, role: t.role, text: t.text });
  const passes = store.events().flatMap((e) => (e.event.type === 'pass' ? [e.event] : []));
  return { store, passes };
}

const factOf = (s: { text: string; role: string }) => anchorFact(s.text, ROLE_CODES[s.role] ?? 0)?.trim() ?? null;

/** A summarizer that restates each anchor's fact with its numbers shifted: plausible, wrong. */
const wrongValues: Summarizer = async (spans) =>
  spans
    .filter((s) => s.anchor)
    .map((s) => factOf(s))
    .filter((f): f is string => f !== null)
    .map((f) => perturb(f, 0))
    .join('\n');

/** A summarizer that swallows each anchor's fact into a broad statement: the fact and its never-stated neighbour side by side. */
const broad: Summarizer = async (spans) =>
  spans
    .filter((s) => s.anchor)
    .map((s) => factOf(s))
    .filter((f): f is string => f !== null)
    .map((f) => `${f}\n${perturb(f, 0)}`)
    .join('\n');

describe('the monitor sees a pass that writes wrong values for the turns it replaces', () => {
  it('a wrong-values summarizer raises the rate by more than 15% over a pass and degrades', async () => {
    const { store, passes } = await replay(wrongValues, 500);
    const risen = passes.filter((p) => p.hitRateBefore !== null && p.hitRateAfter! > p.hitRateBefore * 1.15);
    expect(risen.length).toBeGreaterThan(0);
    expect(store.verdict().state).toBe('degraded');
    expect(store.verdict().reasons.join(' ')).toMatch(/hit-rate-rise/);
  });
  it('a summarizer that swallows facts into broad statements covering never-stated values degrades', async () => {
    const { store } = await replay(broad, 500);
    expect(store.verdict().state).toBe('degraded');
    expect(store.verdict().reasons.join(' ')).toMatch(/hit-rate-rise/);
  });
});

let faithful: Awaited<ReturnType<typeof replay>>;
beforeAll(async () => {
  faithful = await replay(extractiveSummary, 1000);
  open.splice(open.indexOf(faithful.store), 1);
}, 120_000);
afterAll(async () => {
  await faithful?.store.close();
});

describe('a faithful summarizer keeps the rate within ±3% on every pass', () => {
  it('the default extractive summarizer: no pass moves the rate by more than 3%, the verdict stays lossless', () => {
    const { store, passes } = faithful;
    expect(passes.length).toBeGreaterThan(20);
    for (const p of passes) {
      if (p.hitRateBefore !== null && p.hitRateAfter !== null) expect(Math.abs(p.hitRateAfter - p.hitRateBefore)).toBeLessThanOrEqual(0.03);
      if (p.localHitRateBefore != null && p.localHitRateAfter != null) expect(Math.abs(p.localHitRateAfter - p.localHitRateBefore)).toBeLessThanOrEqual(0.03);
    }
    expect(store.verdict().state).toBe('lossless');
  });
});

describe('probes are drawn across the whole session and drawn again as it grows', () => {
  it('the session-wide set spans the anchors, not the first few, and is redrawn when they double', () => {
    const { store } = faithful;
    const guard = (store as unknown as { guard: { probeSet: { query: string }[]; anchorsAtDraw: number } }).guard;
    expect(guard.probeSet.length).toBeGreaterThanOrEqual(16);
    const anchors = store.stats().anchors;
    // Redrawn as anchors doubled: the last draw saw at least half of today's anchors.
    expect(guard.anchorsAtDraw * 2).toBeGreaterThan(anchors);
    // Facts from the second half of the session are among the probes.
    const ids = guard.probeSet.map((p) => store.findExact(p.query, { limit: 1 })[0]?.spanId).filter((x): x is number => x !== undefined);
    const last = store.stats().nextId;
    expect(ids.some((id) => id > last / 2)).toBe(true);
  });
});
