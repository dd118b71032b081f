// A turn the window must keep that is larger than its budget is clipped in the window — its
// head and tail around a marker naming its span id — while the store keeps the whole text;
// push reports the overflow in its result.
import { describe, expect, it } from 'vitest';
import { ContextWindow, defaultCountTokens } from '../../src/index.js';
import { storesClosedAfterEach } from '../store/helpers.js';
import { SYSTEM_PROMPT, pushAll, toolSessionTurns } from './helpers.js';

const openStore = storesClosedAfterEach();

/** A tool output of about `tokens` tokens, every line distinct. */
function hugeOutput(tokens: number): string {
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < tokens * 3.2; i++) lines.push(`row ${i}: shard-${(i * 7919) % 10007} status ok latency ${(i * 37) % 911} ms`);
  return lines.join('\n');
}

async function session() {
  const store = await openStore();
  const window = new ContextWindow(store, { budgetTokens: 4000, keepRecentTurns: 4 });
  await pushAll(window, [
    { turn: 2, role: 'system', text: SYSTEM_PROMPT },
    { turn: 3, role: 'user', text: 'List the shards and their status.' },
    { turn: 4, role: 'assistant', text: '', toolCalls: [{ id: 'call_dump', name: 'bash', arguments: '{"cmd":"shardctl dump"}' }] },
  ]);
  const text = hugeOutput(50_000);
  const r = await window.push({ turn: 5, role: 'tool', text, toolCallId: 'call_dump' });
  return { store, window, text, r };
}

describe('a turn larger than the budget is clipped in the window, whole in the store', () => {
  it('the window stays within its budget; push reports the overflow with the span, its tokens and what is shown', async () => {
    const { window, text, r } = await session();
    const full = defaultCountTokens(text);
    expect(full).toBeGreaterThan(45_000);
    expect(r.overflow).toEqual({ budgetTokens: 4000, tokens: window.stats().tokens, clipped: [{ spanId: r.spanId, tokens: full, shownTokens: expect.any(Number) }] });
    expect(window.stats().tokens).toBeLessThanOrEqual(4000);
    expect(window.stats().tokens).toBeGreaterThan(3000);
    const shown = r.overflow!.clipped[0]!.shownTokens;
    expect(window.snapshot().at(-1)).toMatchObject({ id: r.spanId, tokens: shown, clippedFrom: full });
  });
  it('the model sees the head and the tail around a marker naming the span; the store returns the whole text', async () => {
    const { store, window, text, r } = await session();
    const m = window.messages({ format: 'openai' });
    const result = m.at(-1)!;
    expect(result).toMatchObject({ role: 'tool', tool_call_id: 'call_dump' });
    const content = result.content as string;
    const marker = `[… clipped to fit the window: this turn has ${defaultCountTokens(text)} tokens; span ${r.spanId} in the store holds its full text …]`;
    expect(content).toContain(marker);
    const [head, tail] = content.split(`\n${marker}\n`);
    expect(head!.length).toBeGreaterThan(1000);
    expect(tail!.length).toBeGreaterThan(1000);
    expect(text.startsWith(head!)).toBe(true);
    expect(text.endsWith(tail!)).toBe(true);
    expect(store.get(r.spanId)!.text).toBe(text);
    // A line from the part the window does not show is recalled verbatim from the store.
    const hidden = text.split('\n')[Math.floor(text.split('\n').length / 2)]!;
    expect(content).not.toContain(hidden);
    const found = await window.recall(hidden);
    expect(found.hits.some((h) => h.spanId === r.spanId && h.text === text)).toBe(true);
  });
  it('the next turn lets the clipped unit go like any other: back within budget, no overflow', async () => {
    const { store, window, r } = await session();
    const next = await window.push({ turn: 6, role: 'assistant', text: 'There are 1,000+ shards; all report ok.' });
    expect(next.overflow).toBeNull();
    expect(store.state.evicted.has(r.spanId)).toBe(true);
    expect(window.stats().tokens).toBeLessThanOrEqual(4000);
  });
  it('a pinned turn larger than the budget is clipped too', async () => {
    const store = await openStore();
    const window = new ContextWindow(store, { budgetTokens: 1000 });
    const r = await window.push({ turn: 2, role: 'system', text: hugeOutput(3000) });
    expect(r.overflow?.clipped.map((c) => c.spanId)).toEqual([r.spanId]);
    expect(window.stats().tokens).toBeLessThanOrEqual(1000);
    expect(window.snapshot()[0]).toMatchObject({ pinned: true, clippedFrom: r.overflow!.clipped[0]!.tokens });
  });
  it('a session that fits reports no overflow at any push', async () => {
    const store = await openStore();
    const window = new ContextWindow(store, { budgetTokens: 4000 });
    const { results } = await pushAll(window, toolSessionTurns(60));
    expect(window.stats().passes).toBeGreaterThan(2);
    expect(results.filter((x) => x.overflow !== null)).toEqual([]);
  });
});
