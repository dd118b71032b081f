// The AI SDK middleware's prompt rules: each message stored once, however often the host
// resends it; the leading system prompt passed through, not stored; a prompt that does not
// continue the conversation refused before anything is stored; prune keeps continuity; no
// tool call without its result reaches the model, nor a result without its call.
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { livePrompt, spanguardConversation } from '../../src/adapters/ai-sdk.js';
import { tmpDir } from '../helpers/data.js';

type Msg = { role: string; content: unknown };
const sys: Msg = { role: 'system', content: 'You are terse.' };
const user = (text: string): Msg => ({ role: 'user', content: [{ type: 'text', text }] });
const callMsg = (id: string): Msg => ({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: 'run', input: { cmd: 'ls' } }] });
const resultMsg = (id: string, text: string): Msg => ({ role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'run', output: { type: 'text', value: text } }] });

async function setup(options: Record<string, unknown> = {}) {
  const store = await SpanStore.open(tmpDir(), { durability: 'none' });
  const conv = spanguardConversation(store, { budgetTokens: 10_000, ...options });
  const call = async (prompt: Msg[]) => {
    const out = await conv.middleware.transformParams!({ type: 'generate', params: { prompt } as never, model: {} as never });
    return out.prompt as unknown as Msg[];
  };
  return { store, conv, call };
}

describe('each message is stored once however often the host resends its list', () => {
  it('three calls over a growing list store each message once; the system prompt leads and is not stored', async () => {
    const { store, call } = await setup();
    const list = [sys, user('The port is 8443.')];
    expect(await call(list)).toEqual(list);
    list.push(callMsg('c1'), resultMsg('c1', 'a.ts'));
    expect(await call(list)).toEqual(list);
    list.push({ role: 'assistant', content: [{ type: 'text', text: 'done' }] }, user('next'));
    expect(await call(list)).toEqual(list);
    expect(store.stats().spans.raw).toBe(5);
    expect(store.get(1)!.text).toBe('The port is 8443.');
    expect(store.get(1)!.meta!.item).toEqual(user('The port is 8443.'));
    expect(store.findExact('You are terse.')).toEqual([]);
    await store.close();
  });
});

describe('a prompt that does not continue the conversation is refused, nothing stored', () => {
  it('a different history or a shorter list → INVALID_ARGUMENT naming the rule; the store is unchanged', async () => {
    const { store, call } = await setup();
    await call([sys, user('one'), user('two')]);
    const next = store.stats().nextId;
    await expect(call([sys, user('one'), user('changed'), user('three')])).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_ARGUMENT', message: /does not continue this conversation/ });
    await expect(call([sys, user('one')])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(store.stats().nextId).toBe(next);
    expect(await call([sys, user('one'), user('two'), user('three')])).toHaveLength(4);
    expect(store.stats().spans.raw).toBe(3);
    await store.close();
  });
});

describe('prune drops what the log holds and keeps continuity', () => {
  it('after prune the list holds the last stored message and what follows; the next call stores only the new messages', async () => {
    const { store, conv, call } = await setup();
    // The host's list has two tool messages in a row; the SDK sends them as one prompt message.
    const joined: Msg = { role: 'tool', content: [...(resultMsg('c1', 'r1').content as unknown[]), ...(resultMsg('c2', 'r2').content as unknown[])] };
    const done: Msg = { role: 'assistant', content: [{ type: 'text', text: 'done' }] };
    let list = [sys, user('a'), callMsg('c1'), resultMsg('c1', 'r1'), resultMsg('c2', 'r2'), done];
    await call([sys, user('a'), callMsg('c1'), joined, done]);
    list.push(user('b'));
    list = conv.prune(list);
    expect(list).toEqual([sys, done, user('b')]);
    expect(conv.prune(list)).toEqual(list);
    const before = store.stats().spans.raw;
    await call([sys, done, user('b')]);
    expect(store.stats().spans.raw).toBe(before + 1);
    expect(store.get(store.stats().nextId - 1)!.text).toBe('b');
    expect(() => conv.prune([sys])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    await store.close();
  });
});

describe('no tool call reaches the model without its result, nor a result without its call', () => {
  it('the prompt built from a window holding a call without its result, and a result without its call, carries neither', () => {
    // A refused anchor stays in the window while the rest of its unit leaves: either half can be left alone.
    const raw = (spanId: number, item: Msg) => ({ kind: 'raw' as const, spanId, role: item.role, text: '', item });
    const both: Msg = { role: 'assistant', content: [{ type: 'text', text: 'running two' }, { type: 'tool-call', toolCallId: 'kept', toolName: 'run', input: {} }, { type: 'tool-call', toolCallId: 'lost', toolName: 'run', input: {} }] };
    const prompt = livePrompt([
      { kind: 'summary', spanId: 9, role: 'system', text: '[summary] earlier', turnStart: 1, turnEnd: 4 },
      raw(10, user('go')),
      raw(11, both),
      raw(12, resultMsg('kept', 'ok')),
      raw(13, resultMsg('orphan', 'no call for me')),
      raw(14, callMsg('alone')),
    ]) as unknown as Msg[];
    expect(prompt).toEqual([
      { role: 'system', content: '[summary] earlier' },
      user('go'),
      { role: 'assistant', content: [{ type: 'text', text: 'running two' }, { type: 'tool-call', toolCallId: 'kept', toolName: 'run', input: {} }] },
      resultMsg('kept', 'ok'),
    ]);
  });
});
