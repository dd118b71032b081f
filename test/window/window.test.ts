// ContextWindow: budget, unit-preserving eviction, summaries, recall.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ContextWindow, SpanStore, type SummarizeInput } from '../../src/index.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const open: SpanStore[] = [];
afterEach(async () => {
  while (open.length > 1) await open.pop()!.close();
});
afterAll(async () => {
  while (open.length) await open.pop()!.close();
});

async function setup(budgetTokens = 3000, n = 400) {
  const store = await SpanStore.open(tmpDir(), { durability: 'none' });
  open.push(store);
  const calls: SummarizeInput[][] = [];
  const window = new ContextWindow(store, {
    budgetTokens,
    keepRecentTurns: 4,
    summarize: async (spans) => {
      calls.push(spans);
      return `turns ${spans[0]!.turnStart}-${spans[spans.length - 1]!.turnEnd}: ${spans.length} spans`;
    },
  });
  const turns = realTurns(n);
  const idOfTurn = new Map<number, number>();
  let overBudget = 0; // the most the window held beyond its budget, not counting the newest unit
  for (const t of turns) {
    idOfTurn.set(t.turn, (await window.push({ turn: t.turn, role: t.role, text: t.text, attachToPrevious: t.kind === 'observation' })).spanId);
    const snap = window.snapshot();
    const newest = snap.filter((e) => e.kind === 'raw' && e.turnEnd >= t.turn - (t.kind === 'observation' ? 1 : 0));
    overBudget = Math.max(overBudget, window.stats().tokens - newest.reduce((s, e) => s + e.tokens, 0) - budgetTokens);
  }
  return { store, window, turns, calls, idOfTurn, overBudget };
}

// One replayed session serves every read-only check; it is the first store opened, kept to the end.
let shared: Awaited<ReturnType<typeof setup>>;
beforeAll(async () => {
  shared = await setup();
}, 120_000);

describe('window invariant: the live window fits the budget after every push', () => {
  it('everything but the newest turn fits the budget after every push, with passes as it goes', async () => {
    const { window, overBudget } = shared;
    expect(window.stats().passes).toBeGreaterThan(5);
    expect(overBudget).toBeLessThanOrEqual(0);
  });
});

describe('eviction: oldest first, never splitting a tool call from its result', () => {
  it('an observation is evicted exactly when its action is', async () => {
    const { store, turns, idOfTurn } = shared;
    let checked = 0;
    for (let i = 1; i < turns.length; i++) {
      if (turns[i]!.kind !== 'observation') continue;
      const obs = idOfTurn.get(turns[i]!.turn)!;
      const call = idOfTurn.get(turns[i - 1]!.turn)!;
      expect(store.state.evicted.has(obs), `turn ${turns[i]!.turn}`).toBe(store.state.evicted.has(call));
      if (store.state.evicted.has(obs)) checked++;
    }
    expect(checked).toBeGreaterThan(20);
  });
});

describe('the summarizer is pluggable and summaries cite their turn ranges', () => {
  it('calls the host summarizer and marks summaries in messages()', async () => {
    const { window, calls } = shared;
    expect(calls.length).toBeGreaterThan(0);
    const msgs = window.messages();
    const summaries = msgs.filter((m) => m.summary);
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries[0]!.content).toMatch(/^\[summary of turns \d+–\d+; not authoritative for exact values/);
    expect(msgs[msgs.length - 1]!.summary).toBeUndefined();
  });
});

describe('recall reaches evicted history verbatim, or says "not in transcript"', () => {
  it('returns the evicted raw span verbatim with provenance', async () => {
    const { window, turns, store, idOfTurn } = shared;
    // The system prompt is pinned in the window (never evicted): the target is another turn.
    const target = turns.find((t) => t.turn < 100 && /Ran \d+ tests? in/.test(t.text)) ?? turns.find((t) => t.turn < 100 && t.role !== 'system' && t.text.length > 200)!;
    const line = target.text.split('\n').find((l) => l.trim().length > 30)!.trim();
    expect(store.state.evicted.has(idOfTurn.get(target.turn)!)).toBe(true);
    const r = await window.recall(line);
    expect(r.status).toBe('found');
    expect(r.hits.some((h) => h.turnStart === target.turn && h.text === target.text)).toBe(true);
  });
  it('a value that was never stated is "not in transcript"', async () => {
    const { window } = shared;
    const r = await window.recall('the production database password rotation interval is 97 days');
    expect(r).toMatchObject({ status: 'not-in-transcript', hits: [], text: 'not in transcript' });
  });
  it('when the verdict is not lossless, hits are flagged "do not trust exact values"', async () => {
    const { window, store, turns } = await setup(3000, 120);
    await store.compact({ evict: [], rewrite: [1], summary: { text: 'x', turnStart: 1, turnEnd: 1 } }).catch(() => {});
    const line = turns[1]!.text.split('\n').find((l) => l.trim().length > 20)!.trim();
    const r = await window.recall(line);
    expect(r.status).toBe('degraded');
    expect(r.text).toMatch(/^retrieval degraded: do not trust exact values/);
  });
});
