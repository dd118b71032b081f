// messages({ format }): the live window of a long tool-using session as each provider's
// request body — one system message holding the system prompt and the live summaries, tool
// calls and results paired by their ids, nothing spanguard's own.
import { modelMessageSchema } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContextWindow, SpanStore } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';
import { SYSTEM_PROMPT, expectAnthropicRequest, expectOpenAIRequest, pushAll, toolSessionTurns } from './helpers.js';

let store: SpanStore;
let window: ContextWindow;
let ids: Map<number, number>;
const turns = toolSessionTurns(240);

beforeAll(async () => {
  store = await SpanStore.open(tmpDir(), { durability: 'none' });
  window = new ContextWindow(store, { budgetTokens: 4000, keepRecentTurns: 4, summarize: async (spans) => `${spans.length} spans: turns ${spans[0]!.turnStart}-${spans.at(-1)!.turnEnd} ran tests and read files.` });
  ({ ids } = await pushAll(window, turns));
}, 120_000);
afterAll(async () => {
  await store.close();
});

describe('the session the formats render', () => {
  it('has several live summaries and the system prompt in the window', () => {
    const snap = window.snapshot();
    expect(snap.filter((e) => e.kind === 'summary').length).toBeGreaterThanOrEqual(2);
    expect(snap[0]).toMatchObject({ kind: 'raw', turnStart: 1, pinned: true });
    expect(window.stats().passes).toBeGreaterThan(10);
  });
});

describe("format 'openai': Chat Completions messages", () => {
  it('one leading system message: the system prompt, then every live summary', () => {
    const m = window.messages({ format: 'openai' });
    expect(m.filter((x) => x.role === 'system')).toHaveLength(1);
    expect(m[0]!.role).toBe('system');
    const system = m[0]!.content as string;
    expect(system.startsWith(SYSTEM_PROMPT)).toBe(true);
    const summaries = window.snapshot().filter((e) => e.kind === 'summary');
    expect(system.match(/\[summary of turns \d+–\d+; not authoritative for exact values — use recall\]/g)).toHaveLength(summaries.length);
    for (const s of summaries) expect(system).toContain(`[summary of turns ${s.turnStart}–${s.turnEnd};`);
  });
  it('is a valid request: calls as tool_calls with their ids, each answered by a tool message with its tool_call_id, no extra keys', () => {
    const m = window.messages({ format: 'openai' });
    expectOpenAIRequest(m);
    const calls = m.flatMap((x) => (x.role === 'assistant' ? (x.tool_calls ?? []) : []));
    expect(calls.length).toBeGreaterThan(3);
    expect(m.filter((x) => x.role === 'tool')).toHaveLength(calls.length);
    expect(JSON.stringify(m)).not.toMatch(/"spanId"|"summary"/);
  });
});

describe("format 'anthropic': { system, messages }", () => {
  it('the one system text at the top level, a valid Messages request body', () => {
    const r = window.messages({ format: 'anthropic' });
    expect(r.system).toBe(window.messages({ format: 'openai' })[0]!.content);
    expectAnthropicRequest(r);
    expect(JSON.stringify(r)).toMatch(/"tool_use_id":"call_/);
    expect(JSON.stringify(r)).not.toMatch(/"spanId"|"summary"/);
  });
});

describe("format 'ai-sdk': ModelMessage[]", () => {
  it("every message passes the AI SDK's own modelMessageSchema, one system message first, tool results in tool messages", () => {
    const m = window.messages({ format: 'ai-sdk' });
    for (const x of m) expect(modelMessageSchema.safeParse(x).success, JSON.stringify(x).slice(0, 200)).toBe(true);
    expect(m.filter((x) => x.role === 'system')).toHaveLength(1);
    expect(m[0]!.role).toBe('system');
    const callIds = m.flatMap((x) => (x.role === 'assistant' && Array.isArray(x.content) ? x.content.flatMap((p) => (p.type === 'tool-call' ? [p.toolCallId] : [])) : []));
    const resultIds = m.flatMap((x) => (x.role === 'tool' ? x.content.map((p) => p.toolCallId) : []));
    expect(resultIds.length).toBeGreaterThan(3);
    expect(resultIds.sort()).toEqual(callIds.sort());
    expect(JSON.stringify(m)).not.toMatch(/"spanId"|"summary"/);
  });
});

describe('messages() with no format keeps its shape', () => {
  it('{ role, content, spanId, summary? } with summaries as system messages', () => {
    const m = window.messages();
    const snap = window.snapshot();
    expect(m.map((x) => x.spanId)).toEqual(snap.map((e) => e.id));
    expect(m.filter((x) => x.summary).length).toBe(snap.filter((e) => e.kind === 'summary').length);
    expect(m.every((x) => x.role !== 'system' || x.summary || x.spanId === ids.get(1))).toBe(true);
  });
  it('an unknown format is INVALID_ARGUMENT', () => {
    expect(() => window.messages({ format: 'gemini' } as never)).toThrowError(expect.objectContaining({ name: 'SpanguardError', code: 'INVALID_ARGUMENT' }));
    expect(() => window.messages(null as never)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('eviction never separates a call from its results', () => {
  it('every tool turn is evicted exactly when the assistant turn that called it is', () => {
    let evictedPairs = 0;
    let callTurn = 0;
    for (const t of turns) {
      if (t.role === 'assistant') callTurn = t.turn;
      if (t.role !== 'tool') continue;
      const result = store.state.evicted.has(ids.get(t.turn)!);
      expect(result, `turn ${t.turn}`).toBe(store.state.evicted.has(ids.get(callTurn)!));
      if (result) evictedPairs++;
    }
    expect(evictedPairs).toBeGreaterThan(100);
  });
});
