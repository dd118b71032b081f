// SpanguardSession's Session contract on an append-only log: items come back verbatim,
// popItem and clearSession withdraw items from the history without deleting them (and
// record that), limit returns the most recent, orphan tool results are not handed back,
// bad input is a typed error with nothing written.
import { describe, expect, it } from 'vitest';
import type { AgentInputItem } from '@openai/agents';
import { SpanStore } from '../../src/index.js';
import { SpanguardSession } from '../../src/adapters/openai-agents.js';
import { tmpDir } from '../helpers/data.js';

const user = (content: string): AgentInputItem => ({ type: 'message', role: 'user', content });
const call = (callId: string, name = 'run_command'): AgentInputItem => ({ type: 'function_call', callId, name, arguments: '{"cmd":"ls"}', status: 'completed' });
const result = (callId: string, text: string): AgentInputItem => ({ type: 'function_call_result', callId, name: 'run_command', status: 'completed', output: { type: 'text', text } });
const assistant = (text: string): AgentInputItem => ({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });

async function session(budgetTokens = 10_000) {
  const store = await SpanStore.open(tmpDir(), { durability: 'none' });
  return { store, s: new SpanguardSession(store, { budgetTokens, keepRecentTurns: 2 }) };
}

describe('items come back verbatim, oldest first; limit gives the most recent', () => {
  it('getItems returns what addItems stored, field for field; getItems(2) the last two; getItems(0) none', async () => {
    const { store, s } = await session();
    const items = [user('list the files'), call('c1'), result('c1', 'a.ts\nb.ts'), assistant('two files: a.ts, b.ts')];
    await s.addItems(items);
    expect(await s.getItems()).toEqual(items);
    expect(await s.getItems(2)).toEqual(items.slice(2));
    expect(await s.getItems(0)).toEqual([]);
    expect(await s.getSessionId()).toBe(`spanguard:${store.dir}`);
    expect(await new SpanguardSession(store, { budgetTokens: 100, sessionId: 'chat-7' }).getSessionId()).toBe('chat-7');
    await store.close();
  });
});

describe('popItem withdraws the last item from the history, never from the log, and records it', () => {
  it('returns the item; the history loses it; the log keeps it, recall finds it, and a withdrawal turn names its span', async () => {
    const { store, s } = await session();
    await s.addItems([user('hello'), user('The deploy key fingerprint is SHA256:kestrel-9f3a.')]);
    const before = store.stats().spans.raw;
    const popped = await s.popItem();
    expect(popped).toEqual(user('The deploy key fingerprint is SHA256:kestrel-9f3a.'));
    expect(await s.getItems()).toEqual([user('hello')]);
    expect(store.stats().spans.raw).toBe(before + 1);
    const withdrawal = store.get(store.stats().nextId - 1)!;
    expect(withdrawal).toMatchObject({ role: 'spanguard', anchor: false, meta: { withdrawn: { op: 'popItem', spanIds: [2] } } });
    expect(store.get(2)!.text).toBe('The deploy key fingerprint is SHA256:kestrel-9f3a.');
    const r = await s.window.recall('what is the deploy key fingerprint?');
    expect(r.hits.map((h) => h.spanId)).toContain(2);
    await s.addItems([user('next')]);
    expect(await s.getItems()).toEqual([user('hello'), user('next')]);
    await store.close();
  });

  it('on an empty history returns undefined and writes nothing', async () => {
    const { store, s } = await session();
    const next = store.stats().nextId;
    expect(await s.popItem()).toBeUndefined();
    expect(store.stats().nextId).toBe(next);
    await store.close();
  });
});

describe('clearSession empties the history the model sees; the log keeps every item', () => {
  it('getItems is empty after the clear, new items follow, and the cleared ones are still recalled', async () => {
    const { store, s } = await session();
    await s.addItems([user('The rollout flag is ENABLE_ORION_V2.'), assistant('noted')]);
    await s.clearSession();
    expect(await s.getItems()).toEqual([]);
    expect(store.get(store.stats().nextId - 1)!.meta).toMatchObject({ withdrawn: { op: 'clearSession', spanIds: [1, 2] } });
    await s.addItems([user('fresh start')]);
    expect(await s.getItems()).toEqual([user('fresh start')]);
    const r = await s.window.recall('what is the rollout flag?');
    expect(r.status).toBe('found');
    expect(r.hits[0]!.text).toBe('The rollout flag is ENABLE_ORION_V2.');
    await store.close();
  });
});

describe('a tool result whose call is not in the history is not handed back', () => {
  it('after the call is popped, the orphan result is left out of getItems (the log keeps both)', async () => {
    const { store, s } = await session();
    await s.addItems([user('go'), call('c1'), result('c1', 'done')]);
    // Withdraw the call alone: hide it by popping the result, then the call, then add the result back.
    await s.popItem();
    await s.popItem();
    await s.addItems([result('c1', 'done')]);
    expect(await s.getItems()).toEqual([user('go')]);
    await store.close();
  });
});

describe('parallel tool calls and their results stay one unit of the window', () => {
  it('a pass that takes call A takes call B and both results with it: no result is left without its call', async () => {
    const store = await SpanStore.open(tmpDir(), { durability: 'none' });
    // Tokens counted as characters, so the pass's cut is exact: the user turn (50) alone is
    // not enough to free, the user turn and call A (25) are — a cut between the two calls
    // unless the calls and results are one unit.
    const s = new SpanguardSession(store, { budgetTokens: 216, keepRecentTurns: 0, countTokens: (t) => t.length, summarize: async () => 'summary' });
    await s.addItems([user('x'.repeat(50)), call('a'), call('b'), result('a', 'A'.repeat(60)), result('b', 'B'.repeat(60)), assistant('done.')]);
    expect(s.window.stats().passes).toBe(1);
    const items = (await s.getItems()) as Record<string, unknown>[];
    expect(items.length, 'no result was left without its call').toBe(s.live.live().length);
    expect(items.filter((i) => i.type === 'function_call' || i.type === 'function_call_result')).toEqual([]);
    await store.close();
  });
});

describe('bad input to a session is a typed error and writes nothing', () => {
  it('addItems of a non-array or a null item → INVALID_ARGUMENT; an empty sessionId → INVALID_OPTIONS', async () => {
    const { store, s } = await session();
    const next = store.stats().nextId;
    await expect(s.addItems('x' as unknown as AgentInputItem[])).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_ARGUMENT' });
    await expect(s.addItems([user('ok'), null as unknown as AgentInputItem])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: /index 1/ });
    await expect(s.addItems([user('ok'), { type: 'message', role: 'user', content: 'x', providerData: { n: 1n } } as unknown as AgentInputItem])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(store.stats().nextId).toBe(next);
    expect(await s.getItems()).toEqual([]);
    expect(() => new SpanguardSession(store, { budgetTokens: 100, sessionId: '' })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    await store.close();
  });
});

describe('SpanguardSession.open resumes a reopened store: the live items and withdrawals as they were', () => {
  it('after compaction and a popItem, a reopened session hands back the same items; a new one starts empty', async () => {
    const dir = tmpDir();
    const store = await SpanStore.open(dir, { durability: 'none' });
    const s = new SpanguardSession(store, { budgetTokens: 400, keepRecentTurns: 2 });
    for (let i = 0; i < 60; i++) await s.addItems([user(`step ${i}: ran the build of module m${i}, ${i * 3} files changed, all checks green.`)]);
    await s.popItem();
    const before = await s.getItems();
    expect(s.window.stats().passes).toBeGreaterThan(0);
    await store.close();
    const again = await SpanStore.open(dir, { durability: 'none' });
    const resumed = await SpanguardSession.open(again, { budgetTokens: 400, keepRecentTurns: 2 });
    expect(await resumed.getItems()).toEqual(before);
    expect(await new SpanguardSession(again, { budgetTokens: 400 }).getItems()).toEqual([]);
    await resumed.addItems([user('after the restart')]);
    expect((await resumed.getItems()).at(-1)).toEqual(user('after the restart'));
    await again.close();
  });
});
