// A LangGraph StateGraph (a scripted agent node, LangGraph's own ToolNode, the tools
// condition) over SpanguardChatMessageHistory: 2,000 messages with tool calls, facts planted
// at the start, recalled by the agent's own `recall` tool call at the end, the history
// within budget at every step. Also: clear() withdraws without deleting, bad input is typed.
import { describe, expect, it } from 'vitest';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { SpanStore } from '../../src/index.js';
import { SpanguardChatMessageHistory } from '../../src/adapters/langgraph.js';
import { realTurns, tmpDir } from '../helpers/data.js';
import { FACTS, FILLER_CHARS, ITEMS } from './helpers.js';

const BUDGET = 3_000;

describe('LangGraph: a StateGraph over 2,000 messages through the history recalls facts planted at the start, within budget', () => {
  it('the agent node recalls every planted fact through the recall tool; the history never exceeds its budget', async () => {
    const store = await SpanStore.open(tmpDir(), { durability: 'none' });
    const history = new SpanguardChatMessageHistory(store, { budgetTokens: BUDGET });
    const filler = realTurns(ITEMS / 4 + 10);
    let n = 0;
    const runCommand = tool(async () => filler[n++]!.text.slice(0, FILLER_CHARS), { name: 'run_command', description: 'Runs a shell command', schema: z.object({ cmd: z.string() }) });
    const overBudget: number[] = [];
    let calls = 0;
    // The stand-in model: a human message gets a tool call (recall for a question), a tool result gets an answer quoting it.
    const agent = async (state: typeof MessagesAnnotation.State) => {
      calls++;
      const tokens = history.window.stats().tokens;
      if (tokens > BUDGET) overBudget.push(tokens);
      const last = state.messages[state.messages.length - 1]!;
      if (last.getType() === 'human') {
        const q = /^QUESTION: (.*)$/.exec(String(last.content));
        const call = q ? { name: 'recall', args: { query: q[1]! } } : { name: 'run_command', args: { cmd: `step ${calls}` } };
        return { messages: [new AIMessage({ content: '', tool_calls: [{ id: `call_${calls}`, type: 'tool_call', ...call }] })] };
      }
      return { messages: [new AIMessage(`Result: ${String(last.content).slice(0, 4000)}`)] };
    };
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('agent', agent)
      .addNode('tools', new ToolNode([runCommand, history.recallTool()]))
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', toolsCondition, ['tools', END])
      .addEdge('tools', 'agent')
      .compile();

    // The host's loop: the history is the graph's input; what the graph adds goes back into it.
    const say = async (text: string): Promise<BaseMessage> => {
      await history.addMessage(new HumanMessage(text));
      const input = await history.getMessages();
      const out = await graph.invoke({ messages: input });
      await history.addMessages(out.messages.slice(input.length));
      expect(history.window.stats().tokens).toBeLessThanOrEqual(BUDGET);
      return out.messages[out.messages.length - 1]!;
    };
    for (const fact of FACTS) await say(fact.statement);
    for (let i = 0; store.stats().spans.raw < ITEMS; i++) await say(`Next: ${filler[i % filler.length]!.text.slice(0, 200)}`);
    const live = JSON.stringify((await history.getMessages()).map((m) => m.content));
    for (const fact of FACTS) expect(live, 'the planted facts have left the window').not.toContain(fact.value);

    for (const fact of FACTS) {
      const answer = await say(`QUESTION: ${fact.question}`);
      expect(String(answer.content)).toContain(fact.value);
      expect(String(answer.content)).toContain(fact.statement);
    }
    expect(overBudget).toEqual([]);
    expect(history.window.stats().passes).toBeGreaterThan(10);
    expect(store.verdict().state).toBe('lossless');
    await store.close();
  });
});

describe('LangGraph history: messages come back as LangChain messages; clear() withdraws without deleting', () => {
  it('round-trips human, AI with tool calls and tool messages; clear empties the history, the log keeps and recalls them', async () => {
    const store = await SpanStore.open(tmpDir(), { durability: 'none' });
    const h = new SpanguardChatMessageHistory(store, { budgetTokens: 10_000 });
    const msgs = [
      new HumanMessage('The canary region is eu-west-3.'),
      new AIMessage({ content: '', tool_calls: [{ id: 'c1', name: 'run_command', args: { cmd: 'ls' }, type: 'tool_call' }] }),
      new ToolMessage({ content: 'a.ts', tool_call_id: 'c1' }),
    ];
    await h.addMessages(msgs);
    const back = await h.getMessages();
    expect(back.map((m) => m.getType())).toEqual(['human', 'ai', 'tool']);
    expect((back[1] as AIMessage).tool_calls).toMatchObject([{ id: 'c1', name: 'run_command', args: { cmd: 'ls' } }]);
    expect(store.get(2)!.text).toBe('run_command({"cmd":"ls"})');
    await h.clear();
    expect(await h.getMessages()).toEqual([]);
    expect(store.get(store.stats().nextId - 1)!.meta).toMatchObject({ withdrawn: { op: 'clear', spanIds: [1, 2, 3] } });
    const r = await h.window.recall('which region is the canary?');
    expect(r.hits[0]!.text).toBe('The canary region is eu-west-3.');
    const next = store.stats().nextId;
    await expect(h.addMessages([new HumanMessage('ok'), { content: 'not a message' } as unknown as BaseMessage])).rejects.toMatchObject({ name: 'SpanguardError', code: 'INVALID_ARGUMENT', message: /index 1/ });
    expect(store.stats().nextId).toBe(next);
    await store.close();
  });
});

describe('SpanguardChatMessageHistory.open resumes a reopened store: the live messages and a clear() as they were', () => {
  it('after compaction, a reopened history hands back the same messages; after clear(), none', async () => {
    const dir = tmpDir();
    const store = await SpanStore.open(dir, { durability: 'none' });
    const h = new SpanguardChatMessageHistory(store, { budgetTokens: 400, keepRecentTurns: 2 });
    for (let i = 0; i < 60; i++) await h.addMessages([new HumanMessage(`step ${i}: built module m${i}, ${i * 3} files changed, checks green.`)]);
    const before = (await h.getMessages()).map((m) => [m.getType(), m.content]);
    expect(h.window.stats().passes).toBeGreaterThan(0);
    await store.close();
    const again = await SpanStore.open(dir, { durability: 'none' });
    const resumed = await SpanguardChatMessageHistory.open(again, { budgetTokens: 400, keepRecentTurns: 2 });
    expect((await resumed.getMessages()).map((m) => [m.getType(), m.content])).toEqual(before);
    await resumed.clear();
    await again.close();
    const third = await SpanStore.open(dir, { durability: 'none' });
    expect(await (await SpanguardChatMessageHistory.open(third, { budgetTokens: 400, keepRecentTurns: 2 })).getMessages()).toEqual([]);
    await third.close();
  });
});
