// Pinned turns: never evicted, never summarized. The system prompt is pinned by default;
// `pin: true` pins any turn, `pin: false` lets a system turn go; a pinned turn keeps its
// whole unit (a call with its results) in the window.
import { describe, expect, it } from 'vitest';
import { ContextWindow, type SummarizeInput, type WindowTurn } from '../../src/index.js';
import { storesClosedAfterEach } from '../store/helpers.js';
import { pushAll, toolSessionTurns } from './helpers.js';

const openStore = storesClosedAfterEach();

async function run(turns: WindowTurn[]) {
  const store = await openStore();
  const seen: SummarizeInput[] = [];
  const window = new ContextWindow(store, {
    budgetTokens: 3000,
    keepRecentTurns: 2,
    summarize: async (spans) => {
      seen.push(...spans);
      return `${spans.length} spans summarized`;
    },
  });
  const { ids } = await pushAll(window, turns);
  return { store, window, ids, seen };
}

describe('the system prompt is pinned by default', () => {
  it('stays first in the window, unevicted and never summarized, through a long session', async () => {
    const { store, window, ids, seen } = await run(toolSessionTurns(120));
    const sys = ids.get(1)!;
    expect(window.stats().passes).toBeGreaterThan(5);
    expect(store.state.evicted.has(sys)).toBe(false);
    expect(seen.some((s) => s.spanId === sys)).toBe(false);
    expect(window.snapshot()[0]).toMatchObject({ id: sys, pinned: true });
  });
  it('pin: false lets a system turn be evicted like any other', async () => {
    const turns = toolSessionTurns(120);
    turns[0] = { ...turns[0]!, pin: false };
    const { store, ids, seen } = await run(turns);
    expect(store.state.evicted.has(ids.get(1)!)).toBe(true);
    expect(seen.some((s) => s.spanId === ids.get(1)!)).toBe(true);
  });
});

describe('pin: true pins any turn, with its unit', () => {
  it('a pinned tool call and its results stay in the window; the turns around them are evicted', async () => {
    const turns = toolSessionTurns(120);
    const call = turns.findIndex((t) => t.role === 'assistant' && t.toolCalls!.length === 2);
    turns[call] = { ...turns[call]!, pin: true };
    const { store, window, ids, seen } = await run(turns);
    const unit = [turns[call]!.turn, turns[call + 1]!.turn, turns[call + 2]!.turn].map((t) => ids.get(t)!);
    for (const id of unit) {
      expect(store.state.evicted.has(id)).toBe(false);
      expect(seen.some((s) => s.spanId === id)).toBe(false);
    }
    expect(store.state.evicted.has(ids.get(turns[call - 1]!.turn)!)).toBe(true);
    expect(store.state.evicted.has(ids.get(turns[call + 3]!.turn)!)).toBe(true);
    // The pinned call renders with both results, paired by id.
    const m = window.messages({ format: 'openai' });
    const at = m.findIndex((x) => x.role === 'assistant' && x.tool_calls?.[0]?.id === turns[call]!.toolCalls![0]!.id);
    expect(m.slice(at + 1, at + 3).map((x) => (x.role === 'tool' ? x.tool_call_id : null))).toEqual(turns[call]!.toolCalls!.map((c) => c.id));
  });
  it('pin is recorded with the turn: a malformed pin is INVALID_ARGUMENT and writes nothing', async () => {
    const store = await openStore();
    const window = new ContextWindow(store, { budgetTokens: 1000 });
    const next = store.log.nextId();
    await expect(window.push({ turn: 2, role: 'user', text: 'x', pin: 'yes' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/pin must be a boolean/) });
    await expect(window.push({ turn: 2, role: 'user', text: 'x', meta: { pinned: true } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/meta\.pinned is where the window keeps/) });
    expect(store.log.nextId()).toBe(next);
    const { spanId } = await window.push({ turn: 2, role: 'user', text: 'keep me', pin: true });
    expect(store.get(spanId)!.meta).toEqual({ pinned: true });
  });
});
